package e2e

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
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
	Asked []struct {
		Message string `json:"message"`
		Task    string `json:"task"`
	} `json:"asked"`
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
		up := everythingStdio(t, "everything")
		up["relay_elicitation"] = true
		e := newEnv(t, upstreams(up), everythingPolicy)
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

	// An ambiguous topic: the upstream's task asks its client which
	// meaning is meant. The SDK's task stream calls tasks/result when it
	// sees input_required, and is asked there (or on its GET stream); the
	// request names toolgate's task, not the upstream's, and the answer
	// reaches the upstream's report.
	var asked taskRun
	run(map[string]any{"arguments": map[string]any{"topic": "rivers", "ambiguous": true}, "elicit": map[string]any{"interpretation": "technical"}}, &asked)
	if len(asked.Asked) != 1 || asked.Asked[0].Task != asked.TaskID {
		t.Errorf("elicitations the client got: %+v; want one, naming task %s", asked.Asked, asked.TaskID)
	}
	if asked.Result == nil || asked.Result.IsError || len(asked.Result.Content) == 0 ||
		!strings.Contains(strings.ToLower(asked.Result.Content[0].Text), "technical") {
		t.Fatalf("ambiguous task run: %+v; want the upstream's report on the technical meaning", asked)
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
	e := definitionsEnv(t)
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

// modernClient sends 2026-07-28 requests over streamable HTTP, as a
// client of the tasks extension (io.modelcontextprotocol/tasks) does:
// each request carries the envelope (protocol version, client info, the
// capabilities, elicitation and the extension) and the routing headers.
// No MCP SDK implements the extension's client side yet (the TypeScript
// SDK 2.4 refuses a tools/call result of type "task"; the Go SDK has no
// tasks); the conformance suite's own client drives it in
// TestConformance/tasks.
type modernClient struct {
	url  string
	id   int
	caps map[string]any // if nil: elicitation and the tasks extension
}

func (c *modernClient) send(t *testing.T, method string, params map[string]any) (map[string]any, map[string]any) {
	t.Helper()
	c.id++
	params["_meta"] = map[string]any{
		"io.modelcontextprotocol/protocolVersion":    era2026,
		"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "e2e-tasks", "version": "1"},
		"io.modelcontextprotocol/clientCapabilities": c.caps,
	}
	if c.caps == nil {
		params["_meta"].(map[string]any)["io.modelcontextprotocol/clientCapabilities"] = map[string]any{"elicitation": map[string]any{}, "extensions": map[string]any{"io.modelcontextprotocol/tasks": map[string]any{}}}
	}
	name, _ := params["name"].(string)
	if id, ok := params["taskId"].(string); ok {
		name = id
	}
	h := map[string]string{"Mcp-Protocol-Version": era2026, "Mcp-Method": method}
	if name != "" {
		h["Mcp-Name"] = name
	}
	code, _, body := post(t, c.url, mustJSON(map[string]any{"jsonrpc": "2.0", "id": c.id, "method": method, "params": params}), h)
	if i := strings.Index(body, "data: "); i >= 0 { // an event stream: its one message
		body = strings.TrimSpace(strings.SplitN(body[i+len("data: "):], "\n", 2)[0])
	}
	var resp struct {
		Result map[string]any `json:"result"`
		Error  map[string]any `json:"error"`
	}
	if err := json.Unmarshal([]byte(body), &resp); err != nil {
		t.Fatalf("%s: HTTP %d %s: %v", method, code, body, err)
	}
	return resp.Result, resp.Error
}

// TestTasksExtensionThroughToolgate: a 2026-07-28 client of the tasks
// extension calls server-everything's simulate-research-query through
// toolgate: toolgate answers with a task of its own and follows the
// upstream's (2025-11-25) task behind it. Once polled to the report, once
// cancelled mid-way (the upstream task is cancelled too), and once on an
// ambiguous topic, where the upstream's elicitation reaches the client
// as the task's input request and the client's tasks/update answer
// reaches the upstream.
func TestTasksExtensionThroughToolgate(t *testing.T) {
	t.Parallel()
	const tool = "everything__simulate-research-query"
	up := everythingStdio(t, "everything")
	up["relay_elicitation"] = true
	e := newEnv(t, upstreams(up), everythingPolicy)
	srv := e.StartHTTP(t)
	c := &modernClient{url: srv.URL}
	report := func(task map[string]any) string {
		res, _ := task["result"].(map[string]any)
		content, _ := res["content"].([]any)
		if len(content) == 0 || res["isError"] == true {
			return ""
		}
		text, _ := content[0].(map[string]any)["text"].(string)
		return text
	}

	t.Run("completed", func(t *testing.T) {
		task, _, _ := c.followTask(t, tool, map[string]any{"topic": "tides"}, nil, 0)
		if task["status"] != "completed" || !strings.Contains(report(task), "Research Report: tides") {
			t.Fatalf("task %v; want completed with the upstream's report", task)
		}
		rec := awaitTaskRecord(t, e, task["taskId"].(string))
		if rec == nil || rec.Status != "ok" || rec.Tool != tool {
			t.Fatalf("record of task %v: %+v", task["taskId"], rec)
		}
		if n := callEvents(e.liveEvents(t), "task.upstream.result", rec.CallID); n != 1 {
			t.Errorf("task.upstream.result events of call %s: %d, want 1", rec.CallID, n)
		}
	})

	t.Run("cancelled", func(t *testing.T) {
		task, statuses, _ := c.followTask(t, tool, map[string]any{"topic": "cancel me"}, nil, 1200*time.Millisecond)
		if task["status"] != "cancelled" || statuses[0] != "working" {
			t.Fatalf("task %v (statuses %v); want working, then cancelled", task, statuses)
		}
		checkCancelledUpstream(t, e, task["taskId"].(string))
	})

	t.Run("input", func(t *testing.T) {
		task, statuses, asked := c.followTask(t, tool, map[string]any{"topic": "rivers", "ambiguous": true}, map[string]any{"interpretation": "technical"}, 0)
		if task["status"] != "completed" || len(asked) != 1 || asked[0] != "elicitation/create" || !slices.Contains(statuses, "input_required") {
			t.Fatalf("task %v (statuses %v, asked %v); want one elicitation asked through the task, then completed", task, statuses, asked)
		}
		if !strings.Contains(strings.ToLower(report(task)), "technical") {
			t.Errorf("report %q does not use the client's answer", report(task))
		}
		if n := countEvents(e.liveEvents(t), "task.created", tool); n < 3 {
			t.Errorf("%d task.created events of %s, want one per run", n, tool)
		}
	})
	srv.Stop(t)
}

// followTask calls tool, which must answer with a task, and follows the
// task to its end: it answers the task's input requests with answer, and
// cancels it once it has run for cancelAfter (if not zero). It returns the
// last tasks/get, the statuses seen and the methods of the requests asked.
func (c *modernClient) followTask(t *testing.T, tool string, args, answer map[string]any, cancelAfter time.Duration) (task map[string]any, statuses, asked []string) {
	t.Helper()
	created, rpcErr := c.send(t, "tools/call", map[string]any{"name": tool, "arguments": args})
	id, _ := created["taskId"].(string)
	if rpcErr != nil || created["resultType"] != "task" || id == "" {
		t.Fatalf("tools/call: %v %v; want a CreateTaskResult", created, rpcErr)
	}
	start := time.Now()
	for time.Since(start) < 60*time.Second {
		task, rpcErr = c.send(t, "tasks/get", map[string]any{"taskId": id})
		if rpcErr != nil {
			t.Fatalf("tasks/get: %v", rpcErr)
		}
		status, _ := task["status"].(string)
		statuses = append(statuses, status)
		switch {
		case status == "completed" || status == "failed" || status == "cancelled":
			return task, statuses, asked
		case status == "input_required":
			answers := map[string]any{}
			reqs, _ := task["inputRequests"].(map[string]any)
			for k, r := range reqs {
				m, _ := r.(map[string]any)["method"].(string)
				asked = append(asked, m)
				answers[k] = map[string]any{"action": "accept", "content": answer}
			}
			if ack, rpcErr := c.send(t, "tasks/update", map[string]any{"taskId": id, "inputResponses": answers}); rpcErr != nil || ack["resultType"] != "complete" {
				t.Fatalf("tasks/update: %v %v", ack, rpcErr)
			}
		case cancelAfter > 0 && time.Since(start) > cancelAfter:
			if ack, rpcErr := c.send(t, "tasks/cancel", map[string]any{"taskId": id}); rpcErr != nil || ack["resultType"] != "complete" || ack["taskId"] != nil {
				t.Fatalf("tasks/cancel: %v %v; want the bare ack", ack, rpcErr)
			}
		}
		time.Sleep(100 * time.Millisecond) // a task client polls
	}
	t.Fatalf("task %s did not end within a minute: %v", id, statuses)
	return nil, nil, nil
}

// TestTasksExtensionRelaysUpstreamTask: an upstream that serves the tasks
// extension (e2e/taskfixture -modern) answers a call with a task of its
// own; toolgate relays it as the caller's task: the upstream's question
// asked while its task runs reaches the caller on tasks/get and the
// caller's tasks/update answer reaches the upstream; a cancelled task is
// cancelled upstream; a caller without the extension gets the upstream's
// plain answer.
func TestTasksExtensionRelaysUpstreamTask(t *testing.T) {
	t.Parallel()
	const tool = "m__confirm_in_task"
	fixture := confBuild(t, "./e2e/taskfixture")
	e := newEnv(t,
		upstreams(map[string]any{"name": "m", "command": fixture, "args": []string{"-modern"}, "startup_timeout": "20s", "grant": []string{"net"}}),
		set("policy.destructive.allow", []string{tool}),
	)
	srv := e.StartHTTP(t)
	c := &modernClient{url: srv.URL}

	t.Run("answered", func(t *testing.T) {
		task, statuses, asked := c.followTask(t, tool, map[string]any{"seconds": 0.2}, map[string]any{"confirm": true}, 0)
		if task["status"] != "completed" || len(asked) != 1 || asked[0] != "elicitation/create" || !slices.Contains(statuses, "input_required") {
			t.Fatalf("task %v (statuses %v, asked %v); want the upstream's question asked, then completed", task, statuses, asked)
		}
		if s := mustJSON(task["result"]); !strings.Contains(s, "confirmed with") || !strings.Contains(s, `\"confirm\":true`) {
			t.Errorf("result %s; want the upstream's, built on the caller's answer", s)
		}
		rec := awaitTaskRecord(t, e, task["taskId"].(string))
		if rec == nil || rec.Tool != tool {
			t.Fatalf("record of task %v: %+v", task["taskId"], rec)
		}
		events := e.liveEvents(t)
		if callEvents(events, "task.upstream.created", rec.CallID) < 1 || callEvents(events, "task.upstream.result", rec.CallID) != 1 {
			t.Errorf("the upstream task's steps are not events of the call %s (record %+v)", rec.CallID, rec)
		}
	})

	t.Run("cancelled", func(t *testing.T) {
		task, _, _ := c.followTask(t, tool, map[string]any{"seconds": 30}, nil, 500*time.Millisecond)
		if task["status"] != "cancelled" {
			t.Fatalf("task %v; want cancelled", task)
		}
		checkCancelledUpstream(t, e, task["taskId"].(string))
	})

	t.Run("without the extension", func(t *testing.T) {
		// Only the caller's own capabilities reach the upstream: it answers
		// a caller that cannot take a task without one.
		plain := &modernClient{url: srv.URL, caps: map[string]any{"elicitation": map[string]any{}}}
		res, rpcErr := plain.send(t, "tools/call", map[string]any{"name": tool, "arguments": map[string]any{"seconds": 0}})
		if rpcErr != nil || res["resultType"] != "complete" || !strings.Contains(mustJSON(res["content"]), "done without a task") {
			t.Errorf("%v %v; want the upstream's plain result", res, rpcErr)
		}
	})
	srv.Stop(t)
}

// checkCancelledUpstream checks that the call of a cancelled task is
// recorded cancelled and cancelled the upstream's task behind it.
func checkCancelledUpstream(t *testing.T, e *Env, taskID string) {
	t.Helper()
	rec := awaitTaskRecord(t, e, taskID)
	if rec == nil || rec.Status != "cancelled" {
		t.Fatalf("record of the cancelled task %s: %+v", taskID, rec)
	}
	if !waitFor(10*time.Second, func() bool { return callEvents(e.liveEvents(t), "task.upstream.cancel", rec.CallID) == 1 }) {
		t.Errorf("the upstream task of call %s was not cancelled (no task.upstream.cancel event)", rec.CallID)
	}
}
