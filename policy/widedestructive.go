package policy

import (
	"fmt"
	"slices"
	"strings"
)

// A destructive.allow glob with wildcards that matches every destructive
// tool of a toolset (fs__* over an upstream's delete, move and overwrite
// tools), or of the whole catalog, enables them all as surely as "*"
// does, which the configuration refuses. Which tools a toolset has is
// known only once it has listed them (an upstream, after it starts), so
// this is decided per call: such a glob enables none of those tools, and
// the denial says why and what to write instead. Explicit names, and
// globs that leave some destructive tool of the toolset out, still work.

// SetDestructiveTools tells the policy the catalog's destructive tools,
// by toolset; the gateway calls it whenever the catalog changes. It is
// shared with every later version of the policy.
func (e *Effective) SetDestructiveTools(byToolset map[string][]string) {
	m := make(map[string][]string, len(byToolset))
	for ts, names := range byToolset {
		m[ts] = slices.Clone(names)
	}
	e.g.destructive.Store(&m)
}

// hasWildcard reports whether a glob can match more than one name.
func hasWildcard(g string) bool { return strings.ContainsAny(g, "*?[") }

// tooWide says why glob g may not enable the destructive tool name: it is
// a wildcard glob matching every destructive tool of name's toolset (at
// least two), or of the catalog. It is "" when g may enable it.
func (e *Effective) tooWide(g, name string) string {
	sets := e.g.destructive.Load()
	if sets == nil || !hasWildcard(g) {
		return ""
	}
	all := 0
	var every []string
	for ts, names := range *sets {
		all += len(names)
		if slices.Contains(names, name) && len(names) >= 2 && matchesAll(g, names) {
			return fmt.Sprintf("it matches every destructive tool of toolset %s (%d tools)", ts, len(names))
		}
		every = append(every, names...)
	}
	if all >= 2 && matchesAll(g, every) {
		return fmt.Sprintf("it matches every destructive tool of the catalog (%d tools)", all)
	}
	return ""
}

// tooWideDenial is the rule and reason that deny a destructive tool only a
// too-wide glob would have enabled: of policy.destructive.allow, or of the
// destructive.allow of one of the caller's identity entries (rules), which
// refuses the same globs. rule is "" when there is none.
func (e *Effective) tooWideDenial(rules []int, name string) (rule, reason string) {
	deny := func(key string, i int, g, why string) string {
		return fmt.Sprintf("the tool is destructive, and %s[%d] %q enables none of the tools it matches: %s; "+
			"list the destructive tools to enable, or set policy.destructive.allow_all_tools_dangerously: true to enable them all", key, i, g, why)
	}
	for i, g := range e.cfg.Destructive.Allow {
		if !matchGlob(g, name) {
			continue
		}
		if why := e.tooWide(g, name); why != "" {
			return RuleDestructiveTooWide, deny("policy.destructive.allow", i, g, why)
		}
	}
	for _, k := range rules {
		key := fmt.Sprintf("policy.identities[%d].destructive.allow", k)
		for i, g := range e.cfg.Identities[k].Destructive.Allow {
			if !matchGlob(g, name) {
				continue
			}
			if why := e.tooWide(g, name); why != "" {
				return key + ":too_wide", deny(key, i, g, why)
			}
		}
	}
	return "", ""
}
