package transport

// toolgate patch: the client transports' round trips, measured in process
// (third_party/README.md, items 21, 22, 32 and 33): a request written, the
// peer's answer read and handed to the waiting request.

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
)

// BenchmarkToolgateStdioRoundTrip sends a tools/call with a small argument
// object, as toolgate's upstream adapter does, to a peer on pipes that
// answers each request line at once with a one-text result of the same id.
func BenchmarkToolgateStdioRoundTrip(b *testing.B) {
	serverIn, clientOut := io.Pipe()
	clientIn, serverOut := io.Pipe()
	c := NewIO(clientIn, clientOut, io.NopCloser(strings.NewReader("")))
	if err := c.Start(context.Background()); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		_ = c.Close()
		_ = serverOut.Close()
		_ = serverIn.Close()
	})
	go func() {
		r := bufio.NewReader(serverIn)
		w := bufio.NewWriter(serverOut)
		for {
			line, err := r.ReadSlice('\n')
			if err != nil {
				return
			}
			var req struct {
				ID json.RawMessage `json:"id"`
			}
			if json.Unmarshal(line, &req) != nil {
				return
			}
			w.WriteString(`{"jsonrpc":"2.0","id":`)
			w.Write(req.ID)
			w.WriteString(`,"result":{"content":[{"type":"text","text":"hello, toolgate"}],"isError":false}}` + "\n")
			if w.Flush() != nil {
				return
			}
		}
	}()
	roundTrips(b, c)
}

// roundTrips sends b.N tools/calls over tr, each waiting for its answer.
func roundTrips(b *testing.B, tr Interface) {
	params := struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	}{"echo", json.RawMessage(`{"text":"hello, toolgate"}`)}
	ctx := context.Background()
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		resp, err := tr.SendRequest(ctx, JSONRPCRequest{
			JSONRPC: mcp.JSONRPC_VERSION, ID: mcp.NewRequestId("tg-" + strconv.Itoa(i)), Method: "tools/call", Params: &params,
		})
		if err != nil || resp.Error != nil || len(resp.Result) == 0 {
			b.Fatalf("round trip: %v %+v", err, resp)
		}
	}
}

// BenchmarkToolgateHTTPRoundTrip is the same round trip over streamable
// HTTP on loopback, to a server that answers with a JSON body of a declared
// length (item 33).
func BenchmarkToolgateHTTPRoundTrip(b *testing.B) {
	c, _ := echoOverHTTP(b)
	roundTrips(b, c)
}

// echoOverHTTP is a streamable HTTP client transport, started, to a server
// on loopback that answers each POST with a one-text result of its id, as
// a JSON body of a declared length; and the count of the connections the
// server accepted.
func echoOverHTTP(tb testing.TB) (*StreamableHTTP, *atomic.Int32) {
	var conns atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			ID json.RawMessage `json:"id"`
		}
		if json.NewDecoder(r.Body).Decode(&req) != nil {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		body := `{"jsonrpc":"2.0","id":` + string(req.ID) + `,"result":{"content":[{"type":"text","text":"hello, toolgate"}],"isError":false}}`
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		_, _ = io.WriteString(w, body)
	}))
	srv.Config.ConnState = func(_ net.Conn, state http.ConnState) {
		if state == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	tb.Cleanup(srv.Close)
	c, err := NewStreamableHTTP(srv.URL)
	if err != nil {
		tb.Fatal(err)
	}
	if err := c.Start(context.Background()); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = c.Close() })
	return c, &conns
}
