package main

import (
	"strings"

	"github.com/spf13/pflag"
	"github.com/toolgate/toolgate/gateway"
	"github.com/toolgate/toolgate/policy"
)

func init() {
	commands = append(commands, &command{
		name:  "policy",
		args:  "[--as NAME] [--json] [--config FILE]",
		short: "print the effective permission policy: every tool, its decision, and the layer and rule that decided",
		flags: func(fs *pflag.FlagSet) {
			configFlags(fs)
			fs.Bool("json", false, "print JSON")
			fs.String("as", "", "decide as this caller: a token's name (an unnamed token's fingerprint, sha256:…, as toolgate config shows it), local, anonymous, or 'sub=alice,scope=tools:read' for an OAuth caller (policy.identities apply)")
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
		caller, err := parseAs(as)
		if err != nil {
			return err
		}
		ctx = gateway.AsCaller(ctx, caller)
	}
	report := a.policy.Explain(ctx, tools)
	if asJSON, _ := fs.GetBool("json"); asJSON {
		return writeJSON(e.stdout, report)
	}
	return report.WriteText(e.stdout)
}

// parseAs reads --as: a bare name (a token name, local, anonymous), or
// comma-separated keys: name=, sub=, scope= and claim.NAME= (repeatable).
func parseAs(as string) (*gateway.Call, error) {
	if !strings.Contains(as, "=") {
		identity := as
		if as != "local" && as != "anonymous" {
			identity = "token:" + as
		}
		return &gateway.Call{Identity: identity}, nil
	}
	p := &gateway.Principal{Claims: map[string][]string{}}
	c := &gateway.Call{Principal: p}
	for _, part := range strings.Split(as, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(part), "=")
		switch k {
		case "name":
			c.Identity = "token:" + v
		case "sub":
			c.Identity = "sub:" + v
		case "scope":
			p.Scopes = append(p.Scopes, strings.Fields(v)...)
		default:
			name, ok := strings.CutPrefix(k, "claim.")
			if !ok || name == "" {
				return nil, usagef("--as: unknown key %q (name=, sub=, scope=, claim.NAME=)", k)
			}
			p.Claims[name] = append(p.Claims[name], v)
		}
	}
	if c.Identity == "" {
		c.Identity = "anonymous"
	}
	return c, nil
}
