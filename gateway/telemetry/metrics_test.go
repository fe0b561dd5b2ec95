package telemetry_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/toolgate/toolgate/gateway"
	"github.com/toolgate/toolgate/gateway/telemetry"
)

type denyTool string

func (d denyTool) Decide(_ context.Context, t *gateway.Tool) gateway.Decision {
	return gateway.Decision{Allow: t.Name != string(d), Layer: "test", Rule: "deny"}
}

func scrape(t *testing.T, h http.Handler) map[string]*dto.MetricFamily {
	t.Helper()
	rr := httptest.NewRecorder()
	h.ServeHTTP(rr, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rr.Code != 200 {
		t.Fatalf("GET /metrics: %d", rr.Code)
	}
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(rr.Body.String()))
	if err != nil {
		t.Fatalf("the exposition does not parse: %v", err)
	}
	return fams
}

func value(fams map[string]*dto.MetricFamily, name string, labels map[string]string) (float64, bool) {
	f := fams[name]
	if f == nil {
		return 0, false
	}
next:
	for _, m := range f.Metric {
		have := map[string]string{}
		for _, l := range m.Label {
			have[l.GetName()] = l.GetValue()
		}
		for k, v := range labels {
			if have[k] != v {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue(), true
		case m.Gauge != nil:
			return m.Gauge.GetValue(), true
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount()), true
		}
	}
	return 0, false
}

// TestCallMetrics: calls through a real pipeline are counted by tool,
// toolset, status and decision; a call to an unknown tool is counted
// without the name the client sent; nothing is left in flight.
func TestCallMetrics(t *testing.T) {
	ctx := context.Background()
	echo, err := gateway.NewDynamicTool(gateway.ToolDef{Name: "echo", InputSchema: json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}}}`)},
		func(context.Context, map[string]any) (*gateway.Result, error) { return gateway.OkText("ok"), nil })
	if err != nil {
		t.Fatal(err)
	}
	rm, _ := gateway.NewDynamicTool(gateway.ToolDef{Name: "rm"}, func(context.Context, map[string]any) (*gateway.Result, error) { return gateway.OkText(""), nil })
	ts, _ := gateway.NewToolset("diag", echo, rm)
	cat := gateway.NewCatalog(nil)
	if err := cat.Add(ctx, ts); err != nil {
		t.Fatal(err)
	}
	var writeErrs int64 = 3
	m := telemetry.New(telemetry.Sources{Toolsets: cat.Toolsets, RecordWriteErrors: func() int64 { return writeErrs }})
	p := gateway.NewPipeline(&gateway.Options{Tools: cat, Policy: denyTool("rm"), Recorder: m})

	for range 3 {
		p.Call(ctx, &gateway.Call{Name: "echo", Arguments: json.RawMessage(`{"n":1}`)})
	}
	p.Call(ctx, &gateway.Call{Name: "echo", Arguments: json.RawMessage(`{"n":"x"}`)})
	p.Call(ctx, &gateway.Call{Name: "rm"})
	p.Call(ctx, &gateway.Call{Name: `evil"name{x="1"}`})

	fams := scrape(t, m.Handler())
	for _, c := range []struct {
		labels map[string]string
		want   float64
	}{
		{map[string]string{"tool": "echo", "toolset": "diag", "status": "ok", "decision": "allow"}, 3},
		{map[string]string{"tool": "echo", "toolset": "diag", "status": "invalid_arguments", "decision": "none"}, 1},
		{map[string]string{"tool": "rm", "toolset": "diag", "status": "permission_denied", "decision": "deny"}, 1},
		{map[string]string{"tool": "(unknown)", "toolset": "", "status": "not_found", "decision": "none"}, 1},
	} {
		if got, ok := value(fams, "toolgate_calls_total", c.labels); !ok || got != c.want {
			t.Errorf("toolgate_calls_total%v = %v (present %v), want %v", c.labels, got, ok, c.want)
		}
	}
	if got, _ := value(fams, "toolgate_call_duration_seconds", map[string]string{"toolset": "diag", "status": "ok"}); got != 3 {
		t.Errorf("duration histogram count for diag/ok = %v, want 3", got)
	}
	if got, ok := value(fams, "toolgate_calls_in_flight", nil); !ok || got != 0 {
		t.Errorf("in flight after all calls = %v, want 0", got)
	}
	if got, _ := value(fams, "toolgate_toolset_up", map[string]string{"toolset": "diag"}); got != 1 {
		t.Errorf("toolgate_toolset_up{diag} = %v, want 1", got)
	}
	if got, _ := value(fams, "toolgate_record_write_errors_total", nil); got != 3 {
		t.Errorf("record write errors = %v, want 3", got)
	}
	for _, f := range fams {
		for _, mm := range f.Metric {
			for _, l := range mm.Label {
				if strings.Contains(l.GetValue(), "evil") {
					t.Errorf("a client-chosen tool name became a label value: %s", l.GetValue())
				}
			}
		}
	}
}

// TestRecordersRefusal: the first recorder's refusal refuses the call, and
// every recorder still sees its end.
func TestRecordersRefusal(t *testing.T) {
	ctx := context.Background()
	cat := echoCatalog(ctx)
	m := telemetry.New(telemetry.Sources{})
	p := gateway.NewPipeline(&gateway.Options{Tools: cat, Recorder: telemetry.Recorders(failing{}, m)})
	res := p.Call(ctx, &gateway.Call{Name: "echo"})
	if res.Kind != gateway.KindUnavailable {
		t.Fatalf("a call that cannot be recorded ran: %+v", res)
	}
	fams := scrape(t, m.Handler())
	if got, _ := value(fams, "toolgate_calls_total", map[string]string{"status": "unavailable"}); got != 1 {
		t.Errorf("the refused call is not counted: %v", got)
	}
	if got, _ := value(fams, "toolgate_calls_in_flight", nil); got != 0 {
		t.Errorf("in flight = %v", got)
	}
}

type failing struct{}

func (failing) CallStarted(*gateway.Call) error                            { return errDiskFull }
func (failing) CallFinished(*gateway.Call, *gateway.Result, time.Duration) {}

var errDiskFull = errors.New("disk full")

// upstreamToolset is a toolset that reports itself as an upstream.
type upstreamToolset struct {
	*gateway.SimpleToolset
	restarts int
}

func (u upstreamToolset) Status() gateway.ToolsetStatus {
	return gateway.ToolsetStatus{State: "ready", Upstream: &gateway.UpstreamStatus{Transport: "stdio", Restarts: u.restarts}}
}

// TestUpstreamMetrics: an upstream's restarts and the calls that failed
// while it ran them are reported per upstream; a built-in toolset's failed
// calls are not upstream errors, and refusals before execution are not
// either.
func TestUpstreamMetrics(t *testing.T) {
	ctx := context.Background()
	fail := func(name string) *gateway.Tool {
		tl, err := gateway.NewDynamicTool(gateway.ToolDef{Name: name}, func(context.Context, map[string]any) (*gateway.Result, error) {
			return gateway.Error("broken", ""), nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return tl
	}
	up, _ := gateway.NewToolset("kg", fail("kg__read"))
	builtin, _ := gateway.NewToolset("diag", fail("oops"))
	cat := gateway.NewCatalog(nil)
	if err := cat.Add(ctx, upstreamToolset{up, 2}); err != nil {
		t.Fatal(err)
	}
	if err := cat.Add(ctx, builtin); err != nil {
		t.Fatal(err)
	}
	m := telemetry.New(telemetry.Sources{Toolsets: cat.Toolsets, Reloads: func() map[string]int64 { return map[string]int64{"ok": 4, "error": 1} }})
	p := gateway.NewPipeline(&gateway.Options{Tools: cat, Policy: denyTool("nothing"), Recorder: m})
	for range 2 {
		p.Call(ctx, &gateway.Call{Name: "kg__read"})
	}
	p.Call(ctx, &gateway.Call{Name: "kg__read", Arguments: json.RawMessage(`[]`)}) // refused before running
	p.Call(ctx, &gateway.Call{Name: "oops"})
	fams := scrape(t, m.Handler())
	for _, c := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"toolgate_upstream_call_errors_total", map[string]string{"upstream": "kg", "status": "tool_error"}, 2},
		{"toolgate_upstream_restarts_total", map[string]string{"upstream": "kg"}, 2},
		{"toolgate_config_reloads_total", map[string]string{"result": "ok"}, 4},
		{"toolgate_config_reloads_total", map[string]string{"result": "error"}, 1},
	} {
		if got, ok := value(fams, c.name, c.labels); !ok || got != c.want {
			t.Errorf("%s%v = %v (present %v), want %v", c.name, c.labels, got, ok, c.want)
		}
	}
	if f := fams["toolgate_upstream_call_errors_total"]; f == nil || len(f.Metric) != 1 {
		t.Errorf("upstream call errors: %v, want kg's only", f)
	}
	if _, ok := value(fams, "toolgate_upstream_restarts_total", map[string]string{"upstream": "diag"}); ok {
		t.Error("a built-in toolset has upstream restarts")
	}
}

// echoCatalog is a catalog of one tool, echo (in toolset diag), that
// answers "ok".
func echoCatalog(ctx context.Context) *gateway.Catalog {
	echo, _ := gateway.NewDynamicTool(gateway.ToolDef{Name: "echo"}, func(context.Context, map[string]any) (*gateway.Result, error) { return gateway.OkText("ok"), nil })
	ts, _ := gateway.NewToolset("diag", echo)
	cat := gateway.NewCatalog(nil)
	_ = cat.Add(ctx, ts)
	return cat
}

// TestDurationBucketsPastTheDefaultTimeout: calls last past a minute as a
// matter of course (the approval a call waits for may take 2m, an
// operator's answer to a definition-only tool 10m, and a timed-out call
// ends just past limits.call_timeout's 60s); with 60s the top bucket,
// they were all +Inf alike, and histogram_quantile said 60s of any of
// them.
func TestDurationBucketsPastTheDefaultTimeout(t *testing.T) {
	ctx := context.Background()
	cat := echoCatalog(ctx)
	m := telemetry.New(telemetry.Sources{})
	echo, toolset, _ := cat.Resolve("echo")
	for _, d := range []time.Duration{61 * time.Second, 110 * time.Second, 4 * time.Minute, 9 * time.Minute} {
		call := &gateway.Call{Name: "echo", Tool: echo, Toolset: toolset}
		_ = m.CallStarted(call)
		m.CallFinished(call, gateway.OkText("ok"), d)
	}
	f := scrape(t, m.Handler())["toolgate_call_duration_seconds"]
	if f == nil || len(f.Metric) != 1 {
		t.Fatalf("duration histogram: %v", f)
	}
	below := map[float64]uint64{}
	for _, b := range f.Metric[0].GetHistogram().GetBucket() {
		below[b.GetUpperBound()] = b.GetCumulativeCount()
	}
	for _, c := range []struct {
		le   float64
		want uint64
	}{{60, 0}, {120, 2}, {300, 3}, {600, 4}} {
		if got, ok := below[c.le]; !ok || got != c.want {
			t.Errorf("bucket le=%v: %d calls (present %v), want %d", c.le, got, ok, c.want)
		}
	}
}

// TestMetricsMethods: /metrics is read with GET (or HEAD); any other
// method is refused with 405 and the methods allowed, as a read-only
// resource answers them, not with the metrics.
func TestMetricsMethods(t *testing.T) {
	h := telemetry.New(telemetry.Sources{}).Handler()
	for _, c := range []struct {
		method string
		want   int
	}{
		{http.MethodGet, 200}, {http.MethodHead, 200},
		{http.MethodPost, 405}, {http.MethodPut, 405}, {http.MethodDelete, 405},
	} {
		rr := httptest.NewRecorder()
		h.ServeHTTP(rr, httptest.NewRequest(c.method, "/metrics", nil))
		if rr.Code != c.want {
			t.Errorf("%s /metrics: %d, want %d", c.method, rr.Code, c.want)
		}
		if c.want == 405 && rr.Header().Get("Allow") != "GET, HEAD" {
			t.Errorf("%s /metrics: Allow %q, want GET, HEAD", c.method, rr.Header().Get("Allow"))
		}
		if c.want == 405 && strings.Contains(rr.Body.String(), "toolgate_") {
			t.Errorf("%s /metrics answered the metrics", c.method)
		}
	}
}

// TestDocumentedStatuses: docs/telemetry.md's row of toolgate_calls_total
// names every status a call can be counted under (the record's), so that
// an operator's dashboard and alerts can name them all.
func TestDocumentedStatuses(t *testing.T) {
	doc, err := os.ReadFile("../../docs/telemetry.md")
	if err != nil {
		t.Fatal(err)
	}
	var row string
	for _, line := range strings.Split(string(doc), "\n") {
		if strings.HasPrefix(line, "| `toolgate_calls_total`") {
			row = line
		}
	}
	if row == "" {
		t.Fatal("docs/telemetry.md has no row for toolgate_calls_total")
	}
	for _, k := range []gateway.Kind{"ok", gateway.KindToolError, gateway.KindNotFound, gateway.KindParse, gateway.KindInvalid,
		gateway.KindDenied, gateway.KindTimeout, gateway.KindCancelled, gateway.KindRuntime, gateway.KindUnavailable,
		gateway.KindInputRequired, gateway.KindRequestError} {
		if !strings.Contains(row, "`"+string(k)+"`") {
			t.Errorf("docs/telemetry.md does not name the status %s", k)
		}
	}
}

// TestHTTPMetrics: the HTTP transport's counters are metrics, every
// refusal reason from the start (an alert's series exists before the
// first refusal), none before there is a transport.
func TestHTTPMetrics(t *testing.T) {
	m := telemetry.New(telemetry.Sources{})
	var serving bool
	m.WatchHTTP(func() (gateway.HTTPStats, bool) {
		return gateway.HTTPStats{Sessions: 3, InFlight: 2, Streams: 1, BodyMemory: 512, Evicted: 4,
			RefusedBy: map[string]int64{"unauthorized": 7, "limits.max_in_flight": 5}}, serving
	})
	if f := scrape(t, m.Handler())["toolgate_http_sessions"]; f != nil {
		t.Fatalf("HTTP metrics without a transport: %v", f)
	}
	serving = true
	fams := scrape(t, m.Handler())
	for _, c := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"toolgate_http_sessions", nil, 3},
		{"toolgate_http_requests_in_flight", nil, 2},
		{"toolgate_http_streams", nil, 1},
		{"toolgate_http_body_bytes_in_flight", nil, 512},
		{"toolgate_http_sessions_evicted_total", nil, 4},
		{"toolgate_http_refused_total", map[string]string{"reason": "unauthorized"}, 7},
		{"toolgate_http_refused_total", map[string]string{"reason": "limits.max_in_flight"}, 5},
		{"toolgate_http_refused_total", map[string]string{"reason": "origin_not_allowed"}, 0},
	} {
		if got, ok := value(fams, c.name, c.labels); !ok || got != c.want {
			t.Errorf("%s%v = %v (present %v), want %v", c.name, c.labels, got, ok, c.want)
		}
	}
	if n := len(fams["toolgate_http_refused_total"].GetMetric()); n != len(gateway.HTTPRefusalReasons) {
		t.Errorf("%d refusal series, want one per reason (%d)", n, len(gateway.HTTPRefusalReasons))
	}
}
