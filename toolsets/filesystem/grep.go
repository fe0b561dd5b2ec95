package filesystem

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"regexp/syntax"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"

	"github.com/toolgate/toolgate/gateway"
)

const (
	// maxMatchText is how much of a matching line is shown.
	maxMatchText = 500
	// progressEvery is how many files pass between progress reports.
	progressEvery = 200
)

type grepFilesParams struct {
	Pattern       string `json:"pattern" jsonschema_description:"RE2 regular expression (Go regexp syntax) matched against each line; a literal string when fixed_string is true."`
	Path          string `json:"path,omitempty" jsonschema:"default=." jsonschema_description:"Directory to search recursively, or a single file. Relative paths are relative to the first sandbox root."`
	Glob          string `json:"glob,omitempty" jsonschema_description:"Only search files whose base name matches this glob (Go path.Match syntax, e.g. '*.go')."`
	IgnoreCase    bool   `json:"ignore_case,omitempty" jsonschema:"default=false" jsonschema_description:"Match case-insensitively."`
	MaxMatches    int    `json:"max_matches,omitempty" jsonschema:"minimum=1,maximum=1000,default=200" jsonschema_description:"Stop after this many matching lines."`
	FixedString   bool   `json:"fixed_string,omitempty" jsonschema:"default=false" jsonschema_description:"Treat pattern as a literal string, not a regular expression."`
	IncludeHidden bool   `json:"include_hidden,omitempty" jsonschema:"default=false" jsonschema_description:"Also search files and directories whose names start with '.'."`
}

func (t *toolset) grepFilesTool() (*gateway.Tool, error) {
	tool, err := gateway.NewTypedTool(gateway.ToolDef{
		Name:  "grep_files",
		Title: "Search files",
		Description: fmt.Sprintf("Search the text files under a directory of the sandbox for lines matching a regular "+
			"expression (RE2 syntax; or a literal with fixed_string). Output: one line per match, `path:line:text`, "+
			"paths relative to the sandbox root, in path order then line order; the text is cut at %d bytes. "+
			"Binary files (a NUL byte in the first 8 KiB), files over %s, hidden files and directories "+
			"(unless include_hidden) and symbolic links are not searched; the message gives the numbers of files "+
			"searched and skipped. Stops after max_matches (default %d) matching lines and says so.",
			maxMatchText, gateway.HumanSize(t.opts.MaxGrepFileSize), t.opts.MaxGrepMatches),
		Permissions: gateway.Permissions{Capabilities: []string{capRead}, Hints: gateway.ReadOnlyHints()},
	}, t.grepFiles)
	if err != nil {
		return nil, err
	}
	limit := max(maxGrepMatchesLimit, t.opts.MaxGrepMatches)
	if t.opts.MaxGrepMatches == DefaultMaxGrepMatches && limit == maxGrepMatchesLimit {
		return tool, nil
	}
	return patchSchema(tool, map[string]map[string]any{"max_matches": {"maximum": limit, "default": t.opts.MaxGrepMatches}})
}

// grepJob is the state of one grep_files call shared by its workers.
type grepJob struct {
	fsys    fs.FS
	files   []string
	m       *matcher
	maxSize int64
	limit   int // matches kept per file: enough to fill the output and see one more
	show    func(rel string) string
	// fileDirs[i] is the index in dirs of the directory of files[i], or -1.
	fileDirs []int
	dirs     *dirCache
}

// File outcomes.
const (
	fileScanned = iota
	fileBinary
	fileTooLarge
	fileUnreadable
)

type fileResult struct {
	status  int
	matches []lineMatch
	err     error // for fileUnreadable
}

type lineMatch struct {
	line int
	text string
}

func (t *toolset) grepFiles(ctx context.Context, in grepFilesParams) (*gateway.Result, error) {
	m, err := newMatcher(in.Pattern, in.FixedString, in.IgnoreCase)
	if err != nil {
		return gateway.Error(fmt.Sprintf("invalid regexp %q: %v", in.Pattern, err), "Invalid regexp"), nil
	}
	if in.Glob != "" {
		if _, err := path.Match(in.Glob, ""); err != nil {
			return gateway.Error(fmt.Sprintf("invalid glob %q: %v", in.Glob, err), "Invalid glob"), nil
		}
	}
	p := in.Path
	if p == "" {
		p = "."
	}
	root, rel, err := t.sb.Locate(p)
	if err != nil {
		return pathResult(p, err), nil
	}
	where := t.display(root, rel)
	if _, err := t.sb.Stat(p); err != nil {
		return pathResult(p, err), nil
	}
	fsys, name, err := t.sb.FS(p)
	if err != nil {
		return pathResult(p, err), nil
	}
	name = filepath.ToSlash(name)
	maxMatches := in.MaxMatches
	if maxMatches <= 0 {
		maxMatches = t.opts.MaxGrepMatches
	}

	// Walk once, collecting the files to search in path order, and the
	// directory each is in (workers open each directory once, see dirCache).
	var files []string
	var fileDirs []int
	var dirs []string
	dirIndex := map[string]int{}
	var walkErrs, visited int
	var firstWalkErr string
	err = walkDirs(fsys, name, func(p string, d fs.DirEntry, err error) error {
		if visited++; visited%256 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		if err != nil {
			if p == name {
				return err
			}
			if walkErrs++; firstWalkErr == "" {
				firstWalkErr = fmt.Sprintf("%s: %v", t.display(root, p), unwrapPathErr(err))
			}
			return nil
		}
		if p != name && !in.IncludeHidden && strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			dirIndex[p] = len(dirs)
			dirs = append(dirs, p)
			return nil
		}
		if !d.Type().IsRegular() {
			return nil // symlinks and special files are not searched
		}
		if p != name && in.Glob != "" && !matchBase(in.Glob, d.Name()) {
			return nil
		}
		dir, ok := dirIndex[path.Dir(p)]
		if !ok {
			dir = -1 // the searched path is this file
		}
		files = append(files, p)
		fileDirs = append(fileDirs, dir)
		return nil
	})
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return pathResult(p, err), nil
	}

	show := func(rel string) string { return t.display(root, rel) }
	job := &grepJob{fsys: fsys, files: files, m: m, maxSize: t.opts.MaxGrepFileSize, limit: maxMatches + 1, show: show,
		fileDirs: fileDirs, dirs: newDirCache(fsys, dirs, fileDirs)}
	s, err := job.run(ctx, maxMatches, func(done int) {
		gateway.ReportProgress(ctx, gateway.Progress{Progress: float64(done), Total: float64(len(files)),
			Message: fmt.Sprintf("searched %d of %d files", done, len(files))})
	})
	if err != nil {
		return nil, err
	}
	s.unreadable += walkErrs
	if s.firstUnreadable == "" {
		s.firstUnreadable = firstWalkErr
	}
	t.log.Debug("grep_files", "path", where, "files", len(files), "scanned", s.scanned, "matches", s.matches,
		"binary", s.binary, "too_large", s.tooLarge, "unreadable", s.unreadable, "truncated", s.truncated)
	return t.grepResult(in, root, where, maxMatches, len(files), s), nil
}

// grepStats is what a grep found.
type grepStats struct {
	matches                      int
	processed, scanned           int
	binary, tooLarge, unreadable int
	truncated                    bool
	firstUnreadable              string
	matchFiles                   []string      // files with matches, in order
	matchLines                   [][]lineMatch // their matches
}

// run searches the job's files with runtime.GOMAXPROCS workers and gathers
// their results in file order, stopping once more than maxMatches matches
// are found. Workers run at most a window of files ahead of the gatherer, so
// memory stays bounded whatever the tree.
func (j *grepJob) run(ctx context.Context, maxMatches int, progress func(done int)) (*grepStats, error) {
	s := &grepStats{}
	n := len(j.files)
	if n == 0 {
		progress(0)
		return s, nil
	}
	workers := min(runtime.GOMAXPROCS(0), n)
	window := 8 * workers
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() {
		cancel()
		wg.Wait() // no worker outlives the call
		j.dirs.closeAll()
	}()

	// slots[i%window] carries file i's result; tokens bound the files taken
	// and not yet gathered to window, so no two of them share a slot.
	slots := make([]chan fileResult, window)
	for i := range slots {
		slots[i] = make(chan fileResult, 1)
	}
	tokens := make(chan struct{}, window)
	var next atomic.Int64
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var sc scanner
			for {
				select {
				case tokens <- struct{}{}:
				case <-ctx.Done():
					return
				}
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				if ctx.Err() != nil {
					return
				}
				slots[i%window] <- sc.scan(j, i)
			}
		}()
	}

	for i := range n {
		var r fileResult
		select {
		case r = <-slots[i%window]:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		<-tokens
		s.processed++
		switch r.status {
		case fileScanned:
			s.scanned++
		case fileBinary:
			s.binary++
		case fileTooLarge:
			s.tooLarge++
		case fileUnreadable:
			s.unreadable++
			if s.firstUnreadable == "" {
				s.firstUnreadable = fmt.Sprintf("%s: %v", j.show(j.files[i]), unwrapPathErr(r.err))
			}
		}
		if len(r.matches) > 0 {
			room := maxMatches - s.matches
			if len(r.matches) > room {
				r.matches = r.matches[:room]
				s.truncated = true
			}
			if len(r.matches) > 0 {
				s.matches += len(r.matches)
				s.matchFiles = append(s.matchFiles, j.files[i])
				s.matchLines = append(s.matchLines, r.matches)
			}
		}
		if s.truncated {
			break
		}
		if s.processed%progressEvery == 0 {
			progress(s.processed)
		}
	}
	progress(s.processed)
	return s, nil
}

func (t *toolset) grepResult(in grepFilesParams, root int, where string, maxMatches, total int, s *grepStats) *gateway.Result {
	var out strings.Builder
	for i, f := range s.matchFiles {
		shown := t.display(root, f)
		for _, m := range s.matchLines[i] {
			if out.Len() > 0 {
				out.WriteByte('\n')
			}
			out.WriteString(shown)
			out.WriteByte(':')
			out.WriteString(strconv.Itoa(m.line))
			out.WriteByte(':')
			out.WriteString(m.text)
		}
	}
	nFiles := len(s.matchFiles)
	what := "regexp"
	if in.FixedString {
		what = "string"
	}
	var msg strings.Builder
	switch {
	case s.truncated:
		fmt.Fprintf(&msg, "Showing the first %s in %s (max_matches=%d reached and more matches exist; narrow the pattern, path or glob, or raise max_matches up to %d). Searched %d of %d files under %s before stopping",
			plural(s.matches, "match", "matches"), plural(nFiles, "file", "files"), maxMatches, max(maxGrepMatchesLimit, t.opts.MaxGrepMatches), s.scanned, total, where)
	case s.matches == 0:
		fmt.Fprintf(&msg, "No matches for %s %q in %s under %s", what, in.Pattern, plural(s.scanned, "file", "files"), where)
	default:
		fmt.Fprintf(&msg, "Found %s in %s (searched %s under %s)",
			plural(s.matches, "match", "matches"), plural(nFiles, "file", "files"), plural(s.scanned, "file", "files"), where)
	}
	if skipped := s.binary + s.tooLarge + s.unreadable; skipped > 0 {
		var parts []string
		if s.binary > 0 {
			parts = append(parts, fmt.Sprintf("%d binary", s.binary))
		}
		if s.tooLarge > 0 {
			parts = append(parts, fmt.Sprintf("%d over %s", s.tooLarge, gateway.HumanSize(t.opts.MaxGrepFileSize)))
		}
		if s.unreadable > 0 {
			u := fmt.Sprintf("%d unreadable", s.unreadable)
			if s.firstUnreadable != "" {
				u += " (" + s.firstUnreadable + ")"
			}
			parts = append(parts, u)
		}
		fmt.Fprintf(&msg, "; skipped %d: %s", skipped, strings.Join(parts, ", "))
	}
	msg.WriteString(".")

	res := gateway.OkText(out.String())
	res.Message = msg.String()
	res.Extras = map[string]any{
		"matches": s.matches, "files_with_matches": nFiles, "files_total": total, "files_scanned": s.scanned,
		"skipped_binary": s.binary, "skipped_too_large": s.tooLarge, "skipped_unreadable": s.unreadable,
		"truncated": s.truncated,
	}
	var brief string
	switch {
	case s.matches == 0:
		brief = fmt.Sprintf("No matches in %s", plural(s.scanned, "file", "files"))
	case s.truncated:
		brief = fmt.Sprintf("%d+ matches in %s", s.matches, plural(nFiles, "file", "files"))
	default:
		brief = fmt.Sprintf("%s in %s", plural(s.matches, "match", "matches"), plural(nFiles, "file", "files"))
	}
	return res.WithBrief(brief)
}

// scanner is one worker's reusable state.
type scanner struct {
	buf []byte // file contents
}

// scan searches file i of the job.
func (sc *scanner) scan(j *grepJob, i int) fileResult {
	if d := j.fileDirs[i]; d >= 0 && haveOpenAt {
		dir, err := j.dirs.acquire(d)
		defer j.dirs.release(d)
		if err != nil {
			return fileResult{status: fileUnreadable, err: err}
		}
		return sc.scanAt(j, dir, j.files[i])
	}
	return sc.scanFS(j, j.files[i])
}

// scanFS searches a file opened through the sandbox's file system.
func (sc *scanner) scanFS(j *grepJob, name string) fileResult {
	f, err := j.fsys.Open(name)
	if err != nil {
		return fileResult{status: fileUnreadable, err: err}
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return fileResult{status: fileUnreadable, err: err}
	}
	if !fi.Mode().IsRegular() {
		return fileResult{status: fileUnreadable, err: errNotRegular}
	}
	return sc.search(j, fi.Size(), f.Read)
}

var errNotRegular = errors.New("not a regular file")

// search reads an open file of the given size with read and searches it.
func (sc *scanner) search(j *grepJob, size int64, read func([]byte) (int, error)) fileResult {
	if size > j.maxSize {
		return fileResult{status: fileTooLarge}
	}
	if size == 0 {
		return fileResult{status: fileScanned}
	}
	if int64(cap(sc.buf)) < size {
		sc.buf = make([]byte, max(size, 64<<10))
	}
	// Read what Stat said is there; a file that grows meanwhile is
	// searched as it was.
	buf := sc.buf[:size]
	n := 0
	for n < len(buf) {
		k, err := read(buf[n:])
		n += max(k, 0)
		if errors.Is(err, io.EOF) || (k == 0 && err == nil) {
			break
		}
		if err != nil {
			return fileResult{status: fileUnreadable, err: err}
		}
	}
	buf = buf[:n]
	if bytes.IndexByte(buf[:min(len(buf), sniffLen)], 0) >= 0 {
		return fileResult{status: fileBinary}
	}
	return fileResult{status: fileScanned, matches: j.m.find(buf, j.limit)}
}

// dirCache holds the directories of a grep open while their files are
// searched, so that each file is opened with one openat relative to its
// directory instead of a walk from the root through every component. Each
// directory is opened once, through the sandbox's file system (so it is
// inside the root), and closed as soon as its last file is searched; since
// workers stay within a window of files, few are open at a time.
type dirCache struct {
	fsys  fs.FS
	names []string
	mu    sync.Mutex
	left  []int // files not yet searched, per directory
	open  map[int]*cachedDir
}

type cachedDir struct {
	once sync.Once
	f    *os.File
	err  error
}

func newDirCache(fsys fs.FS, dirs []string, fileDirs []int) *dirCache {
	c := &dirCache{fsys: fsys, names: dirs, left: make([]int, len(dirs)), open: map[int]*cachedDir{}}
	for _, d := range fileDirs {
		if d >= 0 {
			c.left[d]++
		}
	}
	return c
}

// acquire returns directory d, opening it if needed. Every acquire must be
// followed by a release, after the directory is no longer used.
func (c *dirCache) acquire(d int) (*os.File, error) {
	c.mu.Lock()
	cd := c.open[d]
	if cd == nil {
		cd = &cachedDir{}
		c.open[d] = cd
	}
	c.mu.Unlock()
	cd.once.Do(func() {
		f, err := c.fsys.Open(c.names[d])
		if err != nil {
			cd.err = err
			return
		}
		if of, ok := f.(*os.File); ok {
			cd.f = of
			return
		}
		f.Close()
		cd.err = fmt.Errorf("open %s: not an os.File", c.names[d])
	})
	return cd.f, cd.err
}

// release records that one file of directory d is done, and closes d after
// its last file.
func (c *dirCache) release(d int) {
	c.mu.Lock()
	c.left[d]--
	var cd *cachedDir
	if c.left[d] == 0 {
		cd = c.open[d]
		delete(c.open, d)
	}
	c.mu.Unlock()
	if cd != nil && cd.f != nil {
		cd.f.Close()
	}
}

// closeAll closes the directories still open (after a grep stopped early).
// No worker may be running.
func (c *dirCache) closeAll() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for d, cd := range c.open {
		if cd.f != nil {
			cd.f.Close()
		}
		delete(c.open, d)
	}
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
