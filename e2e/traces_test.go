package e2e

import (
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	collector "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// otlpReceiver is a loopback OTLP/HTTP trace receiver: it keeps the spans
// it is sent, with the service that sent them.
type otlpReceiver struct {
	srv   *httptest.Server
	mu    sync.Mutex
	spans []receivedSpan
}

type receivedSpan struct {
	service string
	span    *tracepb.Span
}

func newOTLPReceiver(t *testing.T) *otlpReceiver {
	rc := &otlpReceiver{}
	rc.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var req collector.ExportTraceServiceRequest
		if r.URL.Path != "/v1/traces" || proto.Unmarshal(b, &req) != nil {
			http.Error(w, "not an OTLP trace export", http.StatusBadRequest)
			return
		}
		rc.mu.Lock()
		for _, rs := range req.ResourceSpans {
			service := ""
			for _, a := range rs.GetResource().GetAttributes() {
				if a.Key == "service.name" {
					service = a.GetValue().GetStringValue()
				}
			}
			for _, ss := range rs.ScopeSpans {
				for _, s := range ss.Spans {
					rc.spans = append(rc.spans, receivedSpan{service, s})
				}
			}
		}
		rc.mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
		out, _ := proto.Marshal(&collector.ExportTraceServiceResponse{})
		_, _ = w.Write(out)
	}))
	t.Cleanup(rc.srv.Close)
	return rc
}

func (rc *otlpReceiver) find(service, name string) *tracepb.Span {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	for _, s := range rc.spans {
		if s.service == service && s.span.Name == name {
			return s.span
		}
	}
	return nil
}

// TestTracesAcrossUpstreams (issue 14): with traces on, a call is a span
// that continues the caller's trace (traceparent header), carries the
// pipeline's stages as events and its outcome, and the trace goes on to
// an upstream toolgate through the request's _meta: its span has the same
// trace id and the outer span as parent.
func TestTracesAcrossUpstreams(t *testing.T) {
	t.Parallel()
	rc := newOTLPReceiver(t)
	otel := []string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + rc.srv.URL, "OTEL_BSP_SCHEDULE_DELAY=100"}
	inner := newInner(t, set("traces.enabled", true))
	e := newEnv(t, set("traces.enabled", true), func(cfg map[string]any) {
		inner.upstreamOpt(4)(cfg)
		// The inner gateway gets its environment from the upstream's env.
		cfg["upstreams"].([]any)[0].(map[string]any)["env"] = map[string]string{
			"OTEL_EXPORTER_OTLP_ENDPOINT": rc.srv.URL, "OTEL_BSP_SCHEDULE_DELAY": "100", "OTEL_SERVICE_NAME": "inner"}
	})
	e.Environ = append(otel, "OTEL_SERVICE_NAME=outer")
	s := e.StartHTTP(t)
	id := initSession(t, s, nil)
	const traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	h := sessionHeader(id)
	h["traceparent"] = "00-" + traceID + "-00f067aa0ba902b7-01"
	if code, _, body := post(t, s.URL, `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"inner__echo","arguments":{"text":"traced"}}}`, h); code != http.StatusOK || !strings.Contains(body, "traced") {
		t.Fatalf("call: %d %s", code, body)
	}
	var outer, in *tracepb.Span
	if !waitFor(20*time.Second, func() bool {
		outer, in = rc.find("outer", "tools/call inner__echo"), rc.find("inner", "tools/call echo")
		return outer != nil && in != nil
	}) {
		t.Fatalf("spans received: outer %v, inner %v", outer != nil, in != nil)
	}
	if got := hex.EncodeToString(outer.TraceId); got != traceID {
		t.Errorf("the outer span's trace %s, want the caller's %s", got, traceID)
	}
	if hex.EncodeToString(outer.ParentSpanId) != "00f067aa0ba902b7" {
		t.Errorf("the outer span's parent %x", outer.ParentSpanId)
	}
	if hex.EncodeToString(in.TraceId) != traceID || hex.EncodeToString(in.ParentSpanId) != hex.EncodeToString(outer.SpanId) {
		t.Errorf("the inner span: trace %x parent %x, want trace %s parent %x", in.TraceId, in.ParentSpanId, traceID, outer.SpanId)
	}
	var events []string
	for _, ev := range outer.Events {
		events = append(events, ev.Name)
	}
	if strings.Join(events, ",") != "resolved,validated,authorized,executed" {
		t.Errorf("stage events %v", events)
	}
	attrs := map[string]string{}
	for _, a := range outer.Attributes {
		attrs[a.Key] = a.GetValue().GetStringValue()
	}
	if attrs["toolgate.status"] != "ok" || attrs["toolgate.toolset"] != "inner" || attrs["toolgate.call_id"] == "" {
		t.Errorf("span attributes %v", attrs)
	}
}
