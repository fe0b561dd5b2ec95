package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// taskRecorder keeps each finished call with its result, and events.
type taskRecorder struct {
	eventRecorder
	cmu   sync.Mutex
	calls map[string]*Call
}

func (r *taskRecorder) CallFinished(c *Call, res *Result, d time.Duration) {
	r.eventRecorder.CallFinished(c, res, d)
	r.cmu.Lock()
	r.calls[c.ID] = c
	r.cmu.Unlock()
}

// byTask returns the finished call that ran as the task id, and its result.
func (r *taskRecorder) byTask(id string) (*Call, *Result) {
	r.cmu.Lock()
	defer r.cmu.Unlock()
	for cid, c := range r.calls {
		if c.Task != nil && c.Task.ID == id {
			r.mu.Lock()
			defer r.mu.Unlock()
			return c, r.finished[cid]
		}
	}
	return nil, nil
}

type taskFixture struct {
	url     string
	m       *MCPServer
	rec     *taskRecorder
	started <-chan struct{}
	release chan<- struct{}
	ended   <-chan error
}

// taskServer serves "wait" (may be called as a task: it runs until
// released or cancelled) and "plain" (may not) over streamable HTTP.
func taskServer(t *testing.T) *taskFixture {
	t.Helper()
	st, rel, end := make(chan struct{}, 4), make(chan struct{}, 4), make(chan error, 4)
	obj := json.RawMessage(`{"type":"object"}`)
	ts, err := NewToolset("t",
		Must(NewTool(ToolDef{Name: "wait", InputSchema: obj, TaskSupport: TaskOptional}, func(ctx context.Context, call *Call) (*Result, error) {
			st <- struct{}{}
			select {
			case <-rel:
				end <- nil
				res := OkText("released")
				res.Structured = json.RawMessage(`{"n":1}`)
				return res, nil
			case <-ctx.Done():
				end <- ctx.Err()
				return nil, ctx.Err()
			}
		})),
		Must(NewTool(ToolDef{Name: "plain", InputSchema: obj}, func(ctx context.Context, call *Call) (*Result, error) {
			return OkText("plain"), nil
		})),
	)
	if err != nil {
		t.Fatal(err)
	}
	cat := NewCatalog(nil)
	if err := cat.Add(context.Background(), ts); err != nil {
		t.Fatal(err)
	}
	rec := &taskRecorder{eventRecorder: eventRecorder{memRecorder: newMemRecorder()}, calls: map[string]*Call{}}
	m := NewMCPServer(&MCPOptions{Name: "t", Version: "1", Catalog: cat, Pipeline: NewPipeline(&Options{Tools: cat, Recorder: rec, CallTimeout: 20 * time.Second})})
	return &taskFixture{url: serveMCP(t, m), m: m, rec: rec, started: st, release: rel, ended: end}
}

// request sends one raw request on the client's session.
func request(t *testing.T, c *client.Client, method string, params any) (json.RawMessage, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := c.GetTransport().SendRequest(ctx, transport.JSONRPCRequest{JSONRPC: "2.0", ID: mcp.NewRequestId(time.Now().UnixNano()), Method: method, Params: params})
	if err != nil {
		return nil, err
	}
	if resp.Error != nil {
		return nil, &ClientError{Code: resp.Error.Code, Message: resp.Error.Message}
	}
	return resp.Result, nil
}

type wireTask struct {
	Task struct {
		TaskID string `json:"taskId"`
		Status string `json:"status"`
	} `json:"task"`
	TaskID string `json:"taskId"`
	Status string `json:"status"`
}

func startTask(t *testing.T, c *client.Client, tool string) string {
	t.Helper()
	raw, err := request(t, c, "tools/call", map[string]any{"name": tool, "arguments": map[string]any{}, "task": map[string]any{"ttl": 60000}})
	if err != nil {
		t.Fatalf("task call: %v", err)
	}
	var cr wireTask
	if err := json.Unmarshal(raw, &cr); err != nil || cr.Task.TaskID == "" {
		t.Fatalf("task call answered %s (%v), want a CreateTaskResult", raw, err)
	}
	if cr.Task.Status != "working" {
		t.Fatalf("new task status %q, want working", cr.Task.Status)
	}
	return cr.Task.TaskID
}

func taskStatus(t *testing.T, c *client.Client, id string) string {
	t.Helper()
	raw, err := request(t, c, "tasks/get", map[string]any{"taskId": id})
	if err != nil {
		t.Fatalf("tasks/get: %v", err)
	}
	var g wireTask
	_ = json.Unmarshal(raw, &g)
	return g.Status
}

// patience is until when a test waits for what must come: shortly before
// the test binary's own deadline (go test -timeout), or two minutes
// without one. A fixed few seconds is what the tools take on an idle
// machine, not on a loaded one (the race detector, packages tested side
// by side on two cores), where a notification that comes has been seen
// to come late; a test that waits to its deadline still fails, naming
// what did not come, when it never does.
func patience(t *testing.T) time.Time {
	if d, ok := t.Deadline(); ok {
		return d.Add(-time.Until(d) / 20) // room to report it
	}
	return time.Now().Add(2 * time.Minute)
}

func waitStatus(t *testing.T, c *client.Client, id, want string) {
	t.Helper()
	deadline := patience(t)
	for {
		raw, err := request(t, c, "tasks/get", map[string]any{"taskId": id})
		if err != nil {
			t.Fatalf("tasks/get: %v", err)
		}
		var g wireTask
		_ = json.Unmarshal(raw, &g)
		got := g.Status
		if got == want {
			return
		}
		// A task that ended otherwise will not come to want: say how it
		// ended, rather than poll until it expires.
		if got == "completed" || got == "failed" || got == "cancelled" {
			t.Fatalf("task %s ended %s, want %s: %s", id, got, want, raw)
		}
		if time.Now().After(deadline) {
			t.Fatalf("task %s status %q, want %q", id, got, want)
		}
		time.Sleep(20 * time.Millisecond) // polling is how a task client waits
	}
}

func eventsOf(rec *taskRecorder, typ, taskID string) int {
	n := 0
	for _, e := range rec.all() {
		if e["type"] == typ && e["task_id"] == taskID {
			n++
		}
	}
	return n
}

func TestTaskRunsPastItsRequestAndIsRecorded(t *testing.T) {
	f := taskServer(t)
	rec, started, release, ended := f.rec, f.started, f.release, f.ended
	c, _ := dialMCP(t, f.url)

	// The listing says which tools may be called as tasks.
	lres, err := c.ListTools(context.Background(), mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	support := map[string]string{}
	for _, tl := range lres.Tools {
		if tl.Execution != nil {
			support[tl.Name] = string(tl.Execution.TaskSupport)
		}
	}
	if support["wait"] != "optional" || support["plain"] != "" {
		t.Fatalf("execution.taskSupport = %v, want wait optional and plain absent", support)
	}

	id := startTask(t, c, "wait")
	<-started
	// The request that created the task has been answered: the call must
	// still be running (mcp-go's own task context ends with the request).
	select {
	case err := <-ended:
		t.Fatalf("the task's call ended when its request was answered: %v", err)
	case <-time.After(100 * time.Millisecond):
	}
	if s := taskStatus(t, c, id); s != "working" {
		t.Fatalf("running task status %q, want working", s)
	}
	release <- struct{}{}
	waitStatus(t, c, id, "completed")
	raw, err := request(t, c, "tasks/result", map[string]any{"taskId": id})
	if err != nil || !strings.Contains(string(raw), "released") || !strings.Contains(string(raw), `"structuredContent":{"n":1}`) {
		t.Fatalf("tasks/result = %s, %v; want the tool's output, structured content included", raw, err)
	}
	call, res := rec.byTask(id)
	if call == nil || res == nil || res.Status() != "ok" || call.Task.TTLMs != 60000 {
		t.Fatalf("record of task %s: call %+v result %+v; want an ok call naming the task and its TTL", id, call, res)
	}
	if eventsOf(rec, "task.created", id) != 1 || eventsOf(rec, "task.completed", id) != 1 {
		t.Fatalf("events %v; want task.created and task.completed for %s", rec.all(), id)
	}
}

func TestTaskCancelCancelsTheCall(t *testing.T) {
	f := taskServer(t)
	rec, started, ended := f.rec, f.started, f.ended
	c, _ := dialMCP(t, f.url)
	id := startTask(t, c, "wait")
	<-started
	if _, err := request(t, c, "tasks/cancel", map[string]any{"taskId": id}); err != nil {
		t.Fatalf("tasks/cancel: %v", err)
	}
	select {
	case err := <-ended:
		if err == nil {
			t.Fatal("the call ended released, want cancelled")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("tasks/cancel did not cancel the task's call")
	}
	if s := taskStatus(t, c, id); s != "cancelled" {
		t.Fatalf("cancelled task status %q", s)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		if call, res := rec.byTask(id); call != nil {
			if res.Status() != string(KindCancelled) {
				t.Fatalf("record of the cancelled task: %s", res.Status())
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the cancelled task's call was not recorded")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if eventsOf(rec, "task.cancelled", id) != 1 {
		t.Fatalf("events %v; want task.cancelled for %s", rec.all(), id)
	}
}

func TestTaskRefusals(t *testing.T) {
	f := taskServer(t)
	c, _ := dialMCP(t, f.url)
	_, err := request(t, c, "tools/call", map[string]any{"name": "plain", "arguments": map[string]any{}, "task": map[string]any{}})
	var ce *ClientError
	if !errors.As(err, &ce) || ce.Code != mcp.METHOD_NOT_FOUND || !strings.Contains(ce.Message, "cannot be called as a task") {
		t.Fatalf("task call of a tool without task support: %v, want a -32601 refusal saying so (MCP 2025-11-25, tool-level negotiation)", err)
	}
	// Without a task the same tools answer as usual.
	if out, isErr := callText(t, c, "plain", `{}`); isErr || out != "plain" {
		t.Fatalf("plain call: %q %v", out, isErr)
	}

	for _, tc := range []struct {
		name, msg string
		refused   bool
	}{
		{"2026 tasks/get (the extension's)", `{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"taskId":"x","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`, false},
		{"2026 call with a legacy task member (tolerated)", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"plain","task":{},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`, false},
		{"2026 plain call", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"wait","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`, false},
		{"2025 tasks/get", `{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"taskId":"x"}}`, false},
		{"2025 task call", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"wait","task":{"ttl":5}}}`, false},
		{"2025 task call, no task support", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"plain","task":{"ttl":5}}}`, true},
		// mcp-go's decoding matches "Task" and "taſk" to the task member,
		// and reads an escaped method: so must the check.
		{"no task support, the member in capitals", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"plain","TASK":{"ttl":5}}}`, true},
		{"no task support, the member with a long s", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"plain","taſk":{"ttl":5}}}`, true},
		{"no task support, the method escaped", `{"jsonrpc":"2.0","id":1,"method":"tools\/call","params":{"name":"plain","task":{"ttl":5}}}`, true},
	} {
		err := f.m.checkTaskRequest(context.Background(), 1, json.RawMessage(tc.msg))
		if (err != nil) != tc.refused {
			t.Errorf("%s: refused = %v, want %v", tc.name, err, tc.refused)
		}
	}
}

// TestTaskTTLBounded: a task asked for without a TTL, or with one past an
// hour, is kept an hour and says so: mcp-go kept a task without a TTL, its
// result included, for the life of the process.
func TestTaskTTLBounded(t *testing.T) {
	f := taskServer(t)
	c, _ := dialMCP(t, f.url)
	for _, task := range []map[string]any{{}, {"ttl": 0}, {"ttl": 30 * 24 * 3600 * 1000}, {"ttl": 5000}} {
		raw, err := request(t, c, "tools/call", map[string]any{"name": "wait", "arguments": map[string]any{}, "task": task})
		if err != nil {
			t.Fatalf("task call %v: %v", task, err)
		}
		<-f.started
		var cr struct {
			Task struct {
				TaskID string `json:"taskId"`
				TTL    *int64 `json:"ttl"`
			} `json:"task"`
		}
		_ = json.Unmarshal(raw, &cr)
		want := int64(3600 * 1000)
		if v, ok := task["ttl"].(int); ok && v > 0 && int64(v) < want {
			want = int64(v)
		}
		if cr.Task.TTL == nil || *cr.Task.TTL != want {
			t.Errorf("task %v: answered %s, want ttl %d", task, raw, want)
		}
		f.release <- struct{}{}
		waitStatus(t, c, cr.Task.TaskID, "completed")
		if call, _ := f.rec.byTask(cr.Task.TaskID); call == nil || call.Task == nil || call.Task.TTLMs != want {
			t.Errorf("task %v: recorded task %+v, want ttl_ms %d", task, call.Task, want)
		}
	}
}

// TestTaskEndEventsNameTheCaller: task.completed names the task's caller
// (identity, client) as task.created does; mcp-go reports a task's end
// without the request's context, and the event said identity "local".
func TestTaskEndEventsNameTheCaller(t *testing.T) {
	f := taskServer(t)
	c, _ := dialMCP(t, f.url)
	id := startTask(t, c, "wait")
	<-f.started
	f.release <- struct{}{}
	waitStatus(t, c, id, "completed")
	var created, completed map[string]any
	for _, e := range f.rec.all() {
		if e["task_id"] != id {
			continue
		}
		switch e["type"] {
		case "task.created":
			created = e
		case "task.completed":
			completed = e
		}
	}
	if created == nil || completed == nil {
		t.Fatalf("events %v", f.rec.all())
	}
	for _, k := range []string{"identity", "client", "session"} {
		if created[k] == nil || completed[k] != created[k] {
			t.Errorf("%s: task.created %v, task.completed %v; want the same caller", k, created[k], completed[k])
		}
	}
}

// TestTaskInputRequiredWhileTheClientIsAsked: a 2025-11-25 task whose
// tool asks the client (an elicitation, as an upstream's relayed one) is
// input_required while the question waits for an answer, and working again
// once it is answered (MCP 2025-11-25, tasks: "Input Required Status");
// each change is told to the task's session (notifications/tasks/status),
// and to no other.
func TestTaskInputRequiredWhileTheClientIsAsked(t *testing.T) {
	goOn := make(chan struct{})
	url := serveAskingTask(t, func(ctx context.Context) error {
		select { // working again, before the end
		case <-goOn:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	})
	asked, answer := make(chan struct{}, 1), make(chan struct{})
	c, notes := dialMCP(t, url, client.WithElicitationHandler(elicitFunc(func(ctx context.Context, _ mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
		asked <- struct{}{}
		select {
		case <-answer:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{Action: mcp.ElicitationResponseActionAccept, Content: map[string]any{"name": "Ada"}}}, nil
	})))
	_, otherNotes := dialMCP(t, url)

	statuses := func(notes func() []mcp.JSONRPCNotification, id string) []string {
		var out []string
		for _, n := range notes() {
			if n.Method == string(mcp.MethodNotificationTasksStatus) && n.Params.AdditionalFields["taskId"] == id {
				out = append(out, fmt.Sprint(n.Params.AdditionalFields["status"]))
			}
		}
		return out
	}
	waitNotified := func(id, want string) {
		t.Helper()
		for deadline := patience(t); !slices.Contains(statuses(notes, id), want); time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("task %s: statuses notified %v, want %s among them", id, statuses(notes, id), want)
			}
		}
	}

	id := startTask(t, c, "ask")
	select {
	case <-asked:
	case <-time.After(time.Until(patience(t))):
		t.Fatal("the client was never asked")
	}
	waitStatus(t, c, id, "input_required")
	waitNotified(id, "input_required")
	close(answer)
	waitStatus(t, c, id, "working")
	waitNotified(id, "working")
	close(goOn)
	waitStatus(t, c, id, "completed")
	waitNotified(id, "completed")
	if got := statuses(notes, id); !slices.Equal(got, []string{"input_required", "working", "completed"}) {
		t.Errorf("statuses notified %v, want input_required, working, completed", got)
	}
	if got := statuses(otherNotes, id); len(got) != 0 {
		t.Errorf("another session was told of the task: %v", got)
	}
}

// TestTaskInputOnTasksResult: a 2025-11-25 client that opens no GET stream
// (mcp-go's opens none by default) and, finding its task input_required,
// calls tasks/result, as MCP 2025-11-25 asks of it, is asked there (mcp-go
// copy, item 77), an elicitation or a sampling request, whose related-task
// names the task (item 78 for sampling's _meta), not the asker's (see
// askerMeta); its answer reaches the
// task, whose result tasks/result then returns. Before, the request waited
// for a GET stream, and the task in input_required until its deadline.
func TestTaskInputOnTasksResult(t *testing.T) {
	url := serveAskingTask(t, nil)
	related := make(chan *mcp.Meta, 1)
	c, _ := dialMCPStream(t, url, false,
		client.WithElicitationHandler(elicitFunc(func(_ context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
			related <- req.Params.Meta
			return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{Action: mcp.ElicitationResponseActionAccept, Content: map[string]any{"name": "Ada"}}}, nil
		})),
		client.WithSamplingHandler(samplingFunc(func(_ context.Context, req mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			related <- req.CreateMessageParams.Meta
			return &mcp.CreateMessageResult{SamplingMessage: mcp.SamplingMessage{Role: mcp.RoleAssistant, Content: mcp.NewTextContent("Ada")}, Model: "m1"}, nil
		})))

	for _, tool := range []string{"ask", "sample"} {
		id := startTask(t, c, tool)
		waitStatus(t, c, id, "input_required")
		ctx, cancel := context.WithDeadline(context.Background(), patience(t))
		res, err := c.TaskResult(ctx, mcp.TaskResultRequest{Params: mcp.TaskResultParams{TaskId: id}})
		cancel()
		if err != nil {
			t.Fatalf("%s: tasks/result: %v", tool, err)
		}
		if len(res.Content) != 1 || res.IsError || !strings.Contains(fmt.Sprint(res.Content[0]), "Ada") {
			t.Fatalf("%s: tasks/result answered %+v; want the call's result with the client's answer", tool, res)
		}
		waitStatus(t, c, id, "completed")
		select {
		case meta := <-related:
			// The asker's related-task is replaced and its progress
			// token dropped; its own member passes.
			b, _ := json.Marshal(meta)
			if want := `{"example.com/hint":"short","io.modelcontextprotocol/related-task":{"taskId":"` + id + `"}}`; string(b) != want {
				t.Errorf("%s: the request's _meta is %s; want %s", tool, b, want)
			}
		default:
			t.Fatalf("%s: the client was not asked", tool)
		}
	}
}

// askerMeta is the _meta of the requests serveAskingTask's tools make, as
// an upstream's relayed request carries it: a progress token and a
// related-task of the upstream's own, and a member of its own.
const askerMeta = `"_meta":{"progressToken":"upstream-7","io.modelcontextprotocol/related-task":{"taskId":"upstream-task"},"example.com/hint":"short"}`

// serveAskingTask serves, over streamable HTTP, the task-capable tools
// "ask", which asks its client for a name with an elicitation, and
// "sample", which asks with a sampling request (both with askerMeta); each then, given the
// answer, waits for then (if not nil) and returns the answer. It returns
// the server's URL. The call's deadline is the test's patience: a fixed
// one could end the call while the test, on a loaded machine, still waits
// for it.
func serveAskingTask(t *testing.T, then func(context.Context) error) string {
	t.Helper()
	asking := func(name, method, params string) *Tool {
		return Must(NewTool(ToolDef{Name: name, InputSchema: json.RawMessage(`{"type":"object"}`), TaskSupport: TaskOptional}, func(ctx context.Context, call *Call) (*Result, error) {
			out, err := RequestFromClient(ctx, method, json.RawMessage(params))
			if err != nil {
				return nil, err
			}
			if then != nil {
				if err := then(ctx); err != nil {
					return nil, err
				}
			}
			return OkText(string(out)), nil
		}))
	}
	cat := catalogOf("t",
		asking("ask", MethodElicitation, `{"message":"name?","requestedSchema":{"type":"object","properties":{"name":{"type":"string"}}},`+askerMeta+`}`),
		asking("sample", MethodSampling, `{"messages":[{"role":"user","content":{"type":"text","text":"name?"}}],"maxTokens":10,`+askerMeta+`}`),
	)
	m := NewMCPServer(&MCPOptions{Name: "t", Version: "1", Catalog: cat, Pipeline: NewPipeline(&Options{Tools: cat, Recorder: newMemRecorder(), CallTimeout: time.Until(patience(t))})})
	return serveMCP(t, m)
}

// TestTaskNotificationsNameTheirTask: the progress reports and log
// messages of a 2025-11-25 task's call carry the task's related-task, as
// MCP 2025-11-25 (tasks) asks of every notification related to a task; a
// call made without a task sends them without one.
func TestTaskNotificationsNameTheirTask(t *testing.T) {
	report := Must(NewTool(ToolDef{Name: "report", InputSchema: json.RawMessage(`{"type":"object"}`), TaskSupport: TaskOptional}, func(ctx context.Context, _ *Call) (*Result, error) {
		ReportProgress(ctx, Progress{Progress: 1, Total: 2, Message: "half"})
		ReportLog(ctx, "error", "report", "halfway")
		return OkText("done"), nil
	}))
	cat := catalogOf("t", report)
	m := NewMCPServer(&MCPOptions{Name: "t", Version: "1", Catalog: cat, Pipeline: NewPipeline(&Options{Tools: cat, Recorder: newMemRecorder()})})
	c, notes := dialMCPStream(t, serveMCP(t, m), true)

	// relatedOf is the related-task of the call's progress report (to
	// token) and log message, by method, among the notifications from the
	// from-th on, once both have come.
	relatedOf := func(token string, from int) map[string]string {
		t.Helper()
		var got map[string]string
		eventually(t, "the call's progress report and log message", func() bool {
			got = map[string]string{}
			for _, n := range notes()[from:] {
				p := n.Params.AdditionalFields
				if n.Method == string(mcp.MethodNotificationProgress) && p["progressToken"] == token ||
					n.Method == string(mcp.MethodNotificationMessage) && p["data"] == "halfway" && p["logger"] == "report" {
					b, _ := json.Marshal(n.Params.Meta[mcp.RelatedTaskMetaKey])
					got[n.Method] = string(b)
				}
			}
			return len(got) == 2
		})
		return got
	}

	raw, err := request(t, c, "tools/call", map[string]any{"name": "report", "arguments": map[string]any{}, "task": map[string]any{"ttl": 60000}, "_meta": map[string]any{"progressToken": "in-task"}})
	if err != nil {
		t.Fatal(err)
	}
	var cr wireTask
	if err := json.Unmarshal(raw, &cr); err != nil || cr.Task.TaskID == "" {
		t.Fatalf("task call answered %s (%v), want a CreateTaskResult", raw, err)
	}
	for method, related := range relatedOf("in-task", 0) {
		if want := `{"taskId":"` + cr.Task.TaskID + `"}`; related != want {
			t.Errorf("the task's %s carries related-task %s; want %s", method, related, want)
		}
	}
	// The next call's log message reads like this one's: only what
	// comes after this one's counts.
	from := len(notes())
	if _, err := request(t, c, "tools/call", map[string]any{"name": "report", "arguments": map[string]any{}, "_meta": map[string]any{"progressToken": "no-task"}}); err != nil {
		t.Fatal(err)
	}
	for method, related := range relatedOf("no-task", from) {
		if related != "null" {
			t.Errorf("a call of no task: its %s carries related-task %s", method, related)
		}
	}
}
