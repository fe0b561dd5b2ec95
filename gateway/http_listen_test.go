package gateway

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestListenStreamsAreStreams: a 2026-07-28 subscriptions/listen stream is
// the era's GET stream, held open for as long as the client likes, and
// counts against http.max_streams (503 past it), not against
// limits.max_in_flight: listen streams up to the in-flight limit would
// otherwise shut every call of every client out with 429.
func TestListenStreamsAreStreams(t *testing.T) {
	url := httpTestServer(t, HTTPOptions{MaxStreams: 2, MaxInFlight: 2})
	const meta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`
	listen := func(ctx context.Context) (*http.Response, error) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(
			`{"jsonrpc":"2.0","id":1,"method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true},`+meta+`}}`))
		req.Host = "localhost"
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
		req.Header.Set("Mcp-Method", "subscriptions/listen")
		return http.DefaultClient.Do(req)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for i := 0; i < 2; i++ {
		resp, err := listen(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
			t.Fatalf("listen stream %d: %d %s", i, resp.StatusCode, resp.Header.Get("Content-Type"))
		}
	}
	time.Sleep(50 * time.Millisecond) // both streams are being served
	hdr := map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream", "Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/list"}
	if st, _, body := postWith(t, http.MethodPost, url, hdr, `{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{`+meta+`}}`); st != http.StatusOK {
		t.Errorf("a call beside two listen streams (max_in_flight 2): %d %s", st, body)
	}
	third, err := listen(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer third.Body.Close()
	if third.StatusCode != http.StatusServiceUnavailable || !strings.Contains(third.Header.Get("Retry-After"), "1") {
		t.Errorf("a third listen stream over max_streams 2: %d, want 503 with Retry-After", third.StatusCode)
	}
}

// postWith sends body to url with method and the headers hdr, and returns
// the status, headers and body.
func postWith(t *testing.T, method, url string, hdr map[string]string, body string) (int, http.Header, string) {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	req.Host = "localhost"
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

// TestOtherMethodsAre405: a method the MCP endpoint does not serve (PUT,
// PATCH, OPTIONS) gets 405 with Allow, with or without a live session:
// mcp-go's 404 tells a 2025-era client that its session ended.
func TestOtherMethodsAre405(t *testing.T) {
	url := httpTestServer(t, HTTPOptions{})
	_, h, _ := postMCP(t, url, "", "", initialize2025)
	sid := h.Get("Mcp-Session-Id")
	for _, method := range []string{http.MethodPut, http.MethodPatch, http.MethodOptions} {
		for _, s := range []string{sid, ""} {
			hdr := map[string]string{"Content-Type": "application/json", "Mcp-Protocol-Version": "2025-11-25"}
			if s != "" {
				hdr["Mcp-Session-Id"] = s
			}
			st, rh, body := postWith(t, method, url, hdr, `{"jsonrpc":"2.0","id":2,"method":"ping"}`)
			if st != http.StatusMethodNotAllowed || rh.Get("Allow") != "GET, POST, DELETE" {
				t.Errorf("%s (session %t): %d Allow %q %s, want 405 with Allow", method, s != "", st, rh.Get("Allow"), body)
			}
		}
	}
	if st, _, body := postMCP(t, url, sid, "2025-11-25", `{"jsonrpc":"2.0","id":3,"method":"ping"}`); st != http.StatusOK {
		t.Errorf("the session afterwards: %d %s", st, body)
	}
}

// TestOtherContentTypesAre415: a POST whose body is not declared JSON is
// refused 415 with a JSON-RPC error naming the content type (mcp-go's own
// refusal was a 400 in plain text), on either era; a JSON type with
// parameters is served; an empty body is refused saying so.
func TestOtherContentTypesAre415(t *testing.T) {
	url := httpTestServer(t, HTTPOptions{})
	for _, ct := range []string{"text/plain", "", "application/x-www-form-urlencoded", "application/jsonx"} {
		for _, v := range []string{"2025-11-25", "2026-07-28"} {
			st, rh, body := postWith(t, http.MethodPost, url, map[string]string{"Content-Type": ct, "Mcp-Protocol-Version": v}, initialize2025)
			var msg struct {
				Error struct{ Message string } `json:"error"`
			}
			if st != http.StatusUnsupportedMediaType || !strings.HasPrefix(rh.Get("Content-Type"), "application/json") ||
				json.Unmarshal([]byte(body), &msg) != nil || !strings.Contains(msg.Error.Message, fmt.Sprintf("not %q", ct)) {
				t.Errorf("Content-Type %q (%s): %d %q %s, want 415 with a JSON-RPC error naming it", ct, v, st, rh.Get("Content-Type"), body)
			}
		}
	}
	if st, _, body := postWith(t, http.MethodPost, url, map[string]string{"Content-Type": "application/json; charset=utf-8", "Accept": "application/json, text/event-stream"}, initialize2025); st != http.StatusOK {
		t.Errorf("application/json; charset=utf-8: %d %s, want it served", st, body)
	}
	// An empty body is said to be empty, not "not valid json".
	for _, empty := range []string{"", " \n"} {
		if st, _, body := postWith(t, http.MethodPost, url, map[string]string{"Content-Type": "application/json"}, empty); st != http.StatusBadRequest || !strings.Contains(body, "the request body is empty") {
			t.Errorf("body %q: %d %s, want 400 saying it is empty", empty, st, body)
		}
	}
}

// TestHealthzUnavailable: while Ready says the gateway cannot serve calls,
// /healthz answers 503 "unavailable" (a load balancer's check sends the
// calls elsewhere), with the reason for authorized callers only; once it
// can, 200 "ok" again.
func TestHealthzUnavailable(t *testing.T) {
	var notReady atomic.Pointer[error]
	url := httpTestServer(t, HTTPOptions{
		Tokens: []BearerToken{{Name: "ops", Value: "0123456789abcdef-health"}},
		Health: func() any { return map[string]any{} },
		Ready: func() error {
			if err := notReady.Load(); err != nil {
				return *err
			}
			return nil
		},
	})
	health := strings.TrimSuffix(url, "/mcp") + "/healthz"
	get := func(token string) (int, map[string]any) {
		req, _ := http.NewRequest(http.MethodGet, health, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var body map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, body
	}
	if code, body := get(""); code != http.StatusOK || body["status"] != "ok" {
		t.Fatalf("ready: %d %v", code, body)
	}
	err := errors.New("the run archive cannot be written (no space left on device)")
	notReady.Store(&err)
	if code, body := get(""); code != http.StatusServiceUnavailable || body["status"] != "unavailable" || body["reason"] != nil {
		t.Errorf("not ready, anonymous: %d %v; want 503 without the reason", code, body)
	}
	if code, body := get("0123456789abcdef-health"); code != http.StatusServiceUnavailable || body["reason"] != err.Error() || body["details"] == nil {
		t.Errorf("not ready, authorized: %d %v; want 503 with the reason and details", code, body)
	}
	notReady.Store(nil)
	if code, body := get(""); code != http.StatusOK || body["status"] != "ok" {
		t.Errorf("ready again: %d %v", code, body)
	}
}

// listenTo opens a 2026-07-28 subscriptions/listen stream with the JSON
// filter notifications and returns its status and the data of its
// messages as they come.
func listenTo(t *testing.T, ctx context.Context, url string, id int, notifications string) (int, <-chan string) {
	t.Helper()
	const meta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(fmt.Sprintf(
		`{"jsonrpc":"2.0","id":%d,"method":"subscriptions/listen","params":{"notifications":%s,%s}}`, id, notifications, meta)))
	req.Host = "localhost"
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", "subscriptions/listen")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	out := make(chan string, 16)
	go func() {
		defer close(out)
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			line := sc.Text()
			if d, ok := strings.CutPrefix(line, "data: "); ok {
				out <- d
			} else if strings.HasPrefix(line, "{") { // a plain JSON answer
				out <- line
			}
		}
	}()
	return resp.StatusCode, out
}

// TestListenResourceSubscriptions: a 2026-07-28 client's resource
// subscriptions (subscriptions/listen with resourceSubscriptions) subscribe
// the source that serves each URI, once however many streams ask; the
// source's updates reach the streams that asked for that URI (only
// those), tagged with the stream's subscription ID; the source is
// unsubscribed when the last such stream ends; a URI no source serves
// fails the request.
func TestListenResourceSubscriptions(t *testing.T) {
	src := &fakeSource{subs: map[string]int{}}
	url, _ := relayServer(t, func(m *MCPServer) { m.AddResourceSource(src) })
	next := func(what string, ch <-chan string) string {
		t.Helper()
		select {
		case d, ok := <-ch:
			if !ok {
				t.Fatalf("%s: the stream ended", what)
			}
			return d
		case <-time.After(5 * time.Second):
			t.Fatalf("timed out waiting for %s", what)
		}
		return ""
	}
	ctxA, cancelA := context.WithCancel(context.Background())
	defer cancelA()
	ctxB, cancelB := context.WithCancel(context.Background())
	defer cancelB()
	ctxC, cancelC := context.WithCancel(context.Background())
	defer cancelC()
	_, a := listenTo(t, ctxA, url, 7, `{"resourceSubscriptions":["fake://watched"]}`)
	_, b := listenTo(t, ctxB, url, 8, `{"resourceSubscriptions":["fake://watched"]}`)
	_, c := listenTo(t, ctxC, url, 9, `{"resourceSubscriptions":["fake://item/3"]}`)
	for name, ch := range map[string]<-chan string{"a": a, "b": b, "c": c} {
		if ack := next(name+"'s acknowledgement", ch); !strings.Contains(ack, "notifications/subscriptions/acknowledged") {
			t.Fatalf("%s: %s", name, ack)
		}
	}
	if n := src.count("fake://watched"); n != 1 {
		t.Errorf("source subscribed %d times to fake://watched, want 1", n)
	}
	src.listener("fake://watched", map[string]any{"uri": "fake://watched", "_meta": map[string]any{"k": "v"}})
	for name, ch := range map[string]<-chan string{"a": a, "b": b} {
		got := next(name+"'s update", ch)
		id := map[string]string{"a": "7", "b": "8"}[name]
		if !strings.Contains(got, `"notifications/resources/updated"`) || !strings.Contains(got, `"uri":"fake://watched"`) ||
			!strings.Contains(got, `"io.modelcontextprotocol/subscriptionId":`+id) || !strings.Contains(got, `"k":"v"`) || strings.Count(got, `"_meta"`) != 1 {
			t.Errorf("%s got %s", name, got)
		}
	}
	select {
	case got := <-c:
		t.Errorf("c, not subscribed to fake://watched, got %s", got)
	case <-time.After(100 * time.Millisecond):
	}
	cancelA()
	time.Sleep(100 * time.Millisecond)
	if n := src.count("fake://watched"); n != 1 {
		t.Errorf("one of two streams ended: source count %d, want 1", n)
	}
	cancelB()
	eventually(t, "the source to be unsubscribed", func() bool { return src.count("fake://watched") == 0 })

	ctxD, cancelD := context.WithCancel(context.Background())
	defer cancelD()
	_, d := listenTo(t, ctxD, url, 10, `{"resourceSubscriptions":["fake://nowhere"]}`)
	if got := next("the refusal", d); !strings.Contains(got, `"error"`) || !strings.Contains(got, "not found") {
		t.Errorf("a URI no source serves: %s", got)
	}
}

// TestListenStreamEndsWithResultAtShutdown: at shutdown, a 2026-07-28
// subscriptions/listen stream is ended gracefully, with the listen
// request's result (resultType and the subscription id in _meta), so the
// client can tell a server that went away on purpose from a dropped
// connection; before, the stream was held until the HTTP server gave up
// waiting for it and cut the connection.
func TestListenStreamEndsWithResultAtShutdown(t *testing.T) {
	p := newTestPipeline(t, newMemRecorder(), nil)
	m := NewMCPServer(&MCPOptions{Name: "t", Version: "1", Catalog: p.opts.Tools.(*Catalog), Pipeline: p})
	h, shutdown := m.HTTPHandler(HTTPOptions{})
	srv := httptest.NewServer(h)
	defer srv.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	const meta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/mcp", strings.NewReader(
		`{"jsonrpc":"2.0","id":"sub-1","method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true},`+meta+`}}`))
	req.Host = "localhost"
	for k, v := range map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
		"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "subscriptions/listen"} {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	events := make(chan string, 8)
	go func() {
		defer close(events)
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				events <- data
			}
		}
	}()
	if ack := <-events; !strings.Contains(ack, "notifications/subscriptions/acknowledged") {
		t.Fatalf("first message on the stream: %s", ack)
	}
	sctx, scancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer scancel()
	go func() { _ = shutdown(sctx) }()
	var last string
	for ev := range events {
		last = ev
	}
	var msg struct {
		ID     string `json:"id"`
		Result struct {
			ResultType string         `json:"resultType"`
			Meta       map[string]any `json:"_meta"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(last), &msg); err != nil || msg.ID != "sub-1" || msg.Result.ResultType != "complete" ||
		msg.Result.Meta["io.modelcontextprotocol/subscriptionId"] != "sub-1" {
		t.Fatalf("the stream ended without the listen request's result; last message %q (client: %v)", last, ctx.Err())
	}
}
