package server

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestToolgateLateAnswerIsAccepted (item 60): over streamable HTTP, a
// client's answer to a request the server no longer waits for (it gave up,
// and may have cancelled it) is accepted and dropped, as over stdio (item
// 59): v1.2.1 refused it with 400 Bad Request, which a client takes for a
// failure of its own (the Go SDK fails its next call with it).
func TestToolgateLateAnswerIsAccepted(t *testing.T) {
	h := NewStreamableHTTPServer(NewMCPServer("t", "1"))
	ts := httptest.NewServer(h)
	defer ts.Close()
	sessionID := initializeSession(t, h)
	header := http.Header{}
	header.Set("Mcp-Session-Id", sessionID)
	header.Set("Mcp-Protocol-Version", "2025-11-25")
	for _, answer := range []string{
		`{"jsonrpc":"2.0","id":77,"result":{"action":"accept","content":{"name":"Ada"}}}`,
		`{"jsonrpc":"2.0","id":78,"error":{"code":-32800,"message":"request cancelled"}}`,
	} {
		resp := postMCP(t, ts.URL, answer, header)
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusAccepted {
			t.Errorf("late answer %s: %d %s; want 202 Accepted", answer, resp.StatusCode, body)
		}
	}
}
