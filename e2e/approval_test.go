package e2e

// Approvals (issue 12 §1) through real clients: the Go SDK client's
// elicitation handler plays the person (allow once, allow for the session,
// deny, no answer), a client that cannot elicit is answered by the
// operator (`toolgate approve` / `toolgate deny`), and forged or replayed
// answers are refused.

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func approvalEnv(t *testing.T, extra ...Opt) *Env {
	t.Helper()
	return newEnv(t, append([]Opt{
		set("admin.addr", "127.0.0.1:0"), // bound by serve: Server.Admin
		set("policy.approval.tools", []string{"echo"}),
		set("policy.approval.timeout", "2s"),
	}, extra...)...)
}

func TestApprovalByTheClient(t *testing.T) {
	t.Parallel()
	e := approvalEnv(t)
	s := e.StartHTTP(t)
	var mu sync.Mutex
	answer := "allow_once"
	var asked atomic.Int32
	var lastMessage string
	cs := s.Connect(t, era2025, &ConnectOptions{Client: &mcp.ClientOptions{
		ElicitationHandler: func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			asked.Add(1)
			mu.Lock()
			a := answer
			lastMessage = req.Params.Message
			mu.Unlock()
			if a == "hang" { // a person who answers after the 2s timeout
				select {
				case <-ctx.Done():
				case <-time.After(3 * time.Second):
				}
				return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": "allow_once"}}, nil
			}
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": a}}, nil
		},
	}})
	setAnswer := func(a string) { mu.Lock(); answer = a; mu.Unlock() }

	// Allow once: asked every time.
	for i := 1; i <= 2; i++ {
		r := call(t, cs, "echo", map[string]any{"text": "once"})
		if r.IsError || textOf(r) != "once" {
			t.Fatalf("allowed once: %q", textOf(r))
		}
		if n := asked.Load(); n != int32(i) {
			t.Errorf("after %d calls allowed once, asked %d times", i, n)
		}
	}
	mu.Lock()
	msg := lastMessage
	mu.Unlock()
	if !strings.Contains(msg, "echo") || !strings.Contains(msg, "policy.approval.tools") || !strings.Contains(msg, `"text":"once"`) {
		t.Errorf("the form does not name the tool, its arguments and the rule: %q", msg)
	}

	// Deny.
	setAnswer("deny")
	r := call(t, cs, "echo", map[string]any{"text": "no"})
	if !r.IsError || !strings.Contains(textOf(r), "denied") {
		t.Errorf("denied: %q", textOf(r))
	}

	// No answer: expired after policy.approval.timeout, denied.
	setAnswer("hang")
	r = call(t, cs, "echo", map[string]any{"text": "late"})
	if !r.IsError || !strings.Contains(textOf(r), "no approval within") {
		t.Errorf("unanswered: %q", textOf(r))
	}

	// Allow for the session: asked once, then remembered for this session
	// only.
	setAnswer("allow_session")
	before := asked.Load()
	for range 3 {
		if r := call(t, cs, "echo", map[string]any{"text": "session"}); r.IsError {
			t.Fatalf("allowed for the session: %q", textOf(r))
		}
	}
	if n := asked.Load() - before; n != 1 {
		t.Errorf("allowed for the session, then asked %d times in 3 calls, want 1", n)
	}
	setAnswer("deny")
	other := s.Connect(t, era2025, &ConnectOptions{Client: &mcp.ClientOptions{
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": "deny"}}, nil
		},
	}})
	if r := call(t, other, "echo", map[string]any{"text": "other"}); !r.IsError {
		t.Error("a session approval crossed into another session")
	}

	// Every step is recorded, and the call's record says how it was
	// authorized.
	events := map[string]int{}
	for _, ev := range e.liveEvents(t) {
		events[ev["type"].(string)]++
	}
	for typ, min := range map[string]int{"approval.requested": 6, "approval.granted": 5, "approval.denied": 2, "approval.expired": 1} {
		if events[typ] < min {
			t.Errorf("%d %s events, want at least %d (%v)", events[typ], typ, min, events)
		}
	}
	var layers []string
	for _, rec := range e.liveTools(t) {
		if rec.Tool == "echo" && rec.Decision != nil {
			layers = append(layers, rec.Decision.Rule)
		}
	}
	joined := strings.Join(layers, " ")
	for _, want := range []string{"approval:client:once", "approval:client:session", "approval:session:session", "approval:expired", "approval:denied:client"} {
		if !strings.Contains(joined, want) {
			t.Errorf("no record decided by %s among %v", want, layers)
		}
	}
}

func TestApprovalByTheOperator(t *testing.T) {
	t.Parallel()
	e := approvalEnv(t, set("policy.approval.timeout", "30s"))
	s := e.StartHTTP(t)
	cs := s.Connect(t, era2025, nil) // no elicitation: the operator answers

	res := asyncCall(t, cs, "echo", map[string]any{"text": "approved by the operator"})
	var id string
	if !waitFor(15*time.Second, func() bool { id = pendingIDs(t, e)["echo"]; return id != "" }) {
		t.Fatal("the call never waited for the operator")
	}
	out, err := e.command(callCtx(t), "approvals").CombinedOutput()
	if err != nil || !strings.Contains(string(out), id) || !strings.Contains(string(out), "approval") || !strings.Contains(string(out), "policy.approval.tools") {
		t.Errorf("toolgate approvals (the call, and why it waits): %v %s", err, out)
	}
	if out, err := e.command(callCtx(t), "approve", "not-a-call").CombinedOutput(); err == nil || !strings.Contains(string(out), "no call with that ID") {
		t.Errorf("a forged call ID: err %v %s", err, out)
	}
	if out, err := e.command(callCtx(t), "submit", id, `"ok"`).CombinedOutput(); err == nil || !strings.Contains(string(out), "waits for approval, not for an output") {
		t.Errorf("an output for a call that waits for approval: err %v %s", err, out)
	}
	// The end of the ID (its random part) is enough.
	if out, err := e.command(callCtx(t), "approve", id[len(id)-12:]).CombinedOutput(); err != nil || !strings.Contains(string(out), id) {
		t.Fatalf("toolgate approve: %v %s", err, out)
	}
	if r := <-res; r.IsError || textOf(r) != "approved by the operator" {
		t.Errorf("after approval: %q", textOf(r))
	}
	if out, err := e.command(callCtx(t), "deny", id).CombinedOutput(); err == nil {
		t.Errorf("a replayed answer was taken: %s", out)
	}

	res = asyncCall(t, cs, "echo", map[string]any{"text": "x"})
	if !waitFor(15*time.Second, func() bool { id = pendingIDs(t, e)["echo"]; return id != "" }) {
		t.Fatal("the second call never waited")
	}
	if out, err := e.command(callCtx(t), "deny", id).CombinedOutput(); err != nil {
		t.Fatalf("toolgate deny: %v %s", err, out)
	}
	if r := <-res; !r.IsError || !strings.Contains(textOf(r), "denied") {
		t.Errorf("after denial: %q", textOf(r))
	}
	if rec := awaitRecord(10*time.Second, func() []ToolRecord { return e.liveTools(t) }, "echo"); rec == nil || rec.Decision == nil || rec.Decision.Rule != "approval:operator:once" {
		t.Errorf("the approved call's record: %+v", rec)
	}
}

// TestApprovalCannotLiftADeny: nothing is approved past a deny rule; the
// call is refused without asking anyone.
func TestApprovalCannotLiftADeny(t *testing.T) {
	t.Parallel()
	e := approvalEnv(t, set("policy.tools.deny", []string{"echo"}))
	s := e.StartHTTP(t)
	var asked atomic.Int32
	cs := s.Connect(t, era2025, &ConnectOptions{Client: &mcp.ClientOptions{
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			asked.Add(1)
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": "allow_once"}}, nil
		},
	}})
	if r := call(t, cs, "echo", map[string]any{"text": "x"}); !r.IsError || !strings.Contains(textOf(r), "policy.tools.deny") {
		t.Errorf("a denied tool: %q", textOf(r))
	}
	if asked.Load() != 0 {
		t.Error("a denied call asked for approval")
	}
}

// TestApprovalInRounds: a 2026-07-28 client cannot be sent elicitation/create;
// the call's round ends input-required with the approval form and a request
// state, and the client's retry carries the answer (SEP-2322). The Go SDK
// client does the round trip itself with its elicitation handler.
func TestApprovalInRounds(t *testing.T) {
	t.Parallel()
	e := approvalEnv(t)
	s := e.StartHTTP(t)
	var mu sync.Mutex
	answer := "allow_once"
	var asked atomic.Int32
	cs := s.Connect(t, era2026, &ConnectOptions{Client: &mcp.ClientOptions{
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			asked.Add(1)
			mu.Lock()
			defer mu.Unlock()
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": answer}}, nil
		},
	}})
	if r := call(t, cs, "echo", map[string]any{"text": "in rounds"}); r.IsError || textOf(r) != "in rounds" {
		t.Fatalf("approved in rounds: %q (error %v)", textOf(r), r.IsError)
	}
	if asked.Load() != 1 {
		t.Errorf("asked %d times, want 1", asked.Load())
	}
	mu.Lock()
	answer = "deny"
	mu.Unlock()
	if r := call(t, cs, "echo", map[string]any{"text": "no"}); !r.IsError || !strings.Contains(textOf(r), "denied") {
		t.Errorf("denied in rounds: %q", textOf(r))
	}
	// Each round is recorded: the first ends input_required, the retry is
	// the approved (or denied) call.
	var statuses []string
	for _, rec := range e.liveTools(t) {
		if rec.Tool == "echo" {
			statuses = append(statuses, rec.Status)
		}
	}
	joined := strings.Join(statuses, " ")
	if strings.Count(joined, "input_required") != 2 || !strings.Contains(joined, "ok") || !strings.Contains(joined, "permission_denied") {
		t.Errorf("records of the rounds: %v", statuses)
	}
	events := map[string]int{}
	for _, ev := range e.liveEvents(t) {
		events[ev["type"].(string)]++
	}
	if events["approval.asked"] != 2 || events["approval.granted"] != 1 || events["approval.denied"] != 1 {
		t.Errorf("events %v", events)
	}
}

// TestApprovalTSClient: the TypeScript SDK client's elicitation handler
// answers the approval form: allowed once, the call runs; denied, it does
// not; a definition-only tool answered by a person gets the person's
// output.
func TestApprovalTSClient(t *testing.T) {
	t.Parallel()
	e := approvalEnv(t, set("definitions", []map[string]any{{
		"name": "ask_user", "description": "Ask the user which color to use.", "answer": "person",
		"output_schema": map[string]any{"type": "object", "properties": map[string]any{"color": map[string]any{"type": "string"}}, "required": []string{"color"}},
	}}))
	s := e.StartHTTP(t)
	ask := func(tool string, args, content map[string]any) elicitClientOut {
		return runElicitClient(t, s.URL, tool, args, content)
	}
	text := func(r elicitClientOut) string { return r.Text() }
	if r := ask("echo", map[string]any{"text": "from ts"}, map[string]any{"decision": "allow_once"}); r.Result.IsError || text(r) != "from ts" || len(r.Asked) != 1 || !strings.Contains(r.Asked[0], "echo") {
		t.Errorf("allowed once by the TypeScript client: %q (asked %q)", text(r), r.Asked)
	}
	if r := ask("echo", map[string]any{"text": "no"}, map[string]any{"decision": "deny"}); !r.Result.IsError || !strings.Contains(text(r), "denied") {
		t.Errorf("denied by the TypeScript client: %q", text(r))
	}
	if r := ask("ask_user", map[string]any{}, map[string]any{"color": "teal"}); r.Result.IsError || !strings.Contains(text(r), "teal") {
		t.Errorf("a definition answered by the TypeScript client's user: %q", text(r))
	}
}
