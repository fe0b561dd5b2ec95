package policy

import (
	"context"
	"testing"

	"github.com/toolgate/toolgate/gateway"
)

func TestApprovalDecisions(t *testing.T) {
	destructive := gateway.Hints{ReadOnly: gateway.Bool(false), Destructive: gateway.Bool(true), OpenWorld: gateway.Bool(false)}
	readOnly := gateway.ReadOnlyHints()
	tool := func(name string, h gateway.Hints, caps ...string) *gateway.Tool {
		return &gateway.Tool{Name: name, Permissions: gateway.Permissions{Capabilities: caps, Hints: h}}
	}
	var cfg Config
	cfg.Approval.Tools = []string{"send_*"}
	cfg.Destructive.Default = "ask"
	cfg.Tools.Deny = []string{"send_never"}
	p, err := New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		tool       *gateway.Tool
		allow, ask bool
		rule       string
	}{
		{tool("read", readOnly, "fs.read"), true, false, RuleSafeDefaults},
		{tool("send_mail", readOnly), false, true, "policy.approval.tools:send_*"},
		{tool("rm_rf", destructive, "fs.write"), false, true, RuleAskDestructive},
		// Denials win over asking.
		{tool("send_never", readOnly), false, false, "policy.tools.deny:send_never"},
		{tool("send_shell", readOnly, ShellExec), false, false, "runtime.deny:shell.exec"},
		{tool("drop_db", destructive, "net"), false, false, RuleNotEnabled},
	} {
		d := p.Decide(context.Background(), c.tool)
		if d.Allow != c.allow || d.Ask != c.ask || d.Rule != c.rule {
			t.Errorf("%s: allow=%v ask=%v rule=%q, want allow=%v ask=%v rule=%q (%s)", c.tool.Name, d.Allow, d.Ask, d.Rule, c.allow, c.ask, c.rule, d.Reason)
		}
	}
	if !p.NeedsApproval() || p.ApprovalChannel() != "client" || p.ApprovalTimeout().String() != "2m0s" {
		t.Errorf("defaults: needs=%v channel=%q timeout=%s", p.NeedsApproval(), p.ApprovalChannel(), p.ApprovalTimeout())
	}
	for _, bad := range []func(*Config){
		func(c *Config) { c.Destructive.Default = "maybe" },
		func(c *Config) { c.Approval.Channel = "pigeon" },
		func(c *Config) { c.Approval.Tools = []string{"fs.*"} },
	} {
		var c Config
		bad(&c)
		if _, err := New(c, nil); err == nil {
			t.Errorf("%+v accepted", c)
		}
	}
}
