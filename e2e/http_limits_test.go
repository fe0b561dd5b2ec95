package e2e

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// Issue 9's attacks on the HTTP transport, each with its bound asserted:
// sessions used by another identity or made up, too many sessions, GET
// streams, requests in flight, bodies that never come, and a flood of
// connections under a low file descriptor limit.

// TestHTTPSessionsBelongToCreator: a session is usable only with the token
// that created it (403 otherwise, on every method); an unknown session id
// gets 404 on every method, and a GET without one 400.
func TestHTTPSessionsBelongToCreator(t *testing.T) {
	t.Parallel()
	e := newEnv(t, set("http.auth.tokens", []string{"token-alice-0123456789", "token-bob-0123456789"}))
	s := e.StartHTTP(t)
	alice := map[string]string{"Authorization": "Bearer token-alice-0123456789"}
	bob := map[string]string{"Authorization": "Bearer token-bob-0123456789"}
	sid := initSession(t, s, alice)
	with := func(auth map[string]string, sid string) map[string]string {
		h := sessionHeader(sid)
		for k, v := range auth {
			h[k] = v
		}
		return h
	}
	req := func(method string, hdr map[string]string) (int, string) {
		var body io.Reader
		if method == http.MethodPost {
			body = strings.NewReader(toolsListBody)
		}
		r, _ := http.NewRequest(method, s.URL, body)
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Accept", "application/json, text/event-stream")
		for k, v := range hdr {
			r.Header.Set(k, v)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		resp, err := httpClient.Do(r.WithContext(ctx))
		if err != nil {
			t.Fatalf("%s: %v", method, err)
		}
		defer resp.Body.Close()
		b := make([]byte, 512)
		n, _ := io.ReadFull(resp.Body, b)
		return resp.StatusCode, string(b[:n])
	}
	for _, m := range []string{http.MethodPost, http.MethodGet, http.MethodDelete} {
		if code, body := req(m, with(bob, sid)); code != http.StatusForbidden || !strings.Contains(body, "another client identity") {
			t.Errorf("%s on alice's session with bob's token: %d %s", m, code, body)
		}
		if code, body := req(m, with(alice, "tg-made-up")); code != http.StatusNotFound {
			t.Errorf("%s with a made-up session id: %d %s", m, code, body)
		}
	}
	if code, body := req(http.MethodGet, alice); code != http.StatusBadRequest {
		t.Errorf("GET without a session id: %d %s", code, body)
	}
	if code, body := req(http.MethodPost, with(alice, sid)); code != http.StatusOK || !strings.Contains(body, `"tools"`) {
		t.Errorf("alice on her session: %d %s", code, body)
	}
	if code, _ := req(http.MethodDelete, with(alice, sid)); code != http.StatusOK {
		t.Errorf("alice ends her session: %d", code)
	}
	if code, _ := req(http.MethodPost, with(alice, sid)); code != http.StatusNotFound {
		t.Errorf("an ended session: %d, want 404", code)
	}
	if strings.Contains(s.Stderr(), sid) {
		t.Error("the log holds a session id in plain")
	}
}

// TestHTTPSessionLimit: past http.max_sessions the least recently used
// idle session makes room; with every session in use, initialize gets
// 503 with Retry-After naming the limit. 2,000 initializes leave the
// session count and the memory bounded.
func TestHTTPSessionLimit(t *testing.T) {
	t.Parallel()
	e := newEnv(t, set("http.max_sessions", 4), set("http.max_streams", 8), set("log.level", "error"))
	s := e.StartHTTP(t)
	var ids []string
	for range 4 {
		ids = append(ids, initSession(t, s, nil))
	}
	if code, _, _ := post(t, s.URL, toolsListBody, sessionHeader(ids[0])); code != http.StatusOK { // ids[1] is now the least recent
		t.Fatalf("tools/list: %d", code)
	}
	fifth := initSession(t, s, nil)
	if code, _, _ := post(t, s.URL, toolsListBody, sessionHeader(ids[1])); code != http.StatusNotFound {
		t.Errorf("the least recently used session after a fifth: %d, want 404 (ended)", code)
	}
	for _, id := range []string{ids[0], ids[2], ids[3], fifth} {
		if code, _, _ := post(t, s.URL, toolsListBody, sessionHeader(id)); code != http.StatusOK {
			t.Errorf("session %s…: %d, want 200", id[:8], code)
		}
	}

	// Every session busy (a GET stream each): initialize is refused.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for _, id := range []string{ids[0], ids[2], ids[3], fifth} {
		openStream(t, ctx, s, id)
	}
	code, h, body := post(t, s.URL, initializeBody, nil)
	if code != http.StatusServiceUnavailable || h.Get("Retry-After") == "" || !strings.Contains(body, "http.max_sessions") || !strings.Contains(body, `"id":1`) {
		t.Errorf("initialize with every session busy: %d Retry-After=%q %s", code, h.Get("Retry-After"), body)
	}
	cancel()

	// A flood of initializes: sessions stay at the limit, memory bounded.
	if !waitFor(5*time.Second, func() bool { return httpStat(t, s, "streams") == 0 }) {
		t.Fatalf("streams still open: %v", healthDetails(t, s)["http"])
	}
	before := mustProcStats(t, s.Pid())
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := range 250 {
				r, _ := http.NewRequest(http.MethodPost, s.URL, strings.NewReader(initializeBody))
				r.Header.Set("Content-Type", "application/json")
				r.Header.Set("Accept", "application/json, text/event-stream")
				resp, err := httpClient.Do(r)
				if err != nil {
					t.Errorf("initialize %d/%d: %v", w, i, err)
					return
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				// Eight at once against a limit of four: some are
				// refused, as the limit says, while others are minted.
				if resp.StatusCode != http.StatusOK && (resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "") {
					t.Errorf("initialize %d/%d: %d", w, i, resp.StatusCode)
					return
				}
			}
		})
	}
	wg.Wait()
	after := mustProcStats(t, s.Pid())
	if n := httpStat(t, s, "sessions"); n > 4 {
		t.Errorf("%v sessions after 2,000 initializes, want at most 4", n)
	}
	if grown := after.RSSKB - before.RSSKB; grown > 64<<10 {
		t.Errorf("RSS grew by %d KiB over 2,000 initializes (%s -> %s)", grown, before, after)
	}
	t.Logf("2,000 initializes: %s -> %s, %v sessions evicted", before, after, httpStat(t, s, "sessions_evicted"))
}

// TestHTTPStreamAndInFlightLimits: past http.max_streams a GET gets 503;
// past limits.max_in_flight_per_session a request gets 429 with its id,
// Retry-After and the key named; the refused requests cost nothing and the
// gateway keeps serving.
func TestHTTPStreamAndInFlightLimits(t *testing.T) {
	t.Parallel()
	e := newEnv(t, set("http.max_streams", 2), set("limits.max_in_flight_per_session", 2), set("limits.max_in_flight", 3))
	s := e.StartHTTP(t)
	a, b := initSession(t, s, nil), initSession(t, s, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	openStream(t, ctx, s, a)
	openStream(t, ctx, s, b)
	r, _ := http.NewRequest(http.MethodGet, s.URL, nil)
	for k, v := range sessionHeader(a) {
		r.Header.Set(k, v)
	}
	r.Header.Set("Accept", "text/event-stream")
	if code, h, body := do(t, r); code != http.StatusServiceUnavailable || h.Get("Retry-After") == "" || !strings.Contains(body, "http.max_streams") {
		t.Errorf("a third stream: %d %q %s", code, h.Get("Retry-After"), body)
	}
	cancel()

	sleep := func(id int) string {
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"sleep","arguments":{"ms":3000}}}`, id)
	}
	var wg sync.WaitGroup
	for i := range 2 { // session a's two slots
		wg.Go(func() { post(t, s.URL, sleep(100+i), sessionHeader(a)) })
	}
	if !waitFor(5*time.Second, func() bool { return httpStat(t, s, "in_flight") == 2 }) {
		t.Fatalf("in flight: %v", healthDetails(t, s)["http"])
	}
	code, h, body := post(t, s.URL, sleep(7), sessionHeader(a))
	if code != http.StatusTooManyRequests || h.Get("Retry-After") == "" || !strings.Contains(body, "limits.max_in_flight_per_session") || !strings.Contains(body, `"id":7`) {
		t.Errorf("a third call on one session: %d %q %s", code, h.Get("Retry-After"), body)
	}
	wg.Go(func() { post(t, s.URL, sleep(200), sessionHeader(b)) }) // the third global slot
	if !waitFor(5*time.Second, func() bool { return httpStat(t, s, "in_flight") == 3 }) {
		t.Fatalf("in flight: %v", healthDetails(t, s)["http"])
	}
	code, _, body = post(t, s.URL, sleep(8), sessionHeader(b))
	if code != http.StatusTooManyRequests || !strings.Contains(body, "limits.max_in_flight") {
		t.Errorf("a call past the global limit: %d %s", code, body)
	}
	wg.Wait()
	code, _, body = post(t, s.URL, `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"echo","arguments":{"text":"still here"}}}`, sessionHeader(a))
	if code != http.StatusOK || !strings.Contains(body, "still here") {
		t.Errorf("a call after the limits: %d %s", code, body)
	}
	// Each refusal is counted under its limit (also toolgate_http_refused_total).
	m, _ := healthDetails(t, s)["http"].(map[string]any)
	refused, _ := m["refused"].(map[string]any)
	for _, limit := range []string{"http.max_streams", "limits.max_in_flight_per_session", "limits.max_in_flight"} {
		if refused[limit] != 1.0 {
			t.Errorf("refusals counted for %s: %v (%v)", limit, refused[limit], refused)
		}
	}
}

// TestHTTPSlowBodiesAndConnectionFlood: a request whose body never comes
// gets 408 after http.body_timeout; under an fd limit of 400, 600
// connections that send half a request neither exhaust the descriptors
// nor stop an established client's calls or their records.
func TestHTTPSlowBodiesAndConnectionFlood(t *testing.T) {
	t.Parallel()
	e := newEnv(t, set("http.body_timeout", "1s"))
	e.Prefix = []string{"prlimit", "--nofile=400:400"}
	s := e.StartHTTP(t)
	id := initSession(t, s, nil)
	addr := strings.TrimPrefix(s.Base, "http://")

	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST /mcp HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nMcp-Session-Id: %s\r\nMcp-Protocol-Version: %s\r\nContent-Length: 100\r\n\r\n{", addr, id, era2025)
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	start := time.Now()
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil || resp.StatusCode != http.StatusRequestTimeout {
		t.Errorf("a body that never comes: %v %v", resp, err)
	} else if waited := time.Since(start); waited > 5*time.Second {
		t.Errorf("the 408 came after %s", waited)
	}

	// An established keep-alive connection, then the flood.
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1, MaxConnsPerHost: 1}, Timeout: 20 * time.Second}
	callOn := func(n int) (int, string) {
		body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"list_files","arguments":{"path":"."}}}`, n)
		r, _ := http.NewRequest(http.MethodPost, s.URL, strings.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Accept", "application/json, text/event-stream")
		for k, v := range sessionHeader(id) {
			r.Header.Set(k, v)
		}
		resp, err := client.Do(r)
		if err != nil {
			t.Fatalf("call %d: %v", n, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := callOn(1); code != http.StatusOK {
		t.Fatalf("first call: %d %s", code, body)
	}
	var flood []net.Conn
	defer func() {
		for _, c := range flood {
			c.Close()
		}
	}()
	for range 600 {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			break // the kernel's backlog is full: the gateway accepts no more
		}
		fmt.Fprintf(c, "POST /mcp HTTP/1.1\r\nHost: %s\r\n", addr) // and never finish
		flood = append(flood, c)
	}
	st := mustProcStats(t, s.Pid())
	if st.FDs > 400-128 {
		t.Errorf("with %d flooding connections the gateway holds %d descriptors; the reserve is gone", len(flood), st.FDs)
	}
	for n := 2; n < 12; n++ {
		if code, body := callOn(n); code != http.StatusOK || strings.Contains(body, "isError\":true") {
			t.Errorf("call %d during the flood: %d %s", n, code, tail(body, 300))
		}
	}
	if recs := e.liveTools(t); len(recs) != 11 {
		t.Errorf("%d records, want 11", len(recs))
	}
	t.Logf("%d flooding connections: %s", len(flood), st)
	for _, c := range flood {
		c.Close()
	}
	if d := healthDetails(t, s); d["write_errors"] != float64(0) {
		t.Errorf("write_errors %v during the flood", d["write_errors"])
	}
}

// openStream opens a GET stream on session id, held until ctx ends.
func openStream(t *testing.T, ctx context.Context, s *Server, id string) {
	t.Helper()
	r, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.URL, nil)
	for k, v := range sessionHeader(id) {
		r.Header.Set(k, v)
	}
	r.Header.Set("Accept", "text/event-stream")
	resp, err := (&http.Client{}).Do(r)
	if err != nil {
		t.Fatalf("GET stream: %v", err)
	}
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		t.Fatalf("GET stream: %d %s", resp.StatusCode, b)
	}
	go func() {
		<-ctx.Done()
		resp.Body.Close()
	}()
}

// httpStat is one of the HTTP counters /healthz shows.
func httpStat(t *testing.T, s *Server, key string) float64 {
	t.Helper()
	m, _ := healthDetails(t, s)["http"].(map[string]any)
	v, _ := m[key].(float64)
	return v
}
