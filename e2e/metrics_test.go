package e2e

// Prometheus metrics (issue 14 §3) scraped from the running binary after
// real clients' calls, and checked with Prometheus's own promtool (Debian's
// prometheus package, which `make test` installs).

import (
	"io"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// requireBinary returns the path of a program a test needs, skipping the
// test when it is missing, or failing it under REQUIRE_MCP_PEERS=1 (CI,
// where `make test` installs it).
func requireBinary(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err == nil {
		return p
	}
	if os.Getenv("REQUIRE_MCP_PEERS") == "1" {
		t.Fatalf("REQUIRE_MCP_PEERS=1 but %s is not installed (make test installs it)", name)
	}
	t.Skipf("skipping: %s is not installed (make test installs it)", name)
	return ""
}

func getMetrics(t *testing.T, url, token string) string {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	code, _, body := do(t, req)
	if code != 200 {
		t.Fatalf("GET %s: %d %s", url, code, body)
	}
	return body
}

// TestMetrics: /metrics on the HTTP listener (behind the bearer token) and
// on a listener of its own count a real client's calls by tool, toolset,
// status and decision, and pass promtool's checks.
func TestMetrics(t *testing.T) {
	t.Parallel()
	promtool := requireBinary(t, "promtool")
	const token = "metrics-e2e-token"
	e := newEnv(t,
		set("metrics.enabled", true),
		set("http.auth.tokens", []string{token}),
		set("policy.tools.deny", []string{"sleep"}),
	)
	s := e.StartHTTP(t)
	cs := s.Connect(t, era2025, &ConnectOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + token}}})
	for range 3 {
		call(t, cs, "echo", map[string]any{"text": "hi"})
	}
	call(t, cs, "sleep", map[string]any{"ms": 1})

	// Behind the token like the MCP endpoint.
	req, _ := http.NewRequest(http.MethodGet, s.Base+"/metrics", nil)
	if code, _, _ := do(t, req); code != http.StatusUnauthorized {
		t.Errorf("GET /metrics without the token: %d, want 401", code)
	}
	var body string
	if !waitFor(10*time.Second, func() bool {
		body = getMetrics(t, s.Base+"/metrics", token)
		return strings.Contains(body, `toolgate_calls_total{decision="deny",status="permission_denied",tool="sleep",toolset="diagnostics"} 1`)
	}) {
		t.Fatalf("the denied call is not counted:\n%s", body)
	}
	for _, want := range []string{
		`toolgate_calls_total{decision="allow",status="ok",tool="echo",toolset="diagnostics"} 3`,
		`toolgate_calls_in_flight 0`,
		`toolgate_toolset_up{toolset="diagnostics"} 1`,
		`toolgate_call_duration_seconds_bucket{status="ok",toolset="diagnostics",le="+Inf"} 3`,
		`toolgate_record_write_errors_total 0`,
		`toolgate_http_refused_total{reason="unauthorized"} 1`, // the GET above
		`toolgate_http_refused_total{reason="origin_not_allowed"} 0`,
		`toolgate_http_sessions 1`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	check := exec.Command(promtool, "check", "metrics")
	check.Stdin = strings.NewReader(body)
	if out, err := check.CombinedOutput(); err != nil {
		t.Errorf("promtool check metrics: %v\n%s", err, out)
	}

	// An upstream (an inner toolgate over stdio): a call that times out
	// counts as its failed call, a kill -9 as its restart, and an edit of
	// the configuration as a reload.
	inner := newInner(t)
	eu := newEnv(t, set("metrics.enabled", true), set("http.auth.tokens", []string{token}), set("limits.call_timeout", "500ms"), inner.upstreamOpt(4))
	su := eu.StartHTTP(t)
	ucs := su.Connect(t, era2026, &ConnectOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + token}}})
	if res := call(t, ucs, "inner__echo", map[string]any{"text": "up"}); res.IsError {
		t.Fatalf("inner__echo: %s", textOf(res))
	}
	if res := call(t, ucs, "inner__sleep", map[string]any{"ms": 3000}); !res.IsError {
		t.Errorf("inner__sleep past its timeout succeeded")
	}
	// Two inner processes: the main connection's, and the one the
	// 2026-07-28 client's calls went over (adapters/upstream/modern.go).
	// Killing the main one is the upstream's restart.
	first := inner.runs(t)
	if len(first) != 2 {
		t.Fatalf("inner runs %+v; want the main connection's and the 2026-07-28 one's", first)
	}
	_ = syscall.Kill(first[0].PID, syscall.SIGKILL)
	eu.rewriteConfig(t, set("policy.tools.deny", []string{"sleep"}))
	if !waitFor(30*time.Second, func() bool {
		body = getMetrics(t, su.Base+"/metrics", token)
		return strings.Contains(body, `toolgate_upstream_restarts_total{upstream="inner"} 1`) &&
			strings.Contains(body, `toolgate_config_reloads_total{result="ok"} 1`) &&
			strings.Contains(body, `toolgate_toolset_up{toolset="inner"} 1`)
	}) {
		t.Errorf("no restart, reload or upstream up counted:\n%s", grepLines(body, "toolgate_", 200))
	}
	if !strings.Contains(body, `toolgate_upstream_call_errors_total{status="timeout",upstream="inner"} 1`) {
		t.Errorf("the upstream's timed out call is not counted:\n%s", grepLines(body, "toolgate_upstream", 50))
	}
	check = exec.Command(promtool, "check", "metrics")
	check.Stdin = strings.NewReader(body)
	if out, err := check.CombinedOutput(); err != nil {
		t.Errorf("promtool check metrics (with an upstream): %v\n%s", err, out)
	}

	// A listener of its own (metrics.addr), for stdio serves too.
	port := freePort(t)
	e2 := newEnv(t, set("metrics.enabled", true), set("metrics.addr", "127.0.0.1:"+strconv.Itoa(port)))
	st := e2.StartStdio(t)
	scs := st.Connect(t, era2025, nil)
	call(t, scs, "echo", map[string]any{"text": "over stdio"})
	if !waitFor(10*time.Second, func() bool {
		req, _ := http.NewRequest(http.MethodGet, "http://127.0.0.1:"+strconv.Itoa(port)+"/metrics", nil)
		resp, err := httpClient.Do(req)
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		return strings.Contains(string(b), `toolgate_calls_total{decision="allow",status="ok",tool="echo",toolset="diagnostics"} 1`)
	}) {
		t.Errorf("metrics.addr did not count the stdio client's call")
	}
}

// TestMetricsAcrossUpstreamReload: a reload that replaces an upstream (same
// name, changed settings) continues its counters. The upstream's restarts
// and failed calls are counters of the upstream by name for the life of
// the process; they used to start again at 0 with the new toolset, which
// Prometheus takes for a counter reset (rate() and increase() go wrong).
func TestMetricsAcrossUpstreamReload(t *testing.T) {
	t.Parallel()
	inner := newInner(t)
	e := newEnv(t, set("metrics.enabled", true), set("limits.call_timeout", "500ms"), inner.upstreamOpt(4))
	s := e.StartHTTP(t)
	cs := s.Connect(t, era2025, nil) // its calls go over the upstream's one connection
	if res := call(t, cs, "inner__sleep", map[string]any{"ms": 3000}); !res.IsError {
		t.Errorf("inner__sleep past its timeout succeeded")
	}
	scrape := func(cond func(body string) bool) (string, bool) {
		var body string
		ok := waitFor(30*time.Second, func() bool {
			body = getMetrics(t, s.Base+"/metrics", "")
			return cond(body)
		})
		return body, ok
	}
	has := func(want ...string) func(string) bool {
		return func(body string) bool {
			for _, w := range want {
				if !strings.Contains(body, w) {
					return false
				}
			}
			return true
		}
	}
	const (
		restarted1 = `toolgate_upstream_restarts_total{upstream="inner"} 1`
		restarted2 = `toolgate_upstream_restarts_total{upstream="inner"} 2`
		timedOut   = `toolgate_upstream_call_errors_total{status="timeout",upstream="inner"} 1`
		up         = `toolgate_toolset_up{toolset="inner"} 1`
	)
	runs := inner.runs(t)
	if len(runs) != 1 {
		t.Fatalf("inner runs %+v; want the upstream's one connection", runs)
	}
	_ = syscall.Kill(runs[0].PID, syscall.SIGKILL)
	if body, ok := scrape(has(restarted1, timedOut, up)); !ok {
		t.Fatalf("the restart and the timed-out call are not counted:\n%s", grepLines(body, "toolgate_", 200))
	}

	// A changed setting replaces the upstream: a new toolset, a new process.
	e.rewriteConfig(t, func(cfg map[string]any) {
		cfg["upstreams"].([]any)[0].(map[string]any)["max_concurrency"] = 8
	})
	if !waitFor(30*time.Second, func() bool { return len(inner.runs(t)) == 3 }) {
		t.Fatalf("the reload did not start the upstream again: runs %+v\n%s", inner.runs(t), tail(s.Stderr(), 4000))
	}
	body, ok := scrape(has(`toolgate_config_reloads_total{result="ok"} 1`, up))
	if !ok {
		t.Fatalf("no reload counted or the replaced upstream is not up:\n%s", grepLines(body, "toolgate_", 200))
	}
	for _, want := range []string{restarted1, timedOut} {
		if !strings.Contains(body, want) {
			t.Errorf("after the reload that replaced the upstream, /metrics lacks %s:\n%s", want, grepLines(body, "toolgate_upstream", 50))
		}
	}

	// The replaced upstream's restarts add to the same count.
	runs = inner.runs(t)
	_ = syscall.Kill(runs[len(runs)-1].PID, syscall.SIGKILL)
	if body, ok := scrape(has(restarted2, up)); !ok {
		t.Errorf("the replaced upstream's restart is not added to its count:\n%s", grepLines(body, "toolgate_upstream", 50))
	}
}
