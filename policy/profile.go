package policy

import (
	"fmt"
	"regexp"
)

// Profile is a named view of the catalog (config `profiles:`): the tools
// whose names match one of its allow globs (all tools when there are none)
// and none of its deny globs. It implements gateway.View: a client that
// connects through a profile sees and may call only those tools, and
// every call is still authorized by the effective policy, so a profile
// narrows and never widens.
type Profile struct {
	name  string
	allow []string
	deny  []string
}

// profileNameRE is the syntax of profile names: they are URL path segments
// (/mcp/NAME) and command-line values.
var profileNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]*$`) // and up to 64 bytes, checked apart

// NewProfile checks a profile's name and globs (the same tool-name glob
// syntax as every other policy key).
func NewProfile(name string, allow, deny []string) (*Profile, error) {
	if len(name) > 64 || !profileNameRE.MatchString(name) {
		return nil, fmt.Errorf("profiles: name %q: use 1-64 characters of [A-Za-z0-9_-], starting with a letter or digit", name)
	}
	for _, g := range append(append([]string{}, allow...), deny...) {
		if err := checkGlob(g); err != nil {
			return nil, fmt.Errorf("profiles.%s: %w", name, err)
		}
	}
	return &Profile{name: name, allow: allow, deny: deny}, nil
}

// Name is the profile's name.
func (p *Profile) Name() string { return p.name }

// Admits reports whether the profile includes the tool.
func (p *Profile) Admits(tool string) bool {
	for _, g := range p.deny {
		if matchGlob(g, tool) {
			return false
		}
	}
	if len(p.allow) == 0 {
		return true
	}
	for _, g := range p.allow {
		if matchGlob(g, tool) {
			return true
		}
	}
	return false
}

// GlobSet checks tool-name globs and returns a matcher for "any of them"
// (key names the config key, for errors).
func GlobSet(key string, globs []string) (func(tool string) bool, error) {
	for _, g := range globs {
		if err := checkGlob(g); err != nil {
			return nil, fmt.Errorf("%s: %w", key, err)
		}
	}
	return func(tool string) bool {
		for _, g := range globs {
			if matchGlob(g, tool) {
				return true
			}
		}
		return false
	}, nil
}
