package main

import (
	"github.com/spf13/pflag"
	"github.com/toolgate/toolgate/gateway"
	"github.com/toolgate/toolgate/policy"
	"strings"
)

func init() {
	commands = append(commands, &command{
		name:  "policy",
		args:  "[--as NAME] [--json] [--config FILE]",
		short: "print the effective permission policy: every tool, its decision, and the layer and rule that decided",
		flags: func(fs *pflag.FlagSet) {
			configFlags(fs)
			fs.Bool("json", false, "print JSON")
			fs.String("as", "", "decide as this caller: a token name of http.auth.tokens, sub:SUBJECT (OAuth), local or anonymous (policy.identities apply)")
		},
		run: runPolicy,
	})
}

func runPolicy(e *env, fs *pflag.FlagSet, args []string) error {
	a, err := listingApp(e, fs, args, "policy")
	if err != nil {
		return err
	}
	defer a.close()
	upstreams := map[string]bool{}
	for _, u := range a.cfg.Upstreams {
		upstreams[u.Name] = true
	}
	var tools []policy.ExplainTool
	for _, en := range a.catalog.Entries() {
		tools = append(tools, policy.ExplainTool{Name: en.Tool.Name, Toolset: en.Toolset, Tool: en.Tool, Upstream: upstreams[en.Toolset]})
	}
	ctx := e.ctx
	if as, _ := fs.GetString("as"); as != "" {
		identity := as
		if as != "local" && as != "anonymous" && !strings.HasPrefix(as, "sub:") {
			identity = "token:" + as
		}
		ctx = gateway.AsCaller(ctx, &gateway.Call{Identity: identity})
	}
	report := a.policy.Explain(ctx, tools)
	if asJSON, _ := fs.GetBool("json"); asJSON {
		return writeJSON(e.stdout, report)
	}
	return report.WriteText(e.stdout)
}
