package upstream

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/gateway"
)

// TestKilledMidCall: the child dies during a call; the call ends with a
// clear error at once, the upstream reconnects (a new child), keeps its
// tools listed meanwhile, and later calls succeed.
func TestKilledMidCall(t *testing.T) {
	requireProc(t)
	log, logs := newLogger()
	u := start(t, stdioConfig(t, "k"), log, true)
	g := newGW(t, u)
	pid := childPID(t, g, "k__pid")
	var changes int
	u.OnToolsChanged(func() { changes++ })

	done := make(chan *gateway.Result, 1)
	go func() { done <- g.call(context.Background(), "k__block", `{}`) }()
	eventually(t, 10*time.Second, "the call to be in flight", func() bool {
		return strings.Contains(logs.String(), `msg="block entered" upstream=k`)
	})
	killPID(t, pid)
	var res *gateway.Result
	select {
	case res = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the call in flight did not end when the upstream died")
	}
	if res.Kind != gateway.KindUnavailable || !strings.Contains(res.Message, "failed during the call (upstream process killed by signal 9") {
		t.Errorf("call in flight: %s %q", res.Kind, res.Message)
	}
	eventually(t, 10*time.Second, "a reconnection", func() bool {
		return u.Restarts() == 1 && u.Status().State == StateReady
	})
	if !slices.Contains(toolNames(u), "k__echo") {
		t.Error("tools lost")
	}
	newPID := childPID(t, g, "k__pid")
	if newPID == pid {
		t.Error("same child")
	}
	if got := mustOK(t, g.call(context.Background(), "k__echo", `{"text":"again"}`)); got != `{"text":"again"}` {
		t.Errorf("echo after reconnect: %s", got)
	}
	if m := groupMembers(pid); len(m) > 0 {
		t.Errorf("old process group still has %v", m)
	}
	if st := u.Status(); !strings.Contains(st.Detail, "restarts 1") || !strings.Contains(st.Detail, "killed by signal 9") {
		t.Errorf("status %+v", st)
	}
	if !strings.Contains(logs.String(), "upstream connection lost; reconnecting") {
		t.Error("reconnection not logged")
	}
}

// TestPingSparesBusySerialServer: a server that handles one message at a
// time cannot answer a ping while it works on a call longer than the ping
// timeout; it is not taken for dead and killed mid-call: the call
// answers. A quiet connection is still pinged.
func TestPingSparesBusySerialServer(t *testing.T) {
	log, logs := newLogger()
	u := startTuned(t, serialConfig(t, "ser"), log, true, func(tu *tuning) {
		tu.pingInterval = 50 * time.Millisecond
		tu.pingTimeout = 200 * time.Millisecond
	})
	g := newGW(t, u)
	eventually(t, 10*time.Second, "a ping of the quiet connection", func() bool {
		return strings.Contains(logs.String(), "msg=\"serial: ping\"")
	})
	if got := mustOK(t, g.call(context.Background(), "ser__slow", `{"ms":1500}`)); got != "slow done" {
		t.Errorf("slow call: %q", got)
	}
	if n := u.Restarts(); n != 0 {
		t.Errorf("restarts: %d, want 0 (status %+v)", n, u.Status())
	}
}

// TestUnavailableWhileReconnecting: calls to a known tool while the
// upstream is down get an unavailable result, not a hang.
func TestUnavailableWhileReconnecting(t *testing.T) {
	requireProc(t)
	u := startTuned(t, stdioConfig(t, "r"), nil, true, func(tu *tuning) {
		tu.backoffMin, tu.backoffMax = 2*time.Second, 2*time.Second // stay down a while
	})
	g := newGW(t, u)
	pid := childPID(t, g, "r__pid")
	killPID(t, pid)
	eventually(t, 10*time.Second, "the reconnecting state", func() bool { return u.Status().State == StateReconnecting })
	if !slices.Contains(toolNames(u), "r__echo") {
		t.Error("last known tools not kept while reconnecting")
	}
	start := time.Now()
	res := g.call(context.Background(), "r__echo", `{"text":"x"}`)
	if res.Kind != gateway.KindUnavailable || !strings.Contains(res.Message, "reconnecting") || time.Since(start) > 3*time.Second {
		t.Errorf("call while reconnecting: %s %q after %s", res.Kind, res.Message, time.Since(start))
	}
}

// TestRepeatedFailureLoggedQuietly: the first loudFailures failed attempts
// in a row are each logged; after them, a failure that repeats the last is
// logged once every failLogEvery, counting those it did not log.
func TestRepeatedFailureLoggedQuietly(t *testing.T) {
	log, buf := newLogger()
	u := startTuned(t, Config{Name: "bad", Command: "/nonexistent/mcp-server"}, log, false, func(tu *tuning) {
		tu.backoffMin, tu.backoffMax = time.Millisecond, 5*time.Millisecond
		tu.failLogEvery = 300 * time.Millisecond
	})
	warned := func() int { return strings.Count(buf.String(), `level=WARN msg="upstream connection attempt failed"`) }
	eventually(t, 10*time.Second, "a logged failure after quiet ones", func() bool { return warned() > loudFailures })
	out := buf.String()
	if !strings.Contains(out, "unlogged_attempts=") || !strings.Contains(out, `note="the same failure again is logged once every 300ms"`) {
		t.Errorf("the log does not say what it leaves out:\n%s", out)
	}
	u.mu.Lock()
	failures := u.failures
	u.mu.Unlock()
	if w := warned(); failures < 3*w {
		t.Errorf("%d failed attempts, %d logged: the repeats are not quiet", failures, w)
	}
}

// TestNeverStarts: a bad command fails, with state failed, no tools and
// the error; another upstream in the same gateway is not affected.
func TestNeverStarts(t *testing.T) {
	st := &serverState{}
	url, _ := httpUpstream(t, st)
	good := start(t, Config{Name: "good", URL: url}, nil, true)
	bad := start(t, Config{Name: "bad", Command: "/nonexistent/mcp-server"}, nil, false)
	g := newGW(t, bad, good)

	s := bad.Status()
	if s.State != StateFailed || !strings.Contains(s.Detail, "/nonexistent/mcp-server") {
		t.Errorf("status %+v", s)
	}
	if tools, err := bad.Tools(context.Background()); len(tools) != 0 || err == nil {
		t.Errorf("Tools: %v, %v", tools, err)
	}
	var info gateway.ToolsetInfo
	for _, i := range g.cat.Toolsets() {
		if i.Name == "bad" {
			info = i
		}
	}
	if info.Status.State != StateFailed {
		t.Errorf("catalog shows %+v", info)
	}
	if got := mustOK(t, g.call(context.Background(), "good__echo", `{"n":1}`)); got != `{"n":1}` {
		t.Errorf("good upstream: %s", got)
	}
	// It keeps retrying in the background.
	eventually(t, 10*time.Second, "retries", func() bool { return strings.Contains(bad.Status().Detail, "failed attempts") })
	// A refused HTTP connection fails the same way.
	down := start(t, Config{Name: "down", URL: "http://127.0.0.1:1/mcp", StartupTimeout: 2 * time.Second}, nil, false)
	if s := down.Status(); s.State != StateFailed || !strings.Contains(s.Detail, "refused") {
		t.Errorf("down: %+v", s)
	}
	res, _ := down.callTool(context.Background(), "echo", "", &gateway.Call{Name: "down__echo"})
	if res.Kind != gateway.KindUnavailable || !strings.Contains(res.Message, "not connected") {
		t.Errorf("call on a failed upstream: %s %q", res.Kind, res.Message)
	}
}

// TestStartupTimeout: an upstream that never answers initialize fails
// after startup_timeout, and its child is ended.
func TestStartupTimeout(t *testing.T) {
	requireProc(t)
	cfg := Config{Name: "mute", Command: "sh", Args: []string{"-c", "exec sleep 300"}, StartupTimeout: 500 * time.Millisecond,
		Env: map[string]string{"TG_TEST_MARKER": marker}}
	u, err := New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	u.tune = fastTuning()
	u.tune.backoffMin, u.tune.backoffMax = time.Hour, time.Hour
	defer u.Close()
	start := time.Now()
	u.Start(context.Background())
	err = u.WaitReady(context.Background())
	if err == nil || !strings.Contains(err.Error(), "startup timed out after 500ms") || time.Since(start) > 5*time.Second {
		t.Fatalf("WaitReady: %v after %s", err, time.Since(start))
	}
	if n := sleepers(); n != "" {
		t.Errorf("child left running: %s", n)
	}
}

// sleepers lists the live processes whose environment holds this test
// run's marker (upstream children get it through their config).
func sleepers() string {
	return strings.Join(markedProcs(marker), ", ")
}

var marker = fmt.Sprintf("run-%d-%d", os.Getpid(), time.Now().UnixNano())

// TestNoLeakedProcesses: an upstream behind a shell wrapper that leaves a
// grandchild ("sleep 300 &") is restarted 20 times and closed; no process
// of any of its process groups survives.
func TestNoLeakedProcesses(t *testing.T) {
	requireProc(t)
	cfg := Config{
		Name:    "w",
		Command: "sh",
		// The grandchild keeps the child's stdout open, so the transport
		// never sees EOF when the child dies: only the exit watcher does.
		Args: []string{"-c", `sleep 300 & exec "$0"`, testBinary(t)},
		Env:  map[string]string{envServerMode: "stdio"},
	}
	u := start(t, cfg, nil, true)
	g := newGW(t, u)
	var groups []int
	for i := 0; i < 20; i++ {
		pid := childPID(t, g, "w__pid")
		if len(groupMembers(pid)) < 2 {
			t.Fatalf("restart %d: want the child and its sleeping grandchild in group %d, have %v", i, pid, groupMembers(pid))
		}
		groups = append(groups, pid)
		killPID(t, pid) // the child only; the grandchild lives on until the group is ended
		eventually(t, 10*time.Second, fmt.Sprintf("restart %d", i+1), func() bool {
			return u.Restarts() == i+1 && u.Status().State == StateReady
		})
		eventually(t, 10*time.Second, fmt.Sprintf("group %d to be gone", pid), func() bool { return len(groupMembers(pid)) == 0 })
	}
	last := childPID(t, g, "w__pid")
	groups = append(groups, last)
	if err := u.Close(); err != nil {
		t.Fatal(err)
	}
	for _, pgid := range groups {
		if m := groupMembers(pgid); len(m) > 0 {
			t.Errorf("process group %d still has %v", pgid, m)
		}
	}
	if u.Status().State != StateFailed {
		t.Errorf("status after Close: %+v", u.Status())
	}
	res, _ := u.callTool(context.Background(), "echo", "", &gateway.Call{Name: "w__echo"})
	if res.Kind != gateway.KindUnavailable || !strings.Contains(res.Message, "closed") {
		t.Errorf("call after Close: %s %q", res.Kind, res.Message)
	}
}

// TestCloseEndsChildGracefully: Close (the gateway's shutdown, a reload
// that removes the upstream) sends the stdio child SIGTERM and lets it
// shut down cleanly, as a reconnection does, rather than SIGKILL at once;
// the child is gone when Close returns.
func TestCloseEndsChildGracefully(t *testing.T) {
	requireProc(t)
	marker := filepath.Join(t.TempDir(), "term")
	cfg := stdioConfig(t, "term")
	cfg.Env[envTermMarker] = marker
	cfg.Env[envIgnoreEOF] = "1" // the end of its input does not end it
	u := start(t, cfg, nil, true)
	pid := procOf(u)
	if err := u.Close(); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(marker); err != nil || !strings.Contains(string(b), "SIGTERM") {
		t.Errorf("the child saw no SIGTERM before it ended (marker: %q, %v): it was killed outright", b, err)
	}
	if m := groupMembers(pid); len(m) > 0 {
		t.Errorf("process group %d still has %v after Close", pid, m)
	}
}

// TestCloseClosesInputFirst: Close ends a stdio child as the MCP spec
// says a client should: it closes the child's stdin first and gives it
// time to exit on its own, which is when most servers shut down cleanly
// (a Node or Python server's default SIGTERM ends it without its
// cleanup); SIGTERM comes only to a child that does not exit. The child
// that stays after its input ended is covered by
// TestCloseEndsChildGracefully.
func TestCloseClosesInputFirst(t *testing.T) {
	requireProc(t)
	dir := t.TempDir()
	eof, term := filepath.Join(dir, "eof"), filepath.Join(dir, "term")
	cfg := stdioConfig(t, "eof")
	cfg.Env[envEOFMarker] = eof
	cfg.Env[envTermMarker] = term
	cfg.Env["GORACE"] = "atexit_sleep_ms=0" // a -race child otherwise waits a second to exit
	u := start(t, cfg, nil, true)
	pid := procOf(u)
	start := time.Now()
	if err := u.Close(); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(eof); err != nil || !strings.Contains(string(b), "EOF") {
		t.Errorf("the child did not see its input end before it was ended (marker: %q, %v)", b, err)
	}
	if b, err := os.ReadFile(term); err == nil {
		t.Errorf("the child got %q although it exits when its input ends", b)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("Close took %s for a child that exits when its input ends", d)
	}
	if m := groupMembers(pid); len(m) > 0 {
		t.Errorf("process group %d still has %v after Close", pid, m)
	}
}

// TestCloseWhenIdle: an upstream a reload took out of service ends only
// once its call in flight has answered (the call is not cut: "slow done"),
// and at once when its context ends first (the call then ends as the
// process does). Calls that come after find it closed.
func TestCloseWhenIdle(t *testing.T) {
	for _, c := range []struct {
		name   string
		wait   time.Duration // CloseWhenIdle's context
		wantOK bool          // the call in flight answers
	}{
		{"calls finish", 10 * time.Second, true},
		{"context ends first", 100 * time.Millisecond, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			log, logs := newLogger()
			u := start(t, serialConfig(t, "idle"), log, true)
			g := newGW(t, u)
			done := make(chan *gateway.Result, 1)
			go func() { done <- g.call(context.Background(), "idle__slow", `{"ms":1500}`) }()
			eventually(t, 10*time.Second, "the call to be in flight", func() bool {
				return strings.Contains(logs.String(), "serial: tools/call")
			})
			ctx, cancel := context.WithTimeout(context.Background(), c.wait)
			defer cancel()
			closed := make(chan error, 1)
			go func() { closed <- u.CloseWhenIdle(ctx) }()

			var res *gateway.Result
			select {
			case res = <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("the call in flight did not end")
			}
			if ok := !res.IsError && res.OutputText() == "slow done"; ok != c.wantOK {
				t.Errorf("call in flight: %s %q %q, want answered %v", res.Kind, res.Message, res.OutputText(), c.wantOK)
			}
			select {
			case err := <-closed:
				if err != nil {
					t.Fatal(err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("CloseWhenIdle did not return once the call ended")
			}
			if st := u.Status(); st.State != StateFailed {
				t.Errorf("after CloseWhenIdle: %+v, want closed", st)
			}
			if res := g.call(context.Background(), "idle__echo", `{}`); res.Kind != gateway.KindUnavailable {
				t.Errorf("a call after CloseWhenIdle: %s %q, want unavailable", res.Kind, res.Message)
			}
		})
	}
}

// TestCloseDuringStart: Close while the first connection is being made
// ends everything (safe after a partial start).
func TestCloseDuringStart(t *testing.T) {
	requireProc(t)
	cfg := Config{Name: "slow", Command: "sh", Args: []string{"-c", "sleep 300 & exec sleep 300"},
		Env: map[string]string{"TG_TEST_MARKER": marker}}
	u, err := New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	u.Start(context.Background())
	// Both the child and the grandchild it leaves behind are running.
	eventually(t, 10*time.Second, "the child and its grandchild to start", func() bool { return len(markedProcs(marker)) == 2 })
	done := make(chan struct{})
	go func() { u.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Close hangs")
	}
	eventually(t, 10*time.Second, "no sleepers", func() bool { return sleepers() == "" })
	if err := u.WaitReady(context.Background()); err == nil {
		t.Error("WaitReady after Close: nil")
	}
	u.Close() // twice is fine
}

// TestStartContextEnds: the context given to Start bounds the supervisor;
// when it ends, the child's group is ended and calls say why.
func TestStartContextEnds(t *testing.T) {
	requireProc(t)
	u, err := New(stdioConfig(t, "c"), nil)
	if err != nil {
		t.Fatal(err)
	}
	u.tune = fastTuning()
	defer u.Close()
	ctx, cancel := context.WithCancel(context.Background())
	u.Start(ctx)
	if err := u.WaitReady(context.Background()); err != nil {
		t.Fatal(err)
	}
	pid := procOf(u)
	cancel()
	eventually(t, 10*time.Second, "the supervisor to stop", func() bool { return u.Status().State == StateFailed })
	eventually(t, 10*time.Second, "the child to be gone", func() bool { return len(groupMembers(pid)) == 0 })
	res, _ := u.callTool(context.Background(), "echo", "", &gateway.Call{Name: "c__echo"})
	if res.Kind != gateway.KindUnavailable || !strings.Contains(res.Message, "stopped: context canceled") {
		t.Errorf("call after the supervisor stopped: %s %q", res.Kind, res.Message)
	}
}

// TestRedirectKeepsHeadersAtHome: an upstream that redirects to another
// origin (another port of the same host, another host) does not get its
// configured secret headers sent there: the redirect is refused, saying
// why. A redirect within its origin is followed.
func TestRedirectKeepsHeadersAtHome(t *testing.T) {
	t.Setenv("REDIR_TOK", "tok-secret-123456")
	t.Setenv("REDIR_KEY", "key-secret-654321")
	headers := map[string]string{"Authorization": "Bearer ${REDIR_TOK}", "X-Api-Key": "${REDIR_KEY}"}
	for _, host := range []string{"127.0.0.1", "localhost"} {
		other, seen := httpUpstream(t, &serverState{})
		target := "http://" + host + other[strings.LastIndex(other, ":"):]
		redirector := httptest.NewServer(http.RedirectHandler(target, http.StatusTemporaryRedirect))
		u := start(t, Config{Name: "a", URL: redirector.URL + "/mcp", Headers: headers}, nil, false)
		eventually(t, 10*time.Second, "the upstream to fail", func() bool { return u.Status().State != "starting" })
		if h := seen(); h != nil && (h.Get("Authorization") != "" || h.Get("X-Api-Key") != "") {
			t.Errorf("%s: the other origin got Authorization=%q X-Api-Key=%q", target, h.Get("Authorization"), h.Get("X-Api-Key"))
		}
		if st := u.Status(); !strings.Contains(st.Detail, "redirected to another origin") {
			t.Errorf("%s: status %+v, want it to name the refused redirect", target, st)
		}
		u.Close()
		redirector.Close()
	}
	// Within the origin (a path that moved): followed.
	inner, _ := httpUpstream(t, &serverState{})
	mux := http.NewServeMux()
	moved := httptest.NewServer(mux)
	defer moved.Close()
	mux.Handle("/old", http.RedirectHandler("/mcp", http.StatusTemporaryRedirect))
	mux.HandleFunc("/mcp", func(w http.ResponseWriter, r *http.Request) {
		req, _ := http.NewRequestWithContext(r.Context(), r.Method, inner, r.Body)
		req.Header = r.Header.Clone()
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		for k, v := range resp.Header {
			w.Header()[k] = v
		}
		w.WriteHeader(resp.StatusCode)
		_, _ = io.Copy(w, resp.Body)
	})
	u := start(t, Config{Name: "b", URL: moved.URL + "/old", Headers: headers}, nil, true)
	u.Close()
}
