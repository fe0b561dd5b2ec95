package e2e

import (
	"context"
	"encoding/base64"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestReplicasBehindHAProxy (issue 14): three toolgate replicas behind
// HAProxy (Debian's package), sharing session keys. A 2025-era session
// created on one replica is served by every replica (sealed session ids),
// and goes on when a replica is killed; 2026-era calls spread freely; every
// record names its replica, and the survivors lose none.
func TestReplicasBehindHAProxy(t *testing.T) {
	t.Parallel()
	lb, reps, envs := startReplicas(t, 3)
	c25 := lb.Connect(t, era2025, nil)
	c26 := lb.Connect(t, era2026, nil)
	calls := 0
	clients := []struct {
		era string
		cs  *mcp.ClientSession
	}{{"2025", c25}, {"2026", c26}}
	callAll := func(round string, n int) {
		for i := range n {
			for _, c := range clients {
				text := fmt.Sprintf("%s-%s-%d", round, c.era, i)
				res := call(t, c.cs, "echo", map[string]any{"text": text})
				if res.IsError || !strings.Contains(textOf(res), text) {
					t.Errorf("%s call %d (%s era): %s", round, i, c.era, textOf(res))
				}
				calls++
			}
		}
	}
	callAll("before", 6)
	perReplica := func() []int {
		var n []int
		for _, e := range envs {
			n = append(n, len(e.liveTools(t)))
		}
		return n
	}
	if spread := perReplica(); nonZero(spread) < 2 {
		t.Errorf("calls per replica %v: the load balancer did not spread them", spread)
	}
	// Kill a replica; the session and the calls go on.
	_ = reps[0].cmd.Process.Signal(syscall.SIGKILL)
	reps[0].Wait(5 * time.Second)
	callAll("after", 6)
	got := perReplica()
	total := 0
	for _, n := range got {
		total += n
	}
	if total != calls {
		t.Errorf("records %v (%d in all), want %d: a call was lost or recorded twice", got, total, calls)
	}
	for i, e := range envs {
		for _, r := range e.liveTools(t) {
			if want := fmt.Sprintf("r%d", i+1); r.Replica != want {
				t.Errorf("a record of replica %s says %q", want, r.Replica)
				break
			}
		}
	}
	t.Logf("calls per replica %v", got)
}

// TestReplicasKillUnderLoad (issue 14 §4): clients of both eras keep
// calling a tool that waits (sleep 20 ms) through HAProxy while one of
// three replicas is killed. Only calls in flight at the kill may fail;
// every call started after it succeeds, the 2025-era sessions included
// (sealed ids: a survivor serves them); and every call that succeeded has
// its record on some replica, none twice.
func TestReplicasKillUnderLoad(t *testing.T) {
	t.Parallel()
	lb, reps, envs := startReplicas(t, 3)
	const workers26, workers25 = 6, 3
	type outcome struct {
		era        string
		start, end time.Time
		err        string
	}
	var (
		mu       sync.Mutex
		outcomes []outcome
	)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	worker := func(era string, cs *mcp.ClientSession) {
		defer wg.Done()
		for n := 0; n < 2000; n++ { // bounded: stop ends it long before
			select {
			case <-stop:
				return
			default:
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			o := outcome{era: era, start: time.Now()}
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "sleep", Arguments: map[string]any{"ms": 20}})
			cancel()
			o.end = time.Now()
			switch {
			case err != nil:
				o.err = err.Error()
			case res.IsError:
				o.err = textOf(res)
			}
			mu.Lock()
			outcomes = append(outcomes, o)
			mu.Unlock()
		}
	}
	for range workers26 {
		cs := lb.Connect(t, era2026, nil)
		wg.Add(1)
		go worker("2026", cs)
	}
	for range workers25 {
		// As a real client: a broken standalone stream (its replica died)
		// is reconnected, and a survivor serves the sealed session.
		cs := lb.Connect(t, era2025, &ConnectOptions{Reconnect: true})
		wg.Add(1)
		go worker("2025", cs)
	}
	count := func() int { mu.Lock(); defer mu.Unlock(); return len(outcomes) }
	if !waitFor(20*time.Second, func() bool { return count() >= 150 }) {
		t.Fatalf("only %d calls before the kill", count())
	}
	killed := time.Now()
	_ = reps[0].cmd.Process.Signal(syscall.SIGKILL)
	reps[0].Wait(5 * time.Second)
	after := count()
	if !waitFor(30*time.Second, func() bool { return count() >= after+300 }) {
		t.Errorf("only %d calls after the kill", count()-after)
	}
	close(stop)
	wg.Wait()

	succeeded := map[string]int{}
	var failedInFlight, failedAfter []outcome
	for _, o := range outcomes {
		switch {
		case o.err == "":
			succeeded[o.era]++
		case o.start.Before(killed) && o.end.After(killed):
			failedInFlight = append(failedInFlight, o)
		default:
			failedAfter = append(failedAfter, o)
		}
	}
	for _, o := range failedAfter {
		t.Errorf("a %s-era call that started %v after the kill failed: %s", o.era, o.start.Sub(killed).Round(time.Millisecond), o.err)
	}
	if len(failedInFlight) > workers26+workers25 {
		t.Errorf("%d calls in flight at the kill failed, more than there were clients", len(failedInFlight))
	}
	// Every success has its record: the survivors' and the killed
	// replica's (written before it answered) together hold at least as
	// many ok records as there were successes, and at most that plus the
	// calls in flight at the kill (a call may have run on the killed
	// replica and then again after HAProxy's retry).
	ok, per := 0, []int{}
	for _, e := range envs {
		n := 0
		for _, r := range e.liveTools(t) {
			if r.Tool == "sleep" && r.Status == "ok" {
				n++
			}
		}
		per = append(per, n)
		ok += n
	}
	total := succeeded["2025"] + succeeded["2026"]
	if ok < total || ok > total+workers26+workers25 {
		t.Errorf("%d ok records (per replica %v) for %d successful calls", ok, per, total)
	}
	if per[1] == 0 || per[2] == 0 {
		t.Errorf("records per replica %v: the survivors did not share the load", per)
	}
	t.Logf("calls: %d ok (2026 %d, 2025 %d), %d failed in flight at the kill; ok records per replica %v",
		total, succeeded["2026"], succeeded["2025"], len(failedInFlight), per)
}

func nonZero(ns []int) int {
	k := 0
	for _, n := range ns {
		if n > 0 {
			k++
		}
	}
	return k
}

// startReplicas starts n replicas sharing session keys (each with opts)
// behind HAProxy, and returns a Server for the load balancer's address.
func startReplicas(t *testing.T, n int, opts ...Opt) (lb *Server, reps []*Server, envs []*Env) {
	t.Helper()
	haproxy := requireBinary(t, "haproxy")
	key := base64.StdEncoding.EncodeToString([]byte("0123456789abcdef0123456789abcdef"))
	for i := range n {
		e := newEnv(t, append([]Opt{set("replica_id", fmt.Sprintf("r%d", i+1)), set("http.session_keys_env", "E2E_SESSION_KEYS"),
			set("http.allowed_hosts", []string{"*"}), set("log.level", "info")}, opts...)...)
		e.Environ = append(e.Environ, "E2E_SESSION_KEYS="+key)
		envs = append(envs, e)
		reps = append(reps, e.StartHTTP(t))
	}
	port := freePort(t)
	cfg := fmt.Sprintf(`global
  maxconn 256
defaults
  mode http
  timeout connect 2s
  timeout client 30s
  timeout server 30s
  retries 3
  option redispatch
  retry-on conn-failure empty-response
frontend mcp
  bind 127.0.0.1:%d
  default_backend toolgates
backend toolgates
  balance roundrobin
  option httpchk
  http-check send meth GET uri /healthz ver HTTP/1.1 hdr Host localhost
`, port)
	for i, r := range reps {
		cfg += fmt.Sprintf("  server r%d %s check inter 200ms fall 1 rise 1\n", i+1, strings.TrimPrefix(r.Base, "http://"))
	}
	cfgPath := filepath.Join(t.TempDir(), "haproxy.cfg")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	hp := exec.Command(haproxy, "-f", cfgPath, "-db")
	var hpOut syncBuffer
	hp.Stdout, hp.Stderr = &hpOut, &hpOut
	if err := hp.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = hp.Process.Kill(); _ = hp.Wait() })
	addr := "127.0.0.1:" + strconv.Itoa(port)
	if !waitFor(10*time.Second, func() bool {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
		}
		return err == nil
	}) {
		t.Fatalf("haproxy did not listen: %s", hpOut.String())
	}
	if !waitFor(10*time.Second, func() bool { // every replica up behind it
		for range n {
			resp, err := httpClient.Get("http://" + addr + "/healthz")
			if err != nil {
				return false
			}
			resp.Body.Close()
			if resp.StatusCode != 200 {
				return false
			}
		}
		return true
	}) {
		t.Fatalf("the replicas are not up behind haproxy: %s", hpOut.String())
	}
	lb = &Server{Env: envs[0], Transport: "http", Base: "http://" + addr, URL: "http://" + addr + "/mcp", Wire: &wireLog{}}

	return lb, reps, envs
}

// TestReplicaThroughput is a load measurement, not a check (run by `make
// bench`, or with TOOLGATE_BENCH_REPLICAS=1): calls that wait (an upstream
// tool sleeping 20 ms, each replica's upstream limited to 8 calls at once,
// which is what bounds one replica) from 48 clients through HAProxy, to one
// replica and to three, in alternating windows of 3 s (3 rounds); it
// reports each setup's median throughput and their ratio (the target is
// at least 2.5). Both setups, HAProxy and the clients share this machine's
// cores, so the ratio is a floor of what separate machines would give.
func TestReplicaThroughput(t *testing.T) {
	if os.Getenv("TOOLGATE_BENCH_REPLICAS") != "1" {
		t.Skip("a measurement: set TOOLGATE_BENCH_REPLICAS=1 (make bench does)")
	}
	const workers, rounds, window = 48, 3, 3 * time.Second
	setup := func(n int) []*mcp.ClientSession {
		inner := newInner(t)
		lb, _, _ := startReplicas(t, n, inner.upstreamOpt(8))
		var sessions []*mcp.ClientSession
		for range workers {
			sessions = append(sessions, lb.Connect(t, era2026, nil))
		}
		return sessions
	}
	measure := func(sessions []*mcp.ClientSession) float64 {
		var done, failed atomic.Int64
		deadline := time.Now().Add(window)
		var wg sync.WaitGroup
		for _, cs := range sessions {
			wg.Go(func() {
				for time.Now().Before(deadline) {
					ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
					res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "inner__sleep", Arguments: map[string]any{"ms": 20}})
					cancel()
					if err != nil || res.IsError {
						failed.Add(1)
						continue
					}
					done.Add(1)
				}
			})
		}
		start := time.Now()
		wg.Wait()
		if n := failed.Load(); n > 0 {
			t.Errorf("%d calls failed", n)
		}
		return float64(done.Load()) / time.Since(start).Seconds()
	}
	one, three := setup(1), setup(3)
	measure(one) // warm up both
	measure(three)
	var r1, r3 []float64
	for range rounds {
		r1 = append(r1, measure(one))
		r3 = append(r3, measure(three))
	}
	slices.Sort(r1)
	slices.Sort(r3)
	m1, m3 := r1[rounds/2], r3[rounds/2]
	t.Logf("calls that wait 20 ms, %d clients: 1 replica %.0f calls/s, 3 replicas %.0f calls/s (medians of %d windows of %s), ratio %.2f (target >= 2.5)",
		workers, m1, m3, rounds, window, m3/m1)
}
