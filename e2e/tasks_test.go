package e2e

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// taskRun is what task-client.mjs prints.
type taskRun struct {
	TaskSupport *string  `json:"taskSupport"`
	TaskID      string   `json:"taskId"`
	Statuses    []string `json:"statuses"`
	Before      string   `json:"before"`
	After       string   `json:"after"`
	Listed      []struct {
		TaskID string `json:"taskId"`
		Status string `json:"status"`
	} `json:"listed"`
	Error  string `json:"error"`
	Result *struct {
		IsError bool `json:"isError"`
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
	} `json:"result"`
}

// TestTasksThroughToolgate: the TypeScript SDK client calls
// server-everything's simulate-research-query (which the upstream runs
// only as a task) as an MCP task through toolgate over HTTP: once polled
// to its result, once cancelled mid-way. Each run is one call in the
// records, naming the task, and the upstream task's steps are events of
// that call; the cancelled one cancels the upstream task too.
func TestTasksThroughToolgate(t *testing.T) {
	t.Parallel()
	for _, transport := range []string{"http", "stdio"} {
		t.Run(transport, func(t *testing.T) {
			t.Parallel()
			testTasks(t, transport)
		})
	}
}

// testTasks runs each client against a toolgate of its own (over stdio,
// the client starts it), so that each has a run archive of its own.
func testTasks(t *testing.T, transport string) {
	const tool = "everything__simulate-research-query"
	run := func(arg map[string]any, out *taskRun) *Env {
		e := newEnv(t, upstreams(everythingStdio(t, "everything")), everythingPolicy)
		arg["tool"], arg["ttl"] = tool, 60000
		if transport == "stdio" {
			arg["transport"], arg["bin"], arg["config"], arg["cwd"] = "stdio", toolgateBin, e.ConfigPath, e.Dir
			arg["env"] = map[string]string{"XDG_STATE_HOME": filepath.Join(e.Dir, "state"), "HOME": e.Dir}
		} else {
			arg["url"] = e.StartHTTP(t).URL
		}
		runNode(t, "task-client.mjs", arg, out)
		if out.Error != "" {
			t.Fatalf("TypeScript client: %s", out.Error)
		}
		return e
	}

	var done taskRun
	e := run(map[string]any{"arguments": map[string]any{"topic": "tides"}}, &done)
	if done.TaskSupport == nil || *done.TaskSupport != "optional" {
		t.Errorf("listed taskSupport %v, want optional", done.TaskSupport)
	}
	if done.TaskID == "" || done.Result == nil || done.Result.IsError || len(done.Result.Content) == 0 ||
		!strings.Contains(done.Result.Content[0].Text, "Research Report: tides") {
		t.Fatalf("task run: %+v; want a task polled to the upstream's report", done)
	}
	if len(done.Statuses) == 0 || done.Statuses[len(done.Statuses)-1] != "completed" {
		t.Errorf("statuses seen while polling %v; want them to end completed", done.Statuses)
	}
	rec := awaitTaskRecord(t, e, done.TaskID)
	if rec == nil || rec.Status != "ok" || rec.Tool != tool {
		t.Fatalf("record of task %s: %+v", done.TaskID, rec)
	}
	if n := callEvents(e.liveEvents(t), "task.upstream.result", rec.CallID); n != 1 {
		t.Errorf("task.upstream.result events of call %s: %d, want 1", rec.CallID, n)
	}
	if n := countEvents(e.liveEvents(t), "task.completed", tool); n < 1 {
		t.Errorf("no task.completed event")
	}

	var cancelled taskRun
	e = run(map[string]any{"arguments": map[string]any{"topic": "cancel me"}, "cancel": true, "cancelAfterMs": 1200}, &cancelled)
	if cancelled.Before != "working" || cancelled.After != "cancelled" {
		t.Fatalf("cancel run: %+v; want working, then cancelled", cancelled)
	}
	listed := false
	for _, l := range cancelled.Listed {
		listed = listed || l.TaskID == cancelled.TaskID && l.Status == "cancelled"
	}
	if !listed {
		t.Errorf("tasks/list %+v does not show task %s cancelled", cancelled.Listed, cancelled.TaskID)
	}
	rec = awaitTaskRecord(t, e, cancelled.TaskID)
	if rec == nil || rec.Status != "cancelled" {
		t.Fatalf("record of the cancelled task %s: %+v", cancelled.TaskID, rec)
	}
	if !waitFor(10*time.Second, func() bool { return callEvents(e.liveEvents(t), "task.upstream.cancel", rec.CallID) == 1 }) {
		t.Errorf("the upstream task of call %s was not cancelled (no task.upstream.cancel event)", rec.CallID)
	}
	if n := callEvents(e.liveEvents(t), "task.upstream.result", rec.CallID); n != 0 {
		t.Errorf("the cancelled call took the upstream's result (%d task.upstream.result events)", n)
	}
}

func awaitTaskRecord(t *testing.T, e *Env, taskID string) *ToolRecord {
	t.Helper()
	var rec *ToolRecord
	waitFor(15*time.Second, func() bool {
		for _, r := range e.liveTools(t) {
			if r.Task != nil && r.Task.ID == taskID {
				rec = &r
				return true
			}
		}
		return false
	})
	return rec
}

// callEvents counts the events of a type recorded against one call.
func callEvents(events []map[string]any, typ, callID string) int {
	n := 0
	for _, ev := range events {
		if ev["type"] == typ && ev["call_id"] == callID {
			n++
		}
	}
	return n
}

// TestDefinitionAsTask: a definition-only tool called as a task by the
// TypeScript client; the operator answers with `toolgate submit` while
// the client polls, and the task completes with the answer.
func TestDefinitionAsTask(t *testing.T) {
	t.Parallel()
	e, _ := definitionsEnv(t)
	s := e.StartHTTP(t)
	submitted := make(chan string, 1)
	ctx := callCtx(t)
	go func() {
		var id string
		waitFor(30*time.Second, func() bool {
			ids, _ := pendingCalls(ctx, e)
			id = ids["ask_reviewer"]
			return id != ""
		})
		out, err := e.command(ctx, "submit", id, `{"verdict":"approve"}`).CombinedOutput()
		submitted <- fmt.Sprintf("%s %v", out, err)
	}()
	var r taskRun
	runNode(t, "task-client.mjs", map[string]any{"url": s.URL, "tool": "ask_reviewer", "arguments": map[string]any{"release": "v2"}, "ttl": 120000}, &r)
	t.Logf("submit: %s", <-submitted)
	if r.Error != "" || r.TaskSupport == nil || *r.TaskSupport != "optional" {
		t.Fatalf("task run: %+v", r)
	}
	if r.Result == nil || r.Result.IsError || len(r.Result.Content) == 0 || !strings.Contains(r.Result.Content[0].Text, "approve") {
		t.Fatalf("task result %+v; want the operator's verdict", r.Result)
	}
	if rec := awaitTaskRecord(t, e, r.TaskID); rec == nil || rec.Status != "ok" || rec.Tool != "ask_reviewer" {
		t.Fatalf("record of task %s: %+v", r.TaskID, rec)
	}
}
