package main

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/cmd/toolgate/internal/config"
	"github.com/toolgate/toolgate/gateway/telemetry"
)

// TestMetricsListenerRebinding: /metrics on a loopback listener of its own
// (metrics.addr) answers only requests that name this machine: a web page
// that rebinds its own name to 127.0.0.1 (DNS rebinding) must not read the
// tool names and traffic, as the MCP endpoint's and the admin API's Host
// checks keep it from them; nor may a browser's page (Origin) read them. With
// allow_remote on a non-loopback address, any Host is served (Prometheus
// scrapes by name or address).
// With metrics.token_env, the listener of metrics.addr requires one of
// its tokens as the bearer token (Prometheus's authorization), on a
// remote address above all, where it otherwise answers anyone.
func TestMetricsListenerToken(t *testing.T) {
	a := &app{cfg: &config.Config{}, metrics: telemetry.New(telemetry.Sources{})}
	a.cfg.Metrics.Enabled, a.cfg.Metrics.Addr, a.cfg.Metrics.AllowRemote = true, "0.0.0.0:9464", true
	h := a.metricsAside([]string{"s3cret", "other"})
	for _, c := range []struct {
		auth string
		want int
	}{
		{"", 401},
		{"Bearer wrong", 401},
		{"Basic s3cret", 401},
		{"Bearer s3cret", 200},
		{"bearer other", 200},
	} {
		req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
		req.Host = "metrics.internal:9464"
		if c.auth != "" {
			req.Header.Set("Authorization", c.auth)
		}
		rr := httptest.NewRecorder()
		h.ServeHTTP(rr, req)
		if rr.Code != c.want {
			t.Errorf("Authorization %q: %d, want %d", c.auth, rr.Code, c.want)
		}
		if c.want == 401 && !strings.HasPrefix(rr.Header().Get("WWW-Authenticate"), "Bearer") {
			t.Errorf("Authorization %q: 401 without a Bearer challenge", c.auth)
		}
	}
	// The token comes from the variable metrics.token_env names; unset is
	// an error naming both.
	a.cfg.Metrics.TokenEnv = "TG_TEST_METRICS_TOKEN"
	if _, err := a.cfg.MetricsTokens(); err == nil || !strings.Contains(err.Error(), "metrics.token_env") {
		t.Errorf("an unset metrics.token_env variable: %v", err)
	}
	t.Setenv("TG_TEST_METRICS_TOKEN", "metrics-token-a-0123, metrics-token-b-0123")
	if toks, err := a.cfg.MetricsTokens(); err != nil || len(toks) != 2 {
		t.Errorf("metrics.token_env tokens: %q, %v", toks, err)
	}
}

func TestMetricsListenerRebinding(t *testing.T) {
	for _, c := range []struct {
		addr         string
		remote       bool
		host, origin string
		want         int
	}{
		{"127.0.0.1:9464", false, "127.0.0.1:9464", "", 200},
		{"127.0.0.1:9464", false, "localhost:9464", "", 200},
		{"127.0.0.1:9464", false, "[::1]:9464", "", 200},
		{"127.0.0.1:9464", false, "evil.example:9464", "", 403},
		{"127.0.0.1:9464", false, "127.0.0.1:9464", "http://evil.example", 403},
		{"127.0.0.1:9464", true, "evil.example:9464", "", 403}, // loopback all the same
		{"0.0.0.0:9464", true, "metrics.internal:9464", "", 200},
	} {
		a := &app{cfg: &config.Config{}, metrics: telemetry.New(telemetry.Sources{})}
		a.cfg.Metrics.Enabled, a.cfg.Metrics.Addr, a.cfg.Metrics.AllowRemote = true, c.addr, c.remote
		req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
		req.Host = c.host
		if c.origin != "" {
			req.Header.Set("Origin", c.origin)
		}
		rr := httptest.NewRecorder()
		a.metricsAside(nil).ServeHTTP(rr, req)
		if rr.Code != c.want {
			t.Errorf("addr %s, Host %s, Origin %q: %d, want %d", c.addr, c.host, c.origin, rr.Code, c.want)
		}
	}
}
