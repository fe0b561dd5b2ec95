package e2e

import (
	"encoding/base64"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
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
// tool sleeping 20 ms, each replica's upstream limited to 8 calls at once)
// through HAProxy, to one replica and to three; it reports the ratio of
// their throughputs (the target is at least 2.5).
func TestReplicaThroughput(t *testing.T) {
	if os.Getenv("TOOLGATE_BENCH_REPLICAS") != "1" {
		t.Skip("a measurement: set TOOLGATE_BENCH_REPLICAS=1 (make bench does)")
	}
	const workers, perWorker = 48, 10
	measure := func(n int) float64 {
		inner := newInner(t)
		lb, _, _ := startReplicas(t, n, inner.upstreamOpt(8))
		var sessions []*mcp.ClientSession
		for range workers {
			sessions = append(sessions, lb.Connect(t, era2026, nil))
		}
		start := time.Now()
		var wg sync.WaitGroup
		for _, cs := range sessions {
			wg.Go(func() {
				for range perWorker {
					if res := call(t, cs, "inner__sleep", map[string]any{"ms": 20}); res.IsError {
						t.Errorf("a call failed: %s", textOf(res))
						return
					}
				}
			})
		}
		wg.Wait()
		return float64(workers*perWorker) / time.Since(start).Seconds()
	}
	one, three := measure(1), measure(3)
	t.Logf("calls that wait 20 ms, %d clients: 1 replica %.0f calls/s, 3 replicas %.0f calls/s, ratio %.2f (target >= 2.5)", workers, one, three, three/one)
}
