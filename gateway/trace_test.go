package gateway

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// tracedMCP is an MCP mirror of the test tools whose pipeline makes spans
// into an in-memory exporter.
func tracedMCP(t *testing.T) (*MCPServer, *tracetest.InMemoryExporter, *memRecorder) {
	t.Helper()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	cat := NewCatalog(nil)
	if err := cat.Add(context.Background(), testTools(t)); err != nil {
		t.Fatal(err)
	}
	rec := newMemRecorder()
	p := NewPipeline(&Options{Tools: cat, Policy: denyShell, Recorder: rec, CallTimeout: 2 * time.Second, Tracer: tp.Tracer("test")})
	return NewMCPServer(&MCPOptions{Name: "t", Version: "1", Catalog: cat, Pipeline: p}), exp, rec
}

func mcpCallMsg(name, args, meta string) json.RawMessage {
	params := `"name":"` + name + `","arguments":` + args
	if meta != "" {
		params += `,"_meta":` + meta
	}
	return json.RawMessage(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{` + params + `}}`)
}

// TestTraceEveryCallIsASpan: every call is one span, as docs/telemetry.md
// says, those refused before the pipeline (an unknown tool, which mcp-go
// answers itself) included, with the caller's trace continued.
func TestTraceEveryCallIsASpan(t *testing.T) {
	m, exp, rec := tracedMCP(t)
	const parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	for _, c := range []struct{ name, args, status string }{
		{"echo", `{"path":"a"}`, "ok"},
		{"echo", `{}`, "invalid_arguments"},
		{"shell", `{}`, "permission_denied"},
		{"no_such_tool", `{}`, "not_found"},
	} {
		exp.Reset()
		m.srv.HandleMessage(context.Background(), mcpCallMsg(c.name, c.args, `{"traceparent":"`+parent+`"}`))
		spans := exp.GetSpans()
		if len(spans) != 1 {
			t.Errorf("%s (%s): %d spans, want 1", c.name, c.status, len(spans))
			continue
		}
		s := spans[0]
		if c.status == "not_found" && s.Name != "tools/call" {
			t.Errorf("a made-up tool name is a span name: %q", s.Name)
		}
		if s.Parent.TraceID().String() != "4bf92f3577b34da6a3ce929d0e0e4736" {
			t.Errorf("%s: the caller's trace is not continued: parent %v", c.name, s.Parent)
		}
		var status string
		for _, a := range s.Attributes {
			if a.Key == "toolgate.status" {
				status = a.Value.AsString()
			}
		}
		if status != c.status {
			t.Errorf("%s: span status attribute %q, want %q", c.name, status, c.status)
		}
	}
	if len(rec.finished) != 4 {
		t.Errorf("%d calls recorded, want 4", len(rec.finished))
	}
}

// TestTraceBadContext: a malformed traceparent, or a huge tracestate,
// neither fails the call nor passes on; the call gets a span of its own.
func TestTraceBadContext(t *testing.T) {
	m, exp, _ := tracedMCP(t)
	huge := strings.Repeat("k=v,", 100000)
	for _, meta := range []string{
		`{"traceparent":"garbage"}`,
		`{"traceparent":"00-00000000000000000000000000000000-0000000000000000-01"}`,
		`{"traceparent":7}`,
		`{"traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01","tracestate":"` + huge + `"}`,
	} {
		exp.Reset()
		resp := m.srv.HandleMessage(context.Background(), mcpCallMsg("echo", `{"path":"a"}`, meta))
		b, _ := json.Marshal(resp)
		if strings.Contains(string(b), `"isError":true`) || strings.Contains(string(b), `"error"`) {
			t.Errorf("meta %.60s: the call failed: %.300s", meta, b)
		}
		spans := exp.GetSpans()
		if len(spans) != 1 {
			t.Fatalf("meta %.60s: %d spans", meta, len(spans))
		}
		if ts := spans[0].SpanContext.TraceState().String(); len(ts) > 1024 {
			t.Errorf("meta %.60s: the span carries a tracestate of %d bytes", meta, len(ts))
		}
	}
}

// TestTraceNoSecrets: a span carries no argument values.
func TestTraceNoSecrets(t *testing.T) {
	m, exp, _ := tracedMCP(t)
	m.srv.HandleMessage(context.Background(), mcpCallMsg("echo", `{"path":"s3cret-value"}`, `{"traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}`))
	m.srv.HandleMessage(context.Background(), mcpCallMsg("echo", `{"path":"a","token":"s3cret-value"}`, ""))
	for _, s := range exp.GetSpans() {
		b, _ := json.Marshal(struct {
			A any
			E any
			S any
		}{s.Attributes, s.Events, s.Status})
		if strings.Contains(string(b), "s3cret") {
			t.Errorf("span %s carries an argument value: %s", s.Name, b)
		}
	}
}

// TestRawMetaTrace: the trace context of a _meta seen as raw JSON (a call
// refused before mcp-go decodes it) is continued as that of a decoded one.
func TestRawMetaTrace(t *testing.T) {
	ctx := withRawMetaTrace(context.Background(), map[string]json.RawMessage{
		"traceparent": json.RawMessage(`"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"`),
		"tracestate":  json.RawMessage(`"a=b"`),
	})
	if !Traced(ctx) {
		t.Fatal("the trace context of a raw _meta is not continued")
	}
	if Traced(withRawMetaTrace(context.Background(), map[string]json.RawMessage{"traceparent": json.RawMessage(`7`)})) {
		t.Fatal("a traceparent that is not a string is continued")
	}
}

// TestTraceUnresolvedNameInPipeline: a name that enters the pipeline and
// resolves to no tool (call_tool passes on the name its caller chose; the
// Go API any name) must not become a span name either, or a client grows
// the tracing backend's span names without bound; its attribute is cut
// as for a call refused before the pipeline.
func TestTraceUnresolvedNameInPipeline(t *testing.T) {
	m, exp, _ := tracedMCP(t)
	long := strings.Repeat("x", 1000)
	for _, name := range []string{"made_up_1", "made_up_2", long} {
		if res := m.opts.Pipeline.Call(context.Background(), &Call{Name: name}); res.Status() != "not_found" {
			t.Fatalf("%.20s: status %q", name, res.Status())
		}
	}
	for _, s := range exp.GetSpans() {
		if s.Name != "tools/call" {
			t.Errorf("a name no tool has is a span name: %.60q", s.Name)
		}
		for _, a := range s.Attributes {
			if a.Key == "gen_ai.tool.name" && len(a.Value.AsString()) > 256+len("…") {
				t.Errorf("gen_ai.tool.name holds %d bytes of a made-up name", len(a.Value.AsString()))
			}
		}
	}
	if n := len(exp.GetSpans()); n != 3 {
		t.Errorf("%d spans, want 3", n)
	}
}
