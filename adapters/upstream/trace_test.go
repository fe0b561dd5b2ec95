package upstream

import (
	"context"
	"encoding/json"
	"testing"

	"go.opentelemetry.io/otel/trace"

	"github.com/toolgate/toolgate/gateway"
)

// TestHTTPUpstreamCarriesTraceHeaders: a traced call to an HTTP
// upstream's tool carries the call's W3C trace context in the request's
// headers (traceparent), as docs/telemetry.md promises, so that a traced
// server behind toolgate continues the caller's trace; an untraced call
// carries none.
func TestHTTPUpstreamCarriesTraceHeaders(t *testing.T) {
	url, seen := httpUpstream(t, &serverState{})
	u := start(t, Config{Name: "h", URL: url}, nil, true)
	sc := trace.NewSpanContext(trace.SpanContextConfig{
		TraceID:    trace.TraceID{0x4b, 0xf9, 0x2f, 0x35, 0x77, 0xb3, 0x4d, 0xa6, 0xa3, 0xce, 0x92, 0x9d, 0x0e, 0x0e, 0x47, 0x36},
		SpanID:     trace.SpanID{0x00, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, 0x02, 0xb7},
		TraceFlags: trace.FlagsSampled,
	})
	for _, traced := range []bool{true, false} {
		ctx := context.Background()
		if traced {
			ctx = trace.ContextWithSpanContext(ctx, sc)
		}
		res, err := u.callTool(ctx, "echo", "", &gateway.Call{Name: "h__echo", Arguments: json.RawMessage(`{"text":"hi"}`)})
		if err != nil || res.IsError {
			t.Fatalf("call: %v %+v", err, res)
		}
		got := seen().Get("Traceparent")
		want := ""
		if traced {
			want = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
		}
		if got != want {
			t.Errorf("traced %v: the upstream's request had traceparent %q, want %q", traced, got, want)
		}
	}
}
