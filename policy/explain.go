package policy

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/toolgate/toolgate/gateway"
)

// ExplainTool is a tool to explain, with the toolset that serves it.
type ExplainTool struct {
	Name    string
	Toolset string
	Tool    *gateway.Tool
	// Upstream is set for a tool of an upstream MCP server.
	Upstream bool
}

// Report is the effective policy computed explicitly: the layers it is
// merged from and the decision for every tool. It is what `toolgate policy`
// prints ([Report.WriteText]) and, encoded as JSON, `toolgate policy --json`.
type Report struct {
	// Caller is who the decisions are for (`toolgate policy --as`), nil
	// when ctx names no caller.
	Caller *CallerReport `json:"caller,omitempty"`
	Layers Layers        `json:"layers"`
	Tools  []ToolReport  `json:"tools"`
	// Unmatched are the policy's globs that match none of the tools.
	Unmatched []UnmatchedGlob `json:"unmatched_globs"`
}

// CallerReport is the caller a report decides for, and the entries of
// policy.identities that match it: none is worth saying, since a caller
// no entry matches (a misspelled name, say) gets every caller's decisions.
type CallerReport struct {
	Identity   string   `json:"identity"`
	Identities []string `json:"identities"` // "policy.identities[0]", ...
}

// Layers are the policy's layers, in the order they are merged.
type Layers struct {
	Runtime RuntimeLayer `json:"runtime"`
	Config  ConfigLayer  `json:"config"`
	Skill   SkillLayer   `json:"skill"`
	Sandbox SandboxLayer `json:"sandbox"`
}

// RuntimeLayer is the runtime's fixed part: the safe defaults it enables
// and the deny rules nothing lifts.
type RuntimeLayer struct {
	SafeDefaults []string `json:"safe_defaults"`
	DenyRules    []string `json:"deny_rules"`
}

// ConfigLayer is the `policy:` configuration as given.
type ConfigLayer struct {
	Capabilities       CapabilityRules  `json:"capabilities"`
	Tools              ToolRules        `json:"tools"`
	Grants             []GrantRule      `json:"grants"`
	Destructive        DestructiveRules `json:"destructive"`
	ListDenied         string           `json:"list_denied"`
	CustomCapabilities []string         `json:"custom_capabilities"`
	Approval           *ApprovalRules   `json:"approval,omitempty"`
}

// CapabilityRules is policy.capabilities.
type CapabilityRules struct {
	Allow       []string `json:"allow"`
	Deny        []string `json:"deny"`
	Requestable []string `json:"requestable"`
}

// ToolRules is policy.tools.
type ToolRules struct {
	Allow []string `json:"allow"`
	Deny  []string `json:"deny"`
}

// GrantRule is one entry of policy.grants, with its rule name.
type GrantRule struct {
	Rule         string   `json:"rule"`
	Tools        []string `json:"tools"`
	Capabilities []string `json:"capabilities"`
}

// DestructiveRules is policy.destructive.
type DestructiveRules struct {
	Allow               []string `json:"allow"`
	AllowAllDangerously bool     `json:"allow_all_tools_dangerously"`
	// Default is "ask" when destructive tools not enabled are asked
	// rather than denied; empty (deny) otherwise.
	Default string `json:"default,omitempty"`
}

// ApprovalRules is policy.approval, when any rule asks.
type ApprovalRules struct {
	Tools   []string `json:"tools"`
	Channel string   `json:"channel"`
	Timeout string   `json:"timeout"`
}

// SkillLayer is what loaded skills may request and what they were granted.
type SkillLayer struct {
	Requestable []string     `json:"requestable"`
	Grants      []SkillGrant `json:"grants"`
}

// SandboxLayer is the sandbox roots that confine the filesystem tools.
type SandboxLayer struct {
	Roots       []string `json:"roots"`
	Enforcement string   `json:"enforcement"`
}

// ToolReport is one tool's decision.
type ToolReport struct {
	Name         string   `json:"name"`
	Toolset      string   `json:"toolset"`
	Decision     string   `json:"decision"` // "allow" or "deny"
	Layer        string   `json:"layer"`
	Rule         string   `json:"rule"`
	Capabilities []string `json:"capabilities"`
	Missing      []string `json:"missing"`
	Hints        []string `json:"hints"`
	Reason       string   `json:"reason"`
	// Undeclared marks an upstream tool that declares no capabilities
	// (the upstream has no capabilities: key): capability rules reach it
	// only through what its annotations imply (openWorldHint: net).
	Undeclared bool `json:"capabilities_undeclared,omitempty"`
}

const sandboxEnforcement = "filesystem tools confine every path to these roots with path guards; " +
	"this always wins, and the policy never widens it"

// Explain computes the effective policy for the given tools: the layers,
// and each tool's decision as [Effective.Decide] makes it for the caller of
// ctx (with no call in ctx, skill grants of the "" session apply).
func (e *Effective) Explain(ctx context.Context, entries []ExplainTool) Report {
	c := &e.cfg
	grants := make([]GrantRule, len(c.Grants))
	for i, g := range c.Grants {
		grants[i] = GrantRule{Rule: g.key(i), Tools: list(g.Tools), Capabilities: list(g.Capabilities)}
	}
	listDenied := c.ListDenied
	if listDenied == "" {
		listDenied = "show"
	}
	r := Report{
		Layers: Layers{
			Runtime: RuntimeLayer{
				SafeDefaults: SafeDefaults(),
				DenyRules:    []string{RuleShellExec, RuleDestructive},
			},
			Config: ConfigLayer{
				Capabilities: CapabilityRules{
					Allow: list(c.Capabilities.Allow), Deny: list(c.Capabilities.Deny), Requestable: list(c.Capabilities.Requestable),
				},
				Tools:  ToolRules{Allow: list(c.Tools.Allow), Deny: list(c.Tools.Deny)},
				Grants: grants,
				Destructive: DestructiveRules{
					Allow: list(c.Destructive.Allow), AllowAllDangerously: c.Destructive.AllowAllDangerously,
					Default: strings.ReplaceAll(c.Destructive.Default, "deny", ""),
				},
				Approval:           e.approvalRules(),
				ListDenied:         listDenied,
				CustomCapabilities: list(c.CustomCapabilities),
			},
			Skill: SkillLayer{
				Requestable: list(c.Capabilities.Requestable),
				Grants:      e.SkillGrants(),
			},
			Sandbox: SandboxLayer{Roots: list(e.roots), Enforcement: sandboxEnforcement},
		},
		Tools: []ToolReport{},
	}
	if call := gateway.CallFrom(ctx); call != nil {
		r.Caller = &CallerReport{Identity: call.Identity, Identities: []string{}}
		for _, i := range e.identityRules(call) {
			r.Caller.Identities = append(r.Caller.Identities, fmt.Sprintf("policy.identities[%d]", i))
		}
	}
	if r.Layers.Skill.Grants == nil {
		r.Layers.Skill.Grants = []SkillGrant{}
	}
	for _, en := range entries {
		d := e.Decide(ctx, en.Tool)
		name := en.Name
		var hints []string
		if en.Tool != nil {
			if name == "" {
				name = en.Tool.Name
			}
			hints = en.Tool.Permissions.Resolved().Names()
		}
		decision := "deny"
		switch {
		case d.Allow:
			decision = "allow"
		case d.Ask:
			decision = "ask"
		}
		r.Tools = append(r.Tools, ToolReport{
			Name: name, Toolset: en.Toolset, Decision: decision, Layer: d.Layer, Rule: d.Rule,
			Capabilities: list(d.Capabilities), Missing: list(d.Missing), Hints: list(hints), Reason: d.Reason,
			Undeclared: en.Tool != nil && en.Upstream && len(en.Tool.Permissions.Capabilities) == 0,
		})
	}
	names := make([]string, 0, len(entries))
	for _, en := range entries {
		names = append(names, en.Name)
	}
	r.Unmatched = e.Unmatched(names)
	if r.Unmatched == nil {
		r.Unmatched = []UnmatchedGlob{}
	}
	return r
}

// list returns a copy of s that is never nil, so that JSON has [] not null.
func list(s []string) []string {
	return append([]string{}, s...) // an empty s too: append to nil would give nil
}

// WriteText writes the report for an operator: one aligned row per tool
// with its decision and the layer and rule that decided, a count, then the
// layers the policy is merged from, and the reasons of the denied tools.
func (r Report) WriteText(w io.Writer) error {
	ew := &errWriter{w: w}
	if c := r.Caller; c != nil {
		switch len(c.Identities) {
		case 0:
			fmt.Fprintf(ew, "As %s: no entry of policy.identities matches this caller, so these are the decisions of every caller none matches.\n\n", c.Identity)
		case 1:
			fmt.Fprintf(ew, "As %s: %s applies.\n\n", c.Identity, c.Identities[0])
		default:
			fmt.Fprintf(ew, "As %s: %s apply.\n\n", c.Identity, strings.Join(c.Identities, ", "))
		}
	}
	tw := tabwriter.NewWriter(ew, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TOOL\tTOOLSET\tDECISION\tLAYER\tRULE\tCAPABILITIES\tMISSING\tHINTS")
	allowed, undeclared := 0, 0
	for _, t := range r.Tools {
		if t.Decision == "allow" {
			allowed++
		}
		caps := joinOrDash(t.Capabilities, ",")
		if t.Undeclared {
			caps = "undeclared"
			if len(t.Capabilities) > 0 {
				caps += "(" + strings.Join(t.Capabilities, ",") + " from hints)"
			}
			undeclared++
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", t.Name, dash(t.Toolset), t.Decision, t.Layer, t.Rule,
			caps, joinOrDash(t.Missing, ","), joinOrDash(t.Hints, ","))
	}
	tw.Flush()
	if undeclared > 0 {
		fmt.Fprintf(ew, "\n%d upstream tools declare no capabilities: capability rules (capabilities.deny: [fs.write], say) reach them only\n"+
			"through their hints (openWorldHint means net). Declare what an upstream's tools do with its capabilities: key.\n", undeclared)
	}
	for _, u := range r.Unmatched {
		fmt.Fprintf(ew, "\nwarning: %s\n", u)
	}
	asked := 0
	for _, t := range r.Tools {
		if t.Decision == "ask" {
			asked++
		}
	}
	if asked > 0 {
		fmt.Fprintf(ew, "\n%d tools: %d allowed, %d ask a person, %d denied. The first rule that decides wins, in this order:\n"+
			"runtime denies, config denies, the destructive rule, every capability the tool needs must be enabled, then approval.\n",
			len(r.Tools), allowed, asked, len(r.Tools)-allowed-asked)
	} else {
		fmt.Fprintf(ew, "\n%d tools: %d allowed, %d denied. The first rule that decides wins, in this order:\n"+
			"runtime denies, config denies, the destructive rule, then every capability the tool needs must be enabled.\n",
			len(r.Tools), allowed, len(r.Tools)-allowed)
	}

	if len(r.Tools) > 0 {
		fmt.Fprintln(ew, "\nReasons:")
		for _, t := range r.Tools {
			fmt.Fprintf(ew, "  %s: %s: %s\n", t.Name, t.Decision, t.Reason)
		}
	}

	l := r.Layers
	fmt.Fprintln(ew, "\nLayers:")
	tw = tabwriter.NewWriter(ew, 0, 0, 2, ' ', 0)
	row := func(layer, key, value string) { fmt.Fprintf(tw, "  %s\t%s\t%s\n", layer, key, value) }
	row("runtime", "safe defaults", joinOrDash(l.Runtime.SafeDefaults, ", "))
	row("", "deny rules", joinOrDash(l.Runtime.DenyRules, ", ")+" (nothing lifts shell.exec; destructive tools need policy.destructive)")
	c := l.Config
	row("config", "capabilities.allow", joinOrDash(c.Capabilities.Allow, ", "))
	row("", "capabilities.deny", joinOrDash(c.Capabilities.Deny, ", "))
	row("", "tools.allow", joinOrDash(c.Tools.Allow, ", "))
	row("", "tools.deny", joinOrDash(c.Tools.Deny, ", "))
	if len(c.Grants) == 0 {
		row("", "grants", "-")
	}
	for _, g := range c.Grants {
		row("", strings.TrimPrefix(g.Rule, "policy."), fmt.Sprintf("tools %s: %s", strings.Join(g.Tools, ", "), strings.Join(g.Capabilities, ", ")))
	}
	row("", "destructive.allow", joinOrDash(c.Destructive.Allow, ", "))
	dangerous := "false"
	if c.Destructive.AllowAllDangerously {
		dangerous = "TRUE: every destructive tool is enabled"
	}
	row("", "destructive.allow_all_tools_dangerously", dangerous)
	if c.Destructive.Default != "" {
		row("", "destructive.default", c.Destructive.Default)
	}
	if a := c.Approval; a != nil {
		row("", "approval.tools", joinOrDash(a.Tools, ", "))
		row("", "approval.channel", a.Channel)
		row("", "approval.timeout", a.Timeout)
	}
	row("", "list_denied", c.ListDenied)
	if len(c.CustomCapabilities) > 0 {
		row("", "custom_capabilities", strings.Join(c.CustomCapabilities, ", "))
	}
	row("skill", "requestable", joinOrDash(l.Skill.Requestable, ", "))
	if len(l.Skill.Grants) == 0 {
		row("", "grants", "-")
	}
	for _, g := range l.Skill.Grants {
		where := "in session " + g.Session
		if g.Session == "" {
			where = "outside any session (commands, calls without a session)"
		}
		row("", "grant", fmt.Sprintf("%s to skill %q %s", g.Capability, g.Skill, where))
	}
	row("sandbox", "roots", joinOrDash(l.Sandbox.Roots, ", "))
	row("", "enforcement", l.Sandbox.Enforcement)
	tw.Flush()
	return ew.err
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func joinOrDash(s []string, sep string) string { return dash(strings.Join(s, sep)) }

// errWriter keeps the first write error so that WriteText can check once.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(p []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	n, err := e.w.Write(p)
	e.err = err
	return n, err
}

// approvalRules is the approval layer for reports, nil when nothing asks.
func (e *Effective) approvalRules() *ApprovalRules {
	if !e.NeedsApproval() {
		return nil
	}
	return &ApprovalRules{Tools: list(e.cfg.Approval.Tools), Channel: e.ApprovalChannel(), Timeout: e.ApprovalTimeout().String()}
}
