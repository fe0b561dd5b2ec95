package e2e

import (
	"context"
	"encoding/base64"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
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
	haproxy := requireBinary(t, "haproxy")
	key := base64.StdEncoding.EncodeToString([]byte("0123456789abcdef0123456789abcdef"))
	var reps []*Server
	var envs []*Env
	for i := range 3 {
		e := newEnv(t, set("replica_id", fmt.Sprintf("r%d", i+1)), set("http.session_keys_env", "E2E_SESSION_KEYS"),
			set("http.allowed_hosts", []string{"*"}), set("log.level", "info"))
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
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	hp := exec.CommandContext(ctx, haproxy, "-f", cfgPath, "-db")
	var hpOut syncBuffer
	hp.Stdout, hp.Stderr = &hpOut, &hpOut
	if err := hp.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = hp.Process.Kill(); _ = hp.Wait() }()
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
		for range 3 {
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
	lb := &Server{Env: envs[0], Transport: "http", Base: "http://" + addr, URL: "http://" + addr + "/mcp", Wire: &wireLog{}}

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
