package policy

import (
	"context"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/gateway"
)

// TestDestructiveGlobTooWide (issue 10): a wildcard destructive.allow glob
// that matches every destructive tool of a toolset, or of the catalog,
// enables none of them, and the denial says what to write instead.
func TestDestructiveGlobTooWide(t *testing.T) {
	destr := gateway.Hints{ReadOnly: gateway.Bool(false), Destructive: gateway.Bool(true), OpenWorld: gateway.Bool(false)}
	del := testTool(t, "fs__delete", nil, destr)
	drop := testTool(t, "db__drop", nil, destr)
	sets := map[string][]string{"fs": {"fs__delete", "fs__move"}, "db": {"db__drop"}}
	for _, tc := range []struct {
		glob  string
		tool  *gateway.Tool
		allow bool
		rule  string
	}{
		{"fs__*", del, false, RuleDestructiveTooWide},
		{"fs__delete", del, true, "policy.destructive.allow:fs__delete"},
		{"fs__del*", del, true, "policy.destructive.allow:fs__del*"}, // leaves fs__move out
		{"db__*", drop, true, "policy.destructive.allow:db__*"},      // the toolset's only one
		{"*__[dm]*", drop, false, RuleDestructiveTooWide},            // every one of the catalog
	} {
		var cfg Config
		cfg.Destructive.Allow = []string{tc.glob}
		e, err := New(cfg, nil)
		if err != nil {
			t.Fatal(err)
		}
		e.SetDestructiveTools(sets)
		d := e.Decide(context.Background(), tc.tool)
		if d.Allow != tc.allow || d.Rule != tc.rule {
			t.Errorf("%q for %s: allow %v rule %q (%s)", tc.glob, tc.tool.Name, d.Allow, d.Rule, d.Reason)
		}
		if d.Rule == RuleDestructiveTooWide && !strings.Contains(d.Reason, "list the destructive tools to enable") {
			t.Errorf("the denial does not say what to do: %s", d.Reason)
		}
	}
}
