package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// burstCall is call number i of a burst: echo or read_file, every fourth
// one invalid.
func burstCall(i int) *mcp.CallToolParams {
	switch i % 4 {
	case 0:
		return &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": fmt.Sprintf("burst %d", i)}}
	case 1:
		return &mcp.CallToolParams{Name: "read_file", Arguments: map[string]any{"path": "burst.txt"}}
	case 2:
		if i%8 == 2 {
			return &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"txt": i}} // invalid
		}
		return &mcp.CallToolParams{Name: "read_file", Arguments: map[string]any{"path": "burst.txt", "limit": 5000}} // invalid
	default:
		return &mcp.CallToolParams{Name: "read_file", Arguments: map[string]any{"path": fmt.Sprintf("missing-%d.txt", i)}} // tool error
	}
}

// runBurst makes n concurrent calls spread over the sessions and returns
// the call ids the results carry, and how many were errors.
func runBurst(t *testing.T, sessions []*mcp.ClientSession, n int) (ids map[string]bool, errs int) {
	t.Helper()
	type out struct {
		id      string
		isError bool
		err     error
	}
	results := make(chan out, n)
	var wg sync.WaitGroup
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := sessions[i%len(sessions)].CallTool(ctx, burstCall(i))
			if err != nil {
				results <- out{err: fmt.Errorf("call %d: %w", i, err)}
				return
			}
			results <- out{id: callIDOf(res), isError: res.IsError}
		}()
	}
	wg.Wait()
	close(results)
	ids = map[string]bool{}
	for o := range results {
		switch {
		case o.err != nil:
			t.Error(o.err)
		case o.id == "":
			t.Error("a result without _meta toolgate/call_id")
		case ids[o.id]:
			t.Errorf("two results carry call id %s", o.id)
		default:
			ids[o.id] = true
			if o.isError {
				errs++
			}
		}
	}
	return ids, errs
}

// checkBurstArchive: exactly one tools.jsonl line per call, matched by call
// id, one tool.started and one finished event per call, and one errors.jsonl
// line per failed call.
func checkBurstArchive(t *testing.T, a *Archive, ids map[string]bool, errs int) {
	t.Helper()
	if len(a.Tools) != len(ids) {
		t.Errorf("tools.jsonl has %d lines for %d calls", len(a.Tools), len(ids))
	}
	recs := a.toolsByCallID(t)
	for id := range ids {
		if _, ok := recs[id]; !ok {
			t.Errorf("no tools.jsonl line for call %s", id)
		}
	}
	for id := range recs {
		if !ids[id] {
			t.Errorf("tools.jsonl has a line for call %s that no result carried", id)
		}
	}
	started, finished := map[string]int{}, map[string]int{}
	for _, ev := range a.Events {
		id, _ := ev["call_id"].(string)
		switch ev["type"] {
		case "tool.started":
			started[id]++
		case "tool.completed", "tool.failed":
			finished[id]++
		}
	}
	for id := range ids {
		if started[id] != 1 || finished[id] != 1 {
			t.Errorf("call %s: %d tool.started and %d finished events, want 1 and 1", id, started[id], finished[id])
		}
	}
	if len(started) != len(ids) || len(finished) != len(ids) {
		t.Errorf("events for %d started and %d finished calls, want %d", len(started), len(finished), len(ids))
	}
	if len(a.Errors) != errs {
		t.Errorf("errors.jsonl has %d lines, %d results were errors", len(a.Errors), errs)
	}
}

// TestBurst: 200 concurrent calls over four HTTP sessions (both eras) and
// 50 over stdio leave exactly one record per call.
func TestBurst(t *testing.T) {
	t.Parallel()
	t.Run("http", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		writeBurstFile(t, e)
		s := e.StartHTTP(t)
		sessions := []*mcp.ClientSession{
			s.Connect(t, era2025, nil), s.Connect(t, era2026, nil),
			s.Connect(t, era2025, nil), s.Connect(t, era2026, nil),
		}
		ids, errs := runBurst(t, sessions, 200)
		if len(ids) != 200 || errs == 0 || errs == 200 {
			t.Errorf("%d distinct call ids, %d errors", len(ids), errs)
		}
		s.Stop(t)
		checkBurstArchive(t, e.Archive(t), ids, errs)
	})
	t.Run("stdio", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		writeBurstFile(t, e)
		s := e.StartStdio(t)
		ids, errs := runBurst(t, []*mcp.ClientSession{s.Connect(t, era2025, nil)}, 50)
		if len(ids) != 50 {
			t.Errorf("%d distinct call ids", len(ids))
		}
		s.Stop(t)
		checkBurstArchive(t, e.Archive(t), ids, errs)
	})
}

func writeBurstFile(t *testing.T, e *Env) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(e.Sandbox, "burst.txt"), []byte(strings.Repeat("some text\n", 50)), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestSecretsRedacted: values of secret-looking argument keys never reach
// the run archive or the logs, even when the call fails validation (whose
// arguments are still recorded) or names no tool.
func TestSecretsRedacted(t *testing.T) {
	t.Parallel()
	for _, transport := range []string{"stdio", "http"} {
		t.Run(transport, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			s := e.startFor(t, clientCase{transport, era2025})
			cs := s.Connect(t, era2025, nil)
			args := map[string]any{"text": "x", "api_key": "sk-123", "nested": map[string]any{"password": "p"}}
			res := call(t, cs, "echo", args) // strict schema: a validation error
			if !res.IsError {
				t.Fatalf("echo with extra properties succeeded: %s", textOf(res))
			}
			_, _ = cs.CallTool(callCtx(t), &mcp.CallToolParams{Name: "no_such_tool", Arguments: args})
			deep := map[string]any{"path": "a.txt", "options": []any{map[string]any{"Authorization": "Bearer sk-123"}}}
			_ = call(t, cs, "read_file", deep)
			s.Stop(t)

			a := e.Archive(t)
			if len(a.Tools) != 3 {
				t.Fatalf("tools.jsonl has %d lines, want 3", len(a.Tools))
			}
			var rec struct {
				Text   string `json:"text"`
				APIKey string `json:"api_key"`
				Nested struct {
					Password string `json:"password"`
				} `json:"nested"`
			}
			if err := json.Unmarshal(a.toolsByCallID(t)[callIDOf(res)].Arguments, &rec); err != nil {
				t.Fatal(err)
			}
			if rec.Text != "x" || rec.APIKey != "[REDACTED]" || rec.Nested.Password != "[REDACTED]" {
				t.Errorf("recorded arguments %+v; want text kept and the secrets [REDACTED]", rec)
			}

			// "p" is a common letter: look for it as a value.
			leaks := regexp.MustCompile(`sk-123|"p"|\\"p\\"|password[=:]\s*"?p\b`)
			_ = filepath.WalkDir(a.Dir, func(path string, d fs.DirEntry, err error) error {
				if err != nil || d.IsDir() {
					return err
				}
				data, err := os.ReadFile(path)
				if err != nil {
					return err
				}
				if m := leaks.Find(data); m != nil {
					t.Errorf("%s holds the secret (%q)", path, m)
				}
				return nil
			})
			if m := leaks.FindString(s.Stderr()); m != "" {
				t.Errorf("stderr holds the secret (%q)", m)
			}
		})
	}
}

// TestStdioPurity: with a plain pipe (no SDK), every line on stdout is a
// JSON-RPC message, garbage input gets a JSON-RPC error, and the logs go
// to stderr.
func TestStdioPurity(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	s := e.StartStdio(t)
	stdin, stdout := s.Pipes(t)

	lines := make(chan string, 100)
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 0, 1<<20), 16<<20)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	send := func(msg string) {
		t.Helper()
		if _, err := io.WriteString(stdin, msg+"\n"); err != nil {
			t.Fatalf("writing to stdin: %v", err)
		}
	}
	got := map[string]map[string]any{} // by id
	var all []string
	next := func(id string) map[string]any {
		t.Helper()
		timeout := time.After(10 * time.Second)
		for got[id] == nil {
			select {
			case line, ok := <-lines:
				if !ok {
					t.Fatalf("stdout closed while waiting for id %s", id)
				}
				all = append(all, line)
				var m map[string]any
				if err := json.Unmarshal([]byte(line), &m); err != nil || m["jsonrpc"] != "2.0" {
					t.Errorf("stdout line is not a JSON-RPC message: %q", line)
					continue
				}
				got[fmt.Sprint(m["id"])] = m
			case <-timeout:
				t.Fatalf("no response with id %s within 10s; stdout so far: %q", id, all)
			}
		}
		return got[id]
	}

	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}`)
	if r := next("1"); r["result"] == nil {
		t.Fatalf("initialize: %v", r)
	}
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	send(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	if r := next("2"); r["result"] == nil {
		t.Fatalf("tools/list: %v", r)
	}
	send(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{"text":"pure"}}}`)
	if r := next("3"); !strings.Contains(mustJSON(r["result"]), "pure") {
		t.Fatalf("tools/call: %v", r)
	}
	send(`this is not json {`)
	if r := next("<nil>"); r["error"] == nil {
		t.Errorf("garbage line: %v; want a JSON-RPC error with id null", r)
	} else if code := r["error"].(map[string]any)["code"]; code != float64(-32700) {
		t.Errorf("garbage line: error code %v, want -32700 (parse error)", code)
	}
	send(`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"read_file","arguments":{"path":"nope.txt"}}}`)
	if r := next("4"); r["result"] == nil {
		t.Fatalf("tools/call after garbage: %v", r)
	}
	// A message over the bound (http.max_body_bytes, 4 MiB, bounds a line
	// too) is skipped unread and refused; the session goes on.
	delete(got, "<nil>")
	send(`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"echo","arguments":{"text":"` + strings.Repeat("x", 5<<20) + `"}}}`)
	if r := next("<nil>"); r["error"] == nil || r["error"].(map[string]any)["code"] != float64(-32600) ||
		!strings.Contains(fmt.Sprint(r["error"].(map[string]any)["message"]), "over the limit of 4194304 bytes") {
		t.Errorf("a 5 MiB line: %v; want an Invalid Request error naming the limit", r)
	}
	send(`{"jsonrpc":"2.0","id":6,"method":"tools/list"}`)
	if r := next("6"); r["result"] == nil {
		t.Fatalf("tools/list after the long line: %v", r)
	}

	// End of input ends the server, cleanly.
	stdin.Close()
	for line := range lines {
		all = append(all, line)
		if !json.Valid([]byte(line)) {
			t.Errorf("stdout line is not JSON: %q", line)
		}
	}
	if code := s.Wait(10 * time.Second); code != 0 {
		t.Errorf("exit code %d after stdin closed, want 0", code)
	}
	s.checkStderr(t)
	s.Wire.checkAllJSONRPC(t)
	if !strings.Contains(s.Stderr(), "toolgate starting") || !strings.Contains(s.Stderr(), "tool call") {
		t.Errorf("the logs are not on stderr:\n%s", s.Stderr())
	}
	for _, line := range all {
		if strings.Contains(line, "level=") || strings.Contains(line, "toolgate starting") {
			t.Errorf("a log line on stdout: %q", line)
		}
	}
}

// TestStdioClientGone: a client that dies with calls in flight (both of
// its pipe ends closed, as when it crashes) ends the server cleanly: the
// answers written to the closed stdout fail, and do not kill it
// (SIGPIPE), so every call is recorded and the run is stopped.
func TestStdioClientGone(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	s := e.StartStdio(t)
	stdin, stdout := s.Pipes(t)
	out := bufio.NewReader(stdout)
	send := func(msg string) {
		t.Helper()
		if _, err := io.WriteString(stdin, msg+"\n"); err != nil {
			t.Fatalf("writing to stdin: %v", err)
		}
	}
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}`)
	if line, err := out.ReadString('\n'); err != nil || !strings.Contains(line, `"result"`) {
		t.Fatalf("initialize: %q %v", line, err)
	}
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	for id := 2; id <= 4; id++ {
		send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"sleep","arguments":{"ms":60000}}}`, id))
	}
	if !waitFor(10*time.Second, func() bool { return countEvents(e.liveEvents(t), "tool.started", "sleep") == 3 }) {
		t.Fatalf("the 3 calls did not start: %d started", countEvents(e.liveEvents(t), "tool.started", "sleep"))
	}
	// The client dies: its ends of both pipes close.
	if err := stdout.(*teeLines).r.(io.Closer).Close(); err != nil {
		t.Fatal(err)
	}
	stdin.Close()
	if code := s.Wait(15 * time.Second); code != 0 {
		t.Fatalf("exit code %d once the client was gone (-1: killed by a signal), want 0; stderr:\n%s", code, tail(s.Stderr(), 2000))
	}
	a := e.Archive(t)
	sleeps := 0
	for _, r := range a.Tools {
		if r.Tool == "sleep" {
			sleeps++
		}
	}
	if sleeps != 3 {
		t.Errorf("tools.jsonl has %d sleep lines, want 3", sleeps)
	}
	if n := len(a.Events); n == 0 || a.Events[n-1]["type"] != "run.stopped" {
		t.Errorf("events.jsonl does not end with run.stopped: %v", a.eventTypes())
	}
}

// TestShutdownWithCallsInFlight: SIGTERM with ten 60-second calls running
// ends the process within the grace period, and every call is recorded as
// cancelled before run.stopped.
func TestShutdownWithCallsInFlight(t *testing.T) {
	t.Parallel()
	e := newEnv(t, set("limits.shutdown_grace", "1s"))
	s := e.StartHTTP(t)
	sessions := []*mcp.ClientSession{s.Connect(t, era2025, nil), s.Connect(t, era2026, nil)}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	done := make(chan error, 10)
	for i := range 10 {
		go func() {
			_, err := sessions[i%2].CallTool(ctx, &mcp.CallToolParams{Name: "sleep", Arguments: map[string]any{"ms": 60000}})
			done <- err
		}()
	}
	if !waitFor(10*time.Second, func() bool { return countEvents(e.liveEvents(t), "tool.started", "sleep") == 10 }) {
		t.Fatalf("the 10 calls did not start: %d started", countEvents(e.liveEvents(t), "tool.started", "sleep"))
	}
	took := s.Stop(t)
	if took > 3500*time.Millisecond {
		t.Errorf("the process took %s to exit after SIGTERM; the grace period is 1s", took.Round(time.Millisecond))
	}
	t.Logf("exited %s after SIGTERM", took.Round(time.Millisecond))
	for range 10 {
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatal("a client call did not return after the server stopped")
		}
	}
	a := e.Archive(t)
	var statuses []string
	for _, r := range a.Tools {
		if r.Tool == "sleep" {
			statuses = append(statuses, r.Status)
		}
	}
	if len(statuses) != 10 {
		t.Errorf("tools.jsonl has %d sleep lines, want 10", len(statuses))
	}
	for _, st := range statuses {
		if st != "cancelled" {
			t.Errorf("a call in flight at shutdown was recorded as %q, want cancelled", st)
		}
	}
	if n := len(a.Events); n == 0 || a.Events[n-1]["type"] != "run.stopped" {
		t.Errorf("events.jsonl does not end with run.stopped: %v", a.eventTypes())
	}
}
