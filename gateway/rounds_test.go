package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// roundEvents keeps the events of the round stage with their fields.
type roundEvents struct {
	mu     sync.Mutex
	events []map[string]any
}

func (l *roundEvents) CallStarted(*Call) error                    { return nil }
func (l *roundEvents) CallFinished(*Call, *Result, time.Duration) {}
func (l *roundEvents) Event(typ string, fields map[string]any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	fields["type"] = typ
	l.events = append(l.events, fields)
}

// catalogOf is a catalog of one toolset, named name, of the tools.
func catalogOf(name string, tools ...*Tool) *Catalog {
	ts, _ := NewToolset(name, tools...)
	cat := NewCatalog(nil)
	_ = cat.Add(context.Background(), ts)
	return cat
}

// heldExchanges is how many exchanges p holds.
func heldExchanges(p *Pipeline) int {
	p.exchanges.mu.Lock()
	defer p.exchanges.mu.Unlock()
	return len(p.exchanges.m)
}

// askDeclaring sends m a request (method, with params, the fields before
// its _meta) of a 2026-07-28 client that declared caps with it, and fails
// t, naming what (the tool or prompt), unless the round is asked when
// missing is "", or refused with -32021 requiring missing when it is not.
func askDeclaring(t *testing.T, m *MCPServer, id int, method, params, what, caps, missing string) {
	t.Helper()
	req := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":{%s,"_meta":{`+
		`"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"c","version":"1"},`+
		`"io.modelcontextprotocol/clientCapabilities":%s}}}`, id, method, params, caps)
	b, _ := json.Marshal(m.srv.HandleMessage(context.Background(), json.RawMessage(req)))
	var resp struct {
		Result struct {
			ResultType string `json:"resultType"`
		} `json:"result"`
		Error struct {
			Code int `json:"code"`
			Data struct {
				Required json.RawMessage `json:"requiredCapabilities"`
			} `json:"data"`
		} `json:"error"`
	}
	_ = json.Unmarshal(b, &resp)
	switch {
	case missing == "" && resp.Result.ResultType != "input_required":
		t.Errorf("%s, client declared %s: answered %s; want the round asked", what, caps, b)
	case missing != "" && (resp.Error.Code != -32021 || !jsonEqual(resp.Error.Data.Required, []byte(missing))):
		t.Errorf("%s, client declared %s: answered %s; want -32021 requiring %s", what, caps, b, missing)
	}
}

// askingTool is a tool that asks in rounds, as an upstream of 2026-07-28
// does: with no answer it ends input-required with its own state "s1";
// answered with that state it ends input-required again with "s2"; with
// "s2" and an answer it completes. It keeps the states it was handed.
type askingTool struct {
	mu   sync.Mutex
	seen []string
}

func (a *askingTool) handler(ctx context.Context, _ map[string]any) (*Result, error) {
	call := CallFrom(ctx)
	a.mu.Lock()
	a.seen = append(a.seen, call.RequestState)
	a.mu.Unlock()
	ask := map[string]json.RawMessage{"name": json.RawMessage(`{"method":"elicitation/create","params":{"message":"name?","requestedSchema":{"type":"object"}}}`)}
	switch {
	case call.RequestState == "" || len(call.InputResponses) == 0:
		return InputRequiredResult(ask, "s1", "asks"), nil
	case call.RequestState == "s1":
		return InputRequiredResult(ask, "s2", "asks again"), nil
	case call.RequestState == "s2":
		return OkText("done"), nil
	}
	return Error("unknown state "+call.RequestState, "bad state"), nil
}

func TestRoundStage(t *testing.T) {
	at := &askingTool{}
	tl, _ := NewDynamicTool(ToolDef{Name: "ask", InputSchema: json.RawMessage(`{"type":"object","properties":{"x":{"type":"integer"}}}`)}, at.handler)
	cat := catalogOf("up", tl)
	log := &roundEvents{}
	p := NewPipeline(&Options{Tools: cat, Recorder: log})
	answer := map[string]json.RawMessage{"name": json.RawMessage(`{"action":"accept","content":{"name":"Ada"}}`)}
	caller := func(state string, args string) *Call {
		return &Call{Name: "ask", Arguments: json.RawMessage(args), Identity: "token:a", Client: "c/1", RequestState: state, InputResponses: answer}
	}

	first := &Call{Name: "ask", Arguments: json.RawMessage(`{"x":1}`), Identity: "token:a", Client: "c/1"}
	r1 := p.Call(context.Background(), first)
	if r1.Kind != KindInputRequired || !IsRoundState(r1.RequestState) || r1.RequestState == "s1" {
		// The state is signed, not encrypted: what matters is that the
		// client is handed toolgate's state, not the tool's (checking that
		// "s1" is absent from it failed when the signature happened to
		// contain those two characters).
		t.Fatalf("round 1: kind %q state %q; want input_required with toolgate's sealed state, not the tool's", r1.Kind, r1.RequestState)
	}

	// Altered, another caller, other arguments: refused as request errors,
	// and the tool never runs.
	for _, c := range []struct {
		name string
		call *Call
		want error
	}{
		{"altered", caller(r1.RequestState+"x", `{"x":1}`), ErrRoundForged},
		{"forged", caller(roundPrefix+"e30.AAAA", `{"x":1}`), ErrRoundForged},
		{"other caller", func() *Call { c := caller(r1.RequestState, `{"x":1}`); c.Identity = "token:b"; return c }(), ErrRoundOther},
		{"other arguments", caller(r1.RequestState, `{"x":2}`), ErrRoundOther},
	} {
		before := len(at.seen)
		res := p.Call(context.Background(), c.call)
		if res.Kind != KindRequestError || !strings.Contains(res.Message, c.want.Error()) || len(at.seen) != before {
			t.Errorf("%s: kind %q %q (tool ran %d times); want a request error saying %q, the tool not run", c.name, res.Kind, res.Message, len(at.seen)-before, c.want)
		}
	}

	second := caller(r1.RequestState, `{"x":1}`)
	r2 := p.Call(context.Background(), second)
	if r2.Kind != KindInputRequired || second.Round == nil || second.Round.N != 2 || second.Round.Of != first.ID {
		t.Fatalf("round 2: kind %q round %+v; want input_required, round 2 of %s", r2.Kind, second.Round, first.ID)
	}
	// A state is good once.
	if res := p.Call(context.Background(), caller(r1.RequestState, `{"x":1}`)); res.Kind != KindRequestError || !strings.Contains(res.Message, ErrRoundReused.Error()) {
		t.Errorf("replayed state: kind %q %q; want refused as reused", res.Kind, res.Message)
	}
	third := caller(r2.RequestState, `{"x":1}`)
	r3 := p.Call(context.Background(), third)
	if r3.Kind != "" || third.Round.N != 3 || third.Round.Of != first.ID {
		t.Fatalf("round 3: kind %q %q round %+v; want done, round 3 of the first call", r3.Kind, r3.Message, third.Round)
	}
	if got := strings.Join(at.seen, ","); got != ",s1,s2" {
		t.Errorf("the tool was handed the states %q; want its own, in order (\",s1,s2\")", got)
	}

	var kinds []string
	for _, e := range log.events {
		kinds = append(kinds, e["type"].(string)+":"+e["status"].(string))
		if e["call_id"] == "" {
			t.Errorf("event without its call: %v", e)
		}
	}
	want := "relay.input_required:ok relay.round:refused relay.round:refused relay.round:refused relay.round:refused relay.round:ok relay.input_required:ok relay.round:refused relay.round:ok"
	if got := strings.Join(kinds, " "); got != want {
		t.Errorf("events\n  %s\nwant\n  %s", got, want)
	}
}

// A call that needed approval is not asked again when it repeats a round
// its tool asked: the sealed state shows it passed the approval stage.
func TestRoundAfterApproval(t *testing.T) {
	at := &askingTool{}
	tl, _ := NewDynamicTool(ToolDef{Name: "ask"}, at.handler)
	cat := catalogOf("up", tl)
	ask := PolicyFunc(func(context.Context, *Tool) Decision {
		return Decision{Ask: true, Layer: "config", Rule: "policy.approval.tools:ask"}
	})
	approver := &fixedApprover{a: Approval{Granted: true, Scope: "once", Channel: "operator"}}
	p := NewPipeline(&Options{Tools: cat, Policy: ask, Approver: approver})
	r1 := p.Call(context.Background(), &Call{Name: "ask", Identity: "local"})
	if r1.Kind != KindInputRequired || approver.calls != 1 {
		t.Fatalf("round 1: kind %q, approver asked %d times", r1.Kind, approver.calls)
	}
	answer := map[string]json.RawMessage{"name": json.RawMessage(`{"action":"accept"}`)}
	second := &Call{Name: "ask", Identity: "local", RequestState: r1.RequestState, InputResponses: answer}
	if r2 := p.Call(context.Background(), second); r2.Kind != KindInputRequired || approver.calls != 1 || second.Decision.Rule != "approval:round" {
		t.Errorf("round 2: kind %q, approver asked %d times, rule %q; want input_required without asking again, rule approval:round", r2.Kind, approver.calls, second.Decision.Rule)
	}
	// The round that answers an approval (its state is the approval's)
	// reaches the tool without the approval's state and answers.
	n := len(at.seen)
	p.Call(context.Background(), &Call{Name: "ask", Identity: "local", RequestState: "tga1.approval", InputResponses: map[string]json.RawMessage{ApprovalInput: json.RawMessage(`{}`)}})
	if len(at.seen) != n+1 || at.seen[n] != "" {
		t.Errorf("after an approval answered in a round, the tool was handed the state %q; want none", at.seen[n:])
	}
	// A forged round state does not skip the approval: the round stage
	// refuses it, the tool does not run, and the call's decision (its
	// record's) is the one that asked, not an approval.
	before := len(at.seen)
	forged := &Call{Name: "ask", Identity: "local", RequestState: roundPrefix + "x.y", InputResponses: answer}
	if r := p.Call(context.Background(), forged); r.Kind != KindRequestError || len(at.seen) != before {
		t.Errorf("a forged round state: kind %q, tool ran %d times; want a request error", r.Kind, len(at.seen)-before)
	}
	if d := forged.Decision; d == nil || d.Allow || d.Rule != "policy.approval.tools:ask" {
		t.Errorf("a forged round state's decision: %+v; want the policy's ask, not allowed", d)
	}
}

// roundsOnlyClient is a 2026-07-28 client that declared elicitation and
// sampling: it can be asked only in rounds.
type roundsOnlyClient struct{}

func (roundsOnlyClient) SessionID() string                 { return "" }
func (roundsOnlyClient) Log(string, string, any) error     { return nil }
func (roundsOnlyClient) CanRequest(string) bool            { return false }
func (roundsOnlyClient) CanAskInRounds(method string) bool { return true }
func (roundsOnlyClient) Modern() bool                      { return true }
func (roundsOnlyClient) Capabilities() json.RawMessage {
	return json.RawMessage(`{"elicitation":{},"sampling":{}}`)
}
func (roundsOnlyClient) Request(context.Context, string, json.RawMessage) (json.RawMessage, error) {
	return nil, ErrClientCannot
}

// A tool that asks its client with server-to-client requests, called by a
// client that can be asked only in rounds: each request becomes a round,
// and the answers reach the tool, which runs on between the rounds.
func TestExchangeAsksInRounds(t *testing.T) {
	tl, _ := NewDynamicTool(ToolDef{Name: "greet"}, func(ctx context.Context, _ map[string]any) (*Result, error) {
		name, err := RequestFromClient(ctx, MethodElicitation, json.RawMessage(`{"message":"name?"}`))
		if err != nil {
			return nil, err
		}
		reply, err := RequestFromClient(ctx, MethodSampling, json.RawMessage(`{"messages":[]}`))
		if err != nil {
			return nil, err
		}
		return OkText(string(name) + " " + string(reply)), nil
	})
	cat := catalogOf("t", tl)
	log := &roundEvents{}
	p := NewPipeline(&Options{Tools: cat, Recorder: log})
	ctx := WithClient(context.Background(), roundsOnlyClient{})

	r1 := p.Call(ctx, &Call{Name: "greet", Identity: "local"})
	if r1.Kind != KindInputRequired || len(r1.InputRequests) != 1 || !strings.Contains(string(r1.InputRequests["toolgate-elicitation-1"]), `"method":"elicitation/create"`) {
		t.Fatalf("round 1: kind %q requests %s", r1.Kind, r1.InputRequests)
	}
	// Repeated without the answer: asked again.
	r1b := p.Call(ctx, &Call{Name: "greet", Identity: "local", RequestState: r1.RequestState})
	if r1b.Kind != KindInputRequired || r1b.InputRequests["toolgate-elicitation-1"] == nil {
		t.Fatalf("round 1 repeated without its answer: kind %q %s; want asked again", r1b.Kind, r1b.InputRequests)
	}
	r2 := p.Call(ctx, &Call{Name: "greet", Identity: "local", RequestState: r1b.RequestState,
		InputResponses: map[string]json.RawMessage{"toolgate-elicitation-1": json.RawMessage(`"Ada"`)}})
	if r2.Kind != KindInputRequired || r2.InputRequests["toolgate-sampling-2"] == nil {
		t.Fatalf("round 2: kind %q requests %s; want the sampling question", r2.Kind, r2.InputRequests)
	}
	// An exchange named by a state toolgate did not seal is refused.
	if r := p.Call(ctx, &Call{Name: "greet", Identity: "local", RequestState: parkPrefix + "x"}); r.Kind != KindRequestError {
		t.Errorf("an unsealed exchange state: kind %q; want a request error", r.Kind)
	}
	r3 := p.Call(ctx, &Call{Name: "greet", Identity: "local", RequestState: r2.RequestState,
		InputResponses: map[string]json.RawMessage{"toolgate-sampling-2": json.RawMessage(`"hi"`)}})
	if r3.Kind != "" || r3.Output[0].(TextPart).Text != `"Ada" "hi"` {
		t.Fatalf("round 3: kind %q %q; want the tool's result with both answers", r3.Kind, r3.Message)
	}

}

// artifactLines keeps, per call, the artifacts its record line names.
type artifactLines struct {
	mu   sync.Mutex
	arts map[string][]Artifact
}

func (r *artifactLines) CallStarted(*Call) error { return nil }
func (r *artifactLines) CallFinished(c *Call, _ *Result, _ time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.arts[c.ID] = append([]Artifact(nil), c.Artifacts...)
}

// TestExchangeArtifactsInTheLastRoundsRecord: a tool that asks in a round
// and then returns output over the limit has it saved as an artifact; the
// record line of the round that carries the result names it (the first
// round's line was written when the tool asked).
func TestExchangeArtifactsInTheLastRoundsRecord(t *testing.T) {
	tl, _ := NewDynamicTool(ToolDef{Name: "big"}, func(ctx context.Context, _ map[string]any) (*Result, error) {
		if _, err := RequestFromClient(ctx, MethodElicitation, json.RawMessage(`{"message":"go?"}`)); err != nil {
			return nil, err
		}
		return OkText(strings.Repeat("x\n", 10000)), nil
	})
	cat := catalogOf("t", tl)
	rec := &artifactLines{arts: map[string][]Artifact{}}
	store := &memArtifacts{}
	p := NewPipeline(&Options{Tools: cat, Recorder: rec, Artifacts: store, MaxOutputBytes: 1024})
	ctx := WithClient(context.Background(), roundsOnlyClient{})
	c1 := &Call{Name: "big", Identity: "local"}
	r1 := p.Call(ctx, c1)
	if r1.Kind != KindInputRequired {
		t.Fatalf("round 1: kind %q", r1.Kind)
	}
	c2 := &Call{Name: "big", Identity: "local", RequestState: r1.RequestState,
		InputResponses: map[string]json.RawMessage{"toolgate-elicitation-1": json.RawMessage(`{"action":"accept"}`)}}
	if r2 := p.Call(ctx, c2); r2.IsError {
		t.Fatalf("round 2: %s", r2.Message)
	}
	store.mu.Lock()
	saved := len(store.saved)
	store.mu.Unlock()
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if saved != 1 || len(rec.arts[c1.ID]) != 0 || len(rec.arts[c2.ID]) != 1 {
		t.Errorf("%d artifacts saved; the first round's line names %d, the last round's %d; want 1, 0, 1", saved, len(rec.arts[c1.ID]), len(rec.arts[c2.ID]))
	}
}

// Nobody answers: the call's deadline ends the tool that waits, and the
// exchange with it.
func TestExchangeEndsAtTheDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		slow, _ := NewDynamicTool(ToolDef{Name: "slow", Timeout: time.Minute}, func(ctx context.Context, _ map[string]any) (*Result, error) {
			_, err := RequestFromClient(ctx, MethodElicitation, json.RawMessage(`{}`))
			return nil, err
		})
		cat := catalogOf("t", slow)
		p := NewPipeline(&Options{Tools: cat})
		ctx := WithClient(context.Background(), roundsOnlyClient{})
		s1 := p.Call(ctx, &Call{Name: "slow", Identity: "local"})
		if s1.Kind != KindInputRequired {
			t.Fatalf("slow: kind %q", s1.Kind)
		}
		time.Sleep(time.Minute + time.Second)
		synctest.Wait()
		held := heldExchanges(p)
		if held != 0 {
			t.Fatalf("%d exchanges held after the call's deadline", held)
		}
		s2 := p.Call(ctx, &Call{Name: "slow", Identity: "local", RequestState: s1.RequestState,
			InputResponses: map[string]json.RawMessage{"toolgate-elicitation-1": json.RawMessage(`{}`)}})
		if s2.Kind != KindRequestError || !strings.Contains(s2.Message, "has ended") {
			t.Errorf("answering a call past its deadline: kind %q %q; want a request error saying it ended", s2.Kind, s2.Message)
		}
	})
}

// A request refused as a JSON-RPC error reaches the client with its code
// and data (an upstream's -32021 with the capabilities it needs, say), and
// a forged round state as -32602.
func TestRequestErrorOnTheWire(t *testing.T) {
	tl, _ := NewDynamicTool(ToolDef{Name: "needs"}, func(context.Context, map[string]any) (*Result, error) {
		return RequestErrorResult(&RequestError{Code: -32021, Message: "sampling is required", Data: json.RawMessage(`{"requiredCapabilities":{"sampling":{}}}`)}), nil
	})
	cat := catalogOf("t", tl)
	rec := newMemRecorder()
	m := NewMCPServer(&MCPOptions{Name: "t", Version: "1", Catalog: cat, Pipeline: NewPipeline(&Options{Tools: cat, Recorder: rec})})
	for _, c := range []struct{ req, want string }{
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"needs","arguments":{}}}`,
			`{"code":-32021,"message":"sampling is required","data":{"requiredCapabilities":{"sampling":{}}}}`},
		{`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"needs","arguments":{},"requestState":"tgr1.e30.AAAA"}}`,
			`{"code":-32602,"message":"call of \"needs\": the request state is not one toolgate minted (forged or altered); repeat the call without it to begin again"}`},
	} {
		b, _ := json.Marshal(m.srv.HandleMessage(context.Background(), json.RawMessage(c.req)))
		var resp struct {
			Error json.RawMessage `json:"error"`
		}
		_ = json.Unmarshal(b, &resp)
		if !jsonEqual(resp.Error, []byte(c.want)) {
			t.Errorf("%s\n  answered %s\n  want error %s", c.req, b, c.want)
		}
	}
	if len(rec.finished) != 2 {
		t.Errorf("%d calls recorded, want both", len(rec.finished))
	}
	for _, res := range rec.finished {
		if res.Status() != string(KindRequestError) {
			t.Errorf("recorded as %q, want request_error", res.Status())
		}
	}
}

type progressLog struct {
	mu  sync.Mutex
	got []float64
}

func (l *progressLog) Report(p Progress) {
	l.mu.Lock()
	l.got = append(l.got, p.Progress)
	l.mu.Unlock()
}

// A tool that runs across rounds reports its progress to the request of
// the round it is in.
func TestExchangeProgressFollowsTheRound(t *testing.T) {
	tl, _ := NewDynamicTool(ToolDef{Name: "steps"}, func(ctx context.Context, _ map[string]any) (*Result, error) {
		ReportProgress(ctx, Progress{Progress: 1})
		if _, err := RequestFromClient(ctx, MethodElicitation, json.RawMessage(`{}`)); err != nil {
			return nil, err
		}
		ReportProgress(ctx, Progress{Progress: 2})
		return OkText("done"), nil
	})
	cat := catalogOf("t", tl)
	p := NewPipeline(&Options{Tools: cat})
	round := func(state string, answers map[string]json.RawMessage) (*Result, []float64) {
		log := &progressLog{}
		ctx, stop := WithProgress(WithClient(context.Background(), roundsOnlyClient{}), log)
		res := p.Call(ctx, &Call{Name: "steps", Identity: "local", RequestState: state, InputResponses: answers})
		stop()
		log.mu.Lock()
		defer log.mu.Unlock()
		return res, log.got
	}
	r1, got1 := round("", nil)
	if r1.Kind != KindInputRequired || len(got1) != 1 || got1[0] != 1 {
		t.Fatalf("round 1: kind %q, progress %v; want input_required and progress 1", r1.Kind, got1)
	}
	r2, got2 := round(r1.RequestState, map[string]json.RawMessage{"toolgate-elicitation-1": json.RawMessage(`{"action":"accept"}`)})
	if r2.Kind != "" || len(got2) != 1 || got2[0] != 2 {
		t.Errorf("round 2: kind %q, progress %v; want done and progress 2 on this round's request", r2.Kind, got2)
	}
}

// formOnlyClient is a 2026-07-28 client that declared form elicitation
// only.
type formOnlyClient struct{ roundsOnlyClient }

func (formOnlyClient) CanAskInRounds(method string) bool { return method == MethodElicitation }
func (formOnlyClient) Capabilities() json.RawMessage {
	return json.RawMessage(`{"elicitation":{"form":{}}}`)
}

// A URL-mode elicitation is not asked in rounds of a client that declared
// only form mode (as it is not sent to a 2025-11-25 client that did not):
// the tool is told the client cannot, and the call is not held for an
// answer the client cannot give.
func TestExchangeElicitationModeDeclared(t *testing.T) {
	tl, _ := NewDynamicTool(ToolDef{Name: "visit"}, func(ctx context.Context, _ map[string]any) (*Result, error) {
		_, err := RequestFromClient(ctx, MethodElicitation, json.RawMessage(`{"mode":"url","message":"sign in","url":"https://example.com/auth","elicitationId":"e1"}`))
		if err != nil {
			return OkText("refused: " + err.Error()), nil
		}
		return OkText("asked"), nil
	})
	cat := catalogOf("t", tl)
	p := NewPipeline(&Options{Tools: cat})
	ctx := WithClient(context.Background(), formOnlyClient{})
	r := p.Call(ctx, &Call{Name: "visit", Identity: "local"})
	if r.Kind != "" || !strings.Contains(r.Output[0].(TextPart).Text, ErrClientCannot.Error()) {
		t.Fatalf("a URL elicitation for a form-only client: kind %q requests %s; want the tool told the client cannot", r.Kind, r.InputRequests)
	}
}

// A 2026-07-28 client is asked in a round only what it declared with its
// request: a tool's (an upstream's, relayed) input requests that the
// client's clientCapabilities do not cover are not passed on as
// input_required, which the client could not answer; the call is refused
// with -32021 (missing required client capability), naming what is
// missing. What it declared is asked as before.
func TestRoundAsksOnlyWhatTheClientDeclared(t *testing.T) {
	ask := func(reqs string) func(context.Context, map[string]any) (*Result, error) {
		return func(ctx context.Context, _ map[string]any) (*Result, error) {
			var in map[string]json.RawMessage
			_ = json.Unmarshal([]byte(reqs), &in)
			return InputRequiredResult(in, "s1", "asks"), nil
		}
	}
	const elicitForm = `{"method":"elicitation/create","params":{"message":"name?","requestedSchema":{"type":"object"}}}`
	const elicitURL = `{"method":"elicitation/create","params":{"mode":"url","message":"sign in","url":"https://example.com/a","elicitationId":"e1"}}`
	const sample = `{"method":"sampling/createMessage","params":{"messages":[],"maxTokens":5}}`
	const roots = `{"method":"roots/list"}`
	var tools []*Tool
	for name, reqs := range map[string]string{
		"elicit": `{"a":` + elicitForm + `}`, "url": `{"a":` + elicitURL + `}`,
		"sample": `{"a":` + sample + `}`, "roots": `{"a":` + roots + `}`, "both": `{"a":` + elicitForm + `,"b":` + sample + `}`,
	} {
		tl, _ := NewDynamicTool(ToolDef{Name: name}, ask(reqs))
		tools = append(tools, tl)
	}
	cat := catalogOf("t", tools...)
	m := NewMCPServer(&MCPOptions{Name: "t", Version: "1", Catalog: cat, Pipeline: NewPipeline(&Options{Tools: cat})})
	for i, c := range []struct {
		tool, caps string
		missing    string // "" when the round is asked
	}{
		{"elicit", `{}`, `{"elicitation":{"form":{}}}`},
		{"elicit", `{"sampling":{}}`, `{"elicitation":{"form":{}}}`},
		{"elicit", `{"elicitation":{"url":{}}}`, `{"elicitation":{"form":{}}}`},
		{"url", `{"elicitation":{}}`, `{"elicitation":{"url":{}}}`},
		{"sample", `{"elicitation":{}}`, `{"sampling":{}}`},
		{"roots", `{"sampling":{}}`, `{"roots":{}}`},
		{"both", `{"elicitation":{}}`, `{"sampling":{}}`},
		{"elicit", `{"elicitation":{}}`, ``},
		{"url", `{"elicitation":{"url":{}}}`, ``},
		{"sample", `{"sampling":{}}`, ``},
		{"roots", `{"roots":{}}`, ``},
		{"both", `{"elicitation":{"form":{}},"sampling":{}}`, ``},
	} {
		askDeclaring(t, m, i+1, "tools/call", fmt.Sprintf(`"name":%q,"arguments":{}`, c.tool), c.tool, c.caps, c.missing)
	}
}

// askingPrompts offers prompts that ask in rounds, one per entry: the
// prompt's input requests (a JSON object of them by id).
type askingPrompts map[string]string

func (a askingPrompts) Prompts(context.Context) ([]Prompt, error) {
	var out []Prompt
	for name, reqs := range a {
		out = append(out, Prompt{Name: name, Get: func(context.Context, map[string]string) (*PromptResult, error) {
			var in map[string]json.RawMessage
			_ = json.Unmarshal([]byte(reqs), &in)
			return &PromptResult{InputRequests: in, RequestState: "p1"}, nil
		}})
	}
	return out, nil
}

// A prompts/get of a 2026-07-28 client, too, is asked in a round only
// what the client declared with its request: a round of the prompt's
// source that asks for more is refused with -32021 naming what is
// missing, and recorded refused, as a call's is.
func TestPromptRoundAsksOnlyWhatTheClientDeclared(t *testing.T) {
	const elicitURL = `{"method":"elicitation/create","params":{"mode":"url","message":"sign in","url":"https://example.com/a","elicitationId":"e1"}}`
	cat := NewCatalog(nil)
	log := &roundEvents{}
	m := NewMCPServer(&MCPOptions{Name: "t", Version: "1", Catalog: cat, Pipeline: NewPipeline(&Options{Tools: cat, Recorder: log})})
	m.AddPromptSource(askingPrompts{
		"sample": `{"a":{"method":"sampling/createMessage","params":{"messages":[],"maxTokens":5}}}`,
		"roots":  `{"a":{"method":"roots/list"}}`,
		"url":    `{"a":` + elicitURL + `}`,
	})
	for i, c := range []struct {
		prompt, caps string
		missing      string // "" when the round is asked
	}{
		{"sample", `{"elicitation":{}}`, `{"sampling":{}}`},
		{"roots", `{"sampling":{}}`, `{"roots":{}}`},
		{"url", `{"elicitation":{"form":{}}}`, `{"elicitation":{"url":{}}}`},
		{"sample", `{"sampling":{}}`, ``},
		{"roots", `{"roots":{}}`, ``},
		{"url", `{"elicitation":{"url":{}}}`, ``},
	} {
		askDeclaring(t, m, i+1, "prompts/get", fmt.Sprintf(`"name":%q`, c.prompt), "prompt "+c.prompt, c.caps, c.missing)
	}
	var got []string
	log.mu.Lock()
	for _, e := range log.events {
		if e["type"] == "relay.input_required" {
			got = append(got, fmt.Sprint(e["prompt"], ":", e["status"]))
		}
	}
	log.mu.Unlock()
	if want := "sample:refused roots:refused url:refused sample:ok roots:ok url:ok"; strings.Join(got, " ") != want {
		t.Errorf("recorded %q; want %q", strings.Join(got, " "), want)
	}
}

// A round asks a client only what a client can be asked in one:
// elicitation/create, sampling/createMessage, roots/list. A tool's (an
// upstream's, relayed) or a prompt's round that asks anything else (here
// that the client call a tool) is refused, whatever the client declared,
// and recorded so: a call fails with a runtime error naming the request,
// a prompts/get with a JSON-RPC error, and a call run as a task of the
// extension fails instead of handing the request to the client in
// tasks/get.
func TestRoundAsksOnlyKnownRequests(t *testing.T) {
	const other = `{"a":{"method":"tools/call","params":{"name":"rm","arguments":{"path":"/"}}}}`
	tl, _ := NewDynamicTool(ToolDef{Name: "other", TaskSupport: TaskOptional}, func(context.Context, map[string]any) (*Result, error) {
		var in map[string]json.RawMessage
		_ = json.Unmarshal([]byte(other), &in)
		return InputRequiredResult(in, "s1", "asks"), nil
	})
	cat := catalogOf("t", tl)
	log := &roundEvents{}
	f := &taskExtServer{rec: log, m: NewMCPServer(&MCPOptions{Name: "t", Version: "1", Catalog: cat,
		Pipeline: NewPipeline(&Options{Tools: cat, Recorder: log, CallTimeout: 20 * time.Second})})}
	f.m.AddPromptSource(askingPrompts{"other": other})
	const all = `{"elicitation":{},"sampling":{},"roots":{}}`
	const why = `"a" (tools/call): not a request a client can be asked`

	res, rpcErr := f.send(t, "tools/call", map[string]any{"name": "other", "arguments": map[string]any{}}, all)
	if rpcErr != nil || res["isError"] != true || !strings.Contains(mustJSON(res), strings.ReplaceAll(why, `"`, `\"`)) {
		t.Errorf("tools/call: %v %v; want a tool error saying %s", res, rpcErr, why)
	}
	res, rpcErr = f.send(t, "prompts/get", map[string]any{"name": "other"}, all)
	if msg, _ := rpcErr["message"].(string); !strings.Contains(msg, why) {
		t.Errorf("prompts/get: %v %v; want an error saying %s", res, rpcErr, why)
	}
	id := f.create(t, "other")
	got := f.until(t, id, "failed")
	if !strings.Contains(mustJSON(got["error"]), strings.ReplaceAll(why, `"`, `\"`)) {
		t.Errorf("task: %v; want it failed saying %s", got, why)
	}

	var statuses []string
	log.mu.Lock()
	for _, e := range log.events {
		if e["type"] == "relay.input_required" {
			statuses = append(statuses, fmt.Sprint(e["status"]))
		}
	}
	log.mu.Unlock()
	if want := "refused refused refused"; strings.Join(statuses, " ") != want {
		t.Errorf("recorded relay.input_required %q; want %q", strings.Join(statuses, " "), want)
	}
}

// withdrawingTool asks its client (an elicitation) and, once withdraw is
// closed, gives up on the question, as an upstream that cancels its
// relayed request (notifications/cancelled) does; then it asks again
// (sampling) when again is set, else it ends with a result of its own.
func withdrawingTool(t *testing.T, withdraw <-chan struct{}, again bool) *Tool {
	t.Helper()
	tl, err := NewDynamicTool(ToolDef{Name: "withdraws", TaskSupport: TaskOptional}, func(ctx context.Context, _ map[string]any) (*Result, error) {
		qctx, cancel := context.WithCancelCause(ctx)
		defer cancel(nil)
		go func() {
			select {
			case <-withdraw:
				cancel(errors.New(`the upstream server "u" cancelled its request: timed out`))
			case <-qctx.Done():
			}
		}()
		if _, err := RequestFromClient(qctx, MethodElicitation, json.RawMessage(`{"message":"name?","requestedSchema":{"type":"object"}}`)); err == nil {
			return OkText("answered"), nil
		}
		if !again {
			return OkText("went on without an answer"), nil
		}
		reply, err := RequestFromClient(ctx, MethodSampling, json.RawMessage(`{"messages":[]}`))
		if err != nil {
			return nil, err
		}
		return OkText("sampled " + string(reply)), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return tl
}

// A question the tool gave up on while the client was being asked it in
// a round (the upstream cancelled its request) no longer stands: the
// client's repeat, with an answer or without, gets what the tool did
// next (its result, or its next question), not a refusal because the
// exchange ended, nor the withdrawn question again; the tool's result is
// not dropped.
func TestWithdrawnQuestionInARound(t *testing.T) {
	for _, tc := range []struct {
		name     string
		again    bool
		answered bool
	}{
		{"result/answered", false, true},
		{"result/unanswered", false, false},
		{"next question/unanswered", true, false},
		{"next question/answered", true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				withdraw := make(chan struct{})
				cat := catalogOf("t", withdrawingTool(t, withdraw, tc.again))
				p := NewPipeline(&Options{Tools: cat, CallTimeout: time.Minute})
				ctx := WithClient(context.Background(), roundsOnlyClient{})
				r1 := p.Call(ctx, &Call{Name: "withdraws", Identity: "local"})
				if r1.Kind != KindInputRequired || r1.InputRequests["toolgate-elicitation-1"] == nil {
					t.Fatalf("round 1: kind %q %s; want the elicitation", r1.Kind, r1.InputRequests)
				}
				close(withdraw)
				synctest.Wait()
				c2 := &Call{Name: "withdraws", Identity: "local", RequestState: r1.RequestState}
				if tc.answered {
					c2.InputResponses = map[string]json.RawMessage{"toolgate-elicitation-1": json.RawMessage(`{"action":"accept","content":{}}`)}
				}
				r2 := p.Call(ctx, c2)
				switch {
				case !tc.again && (r2.Kind != "" || len(r2.Output) == 0 || r2.Output[0].(TextPart).Text != "went on without an answer"):
					t.Fatalf("round 2: kind %q %q; want the tool's result", r2.Kind, r2.Message)
				case tc.again && (r2.Kind != KindInputRequired || r2.InputRequests["toolgate-sampling-2"] == nil):
					t.Fatalf("round 2: kind %q %q %s; want the tool's next question", r2.Kind, r2.Message, r2.InputRequests)
				case tc.again:
					r3 := p.Call(ctx, &Call{Name: "withdraws", Identity: "local", RequestState: r2.RequestState,
						InputResponses: map[string]json.RawMessage{"toolgate-sampling-2": json.RawMessage(`"hi"`)}})
					if r3.Kind != "" || r3.Output[0].(TextPart).Text != `sampled "hi"` {
						t.Fatalf("round 3: kind %q %q; want the tool's result", r3.Kind, r3.Message)
					}
				}
				held := heldExchanges(p)
				if held != 0 {
					t.Errorf("%d exchanges held after the call ended", held)
				}
			})
		})
	}
}

// The end of a tool that runs in an exchange no client is being asked in
// (every call of a 2026-07-28 client that can be asked in rounds whose
// tool asks nothing, or whose round waits for it) allocates nothing: what
// drops a kept result is built only for an exchange that is parked.
func TestExchangeToolEndedAllocatesNothingUnparked(t *testing.T) {
	p := NewPipeline(&Options{Tools: NewCatalog(nil)})
	call := &Call{Name: "t"}
	ex := &exchange{id: "x", call: call, ctx: context.Background(), cancel: func() {}}
	res := OkText("r")
	if n := testing.AllocsPerRun(100, func() { p.toolEnded(ex, call, res) }); n != 0 {
		t.Errorf("%v allocations per tool end outside a parked exchange; want 0", n)
	}
}

// askUntil asks the call's client a question from a goroutine of its
// own, which stands until quit closes (its context then cancelled): the
// tool goes on, or ends, while it is asked.
func askUntil(ctx context.Context, quit <-chan struct{}) {
	qctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	go func() {
		<-quit
		cancel()
	}()
	go func() {
		_, _ = RequestFromClient(qctx, MethodElicitation, json.RawMessage(`{"message":"name?","requestedSchema":{"type":"object"}}`))
	}()
}

// A tool that ends just as the client's repeat takes its exchange (the
// call's deadline, say, as the repeat arrives; here a tool that ends on
// its own while its question still stands), after the tool sent its
// result but before it looked for the exchange: a repeat without the
// answer gets the tool's result, instead of the question again with the
// exchange parked and its result in it, which no timer would drop.
func TestExchangeToolEndsAsTheRepeatTakesIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		end, quit := make(chan struct{}), make(chan struct{})
		tl, _ := NewDynamicTool(ToolDef{Name: "ends"}, func(ctx context.Context, _ map[string]any) (*Result, error) {
			askUntil(ctx, quit)
			<-end
			return OkText("ended"), nil
		})
		cat := catalogOf("t", tl)
		p := NewPipeline(&Options{Tools: cat, CallTimeout: time.Hour})
		ctx := WithClient(context.Background(), roundsOnlyClient{})
		defer close(quit)
		if r1 := p.Call(ctx, &Call{Name: "ends", Identity: "local"}); r1.Kind != KindInputRequired {
			t.Fatalf("round 1: kind %q", r1.Kind)
		}
		// The repeat takes the exchange; then the tool ends.
		p.exchanges.mu.Lock()
		var id string
		for id = range p.exchanges.m {
		}
		p.exchanges.mu.Unlock()
		ex := p.exchanges.take(id)
		close(end)
		synctest.Wait()
		r2 := p.resume(ctx, &Call{Name: "ends", Identity: "local"}, ex)
		if r2.Kind != "" || len(r2.Output) == 0 || r2.Output[0].(TextPart).Text != "ended" {
			t.Errorf("the repeat: kind %q %q %s; want the tool's result", r2.Kind, r2.Message, r2.InputRequests)
		}
		time.Sleep(RoundTTL + time.Minute)
		synctest.Wait()
		held := heldExchanges(p)
		if held != 0 {
			t.Errorf("%d exchanges held past the round's expiry", held)
		}
	})
}

// A result kept for the client's repeat (the tool gave up on its question,
// then ended) is kept while the round's state is good: RoundTTL from when
// the client was asked, not from when the tool ended.
func TestExchangeKeptUntilTheRoundExpires(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		withdraw := make(chan struct{})
		cat := catalogOf("t", withdrawingTool(t, withdraw, false))
		p := NewPipeline(&Options{Tools: cat, CallTimeout: 2 * RoundTTL})
		ctx := WithClient(context.Background(), roundsOnlyClient{})
		if r1 := p.Call(ctx, &Call{Name: "withdraws", Identity: "local"}); r1.Kind != KindInputRequired {
			t.Fatalf("round 1: kind %q", r1.Kind)
		}
		time.Sleep(RoundTTL * 2 / 3)
		close(withdraw)
		synctest.Wait()
		if n := heldExchanges(p); n != 1 {
			t.Fatalf("%d exchanges held once the tool ended; want its result kept", n)
		}
		time.Sleep(RoundTTL/3 + time.Second)
		synctest.Wait()
		if n := heldExchanges(p); n != 0 {
			t.Errorf("%d exchanges held past the round's expiry", n)
		}
	})
}

// Results kept for a repeat are bounded (maxKeptExchanges): past the
// bound the one kept longest is dropped, as one no repeat took.
func TestExchangeKeptBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		quit := make(chan struct{})
		tl, _ := NewDynamicTool(ToolDef{Name: "keeps"}, func(ctx context.Context, _ map[string]any) (*Result, error) {
			askUntil(ctx, quit)
			time.Sleep(time.Millisecond) // the round ends with the question; then the tool ends by itself
			return OkText("kept"), nil
		})
		cat := catalogOf("t", tl)
		p := NewPipeline(&Options{Tools: cat, CallTimeout: time.Hour})
		ctx := WithClient(context.Background(), roundsOnlyClient{})
		defer close(quit)
		var states []string
		for range maxKeptExchanges + 1 {
			r := p.Call(ctx, &Call{Name: "keeps", Identity: "local"})
			if r.Kind != KindInputRequired {
				t.Fatalf("kind %q; want the question", r.Kind)
			}
			states = append(states, r.RequestState)
			time.Sleep(2 * time.Millisecond)
			synctest.Wait()
		}
		held := heldExchanges(p)
		if held != maxKeptExchanges {
			t.Errorf("%d exchanges held; want %d", held, maxKeptExchanges)
		}
		if r := p.Call(ctx, &Call{Name: "keeps", Identity: "local", RequestState: states[0]}); r.Kind != KindRequestError || !strings.Contains(r.Message, "has ended") {
			t.Errorf("the repeat of the first call: kind %q %q; want it ended", r.Kind, r.Message)
		}
		if r := p.Call(ctx, &Call{Name: "keeps", Identity: "local", RequestState: states[1]}); r.Kind != "" || r.Output[0].(TextPart).Text != "kept" {
			t.Errorf("the repeat of the second call: kind %q %q; want its result", r.Kind, r.Message)
		}
	})
}

// A tool's question that a round may not put to the client (here a
// sampling request whose params do not decode) fails the call; the
// exchange ends with it, and the tool stops waiting for an answer at
// once, not at the call's deadline.
func TestExchangeRefusedRoundEndsIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ended := make(chan error, 1)
		tl, _ := NewDynamicTool(ToolDef{Name: "bad"}, func(ctx context.Context, _ map[string]any) (*Result, error) {
			_, err := RequestFromClient(ctx, MethodSampling, json.RawMessage(`{"messages":"not a list"}`))
			ended <- err
			return nil, err
		})
		cat := catalogOf("t", tl)
		p := NewPipeline(&Options{Tools: cat, CallTimeout: time.Hour})
		ctx := WithClient(context.Background(), roundsOnlyClient{})
		if r := p.Call(ctx, &Call{Name: "bad", Identity: "local"}); r.Kind != KindRuntime || !strings.Contains(r.Message, "does not decode") {
			t.Fatalf("kind %q %q; want a runtime error saying the request does not decode", r.Kind, r.Message)
		}
		synctest.Wait()
		held := heldExchanges(p)
		if held != 0 {
			t.Errorf("%d exchanges held after the round was refused", held)
		}
		select {
		case err := <-ended:
			if !errors.Is(err, context.Canceled) {
				t.Errorf("the tool's request ended with %v; want cancelled", err)
			}
		default:
			t.Error("the tool still waits for an answer to the refused round")
		}
		time.Sleep(2 * time.Hour) // let the call's deadline end it, if the exchange did not
	})
}
