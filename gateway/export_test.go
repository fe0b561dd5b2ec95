package gateway

import "github.com/mark3labs/mcp-go/server"

// Test-only access for the external test package (gateway_test), kept out
// of the public API: the benchmarks compare the mirror's handling of a
// message with a bare mcp-go server's.

// MCPGoServer returns the mirror's mcp-go server.
func (m *MCPServer) MCPGoServer() *server.MCPServer { return m.srv }
