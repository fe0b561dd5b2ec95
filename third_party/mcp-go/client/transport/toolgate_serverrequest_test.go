package transport

// toolgate patch, item 74: a server's request is handled without a time
// limit of the transport's own, and one that came on the GET stream
// outlives that stream.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

// askingServer is a streamable HTTP server that asks its client: on the
// first GET stream it sends the request "g1" and ends the stream; on a
// tools/call's stream it sends "p1", waits for its answer, then answers
// the call. Every answer the client POSTs is sent on answers.
type askingServer struct {
	gets     atomic.Int32
	reopened chan struct{} // closed when the second GET arrives
	answers  chan map[string]json.RawMessage
	p1       chan struct{} // p1's answer came (the tools/call's own signal: answers is the test's)
}

func (s *askingServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodGet {
		n := s.gets.Add(1)
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		if n == 1 {
			fmt.Fprint(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":\"g1\",\"method\":\"elicitation/create\",\"params\":{}}\n\n")
			w.(http.Flusher).Flush()
			return // the stream ends while the client is still answering
		}
		if n == 2 {
			close(s.reopened)
		}
		<-r.Context().Done()
		return
	}
	var msg map[string]json.RawMessage
	if err := json.NewDecoder(r.Body).Decode(&msg); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var method string
	_ = json.Unmarshal(msg["method"], &method)
	switch {
	case method == "initialize":
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set(HeaderKeySessionID, "s1")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"asking","version":"1"}}}`, msg["id"])
	case method == "tools/call":
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		fmt.Fprint(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":\"p1\",\"method\":\"elicitation/create\",\"params\":{}}\n\n")
		w.(http.Flusher).Flush()
		select {
		case <-s.p1:
		case <-r.Context().Done():
			return
		}
		fmt.Fprintf(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"content\":[]}}\n\n", msg["id"])
		w.(http.Flusher).Flush()
	case method == "":
		// An answer to one of the server's requests. (The tools/call once
		// took p1's from answers and put it back, racing the test for it:
		// when the test took it first, the call was never answered.)
		if string(msg["id"]) == `"p1"` {
			s.p1 <- struct{}{}
		}
		s.answers <- msg
		w.WriteHeader(http.StatusAccepted)
	default:
		w.WriteHeader(http.StatusAccepted)
	}
}

// asked is a request the client's handler got: whether its context had a
// deadline, and release, which makes the handler answer.
type asked struct {
	id          string
	hasDeadline bool
	release     chan struct{}
}

func startAsked(t *testing.T) (*StreamableHTTP, *askingServer, chan asked) {
	t.Helper()
	srv := &askingServer{reopened: make(chan struct{}), answers: make(chan map[string]json.RawMessage, 1), p1: make(chan struct{}, 1)}
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	c, err := NewStreamableHTTP(hs.URL, WithContinuousListening())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	got := make(chan asked, 4)
	c.SetRequestHandler(func(ctx context.Context, req JSONRPCRequest) (*JSONRPCResponse, error) {
		_, dl := ctx.Deadline()
		a := asked{id: fmt.Sprint(req.ID.Value()), hasDeadline: dl, release: make(chan struct{})}
		got <- a
		select {
		case <-a.release:
			return NewJSONRPCResultResponse(req.ID, json.RawMessage(`{"action":"accept","content":{}}`)), nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	})
	ctx := context.Background()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := c.SendRequest(ctx, JSONRPCRequest{JSONRPC: mcp.JSONRPC_VERSION, ID: mcp.NewRequestId(int64(1)), Method: "initialize",
		Params: map[string]any{"protocolVersion": "2025-11-25", "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "t", "version": "1"}}}); err != nil {
		t.Fatal(err)
	}
	return c, srv, got
}

func waitFor[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(20 * time.Second):
		t.Fatalf("no %s within 20 s", what)
		panic("unreachable")
	}
}

func checkAnswer(t *testing.T, a map[string]json.RawMessage, id string) {
	t.Helper()
	if string(a["id"]) != `"`+id+`"` || len(a["result"]) == 0 {
		t.Fatalf("answer %v, want the result for %q", a, id)
	}
}

// TestToolgateServerRequestOutlivesGETStream: a request that came on the
// GET stream is answered after that stream ended and the client opened
// another; its handler had no deadline.
func TestToolgateServerRequestOutlivesGETStream(t *testing.T) {
	_, srv, got := startAsked(t)
	a := waitFor(t, got, "request on the GET stream")
	if a.id != "g1" || a.hasDeadline {
		t.Fatalf("handler got %q with a deadline: %v; want g1 without", a.id, a.hasDeadline)
	}
	waitFor(t, srv.reopened, "second GET stream")
	close(a.release)
	checkAnswer(t, waitFor(t, srv.answers, "answer to g1"), "g1")
}

// TestToolgateServerRequestOnPOSTStreamUnbounded: a request on a POST's
// stream is handled without a deadline, and the POST's own response
// follows its answer.
func TestToolgateServerRequestOnPOSTStreamUnbounded(t *testing.T) {
	c, srv, got := startAsked(t)
	g := waitFor(t, got, "request on the GET stream")
	close(g.release)
	checkAnswer(t, waitFor(t, srv.answers, "answer to g1"), "g1")

	done := make(chan error, 1)
	go func() {
		_, err := c.SendRequest(context.Background(), JSONRPCRequest{JSONRPC: mcp.JSONRPC_VERSION, ID: mcp.NewRequestId(int64(2)), Method: "tools/call",
			Params: map[string]any{"name": "x"}})
		done <- err
	}()
	p := waitFor(t, got, "request on the POST's stream")
	if p.id != "p1" || p.hasDeadline {
		t.Fatalf("handler got %q with a deadline: %v; want p1 without", p.id, p.hasDeadline)
	}
	close(p.release)
	checkAnswer(t, waitFor(t, srv.answers, "answer to p1"), "p1")
	if err := waitFor(t, done, "tools/call's response"); err != nil && err != io.EOF {
		t.Fatal(err)
	}
}

// TestToolgateRequestParamsKeptRaw (item 91): a request a server sends is
// decoded with its params as written (members in their order), none when
// they are absent or null.
func TestToolgateRequestParamsKeptRaw(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`{"jsonrpc":"2.0","id":1,"method":"elicitation/create","params":{"message":"m","requestedSchema":{"properties":{"zeta":{},"alpha":{}}}}}`,
			`{"message":"m","requestedSchema":{"properties":{"zeta":{},"alpha":{}}}}`},
		{`{"jsonrpc":"2.0","id":"x","method":"ping"}`, ""},
		{`{"jsonrpc":"2.0","id":2,"method":"ping","params":null}`, ""},
	} {
		var r JSONRPCRequest
		if err := json.Unmarshal([]byte(c.in), &r); err != nil {
			t.Fatal(err)
		}
		raw, _ := r.Params.(json.RawMessage)
		if string(raw) != c.want || (c.want == "") != (r.Params == nil) || r.Method == "" || r.ID.IsNil() {
			t.Errorf("%s: decoded %+v (params %T %s), want params %s", c.in, r, r.Params, raw, c.want)
		}
	}
}
