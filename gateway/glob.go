package gateway

import (
	"errors"
	"fmt"
	"path"
	"strings"
)

// Tool-name globs. Every configuration key that selects tools by name
// (policy rules, profiles, discovery.pinned, an upstream's allow and deny)
// takes the same syntax, Go's [path.Match]:
//
//	*        any run of characters, including none
//	?        any one character
//	[a-z_]   one character of the class; [^a-z] or [!a-z] one not in it
//	\x       the character x itself
//
// A glob matches the whole name. '/' is an ordinary character (path.Match
// would stop '*' at it; an upstream's own tool names may hold one). The
// shell's [!...] negation is accepted as well as path.Match's own [^...].

// CheckGlob reports a glob that is malformed (an unterminated class, a
// trailing backslash, an empty glob).
func CheckGlob(g string) error {
	if g == "" {
		return errors.New("empty tool-name glob")
	}
	if _, err := path.Match(normalizeGlob(g), ""); err != nil {
		return fmt.Errorf("bad tool-name glob %q: %v (globs use Go path.Match syntax: * ? [a-z] [^a-z] \\)", g, err)
	}
	return nil
}

// MatchGlob reports whether name matches glob g (checked with [CheckGlob];
// a malformed glob matches nothing).
func MatchGlob(g, name string) bool {
	g = normalizeGlob(g)
	if strings.Contains(name, "/") || strings.Contains(g, "/") {
		// '/' as an ordinary character: the same stand-in on both sides.
		g, name = strings.ReplaceAll(g, "/", "\x00"), strings.ReplaceAll(name, "/", "\x00")
	}
	ok, _ := path.Match(g, name)
	return ok
}

// normalizeGlob turns the shell's class negation [!...] into path.Match's
// [^...].
func normalizeGlob(g string) string {
	if !strings.Contains(g, "[!") {
		return g
	}
	var b strings.Builder
	for i := 0; i < len(g); i++ {
		c := g[i]
		if c == '\\' && i+1 < len(g) {
			b.WriteByte(c)
			b.WriteByte(g[i+1])
			i++
			continue
		}
		b.WriteByte(c)
		if c == '[' && i+1 < len(g) && g[i+1] == '!' {
			b.WriteByte('^')
			i++
		}
	}
	return b.String()
}
