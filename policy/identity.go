package policy

import (
	"fmt"
	"slices"

	"github.com/toolgate/toolgate/gateway"
)

// Identity is one entry of `policy.identities`: rules that apply only to
// the calls of the identities it matches, on top of the rest of the
// policy and under the same merge rules (runtime denies and the sandbox
// still win; a deny here wins over every allow).
type Identity struct {
	Match IdentityMatch `koanf:"match"`
	Tools struct {
		Allow []string `koanf:"allow"`
		Deny  []string `koanf:"deny"`
	} `koanf:"tools"`
	Destructive struct {
		Allow []string `koanf:"allow"`
	} `koanf:"destructive"`
	Grants []Grant `koanf:"grants"`
	// Profile, if set, names a profile (config profiles) that the
	// identity's calls and listings are confined to, whatever endpoint it
	// connects through.
	Profile string `koanf:"profile"`
}

// IdentityMatch says which callers an [Identity] entry is for. Name is a
// bearer token's name (http.auth.tokens), or "local" (stdio and the
// command line), or "anonymous" (HTTP without tokens).
type IdentityMatch struct {
	Name string `koanf:"name"`
	// Subject is an OAuth access token's subject (sub).
	Subject string `koanf:"subject"`
	// Scope is an OAuth scope the caller's token must have.
	Scope string `koanf:"scope"`
	// Claim lists OAuth token claims the caller's token must have, each
	// with the value given (a claim that is a list must hold it):
	// {groups: ops}.
	Claim map[string]string `koanf:"claim"`
	// Claims is the same as a list, for claim names a configuration key
	// cannot hold (namespaced ones with dots, such as
	// https://example.com/groups): [{name: ..., value: ops}].
	Claims []ClaimMatch `koanf:"claims"`
}

// ClaimMatch is one entry of match.claims.
type ClaimMatch struct {
	Name  string `koanf:"name"`
	Value string `koanf:"value"`
}

// matches reports whether the entry is for the caller: every condition it
// gives holds.
func (m IdentityMatch) matches(identity string, p *gateway.Principal) bool {
	if m.Scope != "" && !p.HasScope(m.Scope) {
		return false
	}
	for name, v := range m.Claim {
		if !p.HasClaim(name, v) {
			return false
		}
	}
	for _, c := range m.Claims {
		if !p.HasClaim(c.Name, c.Value) {
			return false
		}
	}
	switch {
	case m.Subject != "":
		return identity == "sub:"+m.Subject
	case m.Name != "":
		return identity == nameIdentity(m.Name)
	}
	return true
}

// nameIdentity is the identity match.name stands for: local and anonymous
// are themselves (stdio and the CLI; HTTP without tokens), any other name
// a bearer token's ("ci" is "token:ci"). A token that is named local is
// "token:local", not the local caller.
func nameIdentity(name string) string {
	if name == "local" || name == "anonymous" {
		return name
	}
	return "token:" + name
}

// empty reports whether the match gives no condition.
func (m IdentityMatch) empty() bool {
	return m.Name == "" && m.Subject == "" && m.Scope == "" && len(m.Claim) == 0 && len(m.Claims) == 0
}

// identityRules returns the indexes of the policy.identities entries that
// match the caller of c (nil: none).
func (e *Effective) identityRules(c *gateway.Call) []int {
	if len(e.cfg.Identities) == 0 || c == nil || c.Identity == "" {
		return nil
	}
	var out []int
	for i, id := range e.cfg.Identities {
		if id.Match.matches(c.Identity, c.Principal) {
			out = append(out, i)
		}
	}
	return out
}

func (e *Effective) validateIdentities() error {
	for i, id := range e.cfg.Identities {
		key := fmt.Sprintf("policy.identities[%d]", i)
		if id.Match.Name != "" && id.Match.Subject != "" || id.Match.empty() {
			return fmt.Errorf("%s.match: give name (a token name of http.auth.tokens, local or anonymous) or subject (an OAuth token's sub), and/or scope (an OAuth scope), and/or claim ({groups: ops}: OAuth token claims; claims: [{name, value}] for names with dots)", key)
		}
		for name, v := range id.Match.Claim {
			if name == "" || v == "" {
				return fmt.Errorf("%s.match.claim: give a claim name and the value it must have, as in {groups: ops}", key)
			}
		}
		for j, c := range id.Match.Claims {
			if c.Name == "" || c.Value == "" {
				return fmt.Errorf("%s.match.claims[%d]: give name and value, as in {name: https://example.com/groups, value: ops}", key, j)
			}
		}
		if id.Profile != "" && e.profiles[id.Profile] == nil {
			return fmt.Errorf("%s.profile: %q is not a profile (define it under profiles)", key, id.Profile)
		}
		if err := checkGlobs(key+".tools.allow", id.Tools.Allow); err != nil {
			return err
		}
		if err := checkGlobs(key+".tools.deny", id.Tools.Deny); err != nil {
			return err
		}
		if err := checkGlobs(key+".destructive.allow", id.Destructive.Allow); err != nil {
			return err
		}
		for j, g := range id.Destructive.Allow {
			if what := matchesTooMuch(g); what != "" {
				return fmt.Errorf("%s.destructive.allow[%d]: %q matches %s; list the destructive tools to enable", key, j, g, what)
			}
		}
		for j, g := range id.Grants {
			gk := fmt.Sprintf("%s.grants[%d]", key, j)
			if len(g.Tools) == 0 || len(g.Capabilities) == 0 {
				return fmt.Errorf("%s: a grant needs tools and capabilities", gk)
			}
			if err := checkGlobs(gk+".tools", g.Tools); err != nil {
				return err
			}
			if err := e.checkCaps(gk+".capabilities", g.Capabilities, true); err != nil {
				return err
			}
		}
	}
	return nil
}

// identityProfileDeny is the rule that denies the tool because it is
// outside a profile the caller's identity is confined to, if any.
func (e *Effective) identityProfileDeny(rules []int, name string) (rule, reason string, ok bool) {
	for _, i := range rules {
		if p := e.cfg.Identities[i].Profile; p != "" && !e.profiles[p].Admits(name) {
			return fmt.Sprintf("policy.identities[%d].profile:%s", i, p),
				fmt.Sprintf("the tool is not in profile %q, which policy.identities[%d] confines this caller to", p, i), true
		}
	}
	return "", "", false
}

// IdentityView is the view the caller of call is confined to by the
// profiles of the policy.identities entries it matches (every one of them
// must admit a tool), or nil when none names a profile. The gateway lists
// and resolves tools through it; [Effective.Decide] denies what it leaves
// out, whatever path a call takes.
func (e *Effective) IdentityView(call *gateway.Call) gateway.View {
	var v gateway.View
	for _, i := range e.identityRules(call) {
		if p := e.cfg.Identities[i].Profile; p != "" {
			v = gateway.Narrow(v, e.profiles[p])
		}
	}
	return v
}

// HasCallerRules implements [gateway.CallerRules]: whether a
// policy.identities entry matches the caller of call.
func (e *Effective) HasCallerRules(call *gateway.Call) bool {
	return len(e.identityRules(call)) > 0
}

// identityDeny is the identity's deny rule for the tool, if any.
func (e *Effective) identityDeny(rules []int, name string) (rule, reason string, ok bool) {
	for _, i := range rules {
		for _, g := range e.cfg.Identities[i].Tools.Deny {
			if matchGlob(g, name) {
				return fmt.Sprintf("policy.identities[%d].tools.deny:%s", i, g),
					fmt.Sprintf("the tool name matches glob %q of policy.identities[%d].tools.deny", g, i), true
			}
		}
	}
	return "", "", false
}

// identityDestructive is the identity's rule that enables a destructive
// tool, if any. A glob too wide for policy.destructive.allow (see
// [Effective.tooWide]) enables nothing here either: an identity entry is
// no way around that rule.
func (e *Effective) identityDestructive(rules []int, name string) *enabler {
	for _, i := range rules {
		for _, g := range e.cfg.Identities[i].Destructive.Allow {
			if matchGlob(g, name) && e.tooWide(g, name) == "" {
				return &enabler{LayerConfig, fmt.Sprintf("policy.identities[%d].destructive.allow:%s", i, g), rankDestructive}
			}
		}
	}
	return nil
}

// identityCapability is the identity's rule that enables capability c
// for the tool, if any.
func (e *Effective) identityCapability(rules []int, name, c string) *enabler {
	for _, i := range rules {
		id := e.cfg.Identities[i]
		for j, g := range id.Grants {
			if slices.Contains(g.Capabilities, c) && slices.ContainsFunc(g.Tools, func(glob string) bool { return matchGlob(glob, name) }) {
				return &enabler{LayerConfig, fmt.Sprintf("policy.identities[%d].grants[%d]", i, j), rankGrant}
			}
		}
		for _, g := range id.Tools.Allow {
			if matchGlob(g, name) {
				return &enabler{LayerConfig, fmt.Sprintf("policy.identities[%d].tools.allow:%s", i, g), rankToolsAllow}
			}
		}
	}
	return nil
}
