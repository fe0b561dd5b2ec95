package e2e

// Definition-only tools answered by an operator and by a person (issue 12
// §2, §3 in part): the binary serves, a real Go SDK client calls and
// waits, and the answer comes from `toolgate pending` / `toolgate submit`
// (the admin API), from the admin API directly, or from the client's own
// user through elicitation.

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func definitionsEnv(t *testing.T) *Env {
	t.Helper()
	e := newEnv(t,
		set("admin.addr", "127.0.0.1:0"), // bound by serve: Server.Admin
		set("definitions", []map[string]any{
			{
				"name": "ask_reviewer", "description": "Ask the on-call reviewer for a verdict on a release.",
				"input_schema":  map[string]any{"type": "object", "properties": map[string]any{"release": map[string]any{"type": "string"}}, "required": []string{"release"}},
				"output_schema": map[string]any{"type": "object", "properties": map[string]any{"verdict": map[string]any{"type": "string", "enum": []string{"approve", "reject"}}}, "required": []string{"verdict"}},
			},
			{"name": "quick_question", "description": "Ask a quick question.", "timeout": "1s"},
			{
				"name": "ask_user", "description": "Ask the user which color to use.", "answer": "person",
				"output_schema": map[string]any{"type": "object", "properties": map[string]any{"color": map[string]any{"type": "string"}}, "required": []string{"color"}},
			},
		}),
	)
	return e
}

// asyncCall calls a tool in the background; the result arrives on the
// channel.
func asyncCall(t *testing.T, cs *mcp.ClientSession, name string, args any) <-chan *mcp.CallToolResult {
	ch := make(chan *mcp.CallToolResult, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			res = &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "transport error: " + err.Error()}}}
		}
		ch <- res
	}()
	return ch
}

// pendingIDs runs `toolgate pending --json` and returns the waiting call
// IDs by tool.
func pendingIDs(t *testing.T, e *Env) map[string]string {
	t.Helper()
	ids, err := pendingCalls(callCtx(t), e)
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

// pendingCalls is pendingIDs without the test's failure, for goroutines.
func pendingCalls(ctx context.Context, e *Env) (map[string]string, error) {
	out, err := e.command(ctx, "pending", "--json").Output()
	if err != nil {
		return nil, fmt.Errorf("toolgate pending: %v", err)
	}
	var list struct {
		Pending []struct {
			ID, Tool string
		} `json:"pending"`
	}
	if err := json.Unmarshal(out, &list); err != nil {
		return nil, fmt.Errorf("toolgate pending --json: %v: %s", err, out)
	}
	ids := map[string]string{}
	for _, p := range list.Pending {
		ids[p.Tool] = p.ID
	}
	return ids, nil
}

func TestDefinitionOnlyTools(t *testing.T) {
	t.Parallel()
	e := definitionsEnv(t)
	s := e.StartHTTP(t)
	cs := s.Connect(t, era2025, nil)

	// Answered with toolgate submit, after a refused answer.
	res := asyncCall(t, cs, "ask_reviewer", map[string]any{"release": "v1.2"})
	var id string
	if !waitFor(15*time.Second, func() bool { id = pendingIDs(t, e)["ask_reviewer"]; return id != "" }) {
		t.Fatal("toolgate pending never listed the waiting call")
	}
	bad := e.command(callCtx(t), "submit", id, `{"verdict":"maybe"}`)
	out, err := bad.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "output schema") {
		t.Errorf("submitting an output that breaks the schema: err %v, %s", err, out)
	}
	if out, err := e.command(callCtx(t), "submit", id, `{"verdict":"approve"}`).CombinedOutput(); err != nil {
		t.Fatalf("toolgate submit: %v %s", err, out)
	}
	r := <-res
	if r.IsError || !strings.Contains(textOf(r), `"verdict":"approve"`) {
		t.Errorf("the waiting client got %q (error %v)", textOf(r), r.IsError)
	}
	if out, err := e.command(callCtx(t), "submit", id, `{"verdict":"reject"}`).CombinedOutput(); err == nil || !strings.Contains(string(out), "no call with that ID") {
		t.Errorf("submitting twice: err %v, %s", err, out)
	}

	// Answered over the admin API directly.
	res = asyncCall(t, cs, "quick_question", map[string]any{})
	if !waitFor(15*time.Second, func() bool { id = pendingIDs(t, e)["quick_question"]; return id != "" }) {
		t.Fatal("the second call is not listed")
	}
	req, _ := http.NewRequest(http.MethodPost, s.Admin+"/v1/pending/"+id+"/submit", strings.NewReader(`{"output":"forty-two"}`))
	req.Header.Set("Content-Type", "application/json")
	if code, _, body := do(t, req); code != 200 {
		t.Fatalf("admin API submit: %d %s", code, body)
	}
	if r := <-res; r.IsError || textOf(r) != "forty-two" {
		t.Errorf("the client got %q", textOf(r))
	}

	// Nobody answers: the definition's timeout.
	r = <-asyncCall(t, cs, "quick_question", map[string]any{})
	if !r.IsError || !strings.Contains(strings.ToLower(textOf(r)), "timed out") {
		t.Errorf("an unanswered call: %q, want a timeout", textOf(r))
	}

	// Each call has its record, and its wait and answer are events.
	rec := awaitRecord(10*time.Second, func() []ToolRecord { return e.liveTools(t) }, "ask_reviewer")
	if rec == nil || rec.Status != "ok" || rec.Toolset != "definitions" {
		t.Errorf("record of ask_reviewer: %+v", rec)
	}
	events := map[string]int{}
	for _, ev := range e.liveEvents(t) {
		events[ev["type"].(string)]++
	}
	if events["tool.requires_action"] < 3 || events["tool.action_submitted"] < 2 {
		t.Errorf("events: %v, want 3 tool.requires_action and 2 tool.action_submitted", events)
	}
}

// TestDefinitionAnsweredByPerson: answer: person asks the calling client's
// user through elicitation (the Go SDK client's handler plays the user);
// a client that cannot elicit is answered by the operator instead.
func TestDefinitionAnsweredByPerson(t *testing.T) {
	t.Parallel()
	e := definitionsEnv(t)
	s := e.StartHTTP(t)
	var asked string
	cs := s.Connect(t, era2025, &ConnectOptions{Client: &mcp.ClientOptions{
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			asked = req.Params.Message
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"color": "teal"}}, nil
		},
	}})
	r := call(t, cs, "ask_user", map[string]any{})
	if r.IsError || !strings.Contains(textOf(r), `"color":"teal"`) {
		t.Errorf("answered by the person: %q (error %v)", textOf(r), r.IsError)
	}
	if !strings.Contains(asked, "ask_user") || !strings.Contains(asked, "which color") {
		t.Errorf("the form's message does not say what is asked: %q", asked)
	}

	// A client without elicitation: the operator answers.
	plain := s.Connect(t, era2025, nil)
	res := asyncCall(t, plain, "ask_user", map[string]any{})
	var id string
	if !waitFor(15*time.Second, func() bool { id = pendingIDs(t, e)["ask_user"]; return id != "" }) {
		t.Fatal("a person-answered call from a client that cannot elicit did not reach the operator")
	}
	if out, err := e.command(callCtx(t), "submit", id, `{"color":"plum"}`).CombinedOutput(); err != nil {
		t.Fatalf("submit: %v %s", err, out)
	}
	if r := <-res; r.IsError || !strings.Contains(textOf(r), "plum") {
		t.Errorf("the client got %q", textOf(r))
	}
}

// TestWaitingCallsOnShutdown: SIGTERM ends every waiting call at once as
// cancelled; its client gets that answer and the record says so.
func TestWaitingCallsOnShutdown(t *testing.T) {
	t.Parallel()
	e := definitionsEnv(t)
	s := e.StartHTTP(t)
	// A 2026-07-28 client: its answer comes on the request's own stream.
	// (The harness's 2025 client gives up on every request when its
	// session's GET stream ends, which shutdown ends; real clients retry.)
	cs := s.Connect(t, era2026, nil)
	res := asyncCall(t, cs, "ask_reviewer", map[string]any{"release": "v9"})
	if !waitFor(15*time.Second, func() bool { return pendingIDs(t, e)["ask_reviewer"] != "" }) {
		t.Fatal("not waiting")
	}
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-res:
		if !r.IsError || !strings.Contains(strings.ToLower(textOf(r)), "cancel") {
			t.Errorf("the waiting client got %q, want a cancellation", textOf(r))
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the waiting client got no answer at shutdown")
	}
	if code := s.Wait(20 * time.Second); code != 0 {
		t.Errorf("exit code %d", code)
	}
	a := e.Archive(t)
	var found bool
	for _, r := range a.Tools {
		if r.Tool == "ask_reviewer" {
			found = true
			if r.Status != "cancelled" {
				t.Errorf("record status %q, want cancelled", r.Status)
			}
		}
	}
	if !found {
		t.Error("no record of the waiting call")
	}
}
