package policy

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/toolgate/toolgate/gateway"
)

// Config is the `policy:` section of toolgate's configuration. The zero
// Config is the safe default: the runtime safe capabilities only, no
// destructive tool, no skill grants.
type Config struct {
	Capabilities struct {
		// Allow lists capabilities enabled for every tool beyond the
		// runtime safe defaults (net, say).
		Allow []string `koanf:"allow"`
		// Deny lists capabilities denied to every tool; it wins over
		// every allow, grant and skill request.
		Deny []string `koanf:"deny"`
		// Requestable lists capabilities a loaded skill may request; they
		// are granted only when a skill requests them, for its session.
		Requestable []string `koanf:"requestable"`
	} `koanf:"capabilities"`
	Tools struct {
		// Allow lists tool-name globs whose tools have every capability
		// they need enabled (runtime denies, capabilities.deny and the
		// destructive rule still apply).
		Allow []string `koanf:"allow"`
		// Deny lists tool-name globs whose tools are denied.
		Deny []string `koanf:"deny"`
	} `koanf:"tools"`
	// Grants enable capabilities for the tools matching globs.
	Grants      []Grant `koanf:"grants"`
	Destructive struct {
		// Allow lists tool-name globs whose destructive operations are
		// enabled. A glob that matches every name is refused: use
		// AllowAllDangerously for that.
		Allow []string `koanf:"allow"`
		// AllowAllDangerously enables every destructive tool. It is the
		// only way to do so.
		AllowAllDangerously bool `koanf:"allow_all_tools_dangerously"`
		// Default is what happens to a destructive tool Allow does not
		// enable: "deny" (the default) or "ask" (a person approves each
		// call; see Approval).
		Default string `koanf:"default"`
	} `koanf:"destructive"`
	// Approval makes calls wait for a person's approval.
	Approval Approval `koanf:"approval"`
	// ListDenied is "show" (the default: denied tools stay in tools/list,
	// marked in _meta, and are refused when called) or "hide".
	ListDenied string `koanf:"list_denied"`
	// CustomCapabilities are capability names beyond the built-in ones that
	// the configuration may use. Any other unknown name is an error.
	CustomCapabilities []string `koanf:"custom_capabilities"`
	// Identities are rules for the calls of particular callers (see
	// [Identity]).
	Identities []Identity `koanf:"identities"`
}

// Approval is the `policy.approval:` section: which calls need a person's
// approval, through which channel, and how long they wait for it.
type Approval struct {
	// Tools lists tool-name globs whose calls need approval even when the
	// policy otherwise allows them. Denials still win: nothing can be
	// approved past a runtime or config deny, or a missing capability.
	Tools []string `koanf:"tools"`
	// Channel is "client" (the calling client's elicitation, falling back
	// to the operator when the client cannot), or "operator" (always the
	// operator: an elicitation answer is only the client's word). Empty
	// means client.
	Channel string `koanf:"channel"`
	// Timeout is how long a call waits for an answer; no answer is a
	// denial. Zero means 2m.
	Timeout time.Duration `koanf:"timeout"`
}

// Grant enables capabilities for the tools whose names match any of its
// globs.
type Grant struct {
	Tools        []string `koanf:"tools"`
	Capabilities []string `koanf:"capabilities"`
	// Key is the configuration key the grant was written as, when it is
	// not policy.grants[i] (an upstream's grant: is "upstreams[2].grant"),
	// so that errors and explanations name what the user wrote.
	Key string `koanf:"-"`
}

// key is the configuration key of grant i.
func (g Grant) key(i int) string {
	if g.Key != "" {
		return g.Key
	}
	return fmt.Sprintf("policy.grants[%d]", i)
}

// Options configure [New]. A nil *Options is the zero Options.
type Options struct {
	// SandboxRoots are the filesystem sandbox roots, shown in decisions of
	// filesystem tools and in explanations (the sandbox layer). The
	// filesystem tools enforce them; the policy only reports them.
	SandboxRoots []string
	// Logger receives skill grants and configuration warnings. If nil,
	// logs are discarded.
	Logger *slog.Logger
	// Profiles are the configuration's profiles by name, which
	// policy.identities[].profile names.
	Profiles map[string]*Profile
}

// Layer names used in decisions.
const (
	LayerRuntime = "runtime"
	LayerConfig  = "config"
	LayerSkill   = "skill"
	LayerSandbox = "sandbox"
)

// Rule names used in decisions. Rules that depend on a value are the
// prefix followed by the value: "policy.tools.deny:fs_*",
// "policy.capabilities.deny:net", "policy.grants[0]", "skill:web-research".
const (
	RuleShellExec           = "runtime.deny:shell.exec"
	RuleDestructive         = "runtime.deny:destructive"
	RuleSafeDefaults        = "runtime.safe_defaults"
	RuleNoCapabilities      = "runtime.no_capabilities"
	RuleNotEnabled          = "capability.not_enabled"
	RuleAllowAllDestructive = "policy.destructive.allow_all_tools_dangerously"
	RuleAskDestructive      = "policy.destructive.default:ask"
	RuleDestructiveTooWide  = "policy.destructive.allow:too_wide"
)

// Effective is the effective permission policy: runtime safe defaults,
// configuration, the requests of loaded skills and the sandbox constraints,
// merged by seed 002's rules:
//
//  1. runtime deny rules always win: shell.exec is never enabled, and
//     destructive tools are denied unless configuration enables them;
//  2. sandbox path constraints always win: filesystem tools confine every
//     path to the sandbox roots ([Sandbox]), and nothing here widens them;
//  3. configuration can enable safe capabilities (capabilities.allow,
//     grants, tools.allow);
//  4. a skill can only request capabilities, and a request takes effect
//     only for capabilities configuration marks requestable ([Effective.Request]);
//  5. destructive operations need explicit enablement by tool-name glob
//     (or the loudly named allow_all_tools_dangerously).
//
// [Effective.Decide] applies them in this order, and the first rule that
// decides wins:
//
//	runtime  the tool needs shell.exec                      deny  runtime.deny:shell.exec
//	config   the name matches tools.deny                     deny  policy.tools.deny:<glob>
//	config   a needed capability is in capabilities.deny     deny  policy.capabilities.deny:<cap>
//	runtime  destructive and not enabled by destructive.*    deny  runtime.deny:destructive
//	config   a needed capability is not enabled              deny  capability.not_enabled
//	         otherwise                                       allow (the rule that enabled it last)
//
// A capability is enabled, checked in this order, by the runtime safe
// defaults (runtime.safe_defaults), capabilities.allow
// (policy.capabilities.allow:<cap>), a grant (policy.grants[i]), tools.allow
// (policy.tools.allow:<glob>) or a skill grant in the caller's session
// (skill:<name>, layer "skill"). An allow decision names the last of these
// layers that was needed, in merge order: runtime safe defaults, then
// capabilities.allow, grants, tools.allow, the destructive enablement, and
// skill grants; every enabling rule is listed in the reason.
//
// An Effective is safe for concurrent use.
type Effective struct {
	cfg      Config
	roots    []string
	profiles map[string]*Profile
	log      *slog.Logger
	custom   []string

	// g holds the capabilities skills were granted, per session; it is
	// shared with the policy that replaces this one on reload ([Live]).
	g *grantStore
}

// grantStore is the capabilities skills were granted, per session, with
// the skills that requested them in request order.
type grantStore struct {
	mu     sync.RWMutex
	grants map[string]map[string][]string
	// inForce is the version whose rules decide skill requests: the
	// newest sharing the store. A request decided on a version a reload
	// has replaced could otherwise grant, after [Live.Replace] filtered
	// the store under mu, what the new version no longer lets a skill
	// request.
	inForce *Effective

	// destructive is the catalog's destructive tools by toolset, for the
	// rule that a destructive.allow glob may not enable all of a
	// toolset's (see [Effective.SetDestructiveTools]). Shared across
	// versions like the grants: it describes the catalog, not the config.
	destructive atomic.Pointer[map[string][]string]
}

var _ gateway.Policy = (*Effective)(nil)

// New builds the effective policy from the configuration. It returns an
// error naming the configuration key and value for unknown capability
// names, shell.exec in an allow, requestable or grant list, bad globs, a
// destructive.allow glob that matches every tool, and a bad list_denied.
func New(cfg Config, opts *Options) (*Effective, error) {
	if opts == nil {
		opts = &Options{}
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	e := &Effective{
		cfg:      cloneConfig(cfg),
		roots:    slices.Clone(opts.SandboxRoots),
		profiles: opts.Profiles,
		log:      log,
		g:        &grantStore{grants: map[string]map[string][]string{}},
	}
	e.g.inForce = e
	if err := e.validate(); err != nil {
		return nil, err
	}
	e.warn()
	return e, nil
}

func cloneConfig(c Config) Config {
	out := c
	out.Capabilities.Allow = slices.Clone(c.Capabilities.Allow)
	out.Capabilities.Deny = slices.Clone(c.Capabilities.Deny)
	out.Capabilities.Requestable = slices.Clone(c.Capabilities.Requestable)
	out.Tools.Allow = slices.Clone(c.Tools.Allow)
	out.Tools.Deny = slices.Clone(c.Tools.Deny)
	out.Grants = make([]Grant, len(c.Grants))
	for i, g := range c.Grants {
		out.Grants[i] = Grant{Tools: slices.Clone(g.Tools), Capabilities: slices.Clone(g.Capabilities), Key: g.Key}
	}
	out.Destructive.Allow = slices.Clone(c.Destructive.Allow)
	out.CustomCapabilities = slices.Clone(c.CustomCapabilities)
	out.Identities = slices.Clone(c.Identities) // entries are not changed after New
	return out
}

func (e *Effective) validate() error {
	c := &e.cfg
	for i, name := range c.CustomCapabilities {
		key := fmt.Sprintf("policy.custom_capabilities[%d]", i)
		if !capabilityNameRE.MatchString(name) {
			return fmt.Errorf("%s: bad capability name %q: use dot-separated lowercase words, like fs.read", key, name)
		}
		if name == ShellExec {
			return fmt.Errorf("%s: %q is a built-in capability the runtime denies", key, name)
		}
		if !slices.Contains(knownCapabilities, name) && !slices.Contains(e.custom, name) {
			e.custom = append(e.custom, name)
		}
	}
	if err := e.checkCaps("policy.capabilities.allow", c.Capabilities.Allow, true); err != nil {
		return err
	}
	if err := e.checkCaps("policy.capabilities.deny", c.Capabilities.Deny, false); err != nil {
		return err
	}
	if err := e.checkCaps("policy.capabilities.requestable", c.Capabilities.Requestable, true); err != nil {
		return err
	}
	if err := checkGlobs("policy.tools.allow", c.Tools.Allow); err != nil {
		return err
	}
	if err := checkGlobs("policy.tools.deny", c.Tools.Deny); err != nil {
		return err
	}
	for i, g := range c.Grants {
		key := g.key(i)
		if len(g.Tools) == 0 {
			return fmt.Errorf("%s: a grant needs tools (tool-name globs)", key)
		}
		if len(g.Capabilities) == 0 {
			return fmt.Errorf("%s: a grant needs capabilities", key)
		}
		if err := checkGlobs(key+".tools", g.Tools); err != nil {
			return err
		}
		if err := e.checkCaps(key+".capabilities", g.Capabilities, true); err != nil {
			return err
		}
	}
	if err := checkGlobs("policy.destructive.allow", c.Destructive.Allow); err != nil {
		return err
	}
	for i, g := range c.Destructive.Allow {
		if what := matchesTooMuch(g); what != "" {
			return fmt.Errorf("policy.destructive.allow[%d]: %q matches %s; list the destructive tools to enable, "+
				"or set policy.destructive.allow_all_tools_dangerously: true to enable them all", i, g, what)
		}
	}
	switch c.ListDenied {
	case "", "show", "hide":
	default:
		return fmt.Errorf("policy.list_denied: %q is neither \"show\" nor \"hide\"", c.ListDenied)
	}
	switch c.Destructive.Default {
	case "", "deny", "ask":
	default:
		return fmt.Errorf("policy.destructive.default: %q is neither \"deny\" nor \"ask\"", c.Destructive.Default)
	}
	if err := e.validateIdentities(); err != nil {
		return err
	}
	if err := checkGlobs("policy.approval.tools", c.Approval.Tools); err != nil {
		return err
	}
	switch c.Approval.Channel {
	case "", "client", "operator":
	default:
		return fmt.Errorf("policy.approval.channel: %q is neither \"client\" nor \"operator\"", c.Approval.Channel)
	}
	if c.Approval.Timeout < 0 {
		return fmt.Errorf("policy.approval.timeout: must not be negative, got %s", c.Approval.Timeout)
	}
	return nil
}

// ApprovalChannel is "client" or "operator" (policy.approval.channel).
func (e *Effective) ApprovalChannel() string {
	if e.cfg.Approval.Channel == "" {
		return "client"
	}
	return e.cfg.Approval.Channel
}

// ApprovalTimeout is how long a call waits for approval.
func (e *Effective) ApprovalTimeout() time.Duration {
	if e.cfg.Approval.Timeout <= 0 {
		return 2 * time.Minute
	}
	return e.cfg.Approval.Timeout
}

// NeedsApproval reports whether any rule can ask (so an approval channel
// is needed).
func (e *Effective) NeedsApproval() bool {
	return len(e.cfg.Approval.Tools) > 0 || e.cfg.Destructive.Default == "ask"
}

// warn logs configuration that is valid but probably not what was meant.
func (e *Effective) warn() {
	c := &e.cfg
	for _, name := range c.Capabilities.Deny {
		if slices.Contains(c.Capabilities.Allow, name) {
			e.log.Warn("policy: capability is both allowed and denied; deny wins", "capability", name)
		}
		if slices.Contains(c.Capabilities.Requestable, name) {
			e.log.Warn("policy: requestable capability is denied; no skill can be granted it", "capability", name)
		}
	}
	if c.Destructive.AllowAllDangerously {
		e.log.Warn("policy: destructive.allow_all_tools_dangerously is set; every destructive tool is enabled")
	}
}

func (e *Effective) known(name string) bool {
	return slices.Contains(knownCapabilities, name) || slices.Contains(e.custom, name)
}

func (e *Effective) knownList() []string {
	return append(slices.Clone(knownCapabilities), e.custom...)
}

// HideDenied reports whether denied tools are hidden from tools/list
// (list_denied: hide) rather than listed and refused when called.
func (e *Effective) HideDenied() bool { return e.cfg.ListDenied == "hide" }

// SandboxRoots returns the sandbox roots the policy reports.
func (e *Effective) SandboxRoots() []string { return slices.Clone(e.roots) }

// sessionOf returns the caller's session: the session of the call ctx
// belongs to, or "" when there is no call (a command such as toolgate
// policy).
func sessionOf(ctx context.Context) string {
	if c := gateway.CallFrom(ctx); c != nil {
		return c.Session
	}
	return ""
}

// enabler is what enabled a capability (or a destructive tool).
type enabler struct {
	layer, rule string
	rank        int // merge order; the allow decision names the highest
}

const (
	rankSafeDefaults = iota
	rankCapabilitiesAllow
	rankGrant
	rankToolsAllow
	rankDestructive
	rankSkill
)

// Decide implements [gateway.Policy]: it decides whether t may be called by
// the caller of ctx (skill grants are per session). See [Effective] for
// the order of the rules.
func (e *Effective) Decide(ctx context.Context, t *gateway.Tool) gateway.Decision {
	if t == nil {
		return gateway.Decision{Layer: LayerRuntime, Rule: "runtime.unknown_tool", Reason: "there is no such tool"}
	}
	needed := NeededCapabilities(t)
	deny := func(layer, rule string, missing []string, reason string) gateway.Decision {
		return gateway.Decision{Layer: layer, Rule: rule, Reason: reason, Capabilities: needed, Missing: missing}
	}

	// 1. Runtime denies: nothing lifts them (merge rule 1).
	for _, c := range needed {
		if slices.Contains(runtimeDenied, c) {
			return deny(LayerRuntime, "runtime.deny:"+c, []string{c},
				c+" is denied by the runtime, and no configuration, grant or skill can enable it")
		}
	}

	// 2. Configuration denies, the caller's identity's among them.
	idRules := e.identityRules(gateway.CallFrom(ctx))
	if rule, reason, ok := e.identityProfileDeny(idRules, t.Name); ok {
		return deny(LayerConfig, rule, nil, reason)
	}
	if rule, reason, ok := e.identityDeny(idRules, t.Name); ok {
		return deny(LayerConfig, rule, nil, reason)
	}
	for _, g := range e.cfg.Tools.Deny {
		if matchGlob(g, t.Name) {
			return deny(LayerConfig, "policy.tools.deny:"+g, nil,
				fmt.Sprintf("the tool name matches policy.tools.deny glob %q", g))
		}
	}
	for _, c := range needed {
		if slices.Contains(e.cfg.Capabilities.Deny, c) {
			return deny(LayerConfig, "policy.capabilities.deny:"+c, []string{c},
				fmt.Sprintf("the tool needs %s, which policy.capabilities.deny denies to every tool", c))
		}
	}

	// 3. Destructive tools need explicit enablement (merge rule 5).
	var destructive *enabler
	var ask *enabler // the rule that asks a person, if any
	if t.Permissions.Resolved().Destructive {
		destructive = e.destructiveEnabler(t.Name)
		if destructive == nil {
			destructive = e.identityDestructive(idRules, t.Name)
		}
		if destructive == nil && e.cfg.Destructive.Default == "ask" {
			ask = &enabler{LayerConfig, RuleAskDestructive, rankDestructive}
		} else if destructive == nil {
			why := "its destructive hint says so"
			if t.Permissions.ReadOnly == nil && t.Permissions.Destructive == nil {
				why = "it has no hints, and MCP treats such a tool as destructive"
			}
			if rule, reason := e.tooWideDenial(idRules, t.Name); rule != "" {
				return deny(LayerConfig, rule, nil, reason)
			}
			return deny(LayerRuntime, RuleDestructive, nil,
				fmt.Sprintf("the tool is destructive (%s), and destructive tools are denied unless policy.destructive.allow lists a glob matching %q", why, t.Name))
		}
	}

	// 4. Every needed capability must be enabled.
	session := sessionOf(ctx)
	var missing, enabled []string
	best := enabler{layer: LayerRuntime, rule: RuleNoCapabilities, rank: -1}
	for _, c := range needed {
		en := e.capabilityEnabler(session, t.Name, c)
		if en == nil {
			en = e.identityCapability(idRules, t.Name, c)
		}
		if en == nil {
			missing = append(missing, c)
			continue
		}
		enabled = append(enabled, fmt.Sprintf("%s by %s", c, en.rule))
		if en.rank >= best.rank {
			best = *en
		}
	}
	if len(missing) > 0 {
		return deny(LayerConfig, RuleNotEnabled, missing, e.notEnabledReason(t.Name, missing))
	}

	// 5. A person's approval, where configuration asks for it: after
	// every deny, so nothing can be approved past one.
	if ask == nil {
		for _, g := range e.cfg.Approval.Tools {
			if matchGlob(g, t.Name) {
				ask = &enabler{LayerConfig, "policy.approval.tools:" + g, rankDestructive}
				break
			}
		}
	}
	if ask != nil {
		why := "policy.approval.tools lists it"
		if ask.rule == RuleAskDestructive {
			why = "it is destructive, not enabled by policy.destructive.allow, and policy.destructive.default is ask"
		}
		return gateway.Decision{Ask: true, Layer: ask.layer, Rule: ask.rule, Capabilities: needed,
			Reason: "a person must approve each call: " + why}
	}

	// 6. Allowed.
	if destructive != nil && destructive.rank >= best.rank {
		best = *destructive
	}
	var parts []string
	if len(enabled) == 0 {
		parts = append(parts, "the tool needs no capability")
	} else {
		parts = append(parts, "the tool's capabilities are enabled: "+strings.Join(enabled, ", "))
	}
	if destructive != nil {
		parts = append(parts, "its destructive operations are enabled by "+destructive.rule)
	} else {
		parts = append(parts, "it is not destructive")
	}
	if slices.ContainsFunc(needed, isFSCapability) {
		parts = append(parts, e.sandboxNote())
	}
	return gateway.Decision{Allow: true, Layer: best.layer, Rule: best.rule, Reason: strings.Join(parts, "; "), Capabilities: needed}
}

// sandboxNote is the sandbox layer's part of a filesystem tool's decision.
func (e *Effective) sandboxNote() string {
	if len(e.roots) == 0 {
		return "its paths are confined to the sandbox roots"
	}
	return fmt.Sprintf("its paths are confined to sandbox roots [%s]", strings.Join(e.roots, ", "))
}

// destructiveEnabler returns the rule that enables a destructive tool, or nil.
func (e *Effective) destructiveEnabler(name string) *enabler {
	for _, g := range e.cfg.Destructive.Allow {
		if matchGlob(g, name) && e.tooWide(g, name) == "" {
			return &enabler{LayerConfig, "policy.destructive.allow:" + g, rankDestructive}
		}
	}
	if e.cfg.Destructive.AllowAllDangerously {
		return &enabler{LayerConfig, RuleAllowAllDestructive, rankDestructive}
	}
	return nil
}

// capabilityEnabler returns what enables capability c for the tool named
// name in session, or nil.
func (e *Effective) capabilityEnabler(session, name, c string) *enabler {
	if slices.Contains(safeCapabilities, c) {
		return &enabler{LayerRuntime, RuleSafeDefaults, rankSafeDefaults}
	}
	if slices.Contains(e.cfg.Capabilities.Allow, c) {
		return &enabler{LayerConfig, "policy.capabilities.allow:" + c, rankCapabilitiesAllow}
	}
	for i, g := range e.cfg.Grants {
		if slices.Contains(g.Capabilities, c) && slices.ContainsFunc(g.Tools, func(glob string) bool { return matchGlob(glob, name) }) {
			return &enabler{LayerConfig, g.key(i), rankGrant}
		}
	}
	for _, g := range e.cfg.Tools.Allow {
		if matchGlob(g, name) {
			return &enabler{LayerConfig, "policy.tools.allow:" + g, rankToolsAllow}
		}
	}
	e.g.mu.RLock()
	defer e.g.mu.RUnlock()
	if skills := e.g.grants[session][c]; len(skills) > 0 {
		return &enabler{LayerSkill, "skill:" + skills[0], rankSkill}
	}
	return nil
}

// notEnabledReason says which configuration would enable the missing
// capabilities and whether a skill may request them.
func (e *Effective) notEnabledReason(tool string, missing []string) string {
	var notes []string
	for _, c := range missing {
		switch {
		case !e.known(c):
			notes = append(notes, c+" is not a known capability (declare it in policy.custom_capabilities first)")
		case slices.Contains(e.cfg.Capabilities.Requestable, c):
			notes = append(notes, c+" is requestable, so a loaded skill may request it")
		default:
			notes = append(notes, c+" is not requestable by a skill")
		}
	}
	verb := "is"
	if len(missing) > 1 {
		verb = "are"
	}
	keys := "policy.capabilities.allow, policy.grants or policy.tools.allow"
	if prefix, _, ok := strings.Cut(tool, "__"); ok && prefix != "" {
		// An upstream's tool: its own grant: key is where users look.
		keys = fmt.Sprintf("the upstream's grant: key (upstreams[].grant of the upstream with prefix %q), %s", prefix, keys)
	}
	return fmt.Sprintf("the tool needs %s, which %s not enabled: enable it with %s (%s)",
		strings.Join(missing, ", "), verb, keys, strings.Join(notes, "; "))
}

// GrantResult is the outcome of one capability a skill requested.
type GrantResult struct {
	Capability string `json:"capability"`
	// Granted says whether the capability is available to the session:
	// granted now, or already enabled for every tool.
	Granted bool `json:"granted"`
	// Reason says why, starting with the kind of outcome: "granted",
	// "already enabled", "not requestable", "denied by runtime", "denied
	// by config" or "unknown capability".
	Reason string `json:"reason"`
}

// Request applies a loaded skill's capability requests (merge rule 4) to
// the caller's session (the session of the call ctx belongs to; "" when
// there is none). A request is granted only for a capability configuration
// marks requestable and does not deny; it never enables anything on its
// own. Granted capabilities count as enabled for every tool called in that
// session, until [Effective.ForgetSession]. Each distinct capability gets
// one result, in request order. The requests are decided by the version in
// force, not e if a reload has replaced it ([Live.Replace]).
func (e *Effective) Request(ctx context.Context, skill string, caps []string) []GrantResult {
	session := sessionOf(ctx)
	var results []GrantResult
	var seen []string
	// Decided and granted under the lock Replace filters the grants and
	// changes the version in force under; logged after it.
	e.g.mu.Lock()
	in := e.g.inForce
	for _, c := range caps {
		if slices.Contains(seen, c) {
			continue
		}
		seen = append(seen, c)
		r := GrantResult{Capability: c}
		switch {
		case !in.known(c):
			r.Reason = fmt.Sprintf("unknown capability %q", c)
		case slices.Contains(runtimeDenied, c):
			r.Reason = "denied by runtime: " + c + " can never be enabled"
		case slices.Contains(in.cfg.Capabilities.Deny, c):
			r.Reason = "denied by config: policy.capabilities.deny lists " + c
		case slices.Contains(safeCapabilities, c):
			r.Granted, r.Reason = true, "already enabled for every tool by "+RuleSafeDefaults
		case slices.Contains(in.cfg.Capabilities.Allow, c):
			r.Granted, r.Reason = true, "already enabled for every tool by policy.capabilities.allow:"+c
		case !slices.Contains(in.cfg.Capabilities.Requestable, c):
			r.Reason = "not requestable: policy.capabilities.requestable does not list " + c
		default:
			e.g.grantLocked(session, skill, c)
			r.Granted, r.Reason = true, fmt.Sprintf("granted for this session: %s is requestable (policy.capabilities.requestable)", c)
		}
		results = append(results, r)
	}
	e.g.mu.Unlock()
	for _, r := range results {
		in.log.Info("policy: skill capability request", "skill", skill, "session", session,
			"capability", r.Capability, "granted", r.Granted, "reason", r.Reason)
	}
	return results
}

// grantLocked records that skill was granted c in session; g.mu is held.
func (g *grantStore) grantLocked(session, skill, c string) {
	m := g.grants[session]
	if m == nil {
		m = map[string][]string{}
		g.grants[session] = m
	}
	if !slices.Contains(m[c], skill) {
		m[c] = append(m[c], skill)
	}
}

// HasSessionGrants reports whether skills were granted capabilities in the
// session (its decisions may then differ from a caller-less decision).
func (e *Effective) HasSessionGrants(session string) bool {
	e.g.mu.RLock()
	defer e.g.mu.RUnlock()
	return len(e.g.grants[session]) > 0
}

// ForgetSession drops the skill grants of a session that ended.
func (e *Effective) ForgetSession(session string) {
	e.g.mu.Lock()
	delete(e.g.grants, session)
	e.g.mu.Unlock()
}

// SkillGrant is a capability a skill was granted in a session.
type SkillGrant struct {
	Session    string `json:"session"`
	Skill      string `json:"skill"`
	Capability string `json:"capability"`
}

// SkillGrants returns the active skill grants, sorted by session,
// capability and skill.
func (e *Effective) SkillGrants() []SkillGrant {
	e.g.mu.RLock()
	defer e.g.mu.RUnlock()
	var out []SkillGrant
	for session, m := range e.g.grants {
		for c, skills := range m {
			for _, s := range skills {
				out = append(out, SkillGrant{Session: session, Skill: s, Capability: c})
			}
		}
	}
	slices.SortFunc(out, func(a, b SkillGrant) int {
		return strings.Compare(a.Session+"\x00"+a.Capability+"\x00"+a.Skill, b.Session+"\x00"+b.Capability+"\x00"+b.Skill)
	})
	return out
}

// checkCaps checks a list of capability names; enabling says whether the
// list enables capabilities (shell.exec is refused there) or denies them.
func (e *Effective) checkCaps(key string, caps []string, enabling bool) error {
	for i, name := range caps {
		k := fmt.Sprintf("%s[%d]", key, i)
		if !e.known(name) {
			return fmt.Errorf("%s: unknown capability %q (known: %s; declare others in policy.custom_capabilities)",
				k, name, strings.Join(e.knownList(), ", "))
		}
		if enabling && slices.Contains(runtimeDenied, name) {
			return fmt.Errorf("%s: %s is denied by the runtime and cannot be enabled by configuration", k, name)
		}
	}
	return nil
}

// checkGlobs checks a list of tool-name globs.
func checkGlobs(key string, globs []string) error {
	for i, g := range globs {
		if err := checkGlob(g); err != nil {
			return fmt.Errorf("%s[%d]: %w", key, i, err)
		}
	}
	return nil
}
