package policy

import (
	"fmt"
	"strings"

	"github.com/toolgate/toolgate/gateway"
)

// UnmatchedGlob is a tool-name glob of the policy that matches no tool
// served: valid, but almost certainly not what was meant
// (`tools.deny: ["writefile"]` leaves write_file allowed).
type UnmatchedGlob struct {
	Key     string   `json:"key"` // e.g. policy.tools.deny[0]
	Glob    string   `json:"glob"`
	Nearest []string `json:"did_you_mean,omitempty"`
}

func (u UnmatchedGlob) String() string {
	s := fmt.Sprintf("%s %q matches no tool", u.Key, u.Glob)
	if len(u.Nearest) > 0 {
		s += "; did you mean " + strings.Join(u.Nearest, " or ") + "?"
	}
	return s
}

// Unmatched returns the policy's tool-name globs that match none of
// names (the tools served), each with the nearest names.
func (e *Effective) Unmatched(names []string) []UnmatchedGlob {
	var out []UnmatchedGlob
	check := func(key string, globs []string) {
		for i, g := range globs {
			matched := false
			for _, n := range names {
				if matchGlob(g, n) {
					matched = true
					break
				}
			}
			if !matched {
				out = append(out, UnmatchedGlob{Key: fmt.Sprintf("%s[%d]", key, i), Glob: g, Nearest: gateway.Nearest(g, names, 3)})
			}
		}
	}
	c := &e.cfg
	check("policy.tools.allow", c.Tools.Allow)
	check("policy.tools.deny", c.Tools.Deny)
	check("policy.destructive.allow", c.Destructive.Allow)
	check("policy.approval.tools", c.Approval.Tools)
	for i, g := range c.Grants {
		if g.Key == "" { // an upstream's grant: globs its own prefix
			check(g.key(i)+".tools", g.Tools)
		}
	}
	for i, id := range c.Identities {
		key := fmt.Sprintf("policy.identities[%d]", i)
		check(key+".tools.allow", id.Tools.Allow)
		check(key+".tools.deny", id.Tools.Deny)
		check(key+".destructive.allow", id.Destructive.Allow)
		for j, g := range id.Grants {
			check(fmt.Sprintf("%s.grants[%d].tools", key, j), g.Tools)
		}
	}
	return out
}
