package discovery

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolgate/toolgate/gateway"
)

// taskFixture: the discovery toolset beside "only" (task support
// required: it answers with the id of the task it runs under) and "plain"
// (no task support), served over stdio in process.
type taskFixture struct {
	p   *gateway.Pipeline
	ran atomic.Int64 // calls of only's handler
	// release ends a call of "holds" (a task-only tool that runs until
	// released).
	release chan struct{}
	rec     *taskRecords

	mu      sync.Mutex
	enc     *json.Encoder
	waiting map[int64]chan map[string]any
	id      atomic.Int64
}

// newTaskFixture serves only, holds and plain, and call_tool; maxTasks
// bounds the tasks running at once (0: the default).
func newTaskFixture(t *testing.T, maxTasks int) *taskFixture {
	t.Helper()
	f := &taskFixture{waiting: map[int64]chan map[string]any{}, release: make(chan struct{})}
	obj := json.RawMessage(`{"type":"object"}`)
	only, err := gateway.NewTool(gateway.ToolDef{Name: "only", InputSchema: obj, TaskSupport: gateway.TaskRequired,
		Permissions: gateway.Permissions{Hints: gateway.ReadOnlyHints()}},
		func(ctx context.Context, call *gateway.Call) (*gateway.Result, error) {
			f.ran.Add(1)
			if call.Task == nil {
				return gateway.OkText("ran without a task"), nil
			}
			return gateway.OkText("ran as task " + call.Task.ID), nil
		})
	if err != nil {
		t.Fatal(err)
	}
	plain, err := gateway.NewTool(gateway.ToolDef{Name: "plain", InputSchema: obj, Permissions: gateway.Permissions{Hints: gateway.ReadOnlyHints()}},
		func(ctx context.Context, call *gateway.Call) (*gateway.Result, error) {
			return gateway.OkText("plain"), nil
		})
	if err != nil {
		t.Fatal(err)
	}
	holds, err := gateway.NewTool(gateway.ToolDef{Name: "holds", InputSchema: obj, TaskSupport: gateway.TaskRequired,
		Permissions: gateway.Permissions{Hints: gateway.ReadOnlyHints()}},
		func(ctx context.Context, call *gateway.Call) (*gateway.Result, error) {
			select {
			case <-f.release:
				return gateway.OkText("released"), nil
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		})
	if err != nil {
		t.Fatal(err)
	}
	// Decides itself, as an upstream of the tasks extension does: makes
	// its call a task.
	decides, err := gateway.NewTool(gateway.ToolDef{Name: "decides", InputSchema: obj, TaskSupport: gateway.TaskOptional, TaskDirected: true,
		Permissions: gateway.Permissions{Hints: gateway.ReadOnlyHints()}},
		func(ctx context.Context, call *gateway.Call) (*gateway.Result, error) {
			if !gateway.BecomeTask(ctx) {
				return gateway.OkText("stayed plain"), nil
			}
			return gateway.OkText("became a task"), nil
		})
	if err != nil {
		t.Fatal(err)
	}
	cat := catalogOf(t, "t", only, holds, decides, plain)
	d := addSearch(t, cat, Options{Mode: ModeSearch})
	f.rec = &taskRecords{tasks: map[string]string{}}
	f.p = gateway.NewPipeline(&gateway.Options{Tools: cat, CallTimeout: 20 * time.Second, Recorder: f.rec})
	d.Bind(f.p)
	m := gateway.NewMCPServer(&gateway.MCPOptions{Name: "t", Version: "1", Catalog: cat, Pipeline: f.p, MaxTasks: maxTasks})

	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = m.ServeStdio(ctx, inR, outW)
	}()
	t.Cleanup(func() {
		cancel()
		inW.Close()
		outW.Close()
		<-served
	})
	f.enc = json.NewEncoder(inW)
	go func() {
		sc := bufio.NewScanner(outR)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			var msg map[string]any
			if json.Unmarshal(sc.Bytes(), &msg) != nil {
				continue
			}
			id, ok := msg["id"].(float64)
			if !ok {
				continue // a notification
			}
			f.mu.Lock()
			ch := f.waiting[int64(id)]
			delete(f.waiting, int64(id))
			f.mu.Unlock()
			if ch != nil {
				ch <- msg
			}
		}
	}()
	return f
}

// send sends a request and returns its result, or its error.
func (f *taskFixture) send(t *testing.T, method string, params map[string]any) (map[string]any, map[string]any) {
	t.Helper()
	id := f.id.Add(1)
	ch := make(chan map[string]any, 1)
	f.mu.Lock()
	f.waiting[id] = ch
	err := f.enc.Encode(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	f.mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	select {
	case msg := <-ch:
		res, _ := msg["result"].(map[string]any)
		rpcErr, _ := msg["error"].(map[string]any)
		return res, rpcErr
	case <-time.After(30 * time.Second):
		t.Fatalf("%s: no answer", method)
		return nil, nil
	}
}

// send2026 sends a 2026-07-28 request, its caller declaring caps.
func (f *taskFixture) send2026(t *testing.T, method string, params map[string]any, caps string) (map[string]any, map[string]any) {
	t.Helper()
	params["_meta"] = map[string]any{
		"io.modelcontextprotocol/protocolVersion":    "2026-07-28",
		"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "test", "version": "1"},
		"io.modelcontextprotocol/clientCapabilities": json.RawMessage(caps),
	}
	return f.send(t, method, params)
}

// withTasks is the capabilities of a 2026-07-28 caller that declares the
// tasks extension.
const withTasks = `{"extensions":{"io.modelcontextprotocol/tasks":{}}}`

// completed polls the 2026-07-28 task id until it has completed, and
// returns it (polling is how a task client waits).
func (f *taskFixture) completed(t *testing.T, id string) map[string]any {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got, rpcErr := f.send2026(t, "tasks/get", map[string]any{"taskId": id}, withTasks)
		if rpcErr != nil {
			t.Fatalf("tasks/get: %v", rpcErr)
		}
		if got["status"] == "completed" {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("task %s: %v", id, got)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (f *taskFixture) initialize(t *testing.T) {
	t.Helper()
	if _, rpcErr := f.send(t, "initialize", map[string]any{"protocolVersion": "2025-11-25", "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "test", "version": "1"}}); rpcErr != nil {
		t.Fatalf("initialize: %v", rpcErr)
	}
	f.mu.Lock()
	_ = f.enc.Encode(map[string]any{"jsonrpc": "2.0", "method": "notifications/initialized"})
	f.mu.Unlock()
}

func textOf(res map[string]any) string {
	var b strings.Builder
	content, _ := res["content"].([]any)
	for _, c := range content {
		if m, ok := c.(map[string]any); ok {
			s, _ := m["text"].(string)
			b.WriteString(s)
		}
	}
	return b.String()
}

// TestCallToolRefusesATaskOnlyToolOutsideATask: a tool whose task support
// is required must not be run as a plain call (MCP 2025-11-25, tasks), and
// call_tool ran it as one. A plain call_tool of it is now a tool error that
// names the tool and says how to call it; the tool does not run.
func TestCallToolRefusesATaskOnlyToolOutsideATask(t *testing.T) {
	f := newTaskFixture(t, 0)
	res := f.p.Call(context.Background(), &gateway.Call{Name: CallTool, Arguments: json.RawMessage(`{"name":"only"}`)})
	if !res.IsError || !strings.Contains(res.Message, `"only"`) || !strings.Contains(res.Message, "as a task") {
		t.Errorf("call_tool(only) outside a task: is_error=%v %q %q; want a tool error naming only and saying it runs as a task",
			res.IsError, res.OutputText(), res.Message)
	}
	if n := f.ran.Load(); n != 0 {
		t.Errorf("only ran %d times outside a task", n)
	}
	// A tool without task support is called as before.
	if res := f.p.Call(context.Background(), &gateway.Call{Name: CallTool, Arguments: json.RawMessage(`{"name":"plain"}`)}); res.IsError || res.OutputText() != "plain" {
		t.Errorf("call_tool(plain): %q %q", res.OutputText(), res.Message)
	}

	// Over MCP, from a client of either era that makes no task.
	f.initialize(t)
	res2025, rpcErr := f.send(t, "tools/call", map[string]any{"name": CallTool, "arguments": map[string]any{"name": "only"}})
	if rpcErr != nil || res2025["isError"] != true || !strings.Contains(textOf(res2025), "as a task") {
		t.Errorf("2025-11-25 plain call_tool(only): %v %v", res2025, rpcErr)
	}
	res2026, rpcErr := f.send2026(t, "tools/call", map[string]any{"name": CallTool, "arguments": map[string]any{"name": "only"}}, `{}`)
	if rpcErr != nil || res2026["isError"] != true || !strings.Contains(textOf(res2026), "as a task") {
		t.Errorf("2026-07-28 call_tool(only) without the tasks extension: %v %v", res2026, rpcErr)
	}
	if n := f.ran.Load(); n != 0 {
		t.Errorf("only ran %d times outside a task", n)
	}
}

// TestCallToolRunsAsATask: call_tool advertises task support (optional),
// and called as a task it runs the named tool under that task: a
// 2025-11-25 task call, and a 2026-07-28 caller of the tasks extension,
// whose call_tool of a task-supporting tool becomes a task as a direct
// call of it would (and of a tool without task support stays plain).
func TestCallToolRunsAsATask(t *testing.T) {
	f := newTaskFixture(t, 0)
	f.initialize(t)
	list, rpcErr := f.send(t, "tools/list", map[string]any{})
	if rpcErr != nil {
		t.Fatal(rpcErr)
	}
	advertised := false
	for _, tl := range list["tools"].([]any) {
		tool := tl.(map[string]any)
		if tool["name"] == CallTool {
			exec, _ := tool["execution"].(map[string]any)
			advertised = exec["taskSupport"] == "optional"
		}
	}
	if !advertised {
		t.Errorf("call_tool does not advertise taskSupport optional: %v", list["tools"])
	}

	// 2025-11-25: tools/call with task, then tasks/result.
	created, rpcErr := f.send(t, "tools/call", map[string]any{"name": CallTool, "arguments": map[string]any{"name": "only"}, "task": map[string]any{"ttl": 60000}})
	task, _ := created["task"].(map[string]any)
	if rpcErr != nil || task == nil || task["taskId"] == "" {
		t.Fatalf("call_tool(only) as a task: %v %v, want a CreateTaskResult", created, rpcErr)
	}
	id, _ := task["taskId"].(string)
	res, rpcErr := f.send(t, "tasks/result", map[string]any{"taskId": id})
	if rpcErr != nil || res["isError"] == true || textOf(res) != "ran as task "+id {
		t.Errorf("the task's result: %v %v; want only's, run under task %s", res, rpcErr, id)
	}

	// 2026-07-28, the tasks extension declared: a task, polled to its end.
	created, rpcErr = f.send2026(t, "tools/call", map[string]any{"name": CallTool, "arguments": map[string]any{"name": "only"}}, withTasks)
	if rpcErr != nil || created["resultType"] != "task" {
		t.Fatalf("2026-07-28 call_tool(only) with the tasks extension: %v %v, want a CreateTaskResult", created, rpcErr)
	}
	id, _ = created["taskId"].(string)
	got := f.completed(t, id)
	if inner, _ := got["result"].(map[string]any); textOf(inner) != "ran as task "+id {
		t.Errorf("the 2026-07-28 task's result: %v; want only's, run under task %s", got, id)
	}
	plainRes, rpcErr := f.send2026(t, "tools/call", map[string]any{"name": CallTool, "arguments": map[string]any{"name": "plain"}}, withTasks)
	if rpcErr != nil || plainRes["resultType"] == "task" || textOf(plainRes) != "plain" {
		t.Errorf("2026-07-28 call_tool(plain) with the tasks extension: %v %v, want plain's result", plainRes, rpcErr)
	}
}

// With as many tasks running as the gateway allows, a 2026-07-28 caller's
// call_tool of a task-only tool is refused, saying so (as a direct call
// would be), and the tool does not run; call_tool of a plain tool still
// runs, as a plain call takes no place among the tasks.
func TestCallToolAtTheTaskBound(t *testing.T) {
	f := newTaskFixture(t, 1)
	res, rpcErr := f.send2026(t, "tools/call", map[string]any{"name": CallTool, "arguments": map[string]any{"name": "holds"}}, withTasks)
	if rpcErr != nil || res["resultType"] != "task" {
		t.Fatalf("call_tool(holds): %v %v, want a task", res, rpcErr)
	}
	res, rpcErr = f.send2026(t, "tools/call", map[string]any{"name": CallTool, "arguments": map[string]any{"name": "only"}}, withTasks)
	if rpcErr != nil || res["isError"] != true || !strings.Contains(textOf(res), "too many tasks") {
		t.Errorf("call_tool(only) at the bound: %v %v, want a tool error saying too many tasks run", res, rpcErr)
	}
	if n := f.ran.Load(); n != 0 {
		t.Errorf("only ran %d times at the bound", n)
	}
	res, rpcErr = f.send2026(t, "tools/call", map[string]any{"name": CallTool, "arguments": map[string]any{"name": "plain"}}, withTasks)
	if rpcErr != nil || res["resultType"] != "complete" || textOf(res) != "plain" {
		t.Errorf("call_tool(plain) at the bound: %v %v, want its plain result", res, rpcErr)
	}
	close(f.release)
}

// taskRecords is a recorder that keeps, by tool name, the task each
// finished call was recorded under.
type taskRecords struct {
	mu    sync.Mutex
	tasks map[string]string
}

func (r *taskRecords) CallStarted(*gateway.Call) error { return nil }

func (r *taskRecords) CallFinished(call *gateway.Call, _ *gateway.Result, _ time.Duration) {
	if t := call.CurrentTask(); t != nil {
		r.mu.Lock()
		r.tasks[call.Name] = t.ID
		r.mu.Unlock()
	}
}

// A tool that decides itself (an upstream's) and makes call_tool's call of
// it a task: the task is call_tool's call, and both records, call_tool's
// and the named tool's, name it.
func TestCallToolOfAToolThatBecomesATask(t *testing.T) {
	f := newTaskFixture(t, 0)
	res, rpcErr := f.send2026(t, "tools/call", map[string]any{"name": CallTool, "arguments": map[string]any{"name": "decides"}}, withTasks)
	id, _ := res["taskId"].(string)
	if rpcErr != nil || res["resultType"] != "task" || id == "" {
		t.Fatalf("call_tool(decides): %v %v, want a CreateTaskResult", res, rpcErr)
	}
	f.completed(t, id)
	f.rec.mu.Lock()
	defer f.rec.mu.Unlock()
	if f.rec.tasks[CallTool] != id || f.rec.tasks["decides"] != id {
		t.Errorf("recorded tasks %v; want call_tool and decides both under task %s", f.rec.tasks, id)
	}
}
