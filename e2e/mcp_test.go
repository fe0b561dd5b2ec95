package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

var fsTools = []string{"grep_files", "list_files", "read_file", "write_file"}

// TestToolsList: the four filesystem tools (plus echo and sleep with
// diagnostics on), each with its inputSchema byte-equal to what `toolgate
// tools --json` prints, annotations as declared and its capabilities in
// _meta.
func TestToolsList(t *testing.T) {
	t.Parallel()
	forEachClient(t, func(t *testing.T, c clientCase) {
		for _, diag := range []bool{true, false} {
			e := newEnv(t, set("diagnostics.enabled", diag))
			want := e.toolsJSON(t)
			s := e.startFor(t, c)
			cs := s.Connect(t, c.Era, nil)
			res, err := cs.ListTools(callCtx(t), nil)
			if err != nil {
				t.Fatalf("tools/list: %v", err)
			}
			var names []string
			for _, tool := range res.Tools {
				names = append(names, tool.Name)
			}
			sort.Strings(names)
			wantNames := slices.Clone(fsTools)
			if diag {
				wantNames = append(wantNames, "echo", "sleep")
				sort.Strings(wantNames)
			}
			if !slices.Equal(names, wantNames) {
				t.Fatalf("diagnostics=%v: tools/list names %v, want %v", diag, names, wantNames)
			}
			if len(want) != len(wantNames) {
				t.Fatalf("toolgate tools --json lists %d tools, want %d", len(want), len(wantNames))
			}

			for _, tool := range res.Tools {
				w := want[tool.Name]
				a := tool.Annotations
				if a == nil {
					t.Errorf("%s: no annotations", tool.Name)
					continue
				}
				if len(w.Hints) != 4 {
					t.Fatalf("%s: toolgate tools --json hints %v: want the four hints", tool.Name, w.Hints)
				}
				if a.ReadOnlyHint != w.hint("readonly") || a.IdempotentHint != w.hint("idempotent") ||
					a.DestructiveHint == nil || *a.DestructiveHint != w.hint("destructive") ||
					a.OpenWorldHint == nil || *a.OpenWorldHint != w.hint("openworld") {
					t.Errorf("%s: annotations %s, declared hints %v", tool.Name, mustJSON(a), w.Hints)
				}
				caps, _ := tool.Meta["toolgate/capabilities"].([]any)
				var gotCaps []string
				for _, c := range caps {
					s, _ := c.(string)
					gotCaps = append(gotCaps, s)
				}
				if !slices.Equal(gotCaps, w.Capabilities) && !(len(gotCaps) == 0 && len(w.Capabilities) == 0) {
					t.Errorf("%s: _meta toolgate/capabilities %v, want %v", tool.Name, gotCaps, w.Capabilities)
				}
				if slices.Contains(fsTools, tool.Name) && len(gotCaps) == 0 {
					t.Errorf("%s: no _meta toolgate/capabilities", tool.Name)
				}
			}

			// The schemas, as bytes on the wire.
			raw := rawToolsList(t, s)
			for name, schema := range raw {
				got, exp := compact(t, schema), compact(t, want[name].InputSchema)
				if !bytes.Equal(got, exp) {
					t.Errorf("%s: inputSchema on the wire differs from `toolgate tools --json`:\nwire: %s\ncli:  %s", name, got, exp)
				}
			}
			if len(raw) != len(wantNames) {
				t.Errorf("found %d tools in the raw tools/list response, want %d", len(raw), len(wantNames))
			}

			// read_file's limit: the maximum the validation test relies on.
			var schema struct {
				Properties map[string]struct {
					Maximum *float64 `json:"maximum"`
				} `json:"properties"`
			}
			_ = json.Unmarshal(raw["read_file"], &schema)
			if m := schema.Properties["limit"].Maximum; m == nil || *m != 2000 {
				t.Errorf("read_file limit maximum = %v, want 2000", m)
			}
			s.Stop(t)
		}
	})
}

// rawToolsList finds the tools/list response on the wire and returns each
// tool's inputSchema bytes.
func rawToolsList(t *testing.T, s *Server) map[string]json.RawMessage {
	t.Helper()
	for _, m := range s.Wire.Messages() {
		var msg struct {
			Result struct {
				Tools []struct {
					Name        string          `json:"name"`
					InputSchema json.RawMessage `json:"inputSchema"`
				} `json:"tools"`
			} `json:"result"`
		}
		if json.Unmarshal(m, &msg) != nil || len(msg.Result.Tools) == 0 {
			continue
		}
		out := map[string]json.RawMessage{}
		for _, tool := range msg.Result.Tools {
			out[tool.Name] = tool.InputSchema
		}
		return out
	}
	t.Fatal("no tools/list response on the wire")
	return nil
}

func compact(t *testing.T, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := json.Compact(&buf, b); err != nil {
		t.Fatalf("compacting %s: %v", b, err)
	}
	return buf.Bytes()
}

// TestCalls: write_file then read_file round trip, a diff display block in
// _meta, and a hostile path refused with the sandbox's message.
func TestCalls(t *testing.T) {
	t.Parallel()
	forEachClient(t, func(t *testing.T, c clientCase) {
		e := newEnv(t)
		s := e.startFor(t, c)
		cs := s.Connect(t, c.Era, nil)

		content := "hello from " + c.String() + "\nsecond line\n"
		w := call(t, cs, "write_file", map[string]any{"path": "notes/a.txt", "content": content})
		if w.IsError {
			t.Fatalf("write_file failed: %s", textOf(w))
		}
		if got, err := os.ReadFile(filepath.Join(e.Sandbox, "notes", "a.txt")); err != nil || string(got) != content {
			t.Errorf("file on disk = %q, %v; want %q", got, err, content)
		}
		display, _ := json.Marshal(w.Meta["toolgate/display"])
		var blocks []struct {
			Type string `json:"type"`
		}
		_ = json.Unmarshal(display, &blocks)
		if !slices.ContainsFunc(blocks, func(b struct {
			Type string `json:"type"`
		}) bool {
			return b.Type == "diff"
		}) {
			t.Errorf("write_file result has no diff block in _meta toolgate/display: %s", display)
		}
		if callIDOf(w) == "" {
			t.Errorf("write_file result has no _meta toolgate/call_id: %s", mustJSON(w.Meta))
		}

		r := call(t, cs, "read_file", map[string]any{"path": "notes/a.txt"})
		if r.IsError {
			t.Fatalf("read_file failed: %s", textOf(r))
		}
		for _, line := range strings.Split(strings.TrimSpace(content), "\n") {
			if !strings.Contains(textOf(r), line) {
				t.Errorf("read_file output lacks %q:\n%s", line, textOf(r))
			}
		}

		for _, tc := range []struct {
			tool string
			args map[string]any
		}{
			{"read_file", map[string]any{"path": "../../etc/passwd"}},
			{"write_file", map[string]any{"path": "../../escape.txt", "content": "x"}},
		} {
			h := call(t, cs, tc.tool, tc.args)
			if !h.IsError || !strings.Contains(textOf(h), "outside the sandbox") {
				t.Errorf("%s %v: isError=%v %q; want isError with the sandbox's message", tc.tool, tc.args, h.IsError, textOf(h))
			}
		}
		if fileExists(filepath.Join(filepath.Dir(e.Dir), "escape.txt")) {
			t.Error("write_file escaped the sandbox")
		}
		s.Stop(t)
		a := e.Archive(t)
		if len(a.Tools) != 4 {
			t.Errorf("tools.jsonl has %d lines, want 4", len(a.Tools))
		}
	})
}

// TestValidationError: an argument over the schema's maximum is an isError
// result that says where and what, not a JSON-RPC error.
func TestValidationError(t *testing.T) {
	t.Parallel()
	forEachClient(t, func(t *testing.T, c clientCase) {
		e := newEnv(t)
		s := e.startFor(t, c)
		cs := s.Connect(t, c.Era, nil)
		if err := os.WriteFile(filepath.Join(e.Sandbox, "a.txt"), []byte("a\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		res, err := cs.CallTool(callCtx(t), &mcp.CallToolParams{Name: "read_file", Arguments: map[string]any{"path": "a.txt", "limit": 5000}})
		if err != nil {
			t.Fatalf("a validation error came back as a protocol error: %v", err)
		}
		const want = "at '/limit': maximum 2000, got 5000"
		if !res.IsError || !strings.Contains(textOf(res), want) {
			t.Fatalf("isError=%v text %q; want isError containing %q", res.IsError, textOf(res), want)
		}
		s.Stop(t)
		a := e.Archive(t)
		rec, ok := a.toolsByCallID(t)[callIDOf(res)]
		if !ok || rec.Status != "invalid_arguments" {
			t.Errorf("record of the call: %+v (found %v), want status invalid_arguments", rec, ok)
		}
		if len(a.Errors) != 1 {
			t.Errorf("errors.jsonl has %d lines, want 1", len(a.Errors))
		}
	})
}

// TestPermissionDenied: policy.tools.deny refuses write_file with a message
// naming the tool and the rule, and the record carries the decision.
func TestPermissionDenied(t *testing.T) {
	t.Parallel()
	forEachClient(t, func(t *testing.T, c clientCase) {
		e := newEnv(t, set("policy.tools.deny", []string{"write_file"}))
		s := e.startFor(t, c)
		cs := s.Connect(t, c.Era, nil)
		res := call(t, cs, "write_file", map[string]any{"path": "x.txt", "content": "x"})
		text := textOf(res)
		if !res.IsError || !strings.Contains(text, "write_file") || !strings.Contains(text, "policy.tools.deny:write_file") {
			t.Errorf("isError=%v %q; want a permission error naming write_file and policy.tools.deny:write_file", res.IsError, text)
		}
		if fileExists(filepath.Join(e.Sandbox, "x.txt")) {
			t.Error("the denied write happened")
		}
		// Other tools still work.
		if r := call(t, cs, "list_files", map[string]any{}); r.IsError {
			t.Errorf("list_files: %s", textOf(r))
		}
		s.Stop(t)
		a := e.Archive(t)
		rec, ok := a.toolsByCallID(t)[callIDOf(res)]
		if !ok {
			t.Fatalf("no tools.jsonl line for call %q", callIDOf(res))
		}
		if rec.Status != "permission_denied" || rec.Decision == nil || rec.Decision.Allow || rec.Decision.Rule != "policy.tools.deny:write_file" {
			t.Errorf("record: status %q decision %s; want permission_denied with the deny rule", rec.Status, mustJSON(rec.Decision))
		}
	})
}

// TestUnknownTool: a call to a tool that does not exist is a JSON-RPC
// error -32602 (as the MCP spec asks), and is still recorded.
func TestUnknownTool(t *testing.T) {
	t.Parallel()
	forEachClient(t, func(t *testing.T, c clientCase) {
		e := newEnv(t)
		s := e.startFor(t, c)
		cs := s.Connect(t, c.Era, nil)
		res, err := cs.CallTool(callCtx(t), &mcp.CallToolParams{Name: "no_such_tool", Arguments: map[string]any{"a": 1}})
		var werr *jsonrpc.Error
		if !errors.As(err, &werr) {
			t.Fatalf("result %s, err %v (%T); want a JSON-RPC error", mustJSON(res), err, err)
		}
		if werr.Code != jsonrpc.CodeInvalidParams || !strings.Contains(werr.Message, "no_such_tool") {
			t.Errorf("JSON-RPC error %d %q; want -32602 naming the tool", werr.Code, werr.Message)
		}
		// The session survives.
		if r := call(t, cs, "echo", map[string]any{"text": "still here"}); r.IsError || textOf(r) != "still here" {
			t.Errorf("echo after the unknown tool: %s", mustJSON(r))
		}
		s.Stop(t)
		a := e.Archive(t)
		var found []ToolRecord
		for _, r := range a.Tools {
			if r.Tool == "no_such_tool" {
				found = append(found, r)
			}
		}
		if len(found) != 1 || found[0].Status != "not_found" {
			t.Errorf("tools.jsonl records for no_such_tool: %s; want one with status not_found", mustJSON(found))
		}
		types := a.eventTypes()
		if types["tool.started"] != 2 || types["tool.completed"]+types["tool.failed"] != 2 {
			t.Errorf("events: %v; want 2 tool.started and 2 finished", types)
		}
	})
}

// TestLargeOutputArtifact: an output over limits.max_output_bytes becomes a
// summary (head, tail) plus a resource_link whose URI resources/read
// returns whole.
func TestLargeOutputArtifact(t *testing.T) {
	t.Parallel()
	forEachClient(t, func(t *testing.T, c clientCase) {
		e := newEnv(t, set("filesystem.max_read_bytes", 1<<20))
		// 1600 lines of 128 bytes: 204,800 bytes, within read_file's 2000 lines.
		var file strings.Builder
		for i := 1; i <= 1600; i++ {
			line := fmt.Sprintf("line %04d ", i)
			file.WriteString(line + strings.Repeat(string(rune('a'+i%26)), 127-len(line)) + "\n")
		}
		if err := os.WriteFile(filepath.Join(e.Sandbox, "big.txt"), []byte(file.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		var numbered strings.Builder // what read_file returns: cat -n style
		for i, line := range strings.Split(strings.TrimSuffix(file.String(), "\n"), "\n") {
			fmt.Fprintf(&numbered, "%6d\t%s\n", i+1, line)
		}

		s := e.startFor(t, c)
		cs := s.Connect(t, c.Era, nil)
		res := call(t, cs, "read_file", map[string]any{"path": "big.txt", "limit": 2000})
		if res.IsError {
			t.Fatalf("read_file: %s", textOf(res))
		}
		text := textOf(res)
		if len(text) > 64<<10 {
			t.Errorf("the summary is %d bytes: not bounded", len(text))
		}
		if !strings.Contains(text, "line 0001") || !strings.Contains(text, "line 1600") {
			t.Errorf("the summary lacks the head (line 0001) or the tail (line 1600):\n%s", tail(text, 2000))
		}
		if strings.Contains(text, "line 0800") {
			t.Errorf("the summary holds the middle of the output (line 0800): not a summary")
		}
		var link *mcp.ResourceLink
		for _, ct := range res.Content {
			if l, ok := ct.(*mcp.ResourceLink); ok {
				link = l
			}
		}
		if link == nil {
			t.Fatalf("no resource_link in the result: %s", mustJSON(res.Content))
		}
		if !strings.HasPrefix(link.URI, "toolgate://artifacts/") {
			t.Errorf("artifact URI %q", link.URI)
		}
		rr, err := cs.ReadResource(callCtx(t), &mcp.ReadResourceParams{URI: link.URI})
		if err != nil {
			t.Fatalf("resources/read %s: %v", link.URI, err)
		}
		if len(rr.Contents) != 1 {
			t.Fatalf("resources/read returned %d contents", len(rr.Contents))
		}
		got := rr.Contents[0].Text
		if got == "" && len(rr.Contents[0].Blob) > 0 {
			got = string(rr.Contents[0].Blob)
		}
		want := strings.TrimSuffix(numbered.String(), "\n") // read_file's output ends without a newline
		if got != want {
			t.Errorf("the artifact (%d bytes) differs from read_file's full output (%d bytes); head %q", len(got), len(want), tail(got[:min(200, len(got))], 200))
		}
		if link.Size != nil && *link.Size != int64(len(got)) {
			t.Errorf("resource_link size %d, content %d bytes", *link.Size, len(got))
		}
		// A URI that names nothing is an error, not a crash.
		if _, err := cs.ReadResource(callCtx(t), &mcp.ReadResourceParams{URI: "toolgate://artifacts/20260101T000000Z-000000/nope.txt"}); err == nil {
			t.Error("resources/read of a missing artifact succeeded")
		}
		s.Stop(t)
		a := e.Archive(t)
		rec := a.toolsByCallID(t)[callIDOf(res)]
		if len(rec.Artifacts) != 1 || rec.Artifacts[0].URI != link.URI {
			t.Errorf("tools.jsonl artifacts %s, want the link %s", mustJSON(rec.Artifacts), link.URI)
		}
	})
}

// TestProgress: sleep with a progress token sends 5 progress notifications,
// in increasing order, before the result.
func TestProgress(t *testing.T) {
	t.Parallel()
	forEachClient(t, func(t *testing.T, c clientCase) {
		e := newEnv(t)
		s := e.startFor(t, c)
		var mu sync.Mutex
		var seen []float64
		cs := s.Connect(t, c.Era, &ConnectOptions{Client: &mcp.ClientOptions{
			ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
				if r.Params.ProgressToken == "tok-"+c.String() {
					mu.Lock()
					seen = append(seen, r.Params.Progress)
					mu.Unlock()
				}
			},
		}})
		params := &mcp.CallToolParams{Name: "sleep", Arguments: map[string]any{"ms": 300, "steps": 5}}
		params.SetProgressToken("tok-" + c.String())
		res, err := cs.CallTool(callCtx(t), params)
		if err != nil || res.IsError {
			t.Fatalf("sleep: %v %s", err, mustJSON(res))
		}

		// On the wire: the notifications, then the result.
		var progress []float64
		resultAt, lastProgressAt := -1, -1
		for i, m := range s.Wire.Messages() {
			var msg wireMsg
			_ = json.Unmarshal(m, &msg)
			if msg.Method == "notifications/progress" {
				var p struct {
					Token    any     `json:"progressToken"`
					Progress float64 `json:"progress"`
					Total    float64 `json:"total"`
				}
				_ = json.Unmarshal(msg.Params, &p)
				if p.Token == "tok-"+c.String() {
					progress = append(progress, p.Progress)
					lastProgressAt = i
					if p.Total != 5 {
						t.Errorf("progress total %v, want 5", p.Total)
					}
				}
			}
			if bytes.Contains(msg.Result, []byte(callIDOf(res))) {
				resultAt = i
			}
		}
		if !slices.Equal(progress, []float64{1, 2, 3, 4, 5}) {
			t.Errorf("progress on the wire: %v, want [1 2 3 4 5]", progress)
		}
		if resultAt < 0 || lastProgressAt > resultAt {
			t.Errorf("the result (message %d) came before the last progress notification (message %d)", resultAt, lastProgressAt)
		}
		// And the SDK's handler saw them all.
		waitFor(2*time.Second, func() bool { mu.Lock(); defer mu.Unlock(); return len(seen) == 5 })
		mu.Lock()
		if !slices.Equal(seen, []float64{1, 2, 3, 4, 5}) {
			t.Errorf("ProgressNotificationHandler saw %v, want [1 2 3 4 5]", seen)
		}
		mu.Unlock()
		s.Stop(t)
	})
}

// TestCancellation: a long sleep cancelled by the client is recorded as
// cancelled within a few seconds, and the server keeps serving.
func TestCancellation(t *testing.T) {
	t.Parallel()
	forEachClient(t, func(t *testing.T, c clientCase) {
		e := newEnv(t)
		s := e.startFor(t, c)
		cs := s.Connect(t, c.Era, nil)
		ctx, cancel := context.WithCancel(context.Background())
		errc := make(chan error, 1)
		go func() {
			_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "sleep", Arguments: map[string]any{"ms": 60000, "steps": 600}})
			errc <- err
		}()
		// Cancel once the call is running.
		if !waitFor(5*time.Second, func() bool { return countEvents(e.liveEvents(t), "tool.started", "sleep") == 1 }) {
			t.Fatal("the sleep call did not start")
		}
		time.Sleep(200 * time.Millisecond)
		cancel()
		select {
		case err := <-errc:
			if err == nil {
				t.Error("the cancelled call returned no error")
			}
		case <-time.After(5 * time.Second):
			t.Fatal("CallTool did not return after its context was cancelled")
		}
		start := time.Now()
		rec := awaitRecord(5*time.Second, func() []ToolRecord { return e.liveTools(t) }, "sleep")
		if rec == nil {
			t.Fatalf("the cancelled call was not recorded within 5s")
		}
		if rec.Status != "cancelled" {
			t.Errorf("recorded status %q, want cancelled", rec.Status)
		}
		t.Logf("recorded %s after %s", rec.Status, time.Since(start).Round(time.Millisecond))
		// The same session keeps working.
		r, err := cs.CallTool(callCtx(t), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "after"}})
		if err != nil || r.IsError || textOf(r) != "after" {
			t.Errorf("echo on the same session after the cancellation: %v %s", err, mustJSON(r))
			if c.Transport == "http" {
				// Tell a dead server from a dead session.
				r := call(t, s.Connect(t, c.Era, nil), "echo", map[string]any{"text": "fresh"})
				t.Logf("echo on a new session: isError=%v %q", r.IsError, textOf(r))
			}
		}
		s.Stop(t)
		a := e.Archive(t)
		if n := countEvents(a.Events, "tool.failed", "sleep"); n != 1 {
			t.Errorf("events.jsonl has %d tool.failed for sleep, want 1", n)
		}
	})
}

func countEvents(events []map[string]any, typ, tool string) int {
	n := 0
	for _, ev := range events {
		if ev["type"] == typ && (tool == "" || ev["tool"] == tool) {
			n++
		}
	}
	return n
}

// TestTimeout: limits.call_timeout ends a call that runs past it with an
// isError "timed out" result.
func TestTimeout(t *testing.T) {
	t.Parallel()
	forEachClient(t, func(t *testing.T, c clientCase) {
		e := newEnv(t, set("limits.call_timeout", "300ms"))
		s := e.startFor(t, c)
		cs := s.Connect(t, c.Era, nil)
		start := time.Now()
		res := call(t, cs, "sleep", map[string]any{"ms": 5000})
		took := time.Since(start)
		if !res.IsError || !strings.Contains(textOf(res), "timed out") {
			t.Errorf("isError=%v %q; want isError containing \"timed out\"", res.IsError, textOf(res))
		}
		if took > 3*time.Second {
			t.Errorf("the call took %s; the timeout is 300ms", took)
		}
		s.Stop(t)
		rec := e.Archive(t).toolsByCallID(t)[callIDOf(res)]
		if rec.Status != "timeout" {
			t.Errorf("recorded status %q, want timeout", rec.Status)
		}
	})
}
