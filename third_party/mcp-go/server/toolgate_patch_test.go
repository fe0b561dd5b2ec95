package server

// toolgate patch: tests that the fast paths of the patch's speed items are
// taken where they are meant to be (third_party/README.md). What each path
// computes is held to v1.2.1's by toolgate's own tests
// (gateway/mcpgo_patch_test.go, from outside this package); a fast path
// that is silently never taken passes those, so these look inside.

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"reflect"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/jsonscan"
	"github.com/mark3labs/mcp-go/mcp"
)

// TestToolgateCallToolRequestFromParams: item 17 decodes a tools/call
// request from the params its envelope's decoding kept. Given params that
// differ from the message's own, the request must come from them; met
// twice, from the message.
func TestToolgateCallToolRequestFromParams(t *testing.T) {
	msg := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"from-message"}}`)
	kept := []byte(`{"name":"from-envelope"}`)
	for _, raw := range []bool{false, true} {
		var r mcp.CallToolRequest
		if err := decodeCallToolRequest(msg, mcp.MethodToolsCall, paramsMember{raw: kept, n: 1}, &r, raw); err != nil || r.Params.Name != "from-envelope" {
			t.Errorf("raw arguments %v, params met once: %q, %v; want the kept params' name", raw, r.Params.Name, err)
		}
		r = mcp.CallToolRequest{}
		if err := decodeCallToolRequest(msg, mcp.MethodToolsCall, paramsMember{raw: kept, n: 2}, &r, raw); err != nil || r.Params.Name != "from-message" {
			t.Errorf("raw arguments %v, params met twice: %q, %v; want the message's", raw, r.Params.Name, err)
		}
	}
}

// envelopeSeen serves a tool that reports whether its call's context held
// the envelope its transport decoded, with the params kept once.
func envelopeSeen() (*MCPServer, chan bool) {
	seen := make(chan bool, 1)
	s := NewMCPServer("t", "1", WithToolCapabilities(false))
	s.AddTool(mcp.NewTool("probe"), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		env, _ := ctx.Value(decodedEnvelopeKey{}).(*decodedEnvelope)
		seen <- env != nil && env.params.n == 1
		return mcp.NewToolResultText("ok"), nil
	})
	return s, seen
}

const probeCall = `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"probe"}}`

// TestToolgateHTTPHandsOverItsEnvelope: items 16 and 17 over streamable
// HTTP: HandleMessage gets the envelope the transport decoded, params
// included.
func TestToolgateHTTPHandsOverItsEnvelope(t *testing.T) {
	s, seen := envelopeSeen()
	h := NewStreamableHTTPServer(s, WithStateLess(true))
	r := httptest.NewRequest(http.MethodPost, "http://127.0.0.1/mcp", strings.NewReader(probeCall))
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Accept", "application/json, text/event-stream")
	r.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	h.ServeHTTP(httptest.NewRecorder(), r)
	select {
	case ok := <-seen:
		if !ok {
			t.Error("the tool's context holds no envelope with its params: HandleMessage decoded the message again")
		}
	default:
		t.Fatal("the probe tool was not called")
	}
}

// TestToolgateModernRequestMakesNoQueues: item 28: the session of a
// 2026-07-28 request, made for it alone, does not make the queues of
// server-to-client requests it cannot use (the revision has none).
// TestToolgateServerRequestsOverListeningStream holds their use.
func TestToolgateModernRequestMakesNoQueues(t *testing.T) {
	s := NewMCPServer("t", "1", WithToolCapabilities(false))
	made := make(chan bool, 1)
	s.AddTool(mcp.NewTool("probe"), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		session, _ := ClientSessionFromContext(ctx).(*streamableHttpSession)
		made <- session == nil || session.queues.sampling != nil
		return mcp.NewToolResultText("ok"), nil
	})
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"probe","_meta":{` +
		`"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
	r := httptest.NewRequest(http.MethodPost, "http://127.0.0.1/mcp", strings.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Accept", "application/json, text/event-stream")
	r.Header.Set("Mcp-Protocol-Version", "2026-07-28")
	r.Header.Set("Mcp-Method", "tools/call")
	r.Header.Set("Mcp-Name", "probe")
	w := httptest.NewRecorder()
	NewStreamableHTTPServer(s).ServeHTTP(w, r)
	select {
	case m := <-made:
		if m {
			t.Error("the request's session made the queues of server-to-client requests (or is not a streamable HTTP session)")
		}
	default:
		t.Fatalf("the probe tool was not called: %d %s", w.Code, w.Body)
	}
}

// TestToolgateNotificationsBeforeTheAnswer: item 30: a request's
// notifications reach its SSE stream, in order and before its answer:
// streamed while the handler runs (the tool waits until the client has
// read its first one), and the rest, sent right before the tool returns,
// whether the forwarder has taken one off the channel (v1.2.1 dropped it
// then) or the drain before the answer takes them.
func TestToolgateNotificationsBeforeTheAnswer(t *testing.T) {
	s := NewMCPServer("t", "1", WithToolCapabilities(false))
	var release chan struct{}
	s.AddTool(mcp.NewTool("count"), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		for i := range 3 {
			if err := ServerFromContext(ctx).SendNotificationToClient(ctx, "notifications/message",
				map[string]any{"level": "info", "data": fmt.Sprintf("n%d", i)}); err != nil {
				return nil, err
			}
			if i == 0 {
				select {
				case <-release:
				case <-time.After(5 * time.Second):
					return mcp.NewToolResultError("n0 was not streamed while the tool ran"), nil
				}
			}
		}
		return mcp.NewToolResultText("done"), nil
	})
	h := NewStreamableHTTPServer(s)
	ts := httptest.NewServer(h)
	defer ts.Close()
	for _, version := range []string{"2026-07-28", "2025-11-25"} {
		release = make(chan struct{})
		sessionID := ""
		if version == "2025-11-25" {
			sessionID = initializeSession(t, h)
		}
		resp := postCall(t, ts.URL, sessionID, "count")
		var got strings.Builder
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			got.WriteString(sc.Text() + "\n")
			if strings.Contains(sc.Text(), `"data":"n0"`) {
				close(release)
			}
		}
		resp.Body.Close()
		last := -1
		for _, want := range []string{`"data":"n0"`, `"data":"n1"`, `"data":"n2"`, `"text":"done"`} {
			i := strings.Index(got.String(), want)
			if i <= last {
				t.Fatalf("%s: %s not after what came before it in the answer:\n%s", version, want, got.String())
			}
			last = i
		}
	}
}

// TestToolgateForwarderOnDemand: item 31: a POST's notification
// forwarder starts when something is about to be sent to the session, not
// with the POST, and a POST leaves nothing of it on the session. In both
// eras: while a quiet tool runs, its POST's forwarder waits on the
// session, not started; a tool that sends a notification finds it started
// right after; once answered, the session holds no forwarder of either.
func TestToolgateForwarderOnDemand(t *testing.T) {
	s := NewMCPServer("t", "1", WithToolCapabilities(false))
	type seen struct {
		sess          *streamableHttpSession
		waiting       int   // forwarders waiting on the session while the tool ran
		before, after int32 // this POST's forwarder's state, before and after a send
		sent          bool
	}
	seenc := make(chan seen, 1)
	probe := func(send bool) ServerTool {
		name := "quiet"
		if send {
			name = "loud"
		}
		return ServerTool{Tool: mcp.NewTool(name), Handler: func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			sess, ok := ClientSessionFromContext(ctx).(*streamableHttpSession)
			if !ok {
				return nil, errors.New("not a streamable HTTP session")
			}
			sess.fwdMu.Lock()
			v := seen{sess: sess, waiting: len(sess.fwds), before: -1, after: -1}
			var f *postForwarder
			if len(sess.fwds) == 1 {
				f = sess.fwds[0]
				v.before = f.state.Load()
			}
			sess.fwdMu.Unlock()
			if send {
				err := ServerFromContext(ctx).SendNotificationToClient(ctx, "notifications/message",
					map[string]any{"level": "info", "data": "hello"})
				v.sent = err == nil
				if f != nil {
					v.after = f.state.Load()
				}
			}
			seenc <- v
			return mcp.NewToolResultText("done"), nil
		}}
	}
	s.AddTools(probe(false), probe(true))
	h := NewStreamableHTTPServer(s)
	ts := httptest.NewServer(h)
	defer ts.Close()
	for _, era := range []string{"2026-07-28", "2025-11-25"} {
		var sessionID string
		if era == "2025-11-25" {
			sessionID = initializeSession(t, h)
		}
		for _, tool := range []string{"quiet", "loud"} {
			resp := postCall(t, ts.URL, sessionID, tool)
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			var v seen
			select {
			case v = <-seenc:
			default:
				t.Fatalf("%s %s: the tool was not called: %d %s", era, tool, resp.StatusCode, b)
			}
			if !strings.Contains(string(b), `"text":"done"`) {
				t.Fatalf("%s %s: no answer: %s", era, tool, b)
			}
			if v.waiting != 1 || v.before != forwarderIdle {
				t.Errorf("%s %s: while the tool ran, %d forwarders waited on the session, this POST's in state %d; want 1, not started (%d)",
					era, tool, v.waiting, v.before, forwarderIdle)
			}
			if tool == "loud" {
				if !v.sent || v.after != forwarderRunning {
					t.Errorf("%s: after a notification was sent (ok %v), the POST's forwarder is in state %d; want started (%d)",
						era, v.sent, v.after, forwarderRunning)
				}
				if !strings.Contains(string(b), `"data":"hello"`) {
					t.Errorf("%s: the notification is not in the answer: %s", era, b)
				}
			}
			v.sess.fwdMu.Lock()
			left := len(v.sess.fwds)
			v.sess.fwdMu.Unlock()
			if left != 0 {
				t.Errorf("%s %s: the answered POST left %d forwarders on the session", era, tool, left)
			}
		}
	}
}

// TestToolgateScopedRequestsOnDemand: item 40: a 2025-11-25 POST's
// channel of server requests is made when one is sent, not with the POST.
// A quiet tool's POST has none while the tool runs; a tool that asks the
// client (elicitation/create) still has its request on its own POST's
// stream, gets the client's answer, and then its POST has the channel.
func TestToolgateScopedRequestsOnDemand(t *testing.T) {
	s := NewMCPServer("t", "1", WithToolCapabilities(false), WithElicitation())
	type seen struct{ scoped, made bool }
	seenc := make(chan seen, 1)
	look := func(ctx context.Context) seen {
		scope, ok := ctx.Value(requestScopedSSEKey{}).(*requestScopedSSE)
		return seen{scoped: ok, made: ok && scope.requests != nil}
	}
	s.AddTool(mcp.NewTool("quiet"), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		seenc <- look(ctx)
		return mcp.NewToolResultText("done"), nil
	})
	s.AddTool(mcp.NewTool("asks"), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		res, err := ServerFromContext(ctx).RequestElicitation(ctx, mcp.ElicitationRequest{Params: mcp.ElicitationParams{
			Message:         "name?",
			RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}},
		}})
		seenc <- look(ctx)
		if err != nil {
			return nil, err
		}
		return mcp.NewToolResultText(fmt.Sprintf("%s %v", res.Action, res.Content)), nil
	})
	h := NewStreamableHTTPServer(s)
	ts := httptest.NewServer(h)
	defer ts.Close()
	sessionID := initializeSession(t, h)

	resp := postCall(t, ts.URL, sessionID, "quiet")
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if v := <-seenc; !v.scoped || v.made {
		t.Errorf("quiet tool: POST scope in its context %v, channel made %v; want a scope without a channel", v.scoped, v.made)
	}
	if !strings.Contains(string(b), `"text":"done"`) {
		t.Fatalf("quiet tool: no answer: %s", b)
	}

	// The asking tool's POST answers with an SSE stream: the elicitation
	// first, answered here by a second POST, then the tool's result.
	body, header := toolCall(sessionID, "asks")
	resp = postMCP(t, ts.URL, body, header)
	defer resp.Body.Close()
	var got strings.Builder
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		got.WriteString(line + "\n")
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok || !strings.Contains(data, `"method":"elicitation/create"`) {
			continue
		}
		var ask struct {
			ID json.RawMessage `json:"id"`
		}
		if err := json.Unmarshal([]byte(data), &ask); err != nil {
			t.Fatalf("elicitation on the POST's stream: %v: %s", err, data)
		}
		answer := postMCP(t, ts.URL, `{"jsonrpc":"2.0","id":`+string(ask.ID)+`,"result":{"action":"accept","content":{"name":"Ada"}}}`, header)
		io.Copy(io.Discard, answer.Body)
		answer.Body.Close()
	}
	v := <-seenc
	if !strings.Contains(got.String(), `"method":"elicitation/create"`) || !strings.Contains(got.String(), `accept map[name:Ada]`) {
		t.Fatalf("asking tool: want the elicitation on its POST's stream, then its answer in the result; got:\n%s", got.String())
	}
	if !v.scoped || !v.made {
		t.Errorf("asking tool: POST scope %v, channel made %v after its request; want both", v.scoped, v.made)
	}
}

// TestToolgatePostContext: item 41: a POST's values are two context nodes
// of its state instead of a context.WithValue each, and answer as those
// did. The context function sees the session and the protocol versions and
// adds a value of its own; the tool's handler sees all of them, the
// request's header (in its request) and, for a 2025-11-25 POST that can
// stream, its scope for server requests; a 2026-07-28 POST has no scope.
func TestToolgatePostContext(t *testing.T) {
	type funcKey struct{}
	type seen struct {
		session  ClientSession
		versions []string
		fromFunc any
		header   string
		scoped   bool
	}
	funcSaw := make(chan seen, 1)
	handlerSaw := make(chan seen, 1)
	s := NewMCPServer("t", "1", WithToolCapabilities(false))
	s.AddTool(mcp.NewTool("probe"), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		_, scoped := ctx.Value(requestScopedSSEKey{}).(*requestScopedSSE)
		handlerSaw <- seen{ClientSessionFromContext(ctx), SupportedProtocolVersionsFromContext(ctx), ctx.Value(funcKey{}), req.Header.Get("X-Probe"), scoped}
		return mcp.NewToolResultText("done"), nil
	})
	h := NewStreamableHTTPServer(s, WithHTTPContextFunc(func(ctx context.Context, r *http.Request) context.Context {
		funcSaw <- seen{session: ClientSessionFromContext(ctx), versions: SupportedProtocolVersionsFromContext(ctx)}
		return context.WithValue(ctx, funcKey{}, "added")
	}))
	// Fewer versions than every one mcp-go implements, which is what a
	// context without them answers.
	want := []string{"2025-11-25", "2026-07-28"}
	h.supportedOnce.Do(func() { h.supported = want })
	ts := httptest.NewServer(h)
	defer ts.Close()
	sessionID := initializeSession(t, h)
	<-funcSaw // initialize's
	for _, era := range []string{"2025-11-25", "2026-07-28"} {
		sid := sessionID
		if era == "2026-07-28" {
			sid = ""
		}
		body, header := toolCall(sid, "probe")
		header.Set("X-Probe", "yes")
		resp := postMCP(t, ts.URL, body, header)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !strings.Contains(string(b), `"text":"done"`) {
			t.Fatalf("%s: no answer: %d %s", era, resp.StatusCode, b)
		}
		f, hs := <-funcSaw, <-handlerSaw
		for who, v := range map[string]seen{"context function": f, "handler": hs} {
			sess, ok := v.session.(*streamableHttpSession)
			if !ok || (era == "2025-11-25" && sess.SessionID() != sessionID) {
				t.Errorf("%s, %s: session %#v; want the POST's", era, who, v.session)
			}
			if !slices.Equal(v.versions, want) {
				t.Errorf("%s, %s: protocol versions %v; want %v", era, who, v.versions, want)
			}
		}
		if hs.fromFunc != "added" || hs.header != "yes" {
			t.Errorf("%s: the handler saw the context function's value %v and the header X-Probe %q; want added, yes", era, hs.fromFunc, hs.header)
		}
		if hs.scoped != (era == "2025-11-25") {
			t.Errorf("%s: scope for server requests in the handler's context: %v", era, hs.scoped)
		}
	}
}

// initializeSession initializes a 2025-11-25 session with h and returns
// its ID.
func initializeSession(t *testing.T, h http.Handler) string {
	t.Helper()
	r := httptest.NewRequest(http.MethodPost, "http://127.0.0.1/mcp", strings.NewReader(
		`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`))
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Accept", "application/json, text/event-stream")
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	id := w.Header().Get("Mcp-Session-Id")
	if id == "" {
		t.Fatalf("initialize: no session: %d %s", w.Code, w.Body)
	}
	return id
}

// toolCall is the body and headers of a tools/call of tool: in the
// 2025-11-25 session sessionID, or, with sessionID "", a 2026-07-28
// request carrying its envelope in _meta (log level debug) and its
// routing headers.
func toolCall(sessionID, tool string) (string, http.Header) {
	h := http.Header{}
	meta := ""
	if sessionID != "" {
		h.Set("Mcp-Protocol-Version", "2025-11-25")
		h.Set("Mcp-Session-Id", sessionID)
	} else {
		h.Set("Mcp-Protocol-Version", "2026-07-28")
		h.Set("Mcp-Method", "tools/call")
		h.Set("Mcp-Name", tool)
		meta = `,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/logLevel":"debug"}`
	}
	return `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"` + tool + `"` + meta + `}}`, h
}

// postCall posts a tools/call of tool ([toolCall]) to url.
func postCall(t *testing.T, url, sessionID, tool string) *http.Response {
	t.Helper()
	body, header := toolCall(sessionID, tool)
	return postMCP(t, url, body, header)
}

// postMCP posts body to url over real HTTP as an MCP client does, with
// header's entries.
func postMCP(t *testing.T, url, body string, header http.Header) *http.Response {
	t.Helper()
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(mcpPost(context.Background(), url, body, header))
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// mcpPost is a POST of body to url as an MCP client sends it, with
// header's entries, for the life of ctx.
func mcpPost(ctx context.Context, url, body string, header http.Header) *http.Request {
	r, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	r.Header = header.Clone()
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Accept", "application/json, text/event-stream")
	return r
}

// TestToolgateParamHeadersOfTheCheckedName: a 2026-07-28 tools/call's
// x-mcp-header parameters are checked against the tool the standard
// headers' check found named in params (item 26 hands its name over
// rather than reading params again): a Region header that differs from the
// body's region is refused, one that matches is not.
func TestToolgateParamHeadersOfTheCheckedName(t *testing.T) {
	s := NewMCPServer("t", "1", WithToolCapabilities(false))
	s.AddTool(mcp.NewToolWithRawSchema("where", "", json.RawMessage(
		`{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"}}}`)),
		func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText("ok"), nil
		})
	h := NewStreamableHTTPServer(s)
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"where","arguments":{"region":"eu"},` +
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
	for region, refused := range map[string]bool{"eu": false, "us": true} {
		r := httptest.NewRequest(http.MethodPost, "http://127.0.0.1/mcp", strings.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Accept", "application/json, text/event-stream")
		r.Header.Set("Mcp-Protocol-Version", "2026-07-28")
		r.Header.Set("Mcp-Method", "tools/call")
		r.Header.Set("Mcp-Name", "where")
		r.Header.Set(mcp.HeaderParamPrefix+"Region", region)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if got := !strings.Contains(w.Body.String(), `"ok"`); got != refused {
			t.Errorf("Region %s: answered %d %s; want refused: %v", region, w.Code, w.Body, refused)
		}
	}
}

// TestToolgateStdioHandsOverItsEnvelope: item 18: the stdio transport's one
// decoding of a line reaches HandleMessage, params included.
func TestToolgateStdioHandsOverItsEnvelope(t *testing.T) {
	s, seen := envelopeSeen()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = NewStdioServer(s).Listen(ctx, inR, outW) }()
	go func() { _, _ = io.Copy(io.Discard, bufio.NewReader(outR)) }()
	defer inW.Close()
	if _, err := io.WriteString(inW, probeCall+"\n"); err != nil {
		t.Fatal(err)
	}
	select {
	case ok := <-seen:
		if !ok {
			t.Error("the tool's context holds no envelope with its params: HandleMessage decoded the line again")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the probe tool was not called")
	}
}

// envelopeSeeds are messages of every kind a transport meets, and the
// shapes item 23's scan must leave to json.Unmarshal.
var envelopeSeeds = []string{
	`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"}}}`,
	`{"jsonrpc":"2.0","id":"s-1","method":"tools/list"}`,
	`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
	`{"jsonrpc":"2.0","id":1,"result":{}}`,
	`{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"no"}}`,
	` { "jsonrpc" : "2.0" , "id" : -1.5e3 , "method" : "ping" , "params" : null } `,
	`{"jsonrpc":"2.0","id":null,"method":"ping","params":[1,true,false,null,"\u00e9\n"],"params":{}}`,
	`{"jsonrpc":"2.0","id":1,"Method":"ping"}`,
	`{"jsonrpc":"2.0","id":1,"method":"ping","method":5}`,
	`{"jsonrpc":"2.0","id":1,"method":5,"method":"ping"}`,
	`{"jsonrpc":"2.0","id":1e400,"id":2,"method":"ping"}`,
	`{"jsonrpc":"2.0","id":{"a":[1,2]},"method":"ping"}`,
	`{"jsonrpc":"2.0","id":"a\"b","method":"p\u0069ng"}`,
	"{\"jsonrpc\":\"2.0\",\"id\":\"\xff\",\"method\":\"ping\"}",
	`{"jsonrpc":2,"id":1,"method":"ping"}`,
	`{"jsonrpc":"2.0","id":1,"method":"ping","x":[[[[{"y":01}]]]]}`,
	`{"jsonrpc":"2.0","id":1,"method":"ping"} x`,
	`{"jsonrpc":"2.0","id":1,"method":"ping",}`,
	`[{"jsonrpc":"2.0","id":1,"method":"ping"}]`,
	`{}`, `{`, ``, `null`,
}

// FuzzToolgateEnvelope: item 23's scan gives every envelope json.Unmarshal
// gives (the transports' postEnvelope, HandleMessage's own, a handed-over
// version) and every id (decodeID), with json.Unmarshal's error, or
// whether there is one, where there is.
func FuzzToolgateEnvelope(f *testing.F) {
	for _, s := range envelopeSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var wantPost, gotPost postEnvelope
		errWant, errGot := json.Unmarshal(data, &wantPost), decodePostEnvelope(data, &gotPost)
		if !sameError(errGot, errWant) || errWant == nil && !reflect.DeepEqual(gotPost, wantPost) {
			t.Fatalf("post envelope of %q: %#v, %v; json.Unmarshal: %#v, %v", data, gotPost, errGot, wantPost, errWant)
		}
		if errWant == nil && len(wantPost.ID) > 0 { // the id, as HTTP and stdio decode it
			var want any
			errWant := json.Unmarshal(wantPost.ID, &want)
			if got, ok := decodeID(wantPost.ID); !reflect.DeepEqual(got, want) || ok != (errWant == nil) {
				t.Fatalf("id %s: %#v, %v; json.Unmarshal: %#v, %v", wantPost.ID, got, ok, want, errWant)
			}
		}
		if errWant == nil && len(wantPost.JSONRPC) > 0 { // HandleMessage reads the version of a handed-over envelope
			var got, want string
			var method mcp.MCPMethod
			var id any
			var hasResult bool
			errGot := (&decodedEnvelope{jsonrpc: wantPost.JSONRPC}).base(&got, &method, &id, &hasResult)
			if errWant := json.Unmarshal(wantPost.JSONRPC, &want); !sameError(errGot, errWant) || got != want {
				t.Fatalf("version %s: %q, %v; json.Unmarshal: %q, %v", wantPost.JSONRPC, got, errGot, want, errWant)
			}
		}

		var base struct {
			JSONRPC string        `json:"jsonrpc"`
			Method  mcp.MCPMethod `json:"method"`
			ID      any           `json:"id,omitempty"`
			Result  any           `json:"result,omitempty"`
			Params  paramsMember  `json:"params"`
		}
		errWant = json.Unmarshal(data, &base)
		var (
			jsonrpc string
			method  mcp.MCPMethod
			id      any
			params  paramsMember
		)
		if scanBaseMessage(data, &jsonrpc, &method, &id, &params) {
			if errWant != nil || base.Result != nil || jsonrpc != base.JSONRPC || method != base.Method ||
				!reflect.DeepEqual(id, base.ID) || !reflect.DeepEqual(params, base.Params) {
				t.Fatalf("base of %q: %q %q %#v %#v; json.Unmarshal: %#v, %v", data, jsonrpc, method, id, params, base, errWant)
			}
		} else if jsonrpc != "" || method != "" || id != nil || params.n != 0 {
			t.Fatalf("base of %q not scanned, yet set", data)
		}
	})
}

// sameError: both nil, or both errors worded alike.
func sameError(a, b error) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return a.Error() == b.Error()
}

// TestToolgateEnvelopeScanned: item 23's scan takes the messages it is
// for, and leaves to json.Unmarshal those it cannot read as json would.
func TestToolgateEnvelopeScanned(t *testing.T) {
	taken := func(m string) bool {
		e, ok := scanEnvelope([]byte(m))
		if !ok {
			return false
		}
		_, okMethod := e.methodString([]byte(m))
		_, okID := e.anyID([]byte(m))
		return okMethod && okID
	}
	for _, m := range append(envelopeSeeds[:7:7], `{}`) {
		if !taken(m) {
			t.Errorf("%s: left to json.Unmarshal", m)
		}
	}
	for _, m := range []string{
		`{"jsonrpc":"2.0","id":1,"Method":"ping"}`,                // json matches it in any case
		`{"jsonrpc":"2.0","id":1,"method":"ping","method":5}`,     // json decodes every one
		`{"jsonrpc":"2.0","id":1e400,"id":2,"method":"ping"}`,     // the first fails in json
		`{"jsonrpc":"2.0","id":{"a":[1,2]},"method":"ping"}`,      // an id json decodes into a map
		`{"jsonrpc":"2.0","id":"a\"b","method":"ping"}`,           // an escape to decode
		"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"p\xffng\"}",   // invalid UTF-8, replaced by json
		`{"jsonrpc":"2.0","id":1,"method":"ping","x":[{"y":01}]}`, // not JSON
		`{"jsonrpc":"2.0","id":1,"method":"ping"} x`,
		`{"jsonrpc":"2.0","id":1,"method":"ping",}`,
		`[{"jsonrpc":"2.0","id":1,"method":"ping"}]`,
		`{"a":` + strings.Repeat("[", jsonscan.MaxDepth+1) + strings.Repeat("]", jsonscan.MaxDepth+1) + `}`,
	} {
		if taken(m) {
			t.Errorf("%s: scanned; it is json.Unmarshal's to decode", m)
		}
	}
}

// paramsMetaFound are requests with and without a 2026-07-28 envelope, in
// which item 26's paramsMeta finds _meta; paramsMetaLeft the shapes it must
// leave to json.Unmarshal.
var paramsMetaFound = []string{
	`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"}}}`,
	`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"text":"io.modelcontextprotocol/protocolVersion"},` +
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"c","version":"1"},` +
		`"io.modelcontextprotocol/clientCapabilities":{"sampling":{}},"io.modelcontextprotocol/logLevel":"info"}}}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`,
	`{"jsonrpc":"2.0","id":1,"method":"ping","params":null}`,
	`{"jsonrpc":"2.0","id":1,"method":"ping","params":{"_meta":null,"io.modelcontextprotocol/protocolVersion":1}}`,
	`{"jsonrpc":"2.0","id":1,"method":"ping","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"1","io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`,
	`{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":[{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}]}}`,
	`{"jsonrpc":"2.0","id":1,"method":"ping","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","n":1e400}}}`,
	`{"jsonrpc":"2.0","id":1,"method":"ping","params":{"_meta":{"io.modelcontextprotocol\/protocolVersion":"2026-07-28"}}}`,
	`{"jsonrpc":"2.0","id":1,"method":"ping","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-2\u0038",` +
		`"io.modelcontextprotocol/clientCapabilities":{},"\u00e9":1,"io.modelcontextprotocol/logLevel":5,"io.modelcontextprotocol/clientInfo":null}}}`,
	`{"jsonrpc":"2.0","id":1,"method":"ping","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",` +
		`"io.modelcontextprotocol/clientCapabilities":null,"io.modelcontextprotocol/logLevel":"debug\n"}}}`,
	`{"jsonrpc":"2.0","id":1,"method":"ping","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",` +
		"\"io.modelcontextprotocol/clientCapabilities\":{},\"é\":1}}}",
	`{"jsonrpc":"2.0","id":1,"method":"ping","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","n":[true,false,-1.5E3,"e\"1",1` +
		strings.Repeat("0", 400) + `]}}}`,
	`{"jsonrpc":"2.0","id":1,"method":"ping","Params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`, // one params, as json counts
	`{"jsonrpc":"2.0","id":1,"method":"ping","params":{"_meta":5,"io.modelcontextprotocol/protocolVersion":1}}`,            // found, then not decoded, as by json
}

var paramsMetaLeft = []string{
	`{"jsonrpc":"2.0","id":1,"method":"ping","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"},"_meta":{"b":2}}}`,
	`{"jsonrpc":"2.0","id":1,"method":"ping","params":{"_META":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`,
	`{"jsonrpc":"2.0","id":1,"method":"ping","params":{"\u005fmeta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`,
	`{"jsonrpc":"2.0","id":1,"method":"ping","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}},"params":{"x":1}}`,
	`{"jsonrpc":"2.0","id":1,"method":"ping","params":[{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}]}`,
}

// TestToolgateParamsMetaFoundOnce: over HTTP the transport's look for a
// request's era finds where its envelope can be (item 26), and
// HandleMessage's look for the envelope takes what it found rather than
// passing over the message again: a copy of params whose bytes no longer
// hold _meta still gives the envelope, and a message found unable to spell
// the version is not looked at again.
func TestToolgateParamsMetaFoundOnce(t *testing.T) {
	// The era looked for in a message that cannot spell the version;
	// params (a modern request's) are then not looked at.
	modern := []byte(paramsMetaFound[1])
	var other struct {
		Params paramsMember `json:"params"`
	}
	if err := json.Unmarshal(modern, &other); err != nil {
		t.Fatal(err)
	}
	if era := detectRequestEra(http.Header{}, []byte(paramsMetaFound[0]), &other.Params); era.modern {
		t.Fatalf("era %+v, want 2025-11-25", era)
	}
	if info, err := protocolInfoOf(modern, other.Params); err != nil || info.Modern {
		t.Errorf("protocol info %+v, %v: the message was looked at again", info, err)
	}
	msg := []byte(paramsMetaFound[1])
	var base struct {
		Params paramsMember `json:"params"`
	}
	if err := json.Unmarshal(msg, &base); err != nil {
		t.Fatal(err)
	}
	if era := detectRequestEra(http.Header{}, msg, &base.Params); !era.modern {
		t.Fatalf("%s: era %+v, want 2026-07-28", msg, era)
	}
	params := base.Params
	params.raw = json.RawMessage(`{"name":"echo"}`)
	if info, err := protocolInfoOf(msg, params); err != nil || !info.Modern {
		t.Errorf("protocol info %+v, %v: params were scanned again", info, err)
	}
}

// FuzzToolgateParamsMeta: item 26 finds a request's _meta in its params
// as its envelope's decoding kept them; the era and the envelope found
// (extractRequestProtocolInfo, detectRequestEra) are those found by
// decoding the whole message, as before. A params member counted twice is
// what makes both decode the whole message.
func FuzzToolgateParamsMeta(f *testing.F) {
	for _, s := range append(slices.Clone(paramsMetaFound), paramsMetaLeft...) {
		f.Add([]byte(s))
	}
	wholeMessage := paramsMember{n: 2}
	header := http.Header{}
	f.Fuzz(func(t *testing.T, data []byte) {
		var base struct { // HandleMessage's and handlePost's envelope (item 23 gives the same: FuzzToolgateEnvelope)
			Params paramsMember `json:"params"`
		}
		if json.Unmarshal(data, &base) != nil {
			return // answered as a parse error before the era is looked for
		}
		want, errWant := protocolInfoByJSON(data)
		whole := wholeMessage
		// As stdio (params scanned by HandleMessage), as HTTP (the era
		// looked for first, the _meta it found kept for HandleMessage), and
		// with the whole message decoded instead.
		params := base.Params
		era := detectRequestEra(header, data, &params)
		for _, c := range []struct {
			how    string
			params paramsMember
		}{{"scanned", base.Params}, {"found by the era's look", params}, {"the whole message decoded", whole}} {
			if got, errGot := protocolInfoOf(data, c.params); !sameError(errGot, errWant) || !reflect.DeepEqual(got, want) {
				t.Fatalf("protocol info of %q, %s: %+v, %v; by json.Unmarshal: %+v, %v", data, c.how, got, errGot, want, errWant)
			}
		}
		if want := detectRequestEra(header, data, &whole); era != want {
			t.Fatalf("era of %q: %+v; decoding the whole message: %+v", data, era, want)
		}
	})
}

// protocolInfoOf is extractRequestProtocolInfo as it was before item 42:
// the information, or nil and the error.
func protocolInfoOf(message json.RawMessage, params paramsMember) (*RequestProtocolInfo, error) {
	info := new(RequestProtocolInfo)
	if err := extractRequestProtocolInfo(message, params, info); err != nil {
		return nil, err
	}
	return info, nil
}

// protocolInfoByJSON is extractRequestProtocolInfo as items 8 and 11 left
// it, the reference of item 26: the whole message decoded by
// json.Unmarshal, then each member of the envelope.
func protocolInfoByJSON(message []byte) (*RequestProtocolInfo, error) {
	if !mayHoldProtocolVersion(message) {
		return &RequestProtocolInfo{}, nil
	}
	var wrapper struct {
		Params struct {
			Meta map[string]json.RawMessage `json:"_meta"`
		} `json:"params"`
	}
	if json.Unmarshal(message, &wrapper) != nil {
		return &RequestProtocolInfo{}, nil
	}
	meta := wrapper.Params.Meta
	var info RequestProtocolInfo
	decode := func(key string, v any) bool {
		raw, ok := meta[key]
		return ok && json.Unmarshal(raw, v) == nil
	}
	if !decode(mcp.MetaKeyProtocolVersion, &info.ProtocolVersion) {
		info.ProtocolVersion = ""
	}
	if !mcp.IsModernProtocol(info.ProtocolVersion) {
		return &info, nil
	}
	info.Modern = true
	if !decode(mcp.MetaKeyClientInfo, &info.ClientInfo) {
		info.ClientInfo = nil
	}
	if !decode(mcp.MetaKeyLogLevel, &info.LogLevel) {
		info.LogLevel = ""
	}
	if !decode(mcp.MetaKeyClientCapabilities, &info.ClientCapabilities) || info.ClientCapabilities == nil {
		return nil, errors.New("missing or invalid _meta field " + mcp.MetaKeyClientCapabilities)
	}
	return &info, nil
}

// envelopeMemberSeeds are client infos and capabilities: those item 29
// scans, and shapes it must leave to json.Unmarshal.
var envelopeMemberSeeds = []string{
	`{"name":"e2eload","version":"1"}`,
	`{"name":"c","version":"1","title":"T","description":"d","websiteUrl":"https://x","other":[1,{"a":null}],"n":1e400}`,
	`{}`,
	`{"roots":{"listChanged":true},"sampling":{},"elicitation":{"form":{},"url":{}},"x":{"y":1e400}}`,
	`{"sampling":{"context":{"x":1},"tools":{}},"roots":{"listChanged":false,"other":1}}`,
	`{"experimental":{"a":{"b":[1,2,{}],"c":null}},"extensions":{"io.x":{}}}`,
	// json's
	`{"name":"a","name":"b"}`,
	`{"Name":"a"}`,
	`{"websiteURL":"x"}`,
	`{"name":"a\"b"}`,
	`{"name":null}`,
	`{"name":5}`,
	`null`,
	`"x"`,
	`{"icons":[{"src":"x"}]}`,
	`{"roots":{"listChanged":true},"roots":{}}`,
	`{"roots":{"listChanged":1}}`,
	`{"roots":null}`,
	`{"Roots":{}}`,
	`{"sampling":{"context":null}}`,
	`{"sampling":{"tools":[]}}`,
	`{"elicitation":{"FORM":{}}}`,
	`{"elicitation":{"form":{},"form":{}}}`,
	`{"tasks":{"list":{}}}`,
	`{"experimental":{"a":1},"experimental":{"b":2}}`,
	`{"experimental":{"n":1e400}}`,
	`{"experimental":null}`,
	`{"roots":{"listChanged":true}} x`,
}

// FuzzToolgateEnvelopeMembers: item 29 decodes a client's info and
// capabilities by a scan into what json.Unmarshal decodes them into, or
// leaves them to json.
func FuzzToolgateEnvelopeMembers(f *testing.F) {
	for _, s := range envelopeMemberSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if got, ok := scanImplementation(data); ok {
			var want *mcp.Implementation
			if err := json.Unmarshal(data, &want); err != nil || !reflect.DeepEqual(got, want) {
				t.Fatalf("client info %q scanned as %+v; json.Unmarshal: %+v, %v", data, got, want, err)
			}
		}
		if got, ok := scanClientCapabilities(data); ok {
			var want *mcp.ClientCapabilities
			if err := json.Unmarshal(data, &want); err != nil || !reflect.DeepEqual(got, want) {
				t.Fatalf("capabilities %q scanned as %+v; json.Unmarshal: %+v, %v", data, got, want, err)
			}
		}
	})
}

// TestToolgateEnvelopeMembersScanned: item 29 takes the client infos and
// capabilities it is for.
func TestToolgateEnvelopeMembersScanned(t *testing.T) {
	for _, s := range envelopeMemberSeeds[:6] {
		_, impl := scanImplementation([]byte(s))
		_, caps := scanClientCapabilities([]byte(s))
		if !impl && !caps {
			t.Errorf("%s: left to json.Unmarshal", s)
		}
	}
}

// TestToolgateParamsMetaFound: item 26 finds _meta in the params it can
// read as json would, and leaves the rest to json.Unmarshal.
func TestToolgateParamsMetaFound(t *testing.T) {
	for _, c := range []struct {
		messages []string
		found    bool
	}{{paramsMetaFound, true}, {paramsMetaLeft, false}} {
		for _, m := range c.messages {
			var base struct {
				Params paramsMember `json:"params"`
			}
			if err := json.Unmarshal([]byte(m), &base); err != nil {
				t.Fatalf("%s: %v", m, err)
			}
			if _, ok := paramsMeta(base.Params); ok != c.found {
				t.Errorf("%s: found %v, want %v", m, ok, c.found)
			}
		}
	}
}

// TestToolgateInflightRequests: a request in flight is cancelled by its
// client's notifications/cancelled naming its ID, and by nothing else: not
// another session's, not an ID of another JSON type (item 42), not one
// sent after it was answered; and the registry is left empty.
func TestToolgateInflightRequests(t *testing.T) {
	srv := NewMCPServer("t", "1")
	// The tool hands the test a channel and waits for it to be closed,
	// once the cancellations have been sent (HandleMessage cancels before
	// it returns), then says whether its context was cancelled.
	started := make(chan chan struct{})
	srv.AddTool(mcp.NewTool("wait"), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		release := make(chan struct{})
		started <- release
		<-release
		if ctx.Err() != nil {
			return mcp.NewToolResultText("cancelled"), nil
		}
		return mcp.NewToolResultText("not cancelled"), nil
	})
	ctxOf := func(session string) context.Context {
		return srv.WithContext(context.Background(), keySession(session))
	}
	cancel := func(session, id string) {
		if resp := srv.HandleMessage(ctxOf(session), []byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":`+id+`}}`)); resp != nil {
			t.Fatalf("cancellation answered: %+v", resp)
		}
	}
	for _, c := range []struct {
		name, id     string
		cancelledBy  [][2]string // session, requestId
		wantCanceled bool
	}{
		{"number", `7`, [][2]string{{"s-1", `7`}}, true},
		{"string", `"tg-7"`, [][2]string{{"s-1", `"tg-7"`}}, true},
		{"another session's", `7`, [][2]string{{"s-2", `7`}}, false},
		{"no session's", `7`, [][2]string{{"", `7`}}, false},
		{"the number as a string", `7`, [][2]string{{"s-1", `"7"`}}, false},
		{"the string as a number", `"7"`, [][2]string{{"s-1", `7`}}, false},
		{"another ID", `7`, [][2]string{{"s-1", `8`}}, false},
		{"7.0 is 7", `7`, [][2]string{{"s-1", `7.0`}}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			answered := make(chan mcp.JSONRPCMessage, 1)
			go func() {
				answered <- srv.HandleMessage(ctxOf("s-1"), []byte(`{"jsonrpc":"2.0","id":`+c.id+`,"method":"tools/call","params":{"name":"wait"}}`))
			}()
			release := <-started
			for _, by := range c.cancelledBy {
				cancel(by[0], by[1])
			}
			close(release)
			resp := <-answered
			text := resp.(mcp.JSONRPCResponse).Result.(*mcp.CallToolResult).Content[0].(mcp.TextContent).Text
			if got := text == "cancelled"; got != c.wantCanceled {
				t.Errorf("the tool says %q", text)
			}
			srv.inflight.mu.Lock()
			defer srv.inflight.mu.Unlock()
			if n := len(srv.inflight.m); n != 0 {
				t.Errorf("%d requests still registered once answered: %v", n, srv.inflight.m)
			}
		})
	}
}

// TestToolgateMessageContext: item 42's message context answers as
// v1.2.1's two context.WithValues did. A request hook sees the server and
// no protocol information yet; the tool sees the server, the request's
// protocol information (2026-07-28 over HTTP; the legacy era, with no
// version, over a plain context) and what the transport's context holds.
func TestToolgateMessageContext(t *testing.T) {
	type markKey struct{}
	type seen struct {
		server *MCPServer
		info   *RequestProtocolInfo
		mark   any
	}
	look := func(ctx context.Context) seen {
		return seen{ServerFromContext(ctx), RequestProtocolInfoFromContext(ctx), ctx.Value(markKey{})}
	}
	hookSaw, toolSaw := make(chan seen, 1), make(chan seen, 1)
	hooks := &Hooks{}
	hooks.AddOnRequestInitialization(func(ctx context.Context, _ any, _ any) error {
		hookSaw <- look(ctx)
		return nil
	})
	s := NewMCPServer("t", "1", WithHooks(hooks), WithToolCapabilities(false))
	s.AddTool(mcp.NewTool("look"), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		toolSaw <- look(ctx)
		return mcp.NewToolResultText("ok"), nil
	})
	mark := func(ctx context.Context) context.Context { return context.WithValue(ctx, markKey{}, "transport") }
	check := func(era string, wantInfo RequestProtocolInfo) {
		t.Helper()
		if h := <-hookSaw; h.server != s || h.info != nil || h.mark != "transport" {
			t.Errorf("%s: the hook saw server %p (want %p), protocol information %+v (want none yet), mark %v", era, h.server, s, h.info, h.mark)
		}
		if got := <-toolSaw; got.server != s || got.info == nil || !reflect.DeepEqual(*got.info, wantInfo) || got.mark != "transport" {
			t.Errorf("%s: the tool saw server %p (want %p), protocol information %+v (want %+v), mark %v", era, got.server, s, got.info, wantInfo, got.mark)
		}
	}

	s.HandleMessage(mark(context.Background()), []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"look"}}`))
	check("legacy", RequestProtocolInfo{})

	srv := httptest.NewServer(NewStreamableHTTPServer(s, WithHTTPContextFunc(func(ctx context.Context, _ *http.Request) context.Context { return mark(ctx) })))
	defer srv.Close()
	resp := postCall(t, srv.URL, "", "look")
	resp.Body.Close()
	check("2026-07-28", RequestProtocolInfo{Modern: true, ProtocolVersion: "2026-07-28", ClientCapabilities: &mcp.ClientCapabilities{}, LogLevel: "debug"})
}

// TestToolgateInflightKeys: every request ID, malformed ones included, is
// a comparable key, equal only to itself (a NaN, which no JSON decodes to,
// too); registering and unregistering a request costs no allocation once
// the map has grown (item 42). A request of no session, or of a session
// without an ID, has no key (item 43).
func TestToolgateInflightKeys(t *testing.T) {
	srv := NewMCPServer("t", "1")
	sctx := srv.WithContext(context.Background(), keySession("s-1"))
	key := func(id any) inflightKey {
		t.Helper()
		k, ok := newInflightKey(sctx, id)
		if !ok {
			t.Fatalf("no key for %#v in session s-1", id)
		}
		return k
	}
	for name, ctx := range map[string]context.Context{
		"no session":              context.Background(),
		"a session without an ID": srv.WithContext(context.Background(), keySession("")),
	} {
		if k, ok := newInflightKey(ctx, 1.0); ok {
			t.Errorf("%s: key %+v", name, k)
		}
	}

	ids := []any{"", "a", "7", 7.0, 0.0, math.Inf(1), math.NaN(), int64(5), json.Number("7"), nil, true,
		map[string]any{}, []any{1.0}}
	var r inflightRequests
	for _, id := range ids {
		if key(id) != key(id) {
			t.Errorf("the key of %#v differs from itself", id)
		}
		r.add(key(id), context.Background(), func() {})
	}
	// Apart from each other but for json.Number("7"), which is not a type
	// JSON decodes an ID to, and prints as the string "7".
	if len(r.m) != len(ids)-1 {
		t.Errorf("%d keys for %d IDs: %v", len(r.m), len(ids), r.m)
	}
	for _, id := range ids {
		r.cancel(key(id))
	}
	if len(r.m) != 0 {
		t.Errorf("left after cancelling each: %v", r.m)
	}
	// Two requests under one key (a client that reused an ID): the later
	// one is registered, and stays so when the earlier one ends.
	type nKey struct{}
	earlier, later := context.WithValue(context.Background(), nKey{}, 1), context.WithValue(context.Background(), nKey{}, 2)
	var cancelled []string
	k := key(1.0)
	r.add(k, earlier, func() { cancelled = append(cancelled, "earlier") })
	r.add(k, later, func() { cancelled = append(cancelled, "later") })
	r.remove(k, earlier)
	r.cancel(k)
	if !slices.Equal(cancelled, []string{"later"}) {
		t.Errorf("cancelled %v, want the later request", cancelled)
	}

	var id any = "tg-12"
	if n := testing.AllocsPerRun(100, func() {
		k, _ := newInflightKey(sctx, id)
		r.add(k, sctx, func() {})
		r.remove(k, sctx)
	}); n != 0 {
		t.Errorf("a request registered and unregistered: %v allocations, want none", n)
	}
}

// TestToolgateModernCancelStaysWithItsClient: on the 2026-07-28 HTTP wire
// a client's notifications/cancelled does not cancel another client's
// request with the ID it names (item 43; v1.2.1 cancelled it), and a
// client that closes its request's stream cancels it.
func TestToolgateModernCancelStaysWithItsClient(t *testing.T) {
	s := NewMCPServer("t", "1", WithToolCapabilities(false))
	started, ended := make(chan struct{}, 1), make(chan string, 1)
	release := make(chan struct{})
	s.AddTool(mcp.NewTool("wait"), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		started <- struct{}{}
		select {
		case <-ctx.Done():
			ended <- "cancelled"
		case <-release:
			ended <- "released"
		}
		return mcp.NewToolResultText("done"), nil
	})
	srv := httptest.NewServer(NewStreamableHTTPServer(s))
	defer srv.Close()

	body, header := toolCall("", "wait") // id 1
	reqCtx, closeStream := context.WithCancel(context.Background())
	defer closeStream()
	answered := make(chan error, 1)
	go func() {
		resp, err := http.DefaultClient.Do(mcpPost(reqCtx, srv.URL, body, header))
		if err == nil {
			_, err = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		answered <- err
	}()
	<-started

	h := http.Header{}
	h.Set("Mcp-Protocol-Version", "2026-07-28")
	h.Set("Mcp-Method", "notifications/cancelled")
	resp := postMCP(t, srv.URL, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1,`+
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`, h)
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("the other client's notification: %s", resp.Status)
	}
	closeStream() // the spec's cancellation on this wire
	if got := <-ended; got != "cancelled" {
		t.Fatalf("the tool was %s", got)
	}
	<-answered

	// The notification alone, then the call released: it ran to its end.
	go func() {
		resp := postCall(t, srv.URL, "", "wait")
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		answered <- nil
	}()
	<-started
	resp = postMCP(t, srv.URL, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1,`+
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`, h)
	resp.Body.Close()
	close(release)
	if got := <-ended; got != "released" {
		t.Errorf("another client's notifications/cancelled: the tool was %s, want it to run to its end", got)
	}
	<-answered
}

// TestToolgateSupportedVersionsOnce: the versions a streamable HTTP server
// advertises are the ones it filters, made once (item 34).
func TestToolgateSupportedVersionsOnce(t *testing.T) {
	for _, opts := range [][]StreamableHTTPOption{nil, {WithStreamableHTTPProtocolVersions(mcp.LATEST_PROTOCOL_VERSION)}} {
		s := NewStreamableHTTPServer(NewMCPServer("t", "1"), opts...)
		if got, want := s.supportedProtocolVersions(), FilterSupportedVersions(s); !slices.Equal(got, want) {
			t.Errorf("supportedProtocolVersions() = %v, want %v", got, want)
		}
		if n := testing.AllocsPerRun(100, func() { _ = s.supportedProtocolVersions() }); n != 0 {
			t.Errorf("supportedProtocolVersions: %v allocations per call, want none", n)
		}
	}
}

// keySession is a session that has an id and nothing else.
type keySession string

func (keySession) Initialize()                                         {}
func (keySession) Initialized() bool                                   { return true }
func (keySession) NotificationChannel() chan<- mcp.JSONRPCNotification { return nil }
func (s keySession) SessionID() string                                 { return string(s) }

// TestToolgateSessionStoresNone: a streamable HTTP session with no tools,
// resources or templates of its own gets nil from each store, without
// allocating; one that has some gets a copy of its own (item 35).
func TestToolgateSessionStoresNone(t *testing.T) {
	var ids atomic.Int64
	s := newStreamableHttpSession("s-1", newSessionToolsStore(), newSessionResourcesStore(),
		newSessionResourceTemplatesStore(), newSessionLogLevelsStore(), &ids)
	if s.GetSessionTools() != nil || s.GetSessionResources() != nil || s.GetSessionResourceTemplates() != nil {
		t.Fatal("a session with nothing of its own got a non-nil map")
	}
	if n := testing.AllocsPerRun(100, func() {
		_, _, _ = s.GetSessionTools(), s.GetSessionResources(), s.GetSessionResourceTemplates()
	}); n != 0 {
		t.Errorf("the stores' get for a session with none: %v allocations, want none", n)
	}

	s.SetSessionTools(map[string]ServerTool{"t": {Tool: mcp.NewTool("t")}})
	s.SetSessionResources(map[string]ServerResource{"r://x": {Resource: mcp.NewResource("r://x", "x")}})
	s.SetSessionResourceTemplates(map[string]ServerResourceTemplate{"r://{x}": {Template: mcp.NewResourceTemplate("r://{x}", "x")}})
	tools, res, tmpl := s.GetSessionTools(), s.GetSessionResources(), s.GetSessionResourceTemplates()
	if len(tools) != 1 || len(res) != 1 || len(tmpl) != 1 {
		t.Fatalf("got %d tools, %d resources, %d templates, want one each", len(tools), len(res), len(tmpl))
	}
	delete(tools, "t")
	delete(res, "r://x")
	delete(tmpl, "r://{x}")
	if len(s.GetSessionTools()) != 1 || len(s.GetSessionResources()) != 1 || len(s.GetSessionResourceTemplates()) != 1 {
		t.Error("changing what get returned changed the session's own")
	}

	// A session's own tool is still called through the server.
	srv := NewMCPServer("t", "1", WithToolCapabilities(true))
	called := false
	s.SetSessionTools(map[string]ServerTool{"mine": {Tool: mcp.NewTool("mine"), Handler: func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		called = true
		return mcp.NewToolResultText("ok"), nil
	}}})
	s.Initialize()
	ctx := srv.WithContext(context.Background(), s)
	resp := srv.HandleMessage(ctx, []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"mine"}}`))
	if _, ok := resp.(mcp.JSONRPCResponse); !ok || !called {
		t.Errorf("tools/call of the session's own tool: %#v (called %v)", resp, called)
	}
}

// unreadBody is a ReadBody that must not be read: its bytes are given,
// and a Read fails.
type unreadBody struct{ b []byte }

func (u *unreadBody) Read([]byte) (int, error) {
	return 0, errors.New("read, where its bytes were given")
}
func (u *unreadBody) Close() error      { return nil }
func (u *unreadBody) BodyBytes() []byte { return u.b }

// TestToolgateReadBodyTaken: item 38: a body a handler in front has
// already read (ReadBody) is taken as its bytes, not read again; any
// other body is read as before.
func TestToolgateReadBodyTaken(t *testing.T) {
	for _, c := range []struct {
		name string
		body io.ReadCloser
	}{
		{"read already", &unreadBody{[]byte(probeCall)}},
		{"to read", io.NopCloser(strings.NewReader(probeCall))},
	} {
		s, seen := envelopeSeen()
		r := httptest.NewRequest(http.MethodPost, "http://127.0.0.1/mcp", nil)
		r.Body = c.body
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Accept", "application/json, text/event-stream")
		r.Header.Set("Mcp-Protocol-Version", "2025-11-25")
		w := httptest.NewRecorder()
		NewStreamableHTTPServer(s, WithStateLess(true)).ServeHTTP(w, r)
		select {
		case <-seen:
		default:
			t.Errorf("%s: the probe tool was not called: %d %s", c.name, w.Code, w.Body)
		}
	}
}

type admittedKey struct{}

// Item 39: the context the call-time filter returns is the one the tool's
// handler gets, through the handler middlewares; a tool it does not admit
// is not found, as before.
func TestToolgateToolCallFilterContext(t *testing.T) {
	s := NewMCPServer("probe", "1", WithRecovery(),
		WithToolCallFilter(func(ctx context.Context, name string) (context.Context, bool) {
			return context.WithValue(ctx, admittedKey{}, name), name == "probe"
		}))
	var got atomic.Value
	handler := func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		got.Store(fmt.Sprint(ctx.Value(admittedKey{})))
		return mcp.NewToolResultText("ok"), nil
	}
	s.AddTool(mcp.NewTool("probe"), handler)
	s.AddTool(mcp.NewTool("hidden"), handler)
	call := func(name string) string {
		out, _ := json.Marshal(s.HandleMessage(context.Background(), json.RawMessage(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"`+name+`"}}`)))
		return string(out)
	}
	if out := call("probe"); !strings.Contains(out, `"ok"`) {
		t.Fatalf("probe: %s", out)
	}
	if v, _ := got.Load().(string); v != "probe" {
		t.Errorf("the handler's context carries %q, want the filter's value %q", v, "probe")
	}
	if out := call("hidden"); !strings.Contains(out, "not found") {
		t.Errorf("hidden: %s, want not found", out)
	}
}

// TestToolgatePanickingPostLeavesNoForwarder (item 44): a POST whose
// handling panics (a resource handler: WithRecovery covers tool handlers
// only) leaves no forwarder on its session, and the session's next call
// gets the notification its handler sends.
func TestToolgatePanickingPostLeavesNoForwarder(t *testing.T) {
	s := NewMCPServer("t", "1", WithResourceCapabilities(false, false), WithRecovery())
	s.AddResource(mcp.NewResource("file:///boom", "boom"), func(context.Context, mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
		panic("boom")
	})
	s.AddTool(mcp.NewTool("notify"), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		_ = ServerFromContext(ctx).SendNotificationToClient(ctx, "notifications/message", map[string]any{"level": "info", "data": "hi"})
		return mcp.NewToolResultText("ok"), nil
	})
	h := NewStreamableHTTPServer(s, WithStateful(true))
	ts := httptest.NewServer(h)
	defer ts.Close()
	for i := range 10 {
		sid := initializeSession(t, h)
		header := http.Header{"Mcp-Session-Id": {sid}, "Mcp-Protocol-Version": {"2025-11-25"}}
		resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(mcpPost(context.Background(), ts.URL,
			`{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"file:///boom"}}`, header))
		if err == nil {
			resp.Body.Close()
			t.Fatalf("session %d: the panicking request was answered %d", i, resp.StatusCode)
		}
		v, _ := s.sessions.Load(sid)
		sess := v.(*streamableHttpSession)
		sess.fwdMu.Lock()
		left := len(sess.fwds)
		sess.fwdMu.Unlock()
		if left != 0 {
			t.Fatalf("session %d: %d forwarders left by the panicking request", i, left)
		}
		resp = postMCP(t, ts.URL, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"notify"}}`, header)
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !strings.Contains(string(body), "notifications/message") {
			t.Fatalf("session %d: the call's notification was lost: %s", i, body)
		}
	}
}

// TestToolgateToolCallPoolKeepsACallHandedAtTheEnd (item 45): a call
// handed to an idle worker as the context ends (the input's end, say) is
// not dropped: the worker returns it, or it stays queued (as calls queued
// at the end always did). Before, the worker woken by the end returned
// nothing and the call sat in its inbox, never answered.
func TestToolgateToolCallPoolKeepsACallHandedAtTheEnd(t *testing.T) {
	for round := range 200 {
		p := &toolCallPool{limit: 10}
		ctx, cancel := context.WithCancel(context.Background())
		inbox := make(chan *toolCallWork, 1)
		got := make(chan *toolCallWork, 1)
		go func() { got <- p.next(ctx, inbox) }()
		for idle := 0; idle == 0; {
			p.mu.Lock()
			idle = len(p.idle)
			p.mu.Unlock()
			if idle == 0 {
				time.Sleep(10 * time.Microsecond)
			}
		}
		cancel() // wakes the worker for the end...
		w := &toolCallWork{}
		if !p.submit(w) { // ...as the call is handed over
			t.Fatalf("round %d: the pool refused the call", round)
		}
		r := <-got
		p.mu.Lock()
		queued := slices.Contains(p.queue, w)
		p.mu.Unlock()
		if r != w && !queued {
			t.Fatalf("round %d: the call handed as the context ended was dropped", round)
		}
	}
}

// TestToolgateStdioMessageBound (item 46): a line over the bound is
// skipped as it is read (never held) and answered with an Invalid Request
// error of id null; the lines around it, one exactly at the bound among
// them, are served.
func TestToolgateStdioMessageBound(t *testing.T) {
	r := bufio.NewReaderSize(strings.NewReader("abc\n"+strings.Repeat("x", 10)+"\n"+strings.Repeat("y", 5000)+"\nlast"), 16)
	for _, want := range []struct {
		line string
		over int
		err  error
	}{{"abc\n", 0, nil}, {strings.Repeat("x", 10) + "\n", 0, nil}, {"", 5000, nil}, {"last", 0, io.EOF}} {
		line, over, err := readLine(r, 10)
		if line != want.line || over != want.over || err != want.err {
			t.Fatalf("readLine = %q %d %v, want %q %d %v", line, over, err, want.line, want.over, want.err)
		}
	}
	// A line longer than the reader's buffer, within the bound, comes
	// whole; one byte more is over.
	long := strings.Repeat("l", 40)
	r = bufio.NewReaderSize(strings.NewReader(long+"\n"+long+"l\n"), 16)
	if line, over, err := readLine(r, 40); line != long+"\n" || over != 0 || err != nil {
		t.Fatalf("a 40-byte line with a bound of 40: %q %d %v", line, over, err)
	}
	if line, over, err := readLine(r, 40); line != "" || over != 41 || err != nil {
		t.Fatalf("a 41-byte line with a bound of 40: %q %d %v", line, over, err)
	}

	s := NewMCPServer("t", "1")
	stdio := NewStdioServer(s)
	WithMaxMessageBytes(200)(stdio)
	in := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}` + "\n" +
		`{"jsonrpc":"2.0","id":2,"method":"ping","params":{"pad":"` + strings.Repeat("z", 100000) + `"}}` + "\n" +
		`{"jsonrpc":"2.0","id":3,"method":"ping"}` + "\n"
	var out strings.Builder
	if err := stdio.Listen(context.Background(), strings.NewReader(in), &out); err != nil {
		t.Fatal(err)
	}
	got := strings.Split(strings.TrimSpace(out.String()), "\n")
	slices.Sort(got) // initialize is answered on its own goroutine
	want := []string{
		`{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"t","version":"1"}}}`,
		`{"jsonrpc":"2.0","id":3,"result":{}}`,
		`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request: a message of ` + strconv.Itoa(len(`{"jsonrpc":"2.0","id":2,"method":"ping","params":{"pad":""}}`)+100000) + ` bytes is over the limit of 200 bytes; it was skipped"}}`,
	}
	if !slices.Equal(got, want) {
		t.Fatalf("answers:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestToolgateSSEUnbuffered (item 47): every SSE answer says
// X-Accel-Buffering: no (the 2026-07-28 transport's SHOULD), so that a
// proxy such as nginx passes each event on as it comes: a GET stream, and
// a POST's answer that became a stream.
func TestToolgateSSEUnbuffered(t *testing.T) {
	s := NewMCPServer("t", "1", WithToolCapabilities(false))
	s.AddTool(mcp.NewTool("notify"), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		_ = ServerFromContext(ctx).SendNotificationToClient(ctx, "notifications/message", map[string]any{"level": "info", "data": "hi"})
		return mcp.NewToolResultText("ok"), nil
	})
	h := NewStreamableHTTPServer(s, WithStateful(true))
	ts := httptest.NewServer(h)
	defer ts.Close()
	sid := initializeSession(t, h)
	header := http.Header{"Mcp-Session-Id": {sid}, "Mcp-Protocol-Version": {"2025-11-25"}}

	resp := postMCP(t, ts.URL, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"notify"}}`, header)
	resp.Body.Close()
	if ct, xa := resp.Header.Get("Content-Type"), resp.Header.Get("X-Accel-Buffering"); ct != "text/event-stream" || xa != "no" {
		t.Errorf("a POST answered as a stream: Content-Type %q, X-Accel-Buffering %q", ct, xa)
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	get, _ := http.NewRequestWithContext(ctx, http.MethodGet, ts.URL, nil)
	get.Header = header.Clone()
	get.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(get)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct, xa := resp.Header.Get("Content-Type"), resp.Header.Get("X-Accel-Buffering"); ct != "text/event-stream" || xa != "no" {
		t.Errorf("a GET stream: Content-Type %q, X-Accel-Buffering %q", ct, xa)
	}
}

// TestToolgateInvalidRequestIsNotAParseError (item 51): JSON that is not a
// JSON-RPC message object gets -32600 Invalid Request saying what was
// wrong, with its id when the id could be read, over stdio, over HTTP and
// from HandleMessage; bytes that are not JSON keep -32700, id null and
// each transport's wording.
func TestToolgateInvalidRequestIsNotAParseError(t *testing.T) {
	type message struct {
		msg, id, err string
		status       int // over HTTP, in a 2025-11-25 session
	}
	cases := []message{
		{`42`, `null`, `{"code":-32600,"message":"Invalid Request: a JSON-RPC message is a JSON object, not a number"}`, 400},
		{`[{"jsonrpc":"2.0","id":1,"method":"ping"}]`, `null`, `{"code":-32600,"message":"Invalid Request: a JSON-RPC message is a JSON object, not an array"}`, 400},
		{`"ping"`, `null`, `{"code":-32600,"message":"Invalid Request: a JSON-RPC message is a JSON object, not a string"}`, 400},
		{`{"jsonrpc":"2.0","id":"a","method":5}`, `"a"`, `{"code":-32600,"message":"Invalid Request: member \"method\" must be a string, not a number"}`, 400},
		// The envelope decodes; HandleMessage refuses it as it refuses
		// "jsonrpc":"1.0", with the transport's 200.
		{`{"jsonrpc":2,"id":7,"method":"ping"}`, `7`, `{"code":-32600,"message":"Invalid Request: member \"jsonrpc\" must be a string, not a number"}`, 200},
	}
	notJSON := message{`{"jsonrpc":"2.0","id":8,`, `null`, `{"code":-32700,"message":"Failed to parse message"}`, 400}
	answer := func(m message) string { return `{"jsonrpc":"2.0","id":` + m.id + `,"error":` + m.err + `}` }
	s := NewMCPServer("t", "1")

	// HandleMessage, as any transport calls it.
	for _, c := range append(cases, notJSON) {
		got, err := json.Marshal(s.HandleMessage(context.Background(), json.RawMessage(c.msg)))
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != answer(c) {
			t.Errorf("HandleMessage(%s):\n got %s\nwant %s", c.msg, got, answer(c))
		}
	}

	// stdio: each line answered, the session going on.
	var in strings.Builder
	var want []string
	for _, c := range cases {
		in.WriteString(c.msg + "\n")
		want = append(want, answer(c))
	}
	in.WriteString(notJSON.msg + "\n" + `{"jsonrpc":"2.0","id":9,"method":"ping"}` + "\n")
	want = append(want, `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}`, `{"jsonrpc":"2.0","id":9,"result":{}}`)
	var out strings.Builder
	if err := NewStdioServer(s).Listen(context.Background(), strings.NewReader(in.String()), &out); err != nil {
		t.Fatal(err)
	}
	got := strings.Split(strings.TrimSpace(out.String()), "\n")
	slices.Sort(got) // requests with an id are answered on their own goroutines
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("over stdio:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	// HTTP, in a 2025-11-25 session.
	h := NewStreamableHTTPServer(s)
	srv := httptest.NewServer(h)
	defer srv.Close()
	header := http.Header{}
	header.Set("Mcp-Session-Id", initializeSession(t, h))
	header.Set("Mcp-Protocol-Version", "2025-11-25")
	notJSON.err = `{"code":-32700,"message":"request body is not valid json"}`
	for _, c := range append(cases, notJSON) {
		resp := postMCP(t, srv.URL, c.msg, header)
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != c.status || strings.TrimSpace(string(body)) != answer(c) {
			t.Errorf("POST %s: %d %s\nwant %d %s", c.msg, resp.StatusCode, body, c.status, answer(c))
		}
	}
}

// toolgateCodedErr is a handler error that names its JSON-RPC code and data.
type toolgateCodedErr struct{}

func (toolgateCodedErr) Error() string    { return "no such argument" }
func (toolgateCodedErr) JSONRPCCode() int { return mcp.INVALID_PARAMS }
func (toolgateCodedErr) JSONRPCData() any { return map[string]any{"argument": "zzz"} }

type toolgateRefusingCompleter struct{}

func (toolgateRefusingCompleter) CompletePromptArgument(context.Context, string, mcp.CompleteArgument, mcp.CompleteContext) (*mcp.Completion, error) {
	return nil, fmt.Errorf("wrapped: %w", toolgateCodedErr{})
}

func (toolgateRefusingCompleter) CompleteResourceArgument(context.Context, string, mcp.CompleteArgument, mcp.CompleteContext) (*mcp.Completion, error) {
	return nil, errors.New("plain failure")
}

// TestToolgateCompletionErrorCode: item 53. A completion provider's error
// that implements CodedError is answered with its code and data, as item 1
// does for the other handlers (v1.2.1 answered every one -32603); a plain
// error stays -32603.
func TestToolgateCompletionErrorCode(t *testing.T) {
	s := NewMCPServer("t", "1", WithCompletions(),
		WithPromptCompletionProvider(toolgateRefusingCompleter{}), WithResourceCompletionProvider(toolgateRefusingCompleter{}))
	for _, c := range []struct {
		ref, want string
	}{
		{`{"type":"ref/prompt","name":"p"}`, `{"code":-32602,"message":"wrapped: no such argument","data":{"argument":"zzz"}}`},
		{`{"type":"ref/resource","uri":"x://{y}"}`, `{"code":-32603,"message":"plain failure"}`},
	} {
		resp := s.HandleMessage(context.Background(), json.RawMessage(`{"jsonrpc":"2.0","id":1,"method":"completion/complete","params":{"ref":`+c.ref+`,"argument":{"name":"a","value":""}}}`))
		b, _ := json.Marshal(resp)
		var got struct {
			Error json.RawMessage `json:"error"`
		}
		_ = json.Unmarshal(b, &got)
		if string(got.Error) != c.want {
			t.Errorf("%s: error %s, want %s", c.ref, got.Error, c.want)
		}
	}
}

// TestToolgateHookErrorCode: item 87. A request-initialization hook's
// error that implements CodedError is answered with its code and data, as
// item 1 does for handlers (v1.2.1 answered every hook error -32600); a
// plain error stays -32600.
func TestToolgateHookErrorCode(t *testing.T) {
	hooks := &Hooks{}
	hooks.AddOnRequestInitialization(func(_ context.Context, _ any, message any) error {
		raw, _ := message.(json.RawMessage)
		switch {
		case strings.Contains(string(raw), `"coded"`):
			return fmt.Errorf("wrapped: %w", toolgateCodedErr{})
		case strings.Contains(string(raw), `"plain"`):
			return errors.New("plain refusal")
		}
		return nil
	})
	s := NewMCPServer("t", "1", WithHooks(hooks), WithToolCapabilities(false))
	for _, c := range []struct{ tool, want string }{
		{"coded", `{"code":-32602,"message":"wrapped: no such argument","data":{"argument":"zzz"}}`},
		{"plain", `{"code":-32600,"message":"plain refusal"}`},
	} {
		resp := s.HandleMessage(context.Background(), json.RawMessage(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"`+c.tool+`"}}`))
		b, _ := json.Marshal(resp)
		var got struct {
			Error json.RawMessage `json:"error"`
		}
		_ = json.Unmarshal(b, &got)
		if string(got.Error) != c.want {
			t.Errorf("%s: error %s, want %s", c.tool, got.Error, c.want)
		}
	}
}

// TestToolgateRequestWithoutMethod: item 89. A message with an id and
// neither a method nor a result is refused -32600 with the same id, not
// answered "Method  not found"; a response (a result) is still not
// answered.
func TestToolgateRequestWithoutMethod(t *testing.T) {
	s := NewMCPServer("t", "1")
	resp := s.HandleMessage(context.Background(), json.RawMessage(`{"jsonrpc":"2.0","id":4}`))
	b, _ := json.Marshal(resp)
	var got struct {
		ID    any `json:"id"`
		Error struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(b, &got); err != nil || got.ID != float64(4) || got.Error.Code != mcp.INVALID_REQUEST || !strings.Contains(got.Error.Message, `needs a "method"`) {
		t.Errorf("a request without a method: %s", b)
	}
	if resp := s.HandleMessage(context.Background(), json.RawMessage(`{"jsonrpc":"2.0","id":5,"result":{}}`)); resp != nil {
		t.Errorf("a response was answered: %+v", resp)
	}
}

// TestToolgateToolNotFound: item 88. With WithToolNotFound, a tools/call
// of a tool the server has not got, or filters out, answers -32602
// "tool 'x' not found" and the option's text (not v1.2.1's "tool 'x' not
// found: tool not found"), and the error hooks still see ErrToolNotFound;
// without it, the message is v1.2.1's.
func TestToolgateToolNotFound(t *testing.T) {
	for _, c := range []struct {
		name string
		opt  bool
		tool string
		want string
	}{
		{"missing", true, "nope", "tool 'nope' not found; try 'near'"},
		{"filtered out", true, "hidden", "tool 'hidden' not found; try 'near'"},
		{"without the option", false, "nope", "tool 'nope' not found: tool not found"},
	} {
		var hooked error
		hooks := &Hooks{}
		hooks.AddOnError(func(_ context.Context, _ any, _ mcp.MCPMethod, _ any, err error) { hooked = err })
		opts := []ServerOption{WithHooks(hooks), WithToolCapabilities(false),
			WithToolCallFilter(func(ctx context.Context, name string) (context.Context, bool) { return ctx, name != "hidden" })}
		if c.opt {
			opts = append(opts, WithToolNotFound(func(_ context.Context, name string) string { return "; try 'near'" }))
		}
		s := NewMCPServer("t", "1", opts...)
		s.AddTool(mcp.NewTool("hidden"), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText("reached"), nil
		})
		resp := s.HandleMessage(context.Background(), json.RawMessage(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"`+c.tool+`"}}`))
		b, _ := json.Marshal(resp)
		var got struct {
			Error struct {
				Code    int    `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		_ = json.Unmarshal(b, &got)
		if got.Error.Code != mcp.INVALID_PARAMS || got.Error.Message != c.want {
			t.Errorf("%s: %s, want -32602 %q", c.name, b, c.want)
		}
		if !errors.Is(hooked, ErrToolNotFound) {
			t.Errorf("%s: the error hook got %v, want ErrToolNotFound", c.name, hooked)
		}
		var nf *ToolNotFoundError
		if found := errors.As(hooked, &nf); found != c.opt || found && (nf.Name != c.tool || nf.Detail != "; try 'near'") {
			t.Errorf("%s: the error hook's ToolNotFoundError %+v (found %v)", c.name, nf, found)
		}
	}
}

// newWaitTaskServer is a server of tasks with one tool, "wait", that may
// be called as a task and returns once release is closed.
func newWaitTaskServer() (s *MCPServer, release chan struct{}) {
	s = NewMCPServer("t", "1", WithToolCapabilities(false), WithTaskCapabilities(true, true, true))
	release = make(chan struct{})
	s.AddTool(mcp.NewTool("wait", mcp.WithTaskSupport(mcp.TaskSupportOptional)), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		<-release
		return mcp.NewToolResultText("done"), nil
	})
	return s, release
}

// startWaitTask calls "wait" as a task in the session of ctx and returns
// the id of the task the answer names.
func startWaitTask(t *testing.T, s *MCPServer, ctx context.Context) string {
	t.Helper()
	resp := s.HandleMessage(ctx, json.RawMessage(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"wait","task":{"ttl":60000}}}`))
	raw, _ := json.Marshal(resp)
	var cr struct {
		Result struct {
			Task struct {
				TaskID string `json:"taskId"`
			} `json:"task"`
		} `json:"result"`
	}
	if err := json.Unmarshal(raw, &cr); err != nil || cr.Result.Task.TaskID == "" {
		t.Fatalf("task call answered %s", raw)
	}
	return cr.Result.Task.TaskID
}

// TestToolgateTaskStatusToItsSessionOnly: notifications/tasks/status goes
// to the session that owns the task, never to the other clients (item 54).
func TestToolgateTaskStatusToItsSessionOnly(t *testing.T) {
	s, release := newWaitTaskServer()
	owner, other := NewInProcessSession("owner", nil), NewInProcessSession("other", nil)
	for _, sess := range []*InProcessSession{owner, other} {
		if err := s.RegisterSession(context.Background(), sess); err != nil {
			t.Fatal(err)
		}
		sess.Initialize()
	}
	ctx := s.WithContext(context.Background(), owner)
	startWaitTask(t, s, ctx)
	close(release)
	select {
	case n := <-owner.ClientNotifications():
		if n.Method != string(mcp.MethodNotificationTasksStatus) {
			t.Fatalf("owner got %s", n.Method)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the owner was not told its task ended")
	}
	select {
	case n := <-other.ClientNotifications():
		b, _ := json.Marshal(n)
		t.Fatalf("another session was told of the task: %s", b)
	case <-time.After(100 * time.Millisecond):
	}
}

// TestToolgateTasksKeptBounded (item 55): the tasks kept at once are
// bounded, the oldest ended ones dropped (as expired) for new ones, running
// ones never; and a task's TTL is a timer, not a goroutine asleep for it.
func TestToolgateTasksKeptBounded(t *testing.T) {
	s := NewMCPServer("t", "1", WithTaskCapabilities(true, true, true))
	ctx := context.Background()
	ttl := int64(time.Hour / time.Millisecond)
	before := runtime.NumGoroutine()
	running, err := s.createTask(ctx, "running", "tool", &ttl, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range maxKeptTasks + 10 {
		e, err := s.createTask(ctx, fmt.Sprintf("t%05d", i), "tool", &ttl, nil)
		if err != nil {
			t.Fatal(err)
		}
		s.completeTask(e, &mcp.CallToolResult{}, nil)
	}
	if g := runtime.NumGoroutine() - before; g > 100 {
		t.Errorf("%d more goroutines for %d tasks with a TTL", g, maxKeptTasks+11)
	}
	s.tasksMu.RLock()
	n := len(s.tasks)
	_, keptRunning := s.tasks[running.task.TaskId]
	s.tasksMu.RUnlock()
	if n > maxKeptTasks {
		t.Errorf("%d tasks kept, want at most %d", n, maxKeptTasks)
	}
	if !keptRunning {
		t.Error("a running task was dropped")
	}
	if _, _, err := s.getTask(ctx, "t00000"); err == nil || !strings.Contains(err.Error(), "expired") {
		t.Errorf("the oldest ended task: %v, want expired", err)
	}
	if _, _, err := s.getTask(ctx, fmt.Sprintf("t%05d", maxKeptTasks+9)); err != nil {
		t.Errorf("the newest task: %v", err)
	}
	s.completeTask(running, &mcp.CallToolResult{}, nil)
}

// TestToolgateEndedSessionEndsItsStreams (item 56): a session's GET stream
// ends when the session does (a DELETE, the idle sweeper): v1.2.1 kept it
// open, pinging, for as long as the client held it, for a session that no
// longer existed.
func TestToolgateEndedSessionEndsItsStreams(t *testing.T) {
	s := NewMCPServer("t", "1")
	h := NewStreamableHTTPServer(s, WithStateful(true), WithHeartbeatInterval(50*time.Millisecond))
	ts := httptest.NewServer(h)
	defer ts.Close()
	sid := initializeSession(t, h)
	header := http.Header{"Mcp-Session-Id": {sid}, "Mcp-Protocol-Version": {"2025-11-25"}}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	get, _ := http.NewRequestWithContext(ctx, http.MethodGet, ts.URL, nil)
	get.Header = header.Clone()
	get.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(get)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	ended := make(chan error, 1)
	go func() { _, err := io.Copy(io.Discard, resp.Body); ended <- err }()

	del, _ := http.NewRequest(http.MethodDelete, ts.URL, nil)
	del.Header = header.Clone()
	dresp, err := http.DefaultClient.Do(del)
	if err != nil {
		t.Fatal(err)
	}
	dresp.Body.Close()
	if dresp.StatusCode != http.StatusOK {
		t.Fatalf("DELETE: %d", dresp.StatusCode)
	}
	select {
	case err := <-ended:
		if err != nil {
			t.Errorf("the GET stream ended with %v, want its clean end", err)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("the GET stream of a deleted session is still open 2 s after the DELETE")
	}
}

// TestToolgateStalledStreamEndsWithItsSession (item 57): a GET stream whose
// client stopped reading ends when its session does, though its handler
// is stuck writing to the full connection: v1.2.1's write blocked for as
// long as the client kept the connection open, and the stream with it.
func TestToolgateStalledStreamEndsWithItsSession(t *testing.T) {
	s := NewMCPServer("t", "1")
	h := NewStreamableHTTPServer(s, WithStateful(true))
	var getsRunning atomic.Int64
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			getsRunning.Add(1)
			defer getsRunning.Add(-1)
		}
		h.ServeHTTP(w, r)
	}))
	defer ts.Close()
	sid := initializeSession(t, h)
	header := http.Header{"Mcp-Session-Id": {sid}, "Mcp-Protocol-Version": {"2025-11-25"}}
	postMCP(t, ts.URL, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, header).Body.Close()

	// A client that opens the stream and never reads it.
	conn, err := net.Dial("tcp", ts.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\nMcp-Session-Id: %s\r\nMcp-Protocol-Version: 2025-11-25\r\n\r\n", sid)
	for deadline := time.Now().Add(5 * time.Second); getsRunning.Load() == 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the GET never reached the handler")
		}
	}
	// Fill the connection until the session's queue backs up: the
	// stream's writer is then stuck.
	pad := strings.Repeat("x", 64<<10)
	blocked := 0
	for i := 0; blocked < 200 && i < 100000; i++ {
		if err := s.SendNotificationToSpecificClient(sid, "notifications/message", map[string]any{"level": "info", "data": pad}); err != nil {
			blocked++
			time.Sleep(time.Millisecond)
		}
	}
	if blocked < 200 {
		t.Fatal("the stream never backed up")
	}

	del, _ := http.NewRequest(http.MethodDelete, ts.URL, nil)
	del.Header = header.Clone()
	dresp, err := http.DefaultClient.Do(del)
	if err != nil {
		t.Fatal(err)
	}
	dresp.Body.Close()
	for deadline := time.Now().Add(3 * time.Second); getsRunning.Load() != 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the stalled GET stream of a deleted session is still being served 3 s after the DELETE")
		}
	}
}

// TestToolgateStdioRequestsBounded (item 58): a client that sends requests
// without reading the answers is held back once a bounded number of them
// are being answered: the reader stops reading, and the goroutines (and
// the answers they hold) stay bounded, instead of growing with every line
// read.
func TestToolgateStdioRequestsBounded(t *testing.T) {
	s := NewMCPServer("t", "1")
	stdio := NewStdioServer(s)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe() // never read until the end
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- stdio.Listen(ctx, inR, outW) }()
	before := runtime.NumGoroutine()
	const n = 20000
	wrote := make(chan int, 1)
	go func() {
		i := 0
		for ; i < n; i++ {
			if _, err := fmt.Fprintf(inW, `{"jsonrpc":"2.0","id":%d,"method":"ping"}`+"\n", i); err != nil {
				break
			}
		}
		wrote <- i
	}()
	select {
	case <-wrote:
	case <-time.After(3 * time.Second):
	}
	got := runtime.NumGoroutine() - before
	// The end: drain the answers so that everything returns.
	go io.Copy(io.Discard, outR)
	cancel()
	inW.Close()
	<-done
	if got > 2*stdioMaxRequestsInFlight {
		t.Fatalf("%d goroutines for %d unread pings, want at most about %d", got, n, stdioMaxRequestsInFlight)
	}
}

// TestToolgateStdioResponseIsNeverAnswered (item 59): a response from the
// client that answers no request pending (an error response, or a late one
// whose request gave up waiting) is dropped, never answered: an answer
// would carry the id of one of the client's own requests.
func TestToolgateStdioResponseIsNeverAnswered(t *testing.T) {
	s := NewMCPServer("t", "1")
	stdio := NewStdioServer(s)
	in := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}` + "\n" +
		`{"jsonrpc":"2.0","id":7,"error":{"code":-32601,"message":"no roots here"}}` + "\n" +
		`{"jsonrpc":"2.0","id":8,"result":null}` + "\n" +
		`{"jsonrpc":"2.0","id":"s-1","error":{"code":-1,"message":"declined"}}` + "\n" +
		`{"jsonrpc":"2.0","id":9,"method":"ping"}` + "\n"
	var out strings.Builder
	if err := stdio.Listen(context.Background(), strings.NewReader(in), &out); err != nil {
		t.Fatal(err)
	}
	got := strings.Split(strings.TrimSpace(out.String()), "\n")
	slices.Sort(got)
	want := []string{
		`{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"t","version":"1"}}}`,
		`{"jsonrpc":"2.0","id":9,"result":{}}`,
	}
	if !slices.Equal(got, want) {
		t.Fatalf("answers:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestToolgateUnknownTaskNamed (item 90): tasks/get of a task the server
// does not know, or one of another session, is -32602 naming the ID asked.
func TestToolgateUnknownTaskNamed(t *testing.T) {
	s, release := newWaitTaskServer()
	defer close(release)
	owner, other := NewInProcessSession("owner", nil), NewInProcessSession("other", nil)
	for _, sess := range []*InProcessSession{owner, other} {
		if err := s.RegisterSession(context.Background(), sess); err != nil {
			t.Fatal(err)
		}
		sess.Initialize()
	}
	id := startWaitTask(t, s, s.WithContext(context.Background(), owner))
	for _, tc := range []struct {
		sess *InProcessSession
		id   string
	}{{owner, "no-such-task"}, {other, id}} {
		req := fmt.Sprintf(`{"jsonrpc":"2.0","id":7,"method":"tasks/get","params":{"taskId":%q}}`, tc.id)
		raw, _ := json.Marshal(s.HandleMessage(s.WithContext(context.Background(), tc.sess), []byte(req)))
		var resp struct {
			Error *struct {
				Code    int    `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		if err := json.Unmarshal(raw, &resp); err != nil || resp.Error == nil {
			t.Fatalf("tasks/get %s from %s answered %s", tc.id, tc.sess.SessionID(), raw)
		}
		if want := fmt.Sprintf("task %q not found", tc.id); resp.Error.Code != mcp.INVALID_PARAMS || resp.Error.Message != want {
			t.Errorf("tasks/get %s from %s: %d %q, want %d %q", tc.id, tc.sess.SessionID(), resp.Error.Code, resp.Error.Message, mcp.INVALID_PARAMS, want)
		}
	}
}

// TestToolgatePromptAndResourceNotFound (item 92): a prompts/get of a
// prompt the server has not got, or filters out, says so once and adds
// WithPromptNotFound's text; a resources/read of a URI nothing serves says so once, naming
// it. The errors still match their sentinels. A logging/setLevel of a
// level there is not says which there are.
func TestToolgatePromptAndResourceNotFound(t *testing.T) {
	var hooked error
	hooks := &Hooks{}
	hooks.AddOnError(func(_ context.Context, _ any, _ mcp.MCPMethod, _ any, err error) { hooked = err })
	s := NewMCPServer("t", "1", WithHooks(hooks), WithPromptCapabilities(false), WithResourceCapabilities(false, false), WithLogging(),
		WithPromptFilter(func(_ context.Context, ps []mcp.Prompt) []mcp.Prompt {
			return slices.DeleteFunc(ps, func(p mcp.Prompt) bool { return p.Name == "hidden" })
		}),
		WithPromptNotFound(func(_ context.Context, name string) string { return "; try 'near'" }))
	for _, name := range []string{"near", "hidden", "zeta"} {
		s.AddPrompt(mcp.NewPrompt(name), func(context.Context, mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{}, nil
		})
	}
	sess := NewInProcessSession("s1", nil)
	if err := s.RegisterSession(context.Background(), sess); err != nil {
		t.Fatal(err)
	}
	sess.Initialize()
	answer := func(msg string) (int, string) {
		b, _ := json.Marshal(s.HandleMessage(s.WithContext(context.Background(), sess), json.RawMessage(msg)))
		var got struct {
			Error struct {
				Code    int    `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		_ = json.Unmarshal(b, &got)
		return got.Error.Code, got.Error.Message
	}
	for _, name := range []string{"nope", "hidden"} {
		code, msg := answer(`{"jsonrpc":"2.0","id":1,"method":"prompts/get","params":{"name":"` + name + `"}}`)
		if want := "prompt '" + name + "' not found; try 'near'"; code != mcp.INVALID_PARAMS || msg != want {
			t.Errorf("prompts/get %s: %d %q, want -32602 %q", name, code, msg, want)
		}
		if !errors.Is(hooked, ErrPromptNotFound) {
			t.Errorf("prompts/get %s: the error hook got %v, want ErrPromptNotFound", name, hooked)
		}
	}
	if _, msg := answer(`{"jsonrpc":"2.0","id":3,"method":"logging/setLevel","params":{"level":"verbose"}}`); !strings.Contains(msg, "(one of debug, info, notice, warning, error, critical, alert, emergency)") {
		t.Errorf("logging/setLevel verbose: %q, want the levels it takes", msg)
	}
	code, msg := answer(`{"jsonrpc":"2.0","id":2,"method":"resources/read","params":{"uri":"demo://nope"}}`)
	if code != mcp.RESOURCE_NOT_FOUND || msg != "resource 'demo://nope' not found" || !errors.Is(hooked, ErrResourceNotFound) {
		t.Errorf("resources/read: %d %q (hook %v), want -32002 \"resource 'demo://nope' not found\"", code, msg, hooked)
	}
}

// TestToolgateInvalidCursor (item 93): a list request with a cursor this
// server never gave is -32602 saying what a cursor is, not base64's error.
func TestToolgateInvalidCursor(t *testing.T) {
	s := NewMCPServer("t", "1", WithToolCapabilities(false))
	s.AddTool(mcp.NewTool("a"), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) { return nil, nil })
	b, _ := json.Marshal(s.HandleMessage(context.Background(), json.RawMessage(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"cursor":"garbage"}}`)))
	var got struct {
		Error struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	_ = json.Unmarshal(b, &got)
	if got.Error.Code != mcp.INVALID_PARAMS || !strings.HasPrefix(got.Error.Message, `invalid cursor "garbage": a cursor is the nextCursor of an earlier page`) {
		t.Errorf("tools/list with a cursor never given: %s", b)
	}
}

// TestToolgateParamsOfTheWrongShape (item 94): a request whose params do
// not decode into its method's is -32602 Invalid params, saying where a
// value is of the wrong type in JSON's terms.
func TestToolgateParamsOfTheWrongShape(t *testing.T) {
	s := NewMCPServer("t", "1", WithToolCapabilities(false), WithPromptCapabilities(false), WithResourceCapabilities(false, false))
	for _, c := range []struct{ params, method, want string }{
		{`{"name":42}`, "tools/call", "invalid params of tools/call: at params.name, a string is expected, not a number"},
		{`["read_file"]`, "tools/call", "invalid params of tools/call: at params, an object is expected, not an array"},
		{`{"uri":true}`, "resources/read", "invalid params of resources/read: at params.uri, a string is expected, not a boolean"},
		{`{"cursor":5.5}`, "tools/list", "invalid params of tools/list: at params.cursor, a string is expected, not a number"},
		{`{"name":"p","arguments":{"a":1}}`, "prompts/get", "invalid params of prompts/get: at params.arguments, a string is expected, not a number"},
	} {
		b, _ := json.Marshal(s.HandleMessage(context.Background(), json.RawMessage(`{"jsonrpc":"2.0","id":1,"method":"`+c.method+`","params":`+c.params+`}`)))
		var got struct {
			Error struct {
				Code    int    `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		_ = json.Unmarshal(b, &got)
		if got.Error.Code != mcp.INVALID_PARAMS || got.Error.Message != c.want {
			t.Errorf("%s %s: %s, want -32602 %q", c.method, c.params, b, c.want)
		}
	}
}

// TestToolgateIDOfTheWrongType (item 94): a request whose id is an object,
// an array or a boolean is -32600 with id null; strings and numbers are
// answered.
func TestToolgateIDOfTheWrongType(t *testing.T) {
	s := NewMCPServer("t", "1")
	for id, want := range map[string]string{
		`{"a":1}`: `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request: an id is a string or a number"}}`,
		`[1]`:     `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request: an id is a string or a number"}}`,
		`true`:    `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request: an id is a string or a number"}}`,
		`"x"`:     `{"jsonrpc":"2.0","id":"x","result":{}}`,
		`7`:       `{"jsonrpc":"2.0","id":7,"result":{}}`,
	} {
		b, _ := json.Marshal(s.HandleMessage(context.Background(), json.RawMessage(`{"jsonrpc":"2.0","id":`+id+`,"method":"ping"}`)))
		if string(b) != want {
			t.Errorf("ping with id %s: %s, want %s", id, b, want)
		}
	}
}
