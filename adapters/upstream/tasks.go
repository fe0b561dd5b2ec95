package upstream

import (
	"context"
	"encoding/json"
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

func (t wireTask) poll() time.Duration {
	if t.PollInterval == nil || *t.PollInterval <= 0 {
		return defaultTaskPoll
	}
	return min(max(time.Duration(*t.PollInterval)*time.Millisecond, minTaskPoll), maxTaskPoll)
}

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
	event := func(typ string, t wireTask, extra map[string]any) {
		f := map[string]any{"upstream": u.name, "upstream_task_id": task.TaskID, "status": t.Status}
		if t.StatusMessage != "" {
			f["message"] = gateway.Truncate(t.StatusMessage, 1024)
		}
		for k, v := range extra {
			f[k] = v
		}
		gateway.CallEvent(ctx, typ, f)
	}
	event("task.upstream.created", task, nil)
	// giveUp ends the wait before the upstream task's result: the upstream
	// is told to stop working on it.
	giveUp := func(err error) (json.RawMessage, error) {
		reason := err.Error()
		if cause := context.Cause(ctx); cause != nil {
			reason = cause.Error()
		}
		event("task.upstream.cancel", task, map[string]any{"reason": reason})
		go u.cancelTask(c, task.TaskID)
		return nil, err
	}

	step := 0
	for !task.terminal() && task.Status != "input_required" {
		t := time.NewTimer(task.poll())
		select {
		case <-ctx.Done():
			t.Stop()
			return giveUp(ctx.Err())
		case <-t.C:
		}
		raw, err := c.request(ctx, string(mcp.MethodTasksGet), map[string]any{"taskId": task.TaskID})
		if err != nil {
			return giveUp(err)
		}
		var got wireTask
		if err := json.Unmarshal(raw, &got); err != nil || got.Status == "" {
			got = task // unreadable: keep polling what we knew
		}
		if got.Status != task.Status || got.StatusMessage != task.StatusMessage {
			event("task.upstream.status", got, nil)
			if got.StatusMessage != "" {
				step++
				gateway.ReportProgress(ctx, gateway.Progress{Progress: float64(step), Message: got.StatusMessage})
			}
		}
		got.TaskID = task.TaskID
		task = got
	}
	// Done, or waiting on input that the upstream asks for while
	// tasks/result is open: either way tasks/result answers at the end.
	res, err := c.request(ctx, string(mcp.MethodTasksResult), map[string]any{"taskId": task.TaskID})
	switch {
	case err != nil && ctx.Err() != nil:
		return giveUp(err)
	case err != nil:
		return nil, err // the upstream answered: there is nothing to cancel
	}
	event("task.upstream.result", task, nil)
	return res, nil
}

// cancelTask asks the upstream to cancel its task, off the call's
// context (which has ended) and its goroutine, bounded, best effort.
func (u *Upstream) cancelTask(c *conn, id string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := c.request(ctx, string(mcp.MethodTasksCancel), map[string]any{"taskId": id}); err != nil {
		u.log.Debug("upstream task not cancelled", "task", id, "err", u.errText(err))
	}
}
