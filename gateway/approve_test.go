package gateway

import (
	"context"
	"sync"
	"testing"
	"time"
)

type fixedApprover struct {
	a     Approval
	calls int
}

func (f *fixedApprover) Approve(context.Context, *Call) Approval { f.calls++; return f.a }

type eventLog struct {
	mu     sync.Mutex
	events []string
}

func (l *eventLog) CallStarted(*Call) error                    { return nil }
func (l *eventLog) CallFinished(*Call, *Result, time.Duration) {}
func (l *eventLog) Event(typ string, fields map[string]any) {
	l.mu.Lock()
	l.events = append(l.events, typ)
	l.mu.Unlock()
}

func TestApproveStage(t *testing.T) {
	ran := 0
	tl, _ := NewDynamicTool(ToolDef{Name: "send"}, func(context.Context, map[string]any) (*Result, error) { ran++; return OkText("sent"), nil })
	ts, _ := NewToolset("mail", tl)
	cat := NewCatalog(nil)
	_ = cat.Add(context.Background(), ts)
	ask := PolicyFunc(func(context.Context, *Tool) Decision {
		return Decision{Ask: true, Layer: "config", Rule: "policy.approval.tools:send"}
	})
	for _, c := range []struct {
		name     string
		approver Approver
		kind     Kind
		rule     string
		events   []string
		ran      int
	}{
		{"granted", &fixedApprover{a: Approval{Granted: true, Scope: "once", Channel: "client"}}, "", "approval:client:once", []string{"approval.requested", "approval.granted"}, 1},
		{"denied", &fixedApprover{a: Approval{Channel: "operator", Reason: "no"}}, KindDenied, "approval:denied:operator", []string{"approval.requested", "approval.denied"}, 0},
		{"expired", &fixedApprover{a: Approval{Expired: true, Channel: "none"}}, KindDenied, "approval:expired", []string{"approval.requested", "approval.expired"}, 0},
		{"no channel", nil, KindDenied, "policy.approval.tools:send", nil, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			ran = 0
			log := &eventLog{}
			p := NewPipeline(&Options{Tools: cat, Policy: ask, Approver: c.approver, Recorder: log})
			call := &Call{Name: "send"}
			res := p.Call(context.Background(), call)
			if res.Kind != c.kind || ran != c.ran {
				t.Errorf("kind %q ran %d, want %q ran %d: %s", res.Kind, ran, c.kind, c.ran, res.Message)
			}
			if call.Decision == nil || call.Decision.Rule != c.rule || call.Decision.Ask {
				t.Errorf("the recorded decision is %+v, want rule %q and no pending ask", call.Decision, c.rule)
			}
			if len(log.events) != len(c.events) {
				t.Errorf("events %v, want %v", log.events, c.events)
			}
		})
	}
}
