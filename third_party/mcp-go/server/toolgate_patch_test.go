package server

// toolgate patch: tests that the fast paths of the patch's speed items are
// taken where they are meant to be (third_party/README.md). What each path
// computes is held to v1.2.1's by toolgate's own tests
// (gateway/mcpgo_patch_test.go, from outside this package); a fast path
// that is silently never taken passes those, so these look inside.

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

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
