package filesystem

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolgate/toolgate/gateway"
	"github.com/toolgate/toolgate/policy"
)

func grepTree(t *testing.T, opts *Options) *env {
	return newEnv(t, opts, map[string]string{
		"a.txt":          "hello world\nnothing here\nHello again\n",
		"b/c.go":         "package c\n\n// hello from c\nfunc Hello() {}\n",
		"b/d/e.txt":      "say hello\n",
		"b.txt":          "hello b\n",
		"z.md":           "no match\n",
		".hidden/h.txt":  "hello hidden\n",
		".dot.txt":       "hello dot\n",
		"bin/data.bin":   "hello\x00binary\n",
		"regex.txt":      "a.b(c\naxb(c\n",
		"crlf.txt":       "hello crlf\r\n",
		"long.txt":       "hello " + strings.Repeat("é", 400) + "\n",
		"noeol.txt":      "first\nhello at the end",
		"sub/empty.txt":  "",
		"sub/blank.txt":  "\n\n\n",
		"sub/upper.TXT":  "HELLO UPPER\n",
		"sub/fold.txt":   "the \u212aelvin sign\n",
		"sub/ligne.txt":  "ligne\n",
		"sub/nested/x.y": "hello nested\n",
	})
}

func TestGrepFiles(t *testing.T) {
	long := "long.txt:1:hello " + strings.Repeat("é", 247) + "…" // 6 + 494 bytes
	tests := []struct {
		name    string
		opts    *Options
		args    map[string]any
		lines   []string
		message string
		brief   string
	}{
		{name: "path then line order", args: map[string]any{"pattern": "hello"},
			lines: []string{
				"a.txt:1:hello world",
				"b/c.go:3:// hello from c",
				"b/d/e.txt:1:say hello",
				"b.txt:1:hello b",
				"crlf.txt:1:hello crlf",
				long,
				"noeol.txt:2:hello at the end",
				"sub/nested/x.y:1:hello nested",
			},
			message: "Found 8 matches in 8 files (searched 15 files under .); skipped 1: 1 binary.",
			brief:   "8 matches in 8 files"},
		{name: "ignore case", args: map[string]any{"pattern": "hello", "ignore_case": true, "path": "b"},
			lines: []string{"b/c.go:3:// hello from c", "b/c.go:4:func Hello() {}", "b/d/e.txt:1:say hello"},
			brief: "3 matches in 2 files"},
		{name: "ignore case folds beyond ASCII", args: map[string]any{"pattern": "kelvin", "ignore_case": true, "path": "sub"},
			lines: []string{"sub/fold.txt:1:the \u212aelvin sign"}},
		{name: "regexp", args: map[string]any{"pattern": `^func \w+\(`},
			lines: []string{"b/c.go:4:func Hello() {}"}},
		{name: "regexp without a literal", args: map[string]any{"pattern": `^(H|n)\w+ \w+$`},
			lines: []string{"a.txt:2:nothing here", "a.txt:3:Hello again", "sub/upper.TXT:1:HELLO UPPER", "z.md:1:no match"}},
		{name: "dollar before CRLF does not match", args: map[string]any{"pattern": `crlf$`}, lines: nil},
		{name: "regexp metacharacters", args: map[string]any{"pattern": `a.b\(`, "path": "regex.txt"},
			lines: []string{"regex.txt:1:a.b(c", "regex.txt:2:axb(c"}},
		{name: "fixed string", args: map[string]any{"pattern": "a.b(", "fixed_string": true},
			lines: []string{"regex.txt:1:a.b(c"}, message: "Found 1 match in 1 file (searched 15 files under .); skipped 1: 1 binary."},
		{name: "fixed string ignoring case", args: map[string]any{"pattern": "HELLO U", "fixed_string": true, "ignore_case": true},
			lines: []string{"sub/upper.TXT:1:HELLO UPPER"}},
		{name: "empty lines", args: map[string]any{"pattern": "^$", "path": "sub"},
			lines: []string{"sub/blank.txt:1:", "sub/blank.txt:2:", "sub/blank.txt:3:"}},
		{name: "no match across lines", args: map[string]any{"pattern": `world\nnothing`}, lines: nil},
		{name: "text anchors are per line", args: map[string]any{"pattern": `\Ahello\z`, "ignore_case": true, "path": "b"}, lines: nil},
		{name: "glob", args: map[string]any{"pattern": "hello", "glob": "*.txt"},
			lines:   []string{"a.txt:1:hello world", "b/d/e.txt:1:say hello", "b.txt:1:hello b", "crlf.txt:1:hello crlf", long, "noeol.txt:2:hello at the end"},
			message: "Found 6 matches in 6 files (searched 11 files under .)."},
		{name: "hidden included", args: map[string]any{"pattern": "hello (hidden|dot)", "include_hidden": true},
			lines: []string{".dot.txt:1:hello dot", ".hidden/h.txt:1:hello hidden"}},
		{name: "single file", args: map[string]any{"pattern": "hello", "path": "b/c.go"},
			lines: []string{"b/c.go:3:// hello from c"}, message: "Found 1 match in 1 file (searched 1 file under b/c.go)."},
		{name: "max matches", args: map[string]any{"pattern": "hello", "max_matches": 3},
			lines: []string{"a.txt:1:hello world", "b/c.go:3:// hello from c", "b/d/e.txt:1:say hello"},
			message: "Showing the first 3 matches in 3 files (max_matches=3 reached and more matches exist; narrow the pattern, path or glob, or raise max_matches up to 1000). " +
				"Searched 4 of 16 files under . before stopping.",
			brief: "3+ matches in 3 files"},
		{name: "max matches within one file", args: map[string]any{"pattern": ".", "path": "a.txt", "max_matches": 2},
			lines: []string{"a.txt:1:hello world", "a.txt:2:nothing here"}, brief: "2+ matches in 1 file"},
		{name: "max matches exactly reached", args: map[string]any{"pattern": "hello b|say hello", "max_matches": 2},
			lines: []string{"b/d/e.txt:1:say hello", "b.txt:1:hello b"}, brief: "2 matches in 2 files"},
		{name: "default max matches from options", opts: &Options{MaxGrepMatches: 1}, args: map[string]any{"pattern": "hello"},
			lines: []string{"a.txt:1:hello world"}, brief: "1+ matches in 1 file"},
		{name: "too large files skipped", opts: &Options{MaxGrepFileSize: 20}, args: map[string]any{"pattern": "hello", "path": "b"},
			lines: []string{"b/d/e.txt:1:say hello"}, message: "Found 1 match in 1 file (searched 1 file under b); skipped 1: 1 over 20 B."},
		{name: "no matches", args: map[string]any{"pattern": "absent", "path": "b"},
			lines: nil, message: `No matches for regexp "absent" under b (searched 2 files).`, brief: "No matches in 2 files"},
		{name: "no matches at the root", args: map[string]any{"pattern": "absent", "glob": "*.go"},
			lines: nil, message: `No matches for regexp "absent" under . (searched 1 file).`, brief: "No matches in 1 file"},
		{name: "empty pattern matches every line", args: map[string]any{"pattern": "", "path": "noeol.txt"},
			lines: []string{"noeol.txt:1:first", "noeol.txt:2:hello at the end"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := grepTree(t, tc.opts)
			wantListing(t, e.call(context.Background(), "grep_files", tc.args), tc.lines, tc.message, tc.brief)
		})
	}
}

func TestGrepFilesErrors(t *testing.T) {
	e := grepTree(t, nil)
	ctx := context.Background()
	wantError(t, e.call(ctx, "grep_files", map[string]any{"pattern": "a(b"}),
		gateway.KindToolError, `invalid regexp "a(b"`, "missing closing ): `a(b`")
	wantError(t, e.call(ctx, "grep_files", map[string]any{"pattern": `\p{Nope}`}),
		gateway.KindToolError, "invalid character class range")
	wantError(t, e.call(ctx, "grep_files", map[string]any{"pattern": "x", "glob": "[z-"}),
		gateway.KindToolError, `invalid glob "[z-"`)
	wantError(t, e.call(ctx, "grep_files", map[string]any{"pattern": "x", "path": "missing"}),
		gateway.KindToolError, `path "missing"`)
	wantError(t, e.call(ctx, "grep_files", map[string]any{"pattern": "x", "max_matches": 1001}),
		gateway.KindInvalid, "at '/max_matches': maximum 1000, got 1001")
	// A fixed string is never a regexp error.
	wantOK(t, e.call(ctx, "grep_files", map[string]any{"pattern": "a(b", "fixed_string": true}))
}

// TestGrepFilesLeavesOutOwnState: toolgate's own state under a root (its
// log, the run archive, the memory database) is neither searched nor
// named by grep_files, whose walk lists directories and opens files by
// descriptor rather than through the sandbox's file system.
func TestGrepFilesLeavesOutOwnState(t *testing.T) {
	e := newEnv(t, nil, map[string]string{
		"notes.txt":                 "MARK notes\n",
		"toolgate.log":              "MARK log\n",
		"state/other.txt":           "MARK other\n",
		"state/runs/r1/tools.jsonl": "MARK runs\n",
		"state/mem/memory.db-wal":   "MARK wal\n",
	})
	e.sb.Close()
	var err error
	e.sb, err = policy.NewSandboxWith([]string{e.root}, &policy.SandboxOptions{Protected: []string{
		filepath.Join(e.root, "toolgate.log"), filepath.Join(e.root, "state", "runs"),
		filepath.Join(e.root, "state", "mem", "memory.db-wal")}})
	if err != nil {
		t.Fatal(err)
	}
	e.serve(nil)
	for _, tc := range []struct{ path, want string }{
		{".", "notes.txt:1:MARK notes\nstate/other.txt:1:MARK other"},
		{"state", "state/other.txt:1:MARK other"},
		{"state/mem", ""},
	} {
		res := e.call(context.Background(), "grep_files", map[string]any{"pattern": "MARK", "path": tc.path})
		wantOK(t, res)
		if got := res.OutputText(); got != tc.want {
			t.Errorf("grep under %s: %q, want %q", tc.path, got, tc.want)
		}
		for _, own := range []string{"toolgate.log", "runs", "tools.jsonl", "memory.db"} {
			if strings.Contains(res.Message, own) {
				t.Errorf("grep under %s names %s: %q", tc.path, own, res.Message)
			}
		}
	}
}

func TestGrepFilesUnreadable(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root reads everything")
	}
	e := grepTree(t, nil)
	if err := os.Chmod(filepath.Join(e.root, "b.txt"), 0); err != nil {
		t.Fatal(err)
	}
	res := e.call(context.Background(), "grep_files", map[string]any{"pattern": "hello b"})
	wantOK(t, res)
	if !strings.Contains(res.Message, "1 unreadable (b.txt: permission denied)") || res.Extras["skipped_unreadable"] != 1 {
		t.Errorf("message = %q, extras %v", res.Message, res.Extras)
	}
}

// TestMatcherAgainstReference checks the whole-buffer search against plain
// line-by-line matching on random texts and patterns.
func TestMatcherAgainstReference(t *testing.T) {
	patterns := []string{"a", "ab", "^a", "b$", "^$", "a.b", `a\sb`, `[^a]b`, `\Aa`, `a\z`, "a|b", "(?s)a.b",
		"x*", "", "(ab)+c", `\bab\b`, "a\nb", "k", "K", "kb", "(?i)kb", "s", "a{2}", "^a+$", `(?m)^b`, `(?-m)^b`,
		"ab|ba", "(a)(b)", "[ab]+k", "b a", `\n`, "ſ", "é", "(?U)a+", "^b$", "^(ab)$", `\Ab\z`}
	alphabet := []string{"a", "b", " ", "\n", "\n", "k", "K", "\u212a", "s", "ſ", "é", "c", "\r"}
	r := rand.New(rand.NewPCG(11, 12))
	for i := range 4000 {
		pat := patterns[r.IntN(len(patterns))]
		fixed, fold := r.IntN(4) == 0, r.IntN(3) == 0
		var b strings.Builder
		for range r.IntN(60) {
			b.WriteString(alphabet[r.IntN(len(alphabet))])
		}
		text := b.String()
		m, err := newMatcher(pat, fixed, fold)
		if err != nil {
			t.Fatalf("pattern %q: %v", pat, err)
		}
		if i%2 == 1 {
			m.span = 1 + r.IntN(8) // spans, windows and long lines in small
		}
		got, err := m.find(context.Background(), []byte(text), 1000)
		if err != nil {
			t.Fatal(err)
		}

		src := pat
		if fixed {
			src = regexp.QuoteMeta(pat)
		}
		if fold {
			src = "(?i)" + src
		}
		ref := regexp.MustCompile(src)
		var want []lineMatch
		lines := strings.Split(text, "\n")
		if strings.HasSuffix(text, "\n") || text == "" {
			lines = lines[:len(lines)-1]
		}
		for n, l := range lines {
			if ref.MatchString(l) {
				want = append(want, lineMatch{line: n + 1, text: matchText([]byte(l))})
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("case %d: pattern %q fixed=%v fold=%v span=%d text %q:\ngot  %v\nwant %v", i, pat, fixed, fold, m.span, text, got, want)
		}
	}
}

// bigTree writes n small files in 20 directories under root.
func bigTree(t testing.TB, root string, n int) {
	t.Helper()
	for i := range n {
		dir := filepath.Join(root, fmt.Sprintf("d%02d", i%20))
		if i < 20 {
			mustMkdir(t, dir)
		}
		var b strings.Builder
		for j := range 40 {
			fmt.Fprintf(&b, "file %d line %d: the quick brown fox jumps over the lazy dog\n", i, j)
		}
		if i%97 == 0 {
			b.WriteString("func TargetFunction() error { return nil }\n")
		}
		mustWrite(t, filepath.Join(dir, fmt.Sprintf("f%05d.txt", i)), b.String())
	}
}

type progressLog struct {
	mu      sync.Mutex
	reports []gateway.Progress
	onFirst func()
}

func (p *progressLog) Report(pr gateway.Progress) {
	p.mu.Lock()
	p.reports = append(p.reports, pr)
	first := len(p.reports) == 1
	p.mu.Unlock()
	if first && p.onFirst != nil {
		p.onFirst()
	}
}

func TestGrepFilesProgress(t *testing.T) {
	e := newEnv(t, nil, nil)
	bigTree(t, e.root, 450)
	sink := &progressLog{}
	ctx, stop := gateway.WithProgress(context.Background(), sink)
	res := e.call(ctx, "grep_files", map[string]any{"pattern": "TargetFunction"})
	stop()
	wantOK(t, res)
	if res.Extras["matches"] != 5 || res.Extras["files_scanned"] != 450 {
		t.Errorf("extras = %v", res.Extras)
	}
	var got []string
	for _, p := range sink.reports {
		got = append(got, fmt.Sprintf("%v/%v", p.Progress, p.Total))
	}
	if strings.Join(got, " ") != "200/450 400/450 450/450" {
		t.Errorf("progress reports = %v", got)
	}
	if len(sink.reports) > 0 && sink.reports[0].Message != "searched 200 of 450 files" {
		t.Errorf("progress message = %q", sink.reports[0].Message)
	}
}

func TestGrepFilesCancellation(t *testing.T) {
	e := newEnv(t, nil, nil)
	bigTree(t, e.root, 3000)

	// Cancelled before it starts: the handler itself returns at once.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	start := time.Now()
	res, err := e.tool("grep_files").Handler()(ctx, &gateway.Call{Arguments: []byte(`{"pattern":"no such thing"}`)})
	if err == nil || time.Since(start) > time.Second {
		t.Fatalf("cancelled grep: res %v err %v after %v", res, err, time.Since(start))
	}

	// Cancelled by the client at the first progress report, through the
	// pipeline: the handler ends promptly (its goroutines too).
	for range 3 {
		ctx, cancel := context.WithCancel(context.Background())
		sink := &progressLog{onFirst: cancel}
		pctx, stop := gateway.WithProgress(ctx, sink)
		done := make(chan error, 1)
		go func() {
			_, err := e.tool("grep_files").Handler()(pctx, &gateway.Call{Arguments: []byte(`{"pattern":"(?i)no such thing"}`)})
			done <- err
		}()
		select {
		case err := <-done:
			if err == nil {
				t.Fatal("grep ended without an error after cancellation")
			}
		case <-time.After(5 * time.Second):
			t.Fatal("grep did not stop after cancellation")
		}
		stop()
		cancel()
	}

	ctx, cancel = context.WithCancel(context.Background())
	sink := &progressLog{onFirst: cancel}
	pctx, stop := gateway.WithProgress(ctx, sink)
	defer stop()
	res = e.call(pctx, "grep_files", map[string]any{"pattern": "(?i)no such thing"})
	wantError(t, res, gateway.KindCancelled)
}

func BenchmarkGrepFiles(b *testing.B) {
	e := newEnv(b, nil, nil)
	bigTree(b, e.root, 2000)
	ctx := context.Background()
	for _, bc := range []struct{ name, args string }{
		{"literal", `{"pattern":"TargetFunction"}`},
		{"regexp", `{"pattern":"func \\w+\\(\\) error"}`},
		{"ignore_case", `{"pattern":"targetfunction","ignore_case":true}`},
		{"no_literal", `{"pattern":"^(x|y)z+$"}`},
	} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				res := e.p.Call(ctx, &gateway.Call{Name: "grep_files", Arguments: []byte(bc.args)})
				if res.IsError {
					b.Fatal(res.Message)
				}
			}
		})
	}
}

// BenchmarkGrepFilesDir greps the tree named by $TOOLGATE_GREP_BENCH_DIR,
// for comparing with `grep -rn` on a real tree; it is skipped when unset.
func BenchmarkGrepFilesDir(b *testing.B) {
	dir := os.Getenv("TOOLGATE_GREP_BENCH_DIR")
	if dir == "" {
		b.Skip("TOOLGATE_GREP_BENCH_DIR not set")
	}
	sb, err := policy.NewSandbox([]string{dir})
	if err != nil {
		b.Fatal(err)
	}
	defer sb.Close()
	ts, err := New(sb, nil)
	if err != nil {
		b.Fatal(err)
	}
	tools, _ := ts.Tools(context.Background())
	var grep *gateway.Tool
	for _, t := range tools {
		if t.Name == "grep_files" {
			grep = t
		}
	}
	pattern := os.Getenv("TOOLGATE_GREP_BENCH_ARGS")
	if pattern == "" {
		pattern = `{"pattern":"TargetFunction","max_matches":1000}`
	}
	for b.Loop() {
		res, err := grep.Handler()(context.Background(), &gateway.Call{Arguments: []byte(pattern)})
		if err != nil || res.IsError {
			b.Fatal(err, res.Message)
		}
		b.ReportMetric(float64(res.Extras["matches"].(int)), "matches")
	}
}

func TestIndexRareAndFold(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for range 20000 {
		src := make([]byte, r.IntN(70))
		for i := range src {
			switch r.IntN(4) {
			case 0:
				src[i] = byte(r.UintN(256))
			case 1:
				src[i] = "@AZ[`az{"[r.IntN(8)]
			default:
				src[i] = "abAB\n"[r.IntN(5)]
			}
		}
		if len(src) == 0 {
			continue
		}
		needle := src[r.IntN(len(src)):]
		needle = needle[:r.IntN(len(needle))+1]
		if r.IntN(2) == 0 {
			needle = []byte{"ab"[r.IntN(2)], "AZa"[r.IntN(3)]}
		}
		hay := src[r.IntN(len(src)):]
		off := r.IntN(len(needle))
		if got, want := indexRare(hay, needle, off), bytes.Index(hay, needle); got != want {
			t.Fatalf("indexRare(%q, %q, %d) = %d, want %d", hay, needle, off, got, want)
		}
		lowerNeedle := bytes.ToLower(needle)
		lowerHay := make([]byte, len(hay))
		for i, c := range hay {
			if 'A' <= c && c <= 'Z' {
				c += 32
			}
			lowerHay[i] = c
		}
		if bytes.IndexFunc(lowerNeedle, func(r rune) bool { return r >= 0x80 }) >= 0 {
			continue
		}
		if got, want := indexFold(hay, lowerNeedle, off), bytes.Index(lowerHay, lowerNeedle); got != want {
			t.Fatalf("indexFold(%q, %q, %d) = %d, want %d", hay, lowerNeedle, off, got, want)
		}
	}
}

// TestWalkDirsLikeWalkDir: the walk grep uses makes the same calls as
// fs.WalkDir, skips included.
func TestWalkDirsLikeWalkDir(t *testing.T) {
	e := listTree(t, nil)
	e.write("b/d/f/h/i.txt", "i")
	e.write("b/z/y.txt", "y")
	e.symlink("../b", "b/d/loop")
	if os.Geteuid() != 0 {
		mustMkdir(t, e.root+"/locked/inner")
		os.Chmod(e.root+"/locked", 0)
		defer os.Chmod(e.root+"/locked", 0o755)
	}
	for _, start := range []string{".", "b", "b/c.txt"} {
		fsys, name, err := e.sb.FS(start)
		if err != nil {
			t.Fatal(err)
		}
		record := func(log *[]string) fs.WalkDirFunc {
			return func(p string, d fs.DirEntry, err error) error {
				kind := "nil"
				if d != nil {
					kind = d.Type().String()
				}
				*log = append(*log, fmt.Sprintf("%s %s %v", p, kind, err != nil))
				if d != nil && d.Name() == "f" {
					return fs.SkipDir
				}
				return nil
			}
		}
		var got, want []string
		if err := walkDirs(fsys, name, record(&got)); err != nil {
			t.Fatal(err)
		}
		if err := fs.WalkDir(fsys, name, record(&want)); err != nil {
			t.Fatal(err)
		}
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("from %s:\n%s\nwant\n%s", start, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
}
