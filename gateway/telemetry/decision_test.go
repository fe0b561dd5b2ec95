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
