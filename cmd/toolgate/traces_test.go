package main

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/cmd/toolgate/internal/config"
)

// TestTraceExportErrorsLogged: when the OTLP collector cannot be reached, the exporter's errors are in
// toolgate's log (log.file, log.format), as a warning that says they are
// the traces', not lines of OTel's own on stderr past log.file, where
// an operator reading the log never learns that spans are being lost.
func TestTraceExportErrorsLogged(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := ln.Addr().String()
	ln.Close() // nothing listens there now: connection refused
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://"+down)
	w := &lineWatch{want: []byte(`"msg":"traces: OpenTelemetry error"`), seen: make(chan []byte, 1)}
	a := &app{cfg: &config.Config{}, log: slog.New(slog.NewJSONHandler(w, nil))}
	a.cfg.Traces.Enabled = true
	ctx := context.Background()
	tracer, err := a.startTracing(ctx)
	if err != nil {
		t.Fatal(err)
	}
	_, span := tracer.Start(ctx, "tools/call echo")
	span.End()
	sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	_ = a.traceShutdown(sctx) // exports the span, which fails
	select {
	case rec := <-w.seen:
		if !bytes.Contains(rec, []byte(`"level":"WARN"`)) || !bytes.Contains(rec, []byte("connection refused")) {
			t.Fatalf("the record does not say the export failed and why: %s", rec)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the failed export is not in toolgate's log")
	}
}

// TestTraceShutdownErrorNamed: when the last spans cannot be exported at
// shutdown (a collector that does not answer), the error serve logs says
// it is the traces', not a bare "context deadline exceeded".
func TestTraceShutdownErrorNamed(t *testing.T) {
	a := &app{cfg: &config.Config{}, log: slog.New(slog.DiscardHandler)}
	a.traceShutdown = func(context.Context) error { return context.DeadlineExceeded }
	err := a.shutdown()
	if err == nil || !strings.Contains(err.Error(), "traces: exporting the last spans") || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("shutdown: %v; want an error naming the traces' export", err)
	}
}
