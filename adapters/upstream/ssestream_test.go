package upstream

import (
	"context"
	"fmt"
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
