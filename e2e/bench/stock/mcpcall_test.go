package benchstock

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/server"
	"github.com/toolgate/toolgate/e2e/bench/bare"
)

// BenchmarkMCPCall/published-mcp-go is the root module's
// BenchmarkMCPCall/bare-mcp-go on mcp-go as published: the bare server
// handles bare.EchoCall and the response is encoded as v1.2.1's transports
// encode it (encoding/json; the patched copy's transports use
// mcp.MarshalMessage, which v1.2.1 lacks). Its name puts it in the same
// group as toolgate's mirror, for a ratio against it (e2e/bench/run.sh).
func BenchmarkMCPCall(b *testing.B) {
	b.Run("published-mcp-go", func(b *testing.B) {
		s := bare.NewServer()
		ctx := context.Background()
		out, err := json.Marshal(s.HandleMessage(ctx, bare.EchoCall))
		if err != nil || !strings.Contains(string(out), `"text":"`+bare.EchoText+`"`) {
			b.Fatalf("unexpected response %s (%v)", out, err)
		}
		b.ReportAllocs()
		b.SetBytes(int64(len(out)))
		for b.Loop() {
			if _, err := json.Marshal(s.HandleMessage(ctx, bare.EchoCall)); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkHTTPCall/<version>/published-mcp-go is the root module's
// BenchmarkHTTPCall/<version>/bare-mcp-go on mcp-go as published: the same
// recorded request (bare.HTTPCall) handed to v1.2.1's streamable HTTP
// transport in process.
func BenchmarkHTTPCall(b *testing.B) {
	for _, proto := range []string{"2025-11-25", "2026-07-28"} {
		b.Run(proto+"/published-mcp-go", func(b *testing.B) {
			bare.BenchHTTPCall(b, server.NewStreamableHTTPServer(bare.NewServer()), proto)
		})
	}
}
