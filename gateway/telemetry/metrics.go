// Package telemetry exposes what the gateway is doing in the formats
// operators already collect: Prometheus metrics (prometheus/client_golang).
//
// It sits beside the transport, outside the contract: the pipeline knows
// nothing of it. [Metrics] observes calls as a [gateway.Recorder] (the
// record stage calls every recorder for every call, refused and unknown
// ones included), so turning metrics off removes it from the call path
// entirely; the catalog's toolsets and the run archive's write errors are
// read at scrape time, costing nothing between scrapes.
//
// Label sets are bounded: tool and toolset names come from the catalog
// (a call to an unknown tool is counted under tool "(unknown)", never under
// the name a client sent), status and decision from fixed sets; no call
// IDs, sessions or argument values.
package telemetry

import (
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/toolgate/toolgate/gateway"
)

// Sources are what the scrape-time metrics read. Every field is optional.
type Sources struct {
	// Toolsets lists the catalog's toolsets with their state
	// ([gateway.Catalog.Toolsets]).
	Toolsets func() []gateway.ToolsetInfo
	// RecordWriteErrors counts failed writes to the run archive.
	RecordWriteErrors func() int64
	// Reloads counts configuration reloads by result ("ok", "error").
	Reloads func() map[string]int64
}

// Metrics is the gateway's Prometheus registry and the call observer.
type Metrics struct {
	reg      *prometheus.Registry
	calls    *prometheus.CounterVec
	duration *prometheus.HistogramVec
	inFlight prometheus.Gauge
	records  prometheus.Counter
	// failed counts the calls that failed while executing, by toolset and
	// status; the upstreams' are reported at scrape time, when the
	// catalog says which toolsets are upstreams.
	failed sync.Map // [2]string{toolset, status} -> *atomic.Int64
}

// New registers toolgate's metrics (and the Go runtime's and process's)
// in a registry of their own.
func New(src Sources) *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry()}
	m.calls = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "toolgate_calls_total",
		Help: "Tool calls that finished, by tool, toolset, status (ok, not_found, invalid_arguments, permission_denied, timeout, ...) and policy decision (allow, deny, ask while a person's approval is awaited, none when the call ended before authorization).",
	}, []string{"tool", "toolset", "status", "decision"})
	m.duration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "toolgate_call_duration_seconds",
		Help: "Time from a call entering the pipeline to its result, by toolset and status.",
		// Past the default call timeout (60s): a call may wait 2m for an
		// approval, 10m for an operator's answer, and a timed-out one ends
		// just past its deadline.
		Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600},
	}, []string{"toolset", "status"})
	m.inFlight = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "toolgate_calls_in_flight",
		Help: "Tool calls in the pipeline now.",
	})
	m.records = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "toolgate_records_total",
		Help: "Calls recorded (one tools.jsonl line each).",
	})
	m.reg.MustRegister(m.calls, m.duration, m.inFlight, m.records,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if src.RecordWriteErrors != nil {
		m.reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "toolgate_record_write_errors_total",
			Help: "Failed writes to the run archive.",
		}, func() float64 { return float64(src.RecordWriteErrors()) }))
	}
	if src.Toolsets != nil {
		m.reg.MustRegister(&toolsetCollector{list: src.Toolsets, failed: &m.failed})
	}
	if src.Reloads != nil {
		m.reg.MustRegister(&reloadCollector{count: src.Reloads})
	}
	return m
}

// Handler serves the metrics in the Prometheus exposition format, to GET
// and HEAD; other methods are refused with 405.
func (m *Metrics) Handler() http.Handler {
	h := promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "/metrics is read with GET", http.StatusMethodNotAllowed)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// Registry is the registry, for tests and for adding collectors.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// CallStarted implements [gateway.Recorder].
func (m *Metrics) CallStarted(*gateway.Call) error {
	m.inFlight.Inc()
	return nil
}

// CallFinished implements [gateway.Recorder].
func (m *Metrics) CallFinished(call *gateway.Call, res *gateway.Result, elapsed time.Duration) {
	m.inFlight.Dec()
	tool, toolset := call.Name, call.Toolset
	if call.Tool == nil {
		tool, toolset = "(unknown)", "" // never a label value a client chose
	}
	decision := "none"
	if call.Decision != nil {
		switch {
		case call.Decision.Allow:
			decision = "allow"
		case call.Decision.Ask:
			decision = "ask" // waits for a person (an approval round): not denied
		default:
			decision = "deny"
		}
	}
	status := res.Status()
	m.calls.WithLabelValues(tool, toolset, status, decision).Inc()
	m.duration.WithLabelValues(toolset, status).Observe(elapsed.Seconds())
	m.records.Inc()
	// Only a call the policy let through reached the toolset: one
	// cancelled while it waited for a person's approval (its decision a
	// refusal, rule approval:cancelled) never ran there.
	ran := call.Decision == nil || call.Decision.Allow
	if executionFailed[status] && toolset != "" && ran {
		key := [2]string{toolset, status}
		n, ok := m.failed.Load(key)
		if !ok {
			n, _ = m.failed.LoadOrStore(key, new(atomic.Int64))
		}
		n.(*atomic.Int64).Add(1)
	}
}

// executionFailed are the statuses of calls that failed while the toolset
// ran them (not refused before).
var executionFailed = map[string]bool{
	string(gateway.KindToolError): true, string(gateway.KindTimeout): true, string(gateway.KindCancelled): true,
	string(gateway.KindRuntime): true, string(gateway.KindUnavailable): true,
}

var _ gateway.Recorder = (*Metrics)(nil)

// toolsetCollector reports each toolset's state at scrape time, and the
// upstreams' restarts and failed calls.
type toolsetCollector struct {
	list   func() []gateway.ToolsetInfo
	failed *sync.Map
}

var (
	toolsetUpDesc = prometheus.NewDesc("toolgate_toolset_up",
		"1 when the toolset is ready (an upstream connected and listing its tools), else 0.", []string{"toolset"}, nil)
	toolsetToolsDesc = prometheus.NewDesc("toolgate_toolset_tools",
		"Tools the toolset serves.", []string{"toolset"}, nil)
	upstreamRestartsDesc = prometheus.NewDesc("toolgate_upstream_restarts_total",
		"Times the upstream's connection was lost and re-established (a stdio server restarted, say).", []string{"upstream"}, nil)
	upstreamFailedDesc = prometheus.NewDesc("toolgate_upstream_call_errors_total",
		"Calls to the upstream's tools that failed while it ran them, by status (tool_error, timeout, cancelled, runtime_error, unavailable).",
		[]string{"upstream", "status"}, nil)
)

func (c *toolsetCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- toolsetUpDesc
	ch <- toolsetToolsDesc
	ch <- upstreamRestartsDesc
	ch <- upstreamFailedDesc
}

func (c *toolsetCollector) Collect(ch chan<- prometheus.Metric) {
	upstreams := map[string]bool{}
	for _, ts := range c.list() {
		up := 0.0
		if ts.Status.State == "ready" {
			up = 1
		}
		ch <- prometheus.MustNewConstMetric(toolsetUpDesc, prometheus.GaugeValue, up, ts.Name)
		ch <- prometheus.MustNewConstMetric(toolsetToolsDesc, prometheus.GaugeValue, float64(ts.Tools), ts.Name)
		if u := ts.Status.Upstream; u != nil {
			upstreams[ts.Name] = true
			ch <- prometheus.MustNewConstMetric(upstreamRestartsDesc, prometheus.CounterValue, float64(u.Restarts), ts.Name)
		}
	}
	c.failed.Range(func(k, v any) bool {
		key := k.([2]string)
		if upstreams[key[0]] {
			ch <- prometheus.MustNewConstMetric(upstreamFailedDesc, prometheus.CounterValue, float64(v.(*atomic.Int64).Load()), key[0], key[1])
		}
		return true
	})
}

// reloadCollector reports configuration reloads by result.
type reloadCollector struct {
	count func() map[string]int64
}

var reloadsDesc = prometheus.NewDesc("toolgate_config_reloads_total",
	"Configuration reloads, by result (ok, error).", []string{"result"}, nil)

func (c *reloadCollector) Describe(ch chan<- *prometheus.Desc) { ch <- reloadsDesc }

func (c *reloadCollector) Collect(ch chan<- prometheus.Metric) {
	for result, n := range c.count() {
		ch <- prometheus.MustNewConstMetric(reloadsDesc, prometheus.CounterValue, float64(n), result)
	}
}

// WatchHTTP adds the HTTP transport's counters ([gateway.HTTPStats]) to
// the metrics, read at each scrape; stats says false while there is no
// transport. Called once, when serve --http has built it.
func (m *Metrics) WatchHTTP(stats func() (gateway.HTTPStats, bool)) {
	m.reg.MustRegister(&httpCollector{stats: stats})
}

type httpCollector struct {
	stats func() (gateway.HTTPStats, bool)
}

var (
	httpSessionsDesc = prometheus.NewDesc("toolgate_http_sessions",
		"Sessions of 2025-era clients the HTTP transport holds now.", nil, nil)
	httpInFlightDesc = prometheus.NewDesc("toolgate_http_requests_in_flight",
		"HTTP requests admitted and not yet answered (limits.max_in_flight bounds them).", nil, nil)
	httpStreamsDesc = prometheus.NewDesc("toolgate_http_streams",
		"Open streams: GET streams and 2026-07-28 subscriptions/listen (http.max_streams bounds them).", nil, nil)
	httpBodyMemDesc = prometheus.NewDesc("toolgate_http_body_bytes_in_flight",
		"Request body bytes held now (http.max_body_memory bounds them).", nil, nil)
	httpRefusedDesc = prometheus.NewDesc("toolgate_http_refused_total",
		"HTTP requests refused before the MCP server saw them, by reason: host_not_allowed, origin_not_allowed, unauthorized, insufficient_scope, auth_unavailable, session_of_another_identity, body_too_large, or the limit reached (http.max_sessions, http.max_streams, http.max_body_memory, limits.max_in_flight, limits.max_in_flight_per_session).",
		[]string{"reason"}, nil)
	httpEvictedDesc = prometheus.NewDesc("toolgate_http_sessions_evicted_total",
		"Idle sessions ended to make room for a new one at http.max_sessions.", nil, nil)
)

func (c *httpCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{httpSessionsDesc, httpInFlightDesc, httpStreamsDesc, httpBodyMemDesc, httpRefusedDesc, httpEvictedDesc} {
		ch <- d
	}
}

func (c *httpCollector) Collect(ch chan<- prometheus.Metric) {
	s, ok := c.stats()
	if !ok {
		return
	}
	ch <- prometheus.MustNewConstMetric(httpSessionsDesc, prometheus.GaugeValue, float64(s.Sessions))
	ch <- prometheus.MustNewConstMetric(httpInFlightDesc, prometheus.GaugeValue, float64(s.InFlight))
	ch <- prometheus.MustNewConstMetric(httpStreamsDesc, prometheus.GaugeValue, float64(s.Streams))
	ch <- prometheus.MustNewConstMetric(httpBodyMemDesc, prometheus.GaugeValue, float64(s.BodyMemory))
	for _, reason := range gateway.HTTPRefusalReasons {
		ch <- prometheus.MustNewConstMetric(httpRefusedDesc, prometheus.CounterValue, float64(s.RefusedBy[reason]), reason)
	}
	ch <- prometheus.MustNewConstMetric(httpEvictedDesc, prometheus.CounterValue, float64(s.Evicted))
}

// Recorders returns a recorder that records to each of rs in order. The
// first one's refusal (the run archive's, when it cannot write) refuses
// the call; the call's end is recorded by all of them.
func Recorders(rs ...gateway.Recorder) gateway.Recorder {
	if len(rs) == 1 {
		return rs[0]
	}
	return multiRecorder(rs)
}

type multiRecorder []gateway.Recorder

func (m multiRecorder) CallStarted(call *gateway.Call) error {
	var first error
	for _, r := range m {
		if err := r.CallStarted(call); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// Event passes events (approvals, relays) to the recorders that keep them.
func (m multiRecorder) Event(typ string, fields map[string]any) {
	for _, r := range m {
		if er, ok := r.(gateway.EventRecorder); ok {
			er.Event(typ, fields)
		}
	}
}

func (m multiRecorder) CallFinished(call *gateway.Call, res *gateway.Result, elapsed time.Duration) {
	for _, r := range m {
		r.CallFinished(call, res, elapsed)
	}
}
