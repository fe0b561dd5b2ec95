package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Raw HTTP checks against the binary: no SDK, so that every status code
// and header is seen as sent.

const initializeBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw-http","version":"0"}}}`

var httpClient = &http.Client{Timeout: 10 * time.Second}

// rawMeta2026 is the "_meta" member of a raw 2026-07-28 request's params.
var rawMeta2026 = fmt.Sprintf(`"_meta":{"io.modelcontextprotocol/protocolVersion":%q,"io.modelcontextprotocol/clientInfo":{"name":"raw","version":"0"},"io.modelcontextprotocol/clientCapabilities":{}}`, era2026)

// post sends a JSON-RPC body to the MCP endpoint with extra headers and
// returns the status, headers and body.
func post(t *testing.T, url, body string, header map[string]string) (int, http.Header, string) {
	t.Helper()
	return do(t, newPost(context.Background(), url, body, header))
}

// newPost is a POST of a JSON-RPC body to the MCP endpoint with extra
// headers ("Host" sets the request's host), for the life of ctx.
func newPost(ctx context.Context, url, body string, header map[string]string) *http.Request {
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range header {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	return req
}

func do(t *testing.T, req *http.Request) (int, http.Header, string) {
	t.Helper()
	resp, err := httpClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, resp.Header, string(b)
}

// initSession initializes a 2025-era session and returns its id.
func initSession(t *testing.T, s *Server, header map[string]string) string {
	t.Helper()
	code, h, body := post(t, s.URL, initializeBody, header)
	if code != http.StatusOK {
		t.Fatalf("initialize: %d %s", code, body)
	}
	id := h.Get("Mcp-Session-Id")
	if id == "" {
		t.Fatalf("initialize: no Mcp-Session-Id header")
	}
	hdr := map[string]string{"Mcp-Session-Id": id, "Mcp-Protocol-Version": era2025}
	for k, v := range header {
		hdr[k] = v
	}
	if code, _, body := post(t, s.URL, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, hdr); code/100 != 2 {
		t.Fatalf("notifications/initialized: %d %s", code, body)
	}
	return id
}

func sessionHeader(id string) map[string]string {
	return map[string]string{"Mcp-Session-Id": id, "Mcp-Protocol-Version": era2025}
}

const toolsListBody = `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`

// TestHTTPOriginAndHost: a foreign Origin and a foreign Host (DNS
// rebinding) are refused with 403; a loopback Origin is allowed.
func TestHTTPOriginAndHost(t *testing.T) {
	t.Parallel()
	s := newEnv(t).StartHTTP(t)
	for _, tc := range []struct {
		name   string
		header map[string]string
		want   int
	}{
		{"no Origin", nil, http.StatusOK},
		{"Origin evil", map[string]string{"Origin": "https://evil.example"}, http.StatusForbidden},
		{"Origin localhost:3000", map[string]string{"Origin": "http://localhost:3000"}, http.StatusOK},
		{"Origin 127.0.0.1", map[string]string{"Origin": "http://127.0.0.1:8080"}, http.StatusOK},
		{"Origin null", map[string]string{"Origin": "null"}, http.StatusForbidden},
		{"Origin lookalike", map[string]string{"Origin": "http://localhost.evil.example"}, http.StatusForbidden},
		{"Host evil", map[string]string{"Host": "evil.example"}, http.StatusForbidden},
		{"Host evil with port", map[string]string{"Host": "evil.example:" + strings.TrimPrefix(s.Base, "http://127.0.0.1:")}, http.StatusForbidden},
		{"Host localhost", map[string]string{"Host": "localhost:" + strings.TrimPrefix(s.Base, "http://127.0.0.1:")}, http.StatusOK},
		{"Host and Origin evil", map[string]string{"Host": "evil.example.com", "Origin": "http://evil.example.com"}, http.StatusForbidden},
	} {
		code, _, body := post(t, s.URL, initializeBody, tc.header)
		if code != tc.want {
			t.Errorf("%s: status %d, want %d (%s)", tc.name, code, tc.want, strings.TrimSpace(body))
		}
	}
	// The Host check guards /healthz too.
	req, _ := http.NewRequest(http.MethodGet, s.Base+"/healthz", nil)
	req.Host = "evil.example"
	if code, _, _ := do(t, req); code != http.StatusForbidden {
		t.Errorf("/healthz with Host evil.example: %d, want 403", code)
	}
	s.Stop(t)
}

// hiddenLength hides a body's length so that it is sent chunked.
type hiddenLength struct{ r io.Reader }

func (h hiddenLength) Read(p []byte) (int, error) { return h.r.Read(p) }

// TestHTTPBodyLimit: a body over http.max_body_bytes gets 413, whether it
// declares its length or comes chunked.
func TestHTTPBodyLimit(t *testing.T) {
	t.Parallel()
	s := newEnv(t, set("http.max_body_bytes", 1024)).StartHTTP(t)
	big := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"` + strings.Repeat("x", 2000) + `","version":"0"}}}`

	if code, _, body := post(t, s.URL, big, nil); code != http.StatusRequestEntityTooLarge {
		t.Errorf("with Content-Length: %d, want 413 (%s)", code, body)
	}
	req, _ := http.NewRequest(http.MethodPost, s.URL, hiddenLength{strings.NewReader(big)})
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if req.ContentLength != 0 && req.ContentLength != -1 {
		t.Fatalf("the request would not be chunked (ContentLength %d)", req.ContentLength)
	}
	code, _, body := do(t, req)
	if code != http.StatusRequestEntityTooLarge {
		t.Errorf("chunked: %d, want 413 (%s)", code, body)
	}
	// Just under the limit is served.
	if code, _, body := post(t, s.URL, initializeBody, nil); code != http.StatusOK {
		t.Errorf("a small body: %d (%s)", code, body)
	}
	s.Stop(t)
}

// TestHTTPBearer: with tokens from token_env, a missing or wrong token gets
// 401 with WWW-Authenticate, the right one is served; /healthz shows only
// the status without a token and details with one.
func TestHTTPBearer(t *testing.T) {
	t.Parallel()
	e := newEnv(t, set("http.auth.token_env", "E2E_TOOLGATE_TOKENS"))
	e.Environ = append(e.Environ, "E2E_TOOLGATE_TOKENS=tok-alpha-1234-5678,tok-beta-5678-9012")
	s := e.StartHTTP(t)
	for _, tc := range []struct {
		name, auth string
		want       int
	}{
		{"missing", "", http.StatusUnauthorized},
		{"wrong", "Bearer tok-wrong", http.StatusUnauthorized},
		{"prefix of a token", "Bearer tok-alpha", http.StatusUnauthorized},
		{"not bearer", "Basic dG9rLWFscGhhLTEyMzQ6", http.StatusUnauthorized},
		{"right", "Bearer tok-alpha-1234-5678", http.StatusOK},
		{"second token", "Bearer tok-beta-5678-9012", http.StatusOK},
	} {
		h := map[string]string{}
		if tc.auth != "" {
			h["Authorization"] = tc.auth
		}
		code, hdr, body := post(t, s.URL, initializeBody, h)
		if code != tc.want {
			t.Errorf("%s token: %d, want %d (%s)", tc.name, code, tc.want, body)
		}
		if code == http.StatusUnauthorized && !strings.HasPrefix(hdr.Get("WWW-Authenticate"), "Bearer") {
			t.Errorf("%s token: 401 without a Bearer WWW-Authenticate header (%q)", tc.name, hdr.Get("WWW-Authenticate"))
		}
	}

	health := func(auth string) map[string]any {
		req, _ := http.NewRequest(http.MethodGet, s.Base+"/healthz", nil)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		code, _, body := do(t, req)
		if code != http.StatusOK {
			t.Errorf("/healthz: %d", code)
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(body), &m); err != nil {
			t.Errorf("/healthz body %q: %v", body, err)
		}
		return m
	}
	if m := health(""); len(m) != 1 || m["status"] != "ok" {
		t.Errorf("/healthz without a token shows %v; want only the status", m)
	}
	if m := health("Bearer tok-wrong"); len(m) != 1 {
		t.Errorf("/healthz with a wrong token shows %v; want only the status", m)
	}
	if m := health("Bearer tok-beta-5678-9012"); m["status"] != "ok" || m["details"] == nil {
		t.Errorf("/healthz with a token shows %v; want the status and details", m)
	}

	// The Go SDK client with the token works end to end.
	cs := s.Connect(t, era2025, &ConnectOptions{HTTPHeader: http.Header{"Authorization": {"Bearer tok-alpha-1234-5678"}}})
	if r := call(t, cs, "echo", map[string]any{"text": "authorized"}); textOf(r) != "authorized" {
		t.Errorf("echo with a token: %s", mustJSON(r))
	}
	if strings.Contains(s.Stderr(), "tok-alpha-1234-5678") || strings.Contains(s.Stderr(), "tok-beta-5678-9012") {
		t.Error("a bearer token appears in the logs")
	}
	s.Stop(t)
}

// TestHTTPNonLoopbackRefused: binding a non-loopback address without
// tokens is refused at start-up (exit 2, a clear message).
func TestHTTPNonLoopbackRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	addr := "0.0.0.0:" + strconv.Itoa(freePort(t))
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	cmd := e.command(ctx, "serve", "--http", addr)
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("toolgate serve --http %s did not exit: it is serving a non-loopback address without tokens", addr)
	}
	if code := cmd.ProcessState.ExitCode(); code != 2 {
		t.Errorf("exit code %d (%v), want 2", code, err)
	}
	for _, want := range []string{"refusing", "not a loopback", "token"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the message does not say %q:\n%s", want, out)
		}
	}
	if strings.Contains(string(out), "panic") {
		t.Errorf("panic:\n%s", out)
	}
}

// TestHTTPSessionDelete: DELETE ends a session; a later request with its
// id gets 404.
func TestHTTPSessionDelete(t *testing.T) {
	t.Parallel()
	s := newEnv(t).StartHTTP(t)
	id := initSession(t, s, nil)
	if code, _, body := post(t, s.URL, toolsListBody, sessionHeader(id)); code != http.StatusOK {
		t.Fatalf("tools/list in the session: %d %s", code, body)
	}
	req, _ := http.NewRequest(http.MethodDelete, s.URL, nil)
	req.Header.Set("Mcp-Session-Id", id)
	req.Header.Set("Mcp-Protocol-Version", era2025)
	if code, _, body := do(t, req); code/100 != 2 {
		t.Errorf("DELETE: %d %s, want 2xx", code, body)
	}
	if code, _, body := post(t, s.URL, toolsListBody, sessionHeader(id)); code != http.StatusNotFound {
		t.Errorf("a request in the deleted session: %d %s, want 404", code, body)
	}
	if code, _, body := post(t, s.URL, toolsListBody, sessionHeader("mcp-session-never-issued")); code != http.StatusNotFound {
		t.Errorf("a request with an unknown session id: %d %s, want 404", code, body)
	}
	s.Stop(t)
}

// TestHTTPSessionIdleExpiry: with http.session_idle_ttl 1s, a session idle
// for 3s is gone (404), while one kept busy survives.
func TestHTTPSessionIdleExpiry(t *testing.T) {
	t.Parallel()
	s := newEnv(t, set("http.session_idle_ttl", "1s")).StartHTTP(t)
	idle := initSession(t, s, nil)
	busy := initSession(t, s, nil)
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		if code, _, body := post(t, s.URL, toolsListBody, sessionHeader(busy)); code != http.StatusOK {
			t.Fatalf("the busy session was ended: %d %s", code, body)
		}
		time.Sleep(300 * time.Millisecond)
	}
	if code, _, body := post(t, s.URL, toolsListBody, sessionHeader(idle)); code != http.StatusNotFound {
		t.Errorf("a session idle for 3s (ttl 1s): %d %s, want 404", code, tail(body, 200))
	}
	s.Stop(t)
}

// TestHTTPStatelessCancelStaysWithItsCaller: on the 2026-07-28 wire a
// call is cancelled by its own client closing the request's stream, and
// not by another client's notifications/cancelled naming the same request
// ID (every client counts its IDs up from 0 or 1, and such a notification
// says nothing of who sent it).
func TestHTTPStatelessCancelStaysWithItsCaller(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	s := env.StartHTTP(t)
	sleep := func(ctx context.Context, ms int) <-chan string {
		body := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"sleep","arguments":{"ms":%d,"steps":1},%s}}`, ms, rawMeta2026)
		answer := make(chan string, 1)
		go func() {
			resp, err := httpClient.Do(newPost(ctx, s.URL, body, map[string]string{"Mcp-Protocol-Version": era2026, "Mcp-Method": "tools/call", "Mcp-Name": "sleep"}))
			if err != nil {
				answer <- err.Error()
				return
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			answer <- string(b)
		}()
		return answer
	}
	started := func(n int) bool {
		count := 0
		for _, ev := range env.liveEvents(t) {
			if ev["type"] == "tool.started" && ev["tool"] == "sleep" {
				count++
			}
		}
		return count >= n
	}
	otherClientCancels := func() {
		t.Helper()
		body := `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1,"reason":"not yours",` + rawMeta2026 + `}}`
		if code, _, resp := post(t, s.URL, body, map[string]string{"Mcp-Protocol-Version": era2026, "Mcp-Method": "notifications/cancelled"}); code != http.StatusAccepted {
			t.Fatalf("the other client's notifications/cancelled: %d %s", code, resp)
		}
	}

	answer := sleep(context.Background(), 3000) // long enough that an answer now is the notification's doing
	if !waitFor(10*time.Second, func() bool { return started(1) }) {
		t.Fatal("the first sleep did not start")
	}
	otherClientCancels()
	select {
	case a := <-answer:
		t.Fatalf("answered right after another client's notifications/cancelled: %s", a)
	default:
	}
	if a := <-answer; !strings.Contains(a, `"result"`) || strings.Contains(a, `"isError":true`) {
		t.Errorf("the sleep another client tried to cancel: %s, want its result", tail(a, 300))
	}

	ctx, closeStream := context.WithCancel(context.Background())
	answer = sleep(ctx, 60000)
	if !waitFor(10*time.Second, func() bool { return started(2) }) {
		t.Fatal("the second sleep did not start")
	}
	closeStream()
	<-answer
	var statuses []string
	if !waitFor(10*time.Second, func() bool {
		statuses = statuses[:0]
		for _, r := range env.liveTools(t) {
			if r.Tool == "sleep" {
				statuses = append(statuses, r.Status)
			}
		}
		return len(statuses) == 2
	}) || !slices.Equal(statuses, []string{"ok", "cancelled"}) {
		t.Errorf("sleep records %v, want [ok cancelled]", statuses)
	}
	s.Stop(t)
}

// TestHTTPStatelessRequest: a 2026-07-28 request needs no session.
func TestHTTPStatelessRequest(t *testing.T) {
	t.Parallel()
	s := newEnv(t).StartHTTP(t)
	body := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"text":"stateless"},` + rawMeta2026 + `}}`
	code, h, resp := post(t, s.URL, body, map[string]string{"Mcp-Protocol-Version": era2026, "Mcp-Method": "tools/call", "Mcp-Name": "echo"})
	if code != http.StatusOK || !strings.Contains(resp, "stateless") {
		t.Errorf("stateless tools/call: %d %s", code, resp)
	}
	if h.Get("Mcp-Session-Id") != "" {
		t.Errorf("a stateless request got a session id %q", h.Get("Mcp-Session-Id"))
	}
	s.Stop(t)
}
