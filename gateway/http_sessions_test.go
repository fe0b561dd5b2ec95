package gateway

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestSessionRef: a session's reference is "s-" and the first six bytes
// of its id's SHA-256 in hex, for ids of every length (one longer than
// the stack buffer it is hashed from included), none for no session, and
// one allocation, the string itself.
func TestSessionRef(t *testing.T) {
	if got := SessionRef(""); got != "" {
		t.Errorf(`SessionRef("") = %q, want ""`, got)
	}
	for _, id := range []string{"a", "tg-0123456789abcdef0123456789abcdef", strings.Repeat("x", 127), strings.Repeat("y", 128), strings.Repeat("z", 500)} {
		sum := sha256.Sum256([]byte(id))
		if got, want := SessionRef(id), "s-"+hex.EncodeToString(sum[:6]); got != want {
			t.Errorf("SessionRef(%d bytes) = %q, want %q", len(id), got, want)
		}
	}
	id := "tg-0123456789abcdef0123456789abcdef0123456789abcdef"
	if n := testing.AllocsPerRun(100, func() { _ = SessionRef(id) }); n > 1 {
		t.Errorf("%v allocations, want 1", n)
	}
}

// httpTestServer serves a test pipeline's catalog over streamable HTTP
// with opts, and returns its /mcp URL.
func httpTestServer(t *testing.T, opts HTTPOptions) string {
	t.Helper()
	p := newTestPipeline(t, newMemRecorder(), nil)
	m := NewMCPServer(&MCPOptions{Name: "t", Version: "1", Catalog: p.opts.Tools.(*Catalog), Pipeline: p})
	h, shutdown := m.HTTPHandler(opts)
	srv := httptest.NewServer(h)
	t.Cleanup(func() { srv.Close(); _ = shutdown(context.Background()) })
	return srv.URL + "/mcp"
}

// postMCP POSTs body with the session id and protocol version headers
// (each left out when empty) and returns the status, headers and body.
func postMCP(t *testing.T, url, sid, version, body string) (int, http.Header, string) {
	t.Helper()
	hdr := map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
	if sid != "" {
		hdr["Mcp-Session-Id"] = sid
	}
	if version != "" {
		hdr["Mcp-Protocol-Version"] = version
	}
	return postWith(t, http.MethodPost, url, hdr, body)
}

const initialize2025 = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`

// TestMaxSessionsCountsEveryInitialize: an initialize carrying a live
// session's id makes a new session too, so it takes a slot like any
// other: however many are sent, no more than max_sessions are live.
func TestMaxSessionsCountsEveryInitialize(t *testing.T) {
	url := httpTestServer(t, HTTPOptions{MaxSessions: 2})
	st, h, body := postMCP(t, url, "", "", initialize2025)
	if st != http.StatusOK {
		t.Fatalf("initialize: %d %s", st, body)
	}
	sid := h.Get("Mcp-Session-Id")
	minted := map[string]bool{sid: true}
	for i := 0; i < 10; i++ {
		st, h, body := postMCP(t, url, sid, "2025-11-25", initialize2025)
		if st != http.StatusOK {
			t.Fatalf("initialize %d with a session id: %d %s", i, st, body)
		}
		minted[h.Get("Mcp-Session-Id")] = true
	}
	live := 0
	for id := range minted {
		if st, _, _ := postMCP(t, url, id, "2025-11-25", `{"jsonrpc":"2.0","id":2,"method":"ping"}`); st == http.StatusOK {
			live++
		}
	}
	if len(minted) < 3 || live > 2 {
		t.Fatalf("%d sessions minted, %d live with max_sessions 2", len(minted), live)
	}
}

// TestPostWithoutSession: a 2025-era request other than initialize
// without Mcp-Session-Id gets 400 (404 would tell the client its session
// ended) in the guard's JSON-RPC error form; initialize, and 2026-07-28
// requests (stateless: no session id, their version in the header or in
// _meta), go through.
func TestPostWithoutSession(t *testing.T) {
	url := httpTestServer(t, HTTPOptions{})
	const modernMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`
	for _, tc := range []struct {
		name, version, body string
		refused             bool
		id                  string // the refusal's id: the request's
	}{
		{"2025 request", "2025-11-25", `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`, true, `2`},
		{"2025 request, no version header", "", `{"jsonrpc":"2.0","id":"a-7","method":"tools/list"}`, true, `"a-7"`},
		{"2025 notification", "2025-11-25", `{"jsonrpc":"2.0","method":"notifications/initialized"}`, true, `null`},
		{"2025 initialize", "", initialize2025, false, ""},
		{"2026 request", "2026-07-28", `{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{` + modernMeta + `}}`, false, ""},
		{"2026 request, version in _meta only", "", `{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{` + modernMeta + `}}`, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, _, body := postMCP(t, url, "", tc.version, tc.body)
			ours := strings.Contains(body, `"code":-32600`) && strings.Contains(body, "needs the Mcp-Session-Id header")
			if tc.refused && (st != http.StatusBadRequest || !ours || !strings.Contains(body, `"id":`+tc.id+`,`)) {
				t.Errorf("got %d %s, want 400 and a JSON-RPC error asking for the session, with id %s", st, body, tc.id)
			}
			if !tc.refused && (ours || st == http.StatusNotFound) {
				t.Errorf("got %d %s, want it served", st, body)
			}
		})
	}
}

// TestUnsupportedProtocolVersionIs400: a GET or DELETE naming an invalid or
// unknown MCP-Protocol-Version is 400 (the transport's MUST), not the 405
// that mcp-go answers when it takes a later string for 2026-07-28; the
// session it names lives on.
func TestUnsupportedProtocolVersionIs400(t *testing.T) {
	url := httpTestServer(t, HTTPOptions{})
	_, h, _ := postMCP(t, url, "", "", initialize2025)
	sid := h.Get("Mcp-Session-Id")
	for _, method := range []string{http.MethodGet, http.MethodDelete} {
		for _, version := range []string{"2099-01-01", "garbage"} {
			req, _ := http.NewRequest(method, url, nil)
			req.Host = "localhost"
			req.Header.Set("Accept", "text/event-stream")
			req.Header.Set("Mcp-Session-Id", sid)
			req.Header.Set("Mcp-Protocol-Version", version)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(b), "unsupported MCP-Protocol-Version") {
				t.Errorf("%s with version %q: %d %s, want 400 naming the version", method, version, resp.StatusCode, b)
			}
		}
	}
	if st, _, body := postMCP(t, url, sid, "2025-11-25", `{"jsonrpc":"2.0","id":2,"method":"ping"}`); st != http.StatusOK {
		t.Errorf("the session after the refused DELETEs: %d %s", st, body)
	}
}

// TestHTTPRefusalsCounted: each request the transport refuses before the
// MCP server sees it is counted under its reason (for /healthz and
// toolgate_http_refused_total), so that an operator sees a flood of bad
// tokens, a browser page's requests or clients held back by a limit; a
// request served counts nothing.
func TestHTTPRefusalsCounted(t *testing.T) {
	p := newTestPipeline(t, newMemRecorder(), nil)
	m := NewMCPServer(&MCPOptions{Name: "t", Version: "1", Catalog: p.opts.Tools.(*Catalog), Pipeline: p})
	if _, ok := m.HTTPStats(); ok {
		t.Fatal("stats before there is a transport")
	}
	token := "a-bearer-token-of-length"
	h, shutdown := m.HTTPHandler(HTTPOptions{MaxBodyBytes: 1 << 10,
		Tokens: []BearerToken{{Name: "ci", Value: token}}})
	srv := httptest.NewServer(h)
	t.Cleanup(func() { srv.Close(); _ = shutdown(context.Background()) })
	url := srv.URL + "/mcp"
	send := func(host, origin, auth, body string) int {
		req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if host != "" {
			req.Host = host
		}
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		if auth != "" {
			req.Header.Set("Authorization", "Bearer "+auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, c := range []struct {
		host, origin, auth, body string
		want                     int
	}{
		{host: "evil.example", auth: token, body: initialize2025, want: 403},
		{origin: "https://evil.example", auth: token, body: initialize2025, want: 403},
		{body: initialize2025, want: 401},
		{auth: "wrong-token-of-some-length", body: initialize2025, want: 401},
		{auth: token, body: strings.Repeat(" ", 2<<10) + initialize2025, want: 413},
		{auth: token, body: initialize2025, want: 200},
	} {
		if got := send(c.host, c.origin, c.auth, c.body); got != c.want {
			t.Fatalf("%+v: status %d, want %d", c, got, c.want)
		}
	}
	stats, ok := m.HTTPStats()
	if !ok {
		t.Fatal("no stats with a transport")
	}
	want := map[string]int64{"host_not_allowed": 1, "origin_not_allowed": 1, "unauthorized": 2, "body_too_large": 1}
	for _, reason := range HTTPRefusalReasons {
		if got := stats.RefusedBy[reason]; got != want[reason] {
			t.Errorf("refused for %s: %d, want %d", reason, got, want[reason])
		}
	}
	if len(stats.RefusedBy) != len(HTTPRefusalReasons) {
		t.Errorf("%d reasons counted, want every one of %d", len(stats.RefusedBy), len(HTTPRefusalReasons))
	}
}
