package e2e

// A request toolgate sends a client and stops waiting for is cancelled at
// the client (notifications/cancelled), so that the client closes the
// question instead of keeping it open for nobody.

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestAbandonedElicitationIsCancelledAtTheClient: an approval form (an
// elicitation/create toolgate sends) that the person leaves unanswered
// past policy.approval.timeout is taken back from the Go SDK client, over
// stdio and streamable HTTP: the handler's context ends (the SDK ends it
// on notifications/cancelled) right after the call is refused, not when
// the handler gives up by itself.
func TestAbandonedElicitationIsCancelledAtTheClient(t *testing.T) {
	t.Parallel()
	for _, transport := range []string{"stdio", "http"} {
		t.Run(transport, func(t *testing.T) {
			t.Parallel()
			e := approvalEnv(t)
			var s *Server
			if transport == "stdio" {
				s = e.StartStdio(t)
			} else {
				s = e.StartHTTP(t)
			}
			ended := make(chan bool, 1) // whether the handler's ctx ended
			cs := s.Connect(t, era2025, &ConnectOptions{Client: &mcp.ClientOptions{
				ElicitationHandler: func(ctx context.Context, _ *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					select {
					case <-ctx.Done():
						ended <- true
						return nil, ctx.Err()
					case <-time.After(15 * time.Second):
						ended <- false
						return &mcp.ElicitResult{Action: "decline"}, nil
					}
				},
			}})
			r := call(t, cs, "echo", map[string]any{"text": "unanswered"})
			if !r.IsError || !strings.Contains(textOf(r), "no approval within") {
				t.Fatalf("unanswered approval: %q", textOf(r))
			}
			select {
			case ok := <-ended:
				if !ok {
					t.Fatal("the form stayed open at the client until its handler gave up")
				}
			case <-time.After(5 * time.Second):
				t.Fatal("the client was not told that toolgate stopped waiting for the form (no notifications/cancelled)")
			}
		})
	}
}
