package bare

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// HTTPCall is one echo tools/call over streamable HTTP, as mcp-go's client
// sends it to a handler after initializing with a protocol version, kept
// so that a benchmark can hand the same request to the handler again and
// again in process: the transport's handling of a request (headers,
// session, envelope, the response written) measured without sockets,
// which end to end hide it among the kernel's and the scheduler's costs.
type HTTPCall struct {
	h      http.Handler
	req    *http.Request // the recorded request, without its body
	body   []byte
	client *client.Client
}

// NewHTTPCall initializes a client of protocol version proto with h
// (a 2025-11-25 client gets a session, a 2026-07-28 one sends its envelope
// in every request) and records its first echo call. Close ends the
// client, and with it the session the call belongs to.
func NewHTTPCall(ctx context.Context, h http.Handler, proto string) (*HTTPCall, error) {
	rec := &recordingTransport{h: h}
	c, err := client.NewStreamableHttpClient("http://127.0.0.1/mcp", transport.WithHTTPBasicClient(&http.Client{Transport: rec}))
	if err != nil {
		return nil, err
	}
	call := &HTTPCall{h: h, client: c}
	if err := c.Start(ctx); err != nil {
		c.Close()
		return nil, err
	}
	if err := Initialize(ctx, c, proto, "bench"); err != nil {
		c.Close()
		return nil, err
	}
	req := mcp.CallToolRequest{}
	req.Params.Name = "echo"
	req.Params.Arguments = map[string]any{"text": EchoText}
	if _, err := c.CallTool(ctx, req); err != nil {
		c.Close()
		return nil, fmt.Errorf("tools/call: %w", err)
	}
	call.req, call.body = rec.last, rec.lastBody
	return call, nil
}

// Initialize initializes the started client c with protocol version proto,
// as the benchmarks' clients (named name) do.
func Initialize(ctx context.Context, c *client.Client, proto, name string) error {
	req := mcp.InitializeRequest{}
	req.Params.ProtocolVersion = proto
	req.Params.ClientInfo = mcp.Implementation{Name: name, Version: "1"}
	if _, err := c.Initialize(ctx, req); err != nil {
		return fmt.Errorf("initialize: %w", err)
	}
	return nil
}

// Close closes the client that made the call.
func (c *HTTPCall) Close() error { return c.client.Close() }

// Do hands the recorded call to the handler once more and checks that it
// was answered with the echo.
func (c *HTTPCall) Do() error {
	r := c.req.Clone(context.Background())
	r.Body = io.NopCloser(bytes.NewReader(c.body))
	w := recorder{httptest.NewRecorder()}
	c.h.ServeHTTP(w, r)
	if w.Code != http.StatusOK || !strings.Contains(w.Body.String(), `"text":"`+EchoText+`"`) {
		return fmt.Errorf("unexpected answer %d %s", w.Code, w.Body)
	}
	return nil
}

// recorder is a ResponseRecorder that takes a read deadline, as a
// server's response writer does: a handler that bounds the reading of its
// body through http.ResponseController (toolgate's does) would otherwise
// be charged, in every call, for the error a plain recorder returns
// (http.ErrNotSupported, wrapped by fmt.Errorf: four allocations), which it
// never meets when served.
type recorder struct{ *httptest.ResponseRecorder }

// SetReadDeadline accepts the deadline; in process there is no connection
// to read from.
func (recorder) SetReadDeadline(time.Time) error { return nil }

// Bencher is the part of a *testing.B that BenchHTTPCall uses (this
// package is linked into the benchmark's servers, which need not link the
// testing package).
type Bencher interface {
	ReportAllocs()
	Loop() bool
	Fatal(args ...any)
}

// BenchHTTPCall is BenchmarkHTTPCall's loop, for every module that runs it
// (toolgate's, and e2e/bench/stock's on mcp-go as published): the echo call
// a client of protocol version proto records with h, handed to h again
// while b loops.
func BenchHTTPCall(b Bencher, h http.Handler, proto string) {
	call, err := NewHTTPCall(context.Background(), h, proto)
	if err != nil {
		b.Fatal(err)
	}
	defer call.Close()
	b.ReportAllocs()
	for b.Loop() {
		if err := call.Do(); err != nil {
			b.Fatal(err)
		}
	}
}

// recordingTransport serves a client's requests with a handler in
// process and keeps the last one.
type recordingTransport struct {
	h        http.Handler
	last     *http.Request
	lastBody []byte
}

func (t *recordingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	var body []byte
	if r.Body != nil {
		var err error
		if body, err = io.ReadAll(r.Body); err != nil {
			return nil, err
		}
	}
	in := httptest.NewRequest(r.Method, r.URL.String(), bytes.NewReader(body))
	in.Header = r.Header.Clone()
	in.RemoteAddr = "127.0.0.1:40000"
	w := httptest.NewRecorder()
	t.h.ServeHTTP(w, in.WithContext(r.Context()))
	if r.Method == http.MethodPost {
		t.last, t.lastBody = in.WithContext(context.Background()), body
	}
	return w.Result(), nil
}
