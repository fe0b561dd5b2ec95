package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// taskExtServer serves tools for the tasks extension's tests: "wait"
// (task-supporting, runs until released or cancelled), "plain", "fails"
// (a tool error), "breaks" (the handler fails), "asks" (asks the client
// twice in rounds, as an upstream of 2026-07-28 does), "elicits" (sends a
// server-to-client elicitation, as a 2025 upstream does) and "only"
// (task required).
type taskExtServer struct {
	m       *MCPServer
	rec     *roundEvents
	started chan struct{} // the wait tool began (without blocking: a buffer)
	release chan struct{}
	ended   chan error
	// withdraw, closed, makes "withdraws" give up on its question.
	withdraw chan struct{}
	id       atomic.Int64
}

func newTaskExtServer(t *testing.T) *taskExtServer {
	t.Helper()
	f := &taskExtServer{started: make(chan struct{}, 4), release: make(chan struct{}, 4), ended: make(chan error, 4), withdraw: make(chan struct{})}
	asks := &askingTool{}
	def := func(name, support string, h func(context.Context, map[string]any) (*Result, error)) *Tool {
		tl, err := NewDynamicTool(ToolDef{Name: name, TaskSupport: support, TaskDirected: strings.HasPrefix(name, "directs")}, h)
		if err != nil {
			t.Fatal(err)
		}
		return tl
	}
	ts, err := NewToolset("t",
		def("wait", TaskOptional, func(ctx context.Context, _ map[string]any) (*Result, error) {
			select {
			case f.started <- struct{}{}:
			default:
			}
			select {
			case <-f.release:
				f.ended <- nil
				return OkText("released"), nil
			case <-ctx.Done():
				f.ended <- ctx.Err()
				return nil, ctx.Err()
			}
		}),
		def("plain", "", func(context.Context, map[string]any) (*Result, error) { return OkText("plain"), nil }),
		def("fails", TaskOptional, func(context.Context, map[string]any) (*Result, error) { return Error("no such thing", "failed"), nil }),
		def("breaks", TaskOptional, func(context.Context, map[string]any) (*Result, error) { return nil, errors.New("the upstream died") }),
		def("asks", TaskOptional, asks.handler),
		def("elicits", TaskOptional, func(ctx context.Context, _ map[string]any) (*Result, error) {
			ans, err := RequestFromClient(ctx, MethodElicitation, json.RawMessage(`{"message":"name?","requestedSchema":{"type":"object"}}`))
			if err != nil {
				f.ended <- err
				return nil, err
			}
			return OkText("answered " + string(ans)), nil
		}),
		def("only", TaskRequired, func(context.Context, map[string]any) (*Result, error) { return OkText("as a task"), nil }),
		// Decides itself, as an upstream of the extension does: asks in a
		// round first, and becomes a task once answered.
		def("directs", TaskOptional, func(ctx context.Context, _ map[string]any) (*Result, error) {
			if len(CallFrom(ctx).InputResponses) == 0 {
				return InputRequiredResult(map[string]json.RawMessage{"name": json.RawMessage(`{"method":"elicitation/create","params":{"message":"name?","requestedSchema":{"type":"object"}}}`)}, "s1", "asks"), nil
			}
			if !BecomeTask(ctx) {
				return Error("cannot become a task", "no"), nil
			}
			select {
			case <-f.release:
				return OkText("became a task"), nil
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}),
		def("directs-elicits", TaskOptional, func(ctx context.Context, _ map[string]any) (*Result, error) {
			BecomeTask(ctx) // as an upstream of the extension that answers with a task, then asks
			ans, err := RequestFromClient(ctx, MethodElicitation, json.RawMessage(`{"message":"name?","requestedSchema":{"type":"object"}}`))
			if err != nil {
				f.ended <- err
				return nil, err
			}
			return OkText("answered " + string(ans)), nil
		}),
		// Becomes a task, asks, and runs out of time while its caller
		// is asked: its deadline (300 ms) ends the call, not the question,
		// which it asks past its own context as a handler that ignores it
		// would.
		func() *Tool {
			tl, err := NewDynamicTool(ToolDef{Name: "directs-times-out", TaskSupport: TaskOptional, TaskDirected: true, Timeout: 300 * time.Millisecond},
				func(ctx context.Context, _ map[string]any) (*Result, error) {
					BecomeTask(ctx)
					_, err := RequestFromClient(context.WithoutCancel(ctx), MethodElicitation, json.RawMessage(`{"message":"name?","requestedSchema":{"type":"object"}}`))
					return nil, err
				})
			if err != nil {
				t.Fatal(err)
			}
			return tl
		}(),
		def("directs-fast", TaskOptional, func(context.Context, map[string]any) (*Result, error) { return OkText("at once"), nil }),
		withdrawingTool(t, f.withdraw, false),
	)
	if err != nil {
		t.Fatal(err)
	}
	cat := NewCatalog(nil)
	if err := cat.Add(context.Background(), ts); err != nil {
		t.Fatal(err)
	}
	f.rec = &roundEvents{}
	f.m = NewMCPServer(&MCPOptions{Name: "t", Version: "1", Catalog: cat, Pipeline: NewPipeline(&Options{Tools: cat, Recorder: f.rec, CallTimeout: 20 * time.Second})})
	return f
}

// send sends one 2026-07-28 request, its caller declaring caps, and
// returns its result or error.
func (f *taskExtServer) send(t *testing.T, method string, params map[string]any, caps string) (map[string]any, map[string]any) {
	t.Helper()
	meta := map[string]any{
		"io.modelcontextprotocol/protocolVersion":    "2026-07-28",
		"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "test", "version": "1"},
		"io.modelcontextprotocol/clientCapabilities": json.RawMessage(caps),
	}
	params["_meta"] = meta
	msg, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": f.id.Add(1), "method": method, "params": params})
	b, _ := json.Marshal(f.m.srv.HandleMessage(context.Background(), msg))
	var resp struct {
		Result map[string]any `json:"result"`
		Error  map[string]any `json:"error"`
	}
	if err := json.Unmarshal(b, &resp); err != nil {
		t.Fatalf("%s: %s: %v", method, b, err)
	}
	return resp.Result, resp.Error
}

const withTasks = `{"elicitation":{},"extensions":{"io.modelcontextprotocol/tasks":{}}}`

// create calls tool and returns the id of the task it made.
func (f *taskExtServer) create(t *testing.T, tool string) string {
	t.Helper()
	res, rpcErr := f.send(t, "tools/call", map[string]any{"name": tool, "arguments": map[string]any{}}, withTasks)
	if rpcErr != nil || res["resultType"] != "task" {
		t.Fatalf("%s: %v %v, want a CreateTaskResult", tool, res, rpcErr)
	}
	for _, k := range []string{"taskId", "status", "createdAt", "lastUpdatedAt", "ttlMs", "pollIntervalMs"} {
		if _, ok := res[k]; !ok {
			t.Errorf("CreateTaskResult without %s: %v", k, res)
		}
	}
	for _, k := range []string{"task", "result", "error", "inputRequests", "requestState", "content"} {
		if _, ok := res[k]; ok {
			t.Errorf("CreateTaskResult with %s: %v", k, res)
		}
	}
	return res["taskId"].(string)
}

// until polls tasks/get until the task's status is want.
func (f *taskExtServer) until(t *testing.T, id, want string) map[string]any {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		res, rpcErr := f.send(t, "tasks/get", map[string]any{"taskId": id}, withTasks)
		if rpcErr != nil {
			t.Fatalf("tasks/get %s: %v", id, rpcErr)
		}
		if res["status"] == want {
			return res
		}
		if time.Now().After(deadline) {
			t.Fatalf("task %s is %v, want %s: %v", id, res["status"], want, res)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestTasksExtensionLifecycle(t *testing.T) {
	f := newTaskExtServer(t)

	// A tool without task support answers as usual, a legacy task member
	// notwithstanding.
	res, rpcErr := f.send(t, "tools/call", map[string]any{"name": "plain", "arguments": map[string]any{}, "task": map[string]any{"ttl": 5}}, withTasks)
	if rpcErr != nil || res["resultType"] != "complete" || res["taskId"] != nil {
		t.Fatalf("plain call: %v %v", res, rpcErr)
	}

	// Completed: the result is inlined, once, on tasks/get.
	id := f.create(t, "wait")
	if got := f.until(t, id, "working"); got["result"] != nil || got["resultType"] != "complete" {
		t.Errorf("working task: %v", got)
	}
	f.release <- struct{}{}
	<-f.ended
	got := f.until(t, id, "completed")
	result, _ := got["result"].(map[string]any)
	if content, _ := result["content"].([]any); len(content) == 0 || !strings.Contains(mustJSON(content), "released") {
		t.Errorf("completed task: %v, want the result inlined", got)
	}
	// Cancelling an ended task is acknowledged and changes nothing.
	if ack, rpcErr := f.send(t, "tasks/cancel", map[string]any{"taskId": id}, withTasks); rpcErr != nil || !bareAck(ack) {
		t.Errorf("tasks/cancel of a completed task: %v %v, want the bare ack", ack, rpcErr)
	}
	f.until(t, id, "completed")

	// A tool error completes the task with it; a failing call fails it.
	got = f.until(t, f.create(t, "fails"), "completed")
	if result, _ := got["result"].(map[string]any); result["isError"] != true {
		t.Errorf("tool error: %v, want completed with isError", got)
	}
	got = f.until(t, f.create(t, "breaks"), "failed")
	if e, _ := got["error"].(map[string]any); got["result"] != nil || e["code"] != float64(-32603) || !strings.Contains(e["message"].(string), "the upstream died") {
		t.Errorf("failed call: %v, want failed with the error and no result", got)
	}

	// Cancelled mid-way: the call ends, the status stays cancelled.
	id = f.create(t, "wait")
	f.until(t, id, "working")
	if ack, rpcErr := f.send(t, "tasks/cancel", map[string]any{"taskId": id}, withTasks); rpcErr != nil || !bareAck(ack) {
		t.Fatalf("tasks/cancel: %v %v", ack, rpcErr)
	}
	if err := <-f.ended; !errors.Is(err, context.Canceled) {
		t.Errorf("the cancelled task's call ended with %v", err)
	}
	f.until(t, id, "cancelled")

	// Unknown ids and removed methods.
	for _, c := range []struct {
		method string
		code   float64
	}{{"tasks/get", -32602}, {"tasks/cancel", -32602}, {"tasks/result", -32601}, {"tasks/list", -32601}} {
		if _, rpcErr := f.send(t, c.method, map[string]any{"taskId": "nope"}, withTasks); rpcErr == nil || rpcErr["code"] != c.code {
			t.Errorf("%s of an unknown task: %v, want %v", c.method, rpcErr, c.code)
		}
	}

	// Every step is recorded.
	f.rec.mu.Lock()
	defer f.rec.mu.Unlock()
	count := map[string]int{}
	for _, e := range f.rec.events {
		if typ, _ := e["type"].(string); strings.HasPrefix(typ, "task.") && e["task_id"] != nil {
			count[typ]++
		}
	}
	if count["task.created"] != 4 || count["task.completed"] != 2 || count["task.failed"] != 1 || count["task.cancelled"] != 1 {
		t.Errorf("task events %v", count)
	}
}

// Without the extension, task methods are refused with -32021, optional
// tools run as plain calls, and a tool that runs only as a task is
// refused naming the extension.
func TestTasksExtensionNotDeclared(t *testing.T) {
	f := newTaskExtServer(t)
	for _, m := range []string{"tasks/get", "tasks/update", "tasks/cancel"} {
		_, rpcErr := f.send(t, m, map[string]any{"taskId": "x", "inputResponses": map[string]any{}}, `{}`)
		if rpcErr == nil || rpcErr["code"] != float64(-32021) || !strings.Contains(mustJSON(rpcErr["data"]), TasksExtension) {
			t.Errorf("%s without the extension: %v", m, rpcErr)
		}
	}
	res, rpcErr := f.send(t, "tools/call", map[string]any{"name": "fails", "arguments": map[string]any{}}, `{}`)
	if rpcErr != nil || res["resultType"] != "complete" || res["isError"] != true {
		t.Errorf("optional tool without the extension: %v %v, want a plain result", res, rpcErr)
	}
	_, rpcErr = f.send(t, "tools/call", map[string]any{"name": "only", "arguments": map[string]any{}}, `{}`)
	if rpcErr == nil || rpcErr["code"] != float64(-32021) || !strings.Contains(mustJSON(rpcErr["data"]), TasksExtension) {
		t.Errorf("required tool without the extension: %v", rpcErr)
	}
	// Another caller's tasks are unknown to it.
	id := f.create(t, "only")
	f.until(t, id, "completed")
}

// A task's rounds: input requests are surfaced on tasks/get, answered in
// parts with tasks/update, and the call resumes with them, whether the
// tool asks in rounds itself or through a server-to-client request.
func TestTasksExtensionInput(t *testing.T) {
	f := newTaskExtServer(t)
	for _, tool := range []string{"asks", "elicits"} {
		t.Run(tool, func(t *testing.T) {
			id := f.create(t, tool)
			rounds := map[string]int{"asks": 2, "elicits": 1}[tool]
			for range rounds {
				got := f.until(t, id, "input_required")
				reqs, _ := got["inputRequests"].(map[string]any)
				if len(reqs) != 1 || got["requestState"] != nil {
					t.Fatalf("input_required task: %v, want one request and no requestState", got)
				}
				answers := map[string]any{}
				for k := range reqs {
					answers[k] = map[string]any{"action": "accept", "content": map[string]any{"name": "Ada"}}
				}
				ack, rpcErr := f.send(t, "tasks/update", map[string]any{"taskId": id, "inputResponses": answers}, withTasks)
				if rpcErr != nil || !bareAck(ack) {
					t.Fatalf("tasks/update: %v %v, want the bare ack", ack, rpcErr)
				}
			}
			got := f.until(t, id, "completed")
			if s := mustJSON(got["result"]); !strings.Contains(s, "done") && !strings.Contains(s, "Ada") {
				t.Errorf("completed task: %s", s)
			}
		})
	}
}

// bareAck reports whether res is the extension's acknowledgement: a
// complete result without a task's fields.
func bareAck(res map[string]any) bool {
	for _, k := range []string{"taskId", "status", "result", "error", "inputRequests"} {
		if _, ok := res[k]; ok {
			return false
		}
	}
	return res["resultType"] == "complete"
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// Cancelling a task that waits for input ends the call behind it, the
// tool still waiting for its answer included.
func TestTasksExtensionCancelWhileAsking(t *testing.T) {
	for _, tool := range []string{"elicits", "directs-elicits"} {
		t.Run(tool, func(t *testing.T) { cancelWhileAsking(t, tool) })
	}
}

// cancelWhileAsking: tool, a task from the start or one it becomes itself
// (directed: an upstream's task), asks its caller; tasks/cancel ends the
// call waiting for the answer at once, not at the call's deadline, and
// its exchange with it.
func cancelWhileAsking(t *testing.T, tool string) {
	f := newTaskExtServer(t)
	id := f.create(t, tool)
	f.until(t, id, "input_required")
	if ack, rpcErr := f.send(t, "tasks/cancel", map[string]any{"taskId": id}, withTasks); rpcErr != nil || !bareAck(ack) {
		t.Fatalf("tasks/cancel: %v %v", ack, rpcErr)
	}
	f.until(t, id, "cancelled")
	select {
	case err := <-f.ended:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("the waiting tool ended with %v, want cancelled", err)
		}
	case <-time.After(5 * time.Second):
		t.Error("the tool still waits for its answer after the task was cancelled")
	}
	// Nobody takes the result of a cancelled task: its exchange is not
	// kept for a repeat.
	x := &f.m.opts.Pipeline.exchanges
	held := 0
	for range 200 {
		x.mu.Lock()
		held = len(x.m)
		x.mu.Unlock()
		if held == 0 {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	if held != 0 {
		t.Errorf("%d exchanges held after the task was cancelled", held)
	}
	if ack, rpcErr := f.send(t, "tasks/update", map[string]any{"taskId": id, "inputResponses": map[string]any{"x": map[string]any{}}}, withTasks); rpcErr != nil || !bareAck(ack) {
		t.Errorf("a late tasks/update: %v %v, want the ack (nothing waits for it)", ack, rpcErr)
	}
}

// A call that became a task of its own accord (an upstream's) and runs
// out of time while its caller is asked ends its task with that timeout,
// as a task from the start does: the result is kept for the task's next
// round, not dropped as a plain call's would be (no caller waits for a
// plain call that timed out, but the task does).
func TestTasksExtensionDirectedTimeoutWhileAsking(t *testing.T) {
	f := newTaskExtServer(t)
	id := f.create(t, "directs-times-out")
	f.until(t, id, "input_required")
	got := f.until(t, id, "failed")
	if s := mustJSON(got["error"]); !strings.Contains(s, "timed out after 300ms") {
		t.Errorf("failed task: %s; want its tool's timeout, not the exchange's end", s)
	}
}

// A task whose tool gives up on the question it asks (an upstream that
// cancels its relayed request) while the task waits for the answer goes
// on: it completes with what the tool did next, rather than staying
// input_required, asking a question nobody waits for, until the round's
// limit (RoundTTL).
func TestTasksExtensionQuestionWithdrawn(t *testing.T) {
	f := newTaskExtServer(t)
	id := f.create(t, "withdraws")
	f.until(t, id, "input_required")
	close(f.withdraw)
	got := f.until(t, id, "completed")
	if s := mustJSON(got["result"]); !strings.Contains(s, "went on without an answer") {
		t.Errorf("completed task: %s; want the tool's result", s)
	}
}

// Tasks running at once are bounded; one more is refused, and a slot is
// free again once a task ends.
func TestTasksExtensionBound(t *testing.T) {
	f := newTaskExtServer(t)
	f.m.opts.MaxTasks = 1
	id := f.create(t, "wait")
	_, rpcErr := f.send(t, "tools/call", map[string]any{"name": "wait", "arguments": map[string]any{}}, withTasks)
	if rpcErr == nil || !strings.Contains(rpcErr["message"].(string), "too many tasks") {
		t.Fatalf("a second task past the bound: %v, want refused", rpcErr)
	}
	f.release <- struct{}{}
	<-f.ended
	f.until(t, id, "completed")
	if !waitUntilCreated(t, f) {
		t.Error("no task could be created after the first ended")
	}
}

// A call that may become a task (an upstream's, call_tool's) takes a
// place among the tasks running only when it becomes one: with every
// place taken, such calls still run, as plain calls, and one that would
// become a task stays plain; once a place is free it becomes one.
func TestTasksExtensionBoundDirected(t *testing.T) {
	f := newTaskExtServer(t)
	f.m.opts.MaxTasks = 1
	id := f.create(t, "wait")
	res, rpcErr := f.send(t, "tools/call", map[string]any{"name": "directs-fast", "arguments": map[string]any{}}, withTasks)
	if rpcErr != nil || res["resultType"] != "complete" || !strings.Contains(mustJSON(res["content"]), "at once") {
		t.Fatalf("a directed call that stays plain, every place taken: %v %v, want its result", res, rpcErr)
	}
	directs := func() (map[string]any, map[string]any) {
		t.Helper()
		res, _ := f.send(t, "tools/call", map[string]any{"name": "directs", "arguments": map[string]any{}}, withTasks)
		state, _ := res["requestState"].(string)
		if state == "" {
			t.Fatalf("round 1: %v, want input_required", res)
		}
		return f.send(t, "tools/call", map[string]any{"name": "directs", "arguments": map[string]any{},
			"inputResponses": map[string]any{"name": map[string]any{"action": "accept"}}, "requestState": state}, withTasks)
	}
	res, rpcErr = directs()
	if rpcErr != nil || res["isError"] != true || !strings.Contains(mustJSON(res["content"]), "cannot become a task") {
		t.Fatalf("becoming a task, every place taken: %v %v, want the tool told it cannot", res, rpcErr)
	}
	f.release <- struct{}{}
	<-f.ended
	f.until(t, id, "completed")
	for range 200 { // the ended task's place is freed just after its status is set
		if res, rpcErr = directs(); rpcErr != nil || res["resultType"] == "task" {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	if rpcErr != nil || res["resultType"] != "task" {
		t.Fatalf("becoming a task once a place is free: %v %v, want a CreateTaskResult", res, rpcErr)
	}
	f.release <- struct{}{}
	f.until(t, res["taskId"].(string), "completed")
}

// waitUntilCreated retries creating a task until the bound lets it (the
// ended task's slot is freed just after its status is set).
func waitUntilCreated(t *testing.T, f *taskExtServer) bool {
	t.Helper()
	for range 200 {
		res, rpcErr := f.send(t, "tools/call", map[string]any{"name": "fails", "arguments": map[string]any{}}, withTasks)
		if rpcErr == nil && res["resultType"] == "task" {
			return true
		}
		time.Sleep(5 * time.Millisecond)
	}
	return false
}

// A tool that decides itself (an upstream of the extension) answers as it
// chooses: a plain result, an input_required round, and a task once it
// says so; the task's record is the call that became it.
func TestTasksExtensionDirected(t *testing.T) {
	f := newTaskExtServer(t)
	res, rpcErr := f.send(t, "tools/call", map[string]any{"name": "directs-fast", "arguments": map[string]any{}}, withTasks)
	if rpcErr != nil || res["resultType"] != "complete" || !strings.Contains(mustJSON(res["content"]), "at once") {
		t.Fatalf("a directed tool that answers at once: %v %v, want its plain result", res, rpcErr)
	}
	res, rpcErr = f.send(t, "tools/call", map[string]any{"name": "directs", "arguments": map[string]any{}}, withTasks)
	state, _ := res["requestState"].(string)
	if rpcErr != nil || res["resultType"] != "input_required" || res["taskId"] != nil || state == "" {
		t.Fatalf("round 1: %v %v, want input_required without a task", res, rpcErr)
	}
	res, rpcErr = f.send(t, "tools/call", map[string]any{"name": "directs", "arguments": map[string]any{},
		"inputResponses": map[string]any{"name": map[string]any{"action": "accept", "content": map[string]any{"name": "Ada"}}}, "requestState": state}, withTasks)
	if rpcErr != nil || res["resultType"] != "task" || res["requestState"] != nil {
		t.Fatalf("round 2: %v %v, want a CreateTaskResult", res, rpcErr)
	}
	id := res["taskId"].(string)
	f.until(t, id, "working")
	f.release <- struct{}{}
	got := f.until(t, id, "completed")
	if !strings.Contains(mustJSON(got["result"]), "became a task") {
		t.Errorf("completed task %v", got)
	}
	// Without the extension, the same tool cannot become a task.
	const noTasks = `{"elicitation":{}}`
	res, _ = f.send(t, "tools/call", map[string]any{"name": "directs", "arguments": map[string]any{}}, noTasks)
	state, _ = res["requestState"].(string)
	res, rpcErr = f.send(t, "tools/call", map[string]any{"name": "directs", "arguments": map[string]any{},
		"inputResponses": map[string]any{"name": map[string]any{"action": "accept"}}, "requestState": state}, noTasks)
	if rpcErr != nil || res["isError"] != true || !strings.Contains(mustJSON(res["content"]), "cannot become a task") {
		t.Errorf("without the extension: %v %v, want the tool told it cannot become a task", res, rpcErr)
	}
	f.rec.mu.Lock()
	defer f.rec.mu.Unlock()
	created := 0
	for _, e := range f.rec.events {
		if e["type"] == "task.created" && e["tool"] == "directs" {
			created++
		}
	}
	if created != 1 {
		t.Errorf("%d task.created events for directs, want 1", created)
	}
}

// A task waiting for answers that never come fails when its round's state
// would expire, and frees its place.
func TestTasksExtensionUnansweredExpires(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newTaskExtServer(t)
		res, rpcErr := f.send(t, "tools/call", map[string]any{"name": "asks", "arguments": map[string]any{}}, withTasks)
		if rpcErr != nil || res["resultType"] != "task" {
			t.Fatalf("%v %v", res, rpcErr)
		}
		id := res["taskId"].(string)
		synctest.Wait()
		if got, _ := f.send(t, "tasks/get", map[string]any{"taskId": id}, withTasks); got["status"] != "input_required" {
			t.Fatalf("task %v, want input_required", got)
		}
		time.Sleep(RoundTTL + time.Second)
		synctest.Wait()
		got, _ := f.send(t, "tasks/get", map[string]any{"taskId": id}, withTasks)
		if e, _ := got["error"].(map[string]any); got["status"] != "failed" || !strings.Contains(mustJSON(e), "no answer") {
			t.Errorf("task %v, want failed for want of an answer", got)
		}
		f.m.modernTasks.mu.Lock()
		running := f.m.modernTasks.running
		f.m.modernTasks.mu.Unlock()
		if running != 0 {
			t.Errorf("%d tasks still counted running", running)
		}
	})
}

// The prefilter that spares most calls the decoding of their tool's name
// lets through every call that may name a tool that supports tasks, a
// name spelled with escapes included.
func TestMayCallTaskTool(t *testing.T) {
	f := newTaskExtServer(t)
	l := f.m.listing.Load()
	for _, tc := range []struct {
		msg  string
		want bool
	}{
		{`{"method":"tools/call","params":{"name":"plain","arguments":{}}}`, false},
		{`{"method":"tools/call","params":{"name":"wait","arguments":{}}}`, true},
		{`{"method":"tools/call","params":{"name":"w\u0061it","arguments":{}}}`, true},
		{`{"method":"tools/call","params":{"name":"wa\/it","arguments":{}}}`, true},          // \/ spells a slash
		{`{"method":"tools/call","params":{"name":"plain","arguments":{"x":"wait"}}}`, true}, // decoded, then left alone
	} {
		if got := l.mayCallTaskTool([]byte(tc.msg)); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.msg, got, tc.want)
		}
	}
}

// TestTasksExtensionHiddenToolNotFound: a tool the ToolFilter hides is
// "not found" at call time whether or not it supports tasks (a call of a
// task-supporting tool is answered before mcp-go's dispatch, which asks
// the filter), and does not run.
func TestTasksExtensionHiddenToolNotFound(t *testing.T) {
	var ran atomic.Bool
	h := func(context.Context, map[string]any) (*Result, error) { ran.Store(true); return OkText("ran"), nil }
	task := Must(NewDynamicTool(ToolDef{Name: "hidden_task", TaskSupport: TaskOptional}, h))
	plain := Must(NewDynamicTool(ToolDef{Name: "hidden_plain"}, h))
	ts, _ := NewToolset("t", task, plain)
	cat := NewCatalog(nil)
	if err := cat.Add(context.Background(), ts); err != nil {
		t.Fatal(err)
	}
	f := &taskExtServer{}
	f.m = NewMCPServer(&MCPOptions{Name: "t", Version: "1", Catalog: cat,
		Pipeline:   NewPipeline(&Options{Tools: cat, Recorder: newMemRecorder()}),
		ToolFilter: func(context.Context, *Tool) bool { return false }})
	for _, tc := range []struct{ name, caps string }{
		{"declaring tasks", withTasks},
		{"not declaring tasks", `{}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, plainErr := f.send(t, "tools/call", map[string]any{"name": "hidden_plain", "arguments": map[string]any{}}, tc.caps)
			res, taskErr := f.send(t, "tools/call", map[string]any{"name": "hidden_task", "arguments": map[string]any{}}, tc.caps)
			if plainErr == nil {
				t.Fatal("the hidden plain tool was found")
			}
			want, _ := json.Marshal(plainErr)
			got, _ := json.Marshal(taskErr)
			if strings.ReplaceAll(string(want), "hidden_plain", "hidden_task") != string(got) {
				t.Errorf("hidden task tool: result %v error %s, want the hidden plain tool's %s", res, got, want)
			}
			if ran.Load() {
				t.Error("a hidden tool ran")
			}
		})
	}
}

// TestTaskCancelledByShutdown: a task whose call is cancelled other than
// by tasks/cancel (the pipeline's shutdown) is cancelled, in both eras,
// and its event says task.cancelled; it was completed with isError.
func TestTaskCancelledByShutdown(t *testing.T) {
	f := newTaskExtServer(t)
	id := f.create(t, "wait")
	<-f.started

	o := taskServer(t)
	c, _ := dialMCP(t, o.url)
	oid := startTask(t, c, "wait")
	<-o.started

	for _, p := range []*Pipeline{f.m.opts.Pipeline, o.m.opts.Pipeline} {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		_ = p.Shutdown(ctx)
		cancel()
	}
	f.until(t, id, "cancelled")
	waitStatus(t, c, oid, "cancelled")
	if n := eventsOf(o.rec, "task.cancelled", oid); n != 1 || eventsOf(o.rec, "task.completed", oid) != 0 {
		t.Errorf("2025 events %v; want one task.cancelled", o.rec.all())
	}
	deadline := time.Now().Add(5 * time.Second)
	for f.rec.count("task.cancelled") != 1 || f.rec.count("task.completed") != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("2026 events: task.cancelled %d, task.completed %d; want 1 and 0", f.rec.count("task.cancelled"), f.rec.count("task.completed"))
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (l *roundEvents) count(typ string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, e := range l.events {
		if e["type"] == typ {
			n++
		}
	}
	return n
}

// TestTaskParkedAtShutdownIsCancelled: a 2026-07-28 task waiting for its
// caller's input when the gateway shuts down runs no call (nothing is
// executing to be cancelled) and would wait out RoundTTL, after the
// archive closed: it ends at once, cancelled, with its task.cancelled
// event.
func TestTaskParkedAtShutdownIsCancelled(t *testing.T) {
	f := newTaskExtServer(t)
	id := f.create(t, "asks")
	f.until(t, id, "input_required")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := f.m.opts.Pipeline.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	got := f.until(t, id, "cancelled")
	if n := f.rec.count("task.cancelled"); n != 1 {
		t.Errorf("%d task.cancelled events, want 1 (%v)", n, got)
	}
}
