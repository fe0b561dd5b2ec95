package upstream

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/toolgate/toolgate/gateway"
)

// Tests against the real @modelcontextprotocol/server-everything (pinned
// in e2e/js/package.json), over stdio and streamable HTTP.

// everything returns node and the server's script, or skips the test (or
// fails it when REQUIRE_MCP_PEERS=1, as CI sets).
func everything(t *testing.T) (node, script string) {
	t.Helper()
	script, _ = filepath.Abs(filepath.Join("..", "..", "e2e", "js", "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js"))
	node, err := exec.LookPath("node")
	missing := ""
	switch {
	case err != nil:
		missing = "node is not installed (not on PATH)"
	default:
		if _, err := os.Stat(script); err != nil {
			missing = fmt.Sprintf("%s is missing (run `npm ci` in e2e/js)", script)
		}
	}
	if missing != "" {
		if os.Getenv("REQUIRE_MCP_PEERS") == "1" {
			t.Fatalf("server-everything tests need a real peer, and REQUIRE_MCP_PEERS=1: %s", missing)
		}
		t.Skipf("skipping server-everything tests: %s (set REQUIRE_MCP_PEERS=1 to make this a failure)", missing)
	}
	return node, script
}

// rawTools lists server-everything's tools with a minimal hand-written
// JSON-RPC client over stdio (no mcp-go), as the reference for fidelity.
func rawTools(t *testing.T, node, script string) []json.RawMessage {
	t.Helper()
	cmd := exec.Command(node, script, "stdio")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
	}()
	timer := time.AfterFunc(20*time.Second, func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
	defer timer.Stop()
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	send := func(s string) { _, _ = io.WriteString(stdin, s+"\n") }
	await := func(id int) json.RawMessage {
		for sc.Scan() {
			var m struct {
				ID     *int            `json:"id"`
				Method string          `json:"method"`
				Result json.RawMessage `json:"result"`
			}
			if json.Unmarshal(sc.Bytes(), &m) == nil && m.ID != nil && *m.ID == id && m.Method == "" {
				return append(json.RawMessage(nil), m.Result...)
			}
		}
		t.Fatalf("no answer to request %d: %v", id, sc.Err())
		return nil
	}
	// The capabilities toolgate declares by default: none (server-everything
	// offers some tools only to clients with sampling or elicitation).
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}`)
	await(1)
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	var tools []json.RawMessage
	cursor := ""
	for id := 2; id < 50; id++ {
		params := `{}`
		if cursor != "" {
			params = fmt.Sprintf(`{"cursor":%q}`, cursor)
		}
		send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/list","params":%s}`, id, params))
		var page struct {
			Tools      []json.RawMessage `json:"tools"`
			NextCursor string            `json:"nextCursor"`
		}
		if err := json.Unmarshal(await(id), &page); err != nil {
			t.Fatal(err)
		}
		tools = append(tools, page.Tools...)
		if cursor = page.NextCursor; cursor == "" {
			return tools
		}
	}
	t.Fatal("tools/list pages do not end")
	return nil
}

// everythingHTTP runs server-everything's streamable HTTP transport on a
// free loopback port and returns its URL.
func everythingHTTP(t *testing.T, node, script string) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	cmd := exec.Command(node, script, "streamableHttp")
	cmd.Env = append(os.Environ(), fmt.Sprintf("PORT=%d", port))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
	})
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	eventually(t, 20*time.Second, "server-everything to listen on "+addr, func() bool {
		c, err := net.DialTimeout("tcp", addr, 100*time.Millisecond)
		if err == nil {
			c.Close()
		}
		return err == nil
	})
	return "http://" + addr + "/mcp"
}

func TestServerEverything(t *testing.T) {
	node, script := everything(t)
	ref := rawTools(t, node, script)
	if len(ref) < 10 {
		t.Fatalf("reference listing has %d tools", len(ref))
	}
	httpURL := everythingHTTP(t, node, script)

	for _, kind := range []string{"stdio", "http"} {
		t.Run(kind, func(t *testing.T) {
			cfg := Config{Name: "ev", Command: node, Args: []string{script, "stdio"}, StartupTimeout: 20 * time.Second}
			if kind == "http" {
				cfg = Config{Name: "ev", URL: httpURL, StartupTimeout: 20 * time.Second}
			}
			u := start(t, cfg, nil, true)
			g := newGW(t, u)
			ctx := context.Background()

			t.Run("schema fidelity", func(t *testing.T) {
				// Tools registered after initialize arrive with a
				// list_changed; wait for the listing to settle.
				eventually(t, 10*time.Second, "all tools", func() bool { return len(toolNames(u))+len(u.Unoffered()) == len(ref) })
				for _, raw := range ref {
					checkFidelity(t, u, raw)
				}
			})

			t.Run("structured content", func(t *testing.T) {
				res := g.call(ctx, "ev__get-structured-content", `{"location":"Chicago"}`)
				mustOK(t, res)
				var sc struct {
					Temperature *float64 `json:"temperature"`
					Conditions  string   `json:"conditions"`
				}
				if err := json.Unmarshal(res.Structured, &sc); err != nil || sc.Temperature == nil || sc.Conditions == "" {
					t.Errorf("structured %s (%v)", res.Structured, err)
				}
				if tl := findTool(u, "ev__get-structured-content"); len(tl.OutputSchema) == 0 {
					t.Error("output schema lost")
				}
			})

			t.Run("image", func(t *testing.T) {
				res := g.call(ctx, "ev__get-tiny-image", `{}`)
				mustOK(t, res)
				var img *gateway.ImagePart
				for _, p := range res.Output {
					if ip, ok := gateway.Typed(p).(gateway.ImagePart); ok {
						img = &ip
					}
				}
				if img == nil || img.MIMEType != "image/png" || !bytes.HasPrefix(img.Data, []byte("\x89PNG")) {
					t.Errorf("no PNG image in %+v", res.Output)
				}
			})

			t.Run("progress", func(t *testing.T) {
				sink := &progressSink{}
				pctx, stop := gateway.WithProgress(ctx, sink)
				res := g.call(pctx, "ev__trigger-long-running-operation", `{"duration":0.6,"steps":3}`)
				stop()
				if out := mustOK(t, res); !strings.Contains(out, "Long running operation completed") {
					t.Errorf("result %q", out)
				}
				got := sink.all()
				if len(got) != 3 || got[0].Progress != 1 || got[2].Progress != 3 || got[2].Total != 3 {
					t.Errorf("progress %+v", got)
				}
			})

			t.Run("task", func(t *testing.T) { testUpstreamTask(t, u) })

			defer func() {
				if kind != "stdio" {
					return
				}
				pid := procOf(u)
				u.Close()
				if m := groupMembers(pid); pid == 0 || len(m) > 0 {
					t.Errorf("after Close, node's process group %d has %v", pid, m)
				}
			}()

			t.Run("environment", func(t *testing.T) {
				if kind != "stdio" {
					t.Skip("the HTTP server's environment is not ours")
				}
				t.Setenv("TG_TEST_GATEWAY_ONLY", "x")
				out := mustOK(t, g.call(ctx, "ev__get-env", `{}`))
				if strings.Contains(out, "TG_TEST_GATEWAY_ONLY") || !strings.Contains(out, "PATH") {
					t.Errorf("child environment: %s", out)
				}
			})
		})
	}

	t.Run("forward roots", func(t *testing.T) {
		log, logs := newLogger()
		cfg := Config{Name: "evr", Command: node, Args: []string{script, "stdio"}, ForwardRoots: true, StartupTimeout: 20 * time.Second}
		var root atomic.Value // the client's root, which it may change
		root.Store("file:///tmp/tg-project")
		u, err := New(cfg, &Options{Logger: log, Roots: func(context.Context) ([]Root, error) {
			return []Root{{URI: root.Load().(string), Name: "project"}}, nil
		}})
		if err != nil {
			t.Fatal(err)
		}
		u.tune = fastTuning()
		defer u.Close()
		u.Start(context.Background())
		if err := u.WaitReady(context.Background()); err != nil {
			t.Fatal(err)
		}
		// get-roots-list exists only for clients with the roots capability.
		eventually(t, 10*time.Second, "get-roots-list", func() bool { return findTool(u, "evr__get-roots-list") != nil })
		g := newGW(t, u)
		if out := mustOK(t, g.call(context.Background(), "evr__get-roots-list", `{}`)); !strings.Contains(out, "file:///tmp/tg-project") {
			t.Errorf("roots: %s", out)
		}
		// The client's roots change (it says so with roots/list_changed):
		// the upstream, which keeps the roots it was given, is told and
		// asks again.
		root.Store("file:///tmp/tg-other")
		u.RootsChanged()
		eventually(t, 10*time.Second, "the changed roots at the upstream", func() bool {
			return strings.Contains(mustOK(t, g.call(context.Background(), "evr__get-roots-list", `{}`)), "file:///tmp/tg-other")
		})
		eventually(t, 10*time.Second, "the upstream's log message", func() bool {
			return strings.Contains(logs.String(), "Roots updated: 1 root(s) received from client")
		})
		// It registered that tool after initialize and said so with
		// tools/list_changed, which made toolgate list again.
		eventually(t, 10*time.Second, "a re-listing after list_changed", func() bool {
			return strings.Contains(logs.String(), `msg="upstream tools re-listed" upstream=evr`)
		})
		// Without forward_roots, the upstream never learns of roots.
		plain := start(t, Config{Name: "evp", Command: node, Args: []string{script, "stdio"}, StartupTimeout: 20 * time.Second}, nil, true)
		time.Sleep(300 * time.Millisecond)
		if findTool(plain, "evp__get-roots-list") != nil {
			t.Error("roots capability declared without forward_roots")
		}
	})
}

// checkFidelity compares one raw tools/list entry with the gateway tool
// built from it: schemas byte-equal, annotations byte-equal once mapped
// back, title, description and _meta unchanged.
func checkFidelity(t *testing.T, u *Upstream, raw json.RawMessage) {
	t.Helper()
	var rt struct {
		Name         string                     `json:"name"`
		Title        string                     `json:"title"`
		Description  string                     `json:"description"`
		InputSchema  json.RawMessage            `json:"inputSchema"`
		OutputSchema json.RawMessage            `json:"outputSchema"`
		Annotations  json.RawMessage            `json:"annotations"`
		Meta         map[string]json.RawMessage `json:"_meta"`
		Execution    struct {
			TaskSupport string `json:"taskSupport"`
		} `json:"execution"`
	}
	if err := json.Unmarshal(raw, &rt); err != nil {
		t.Fatal(err)
	}
	name := mapName(u.Prefix(), rt.Name)
	tl := findTool(u, name)
	if tl == nil {
		t.Errorf("%s (%s) missing; unoffered: %q", rt.Name, name, u.Unoffered()[name])
		return
	}
	// A tool the upstream runs as a task (always or on request) may be
	// called as a task or not: toolgate runs the upstream task itself.
	if want := map[string]string{"optional": "optional", "required": "optional"}[rt.Execution.TaskSupport]; tl.TaskSupport != want {
		t.Errorf("%s: taskSupport %q upstream, %q offered; want %q", rt.Name, rt.Execution.TaskSupport, tl.TaskSupport, want)
	}
	if !bytes.Equal(tl.InputSchema, rt.InputSchema) {
		t.Errorf("%s: inputSchema changed:\n got %s\nwant %s", rt.Name, tl.InputSchema, rt.InputSchema)
	}
	if !bytes.Equal(tl.OutputSchema, rt.OutputSchema) {
		t.Errorf("%s: outputSchema changed:\n got %s\nwant %s", rt.Name, tl.OutputSchema, rt.OutputSchema)
	}
	if tl.Title != rt.Title || tl.Description != rt.Description {
		t.Errorf("%s: title %q description %q", rt.Name, tl.Title, tl.Description)
	}
	var annTitle struct {
		Title string `json:"title"`
	}
	_ = json.Unmarshal(rt.Annotations, &annTitle)
	h := tl.Permissions.Hints
	back, _ := json.Marshal(mcp.ToolAnnotation{Title: annTitle.Title, ReadOnlyHint: h.ReadOnly, DestructiveHint: h.Destructive, IdempotentHint: h.Idempotent, OpenWorldHint: h.OpenWorld})
	if !bytes.Equal(back, rt.Annotations) {
		t.Errorf("%s: annotations %s, upstream sent %s", rt.Name, back, rt.Annotations)
	}
	if len(tl.Meta) != len(rt.Meta) {
		t.Errorf("%s: _meta %v, upstream sent %v", rt.Name, tl.Meta, rt.Meta)
	}
	for k, v := range rt.Meta {
		if !bytes.Equal(tl.Meta[k], v) {
			t.Errorf("%s: _meta[%s] %s, upstream sent %s", rt.Name, k, tl.Meta[k], v)
		}
	}
}

// taskEvents is a recorder that keeps the events of calls.
type taskEvents struct {
	mu     sync.Mutex
	events []map[string]any
}

func (r *taskEvents) CallStarted(*gateway.Call) error                            { return nil }
func (r *taskEvents) CallFinished(*gateway.Call, *gateway.Result, time.Duration) {}
func (r *taskEvents) Event(typ string, fields map[string]any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	fields["type"] = typ
	r.events = append(r.events, fields)
}

func (r *taskEvents) of(typ string) []map[string]any {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []map[string]any
	for _, e := range r.events {
		if e["type"] == typ {
			out = append(out, e)
		}
	}
	return out
}

// testUpstreamTask calls server-everything's simulate-research-query,
// which the upstream runs only as a task (execution.taskSupport:
// required): once as a plain call, which toolgate turns into an upstream
// task and waits for, and once as a caller's task cancelled mid-way,
// which must cancel the upstream task.
func testUpstreamTask(t *testing.T, u *Upstream) {
	tool := findTool(u, "ev__simulate-research-query")
	if tool == nil || tool.TaskSupport != gateway.TaskOptional {
		t.Fatalf("simulate-research-query offered as %+v, want a tool callers may call as a task", tool)
	}
	rec := &taskEvents{}
	cat := gateway.NewCatalog(nil)
	_ = cat.Add(context.Background(), u)
	pipe := gateway.NewPipeline(&gateway.Options{Tools: cat, Recorder: rec, CallTimeout: 30 * time.Second})

	res := pipe.Call(context.Background(), &gateway.Call{Name: "ev__simulate-research-query", Arguments: json.RawMessage(`{"topic":"tides"}`)})
	if out := mustOK(t, res); !strings.Contains(out, "Research Report: tides") {
		t.Fatalf("result %q", out)
	}
	if _, ok := res.Meta[relatedTaskMeta]; ok {
		t.Errorf("result _meta names the upstream's task: %s", res.Meta[relatedTaskMeta])
	}
	created := rec.of("task.upstream.created")
	if len(created) != 1 || created[0]["upstream_task_id"] == "" || len(rec.of("task.upstream.result")) != 1 {
		t.Fatalf("events %v; want the upstream task created and its result taken", rec.events)
	}
	if len(rec.of("task.upstream.status")) == 0 {
		t.Errorf("no task.upstream.status event over a 4-stage task: %v", rec.events)
	}

	// As the caller's task, cancelled while the upstream works on it.
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		for len(rec.of("task.upstream.created")) < 2 {
			time.Sleep(10 * time.Millisecond)
		}
		time.Sleep(500 * time.Millisecond) // into the upstream's second stage
		cancel()
	}()
	res = pipe.Call(ctx, &gateway.Call{Name: "ev__simulate-research-query", Arguments: json.RawMessage(`{"topic":"cancel me"}`), Task: &gateway.CallTask{ID: "t1", TTLMs: 60000}})
	if res.Kind != gateway.KindCancelled {
		t.Fatalf("cancelled task call: %s %s", res.Status(), res.Message)
	}
	// The pipeline answers at the cancellation; the handler cancels the
	// upstream task as it returns.
	eventually(t, 5*time.Second, "task.upstream.cancel", func() bool { return len(rec.of("task.upstream.cancel")) == 1 })
	id := rec.of("task.upstream.cancel")[0]["upstream_task_id"].(string)
	c, _ := u.liveConn()
	eventually(t, 10*time.Second, "the upstream task cancelled", func() bool {
		raw, err := c.request(context.Background(), "tasks/get", map[string]any{"taskId": id})
		var got wireTask
		_ = json.Unmarshal(raw, &got)
		return err == nil && got.Status == "cancelled"
	})
}

// TestUpstreamTaskAsksForInput: server-everything's simulate-research-query
// with an ambiguous topic stops in input_required and asks its client to
// clarify, through tasks/result. With relay_elicitation the question
// reaches the caller's client and its answer the upstream; without it,
// toolgate does not declare elicitation upstream, so the upstream does
// not ask and finishes without a clarification.
func TestUpstreamTaskAsksForInput(t *testing.T) {
	node, script := everything(t)
	for _, relay := range []bool{true, false} {
		t.Run(fmt.Sprintf("relay=%v", relay), func(t *testing.T) {
			t.Parallel()
			u := start(t, Config{Name: "ev", Command: node, Args: []string{script, "stdio"}, StartupTimeout: 20 * time.Second, RelayElicitation: relay}, nil, true)
			g := newGW(t, u)
			cl := &fakeClient{session: "A"}
			res := g.call(gateway.WithClient(context.Background(), cl), "ev__simulate-research-query", `{"topic":"python","ambiguous":true}`)
			out := mustOK(t, res)
			_, asked := cl.got()
			if relay {
				if len(asked) != 1 || !strings.HasPrefix(asked[0], "elicitation/create") || !strings.Contains(asked[0], "multiple interpretations") {
					t.Fatalf("asked the caller %q; want the upstream's elicitation", asked)
				}
				if !strings.Contains(out, "User accepted without selection") {
					t.Errorf("report %q does not use the caller's answer", out)
				}
				return
			}
			if len(asked) != 0 || strings.Contains(out, "Clarification") {
				t.Errorf("without the relay: asked %q, report %q; want no question and no clarification", asked, out)
			}
		})
	}
}
