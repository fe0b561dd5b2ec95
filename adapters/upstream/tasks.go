package upstream

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/toolgate/toolgate/gateway"
)

// Upstream tasks (MCP 2025-11-25, experimental). An upstream tool whose
// execution.taskSupport is "optional" or "required" is offered with
// "optional": a caller may call it as a task of toolgate's own (the MCP
// mirror runs the whole call in the background, see gateway/mcp_tasks.go)
// or as a plain call. Either way, when the upstream runs it as a task,
// the call's handler creates the upstream task, follows it with tasks/get
// until it ends or asks for input, and then takes its result with
// tasks/result (which, for a task waiting on input, is where the upstream
// sends its elicitation or sampling requests, relayed like any other).
// When the call ends early (the caller's tasks/cancel, the deadline), the
// upstream task is cancelled with tasks/cancel. Each step is a task.*
// event of the call in the run archive, with the upstream's task id.

// Bounds of how often an upstream task is polled: its own pollInterval,
// clamped, or the default when it gives none.
const (
	minTaskPoll     = 50 * time.Millisecond
	maxTaskPoll     = 2 * time.Second
	defaultTaskPoll = 250 * time.Millisecond
)

// upstreamTaskParams is the task member of a tools/call sent upstream:
// the caller's TTL, if it gave one.
func upstreamTaskParams(call *gateway.Call) map[string]any {
	p := map[string]any{}
	if call.Task != nil && call.Task.TTLMs > 0 {
		p["ttl"] = call.Task.TTLMs
	}
	return p
}

// wireTask is the task in a CreateTaskResult ({"task": {...}}) or a
// tasks/get result (the task's members at the top).
type wireTask struct {
	TaskID        string `json:"taskId"`
	Status        string `json:"status"`
	StatusMessage string `json:"statusMessage"`
	PollInterval  *int64 `json:"pollInterval"`
}

func (t wireTask) terminal() bool {
	switch t.Status {
	case "completed", "failed", "cancelled":
		return true
	}
	return false
}

func (t wireTask) poll() time.Duration { return pollEvery(t.PollInterval) }

// awaitTask follows the upstream task created by a tools/call (raw is
// the call's answer) to its end and returns the tools/call result that
// tasks/result gives. An upstream that answered with a plain result
// (it ran the call at once) has that result returned as it is.
func (u *Upstream) awaitTask(ctx context.Context, c *conn, call *gateway.Call, raw json.RawMessage) (json.RawMessage, error) {
	var created struct {
		Task *wireTask `json:"task"`
	}
	if json.Unmarshal(raw, &created) != nil || created.Task == nil || created.Task.TaskID == "" {
		return raw, nil
	}
	task := *created.Task
	f := &followed{u: u, ctx: ctx, c: c, id: task.TaskID}
	event := func(typ string, t wireTask, extra map[string]any) { f.event(typ, t.Status, t.StatusMessage, extra) }
	event("task.upstream.created", task, nil)

	for !task.terminal() && task.Status != "input_required" {
		raw, err := f.poll(task.poll())
		if err != nil {
			return f.giveUp(err)
		}
		var got wireTask
		if err := json.Unmarshal(raw, &got); err != nil || got.Status == "" {
			continue // unreadable: keep polling what we knew
		}
		f.observe(task.Status, task.StatusMessage, got.Status, got.StatusMessage)
		got.TaskID = task.TaskID
		task = got
	}
	// Done, or waiting on input that the upstream asks for while
	// tasks/result is open: either way tasks/result answers at the end.
	res, err := c.request(ctx, string(mcp.MethodTasksResult), map[string]any{"taskId": task.TaskID})
	switch {
	case err != nil && ctx.Err() != nil:
		return f.giveUp(err)
	case err != nil:
		return nil, err // the upstream answered: there is nothing to cancel
	}
	event("task.upstream.result", task, nil)
	return res, nil
}

// followed is an upstream task a call follows: its steps are events of
// the call, and a call that ends first cancels it upstream.
type followed struct {
	u    *Upstream
	ctx  context.Context
	c    *conn
	caps json.RawMessage // the caller's, on a 2026-07-28 connection
	id   string
	step int // progress reported
}

func (f *followed) event(typ, status, message string, extra map[string]any) {
	fields := map[string]any{"upstream": f.u.name, "upstream_task_id": f.id}
	if status != "" {
		fields["status"] = status
	}
	if f.c.modern {
		fields["protocol"] = modernVersion
	}
	if message != "" {
		fields["message"] = gateway.Truncate(message, 1024)
	}
	for k, v := range extra {
		fields[k] = v
	}
	gateway.CallEvent(f.ctx, typ, fields)
}

// poll waits d (or the call's end) and gets the task again (tasks/get).
func (f *followed) poll(d time.Duration) (json.RawMessage, error) {
	t := time.NewTimer(d)
	select {
	case <-f.ctx.Done():
		t.Stop()
		return nil, f.ctx.Err()
	case <-t.C:
	}
	return f.c.requestAs(f.ctx, string(mcp.MethodTasksGet), map[string]any{"taskId": f.id}, f.caps)
}

// observe records a change of the task's status or status message, and
// passes a new status message on as progress.
func (f *followed) observe(wasStatus, wasMessage, status, message string) {
	if status == wasStatus && message == wasMessage {
		return
	}
	f.event("task.upstream.status", status, message, nil)
	if message != "" && message != wasMessage {
		f.step++
		gateway.ReportProgress(f.ctx, gateway.Progress{Progress: float64(f.step), Message: message})
	}
}

// giveUp ends the wait before the upstream task's result: the upstream is
// told to stop working on it (off the call's context, which has ended,
// and its goroutine; bounded, best effort).
func (f *followed) giveUp(err error) (json.RawMessage, error) {
	reason := err.Error()
	if cause := context.Cause(f.ctx); cause != nil {
		reason = cause.Error()
	}
	f.event("task.upstream.cancel", "", "", map[string]any{"reason": reason})
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if _, err := f.c.requestAs(ctx, string(mcp.MethodTasksCancel), map[string]any{"taskId": f.id}, f.caps); err != nil {
			f.u.log.Debug("upstream task not cancelled", "task", f.id, "err", f.u.errText(err))
		}
	}()
	return nil, err
}

// Upstream tasks of 2026-07-28 (the tasks extension, SEP-2663). An
// upstream that serves the extension (its server/discover says so)
// decides per call whether it answers with a task: its task-supporting
// tools are offered as directing their tasks themselves
// ([gateway.Tool.TaskDirected]), and a call of a caller of the extension
// goes to it with the caller's capabilities: only a caller that declared
// the extension can be answered with a task (a task-supporting tool is
// not made a task, with its polling, for a caller that cannot take it).
// When the upstream answers with a task, the call becomes the caller's
// task ([gateway.BecomeTask]; were it not, toolgate would still follow
// it and answer when it ends), and toolgate follows the upstream task
// with tasks/get: its input requests
// are asked of the caller (in the caller's task's rounds) and answered
// with tasks/update, its result or error is the call's, and the call's
// end before it (tasks/cancel, the deadline) cancels it upstream.

// servesTasks reports whether c is a 2026-07-28 connection to an upstream
// that serves the tasks extension.
func (c *conn) servesTasks() bool {
	if !c.modern {
		return false
	}
	_, ok := c.caps.Extensions[gateway.TasksExtension]
	return ok
}

// modernTask is a task of the extension: CreateTaskResult, DetailedTask.
type modernTask struct {
	ResultType     string                     `json:"resultType"`
	TaskID         string                     `json:"taskId"`
	Status         string                     `json:"status"`
	StatusMessage  string                     `json:"statusMessage"`
	PollIntervalMs *int64                     `json:"pollIntervalMs"`
	InputRequests  map[string]json.RawMessage `json:"inputRequests"`
	Result         json.RawMessage            `json:"result"`
	Error          *rpcError                  `json:"error"` // code, message, data
}

// awaitModernTask follows the upstream task a tools/call of a connection
// that serves the extension answered with (raw) to its end, and returns
// the task's result as the call's; any other answer is returned as it
// is.
func (u *Upstream) awaitModernTask(ctx context.Context, c *conn, caps json.RawMessage, raw json.RawMessage) (json.RawMessage, error) {
	var task modernTask
	if json.Unmarshal(raw, &task) != nil || task.ResultType != "task" || task.TaskID == "" {
		return raw, nil
	}
	gateway.BecomeTask(ctx)
	id := task.TaskID
	f := &followed{u: u, ctx: ctx, c: c, caps: caps, id: id}
	event := func(typ string, t modernTask, extra map[string]any) { f.event(typ, t.Status, t.StatusMessage, extra) }
	event("task.upstream.created", task, nil)
	answered := map[string]bool{} // input requests already answered
	for {
		switch task.Status {
		case "completed":
			event("task.upstream.result", task, nil)
			if len(task.Result) == 0 {
				return nil, &rpcError{Method: "tasks/get", Code: mcp.INTERNAL_ERROR, Message: "the upstream's completed task carries no result"}
			}
			return task.Result, nil
		case "failed":
			event("task.upstream.result", task, nil)
			e := task.Error
			if e == nil {
				e = &rpcError{Code: mcp.INTERNAL_ERROR, Message: "the upstream's task failed"}
			}
			e.Method = string(mcp.MethodToolsCall)
			return nil, e
		case "cancelled":
			event("task.upstream.result", task, nil)
			return nil, &rpcError{Method: string(mcp.MethodToolsCall), Code: mcp.INTERNAL_ERROR, Message: "the upstream cancelled its task"}
		case "input_required":
			// Asked of the caller one by one; the task resumes once the
			// upstream has every answer.
			answers := make(map[string]json.RawMessage, len(task.InputRequests))
			for key, r := range task.InputRequests {
				if answered[key] {
					continue // sent; the upstream has not taken it in yet
				}
				var req struct {
					Method string          `json:"method"`
					Params json.RawMessage `json:"params"`
				}
				if err := json.Unmarshal(r, &req); err != nil || req.Method == "" {
					return f.giveUp(fmt.Errorf("upstream %q asked for input toolgate cannot read: %s", u.name, gateway.Truncate(string(r), 256)))
				}
				ans, err := gateway.RequestFromClient(ctx, req.Method, req.Params)
				if err != nil {
					return f.giveUp(fmt.Errorf("upstream %q asked the caller (%s): %w", u.name, req.Method, err))
				}
				answers[key] = ans
			}
			if len(answers) > 0 {
				if _, err := c.requestAs(ctx, string(mcp.MethodTasksUpdate), map[string]any{"taskId": id, "inputResponses": answers}, caps); err != nil {
					return f.giveUp(err)
				}
				for key := range answers {
					answered[key] = true
				}
			}
		}
		raw, err := f.poll(pollEvery(task.PollIntervalMs))
		if err != nil {
			return f.giveUp(err)
		}
		var got modernTask
		if err := json.Unmarshal(raw, &got); err != nil || got.Status == "" {
			continue // unreadable: keep polling what we knew
		}
		f.observe(task.Status, task.StatusMessage, got.Status, got.StatusMessage)
		task = got
	}
}

// pollEvery is the poll interval of an upstream task: its own, clamped,
// or the default when it gives none.
func pollEvery(ms *int64) time.Duration {
	if ms == nil || *ms <= 0 {
		return defaultTaskPoll
	}
	return min(max(time.Duration(*ms)*time.Millisecond, minTaskPoll), maxTaskPoll)
}
