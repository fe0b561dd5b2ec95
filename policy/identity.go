package policy

import (
	"context"
	"fmt"
	"slices"
	"strings"

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
}

// IdentityMatch says which callers an [Identity] entry is for. Name is a
// bearer token's name (http.auth.tokens), or "local" (stdio and the
// command line), or "anonymous" (HTTP without tokens).
type IdentityMatch struct {
	Name string `koanf:"name"`
	// Subject is an OAuth access token's subject (sub).
	Subject string `koanf:"subject"`
	// Scope is an OAuth scope the caller's token must have. With Name or
	// Subject too, both must hold.
	Scope string `koanf:"scope"`
}

// matches reports whether the entry is for the caller.
func (m IdentityMatch) matches(identity string, scopes []string) bool {
	if m.Scope != "" && !slices.Contains(scopes, m.Scope) {
		return false
	}
	switch {
	case m.Subject != "":
		return identity == "sub:"+m.Subject
	case m.Name != "":
		return m.Name == identityName(identity)
	}
	return m.Scope != ""
}

// identityName is the name an identity is matched by: "token:ci" is "ci".
func identityName(identity string) string {
	return strings.TrimPrefix(identity, "token:")
}

// identityRules returns the indexes of the policy.identities entries that
// match the caller of ctx.
func (e *Effective) identityRules(ctx context.Context) []int {
	c := gateway.CallFrom(ctx)
	if len(e.cfg.Identities) == 0 || c == nil || c.Identity == "" {
		return nil
	}
	var out []int
	for i, id := range e.cfg.Identities {
		if id.Match.matches(c.Identity, c.Scopes) {
			out = append(out, i)
		}
	}
	return out
}

func (e *Effective) validateIdentities() error {
	for i, id := range e.cfg.Identities {
		key := fmt.Sprintf("policy.identities[%d]", i)
		if id.Match.Name != "" && id.Match.Subject != "" || id.Match == (IdentityMatch{}) {
			return fmt.Errorf("%s.match: give name (a token name of http.auth.tokens, local or anonymous) or subject (an OAuth token's sub), and/or scope (an OAuth scope)", key)
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
// tool, if any.
func (e *Effective) identityDestructive(rules []int, name string) *enabler {
	for _, i := range rules {
		for _, g := range e.cfg.Identities[i].Destructive.Allow {
			if matchGlob(g, name) {
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
