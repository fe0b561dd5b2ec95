package operator

import (
	"context"
	"fmt"
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
}

func (e *events) CallStarted(*gateway.Call) error { return nil }
func (e *events) CallFinished(c *gateway.Call, r *gateway.Result, _ time.Duration) {
	e.mu.Lock()
	e.finished[c.ID] = r.Status()
	e.mu.Unlock()
}
func (e *events) Event(typ string, _ map[string]any) {
	e.mu.Lock()
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
