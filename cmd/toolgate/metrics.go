package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/toolgate/toolgate/cmd/toolgate/internal/config"
	"github.com/toolgate/toolgate/gateway"
	"github.com/toolgate/toolgate/gateway/operator"
	"github.com/toolgate/toolgate/gateway/telemetry"
)

// Prometheus metrics (config metrics): wiring only; the metrics are
// gateway/telemetry's.

// withMetrics adds the metrics observer to the call recorders when metrics
// are enabled; when they are off the recorder is returned unchanged, so
// the call path carries nothing for them.
func (a *app) withMetrics(rec gateway.Recorder) gateway.Recorder {
	if !a.cfg.Metrics.Enabled {
		return rec
	}
	src := telemetry.Sources{Toolsets: a.catalog.Toolsets, Reloads: a.reloadCounts.counts}
	if a.run != nil {
		src.RecordWriteErrors = a.run.WriteErrors
	}
	a.metrics = telemetry.New(src)
	if rec == nil {
		return a.metrics
	}
	return telemetry.Recorders(rec, a.metrics)
}

// serveMetrics serves /metrics on metrics.addr until ctx ends, when that
// is set. Without it, serve --http mounts /metrics on its own listener and
// a stdio serve has nowhere to serve them, which is an error.
func (a *app) serveMetrics(ctx context.Context, httpServing bool) error {
	if a.metrics == nil {
		return nil
	}
	addr := a.cfg.Metrics.Addr
	if addr == "" {
		if !httpServing {
			return usagef("metrics.enabled is true but a stdio serve has no listener for /metrics: set metrics.addr (e.g. 127.0.0.1:9464)")
		}
		return nil
	}
	tokens, err := a.cfg.MetricsTokens()
	if err != nil {
		return usageError{err.Error()}
	}
	bound, err := a.listenAside(ctx, "metrics.addr", addr, a.metricsAside(tokens))
	if err != nil {
		return err
	}
	a.log.Info("serving metrics", "url", "http://"+bound+"/metrics")
	return nil
}

// metricsHandler is what serve --http mounts at /metrics (nil: nothing).
func (a *app) metricsHandler() http.Handler {
	if a.metrics == nil || a.cfg.Metrics.Addr != "" {
		return nil
	}
	return a.metrics.Handler()
}

// listenAside serves handler on addr (a listener beside the MCP transport:
// metrics, the admin API) until ctx ends, and returns the bound address;
// key names the setting in errors.
func (a *app) listenAside(ctx context.Context, key, addr string, handler http.Handler) (string, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", fmt.Errorf("%s: %w", key, err)
	}
	hs := &http.Server{
		Handler: handler, ReadHeaderTimeout: 10 * time.Second,
		ErrorLog: gateway.HTTPErrorLog(a.log),
		// Requests end with ctx, streams (the operator page's events) too.
		BaseContext: func(net.Listener) context.Context { return ctx },
	}
	go func() {
		if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			a.log.Error("listener", "key", key, "err", err)
		}
	}()
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = hs.Shutdown(sctx)
	}()
	return ln.Addr().String(), nil
}

// metricsAside is what the listener of metrics.addr serves. A request
// from a browser's page (it has an Origin) is refused, and on a loopback
// address one whose Host is not a loopback name (DNS rebinding: a page
// whose name now resolves to 127.0.0.1), as the MCP endpoint and the admin
// API refuse them; with tokens (metrics.token_env), one without one of
// them as its bearer token.
func (a *app) metricsAside(tokens []string) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/metrics", a.metrics.Handler())
	loopback := config.IsLoopback(a.cfg.Metrics.Addr)
	var bearer func(*http.Request) bool
	if len(tokens) > 0 {
		bearer = operator.BearerCheck(tokens)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Header.Get("Origin") != "":
			http.Error(w, "metrics are not served to web pages (Origin "+r.Header.Get("Origin")+")", http.StatusForbidden)
		case loopback && !operator.HostIsLoopback(r.Host):
			http.Error(w, "Host "+r.Host+" is not a loopback name (DNS rebinding protection)", http.StatusForbidden)
		case bearer != nil && !bearer(r):
			w.Header().Set("WWW-Authenticate", `Bearer realm="toolgate metrics"`)
			http.Error(w, "a bearer token is required (metrics.token_env)", http.StatusUnauthorized)
		default:
			mux.ServeHTTP(w, r)
		}
	})
}
