package filesystem

import (
	"bytes"
	"context"
	"fmt"
	"io"
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

// maxPatternInsts bounds the size of the program a pattern compiles to.
// A program's memory, and the matching time per byte searched, grow with
// its size: a 4 KiB pattern of counted repeats ("[a-y]{1000}" times 370)
// compiles to 370,000 instructions and ~90 MB, and then needs per worker
// thread queues of the same order. 50,000 instructions is far above what a
// line pattern needs ("\w{1,1000}" is ~2,000) and keeps one grep's matcher
// within a few tens of MB.
const maxPatternInsts = 50_000

// matcher finds the lines of a buffer that match a pattern.
type matcher struct {
	// re is the pattern, with (?m) if multiline. Run on a single line (no
	// newline inside), it matches the same with or without (?m), so one
	// compiled regexp serves both the buffer and the per-line checks.
	re *regexp.Regexp
	// multiline: re has (?m) (^ and $ match at line ends) and is run over
	// whole spans of lines; otherwise it is run on one line at a time.
	multiline bool
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
	// span is how many bytes find searches between looks at its context:
	// [checkEvery], or fewer for a large pattern, so that the work between
	// two looks stays about [spanWork] (smaller in tests, to exercise the
	// spans' edges).
	span int
}

// errPatternTooLarge is returned for a pattern over [maxPatternInsts].
var errPatternTooLarge = fmt.Errorf("pattern too large: it would compile to more than %d instructions (counted repeats such as x{1000} multiply); use a shorter pattern or smaller repeat counts", maxPatternInsts)

// newMatcher compiles pattern (or the literal, if fixed): parsed once (for
// its size, required literal and anchors) and compiled once, in the form
// its search needs (see [matcher.multiline]).
func newMatcher(pattern string, fixed, ignoreCase bool) (*matcher, error) {
	src := pattern
	if fixed {
		src = regexp.QuoteMeta(pattern)
	}
	flags := syntax.Perl &^ syntax.OneLine // as with (?m): ^ and $ are per line
	if ignoreCase {
		flags |= syntax.FoldCase
	}
	// Parse errors name the pattern as given (without a flag prefix).
	tree, err := syntax.Parse(src, flags)
	if err != nil {
		return nil, err
	}
	insts := progSize(tree, maxPatternInsts)
	if insts > maxPatternInsts {
		return nil, errPatternTooLarge
	}
	m := &matcher{span: min(checkEvery, max(256, spanWork/insts))}
	m.perLine = usesTextAnchors(tree)
	if lit, fold := requiredLiteral(tree); len(lit) > 0 {
		m.needle, m.fold = lit, fold
		if fold {
			m.needle = bytes.ToLower(lit)
			m.foldRisky = bytes.ContainsAny(m.needle, "ks")
		}
	}
	m.rare = rareByte(m.needle)
	// Searched line by line (behind a needle, or for \A and \z), the
	// pattern runs as given: an anchored one then runs one-pass. Over a
	// buffer it needs (?m).
	m.multiline = m.needle == nil && !m.perLine
	prefix := ""
	switch {
	case m.multiline && ignoreCase:
		prefix = "(?im)"
	case m.multiline:
		prefix = "(?m)"
	case ignoreCase:
		prefix = "(?i)"
	}
	if m.re, err = regexp.Compile(prefix + src); err != nil {
		return nil, err
	}
	m.exact = m.needle != nil && !m.fold && isLiteral(tree) && bytes.IndexByte(m.needle, '\n') < 0
	return m, nil
}

// isLiteral reports whether re is a plain literal (in captures or not),
// matched case-sensitively: then a line holding it matches. (The
// regexp's LiteralPrefix cannot tell: for "^b$" it reports "b" complete,
// meaning the whole input, not any line holding a "b".)
func isLiteral(re *syntax.Regexp) bool {
	for re.Op == syntax.OpCapture {
		re = re.Sub[0]
	}
	return re.Op == syntax.OpLiteral && re.Flags&syntax.FoldCase == 0
}

// progSize estimates (from above) the number of instructions re compiles
// to, as regexp/syntax's compiler lays them out after simplification
// (x{n,m} becomes n copies of x and m-n optional ones). It stops counting
// past limit, so a pattern of any size costs at most limit steps.
func progSize(re *syntax.Regexp, limit int) int {
	n := 2 // fail and match
	var walk func(re *syntax.Regexp, mult int)
	walk = func(re *syntax.Regexp, mult int) {
		if n > limit {
			return
		}
		switch re.Op {
		case syntax.OpConcat:
		case syntax.OpLiteral:
			n += mult * len(re.Rune)
		case syntax.OpCapture:
			n += mult * 2
		case syntax.OpAlternate:
			n += mult * (len(re.Sub) - 1)
		case syntax.OpRepeat:
			copies, optional := re.Max, re.Max-re.Min
			if re.Max < 0 {
				copies, optional = re.Min+1, 1
			}
			copies = max(copies, 1)
			if mult*copies > limit {
				n = limit + 1
				return
			}
			n += mult * optional
			mult *= copies
		default: // a class, an assertion, a loop: one each
			n += mult
		}
		for _, s := range re.Sub {
			walk(s, mult)
		}
	}
	walk(re, 1)
	return n
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

// checkEvery is how many bytes a search covers between looks at whether
// its call has ended: small enough that a search stops within milliseconds,
// large enough that the looks cost nothing measurable.
const checkEvery = 64 << 10

// spanWork is the work (bytes times instructions, what the regexp engine's
// time is proportional to at worst) a search does between looks at its
// context: a few tens of milliseconds.
const spanWork = 16 << 20

// find returns the first limit matching lines of buf, as grep does: a line
// matches if the pattern matches within it (without its newline). It stops
// with ctx's error soon after ctx is done, however long the buffer, its
// lines or the pattern: the buffer is searched in spans of about
// checkEvery bytes, and a regexp given a longer line reads it through a
// [stopReader].
func (m *matcher) find(ctx context.Context, buf []byte, limit int) ([]lineMatch, error) {
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
	// ended reports whether the call has ended, looking at ctx once per
	// checkEvery bytes of progress (pos).
	nextCheck := m.span
	ended := func(pos int) bool {
		if pos < nextCheck {
			return false
		}
		nextCheck = pos + m.span
		return ctx.Err() != nil
	}

	needle := m.needle
	if needle != nil && m.fold && m.foldRisky && (bytes.Contains(buf, kelvinSign) || bytes.Contains(buf, longS)) {
		needle = nil
	}

	switch {
	case needle != nil:
		// Find the needle, then check the line it is on. The needle is
		// looked for in windows of checkEvery bytes (plus its length, so an
		// occurrence across a window's end is found in the next one); ls0
		// is the start of the line pos is in.
		ls0 := 0
		for pos := 0; pos < len(buf); {
			if ended(pos) {
				return nil, ctx.Err()
			}
			wend := min(len(buf), pos+m.span+len(needle))
			var i int
			if m.fold {
				i = indexFold(buf[pos:wend], needle, m.rare)
			} else {
				i = indexRare(buf[pos:wend], needle, m.rare)
			}
			if i < 0 {
				if wend == len(buf) {
					break
				}
				next := wend - len(needle) + 1
				if k := bytes.LastIndexByte(buf[pos:next], '\n'); k >= 0 {
					ls0 = pos + k + 1
				}
				pos = next
				continue
			}
			s := pos + i
			ls := ls0
			if k := bytes.LastIndexByte(buf[pos:s], '\n'); k >= 0 {
				ls = pos + k + 1
			}
			le := lineEnd(s)
			if !m.exact {
				ok, err := m.matchLine(ctx, buf[ls:le])
				if err != nil {
					return nil, err
				}
				if !ok {
					pos, ls0 = le+1, le+1
					continue
				}
			}
			if add(ls, le) {
				return out, nil
			}
			pos, ls0 = le+1, le+1
		}
	case m.perLine || !m.multiline:
		// Line by line (also when a risky fold disabled the needle).
		for ls := 0; ls < len(buf); {
			if ended(ls) {
				return nil, ctx.Err()
			}
			le := lineEnd(ls)
			ok, err := m.matchLine(ctx, buf[ls:le])
			if err != nil {
				return nil, err
			}
			if ok && add(ls, le) {
				return out, nil
			}
			ls = le + 1
		}
	default:
		// Run the regexp over spans of whole lines (with (?m), ^ and $ match
		// at line ends), and check the line where a match starts unless the
		// match lies within it. A line-local match is a match in its span,
		// and the search resumes at the next line, so no line is missed.
		for pos := 0; pos < len(buf); {
			if ended(pos) {
				return nil, ctx.Err()
			}
			// The span ends at the end of the line holding pos+checkEvery
			// (before its newline), or with the buffer.
			ce := lineEnd(min(pos+m.span, len(buf)))
			loc, err := m.findIn(ctx, buf[pos:ce])
			if err != nil {
				return nil, err
			}
			if loc == nil {
				if ce >= len(buf) {
					break
				}
				pos = ce + 1
				continue
			}
			s, e := pos+loc[0], pos+loc[1]
			if s == len(buf) && buf[s-1] == '\n' {
				break // an empty match after the final newline: no line there
			}
			ls := pos + bytes.LastIndexByte(buf[pos:s], '\n') + 1
			le := lineEnd(s)
			ok := e <= le
			if !ok {
				if ok, err = m.matchLine(ctx, buf[ls:le]); err != nil {
					return nil, err
				}
			}
			if ok && add(ls, le) {
				return out, nil
			}
			pos = le + 1
		}
	}
	return out, nil
}

// matchLine reports whether the pattern matches within line (which holds
// no newline). A line over 2*checkEvery bytes is read through a
// [stopReader], so that the match ends with the call.
func (m *matcher) matchLine(ctx context.Context, line []byte) (bool, error) {
	if len(line) <= 2*m.span {
		return m.re.Match(line), nil
	}
	r := &stopReader{ctx: ctx, b: line, every: m.span}
	ok := m.re.MatchReader(r)
	if r.stopped {
		return false, ctx.Err()
	}
	return ok, nil
}

// findIn is re.FindIndex(span), through a [stopReader] for a span over
// 2*checkEvery bytes (a long line).
func (m *matcher) findIn(ctx context.Context, span []byte) ([]int, error) {
	if len(span) <= 2*m.span {
		return m.re.FindIndex(span), nil
	}
	r := &stopReader{ctx: ctx, b: span, every: m.span}
	loc := m.re.FindReaderIndex(r)
	if r.stopped {
		return nil, ctx.Err()
	}
	return loc, nil
}

// stopReader is an [io.RuneReader] over b that ends early, as if b ended
// there, once ctx is done (looked at every checkEvery bytes): a regexp run
// over a long line stops with its call. Runes are decoded as the regexp
// package decodes a []byte (an invalid byte is U+FFFD of width 1), so the
// offsets it reports are offsets in b. After it stopped, what the regexp
// found means nothing.
type stopReader struct {
	ctx       context.Context
	b         []byte
	every     int // bytes between looks at ctx
	pos, next int
	stopped   bool
}

func (r *stopReader) ReadRune() (rune, int, error) {
	if r.pos >= len(r.b) {
		return 0, 0, io.EOF
	}
	if r.pos >= r.next {
		if r.ctx.Err() != nil {
			r.stopped = true
			return 0, 0, io.EOF
		}
		r.next = r.pos + r.every
	}
	c, n := rune(r.b[r.pos]), 1
	if c >= utf8.RuneSelf {
		c, n = utf8.DecodeRune(r.b[r.pos:])
	}
	r.pos += n
	return c, n, nil
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
