package policy

import (
	"context"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/gateway"
)

// TestIdentityRules (issue 14): policy.identities apply to the matching
// caller only, under the same merge rules: their deny wins, their allows
// enable, and runtime denies still win.
func TestIdentityRules(t *testing.T) {
	var cfg Config
	ci := Identity{Match: IdentityMatch{Name: "ci"}}
	ci.Tools.Deny = []string{"write_file"}
	ci.Destructive.Allow = []string{"delete_*"}
	ci.Grants = []Grant{{Tools: []string{"fetch"}, Capabilities: []string{Net}}}
	ops := Identity{Match: IdentityMatch{Name: "ops"}}
	ops.Grants = []Grant{{Tools: []string{"sh"}, Capabilities: []string{Net}}}
	cfg.Identities = []Identity{ci, ops}
	e, err := New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	write := testTool(t, "write_file", []string{FSWrite}, gateway.Hints{ReadOnly: gateway.Bool(false), Destructive: gateway.Bool(false), OpenWorld: gateway.Bool(false)})
	del := testTool(t, "delete_file", []string{FSWrite}, gateway.Hints{ReadOnly: gateway.Bool(false), Destructive: gateway.Bool(true), OpenWorld: gateway.Bool(false)})
	fetch := testTool(t, "fetch", nil, readOnlyOpen)
	sh := testTool(t, "sh", []string{ShellExec}, readOnlyOpen)
	as := func(identity string) context.Context {
		return gateway.AsCaller(context.Background(), &gateway.Call{Identity: identity})
	}
	for _, tc := range []struct {
		identity string
		tool     *gateway.Tool
		allow    bool
		rule     string
	}{
		{"token:ci", write, false, "policy.identities[0].tools.deny:write_file"},
		{"local", write, true, RuleSafeDefaults},
		{"token:ci", del, true, "policy.identities[0].destructive.allow:delete_*"},
		{"token:other", del, false, RuleDestructive},
		{"token:ci", fetch, true, "policy.identities[0].grants[0]"},
		{"token:ops", fetch, false, RuleNotEnabled},
		{"token:ops", sh, false, "runtime.deny:shell.exec"}, // nothing lifts it
	} {
		d := e.Decide(as(tc.identity), tc.tool)
		if d.Allow != tc.allow || d.Rule != tc.rule {
			t.Errorf("%s calling %s: allow %v rule %q (%s), want %v %q", tc.identity, tc.tool.Name, d.Allow, d.Rule, d.Reason, tc.allow, tc.rule)
		}
	}
	bad := Config{Identities: []Identity{{}}}
	if _, err := New(bad, nil); err == nil || !strings.Contains(err.Error(), "policy.identities[0].match: give name") {
		t.Errorf("an identity without a name: %v", err)
	}
	wide := Identity{Match: IdentityMatch{Name: "x"}}
	wide.Destructive.Allow = []string{"*__*"}
	if _, err := New(Config{Identities: []Identity{wide}}, nil); err == nil || !strings.Contains(err.Error(), "every upstream tool") {
		t.Errorf("an identity enabling every destructive tool: %v", err)
	}
}
