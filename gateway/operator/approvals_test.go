package operator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolgate/toolgate/gateway"
)

// events keeps the call records and events a pipeline writes.
type events struct {
	mu       sync.Mutex
	finished map[string]string // call id -> status
	kinds    map[string]int
	fields   []map[string]any // of every event, in order
}

func (e *events) CallStarted(*gateway.Call) error { return nil }
func (e *events) CallFinished(c *gateway.Call, r *gateway.Result, _ time.Duration) {
	e.mu.Lock()
	e.finished[c.ID] = r.Status()
	e.mu.Unlock()
}
func (e *events) Event(typ string, fields map[string]any) {
	e.mu.Lock()
	e.fields = append(e.fields, fields)
	e.kinds[typ]++
	e.mu.Unlock()
}

// TestManyPendingApprovals: 100 calls wait for approval at once through a
// real pipeline and the operator channel; half are approved, half reach
// the approval timeout. Every one ends exactly once, as decided, with its
// record and its events.
func TestManyPendingApprovals(t *testing.T) {
	ran := 0
	var mu sync.Mutex
	tl, _ := gateway.NewDynamicTool(gateway.ToolDef{Name: "send"}, func(context.Context, map[string]any) (*gateway.Result, error) {
		mu.Lock()
		ran++
		mu.Unlock()
		return gateway.OkText("sent"), nil
	})
	ts, _ := gateway.NewToolset("mail", tl)
	cat := gateway.NewCatalog(nil)
	_ = cat.Add(context.Background(), ts)
	q := NewQueue()
	ev := &events{finished: map[string]string{}, kinds: map[string]int{}}
	ask := gateway.PolicyFunc(func(context.Context, *gateway.Tool) gateway.Decision {
		return gateway.Decision{Ask: true, Layer: "config", Rule: "policy.approval.tools:send"}
	})
	p := gateway.NewPipeline(&gateway.Options{Tools: cat, Policy: ask, Recorder: ev,
		Approver: NewApprovals(ApprovalOptions{Queue: q, Channel: "operator", Timeout: 3 * time.Second})})

	results := make([]*gateway.Result, 100)
	var wg sync.WaitGroup
	for i := range 100 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = p.Call(context.Background(), &gateway.Call{ID: fmt.Sprint("c", i), Name: "send", Session: "s"})
		}()
	}
	waitListed(t, q, 100)
	for i := 0; i < 100; i += 2 {
		if err := q.Submit(fmt.Sprint("c", i), Answer{Decision: AllowOnce, By: "test"}); err != nil {
			t.Fatalf("approve c%d: %v", i, err)
		}
	}
	wg.Wait() // the odd ones expire after 3s
	for i, r := range results {
		want := "ok"
		if i%2 == 1 {
			want = "permission_denied"
		}
		if r.Status() != want {
			t.Errorf("call %d: %s, want %s (%s)", i, r.Status(), want, r.Message)
		}
	}
	if ran != 50 {
		t.Errorf("%d calls ran, want the 50 approved", ran)
	}
	if len(ev.finished) != 100 {
		t.Errorf("%d calls recorded, want 100", len(ev.finished))
	}
	for typ, n := range map[string]int{"approval.requested": 100, "approval.granted": 50, "approval.expired": 50} {
		if ev.kinds[typ] != n {
			t.Errorf("%d %s events, want %d (%v)", ev.kinds[typ], typ, n, ev.kinds)
		}
	}
}

// roundsClient is a 2026-07-28 client: it can be asked only in rounds.
type roundsClient struct{}

func (roundsClient) SessionID() string             { return "" }
func (roundsClient) Log(string, string, any) error { return nil }
func (roundsClient) CanRequest(string) bool        { return false }
func (roundsClient) CanAskInRounds(string) bool    { return true }
func (roundsClient) Modern() bool                  { return true }
func (roundsClient) Capabilities() json.RawMessage { return json.RawMessage(`{"elicitation":{}}`) }
func (roundsClient) Request(context.Context, string, json.RawMessage) (json.RawMessage, error) {
	return nil, gateway.ErrClientCannot
}

// TestApprovalStateIsNoRoundState: with replicas' session keys (one
// secret for the approvals' states and the round stage's), the state of
// an approval's form relabelled as a round's does not pass the approval:
// the tool does not run unanswered.
func TestApprovalStateIsNoRoundState(t *testing.T) {
	ran := 0
	cat, ask := sendToolAsks(&ran)
	keys := [][]byte{[]byte("0123456789abcdef0123456789abcdef")}
	p := gateway.NewPipeline(&gateway.Options{Tools: cat, Policy: ask, RoundSecrets: keys,
		Approver: NewApprovals(ApprovalOptions{Channel: "client", Timeout: time.Minute, RoundSecrets: keys})})
	ctx := gateway.WithClient(context.Background(), roundsClient{})
	first := p.Call(ctx, &gateway.Call{ID: "c1", Name: "send", Identity: "token:ci"})
	if first.Kind != gateway.KindInputRequired || !strings.HasPrefix(first.RequestState, "tga1.") {
		t.Fatalf("first round: kind %v state %q", first.Kind, first.RequestState)
	}
	relabelled := "tgr1." + strings.TrimPrefix(first.RequestState, "tga1.")
	second := p.Call(ctx, &gateway.Call{ID: "c2", Name: "send", Identity: "token:ci", RequestState: relabelled})
	if ran != 0 || second.Kind != gateway.KindRequestError {
		t.Errorf("the relabelled state: the tool ran %d time(s), result %s %q; want refused", ran, second.Kind, second.Message)
	}
}

// sendToolAsks is a catalog of one tool, "send" (toolset mail), whose
// runs ran counts, and a policy that asks a person about it.
func sendToolAsks(ran *int) (*gateway.Catalog, gateway.PolicyFunc) {
	tl, _ := gateway.NewDynamicTool(gateway.ToolDef{Name: "send"}, func(context.Context, map[string]any) (*gateway.Result, error) {
		*ran++
		return gateway.OkText("sent"), nil
	})
	ts, _ := gateway.NewToolset("mail", tl)
	cat := gateway.NewCatalog(nil)
	_ = cat.Add(context.Background(), ts)
	return cat, gateway.PolicyFunc(func(context.Context, *gateway.Tool) gateway.Decision {
		return gateway.Decision{Ask: true, Layer: "config", Rule: "policy.approval.tools:send"}
	})
}

// askingPipeline is a pipeline whose tool "send" needs approval through
// the operator channel of q; ran counts its runs.
func askingPipeline(q *Queue, ev *events, ran *int) *gateway.Pipeline {
	cat, ask := sendToolAsks(ran)
	return gateway.NewPipeline(&gateway.Options{Tools: cat, Policy: ask, Recorder: ev,
		Approver: NewApprovals(ApprovalOptions{Queue: q, Channel: "operator", Timeout: time.Minute})})
}

// TestApprovalWaitingAtShutdownIsCancelled: the operator channel closes at
// shutdown (the queue ends its waits at once); a call waiting there for
// approval ends cancelled, recorded approval.cancelled with rule
// approval:cancelled, not as an operator's denial nobody gave.
func TestApprovalWaitingAtShutdownIsCancelled(t *testing.T) {
	q := NewQueue()
	ev := &events{finished: map[string]string{}, kinds: map[string]int{}}
	ran := 0
	p := askingPipeline(q, ev, &ran)
	call := &gateway.Call{ID: "c1", Name: "send", Session: "s"}
	done := make(chan *gateway.Result)
	go func() { done <- p.Call(context.Background(), call) }()
	waitListed(t, q, 1)
	q.Close()
	res := <-done
	if res.Kind != gateway.KindCancelled || call.Decision.Rule != "approval:cancelled" {
		t.Errorf("result %s, rule %s (%s); want cancelled, approval:cancelled", res.Kind, call.Decision.Rule, res.Message)
	}
	if ev.kinds["approval.cancelled"] != 1 || ev.kinds["approval.denied"] != 0 || ev.finished["c1"] != "cancelled" {
		t.Errorf("events %v, records %v; want one approval.cancelled, no denial, the call recorded cancelled", ev.kinds, ev.finished)
	}
	if ran != 0 {
		t.Errorf("the tool ran %d times", ran)
	}
}

// TestApprovalCancelledByClient: a client that cancels its call while it
// waits for approval gets it cancelled and recorded so (approval.cancelled,
// rule approval:cancelled), not "no approval within the timeout" at once.
func TestApprovalCancelledByClient(t *testing.T) {
	q := NewQueue()
	ev := &events{finished: map[string]string{}, kinds: map[string]int{}}
	ran := 0
	p := askingPipeline(q, ev, &ran)
	ctx, cancel := context.WithCancel(context.Background())
	call := &gateway.Call{ID: "c1", Name: "send", Session: "s"}
	done := make(chan *gateway.Result)
	go func() { done <- p.Call(ctx, call) }()
	waitListed(t, q, 1)
	cancel()
	res := <-done
	if res.Kind != gateway.KindCancelled || call.Decision.Rule != "approval:cancelled" {
		t.Errorf("result %s, rule %s (%s); want cancelled, approval:cancelled", res.Kind, call.Decision.Rule, res.Message)
	}
	if ev.kinds["approval.cancelled"] != 1 || ev.kinds["approval.expired"] != 0 || ev.finished["c1"] != "cancelled" {
		t.Errorf("events %v, records %v; want one approval.cancelled, no expiry, the call recorded cancelled", ev.kinds, ev.finished)
	}
	if err := q.Submit("c1", Answer{Decision: AllowOnce}); !errors.Is(err, ErrUnknown) {
		t.Errorf("an answer after the cancellation: %v, want ErrUnknown", err)
	}
}

// TestAllowSessionWithoutSession: "allow for the session" given by the
// operator to a caller without a session (a 2026-07-28 client) is
// remembered nowhere, so it counts as allow once, and the record says
// once: the next call is asked again.
func TestAllowSessionWithoutSession(t *testing.T) {
	q := NewQueue()
	ap := NewApprovals(ApprovalOptions{Queue: q, Channel: "operator", Timeout: time.Minute})
	for i := range 2 {
		id := fmt.Sprint("c", i)
		got := make(chan gateway.Approval)
		go func() { got <- ap.Approve(context.Background(), &gateway.Call{ID: id, Name: "send"}) }()
		waitListed(t, q, 1)
		if err := q.Submit(id, Answer{Decision: AllowSession}); err != nil {
			t.Fatal(err)
		}
		if a := <-got; !a.Granted || a.Scope != "once" || a.Channel != "operator" {
			t.Errorf("call %d: %+v, want granted once through the operator", i, a)
		}
	}
}

// TestApprovalRecordsWhoAnswered: the approval.granted and
// approval.denied events of an operator's answer say through what it
// came (cli, http, ui), as tool.action_submitted does for an output.
func TestApprovalRecordsWhoAnswered(t *testing.T) {
	q := NewQueue()
	ev := &events{finished: map[string]string{}, kinds: map[string]int{}}
	ran := 0
	p := askingPipeline(q, ev, &ran)
	for i, a := range []Answer{{Decision: AllowOnce, By: "ui"}, {Decision: Deny, By: "cli"}} {
		id := fmt.Sprint("c", i)
		done := make(chan *gateway.Result)
		go func() { done <- p.Call(context.Background(), &gateway.Call{ID: id, Name: "send", Session: "s"}) }()
		waitListed(t, q, 1)
		if err := q.Submit(id, a); err != nil {
			t.Fatal(err)
		}
		<-done
		ev.mu.Lock()
		last := ev.fields[len(ev.fields)-1]
		ev.mu.Unlock()
		if last["by"] != a.By || last["channel"] != "operator" {
			t.Errorf("answer %+v: the event says %v, want by %q through the operator", a, last, a.By)
		}
	}
}

// TestOutputAnswerToAnApproval: an output sent to a call that waits for
// approval is refused saying what the call waits for and how to answer
// it; the call keeps waiting and takes a decision afterwards.
func TestOutputAnswerToAnApproval(t *testing.T) {
	q := NewQueue()
	ev := &events{finished: map[string]string{}, kinds: map[string]int{}}
	ran := 0
	p := askingPipeline(q, ev, &ran)
	done := make(chan *gateway.Result)
	go func() { done <- p.Call(context.Background(), &gateway.Call{ID: "c1", Name: "send", Session: "s"}) }()
	waitListed(t, q, 1)
	err := q.Submit("c1", Answer{Output: json.RawMessage(`"looks good"`)})
	if err == nil || !strings.Contains(err.Error(), "send waits for approval, not for an output") || !strings.Contains(err.Error(), "toolgate approve") {
		t.Fatalf("an output for an approval: %v", err)
	}
	if err := q.Submit("c1", Answer{Decision: AllowOnce}); err != nil {
		t.Fatalf("the call stopped waiting after the refused answer: %v", err)
	}
	if res := <-done; res.IsError || ran != 1 {
		t.Errorf("after approval: %+v, ran %d", res, ran)
	}
}

// TestAllowSessionAfterSessionEnded: "allow for the session" given to a
// call whose session ended while it waited is not remembered (the session
// was forgotten already; remembering it then would keep it for the
// gateway's life) and counts as once; nothing of the session is kept.
func TestAllowSessionAfterSessionEnded(t *testing.T) {
	q := NewQueue()
	ap := NewApprovals(ApprovalOptions{Queue: q, Channel: "operator", Timeout: time.Minute})
	got := make(chan gateway.Approval)
	go func() { got <- ap.Approve(context.Background(), &gateway.Call{ID: "c1", Name: "send", Session: "s"}) }()
	waitListed(t, q, 1)
	ap.ForgetSession("s")
	if err := q.Submit("c1", Answer{Decision: AllowSession}); err != nil {
		t.Fatal(err)
	}
	if a := <-got; !a.Granted || a.Scope != "once" {
		t.Errorf("%+v, want granted once", a)
	}
	ap.mu.Lock()
	defer ap.mu.Unlock()
	if len(ap.session) != 0 || len(ap.asking) != 0 || len(ap.ended) != 0 {
		t.Errorf("kept after the session ended: %v %v %v", ap.session, ap.asking, ap.ended)
	}
}

// urlOnlyClient is a 2026-07-28 client that declared elicitation in URL
// mode only: it can be asked in rounds (elicitation is declared), but
// cannot show a form.
type urlOnlyClient struct{ roundsClient }

func (urlOnlyClient) Capabilities() json.RawMessage {
	return json.RawMessage(`{"elicitation":{"url":{}}}`)
}

// TestApprovalFormNotAskedOfURLOnlyClient: the approval form is a form
// (mode "form"); a 2026-07-28 client whose elicitation capability declares
// URL mode only is never sent it in a round: the operator decides.
func TestApprovalFormNotAskedOfURLOnlyClient(t *testing.T) {
	ran := 0
	cat, ask := sendToolAsks(&ran)
	q := NewQueue()
	p := gateway.NewPipeline(&gateway.Options{Tools: cat, Policy: ask,
		Approver: NewApprovals(ApprovalOptions{Queue: q, Channel: "client", Timeout: time.Minute})})
	ctx := gateway.WithClient(context.Background(), urlOnlyClient{})
	done := make(chan *gateway.Result, 1)
	go func() { done <- p.Call(ctx, &gateway.Call{ID: "c1", Name: "send", Identity: "token:ci"}) }()
	select {
	case res := <-done:
		t.Fatalf("the call ended before the operator answered: kind %q, requests %s", res.Kind, res.InputRequests[gateway.ApprovalInput])
	case <-waitQueued(q):
	}
	if err := q.Submit("c1", Answer{Decision: AllowOnce, By: "test"}); err != nil {
		t.Fatal(err)
	}
	if res := <-done; res.Status() != "ok" || ran != 1 {
		t.Errorf("after the operator's approval: %s (%s), ran %d", res.Status(), res.Message, ran)
	}
}

// waitQueued is closed once q holds an item.
func waitQueued(q *Queue) <-chan struct{} {
	ch := make(chan struct{})
	go func() {
		defer close(ch)
		for {
			changed := q.Changed() // before looking, so no change is missed
			if len(q.List()) > 0 {
				return
			}
			<-changed
		}
	}()
	return ch
}
