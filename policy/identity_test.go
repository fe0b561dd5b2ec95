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
	// The MCP mirror narrows the upstreams' prompts and resources of the
	// callers that rules single out (gateway.CallerRules), and only theirs.
	for id, want := range map[string]bool{"token:ci": true, "token:ops": true, "token:other": false, "local": false} {
		if got := e.HasCallerRules(&gateway.Call{Identity: id}); got != want {
			t.Errorf("HasCallerRules(%s) = %v, want %v", id, got, want)
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

// TestIdentityClaimsAndProfile (issue 14): an entry matches an OAuth
// caller by scope and by token claims (a list claim holding the value),
// every condition must hold; an entry's profile confines the caller: the
// view admits only the profile's tools and Decide denies the others, naming
// the entry, whatever path the call takes.
func TestIdentityClaimsAndProfile(t *testing.T) {
	readers, err := NewProfile("readers", []string{"read_*"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var cfg Config
	ops := Identity{Match: IdentityMatch{Claim: map[string]string{"groups": "ops"}, Scope: "tools:write"}}
	ops.Destructive.Allow = []string{"delete_file"}
	guest := Identity{Match: IdentityMatch{Claim: map[string]string{"groups": "guests"}}, Profile: "readers"}
	// A namespaced claim, which a configuration key cannot name.
	admins := Identity{Match: IdentityMatch{Claims: []ClaimMatch{{Name: "https://example.com/roles", Value: "admin"}}}}
	admins.Destructive.Allow = []string{"delete_file"}
	cfg.Identities = []Identity{ops, guest, admins}
	e, err := New(cfg, &Options{Profiles: map[string]*Profile{"readers": readers}})
	if err != nil {
		t.Fatal(err)
	}
	del := testTool(t, "delete_file", []string{FSWrite}, gateway.Hints{ReadOnly: gateway.Bool(false), Destructive: gateway.Bool(true), OpenWorld: gateway.Bool(false)})
	read := testTool(t, "read_file", []string{FSRead}, readOnly)
	caller := func(scopes string, groups ...string) *gateway.Call {
		return &gateway.Call{Identity: "sub:alice", Principal: &gateway.Principal{Scopes: strings.Fields(scopes), Claims: map[string][]string{"groups": groups}}}
	}
	for _, tc := range []struct {
		name  string
		c     *gateway.Call
		tool  *gateway.Tool
		allow bool
		rule  string
	}{
		{"group and scope", caller("tools:write", "dev", "ops"), del, true, "policy.identities[0].destructive.allow:delete_file"},
		{"group without scope", caller("tools:read", "ops"), del, false, RuleDestructive},
		{"scope without group", caller("tools:write", "dev"), del, false, RuleDestructive},
		{"static token", &gateway.Call{Identity: "token:ops"}, del, false, RuleDestructive},
		{"guest outside profile", caller("tools:write", "guests", "ops"), del, false, "policy.identities[1].profile:readers"},
		{"guest in profile", caller("", "guests"), read, true, RuleSafeDefaults},
		{"namespaced claim", &gateway.Call{Identity: "sub:root", Principal: &gateway.Principal{Claims: map[string][]string{"https://example.com/roles": {"admin"}}}},
			del, true, "policy.identities[2].destructive.allow:delete_file"},
	} {
		d := e.Decide(gateway.AsCaller(context.Background(), tc.c), tc.tool)
		if d.Allow != tc.allow || d.Rule != tc.rule {
			t.Errorf("%s: allow %v rule %q (%s), want %v %q", tc.name, d.Allow, d.Rule, d.Reason, tc.allow, tc.rule)
		}
	}
	v := e.IdentityView(caller("", "guests"))
	if v == nil || v.Admits("delete_file") || !v.Admits("read_file") || v.Name() != "readers" {
		t.Errorf("the guests' view: %v", v)
	}
	if v := e.IdentityView(caller("", "dev")); v != nil {
		t.Errorf("a caller of no profile has view %v", v)
	}
	if _, err := New(Config{Identities: []Identity{{Match: IdentityMatch{Name: "ci"}, Profile: "nope"}}}, nil); err == nil ||
		!strings.Contains(err.Error(), `policy.identities[0].profile: "nope" is not a profile (define it under profiles)`) {
		t.Errorf("an unknown profile: %v", err)
	}
	if _, err := New(Config{Identities: []Identity{{Match: IdentityMatch{Claim: map[string]string{"groups": ""}}}}}, nil); err == nil ||
		!strings.Contains(err.Error(), "policy.identities[0].match.claim") {
		t.Errorf("a claim without a value: %v", err)
	}
}

// TestIdentityNameIsOneKindOfCaller: match.name local is the stdio and
// command-line caller, anonymous the HTTP caller without tokens, and any
// other name a bearer token's: an HTTP token that happens to be named
// local or anonymous, or an OAuth caller whose subject reads like a name,
// does not get their rules.
func TestIdentityNameIsOneKindOfCaller(t *testing.T) {
	local := Identity{Match: IdentityMatch{Name: "local"}}
	local.Destructive.Allow = []string{"delete_file"}
	anon := Identity{Match: IdentityMatch{Name: "anonymous"}}
	anon.Destructive.Allow = []string{"delete_file"}
	ci := Identity{Match: IdentityMatch{Name: "ci"}}
	ci.Destructive.Allow = []string{"delete_file"}
	e, err := New(Config{Identities: []Identity{local, anon, ci}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	del := testTool(t, "delete_file", []string{FSWrite}, gateway.Hints{ReadOnly: gateway.Bool(false), Destructive: gateway.Bool(true), OpenWorld: gateway.Bool(false)})
	for identity, allow := range map[string]bool{
		"local": true, "anonymous": true, "token:ci": true,
		"token:local": false, "token:anonymous": false, "sub:ci": false, "ci": false,
	} {
		d := e.Decide(gateway.AsCaller(context.Background(), &gateway.Call{Identity: identity}), del)
		if d.Allow != allow {
			t.Errorf("%s: allow %v (%s), want %v", identity, d.Allow, d.Rule, allow)
		}
	}
}
