package policy

import (
	"context"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/gateway"
)

// TestDestructiveGlobTooWide (issue 10): a wildcard destructive.allow glob
// that matches every destructive tool of a toolset, or of the catalog,
// enables none of them, and the denial says what to write instead. An
// identity's destructive.allow refuses the same globs (docs/policy.md),
// under its own key.
func TestDestructiveGlobTooWide(t *testing.T) {
	destr := gateway.Hints{ReadOnly: gateway.Bool(false), Destructive: gateway.Bool(true), OpenWorld: gateway.Bool(false)}
	del := testTool(t, "fs__delete", nil, destr)
	drop := testTool(t, "db__drop", nil, destr)
	sets := map[string][]string{"fs": {"fs__delete", "fs__move"}, "db": {"db__drop"}}
	keys := []struct {
		key string // the rules' prefix
		set func(c *Config, glob string)
	}{
		{"policy.destructive.allow", func(c *Config, glob string) { c.Destructive.Allow = []string{glob} }},
		{"policy.identities[0].destructive.allow", func(c *Config, glob string) {
			var id Identity
			id.Match.Name = "ci"
			id.Destructive.Allow = []string{glob}
			c.Identities = []Identity{id}
		}},
	}
	ctx := gateway.AsCaller(context.Background(), &gateway.Call{Identity: "token:ci"})
	for _, k := range keys {
		for _, tc := range []struct {
			glob  string
			tool  *gateway.Tool
			allow bool
			rule  string // after the key
		}{
			{"fs__*", del, false, ":too_wide"},
			{"fs__delete", del, true, ":fs__delete"},
			{"fs__del*", del, true, ":fs__del*"},   // leaves fs__move out
			{"db__*", drop, true, ":db__*"},        // the toolset's only one
			{"*__[dm]*", drop, false, ":too_wide"}, // every one of the catalog
		} {
			var cfg Config
			k.set(&cfg, tc.glob)
			e, err := New(cfg, nil)
			if err != nil {
				t.Fatal(err)
			}
			e.SetDestructiveTools(sets)
			d := e.Decide(ctx, tc.tool)
			if d.Allow != tc.allow || d.Rule != k.key+tc.rule {
				t.Errorf("%s %q for %s: allow %v rule %q (%s), want %v %q", k.key, tc.glob, tc.tool.Name, d.Allow, d.Rule, d.Reason, tc.allow, k.key+tc.rule)
			}
			if !d.Allow && !strings.Contains(d.Reason, "list the destructive tools to enable") {
				t.Errorf("the denial does not say what to do: %s", d.Reason)
			}
		}
	}
}
