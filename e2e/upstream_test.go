package e2e

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// End-to-end tests of upstream MCP servers aggregated by toolgate: the
// real @modelcontextprotocol/server-everything (pinned in js/package.json)
// over stdio and streamable HTTP, and toolgate itself as the upstream of
// toolgate ("inner" below; the gateway the client talks to is "outer").

// everythingPolicy allows every tool of the upstream named everything:
// tools without annotations are destructive and open-world, so they need
// destructive.allow (net comes from the upstream's grant).
var everythingPolicy = set("policy.destructive.allow", []string{"everything__*"})

// wireResult finds, in what the server sent, the tools/call result whose
// _meta carries the call id, as raw JSON.
func wireResult(t *testing.T, s *Server, callID string) map[string]json.RawMessage {
	t.Helper()
	for _, m := range s.Wire.Messages() {
		var msg struct {
			Result map[string]json.RawMessage `json:"result"`
		}
		if json.Unmarshal(m, &msg) != nil || msg.Result == nil {
			continue
		}
		var meta map[string]any
		_ = json.Unmarshal(msg.Result["_meta"], &meta)
		if callID != "" && meta["toolgate/call_id"] == callID {
			return msg.Result
		}
	}
	t.Fatalf("no result for call %q on the wire", callID)
	return nil
}

// jsonEqual compares two JSON texts as values (key order aside).
func jsonEqual(a, b []byte) bool {
	if len(a) == 0 || len(b) == 0 {
		return len(a) == len(b)
	}
	var va, vb any
	if json.Unmarshal(a, &va) != nil || json.Unmarshal(b, &vb) != nil {
		return false
	}
	return reflect.DeepEqual(va, vb)
}

// TestUpstreamEverything: server-everything as a stdio upstream (client
// on stdio) and as a streamable HTTP upstream (client on HTTP), on both
// protocol eras: tools/list, echo, structuredContent and image content
// equal to what the upstream itself returns, and progress forwarded with
// the client's own token.
func TestUpstreamEverything(t *testing.T) {
	t.Parallel()
	node, script := everythingPeer(t)
	ref := startRawStdio(t, node, script, "stdio")
	var refNames []string
	for _, raw := range ref.tools() {
		var tl struct {
			Name string `json:"name"`
		}
		_ = json.Unmarshal(raw, &tl)
		refNames = append(refNames, "everything__"+tl.Name)
	}
	refCall := func(name string, args any) map[string]json.RawMessage {
		var r map[string]json.RawMessage
		_ = json.Unmarshal(ref.request("tools/call", map[string]any{"name": name, "arguments": args}), &r)
		return r
	}
	refStructured := refCall("get-structured-content", map[string]any{"location": "Chicago"})
	refImage := refCall("get-tiny-image", map[string]any{})

	for _, up := range []string{"stdio", "http"} {
		for _, era := range []string{era2025, era2026} {
			c := clientCase{Transport: up, Era: era}
			t.Run("upstream-"+up+"/"+era, func(t *testing.T) {
				t.Parallel()
				entry := everythingStdio(t, "everything")
				if up == "http" {
					entry = map[string]any{"name": "everything", "url": startEverythingHTTP(t), "grant": []string{"net"}, "startup_timeout": "20s"}
				}
				e := newEnv(t, upstreams(entry), everythingPolicy)
				s := e.startFor(t, c)
				progress := &lockedSlice[mcp.ProgressNotificationParams]{}
				token := "tok-" + up + "-" + era
				cs := s.Connect(t, era, &ConnectOptions{Client: &mcp.ClientOptions{
					ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
						progress.add(*r.Params)
					},
				}})

				// tools/list
				lt, err := cs.ListTools(callCtx(t), nil)
				if err != nil {
					t.Fatalf("tools/list: %v", err)
				}
				var got []string
				for _, tl := range lt.Tools {
					if strings.HasPrefix(tl.Name, "everything__") {
						got = append(got, tl.Name)
					}
				}
				sort.Strings(got)
				want := slices.Sorted(slices.Values(refNames))
				if !slices.Equal(got, want) {
					t.Errorf("upstream tools listed:\n got %v\nwant %v", got, want)
				}
				if !slices.ContainsFunc(lt.Tools, func(tl *mcp.Tool) bool { return tl.Name == "read_file" }) {
					t.Error("the built-in read_file is not listed next to the upstream's tools")
				}

				// echo
				if r := call(t, cs, "everything__echo", map[string]any{"message": "hi " + era}); r.IsError || textOf(r) != "Echo: hi "+era {
					t.Errorf("everything__echo: isError=%v %q", r.IsError, textOf(r))
				}

				// structuredContent and content, as the upstream sent them.
				r := call(t, cs, "everything__get-structured-content", map[string]any{"location": "Chicago"})
				if r.IsError || r.StructuredContent == nil {
					t.Errorf("get-structured-content: isError=%v structuredContent %s", r.IsError, mustJSON(r.StructuredContent))
				}
				w := wireResult(t, s, callIDOf(r))
				for _, k := range []string{"structuredContent", "content"} {
					if !jsonEqual(w[k], refStructured[k]) {
						t.Errorf("get-structured-content %s through the gateway:\n%s\nfrom the upstream:\n%s", k, w[k], refStructured[k])
					}
				}

				// image
				r = call(t, cs, "everything__get-tiny-image", map[string]any{})
				w = wireResult(t, s, callIDOf(r))
				if !jsonEqual(w["content"], refImage["content"]) {
					t.Errorf("get-tiny-image content through the gateway:\n%s\nfrom the upstream:\n%s", tail(string(w["content"]), 500), tail(string(refImage["content"]), 500))
				}
				var img *mcp.ImageContent
				for _, ct := range r.Content {
					if ic, ok := ct.(*mcp.ImageContent); ok {
						img = ic
					}
				}
				var refBlocks []struct {
					Type string `json:"type"`
					Data string `json:"data"`
				}
				_ = json.Unmarshal(refImage["content"], &refBlocks)
				var refData []byte
				for _, b := range refBlocks {
					if b.Type == "image" {
						refData, _ = base64.StdEncoding.DecodeString(b.Data)
					}
				}
				if img == nil || img.MIMEType != "image/png" || len(refData) == 0 || !bytes.Equal(img.Data, refData) {
					t.Errorf("get-tiny-image: image %v; want image/png with the upstream's %d bytes", img != nil, len(refData))
				}

				// progress with the client's token
				params := &mcp.CallToolParams{Name: "everything__trigger-long-running-operation", Arguments: map[string]any{"duration": 0.8, "steps": 4}}
				params.SetProgressToken(token)
				res, err := cs.CallTool(callCtx(t), params)
				if err != nil || res.IsError || !strings.Contains(textOf(res), "Long running operation completed") {
					t.Fatalf("trigger-long-running-operation: %v %s", err, mustJSON(res))
				}
				waitFor(2*time.Second, func() bool { return len(progress.get()) >= 4 })
				var values []float64
				for _, p := range progress.get() {
					if p.ProgressToken != token {
						t.Errorf("progress with token %v, want the client's %q", p.ProgressToken, token)
						continue
					}
					if p.Total != 4 {
						t.Errorf("progress total %v, want 4", p.Total)
					}
					values = append(values, p.Progress)
				}
				if !slices.Equal(values, []float64{1, 2, 3, 4}) {
					t.Errorf("progress seen by the client: %v, want [1 2 3 4]", values)
				}
				s.Stop(t)
			})
		}
	}
}

// TestUpstreamSchemaFidelity: server-everything's own tools/list (read
// with a raw JSON-RPC client) against the gateway's tools/list as bytes on
// the wire (stdio): every tool named everything__<name>, and inputSchema,
// outputSchema, annotations, title, description and _meta equal as JSON
// values (the gateway may add toolgate/* keys to _meta). Byte differences
// (key order) are reported as a log line, not a failure.
func TestUpstreamSchemaFidelity(t *testing.T) {
	t.Parallel()
	node, script := everythingPeer(t)
	refTools := startRawStdio(t, node, script, "stdio").tools()

	e := newEnv(t, upstreams(everythingStdio(t, "everything")), everythingPolicy)
	s := e.StartStdio(t)
	cs := s.Connect(t, era2025, nil)
	lt, err := cs.ListTools(callCtx(t), nil)
	if err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	if lt.NextCursor != "" {
		t.Fatalf("tools/list is paginated (nextCursor %q); this test reads one page", lt.NextCursor)
	}
	gw := map[string]map[string]json.RawMessage{}
	for _, m := range s.Wire.Messages() {
		var msg struct {
			Result struct {
				Tools []map[string]json.RawMessage `json:"tools"`
			} `json:"result"`
		}
		if json.Unmarshal(m, &msg) != nil {
			continue
		}
		for _, tl := range msg.Result.Tools {
			var name string
			_ = json.Unmarshal(tl["name"], &name)
			gw[name] = tl
		}
	}
	if len(gw) == 0 {
		t.Fatal("no tools/list result on the wire")
	}
	byteDiffs := 0
	for _, raw := range refTools {
		var ref map[string]json.RawMessage
		if err := json.Unmarshal(raw, &ref); err != nil {
			t.Fatal(err)
		}
		var name string
		_ = json.Unmarshal(ref["name"], &name)
		var exec struct {
			TaskSupport string `json:"taskSupport"`
		}
		_ = json.Unmarshal(ref["execution"], &exec)
		g, ok := gw["everything__"+name]
		if !ok {
			t.Errorf("upstream tool %s is not listed as everything__%s", name, name)
			continue
		}
		// toolgate runs an upstream task itself for a caller that does not
		// ask for one, so every task tool is optional to callers.
		var gexec struct {
			TaskSupport string `json:"taskSupport"`
		}
		_ = json.Unmarshal(g["execution"], &gexec)
		if want := map[string]string{"optional": "optional", "required": "optional"}[exec.TaskSupport]; gexec.TaskSupport != want {
			t.Errorf("%s: execution.taskSupport %q upstream, %q offered, want %q", name, exec.TaskSupport, gexec.TaskSupport, want)
		}
		for _, k := range []string{"inputSchema", "outputSchema", "annotations", "title", "description"} {
			if !jsonEqual(g[k], ref[k]) {
				t.Errorf("%s: %s differs\n gateway:  %s\n upstream: %s", name, k, g[k], ref[k])
			} else if !bytes.Equal(g[k], ref[k]) {
				byteDiffs++
			}
		}
		var gm, rm map[string]json.RawMessage
		_ = json.Unmarshal(g["_meta"], &gm)
		_ = json.Unmarshal(ref["_meta"], &rm)
		for k, v := range rm {
			if !jsonEqual(gm[k], v) {
				t.Errorf("%s: _meta[%q] = %s, upstream sent %s", name, k, gm[k], v)
			}
		}
		for k := range gm {
			if _, ok := rm[k]; !ok && !strings.HasPrefix(k, "toolgate/") {
				t.Errorf("%s: _meta[%q] added by the gateway, not in the toolgate/ namespace", name, k)
			}
		}
	}
	t.Logf("compared %d upstream tools as decoded JSON values; %d fields equal as values but not byte for byte", len(refTools), byteDiffs)
	s.Stop(t)
}

// TestUpstreamCancellation: toolgate behind toolgate; a 60 s inner sleep
// cancelled by the client is recorded as cancelled in the INNER run
// archive within a few seconds.
func TestUpstreamCancellation(t *testing.T) {
	t.Parallel()
	inner, entry := innerEnv(t, "inner")
	e := newEnv(t, upstreams(entry))
	s := e.StartHTTP(t)
	cs := s.Connect(t, era2025, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errc := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "inner__sleep", Arguments: map[string]any{"ms": 60000, "steps": 600}})
		errc <- err
	}()
	if !waitFor(10*time.Second, func() bool { return countEvents(inner.liveEvents(t), "tool.started", "sleep") == 1 }) {
		t.Fatal("the inner sleep did not start within 10s")
	}
	cancel()
	cancelled := time.Now()
	select {
	case err := <-errc:
		if err == nil {
			t.Error("the cancelled call returned no error")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("CallTool did not return after its context was cancelled")
	}
	rec := awaitRecord(5*time.Second, func() []ToolRecord { return inner.liveTools(t) }, "sleep")
	if rec == nil {
		t.Fatal("the inner toolgate did not record the sleep call within 5s of the cancellation")
	}
	if rec.Status != "cancelled" {
		t.Errorf("inner record status %q, want cancelled", rec.Status)
	}
	t.Logf("inner recorded %s %s after the client cancelled", rec.Status, time.Since(cancelled).Round(time.Millisecond))
	// The gateway and the upstream keep serving.
	if r := call(t, s.Connect(t, era2025, nil), "inner__echo", map[string]any{"text": "after"}); r.IsError || textOf(r) != "after" {
		t.Errorf("inner__echo after the cancellation: %s", mustJSON(r))
	}
	s.Stop(t)
	for _, r := range e.Archive(t).Tools {
		if r.Tool == "inner__sleep" && r.Status != "cancelled" {
			t.Errorf("outer record status %q, want cancelled", r.Status)
		}
	}
}

// TestUpstreamToolgateDisplay: toolgate behind toolgate keeps the inner's
// display blocks (write_file's diff, equal to what the inner gives its own
// caller) and its error kinds and messages.
func TestUpstreamToolgateDisplay(t *testing.T) {
	t.Parallel()
	inner, entry := innerEnv(t, "inner")
	e := newEnv(t, upstreams(entry))

	// The reference: the same write on a toolgate of its own (same config
	// shape, empty sandbox), through the CLI.
	refEnv := newEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	args := `{"path":"notes/a.txt","content":"one\ntwo\n"}`
	out, err := refEnv.command(ctx, "call", "write_file", args, "--json").Output()
	if err != nil {
		t.Fatalf("toolgate call write_file: %v\n%s", err, out)
	}
	var refRes struct {
		Meta map[string]json.RawMessage `json:"_meta"`
	}
	if err := json.Unmarshal(out, &refRes); err != nil {
		t.Fatal(err)
	}
	refDiff := diffBlock(t, refRes.Meta["toolgate/display"])

	s := e.StartStdio(t)
	cs := s.Connect(t, era2025, nil)
	var a map[string]any
	_ = json.Unmarshal([]byte(args), &a)
	w := call(t, cs, "inner__write_file", a)
	if w.IsError {
		t.Fatalf("inner__write_file: %s", textOf(w))
	}
	if b, err := os.ReadFile(filepath.Join(inner.Sandbox, "notes", "a.txt")); err != nil || string(b) != "one\ntwo\n" {
		t.Errorf("the inner's file: %q %v", b, err)
	}
	raw := wireResult(t, s, callIDOf(w))
	var meta map[string]json.RawMessage
	_ = json.Unmarshal(raw["_meta"], &meta)
	if got := diffBlock(t, meta["toolgate/display"]); !jsonEqual(got, refDiff) {
		t.Errorf("the diff block through the outer gateway:\n%s\nthe inner's own:\n%s", got, refDiff)
	}

	// An error made by the inner: its kind and message come back as the
	// inner gives them to its own caller.
	refOut, _ := refEnv.command(ctx, "call", "read_file", `{"path":"../../etc/passwd"}`, "--json").Output()
	var refErr struct {
		IsError bool           `json:"isError"`
		Meta    map[string]any `json:"_meta"`
	}
	if err := json.Unmarshal(refOut, &refErr); err != nil || !refErr.IsError {
		t.Fatalf("reference read_file outside the sandbox: %s (%v)", refOut, err)
	}
	res := call(t, cs, "inner__read_file", map[string]any{"path": "../../etc/passwd"})
	if !res.IsError || !strings.Contains(textOf(res), "outside the sandbox") {
		t.Errorf("inner__read_file outside the sandbox: isError=%v %q; want isError with the inner's message", res.IsError, textOf(res))
	}
	if res.Meta["toolgate/kind"] != refErr.Meta["toolgate/kind"] {
		t.Errorf("inner__read_file outside the sandbox: toolgate/kind %v, the inner's own %v", res.Meta["toolgate/kind"], refErr.Meta["toolgate/kind"])
	}
	// The messages name each one's sandbox; the rest is the same.
	refMsg, _ := refErr.Meta["toolgate/message"].(string)
	refMsg = strings.ReplaceAll(refMsg, refEnv.Sandbox, inner.Sandbox)
	if msg, _ := res.Meta["toolgate/message"].(string); msg != refMsg || !strings.Contains(textOf(res), refMsg) {
		t.Errorf("inner__read_file outside the sandbox: message %q (text %q), the inner's own %q", msg, textOf(res), refMsg)
	}
	// Arguments against the inner's schema: read_file limit 5000.
	res = call(t, cs, "inner__read_file", map[string]any{"path": "notes/a.txt", "limit": 5000})
	if !res.IsError || !strings.Contains(textOf(res), "at '/limit': maximum 2000, got 5000") {
		t.Errorf("inner__read_file limit 5000: isError=%v %q", res.IsError, textOf(res))
	}
	if k, _ := res.Meta["toolgate/kind"].(string); k != "invalid_arguments" {
		t.Errorf("inner__read_file limit 5000: toolgate/kind %q, want invalid_arguments", k)
	}
	s.Stop(t)
	// Which side refused what, from the inner's archive.
	var innerStatuses []string
	for _, r := range inner.Archive(t).Tools {
		if r.Tool == "read_file" {
			innerStatuses = append(innerStatuses, r.Status)
		}
	}
	t.Logf("inner records for read_file: %v", innerStatuses)
}

// diffBlock returns the single diff block of a toolgate/display value.
func diffBlock(t *testing.T, display json.RawMessage) json.RawMessage {
	t.Helper()
	var blocks []json.RawMessage
	_ = json.Unmarshal(display, &blocks)
	var diffs []json.RawMessage
	for _, b := range blocks {
		var typ struct {
			Type string `json:"type"`
		}
		_ = json.Unmarshal(b, &typ)
		if typ.Type == "diff" {
			diffs = append(diffs, b)
		}
	}
	if len(diffs) != 1 {
		t.Fatalf("toolgate/display %s: %d diff blocks, want 1", display, len(diffs))
	}
	return diffs[0]
}

// TestUpstreamListChanged: an upstream that adds tools while a client is
// connected. server-everything registers its late tools during initialize
// (before toolgate's first listing), so its list_changed changes nothing;
// instead the upstream is an inner toolgate whose own upstream
// (server-everything behind a shell gate) fails until the test opens the
// gate. The inner then gains ev__* tools and sends tools/list_changed; the
// outer re-lists and tells its client, which sees inner__ev__echo.
func TestUpstreamListChanged(t *testing.T) {
	t.Parallel()
	node, script := everythingPeer(t)
	for _, c := range []clientCase{{"stdio", era2025}, {"http", era2025}, {"http", era2026}} {
		t.Run(c.String(), func(t *testing.T) {
			t.Parallel()
			gate := filepath.Join(t.TempDir(), "open")
			gated := map[string]any{
				"name": "ev", "command": "/bin/sh", "startup_timeout": "20s",
				"args": []string{"-c", `if [ -e "$1" ]; then exec "$2" "$3" stdio; fi; echo "gate closed" >&2; exit 3`, "gate", gate, node, script},
			}
			_, entry := innerEnv(t, "inner", upstreams(gated))
			e := newEnv(t, upstreams(entry))
			s := e.startFor(t, c)
			changed := make(chan struct{}, 16)
			cs := s.Connect(t, c.Era, &ConnectOptions{Client: &mcp.ClientOptions{
				ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
					select {
					case changed <- struct{}{}:
					default:
					}
				},
			}})
			has := func(name string) bool {
				lt, err := cs.ListTools(callCtx(t), nil)
				if err != nil {
					t.Fatalf("tools/list: %v", err)
				}
				return slices.ContainsFunc(lt.Tools, func(tl *mcp.Tool) bool { return tl.Name == name })
			}
			if !has("inner__echo") || has("inner__ev__echo") {
				t.Fatalf("before the gate opens: want inner__echo and no inner__ev__echo")
			}
			if err := os.WriteFile(gate, nil, 0o644); err != nil {
				t.Fatal(err)
			}
			opened := time.Now()
			select {
			case <-changed:
				t.Logf("notifications/tools/list_changed %s after the gate opened", time.Since(opened).Round(time.Millisecond))
			case <-time.After(15 * time.Second):
				t.Fatal("no notifications/tools/list_changed within 15s of the upstream adding tools")
			}
			if !waitFor(5*time.Second, func() bool { return has("inner__ev__echo") }) {
				t.Fatal("inner__ev__echo is not in tools/list after list_changed")
			}
			// The outer re-listed on the inner's list_changed (its connection
			// to the inner never dropped).
			if !strings.Contains(s.Stderr(), `msg="upstream tools re-listed"`) || strings.Contains(s.Stderr(), "upstream connection lost") {
				t.Errorf("the outer did not re-list its upstream on list_changed:\n%s", tail(s.Stderr(), 3000))
			}
			if r := call(t, cs, "inner__ev__echo", map[string]any{"message": "deep"}); r.IsError || textOf(r) != "Echo: deep" {
				t.Errorf("inner__ev__echo: isError=%v %q", r.IsError, textOf(r))
			}
			s.Stop(t)
		})
	}
}

// TestUpstreamKilledMidCall: the inner toolgate is killed (SIGKILL) during
// a 10 s call: the call returns promptly as an isError result, the outer
// keeps serving, /healthz shows the upstream reconnect, and a later call to
// the inner succeeds.
func TestUpstreamKilledMidCall(t *testing.T) {
	t.Parallel()
	inner, entry := innerEnv(t, "inner")
	e := newEnv(t, upstreams(entry))
	s := e.StartHTTP(t)
	cs := s.Connect(t, era2025, nil)
	type outcome struct {
		res *mcp.CallToolResult
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "inner__sleep", Arguments: map[string]any{"ms": 10000}})
		done <- outcome{res, err}
	}()
	if !waitFor(10*time.Second, func() bool { return countEvents(inner.liveEvents(t), "tool.started", "sleep") == 1 }) {
		t.Fatal("the inner sleep did not start")
	}
	pid := inner.runPID(t)
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatalf("kill -9 %d: %v", pid, err)
	}
	killed := time.Now()
	select {
	case o := <-done:
		took := time.Since(killed)
		if o.err != nil {
			t.Fatalf("the call failed with a protocol error after %s: %v; want an isError result", took, o.err)
		}
		if !o.res.IsError || !strings.Contains(textOf(o.res), "unavailable") || o.res.Meta["toolgate/kind"] != "unavailable" {
			t.Errorf("result after the kill: %s; want an isError unavailable result", mustJSON(o.res))
		}
		t.Logf("the call returned %s after the kill: %q (kind %v)", took.Round(time.Millisecond), textOf(o.res), o.res.Meta["toolgate/kind"])
		if took > 3*time.Second {
			t.Errorf("the call took %s to return after the upstream died", took)
		}
	case <-time.After(8 * time.Second):
		t.Fatal("the call did not return within 8s of the upstream being killed")
	}
	// The gateway keeps serving.
	if r := call(t, cs, "echo", map[string]any{"text": "alive"}); r.IsError || textOf(r) != "alive" {
		t.Errorf("built-in echo after the upstream died: %s", mustJSON(r))
	}
	// The upstream reconnects: a new inner run, and /healthz says ready
	// with one restart.
	var ts toolsetHealth
	if !waitFor(15*time.Second, func() bool {
		ts = s.healthToolsets(t)["inner"]
		return ts.Status.State == "ready" && strings.Contains(ts.Status.Detail, "restarts 1") && len(inner.runDirs()) == 2
	}) {
		t.Fatalf("the upstream did not reconnect within 15s: /healthz %s, %d inner runs", mustJSON(ts), len(inner.runDirs()))
	}
	if r := call(t, cs, "inner__echo", map[string]any{"text": "back"}); r.IsError || textOf(r) != "back" {
		t.Errorf("inner__echo after the reconnection: %s", mustJSON(r))
	}
	s.Stop(t)
}

// TestUpstreamHangs: a per-upstream call_timeout of 500ms ends a 5 s inner
// sleep with a "timed out" isError result.
func TestUpstreamHangs(t *testing.T) {
	t.Parallel()
	_, entry := innerEnv(t, "inner")
	entry["call_timeout"] = "500ms"
	e := newEnv(t, upstreams(entry))
	s := e.StartStdio(t)
	cs := s.Connect(t, era2025, nil)
	start := time.Now()
	res := call(t, cs, "inner__sleep", map[string]any{"ms": 5000})
	took := time.Since(start)
	if !res.IsError || !strings.Contains(textOf(res), "timed out") {
		t.Errorf("isError=%v %q; want isError containing \"timed out\"", res.IsError, textOf(res))
	}
	if took > 3*time.Second {
		t.Errorf("the call took %s; the upstream's call_timeout is 500ms", took)
	}
	// The built-in sleep keeps the global call_timeout (60s).
	if r := call(t, cs, "sleep", map[string]any{"ms": 800}); r.IsError {
		t.Errorf("built-in sleep 800ms: %s", textOf(r))
	}
	s.Stop(t)
	rec := e.Archive(t).toolsByCallID(t)[callIDOf(res)]
	if rec.Status != "timeout" {
		t.Errorf("recorded status %q, want timeout", rec.Status)
	}
}

// TestUpstreamNeverStarts: an upstream whose command does not exist and
// one that never answers initialize: the gateway starts anyway (within the
// startup_timeout), serves the built-in tools and a healthy upstream, and
// /healthz and `toolgate tools` show both as failed with the error.
func TestUpstreamNeverStarts(t *testing.T) {
	t.Parallel()
	e := newEnv(t, upstreams(
		map[string]any{"name": "broken", "command": "/nonexistent/mcp-server", "startup_timeout": "5s"},
		map[string]any{"name": "mute", "command": "/bin/sleep", "args": []string{"30"}, "startup_timeout": "1500ms"},
		everythingStdio(t, "everything"),
	), everythingPolicy)
	start := time.Now()
	s := e.StartHTTP(t)
	took := time.Since(start)
	t.Logf("serving %s after start", took.Round(time.Millisecond))
	if took > 10*time.Second {
		t.Errorf("the gateway took %s to serve; the failing upstreams' startup_timeouts are 5s and 1.5s", took)
	}
	cs := s.Connect(t, era2026, nil)
	if r := call(t, cs, "echo", map[string]any{"text": "up"}); r.IsError || textOf(r) != "up" {
		t.Errorf("built-in echo: %s", mustJSON(r))
	}
	if r := call(t, cs, "everything__echo", map[string]any{"message": "up"}); r.IsError || textOf(r) != "Echo: up" {
		t.Errorf("everything__echo: %s", mustJSON(r))
	}
	lt, err := cs.ListTools(callCtx(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range lt.Tools {
		if strings.HasPrefix(tl.Name, "broken__") || strings.HasPrefix(tl.Name, "mute__") {
			t.Errorf("a tool of a failed upstream is listed: %s", tl.Name)
		}
	}
	h := s.healthToolsets(t)
	if b := h["broken"]; b.Status.State != "failed" || !strings.Contains(b.Status.Detail, "/nonexistent/mcp-server") && !strings.Contains(b.Status.Detail, "no such file") {
		t.Errorf("/healthz broken: %s; want failed with the error", mustJSON(b))
	}
	if m := h["mute"]; m.Status.State != "failed" || !strings.Contains(m.Status.Detail, "timed out") {
		t.Errorf("/healthz mute: %s; want failed, startup timed out", mustJSON(m))
	}
	if ev := h["everything"]; ev.Status.State != "ready" || ev.Tools == 0 {
		t.Errorf("/healthz everything: %s; want ready", mustJSON(ev))
	}
	t.Logf("/healthz broken: %s", mustJSON(h["broken"]))
	s.Stop(t)

	// `toolgate tools` says the same.
	out := runTools(t, e)
	for _, want := range []string{"toolset broken: failed", "everything__echo"} {
		if !strings.Contains(out, want) {
			t.Errorf("`toolgate tools` lacks %q:\n%s", want, out)
		}
	}
	if !strings.Contains(out, "/nonexistent/mcp-server") || !strings.Contains(out, "no such file") {
		t.Errorf("`toolgate tools` does not say why broken failed:\n%s", out)
	}

	// An upstream that never answers initialize has failed once its
	// startup_timeout is over, which is when `toolgate tools` stops
	// waiting for it: it must not be shown as still starting.
	mute := newEnv(t, upstreams(map[string]any{"name": "mute", "command": "/bin/sleep", "args": []string{"30"}, "startup_timeout": "500ms"}))
	for i := range 3 {
		out := runTools(t, mute)
		if !strings.Contains(out, "toolset mute: failed") || !strings.Contains(out, "timed out") {
			t.Errorf("`toolgate tools` run %d, upstream whose startup timed out: %q; want \"toolset mute: failed ... timed out\"", i+1, lastLine(out))
			break
		}
	}
}

// runTools runs `toolgate tools` with the env's config.
func runTools(t *testing.T, e *Env) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := e.command(ctx, "tools")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("toolgate tools: %v\n%s", err, stderr.String())
	}
	return string(out)
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// TestUpstreamNoLeftoverProcesses: server-everything started through a
// shell wrapper (sh → node, a grandchild of the gateway): after SIGTERM to
// the gateway no process carrying the test's marker (in its arguments and
// environment) remains.
func TestUpstreamNoLeftoverProcesses(t *testing.T) {
	t.Parallel()
	node, script := everythingPeer(t)
	marker := fmt.Sprintf("tg-e2e-leak-%d-%d", os.Getpid(), time.Now().UnixNano())
	e := newEnv(t, upstreams(map[string]any{
		"name": "everything", "command": "/bin/sh",
		// "; exit $?" keeps sh from exec'ing node: node stays a grandchild.
		"args":            []string{"-c", `"$1" "$2" stdio "$3"; exit $?`, marker, node, script, marker},
		"env":             map[string]string{"TG_E2E_MARKER": marker},
		"startup_timeout": "20s",
	}), everythingPolicy)
	s := e.StartStdio(t)
	killAtCleanup(t, marker) // whatever happens, kill what is left
	cs := s.Connect(t, era2025, nil)
	if r := call(t, cs, "everything__echo", map[string]any{"message": "x"}); r.IsError {
		t.Fatalf("everything__echo: %s", textOf(r))
	}
	before := procsWith(marker)
	if len(before) < 2 {
		t.Fatalf("processes with the marker while serving: %v; want sh and node", before)
	}
	s.Stop(t)
	var left []string
	if !waitFor(5*time.Second, func() bool { left = procsWith(marker); return len(left) == 0 }) {
		t.Errorf("5s after the gateway exited, these processes remain: %v (running before: %v)", left, before)
	}
}

// TestUpstreamCLI: `toolgate call everything__echo` and `toolgate tools
// --json` with a configured upstream.
func TestUpstreamCLI(t *testing.T) {
	t.Parallel()
	e := newEnv(t, upstreams(everythingStdio(t, "everything")), everythingPolicy)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := e.command(ctx, "call", "everything__echo", `{"message":"hi"}`)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("toolgate call everything__echo: %v\nstdout:\n%s\nstderr:\n%s", err, out, stderr.String())
	}
	if !strings.Contains(string(out), "Echo: hi") {
		t.Errorf("toolgate call everything__echo printed:\n%s", out)
	}

	tools := e.toolsJSON(t)
	n := 0
	for name, ti := range tools {
		if !strings.HasPrefix(name, "everything__") {
			continue
		}
		n++
		if ti.Toolset != "everything" {
			t.Errorf("%s: toolset %q", name, ti.Toolset)
		}
		if allow, _ := ti.Decision["allow"].(bool); !allow {
			t.Errorf("%s: decision %s; want allow", name, mustJSON(ti.Decision))
		}
		if len(ti.InputSchema) == 0 {
			t.Errorf("%s: no input_schema", name)
		}
	}
	if n < 10 {
		t.Errorf("`toolgate tools --json` lists %d everything__ tools, want the upstream's", n)
	}
	if ti, ok := tools["everything__echo"]; !ok || !ti.hint("readonly") {
		t.Errorf("everything__echo: %+v; want listed, read-only as the upstream annotates it", ti)
	}
	// trust_annotations: false makes every tool of the upstream destructive
	// and open-world (as if it had no annotations): granted net but without
	// policy.destructive.allow, each one is denied, and a call is refused.
	untrusted := everythingStdio(t, "everything")
	untrusted["trust_annotations"] = false
	e2 := newEnv(t, upstreams(untrusted))
	n = 0
	for name, ti := range e2.toolsJSON(t) {
		if !strings.HasPrefix(name, "everything__") {
			continue
		}
		n++
		if allow, _ := ti.Decision["allow"].(bool); allow || !ti.hint("destructive") || !ti.hint("openworld") {
			t.Errorf("%s with trust_annotations false: hints %v decision %s; want destructive, open-world and denied", name, ti.Hints, mustJSON(ti.Decision))
		}
	}
	if n == 0 {
		t.Error("trust_annotations false: no everything__ tools listed")
	}
	cmd = e2.command(ctx, "call", "everything__echo", `{"message":"hi"}`)
	out, err = cmd.Output()
	if code := cmd.ProcessState.ExitCode(); code != 1 || strings.Contains(string(out), "Echo: hi") || !strings.Contains(string(out), "destructive") {
		t.Errorf("toolgate call of a denied upstream tool: exit %d (%v), output:\n%s\nwant exit 1 and a refusal naming the destructive policy", code, err, out)
	}
}

// An upstream with forward_roots gets the roots of a client that connects
// after it started. The reference filesystem server asks for roots once,
// when it starts (toolgate has no client then, and says so), and again only
// when told the roots changed; until then it keeps the directories of its
// command line. toolgate tells it when a client that declared roots can be
// asked: over stdio once the client is initialized, over streamable HTTP
// once it opened its GET stream. The client sends no roots/list_changed.
func TestForwardRootsReachAnUpstreamStartedBeforeTheClient(t *testing.T) {
	t.Parallel()
	requirePeers(t)
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(jsDir, "node_modules", "@modelcontextprotocol", "server-filesystem", "dist", "index.js")
	for _, transport := range []string{"stdio", "http"} {
		t.Run(transport, func(t *testing.T) {
			t.Parallel()
			started, client := t.TempDir(), t.TempDir() // its command line's directory; the client's root
			e := newEnv(t, upstreams(map[string]any{
				"name": "fs", "command": node, "args": []string{script, started},
				"forward_roots": true, "startup_timeout": "20s",
			}))
			var s *Server
			if transport == "stdio" {
				s = e.StartStdio(t)
			} else {
				s = e.StartHTTP(t)
			}
			// The client connects after the upstream has asked and been
			// told there is no client (its stderr, in toolgate's log).
			if !waitFor(30*time.Second, func() bool { return strings.Contains(s.Stderr(), "Failed to request initial roots from client") }) {
				t.Fatalf("the upstream did not ask for roots at its start:\n%s", tail(s.Stderr(), 3000))
			}
			//lint:ignore SA1019 roots are deprecated in 2026-07-28 (SEP-2577) but still in it, and forwarded to 2025-11-25 upstreams
			cs := s.Connect(t, era2025, &ConnectOptions{Roots: []*mcp.Root{{URI: "file://" + client, Name: "project"}}})
			var last string
			if !waitFor(30*time.Second, func() bool {
				res, err := cs.CallTool(callCtx(t), &mcp.CallToolParams{Name: "fs__list_allowed_directories", Arguments: map[string]any{}})
				if err != nil {
					last = err.Error()
					return false
				}
				last = textOf(res)
				return strings.Contains(last, client) && !strings.Contains(last, started)
			}) {
				t.Fatalf("the upstream never took the client's root %s for its own %s; list_allowed_directories said: %s", client, started, last)
			}
		})
	}
}
