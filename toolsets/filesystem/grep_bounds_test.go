package filesystem

import (
	"context"
	"errors"
	"regexp/syntax"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/gateway"
)

// A pattern or path over its schema's maxLength is refused by validation,
// before the tool does any work, with a message that names the argument.
func TestGrepFilesArgumentLengths(t *testing.T) {
	e := grepTree(t, nil)
	ctx := context.Background()
	huge := strings.Repeat("a", 3900<<10) // the 3.9 MB pattern of issue 9
	for _, tc := range []struct {
		tool string
		args map[string]any
		at   string
	}{
		{"grep_files", map[string]any{"pattern": huge}, "'/pattern'"},
		{"grep_files", map[string]any{"pattern": strings.Repeat("é", 4097)}, "'/pattern'"},
		{"grep_files", map[string]any{"pattern": "x", "glob": strings.Repeat("*", 1025)}, "'/glob'"},
		{"grep_files", map[string]any{"pattern": "x", "path": strings.Repeat("a/", 2049)}, "'/path'"},
		{"read_file", map[string]any{"path": strings.Repeat("a", 4097)}, "'/path'"},
		{"write_file", map[string]any{"path": strings.Repeat("a", 4097), "content": ""}, "'/path'"},
		{"list_files", map[string]any{"path": strings.Repeat("a", 4097)}, "'/path'"},
		{"list_files", map[string]any{"pattern": strings.Repeat("a", 1025)}, "'/pattern'"},
	} {
		res := e.call(ctx, tc.tool, tc.args)
		wantError(t, res, gateway.KindInvalid, "at "+tc.at+": maximum length")
	}
	// At the limit, a pattern is searched for.
	wantOK(t, e.call(ctx, "grep_files", map[string]any{"pattern": strings.Repeat("é", 4096)}))
}

// allocated returns the bytes allocated while f runs (an upper bound on
// the heap f needed at its peak).
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// The matcher's memory is bounded whatever the pattern validation lets
// through: counted repeats are what make a short pattern large (a 4 KiB
// one compiled to ~370,000 instructions and ~90 MB, three times over, and
// then per worker queues of that size).
func TestGrepFilesMatcherMemory(t *testing.T) {
	e := newEnv(t, nil, map[string]string{
		"digits.txt": strings.Repeat("0123456789\n", 100<<10/11),
		"long.txt":   strings.Repeat("9", 1<<20), // one long line
	})
	ctx := context.Background()
	const bound = 64 << 20

	// The largest pattern of its kind within maxLength: refused.
	worst := strings.Repeat(`[a-y]{1000}`, 4096/len(`[a-y]{1000}`))
	var res *gateway.Result
	n := allocated(func() { res = e.call(ctx, "grep_files", map[string]any{"pattern": worst}) })
	t.Logf("%d-byte pattern, refused: %d KB allocated", len(worst), n>>10)
	if n > bound {
		t.Errorf("a %d-byte pattern of counted repeats allocated %d MB, want under %d MB", len(worst), n>>20, bound>>20)
	}
	wantError(t, res, gateway.KindToolError, "pattern too large", "50000 instructions", "(the pattern has 4092 characters)")
	if strings.Contains(res.Message, worst) {
		t.Error("the error message repeats the pattern")
	}

	// A pattern just within maxPatternInsts: searched, within the bound.
	near := strings.Repeat(`[a-y]{1000}`, maxPatternInsts/1000-1)
	n = allocated(func() { res = e.call(ctx, "grep_files", map[string]any{"pattern": near}) })
	t.Logf("pattern of %d instructions, searched: %d KB allocated", progSize(mustParse(t, near), 1<<30), n>>10)
	if n > bound {
		t.Errorf("a pattern of %d instructions allocated %d MB, want under %d MB", progSize(mustParse(t, near), 1<<30), n>>20, bound>>20)
	}
	wantOK(t, res)
}

func mustParse(t *testing.T, pattern string) *syntax.Regexp {
	t.Helper()
	re, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		t.Fatal(err)
	}
	return re
}

// progSize bounds the compiled size from above, and not by much, so that
// the limit refuses what is large and nothing else.
func TestProgSize(t *testing.T) {
	for _, p := range []string{"", "a", "abc", "(?i)abc", `a|b|c`, `(a)(b)`, `a*b+c?`, `[a-z]{3}`, `x{2,5}`, `x{3,}`,
		`(?:ab|cd){10,20}`, `^\w+\s*=\s*"[^"]*"$`, `\bfunc\s+(\w+)\(`, `(?:[a-y]{1000}){1}`, `\pL{1000}`, `(a{10}){10}|b`} {
		re := mustParse(t, p)
		prog, err := syntax.Compile(re.Simplify())
		if err != nil {
			t.Fatal(err)
		}
		got, exact := progSize(re, 1<<30), len(prog.Inst)
		if got < exact || got > 2*exact+4 {
			t.Errorf("progSize(%q) = %d, compiled to %d", p, got, exact)
		}
	}
	// Counting stops past the limit.
	if got := progSize(mustParse(t, strings.Repeat(`(?:x{1000})`, 100)), 5000); got <= 5000 || got > 7000 {
		t.Errorf("progSize over the limit = %d", got)
	}
}

// A grep whose call ends (here its deadline passes) stops its work at
// once, even inside one long line with a slow pattern: the handler returns
// and its goroutines are gone. Before, a timed-out grep kept the cores busy
// until every file was searched (minutes for this tree).
func TestGrepFilesStopsWhenCallEnds(t *testing.T) {
	line := strings.Repeat("abcdefghij", 200<<10) // 2 MB, no newline
	e := newEnv(t, nil, map[string]string{"a/one.txt": line, "b/two.txt": line, "c/three.txt": line})
	// No required literal, ~10,000 instructions, up to 10,000 live threads
	// per byte: tens of seconds per file for the regexp engine.
	pattern := strings.Repeat(`[a-y]{1000}`, 10) + `[0-9]`

	for _, end := range []string{"deadline", "cancel"} {
		t.Run(end, func(t *testing.T) {
			base := runtime.NumGoroutine()
			var ctx context.Context
			var cancel context.CancelFunc
			if end == "deadline" {
				ctx, cancel = context.WithTimeout(context.Background(), 200*time.Millisecond)
			} else {
				ctx, cancel = context.WithCancel(context.Background())
				time.AfterFunc(200*time.Millisecond, cancel)
			}
			defer cancel()
			done := make(chan error, 1)
			go func() {
				_, err := e.tool("grep_files").Handler()(ctx, &gateway.Call{Arguments: []byte(`{"pattern":"` + pattern + `"}`)})
				done <- err
			}()
			// A failsafe, not a timing assertion: without the fix the call
			// runs for minutes.
			select {
			case err := <-done:
				if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
					t.Fatalf("grep ended with %v, want the context's error", err)
				}
			case <-time.After(60 * time.Second):
				t.Fatal("grep still searching 60 s after its call ended")
			}
			waitFor(t, "the grep's goroutines to end", func() bool { return runtime.NumGoroutine() <= base })
		})
	}
}

// waitFor waits until cond holds, failing the test if it does not within a
// generous failsafe.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}
