// Package bare is the bare mcp-go server toolgate is measured against: the
// echo tool of toolgate's diagnostics toolset and nothing else (no
// validation, policy, records or logs). The end-to-end baseline
// (cmd/bareserver) serves it, and the in-process benchmarks send it
// EchoCall.
//
// It uses only mcp-go's published API, so that it builds both on
// toolgate's patched copy (this module) and on mcp-go as published (the
// module in e2e/bench/stock, which requires this one): the same source
// measured on either library (README.md, "Two bare servers").
package bare

import (
	"context"
	"encoding/json"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// EchoText is the text every benchmarked echo call sends.
const EchoText = "hello, toolgate"

// EchoCall is one tools/call of the echo tool, as a client sends it.
var EchoCall = json.RawMessage(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"text":"` + EchoText + `"}}}`)

// NewServer is the bare server. Its echo tool is annotated read-only and
// closed-world, so that toolgate allows it by default when it is
// configured as an upstream.
func NewServer() *server.MCPServer {
	s := server.NewMCPServer("bare", "1.0.0", server.WithToolCapabilities(true))
	s.AddTool(mcp.NewTool("echo",
		mcp.WithDescription("Return the given text unchanged."),
		mcp.WithString("text", mcp.Required(), mcp.Description("Text to return unchanged")),
		mcp.WithReadOnlyHintAnnotation(true),
		mcp.WithOpenWorldHintAnnotation(false),
	), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText(req.GetString("text", "")), nil
	})
	return s
}
