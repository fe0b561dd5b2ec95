package e2e

// Load and soak: 1,000 concurrent calls over streamable HTTP (built-in and
// proxied through toolgate as a stdio upstream) and a steady-rate soak.
// Correctness under load is asserted (no protocol error, one record of
// each kind per call, descriptors back to baseline); speed and memory are
// measured and reported, never asserted against a clock.

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const (
	loadSessions        = 20
	loadCallsPerSession = 50
	loadCalls           = loadSessions * loadCallsPerSession // 1,000
	loadSleepMS         = 2000
	// fdMargin is how many descriptors more than the baseline a gateway
	// may hold once the load is over and the clients are gone.
	fdMargin = 8
	// goroutineMargin is how many goroutines more than the baseline a
	// gateway may run once the load is over (timers, idle HTTP plumbing).
	goroutineMargin = 10
	// maxPeakRSSKB bounds the gateway's peak RSS under these loads: a
	// sanity bound against unbounded growth, far above what is measured.
	maxPeakRSSKB = 1 << 20 // 1 GiB
)

// goroutines reads the gateway's goroutine count from /healthz.
func goroutines(t *testing.T, s *Server) int {
	t.Helper()
	n, ok := healthDetails(t, s)["goroutines"].(float64)
	if !ok {
		t.Fatal("/healthz details have no goroutine count")
	}
	return int(n)
}

// peakInFlight replays events.jsonl in order and returns the largest
// number of calls of the tool that had started and not yet ended.
func peakInFlight(events []map[string]any, tool string) int {
	n, peak := 0, 0
	for _, ev := range events {
		if ev["tool"] != tool {
			continue
		}
		switch ev["type"] {
		case "tool.started":
			n++
			peak = max(peak, n)
		case "tool.completed", "tool.failed":
			n--
		}
	}
	return peak
}

// loadResult is what one load run measured.
type loadResult struct {
	Calls        int       `json:"calls"`
	Sessions     int       `json:"sessions"`
	Tool         string    `json:"tool"`
	Wall         string    `json:"wall"`
	PeakInFlight int       `json:"peak_in_flight_gateway"`
	Before       procStats `json:"before"`
	Loaded       procStats `json:"loaded"`
	After        procStats `json:"after_settle"`
	InnerPeak    int       `json:"peak_in_flight_inner,omitempty"`
	InnerStats   procStats `json:"inner_loaded"`
}

// checkAftermath checks a load's calls (no protocol errors, one id per
// call), closes the clients, and checks that the gateway's descriptors
// come back to their baseline and its peak RSS stayed within the bound.
func checkAftermath(t *testing.T, l *ledger, lc *loadClients, pid int, r *loadResult) {
	t.Helper()
	l.checkClean(t, false)
	if n := l.count(); n != loadCalls {
		t.Errorf("%d distinct call ids for %d calls", n, loadCalls)
	}
	lc.Close()
	r.After = waitFDsSettle(t, pid, r.Before.FDs, 15*time.Second)
	if r.After.FDs > r.Before.FDs+fdMargin {
		t.Errorf("open descriptors: %d before the load, still %d 15s after it ended and the sessions closed (margin %d): connections or sessions leak",
			r.Before.FDs, r.After.FDs, fdMargin)
	}
	if r.Loaded.HWMKB > maxPeakRSSKB {
		t.Errorf("peak RSS %d KiB is over the sanity bound of %d KiB", r.Loaded.HWMKB, maxPeakRSSKB)
	}
}

// runConcurrentLoad makes loadCalls calls of tool at once: every call
// waits on a barrier, then all go.
func runConcurrentLoad(t *testing.T, lc *loadClients, tool string, args map[string]any) (*ledger, time.Duration) {
	t.Helper()
	l := newLedger()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	gate := make(chan struct{})
	for i := range loadCalls {
		cs := lc.sessions[i%len(lc.sessions)]
		wg.Go(func() {
			<-gate
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
			l.add(tool, res, err)
		})
	}
	start := time.Now()
	close(gate)
	wg.Wait()
	return l, time.Since(start)
}

// TestLoadConcurrentHTTP: 1,000 diagnostics sleep calls (2 s each) in
// flight at once over 20 HTTP sessions of both eras.
func TestLoadConcurrentHTTP(t *testing.T) {
	e := newEnv(t, set("log.level", "info"))
	s := e.StartHTTP(t)
	pid := s.Pid()
	var r loadResult
	r.Calls, r.Sessions, r.Tool = loadCalls, loadSessions, "sleep"
	r.Before = mustProcStats(t, pid)
	goroutinesBefore := goroutines(t, s)

	lc := connectLoad(t, s, loadSessions, nil)
	// RSS and threads while loaded, sampled.
	stopSampling := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for range 600 { // at most 600 × 50 ms
			select {
			case <-stopSampling:
				return
			case <-time.After(50 * time.Millisecond):
			}
			if st, err := readProcStats(pid); err == nil && st.Threads >= r.Loaded.Threads {
				r.Loaded = st
			}
		}
	}()
	l, wall := runConcurrentLoad(t, lc, "sleep", map[string]any{"ms": loadSleepMS, "steps": 1})
	close(stopSampling)
	<-sampled
	r.Wall = wall.Round(time.Millisecond).String()
	loaded := mustProcStats(t, pid)
	r.Loaded.HWMKB = loaded.HWMKB
	checkAftermath(t, l, lc, pid, &r)
	// No goroutine growth: once the sessions are gone, the gateway is back
	// to (about) the goroutines it had before the load.
	var goroutinesAfter int
	waitFor(15*time.Second, func() bool {
		goroutinesAfter = goroutines(t, s)
		return goroutinesAfter <= goroutinesBefore+goroutineMargin
	})
	if goroutinesAfter > goroutinesBefore+goroutineMargin {
		t.Errorf("goroutines: %d before the load, still %d 15s after it ended (margin %d): goroutines leak", goroutinesBefore, goroutinesAfter, goroutineMargin)
	}
	t.Logf("goroutines: %d before, %d after the load", goroutinesBefore, goroutinesAfter)
	s.Stop(t)
	a := e.Archive(t)
	checkOneRecordPerCall(t, a, l, true)
	r.PeakInFlight = peakInFlight(a.Events, "sleep")
	if r.PeakInFlight < loadCalls/2 {
		t.Errorf("at most %d calls were in flight in the gateway at once; the load did not overlap", r.PeakInFlight)
	}
	t.Logf("%d calls over %d sessions in %s; peak in flight in the gateway %d", loadCalls, loadSessions, r.Wall, r.PeakInFlight)
	t.Logf("gateway before: %s", r.Before)
	t.Logf("gateway loaded: %s (peak RSS VmHWM %.1f MiB)", r.Loaded, float64(r.Loaded.HWMKB)/1024)
	t.Logf("gateway after:  %s", r.After)
	writeResults(t, r)
}

// TestLoadConcurrentProxied: 1,000 calls at once of a proxied tool
// (inner__sleep, 2 s): toolgate runs toolgate as its stdio upstream, with
// the upstream's max_concurrency raised to 1,000.
func TestLoadConcurrentProxied(t *testing.T) {
	inner := newInner(t)
	e := newEnv(t, set("log.level", "info"), inner.upstreamOpt(loadCalls))
	s := e.StartHTTP(t)
	pid := s.Pid()
	runs := inner.runs(t)
	if len(runs) != 1 || !processAlive(runs[0].PID) {
		t.Fatalf("the inner toolgate is not running: runs %+v\nstderr:\n%s", runs, tail(s.Stderr(), 4000))
	}
	innerPID := runs[0].PID

	var r loadResult
	r.Calls, r.Sessions, r.Tool = loadCalls, loadSessions, "inner__sleep"
	r.Before = mustProcStats(t, pid)
	lc := connectLoad(t, s, loadSessions, nil)
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for range 3000 { // at most 3000 × 50 ms
			select {
			case <-stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
			if st, err := readProcStats(innerPID); err == nil {
				r.InnerStats = st
			}
		}
	}()
	l, wall := runConcurrentLoad(t, lc, "inner__sleep", map[string]any{"ms": loadSleepMS, "steps": 1})
	close(stop)
	<-sampled
	r.Wall = wall.Round(time.Millisecond).String()
	r.Loaded = mustProcStats(t, pid)
	checkAftermath(t, l, lc, pid, &r)
	s.Stop(t)
	a := e.Archive(t)
	checkOneRecordPerCall(t, a, l, true)
	r.PeakInFlight = peakInFlight(a.Events, "inner__sleep")

	// The inner gateway recorded each proxied call once, and is gone.
	if !waitFor(10*time.Second, func() bool { return !processAlive(innerPID) }) {
		t.Errorf("the inner toolgate (pid %d) outlived the outer one", innerPID)
	}
	// The inner toolgates (one per era of the callers) recorded each
	// proxied call once.
	if archives := inner.eraArchives(t); archives != nil {
		n := 0
		for _, ia := range archives {
			for _, rec := range ia.Tools {
				if rec.Tool == "sleep" {
					n++
					if rec.Status != "ok" {
						t.Errorf("inner record of call %s: status %q", rec.CallID, rec.Status)
					}
				}
			}
			r.InnerPeak += peakInFlight(ia.Events, "sleep") // summed over the two
		}
		if n != loadCalls {
			t.Errorf("the inner toolgates recorded %d sleep calls, want %d", n, loadCalls)
		}
	}
	t.Logf("%d proxied calls over %d sessions in %s; peak in flight: outer %d, inner %d", loadCalls, loadSessions, r.Wall, r.PeakInFlight, r.InnerPeak)
	t.Logf("outer before: %s", r.Before)
	t.Logf("outer loaded: %s (peak RSS VmHWM %.1f MiB)", r.Loaded, float64(r.Loaded.HWMKB)/1024)
	t.Logf("outer after:  %s", r.After)
	t.Logf("inner loaded: %s", r.InnerStats)
	writeResults(t, r)
}

// soakResult is what the soak measured.
type soakResult struct {
	Duration   string      `json:"duration"`
	TargetRate int         `json:"target_rate_per_s"`
	Calls      int         `json:"calls"`
	Builtin    int         `json:"builtin_calls"`
	Proxied    int         `json:"proxied_calls"`
	Throughput float64     `json:"throughput_per_s"`
	Before     procStats   `json:"before"`
	Samples    []procStats `json:"samples"`
	After      procStats   `json:"after_settle"`
}

// TestSoakMixed: a steady 200 calls/s for TOOLGATE_SOAK (60 s; 5 s with
// -short) alternating the built-in echo and the proxied inner__echo over
// 8 HTTP sessions.
func TestSoakMixed(t *testing.T) {
	const rate = 200
	const sessions = 8
	const maxInFlight = 512 // a stalled gateway makes the loop stop issuing, not pile up
	dur := soakDuration(t)
	inner := newInner(t)
	e := newEnv(t, set("log.level", "info"), inner.upstreamOpt(256))
	s := e.StartHTTP(t)
	pid := s.Pid()
	var r soakResult
	r.Duration, r.TargetRate = dur.String(), rate
	r.Before = mustProcStats(t, pid)
	lc := connectLoad(t, s, sessions, nil)

	l := newLedger()
	ctx, cancel := context.WithTimeout(context.Background(), dur+2*time.Minute)
	defer cancel()
	total := int(dur.Seconds() * rate)
	sem := make(chan struct{}, maxInFlight)
	var wg sync.WaitGroup
	var stalls int
	issue := func(i int) {
		select {
		case sem <- struct{}{}:
		default:
			stalls++
			return
		}
		tool, args := "echo", map[string]any{"text": fmt.Sprintf("soak %d", i)}
		if i%2 == 1 {
			tool, r.Proxied = "inner__echo", r.Proxied+1
		} else {
			r.Builtin++
		}
		cs := lc.sessions[i%sessions]
		wg.Go(func() {
			defer func() { <-sem }()
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
			id := l.add(tool, res, err)
			if err == nil && !res.IsError && textOf(res) != args["text"] {
				t.Errorf("%s call %s returned %q, want %q", tool, id, textOf(res), args["text"])
			}
		})
	}
	// Open loop: every 5 ms, issue the calls that are due at the rate.
	start := time.Now()
	nextSample := start
	hardStop := start.Add(dur + 30*time.Second)
	for i := 0; i < total && time.Now().Before(hardStop); {
		now := time.Now()
		if !now.Before(nextSample) {
			if st, err := readProcStats(pid); err == nil {
				r.Samples = append(r.Samples, st)
			}
			nextSample = nextSample.Add(dur / 10)
		}
		due := min(total, int(now.Sub(start).Seconds()*rate)+1)
		for ; i < due; i++ {
			issue(i)
		}
		time.Sleep(5 * time.Millisecond)
	}
	wg.Wait()
	elapsed := time.Since(start)
	r.Calls = l.count()
	r.Throughput = float64(r.Calls) / elapsed.Seconds()
	if st, err := readProcStats(pid); err == nil {
		r.Samples = append(r.Samples, st)
	}
	l.checkClean(t, false)
	if stalls > 0 {
		t.Logf("the issuer found %d in flight %d times and skipped a tick", maxInFlight, stalls)
	}
	if r.Calls != r.Builtin+r.Proxied {
		t.Errorf("%d calls issued, %d distinct call ids returned", r.Builtin+r.Proxied, r.Calls)
	}
	lc.Close()
	r.After = waitFDsSettle(t, pid, r.Before.FDs, 15*time.Second)
	if r.After.FDs > r.Before.FDs+fdMargin {
		t.Errorf("open descriptors: %d before the soak, still %d 15s after it (margin %d)", r.Before.FDs, r.After.FDs, fdMargin)
	}
	if n := len(r.Samples); n > 0 && r.Samples[n-1].HWMKB > maxPeakRSSKB {
		t.Errorf("peak RSS %d KiB is over the sanity bound of %d KiB", r.Samples[n-1].HWMKB, maxPeakRSSKB)
	}
	// RSS does not grow through the soak: the last sample against the
	// one at 20% (after warm-up), with a generous allowance.
	if n := len(r.Samples); n >= 4 {
		warm, last := r.Samples[2].RSSKB, r.Samples[n-1].RSSKB
		if last > 2*warm+32<<10 {
			t.Errorf("RSS grew from %d KiB (20%% into the soak) to %d KiB at its end", warm, last)
		}
	}
	s.Stop(t)
	checkOneRecordPerCall(t, e.Archive(t), l, true)
	// The inner toolgates (one per era of the callers) recorded each
	// proxied call once.
	if archives := inner.eraArchives(t); archives != nil {
		n := 0
		for _, ia := range archives {
			for _, rec := range ia.Tools {
				if rec.Tool == "echo" && rec.Status == "ok" {
					n++
				}
			}
		}
		if n != r.Proxied {
			t.Errorf("the inner toolgates recorded %d echo calls, want %d", n, r.Proxied)
		}
	}

	var rss, fds []string
	for _, st := range r.Samples {
		rss = append(rss, fmt.Sprintf("%.1f", float64(st.RSSKB)/1024))
		fds = append(fds, fmt.Sprint(st.FDs))
	}
	t.Logf("soak %s at %d/s: %d calls (%d built-in, %d proxied) in %s = %.1f calls/s", dur, rate, r.Calls, r.Builtin, r.Proxied, elapsed.Round(time.Millisecond), r.Throughput)
	t.Logf("RSS MiB over time: %s", strings.Join(rss, " "))
	t.Logf("open fds over time: %s", strings.Join(fds, " "))
	t.Logf("gateway before: %s", r.Before)
	t.Logf("gateway after:  %s", r.After)
	writeResults(t, r)
}
