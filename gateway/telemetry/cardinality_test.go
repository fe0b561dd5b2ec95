package telemetry_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/toolgate/toolgate/gateway"
	"github.com/toolgate/toolgate/gateway/telemetry"
)

// TestUpstreamKindBounded: an upstream (a toolgate behind toolgate, or any
// server) names its error's kind in the result's _meta; a kind toolgate
// does not know must not become a status of its own, or an upstream that
// sends a new one per call grows the metric series without bound (and
// the record carries a status outside the documented set).
func TestUpstreamKindBounded(t *testing.T) {
	ctx := context.Background()
	n := 0
	tl, err := gateway.NewDynamicTool(gateway.ToolDef{Name: "kg__read"}, func(context.Context, map[string]any) (*gateway.Result, error) {
		n++
		raw := fmt.Sprintf(`{"content":[{"type":"text","text":"no"}],"isError":true,"_meta":{"toolgate/kind":"made_up_%d"}}`, n)
		return gateway.ResultFromMCP([]byte(raw))
	})
	if err != nil {
		t.Fatal(err)
	}
	up, _ := gateway.NewToolset("kg", tl)
	cat := gateway.NewCatalog(nil)
	if err := cat.Add(ctx, upstreamToolset{up, 0}); err != nil {
		t.Fatal(err)
	}
	m := telemetry.New(telemetry.Sources{Toolsets: cat.Toolsets})
	p := gateway.NewPipeline(&gateway.Options{Tools: cat, Policy: denyTool("nothing"), Recorder: m})
	for range 50 {
		if res := p.Call(ctx, &gateway.Call{Name: "kg__read"}); res.Status() != "tool_error" {
			t.Fatalf("an upstream's unknown kind is the call's status: %q", res.Status())
		}
	}
	fams := scrape(t, m.Handler())
	for _, name := range []string{"toolgate_calls_total", "toolgate_call_duration_seconds", "toolgate_upstream_call_errors_total"} {
		if f := fams[name]; f == nil || len(f.Metric) != 1 {
			t.Errorf("%s: %d series after 50 calls with 50 made-up kinds, want 1", name, len(fams[name].GetMetric()))
		}
	}
	if got, _ := value(fams, "toolgate_upstream_call_errors_total", map[string]string{"upstream": "kg", "status": "tool_error"}); got != 50 {
		t.Errorf("upstream errors = %v, want 50 tool_error", got)
	}
}
