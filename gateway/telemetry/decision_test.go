package telemetry_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/toolgate/toolgate/gateway"
	"github.com/toolgate/toolgate/gateway/telemetry"
)

type askPolicy struct{}

func (askPolicy) Decide(context.Context, *gateway.Tool) gateway.Decision {
	return gateway.Decision{Ask: true, Layer: "test", Rule: "ask"}
}

// roundApprover asks the client in a round of its own call.
type roundApprover struct{}

func (roundApprover) Approve(context.Context, *gateway.Call) gateway.Approval {
	return gateway.Approval{Channel: "client", InputRequest: json.RawMessage(`{"message":"ok?"}`), RequestState: "s"}
}

// TestAskIsNotDeny: a call that waits for a person's approval (its round
// ends input_required) was not denied; counting it as decision="deny"
// made a dashboard of denials count every approval asked.
func TestAskIsNotDeny(t *testing.T) {
	ctx := context.Background()
	cat := echoCatalog(ctx)
	m := telemetry.New(telemetry.Sources{})
	p := gateway.NewPipeline(&gateway.Options{Tools: cat, Policy: askPolicy{}, Approver: roundApprover{}, Recorder: m})
	res := p.Call(ctx, &gateway.Call{Name: "echo"})
	if res.Status() != "input_required" {
		t.Fatalf("status %q, want input_required", res.Status())
	}
	fams := scrape(t, m.Handler())
	if got, ok := value(fams, "toolgate_calls_total", map[string]string{"tool": "echo", "status": "input_required", "decision": "ask"}); !ok || got != 1 {
		t.Errorf("the approval round is not counted as decision=ask: %v", fams["toolgate_calls_total"])
	}
}

// waitingApprover waits for a person who never answers: the call waits
// until its context ends. reached is closed once a call waits.
type waitingApprover struct{ reached chan struct{} }

func (a waitingApprover) Approve(ctx context.Context, _ *gateway.Call) gateway.Approval {
	close(a.reached)
	<-ctx.Done()
	return gateway.Approval{Channel: "operator"}
}

// TestApprovalCancelNotUpstreamError: a call to an upstream's tool that
// the client cancels while it waits for a person's approval never reached
// the upstream; counting it among the upstream's call errors (status
// cancelled) made an alert on those fire for every approval abandoned.
func TestApprovalCancelNotUpstreamError(t *testing.T) {
	ctx := context.Background()
	read, err := gateway.NewDynamicTool(gateway.ToolDef{Name: "kg__read"}, func(context.Context, map[string]any) (*gateway.Result, error) {
		t.Error("the upstream's tool ran without approval")
		return gateway.OkText("ok"), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	up, _ := gateway.NewToolset("kg", read)
	cat := gateway.NewCatalog(nil)
	if err := cat.Add(ctx, upstreamToolset{up, 0}); err != nil {
		t.Fatal(err)
	}
	m := telemetry.New(telemetry.Sources{Toolsets: cat.Toolsets})
	approver := waitingApprover{reached: make(chan struct{})}
	p := gateway.NewPipeline(&gateway.Options{Tools: cat, Policy: askPolicy{}, Approver: approver, Recorder: m})
	cctx, cancel := context.WithCancel(ctx)
	done := p.Start(cctx, &gateway.Call{Name: "kg__read"})
	<-approver.reached
	cancel()
	if res := <-done; res.Status() != "cancelled" {
		t.Fatalf("status %q, want cancelled", res.Status())
	}
	fams := scrape(t, m.Handler())
	if got, ok := value(fams, "toolgate_calls_total", map[string]string{"tool": "kg__read", "status": "cancelled"}); !ok || got != 1 {
		t.Errorf("the cancelled call is not counted: %v", fams["toolgate_calls_total"])
	}
	if f := fams["toolgate_upstream_call_errors_total"]; f != nil {
		t.Errorf("a call cancelled before it reached the upstream is the upstream's error: %v", f.Metric)
	}
}
