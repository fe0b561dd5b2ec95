package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"sync"
	"time"
)

// serveModern serves, over stdio, tools of an upstream that serves the
// tasks extension and decides itself when a call becomes a task:
// test_tool_with_task (the tasks-mrtr-composition scenario: a first round
// asks for a name, input_required, and the answered round becomes a task
// whose result greets the name) and confirm_in_task (a task from the
// start, for a caller of the extension, that asks for confirmation while
// it runs and finishes once answered through tasks/update).
// No MCP SDK serves the extension yet, so this is JSON-RPC by hand, both
// eras: initialize for toolgate's 2025-11-25 connection (listing), and
// server/discover plus requests carrying their envelope for the
// 2026-07-28 one.
func serveModern() {
	var (
		mu    sync.Mutex
		tasks = map[string]map[string]any{} // by id: the DetailedTask
		seq   int
	)
	out := json.NewEncoder(os.Stdout)
	reply := func(id json.RawMessage, result any, rpcErr map[string]any) {
		msg := map[string]any{"jsonrpc": "2.0", "id": id}
		if rpcErr != nil {
			msg["error"] = rpcErr
		} else {
			msg["result"] = result
		}
		_ = out.Encode(msg)
	}
	tools := []any{
		map[string]any{
			"name": "test_tool_with_task", "description": "Asks for a name, then works on it as a task.",
			"inputSchema": map[string]any{"type": "object"},
			"execution":   map[string]any{"taskSupport": "required"},
		},
		map[string]any{
			"name": "confirm_in_task", "description": "A task that asks for confirmation while it runs, then answers; seconds: how long it works first.",
			"inputSchema": map[string]any{"type": "object", "properties": map[string]any{"seconds": map[string]any{"type": "number"}}},
			"execution":   map[string]any{"taskSupport": "optional"},
		},
	}
	now := func() string { return time.Now().UTC().Format(time.RFC3339Nano) }
	// newTask makes a working task; created is its CreateTaskResult.
	newTask := func(message string) map[string]any {
		mu.Lock()
		defer mu.Unlock()
		seq++
		id := fmt.Sprintf("fixture-task-%d", seq)
		task := map[string]any{"taskId": id, "status": "working", "createdAt": now(), "lastUpdatedAt": now(), "ttlMs": 60000, "pollIntervalMs": 50}
		if message != "" {
			task["statusMessage"] = message
		}
		tasks[id] = task
		return task
	}
	// result is a copy of task as a result of resultType rt: a
	// CreateTaskResult ("task") or a DetailedTask ("complete"). Callers
	// hold mu.
	result := func(task map[string]any, rt string) map[string]any {
		res := maps.Clone(task)
		res["resultType"] = rt
		return res
	}
	created := func(task map[string]any) map[string]any {
		mu.Lock()
		defer mu.Unlock()
		return result(task, "task")
	}
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 16<<20)
	for in.Scan() {
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Name      string `json:"name"`
				Arguments struct {
					Seconds float64 `json:"seconds"`
				} `json:"arguments"`
				TaskID         string                     `json:"taskId"`
				InputResponses map[string]json.RawMessage `json:"inputResponses"`
				Meta           map[string]json.RawMessage `json:"_meta"`
			} `json:"params"`
		}
		if json.Unmarshal(in.Bytes(), &msg) != nil || len(msg.ID) == 0 || msg.Method == "" {
			continue // a notification, or an answer
		}
		_, modern := msg.Params.Meta["io.modelcontextprotocol/protocolVersion"]
		info := map[string]any{"name": "toolgate-task-fixture-2026", "version": "1.0.0"}
		switch msg.Method {
		case "initialize":
			reply(msg.ID, map[string]any{"protocolVersion": "2025-11-25", "capabilities": map[string]any{"tools": map[string]any{}}, "serverInfo": info}, nil)
		case "ping":
			reply(msg.ID, map[string]any{}, nil)
		case "server/discover":
			reply(msg.ID, map[string]any{
				"resultType": "complete", "supportedVersions": []string{"2025-11-25", "2026-07-28"}, "serverInfo": info,
				"capabilities": map[string]any{"tools": map[string]any{}, "extensions": map[string]any{"io.modelcontextprotocol/tasks": map[string]any{}}},
			}, nil)
		case "tools/list":
			reply(msg.ID, map[string]any{"resultType": "complete", "tools": tools}, nil)
		case "tools/call":
			switch {
			case msg.Params.Name == "confirm_in_task" && modern:
				// A task from the start, when the caller takes tasks.
				var caps struct {
					Extensions map[string]any `json:"extensions"`
				}
				_ = json.Unmarshal(msg.Params.Meta["io.modelcontextprotocol/clientCapabilities"], &caps)
				if _, ok := caps.Extensions["io.modelcontextprotocol/tasks"]; !ok {
					reply(msg.ID, map[string]any{"resultType": "complete", "content": []any{map[string]any{"type": "text", "text": "done without a task"}}}, nil)
					continue
				}
				task := newTask("working before asking")
				reply(msg.ID, created(task), nil)
				go func() {
					time.Sleep(time.Duration(msg.Params.Arguments.Seconds * float64(time.Second)))
					mu.Lock()
					defer mu.Unlock()
					if task["status"] == "working" {
						task["status"], task["lastUpdatedAt"] = "input_required", now()
						task["inputRequests"] = map[string]any{"confirm": map[string]any{"method": "elicitation/create", "params": map[string]any{
							"message": "Go on?", "requestedSchema": map[string]any{"type": "object", "properties": map[string]any{"confirm": map[string]any{"type": "boolean"}}}}}}
					}
				}()
			case msg.Params.Name != "test_tool_with_task":
				reply(msg.ID, nil, map[string]any{"code": -32602, "message": "unknown tool " + msg.Params.Name})
			case !modern:
				reply(msg.ID, nil, map[string]any{"code": -32600, "message": "test_tool_with_task is served on protocol 2026-07-28 only"})
			default:
				var answer struct {
					Action  string         `json:"action"`
					Content map[string]any `json:"content"`
				}
				if r, ok := msg.Params.InputResponses["user_name"]; !ok || json.Unmarshal(r, &answer) != nil || answer.Action != "accept" {
					reply(msg.ID, map[string]any{"resultType": "input_required", "inputRequests": map[string]any{"user_name": map[string]any{
						"method": "elicitation/create",
						"params": map[string]any{"message": "What is your name?", "requestedSchema": map[string]any{
							"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}, "required": []string{"name"}}},
					}}}, nil)
					continue
				}
				task := newTask("")
				reply(msg.ID, created(task), nil)
				go func() {
					time.Sleep(500 * time.Millisecond) // the work
					mu.Lock()
					defer mu.Unlock()
					if task["status"] == "working" {
						task["status"], task["lastUpdatedAt"] = "completed", now()
						task["result"] = map[string]any{"content": []any{map[string]any{"type": "text", "text": fmt.Sprintf("Hello, %v, from the task!", answer.Content["name"])}}}
					}
				}()
			}
		case "tasks/get", "tasks/cancel", "tasks/update":
			mu.Lock()
			task, ok := tasks[msg.Params.TaskID]
			var res map[string]any
			switch {
			case !ok:
			case msg.Method == "tasks/get":
				res = result(task, "complete")
			default:
				if msg.Method == "tasks/cancel" && (task["status"] == "working" || task["status"] == "input_required") {
					task["status"], task["lastUpdatedAt"] = "cancelled", now()
					delete(task, "inputRequests")
					fmt.Fprintf(os.Stderr, "taskfixture: task %s cancelled\n", msg.Params.TaskID)
				}
				if r, ok := msg.Params.InputResponses["confirm"]; ok && msg.Method == "tasks/update" && task["status"] == "input_required" {
					delete(task, "inputRequests")
					task["status"], task["lastUpdatedAt"], task["statusMessage"] = "working", now(), "confirmed, finishing"
					go func() {
						time.Sleep(100 * time.Millisecond)
						mu.Lock()
						defer mu.Unlock()
						if task["status"] == "working" {
							task["status"], task["lastUpdatedAt"] = "completed", now()
							task["result"] = map[string]any{"content": []any{map[string]any{"type": "text", "text": "confirmed with " + string(r)}}}
						}
					}()
				}
				res = map[string]any{"resultType": "complete"}
			}
			mu.Unlock()
			if !ok {
				reply(msg.ID, nil, map[string]any{"code": -32602, "message": "no task " + msg.Params.TaskID})
				continue
			}
			reply(msg.ID, res, nil)
		default:
			reply(msg.ID, nil, map[string]any{"code": -32601, "message": "method not found: " + msg.Method})
		}
	}
}
