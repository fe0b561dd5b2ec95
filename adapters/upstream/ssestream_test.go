package upstream

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// brokenSSE is a legacy SSE server that ends its event stream early:
// before the endpoint event (beforeEndpoint), or when the first POST (the
// initialize request) arrives, which it accepts with 202 and never answers.
func brokenSSE(t *testing.T, beforeEndpoint bool) string {
	t.Helper()
	var once sync.Once
	posted := make(chan struct{})
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.Method {
		case http.MethodGet:
			w.Header().Set("Content-Type", "text/event-stream")
			w.WriteHeader(http.StatusOK)
			w.(http.Flusher).Flush()
			if beforeEndpoint {
				return
			}
			fmt.Fprintf(w, "event: endpoint\ndata: /messages?sessionId=s1\n\n")
			w.(http.Flusher).Flush()
			select {
			case <-posted:
			case <-r.Context().Done():
			}
		case http.MethodPost:
			w.WriteHeader(http.StatusAccepted)
			once.Do(func() { close(posted) })
		}
	}))
	t.Cleanup(func() {
		ts.CloseClientConnections()
		ts.Close()
	})
	return ts.URL + "/sse"
}

// TestSSEStreamLostDuringSetupFailsAtOnce: a legacy SSE upstream whose
// event stream ends while the connection is being set up (before the
// endpoint event, or while initialize awaits its answer, which can only
// come on that stream) fails the attempt at once, saying so, instead of
// waiting out the startup timeout.
func TestSSEStreamLostDuringSetupFailsAtOnce(t *testing.T) {
	for _, before := range []bool{true, false} {
		t.Run(fmt.Sprintf("beforeEndpoint=%v", before), func(t *testing.T) {
			url := brokenSSE(t, before)
			u, err := New(Config{Name: "broken", Transport: TransportSSE, URL: url, StartupTimeout: 15 * time.Second}, nil)
			if err != nil {
				t.Fatal(err)
			}
			u.tune = fastTuning()
			t.Cleanup(func() { u.Close() })
			begin := time.Now()
			u.Start(context.Background())
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			err = u.WaitReady(ctx)
			took := time.Since(begin)
			if err == nil {
				t.Fatal("ready, want a failure")
			}
			if took > 5*time.Second {
				t.Fatalf("the attempt failed after %s (%v), want at once", took.Round(time.Millisecond), err)
			}
			t.Log(err)
			if !strings.Contains(err.Error(), "SSE stream") {
				t.Errorf("error %q does not say the stream ended", err)
			}
		})
	}
}

// TestSSEOversizedResultFailsItsCallOnly: over legacy SSE, an answer over
// max_result_bytes fails its own call with the limit's error, as over
// stdio and streamable HTTP, and the connection (the one event stream
// every call's answer comes on) goes on: another call in flight is
// answered, and the upstream is not reconnected.
func TestSSEOversizedResultFailsItsCallOnly(t *testing.T) {
	st := &serverState{gate: make(chan struct{})}
	u := start(t, Config{Name: "e", Transport: TransportSSE, URL: sseUpstream(t, st), MaxResultBytes: 64 << 10}, nil, true)
	g := newGW(t, u)
	ctx := context.Background()
	gated := make(chan string, 1)
	go func() {
		r := g.call(ctx, "e__gate", `{}`)
		gated <- r.Message + r.OutputText()
	}()
	eventually(t, 5*time.Second, "the gate call is in", func() bool { return st.inGate.Load() == 1 })
	big := strings.Repeat("x", 200<<10)
	res := g.call(ctx, "e__echo", `{"text":"`+big+`"}`)
	if !res.IsError || !strings.Contains(res.Message+res.OutputText(), "over its limit") {
		t.Errorf("oversized answer: error %v, %.300q; want the limit's error", res.IsError, res.Message+res.OutputText())
	}
	st.gate <- struct{}{}
	select {
	case got := <-gated:
		if got != "passed" {
			t.Errorf("the other call in flight got %.300q, want passed", got)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the other call in flight was not answered")
	}
	if n := u.Restarts(); n != 0 {
		t.Errorf("%d reconnections, want none", n)
	}
}

// TestLimitedBodyReplacesOversizedEvent: on a legacy SSE stream, events
// within the limit pass unchanged and an oversized one (split across reads
// anywhere, CRLF or LF) becomes an error response to its id.
func TestLimitedBodyReplacesOversizedEvent(t *testing.T) {
	big := `{"jsonrpc":"2.0","result":{"t":"` + strings.Repeat("x", 500) + `"},"id":"tg-7"}`
	for _, nl := range []string{"\n", "\r\n"} {
		in := "event: endpoint" + nl + "data: /m" + nl + nl +
			"event: message" + nl + "data: " + big + nl + nl +
			"data: {\"jsonrpc\":\"2.0\",\"id\":\"tg-8\",\"result\":{}}" + nl + nl
		for _, chunk := range []int{1, 7, 64, 1 << 16} {
			b := &limitedBody{rc: io.NopCloser(&chunker{s: in, n: chunk}), max: 200, stream: true, upstream: "u", replace: true}
			out, err := io.ReadAll(b)
			if err != nil {
				t.Fatal(err)
			}
			got := string(out)
			if !strings.HasPrefix(got, "event: endpoint"+nl+"data: /m"+nl+nl) ||
				!strings.Contains(got, "event: toolgate-oversized\n\n") ||
				!strings.Contains(got, `data: {"error":{"code":-32001,"message":"upstream \"u\" sent a message of more than 200 bytes`) ||
				!strings.Contains(got, `"id":"tg-7"`) ||
				!strings.HasSuffix(got, "data: {\"jsonrpc\":\"2.0\",\"id\":\"tg-8\",\"result\":{}}"+nl+nl) ||
				strings.Contains(got, "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx") {
				t.Errorf("chunks of %d, newline %q: got %q", chunk, nl, got)
			}
		}
	}
}

// chunker reads s n bytes at a time.
type chunker struct {
	s string
	n int
}

func (c *chunker) Read(p []byte) (int, error) {
	if c.s == "" {
		return 0, io.EOF
	}
	k := min(c.n, len(p), len(c.s))
	copy(p, c.s[:k])
	c.s = c.s[k:]
	return k, nil
}
