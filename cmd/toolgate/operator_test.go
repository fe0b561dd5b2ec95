package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/cmd/toolgate/internal/config"
	"github.com/toolgate/toolgate/gateway"
	"github.com/toolgate/toolgate/policy"
)

// With no admin API, toolgate serve says at start which calls that need
// approval nobody can approve: none when the policy asks for none, those
// of clients without elicitation forms on the client channel, every one
// on the operator channel.
func TestUnanswerableApprovals(t *testing.T) {
	for _, c := range []struct {
		name string
		cfg  func(*policy.Config)
		want string // in the warning; "" for none
	}{
		{"the policy asks for none", func(*policy.Config) {}, ""},
		{"approval tools, client channel", func(p *policy.Config) { p.Approval.Tools = []string{"send_*"} },
			"only clients that show elicitation forms can approve"},
		{"destructive tools asked", func(p *policy.Config) { p.Destructive.Default = "ask" },
			"only clients that show elicitation forms can approve"},
		{"operator channel", func(p *policy.Config) {
			p.Approval.Tools, p.Approval.Channel = []string{"send_*"}, "operator"
		}, "every call that needs approval will be denied"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var cfg policy.Config
			c.cfg(&cfg)
			eff, err := policy.New(cfg, nil)
			if err != nil {
				t.Fatal(err)
			}
			got := unanswerableApprovals(policy.NewLive(eff))
			if c.want == "" && got != "" || !strings.Contains(got, c.want) || c.want != "" && !strings.Contains(got, "admin.addr is not set") {
				t.Errorf("warning %q, want one saying %q", got, c.want)
			}
		})
	}
}

// A reload that makes the policy ask, with no admin API, warns as a start
// would.
func TestReloadWarnsOfUnanswerableApprovals(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("XDG_STATE_HOME", filepath.Join(dir, "state"))
	cfg := configFrom(t, dir, "memory: {enabled: false}\n")
	var logged lockedBuffer
	a, err := newApp(context.Background(), cfg, &logged, appOptions{record: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.close() })
	next := configFrom(t, dir, "memory: {enabled: false}\npolicy: {approval: {tools: [write_file], channel: operator}}\n")
	r := &reloader{a: a, cur: cfg, load: func() (*config.Config, error) { return next, nil },
		srv: gateway.NewMCPServer(&gateway.MCPOptions{Name: "t", Catalog: a.catalog, Pipeline: a.pipeline})}
	r.reload(context.Background(), "SIGHUP")
	if res := r.last.Load(); !res.OK {
		t.Fatalf("reload: %+v", res)
	}
	if !strings.Contains(logged.String(), "config reload: the policy asks for approval through the operator") {
		t.Errorf("the reload does not warn that nobody can approve:\n%s", logged.String())
	}
}
