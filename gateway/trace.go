package gateway

import (
	"context"
	"encoding/json"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// Traces (OpenTelemetry): with [Options.Tracer] set, every call is one
// span, "tools/call NAME", the outermost stage, with the pipeline's stages
// as events on it (resolved, validated, authorized, approved, executed)
// and the outcome as attributes and status. A caller's W3C trace context
// is continued: from the request's _meta (traceparent, tracestate, as the
// 2026-07-28 revision allows) or, over HTTP, from the request's headers;
// and it is passed on to upstreams in the _meta of their tools/call (and
// the headers of HTTP upstreams). With no Tracer there is no stage at
// all, and the stage events cost a field test.

// propagator is the W3C trace context, used without touching OTel's
// global state.
var propagator = propagation.TraceContext{}

// traceStage is the span of a call.
func (p *Pipeline) traceStage(next Handler) Handler {
	return func(ctx context.Context, call *Call) *Result {
		ctx, span := p.startSpan(ctx, call)
		res := next(ctx, call)
		endSpan(span, call, res)
		return res
	}
}

// startSpan starts the span of a call. Its name is the tool's until the
// call turns out to name none ([endSpan]); the attribute holds at most
// 256 bytes of the name, as [Pipeline.traceOutside]'s.
func (p *Pipeline) startSpan(ctx context.Context, call *Call) (context.Context, trace.Span) {
	return p.opts.Tracer.Start(ctx, "tools/call "+call.Name, trace.WithSpanKind(trace.SpanKindServer),
		trace.WithAttributes(attribute.String("mcp.method.name", "tools/call"), attribute.String("gen_ai.tool.name", Truncate(call.Name, 256))))
}

// endSpan sets the outcome of a call on its span and ends it. A call that
// resolved to no tool (a name call_tool passed on, one outside the
// caller's profile) named what its client chose: its span is "tools/call"
// alone, so that span names stay few.
func endSpan(span trace.Span, call *Call, res *Result) {
	defer span.End()
	if call.Tool == nil {
		span.SetName("tools/call")
	}
	span.SetAttributes(
		attribute.String("toolgate.call_id", call.ID),
		attribute.String("toolgate.toolset", call.Toolset),
		attribute.String("toolgate.status", res.Status()),
		attribute.String("toolgate.identity", call.Identity),
	)
	if call.Decision != nil {
		span.SetAttributes(attribute.String("toolgate.decision.rule", call.Decision.Rule))
	}
	if res.IsError {
		span.SetStatus(codes.Error, res.Status())
	}
}

// traceOutside makes the span of a call answered without entering the
// pipeline ([Pipeline.RecordOutside]), so that every call is one span.
// Such a call names no tool toolgate serves: the name is the client's
// choice, so the span's name does not carry it (span names are meant to be
// few), and its attribute holds at most 256 bytes of it.
func (p *Pipeline) traceOutside(ctx context.Context, call *Call, res *Result) {
	_, span := p.opts.Tracer.Start(ctx, "tools/call", trace.WithSpanKind(trace.SpanKindServer),
		trace.WithAttributes(attribute.String("mcp.method.name", "tools/call"), attribute.String("gen_ai.tool.name", Truncate(call.Name, 256))))
	endSpan(span, call, res)
}

// stageEvent marks a pipeline stage on the call's span, if it has one.
// Without a Tracer it costs a field test, not a context lookup.
func (p *Pipeline) stageEvent(ctx context.Context, name string) {
	if p.opts.Tracer == nil {
		return
	}
	if s := trace.SpanFromContext(ctx); s.IsRecording() {
		s.AddEvent(name)
	}
}

// mapCarrier reads and writes trace context in a _meta map.
type mapCarrier map[string]any

func (m mapCarrier) Get(k string) string { s, _ := m[k].(string); return s }
func (m mapCarrier) Set(k, v string)     { m[k] = v }
func (m mapCarrier) Keys() []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	return keys
}

// withRawMetaTrace is [withMetaTrace] for a request's _meta as raw JSON.
func withRawMetaTrace(ctx context.Context, meta map[string]json.RawMessage) context.Context {
	if _, ok := meta["traceparent"]; !ok {
		return ctx
	}
	m := map[string]any{}
	for _, k := range []string{"traceparent", "tracestate"} {
		var s string
		if json.Unmarshal(meta[k], &s) == nil {
			m[k] = s
		}
	}
	return withMetaTrace(ctx, m)
}

// withMetaTrace continues the trace context of a request's _meta, if any.
func withMetaTrace(ctx context.Context, meta map[string]any) context.Context {
	if _, ok := meta["traceparent"]; !ok {
		return ctx
	}
	return propagator.Extract(ctx, mapCarrier(meta))
}

// InjectTrace writes the trace context of ctx's span into meta (an
// upstream request's _meta), when there is one.
func InjectTrace(ctx context.Context, meta map[string]any) {
	if Traced(ctx) {
		propagator.Inject(ctx, mapCarrier(meta))
	}
}

// Traced reports whether ctx carries the trace context of a span, which
// [InjectTrace] and [InjectTraceHeaders] would pass on.
func Traced(ctx context.Context) bool { return trace.SpanContextFromContext(ctx).IsValid() }

// InjectTraceHeaders writes the trace context of ctx's span into HTTP
// headers, when there is one.
func InjectTraceHeaders(ctx context.Context, h map[string][]string) {
	if Traced(ctx) {
		propagator.Inject(ctx, propagation.HeaderCarrier(h))
	}
}

// withHeaderTrace continues the trace context of HTTP request headers.
func withHeaderTrace(ctx context.Context, h map[string][]string) context.Context {
	if len(h["Traceparent"]) == 0 {
		return ctx
	}
	return propagator.Extract(ctx, propagation.HeaderCarrier(h))
}

// Tracing reports whether the pipeline makes spans of calls.
func (p *Pipeline) Tracing() bool { return p.opts.Tracer != nil }
