package transport

// toolgate patch: the fast paths of items 22, 32 and 33 are taken where
// they are meant to be (third_party/README.md); what the stdio transport
// decodes is held to v1.2.1's by toolgate's FuzzStdioClientResponse, and
// what the HTTP transport decodes to json.Decoder's by
// FuzzToolgateJSONResponse, here.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

// TestToolgateResponseDecodedOnce: a response line is read whole by the
// one decoding; a line with a method is read for its kind there (and as a
// notification or request after), and a line without an ID, or one that
// does not decode, is not taken for a response by it.
func TestToolgateResponseDecodedOnce(t *testing.T) {
	for _, line := range []string{
		`{"jsonrpc":"2.0","id":7,"result":{"content":[]}}`,
		`{"jsonrpc":"2.0","id":"a","error":{"code":-32601,"message":"no"}}`,
	} {
		msg, ok := decodeLine([]byte(line))
		if _, isResponse := msg.response(); !ok || !isResponse {
			t.Errorf("%s: not read whole in one decoding", line)
		}
	}
	for _, line := range []string{
		`{"jsonrpc":"2.0","id":7,"method":"ping"}`,
		`{"jsonrpc":"2.0","method":"notifications/message"}`,
	} {
		if msg, ok := decodeLine([]byte(line)); !ok || msg.Method == "" {
			t.Errorf("%s: its kind not read in the one decoding", line)
		}
	}
	for _, line := range []string{
		`{"jsonrpc":"2.0","id":null,"result":{}}`,
		`{"jsonrpc":"2.0","id":7,"error":7}`, // neither an object nor a string
		`not json`,
	} {
		msg, _ := decodeLine([]byte(line))
		if _, isResponse := msg.response(); isResponse {
			t.Errorf("%s: taken for a response by the one decoding; it is the old path's", line)
		}
	}
}

// TestToolgateResponseScanned: the lines an upstream sends most (a result,
// a notification, a request) are read by item 32's scan, not by
// reflection; a line the scan cannot read exactly as json.Unmarshal would
// is left to it.
func TestToolgateResponseScanned(t *testing.T) {
	for _, line := range []string{
		`{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"hi"}]}}`,
		` {"result":null, "id":"tg-12","jsonrpc":"2.0"} `,
		`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":1}}`,
		`{"jsonrpc":"2.0","id":3,"method":"sampling/createMessage","params":{}}`,
		`{"jsonrpc":"2.0","id":7,"result":{},"error":null}`,
	} {
		if _, ok := scanLine([]byte(line)); !ok {
			t.Errorf("%s: not read by the scan", line)
		}
	}
	line := []byte(`{"jsonrpc":"2.0","id":"tg-12","result":{"a":1}}`)
	var decoded lineMessage
	if scanned, reflected := testing.AllocsPerRun(100, func() { decodeLine(line) }), testing.AllocsPerRun(100, func() {
		decoded = lineMessage{}
		_ = json.Unmarshal(line, &decoded)
	}); scanned >= reflected {
		t.Errorf("decodeLine of a response: %v allocations, json.Unmarshal's %v: not the scan", scanned, reflected)
	}
	msg, _ := scanLine(line)
	if r, ok := msg.response(); !ok || r.ID.String() != mcp.NewRequestId("tg-12").String() || string(r.Result) != `{"a":1}` || r.JSONRPC != "2.0" {
		t.Errorf("scanned response: %+v", r)
	}
	for _, line := range []string{
		`{"jsonrpc":"2.0","id":7,"error":{"code":-32601,"message":"no"}}`, // an error: json's
		`{"jsonrpc":"2.0","id":7,"id":8,"result":{}}`,                     // met twice
		`{"jsonrpc":"2.0","ID":7,"result":{}}`,                            // another case
		`{"jsonrpc":"2.0","method":"notifications\/message"}`,             // escaped
		`{"jsonrpc":"2.0","id":true,"result":{}}`,                         // an id RequestId refuses
		`{"jsonrpc":"2.0","id":7,"result":{}`,                             // not JSON
	} {
		if _, ok := scanLine([]byte(line)); ok {
			t.Errorf("%s: read by the scan; it is json.Unmarshal's", line)
		}
	}
}

// TestToolgateJSONResponseScanned: a result response of a declared length
// is read by item 33's scan, not by a Decoder.
func TestToolgateJSONResponseScanned(t *testing.T) {
	body := `{"jsonrpc":"2.0","id":"tg-12","result":{"content":[{"type":"text","text":"hi"}]}}`
	resp := func() *http.Response {
		return &http.Response{ContentLength: int64(len(body)), Body: io.NopCloser(strings.NewReader(body))}
	}
	if r, err := readJSONResponse(resp()); err != nil || r.ID.String() != mcp.NewRequestId("tg-12").String() {
		t.Fatalf("readJSONResponse: %+v, %v", r, err)
	}
	scanned := testing.AllocsPerRun(100, func() { _, _ = readJSONResponse(resp()) })
	decoded := testing.AllocsPerRun(100, func() {
		var r JSONRPCResponse
		_ = json.NewDecoder(resp().Body).Decode(&r)
	})
	if scanned >= decoded {
		t.Errorf("readJSONResponse: %v allocations, a Decoder's %v: not the scan", scanned, decoded)
	}
}

// TestToolgateJSONResponseKeepsConnection: an answer read by item 33's
// scan, which reads a body to its declared length and no further, leaves
// the connection to be reused: net/http sees the body's end with its last
// bytes.
func TestToolgateJSONResponseKeepsConnection(t *testing.T) {
	c, conns := echoOverHTTP(t)
	for i := range 20 {
		resp, err := c.SendRequest(context.Background(), JSONRPCRequest{JSONRPC: mcp.JSONRPC_VERSION, ID: mcp.NewRequestId(int64(i)), Method: "ping"})
		if err != nil || len(resp.Result) == 0 {
			t.Fatalf("request %d: %v %+v", i, err, resp)
		}
	}
	if n := conns.Load(); n != 1 {
		t.Errorf("20 requests in turn took %d connections, want 1", n)
	}
}

// FuzzToolgateJSONResponse: for any body, declared at its length, shorter,
// longer or not at all, readJSONResponse (item 33) gives what
// json.NewDecoder(body).Decode gave: the same response, or the same error
// word for word.
func FuzzToolgateJSONResponse(f *testing.F) {
	for _, seed := range []string{
		`{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"hi"}]}}`,
		`{"jsonrpc":"2.0","id":"tg-1","result":null}`,
		` {"result":{},"id":1,"jsonrpc":"2.0"}` + "\n",
		`{"jsonrpc":"2.0","id":7,"error":{"code":-32601,"message":"no"}}`,
		`{"jsonrpc":"2.0","id":null,"result":{}}`,
		`{"jsonrpc":"2.0","result":{}}`,
		`{"jsonrpc":"2.0","id":7,"result":{}}{"jsonrpc":"2.0","id":8,"result":{}}`,
		`{"jsonrpc":"2.0","id":7,"result":{}} trailing`,
		`{"jsonrpc":"2.0","id":7,"id":8,"result":{}}`,
		`{"jsonrpc":"2.0","ID":7,"result":{}}`,
		`{"jsonrpc":"2.\u0030","id":7,"result":{}}`,
		`{"jsonrpc":"2.0","id":7,"method":"x","result":{}}`,
		`{"jsonrpc":"2.0","id":7,"method":7,"result":{}}`,
		`{"jsonrpc":"2.0","id":true,"result":{}}`,
		`{"jsonrpc":"2.0","id":7,"result":{}`,
		`[]`,
		``,
	} {
		for mode := range byte(4) {
			f.Add(seed, mode)
		}
	}
	f.Fuzz(func(t *testing.T, body string, mode byte) {
		length := int64(len(body))
		switch mode % 4 {
		case 1:
			length /= 2 // declared shorter
		case 2:
			length += 3 // declared longer: the body ends early
		case 3:
			length = -1 // not declared
		}
		var want JSONRPCResponse
		wantErr := json.NewDecoder(strings.NewReader(body)).Decode(&want)
		got, err := readJSONResponse(&http.Response{ContentLength: length, Body: io.NopCloser(strings.NewReader(body))})
		switch {
		case (err == nil) != (wantErr == nil):
			t.Fatalf("%q (length %d): error %v, the Decoder's %v", body, length, err, wantErr)
		case err != nil:
			if err.Error() != wantErr.Error() {
				t.Fatalf("%q (length %d): error %q, the Decoder's %q", body, length, err, wantErr)
			}
		case got.JSONRPC != want.JSONRPC || !reflect.DeepEqual(got.ID, want.ID) ||
			!bytes.Equal(got.Result, want.Result) || (got.Result == nil) != (want.Result == nil) ||
			!reflect.DeepEqual(got.Error, want.Error):
			t.Fatalf("%q (length %d): %+v, the Decoder's %+v", body, length, got, want)
		}
	})
}

// preEncodedParams are params that encode themselves as json.Marshal
// encodes v, both ways (mcp.PreEncoded asks for both).
type preEncodedParams struct{ v any }

func (p preEncodedParams) MarshalJSON() ([]byte, error) { return json.Marshal(p.v) }

func (p preEncodedParams) AppendJSON(b []byte) ([]byte, error) {
	enc, err := json.Marshal(p.v)
	if err != nil {
		return nil, err
	}
	return append(b, enc...), nil
}

// FuzzToolgateRequestEncoded: item 36 writes a request whose params are
// mcp.PreEncoded as json.Marshal writes it, byte for byte, whatever its
// version, ID and method (strings json escapes among them).
func FuzzToolgateRequestEncoded(f *testing.F) {
	f.Add("2.0", "tg-1", int64(7), "tools/call", `{"name":"echo","arguments":{"text":"a b"}}`)
	f.Add("2.0", "<&>", int64(-1), "a\"b", `null`)
	f.Add("", "é\u2028", int64(1<<62), "", `[1,2]`)
	f.Fuzz(func(t *testing.T, version, sid string, nid int64, method, params string) {
		var v any
		if json.Unmarshal([]byte(params), &v) != nil {
			v = params
		}
		for _, id := range []mcp.RequestId{mcp.NewRequestId(sid), mcp.NewRequestId(nid), mcp.NewRequestId(float64(nid) / 3), {}} {
			req := JSONRPCRequest{JSONRPC: version, ID: id, Method: method, Params: preEncodedParams{v}}
			got, err := encodeRequest(req)
			want, wantErr := json.Marshal(req)
			if (err == nil) != (wantErr == nil) || string(got) != string(want) {
				t.Fatalf("%#v:\n%s, %v\njson.Marshal:\n%s, %v", req, got, err, want, wantErr)
			}
		}
	})
}

// TestToolgateRequestEncodedDirectly: item 36's path is taken: a request
// with params that encode themselves is written in one buffer (json.Marshal
// allocates its encoder's state, its own ID's encoding and a copy).
func TestToolgateRequestEncodedDirectly(t *testing.T) {
	params := mcp.PreEncoded(rawParams(`{"name":"echo","arguments":{"text":"hello"}}`))
	req := JSONRPCRequest{JSONRPC: mcp.JSONRPC_VERSION, ID: mcp.NewRequestId("tg-1"), Method: "tools/call", Params: params}
	n := testing.AllocsPerRun(100, func() {
		if _, err := encodeRequest(req); err != nil {
			t.Fatal(err)
		}
	})
	if n > 1 {
		t.Errorf("%v allocations, want 1 (the request's bytes): encoded by json.Marshal", n)
	}
}

// rawParams are params given as their encoding.
type rawParams string

func (p rawParams) AppendJSON(b []byte) ([]byte, error) { return append(b, p...), nil }

// TestToolgateErrorBodyBounded (item 48): an error answer's body is read
// and quoted up to 64 KiB, however much the server sends (here 4 MiB of
// small events, which the per-message limit of a stream would not stop).
func TestToolgateErrorBodyBounded(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusInternalServerError)
		chunk := strings.Repeat("data: x\n\n", 1000)
		for range (4 << 20) / len(chunk) {
			if _, err := io.WriteString(w, chunk); err != nil {
				return
			}
		}
	}))
	defer srv.Close()
	c, err := NewStreamableHTTP(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, err = c.SendRequest(context.Background(), JSONRPCRequest{JSONRPC: "2.0", ID: mcp.NewRequestId(1), Method: "tools/call"})
	if err == nil || len(err.Error()) > 70<<10 || !strings.Contains(err.Error(), "status 500") || !strings.Contains(err.Error(), "cut at 64 KiB") {
		n := 0
		if err != nil {
			n = len(err.Error())
		}
		t.Fatalf("error of %d bytes: %.200v", n, err)
	}
}

// TestToolgateCloseSendsTheHeaders (item 49): the DELETE that ends the
// session carries the configured headers, as every other request does.
func TestToolgateCloseSendsTheHeaders(t *testing.T) {
	got := make(chan http.Header, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodDelete {
			got <- r.Header.Clone()
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set(HeaderKeySessionID, "s-1")
		_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"s","version":"1"}}}`)
	}))
	defer srv.Close()
	c, err := NewStreamableHTTP(srv.URL, WithHTTPHeaders(map[string]string{"Authorization": "Bearer t"}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.SendRequest(context.Background(), JSONRPCRequest{JSONRPC: "2.0", ID: mcp.NewRequestId(1), Method: "initialize"}); err != nil {
		t.Fatal(err)
	}
	c.Close()
	select {
	case h := <-got:
		if h.Get("Authorization") != "Bearer t" || h.Get(HeaderKeySessionID) != "s-1" {
			t.Errorf("the DELETE's headers: %v", h)
		}
	default:
		t.Fatal("no DELETE ended the session")
	}
}

// TestToolgateSSEEndpointSameOrigin (item 50): the endpoint a legacy SSE
// server names must be of the connection's origin, its scheme included:
// one of another scheme on the same host is refused (the POSTs, with the
// configured headers, would go there), one of the same origin is taken.
func TestToolgateSSEEndpointSameOrigin(t *testing.T) {
	for _, tc := range []struct {
		name     string
		endpoint func(base string) string
		ok       bool
	}{
		{"same origin", func(base string) string { return base + "/message" }, true},
		{"another scheme", func(base string) string { return "https" + strings.TrimPrefix(base, "http") + "/message" }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var base string
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				_, _ = io.WriteString(w, "event: endpoint\ndata: "+tc.endpoint(base)+"\n\n")
				w.(http.Flusher).Flush()
				<-r.Context().Done()
			}))
			defer srv.Close()
			base = srv.URL
			c, err := NewSSE(srv.URL + "/sse")
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			if err := c.Start(ctx); (err == nil) != tc.ok {
				t.Errorf("Start: %v, want ok %v", err, tc.ok)
			}
		})
	}
}

// manyLines is an SSE event whose data is a JSON-RPC response to id 1
// spread over n data lines (JSON allows the newlines they are joined
// with), then a blank line.
func manyLines(n int) string {
	var b strings.Builder
	b.WriteString(`data: {"jsonrpc":"2.0","id":1,"result":{"pad":[` + "\n")
	for range n {
		b.WriteString("data: 0,\n")
	}
	b.WriteString("data: 0]}}\n\n")
	return b.String()
}

// TestToolgateSSEManyDataLines (item 52): an event of many data lines is
// joined in time linear in its size, by both SSE readers: each line was
// appended by copying all the lines before it, so an event of 150,000
// short lines (1.2 MB) held the reader (and every answer behind it) for
// many seconds, and one of the 16 MiB the per-message limit lets through
// for hours.
func TestToolgateSSEManyDataLines(t *testing.T) {
	const n = 150_000
	const within = 3 * time.Second
	t.Run("legacy SSE", func(t *testing.T) {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = io.WriteString(w, "event: junk\n"+manyLines(n)+"event: endpoint\ndata: /message\n\n")
			w.(http.Flusher).Flush()
			<-r.Context().Done()
		}))
		defer srv.Close()
		c, err := NewSSE(srv.URL + "/sse")
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		ctx, cancel := context.WithTimeout(context.Background(), within)
		defer cancel()
		begin := time.Now()
		if err := c.Start(ctx); err != nil {
			t.Fatalf("Start: %v after %s: the endpoint event behind an event of %d data lines was not read within %s", err, time.Since(begin).Round(time.Millisecond), n, within)
		}
	})
	t.Run("streamable HTTP", func(t *testing.T) {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method != http.MethodPost {
				w.WriteHeader(http.StatusMethodNotAllowed)
				return
			}
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = io.WriteString(w, manyLines(n))
		}))
		defer srv.Close()
		c, err := NewStreamableHTTP(srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		ctx, cancel := context.WithTimeout(context.Background(), within)
		defer cancel()
		begin := time.Now()
		resp, err := c.SendRequest(ctx, JSONRPCRequest{JSONRPC: "2.0", ID: mcp.NewRequestId(int64(1)), Method: "ping"})
		if err != nil {
			t.Fatalf("SendRequest: %v after %s: an answer of %d data lines was not read within %s", err, time.Since(begin).Round(time.Millisecond), n, within)
		}
		var res struct{ Pad []int }
		if err := json.Unmarshal(resp.Result, &res); err != nil || len(res.Pad) != n+1 {
			t.Fatalf("result: %d items, %v; want %d", len(res.Pad), err, n+1)
		}
	})
}

// TestToolgateLegacySSEServerStatus (item 66): an initialize POST refused
// with a 4xx other than 401 is still ErrLegacySSEServer, and the error
// says which status it was (a 404 too, which reaches SendRequest as
// ErrSessionTerminated), so that a client can fall back to legacy SSE on
// the statuses that mean it (400, 404, 405) and not on 403.
func TestToolgateLegacySSEServerStatus(t *testing.T) {
	for _, status := range []int{http.StatusBadRequest, http.StatusForbidden, http.StatusNotFound, http.StatusMethodNotAllowed} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, "no", status)
		}))
		c, err := NewStreamableHTTP(srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.SendRequest(context.Background(), JSONRPCRequest{JSONRPC: "2.0", ID: mcp.NewRequestId(1), Method: "initialize"})
		var le *LegacySSEServerError
		if !errors.Is(err, ErrLegacySSEServer) || !errors.As(err, &le) || le.StatusCode != status {
			t.Errorf("status %d: error %v; want ErrLegacySSEServer carrying the status", status, err)
		}
		c.Close()
		srv.Close()
	}
}
