package main

import (
	"context"
	"fmt"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// startTracing sets up OpenTelemetry traces when traces.enabled: the OTel
// SDK with its OTLP/HTTP exporter, both configured by the standard OTEL_*
// environment variables. It returns nil when traces are off: the pipeline
// then has no trace stage at all. The provider is flushed and closed by
// app.shutdown.
func (a *app) startTracing(ctx context.Context) (trace.Tracer, error) {
	if !a.cfg.Traces.Enabled {
		return nil, nil
	}
	exp, err := otlptracehttp.New(ctx)
	if err != nil {
		return nil, fmt.Errorf("traces: %w", err)
	}
	res, err := resource.New(ctx,
		resource.WithAttributes(attribute.String("service.name", "toolgate"), attribute.String("service.version", version())),
		resource.WithFromEnv(), // OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES win
	)
	if err != nil {
		return nil, fmt.Errorf("traces: %w", err)
	}
	// The SDK reports a failed export (a collector down, say) to OTel's
	// global error handler, which writes a line of its own on stderr;
	// toolgate's log (log.file, log.format) is where an operator looks.
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) {
		a.log.Warn("traces: OpenTelemetry error", "err", err)
	}))
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	a.traceShutdown = tp.Shutdown
	a.log.Info("OpenTelemetry traces on (OTLP/HTTP; OTEL_* environment variables)")
	return tp.Tracer("github.com/toolgate/toolgate"), nil
}
