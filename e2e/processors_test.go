package e2e

import (
	"context"
	"fmt"
	"regexp"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// procsLine is the debug line toolgate serve logs when it changes the
// processors Go code runs on (cmd/toolgate/procs.go).
var procsLine = regexp.MustCompile(`msg="processors for Go code" .*?\bone=(true|false) why="([^"]*)"`)

// procsChanges is every change the server has logged so far.
func procsChanges(s *Server) [][]string {
	return procsLine.FindAllStringSubmatch(s.Stderr(), -1)
}

// keptLine is the debug line, at most one a second, that says why the
// control keeps all processors while calls come.
var keptLine = regexp.MustCompile(`msg="processors for Go code: all kept" .*?\bwhy="([^"]*)"`)

// procsKept counts the seconds the server said it kept all processors,
// by reason: what a failure to take one is down to.
func procsKept(s *Server) map[string]int {
	n := map[string]int{}
	for _, m := range keptLine.FindAllStringSubmatch(s.Stderr(), -1) {
		n[m[1]]++
	}
	return n
}

// TestProcessorsFollowCalls: the served binary runs Go code on one
// processor while one client's calls come in turn, and gives all of them
// back as soon as calls overlap, so that concurrent clients are not held
// to one core. Not parallel, and `make test` runs it alone after every
// other package's tests (ALONE in the Makefile): the control reads the
// process's CPU time and its goroutines' waits, which other tests' load on
// the same cores would blur (under it goroutines wait to run, and the
// control keeps all processors, as it should).
func TestProcessorsFollowCalls(t *testing.T) {
	if runtime.NumCPU() < 2 {
		t.Skip("the control is off on a machine with one processor")
	}
	e := newEnv(t) // debug logs: the changes are logged
	s := e.StartHTTP(t)
	cs := s.Connect(t, era2025, nil)
	load := connectLoad(t, s, 4, nil) // connected now, calling later

	// One client, calls in turn: one processor within a few seconds (the
	// control waits for a second of them).
	low := func() bool {
		ch := procsChanges(s)
		return len(ch) > 0 && ch[len(ch)-1][1] == "true"
	}
	if !callUntil(t, []*mcp.ClientSession{cs}, "echo", map[string]any{"text": "in turn"}, 60*time.Second, low) {
		t.Fatalf("after 60s of calls in turn Go code is not on one processor (changes: %q; seconds all were kept, by reason: %v)", procsChanges(s), procsKept(s))
	}
	before := procsChanges(s)
	if why := before[len(before)-1][2]; why != "calls in turn" {
		t.Fatalf("one processor because %q, want because calls came in turn", why)
	}

	// Four clients at once, with calls that wait (as a proxied call waits
	// for its upstream): all processors back at once. Waiting calls keep
	// the process's CPU low, so that only the overlap can give them back.
	changed := func() bool { return len(procsChanges(s)) > len(before) }
	if !callUntil(t, load.sessions, "sleep", map[string]any{"ms": 50, "steps": 1}, 30*time.Second, changed) {
		t.Fatalf("four clients called at once for 30s and Go code stayed on one processor")
	}
	next := procsChanges(s)[len(before)]
	if next[1] != "false" || next[2] != "calls overlap" {
		t.Errorf("next change: one=%s why=%q, want all processors because calls overlap", next[1], next[2])
	}
}

// callUntil has each session call tool with args, one call after another,
// until cond holds (polled as [waitFor] polls) or timeout passes, and
// reports whether it held. A call that fails fails the test.
func callUntil(t *testing.T, sessions []*mcp.ClientSession, tool string, args map[string]any, timeout time.Duration, cond func() bool) bool {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	errs := make(chan error, len(sessions))
	for i, cs := range sessions {
		wg.Go(func() {
			for ctx.Err() == nil {
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
				switch {
				case err != nil && ctx.Err() == nil:
					errs <- fmt.Errorf("session %d: %s: %w", i, tool, err)
					return
				case err == nil && res.IsError:
					errs <- fmt.Errorf("session %d: %s: %s", i, tool, textOf(res))
					return
				}
			}
		})
	}
	held := waitFor(timeout, func() bool { return cond() || len(errs) > 0 })
	cancel()
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	return held
}
