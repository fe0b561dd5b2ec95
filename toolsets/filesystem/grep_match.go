package filesystem

import (
	"bytes"
	"regexp"
	"regexp/syntax"
	"strings"
	"unicode/utf8"
)

// lineMatch is one matching line: its number (from 1) and its text as shown.
type lineMatch struct {
	line int
	text string
}

// matcher finds the lines of a buffer that match a pattern.
type matcher struct {
	re *regexp.Regexp // the pattern, with (?m) so ^ and $ match at line ends
	// lineRe is the pattern without (?m), run on one line at a time (the
	// same matches there, and an anchored pattern can run one-pass).
	lineRe *regexp.Regexp
	// needle is a literal every match contains (nil if none is known);
	// lines without it are not given to the regexp.
	needle []byte
	// fold: needle is ASCII, lowercased, and matched case-insensitively.
	fold bool
	// foldRisky: needle has k or s, whose case folds include non-ASCII
	// letters (KELVIN SIGN, LATIN SMALL LETTER LONG S) an ASCII comparison
	// would miss; buffers holding those are searched with the regexp alone.
	foldRisky bool
	// rare is the offset of needle's least common byte, scanned for.
	rare int
	// exact: a line holding needle matches (the pattern is that literal).
	exact bool
	// perLine: the pattern uses \A or \z, whose meaning needs a line on its
	// own, so it is run line by line.
	perLine bool
}

// newMatcher compiles pattern (or the literal, if fixed).
func newMatcher(pattern string, fixed, ignoreCase bool) (*matcher, error) {
	src := pattern
	if fixed {
		src = regexp.QuoteMeta(pattern)
	}
	if _, err := regexp.Compile(src); err != nil {
		return nil, err
	}
	flags := syntax.Perl | syntax.OneLine
	prefix := "(?m)"
	if ignoreCase {
		flags |= syntax.FoldCase
		prefix = "(?im)"
	}
	re, err := regexp.Compile(prefix + src)
	if err != nil {
		return nil, err
	}
	lineFlags := ""
	if ignoreCase {
		lineFlags = "(?i)"
	}
	lineRe, err := regexp.Compile(lineFlags + src)
	if err != nil {
		return nil, err
	}
	m := &matcher{re: re, lineRe: lineRe}
	tree, err := syntax.Parse(src, flags&^syntax.OneLine) // Perl minus OneLine: ^ and $ are per line
	if err != nil {
		return nil, err
	}
	m.perLine = usesTextAnchors(tree)
	if lit, fold := requiredLiteral(tree); len(lit) > 0 {
		m.needle, m.fold = lit, fold
		if fold {
			m.needle = bytes.ToLower(lit)
			m.foldRisky = bytes.ContainsAny(m.needle, "ks")
		}
	}
	m.rare = rareByte(m.needle)
	if !ignoreCase && m.needle != nil && bytes.IndexByte(m.needle, '\n') < 0 {
		if lit, complete := re.LiteralPrefix(); complete && lit == string(m.needle) {
			m.exact = true
		}
	}
	return m, nil
}

func usesTextAnchors(re *syntax.Regexp) bool {
	if re.Op == syntax.OpBeginText || re.Op == syntax.OpEndText {
		return true
	}
	for _, s := range re.Sub {
		if usesTextAnchors(s) {
			return true
		}
	}
	return false
}

// requiredLiteral returns the longest literal that every match of re
// contains, and whether it is matched case-insensitively (then it is
// ASCII). Only literals found through concatenations, captures and repeats
// of at least one are considered; nil if there is none.
func requiredLiteral(re *syntax.Regexp) (lit []byte, fold bool) {
	switch re.Op {
	case syntax.OpLiteral:
		fold = re.Flags&syntax.FoldCase != 0
		var b []byte
		for _, r := range re.Rune {
			if fold && r >= utf8.RuneSelf {
				return nil, false // non-ASCII folding: leave it to the regexp
			}
			b = utf8.AppendRune(b, r)
		}
		return b, fold
	case syntax.OpCapture, syntax.OpPlus:
		return requiredLiteral(re.Sub[0])
	case syntax.OpRepeat:
		if re.Min >= 1 {
			return requiredLiteral(re.Sub[0])
		}
	case syntax.OpConcat:
		for _, s := range re.Sub {
			if l, f := requiredLiteral(s); len(l) > len(lit) {
				lit, fold = l, f
			}
		}
		return lit, fold
	}
	return nil, false
}

var (
	kelvinSign = []byte("\u212a")
	longS      = []byte("\u017f")
)

// find returns the first limit matching lines of buf, as grep does: a line
// matches if the pattern matches within it (without its newline).
func (m *matcher) find(buf []byte, limit int) []lineMatch {
	var out []lineMatch
	// Line numbers are counted lazily, from the last line start seen.
	cntPos, cntLine := 0, 1
	add := func(ls, le int) bool {
		cntLine += bytes.Count(buf[cntPos:ls], []byte{'\n'})
		cntPos = ls
		out = append(out, lineMatch{line: cntLine, text: matchText(buf[ls:le])})
		return len(out) >= limit
	}
	lineEnd := func(from int) int {
		if i := bytes.IndexByte(buf[from:], '\n'); i >= 0 {
			return from + i
		}
		return len(buf)
	}

	needle := m.needle
	if needle != nil && m.fold && m.foldRisky && (bytes.Contains(buf, kelvinSign) || bytes.Contains(buf, longS)) {
		needle = nil
	}

	switch {
	case needle != nil:
		// Find the needle, then check the line it is on.
		for pos := 0; pos < len(buf); {
			var i int
			if m.fold {
				i = indexFold(buf[pos:], needle, m.rare)
			} else {
				i = indexRare(buf[pos:], needle, m.rare)
			}
			if i < 0 {
				break
			}
			s := pos + i
			ls := pos + bytes.LastIndexByte(buf[pos:s], '\n') + 1
			le := lineEnd(s)
			if m.exact || m.lineRe.Match(buf[ls:le]) {
				if add(ls, le) {
					return out
				}
			}
			pos = le + 1
		}
	case m.perLine:
		for ls := 0; ls < len(buf); {
			le := lineEnd(ls)
			if m.lineRe.Match(buf[ls:le]) {
				if add(ls, le) {
					return out
				}
			}
			ls = le + 1
		}
	default:
		// Run the regexp over the whole buffer (with (?m), ^ and $ match at
		// line ends), and check the line where a match starts unless the
		// match lies within it. A line-local match is a buffer match, and
		// the search resumes at the next line, so no line is missed.
		for pos := 0; pos < len(buf); {
			loc := m.re.FindIndex(buf[pos:])
			if loc == nil {
				break
			}
			s, e := pos+loc[0], pos+loc[1]
			if s == len(buf) && buf[s-1] == '\n' {
				break // an empty match after the final newline: no line there
			}
			ls := pos + bytes.LastIndexByte(buf[pos:s], '\n') + 1
			le := lineEnd(s)
			if e <= le || m.lineRe.Match(buf[ls:le]) {
				if add(ls, le) {
					return out
				}
			}
			pos = le + 1
		}
	}
	return out
}

// matchText is a matching line as shown: without a trailing "\r", cut at
// maxMatchText bytes on a UTF-8 boundary (marked with "…"), invalid UTF-8
// replaced.
func matchText(line []byte) string {
	line = bytes.TrimSuffix(line, []byte{'\r'})
	cut := false
	if len(line) > maxMatchText {
		n := maxMatchText
		for n > 0 && !utf8.RuneStart(line[n]) {
			n--
		}
		line, cut = line[:n], true
	}
	s := strings.ToValidUTF8(string(line), "\uFFFD")
	if cut {
		s += "…"
	}
	return s
}

// byteRank ranks how common a byte is in source code and text (higher is
// more common), to pick the needle byte to scan for.
var byteRank = func() [256]uint8 {
	var r [256]uint8
	for i := range r {
		r[i] = 10 // rare: control bytes, non-ASCII, most punctuation
	}
	common := " etaoinsrhldcumfpgwybvkxjqz" // most common first
	for i, c := range []byte(common) {
		r[c] = uint8(255 - i)
	}
	for c := 'A'; c <= 'Z'; c++ {
		r[c] = 60
	}
	for c := '0'; c <= '9'; c++ {
		r[c] = 70
	}
	for _, c := range []byte("\n\t(){}.,;:=\"'_-/*") {
		r[c] = 120
	}
	return r
}()

// rareByte returns the offset in needle of its least common byte.
func rareByte(needle []byte) int {
	best := 0
	for i, c := range needle {
		if byteRank[c] < byteRank[needle[best]] {
			best = i
		}
	}
	return best
}

// indexRare is bytes.Index(h, needle) that scans for needle[off], a rare
// byte, rather than for its first byte.
func indexRare(h, needle []byte, off int) int {
	c := needle[off]
	last := len(h) - len(needle) // last possible start
	if last < 0 {
		return -1
	}
	for i := off; ; {
		j := bytes.IndexByte(h[i:], c)
		if j < 0 {
			return -1
		}
		start := i + j - off
		if start > last {
			return -1
		}
		if bytes.Equal(h[start:start+len(needle)], needle) {
			return start
		}
		i += j + 1
	}
}

// indexFold is indexRare for an ASCII needle in lower case, matched
// ASCII-case-insensitively: it scans for both cases of the rare byte,
// keeping the next position of each so that no byte is scanned twice.
func indexFold(h, needle []byte, off int) int {
	last := len(h) - len(needle)
	if last < 0 {
		return -1
	}
	lo := needle[off]
	up := lo
	if 'a' <= lo && lo <= 'z' {
		up = lo - ('a' - 'A')
	}
	next := func(from int, c byte) int {
		if j := bytes.IndexByte(h[from:], c); j >= 0 {
			return from + j
		}
		return len(h)
	}
	pl, pu := next(off, lo), len(h)
	if up != lo {
		pu = next(off, up)
	}
	for {
		p := min(pl, pu)
		start := p - off
		if p == len(h) || start > last {
			return -1
		}
		if equalFoldASCII(h[start:start+len(needle)], needle) {
			return start
		}
		if p == pl {
			pl = next(p+1, lo)
		} else {
			pu = next(p+1, up)
		}
	}
}

// equalFoldASCII reports whether a equals lower, the lower-case ASCII
// needle, ignoring ASCII case.
func equalFoldASCII(a, lower []byte) bool {
	for i, c := range a {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != lower[i] {
			return false
		}
	}
	return true
}
