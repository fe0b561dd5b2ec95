package upstream

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/server"
)

// legacySSEServer is mcp-go's legacy SSE server (the 2024-11-05 HTTP+SSE
// transport) on 127.0.0.1, whose event stream is at the returned URL
// (…/sse). A POST to that URL (the streamable HTTP probe: initialize, or
// server/discover) is answered with postStatus (mcp-go's own answer, 405,
// when 0) and counted in posts; GETs of it are counted in gets.
type legacySSE struct {
	url         string
	ts          *httptest.Server
	posts, gets atomic.Int32
}

func legacySSEServer(t *testing.T, st *serverState, postStatus int) *legacySSE {
	t.Helper()
	l := &legacySSE{}
	s := server.NewSSEServer(newTestMCPServer(st))
	l.ts = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/sse" {
			switch r.Method {
			case http.MethodPost:
				l.posts.Add(1)
				if postStatus != 0 {
					http.Error(w, http.StatusText(postStatus), postStatus)
					return
				}
			case http.MethodGet:
				l.gets.Add(1)
			}
		}
		s.ServeHTTP(w, r)
	}))
	server.WithBaseURL(l.ts.URL)(s)
	t.Cleanup(func() {
		l.ts.CloseClientConnections()
		l.ts.Close()
	})
	l.url = l.ts.URL + "/sse"
	return l
}

const wantSSENote = "speaks legacy SSE; set transport: sse to skip the probe"

// TestURLOnlyUpstreamFallsBackToLegacySSE: an upstream configured with a
// url alone (transport defaulted to http, as imported from Cursor or VS
// Code) whose server speaks only the legacy HTTP+SSE transport is served
// over it, as the spec's backwards-compatibility section has clients do:
// its initialize POST is refused with 405 (mcp-go's SSE server), toolgate
// opens the event stream at the same URL, lists and calls its tools, says
// so in its status and log, and reconnects over SSE without probing again.
func TestURLOnlyUpstreamFallsBackToLegacySSE(t *testing.T) {
	l := legacySSEServer(t, &serverState{}, 0)
	log, logs := newLogger()
	u := start(t, Config{Name: "old", URL: l.url}, log, true)
	g := newGW(t, u)
	ctx := context.Background()
	if got := mustOK(t, g.call(ctx, "old__echo", `{"text":"hi"}`)); got != `{"text":"hi"}` {
		t.Errorf("old__echo said %q", got)
	}
	st := u.Status()
	if st.Upstream == nil || st.Upstream.Transport != TransportSSE || !strings.Contains(st.Detail, wantSSENote) {
		t.Errorf("status %+v (%+v); want transport sse and %q", st, st.Upstream, wantSSENote)
	}
	if !strings.Contains(logs.String(), wantSSENote) {
		t.Errorf("the log does not say %q:\n%s", wantSSENote, logs)
	}
	if tool := findTool(u, "old__echo"); tool == nil || tool.HonoursContext {
		t.Errorf("old__echo honours its context: %v; over SSE it does not", tool != nil && tool.HonoursContext)
	}

	// The connection is lost: the reconnection goes straight to SSE.
	posts := l.posts.Load()
	c, _ := u.liveConn()
	l.ts.CloseClientConnections()
	eventually(t, 10*time.Second, "a new connection", func() bool { nc, _ := u.liveConn(); return nc != nil && nc != c })
	if got := mustOK(t, g.call(ctx, "old__echo", `{"text":"again"}`)); got != `{"text":"again"}` {
		t.Errorf("after the reconnection old__echo said %q", got)
	}
	if n := l.posts.Load(); n != posts {
		t.Errorf("the reconnection POSTed to the SSE URL %d more times; want it to remember the upstream speaks SSE", n-posts)
	}
	if st := u.Status(); !strings.Contains(st.Detail, wantSSENote) {
		t.Errorf("after the reconnection, status %q", st.Detail)
	}
}

// TestSSEFallbackOnlyOnTransportStatuses: the fallback follows a refusal
// that says "not this transport" (400, 404, 405), not one that says "not
// you" (401, 403) nor a server error, and never for an upstream whose
// transport: http is written.
func TestSSEFallbackOnlyOnTransportStatuses(t *testing.T) {
	for _, tc := range []struct {
		status    int
		transport string
		fallback  bool
	}{
		{http.StatusBadRequest, "", true},
		{http.StatusNotFound, "", true},
		{http.StatusMethodNotAllowed, "", true},
		{http.StatusUnauthorized, "", false},
		{http.StatusForbidden, "", false},
		{http.StatusInternalServerError, "", false},
		{http.StatusMethodNotAllowed, TransportHTTP, false},
	} {
		t.Run(fmt.Sprintf("%d%s", tc.status, tc.transport), func(t *testing.T) {
			l := legacySSEServer(t, &serverState{}, tc.status)
			u := start(t, Config{Name: "old", URL: l.url, Transport: tc.transport, StartupTimeout: 10 * time.Second}, nil, tc.fallback)
			if tc.fallback {
				if names := toolNames(u); len(names) == 0 {
					t.Error("ready without tools")
				}
				return
			}
			if n := l.gets.Load(); n != 0 {
				t.Errorf("%d GETs of the SSE stream; want no fallback", n)
			}
			if st := u.Status(); strings.Contains(st.Detail, wantSSENote) || st.Upstream.Transport != TransportHTTP {
				t.Errorf("status %q (transport %s)", st.Detail, st.Upstream.Transport)
			}
		})
	}
}
