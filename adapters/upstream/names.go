package upstream

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sort"
	"strings"
)

// maxNameLen is the longest tool name the gateway serves.
const maxNameLen = 64

// mapName is the gateway name of an upstream tool (or prompt) called
// name: "<prefix>__<name>", or name alone when prefix is empty. Characters
// outside [A-Za-z0-9_-] become "_", and a name longer than 64 characters
// is cut and ends with "_" and 8 hex digits of a hash of the upstream's
// name, so the result is stable across restarts and differs between
// upstream names that share a long beginning.
func mapName(prefix, name string) string {
	full := sanitize(name)
	if prefix != "" {
		full = prefix + "__" + full
	}
	if len(full) <= maxNameLen {
		return full
	}
	suffix := "_" + hashHex(name, 8)
	return full[:maxNameLen-len(suffix)] + suffix
}

// sanitize maps every character outside [A-Za-z0-9_-] to "_" (one per
// character, not per byte).
func sanitize(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		if r == '_' || r == '-' || ('a' <= r && r <= 'z') || ('A' <= r && r <= 'Z') || ('0' <= r && r <= '9') {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	return b.String()
}

func hashHex(s string, n int) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])[:n]
}

// withSuffix is base with a deterministic suffix derived from the
// upstream name, shortened to fit 64 characters.
func withSuffix(base, name string, n int) string {
	suffix := "_" + hashHex(name, n)
	if len(base)+len(suffix) > maxNameLen {
		base = base[:maxNameLen-len(suffix)]
	}
	return base + suffix
}

// collision records upstream names that mapped to one gateway name.
type collision struct {
	Name     string            // the gateway name they all mapped to
	Kept     string            // the upstream name that keeps it
	Renamed  map[string]string // other upstream name -> the name it is served under
	sortKeys []string
}

func (c collision) String() string {
	parts := make([]string, 0, len(c.Renamed))
	for _, k := range c.sortKeys {
		parts = append(parts, fmt.Sprintf("%q as %s", k, c.Renamed[k]))
	}
	return fmt.Sprintf("name collision on %s: %q keeps it; %s", c.Name, c.Kept, strings.Join(parts, ", "))
}

// assignNames maps upstream names to unique gateway names. When several
// upstream names map to one gateway name, the one that needed no change
// keeps it (else the smallest in byte order), and the others get
// "_<6 hex digits>" suffixes derived from their own names. The result
// depends only on the set of names, never on their order.
func assignNames(prefix string, names []string) (map[string]string, []collision) {
	sorted := append([]string(nil), names...)
	sort.Strings(sorted)
	groups := map[string][]string{}
	var order []string
	for _, n := range sorted {
		m := mapName(prefix, n)
		if _, ok := groups[m]; !ok {
			order = append(order, m)
		}
		groups[m] = append(groups[m], n)
	}
	out := make(map[string]string, len(names))
	taken := make(map[string]bool, len(names))
	for _, m := range order {
		taken[m] = true
	}
	var cols []collision
	for _, m := range order {
		members := groups[m]
		if len(members) == 1 {
			out[members[0]] = m
			continue
		}
		// The member whose name needed no mapping keeps it.
		keep := 0
		for i, n := range members {
			if mapName(prefix, n) == joinPrefix(prefix, n) && sanitize(n) == n {
				keep = i
				break
			}
		}
		col := collision{Name: m, Kept: members[keep], Renamed: map[string]string{}}
		out[members[keep]] = m
		for i, n := range members {
			if i == keep {
				continue
			}
			alt := ""
			for digits := 6; digits <= 64; digits += 2 {
				alt = withSuffix(m, n, digits)
				if !taken[alt] {
					break
				}
			}
			taken[alt] = true
			out[n] = alt
			col.Renamed[n] = alt
			col.sortKeys = append(col.sortKeys, n)
		}
		cols = append(cols, col)
	}
	return out, cols
}

func joinPrefix(prefix, name string) string {
	if prefix == "" {
		return name
	}
	return prefix + "__" + name
}
