package upstream

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/toolgate/toolgate/gateway"
)

// secretRoots answers roots/list with one root a test must never see at
// an upstream without forward_roots.
type secretRoots struct{}

const secretRoot = "file:///home/me/secret-project"

func (secretRoots) ListRoots(context.Context, mcp.ListRootsRequest) (*mcp.ListRootsResult, error) {
	return &mcp.ListRootsResult{Roots: []mcp.Root{{URI: secretRoot, Name: "secret"}}}, nil
}

// servedClientOver serves u through toolgate's MCP mirror over streamable
// HTTP, or over a pair of pipes when stdio is set, and returns a client of
// the protocol version that declared roots (and answers roots/list, in
// rounds or as requests). Over HTTP the client opens no GET stream, as
// mcp-go's does not by default: what it is asked comes on its requests'
// streams.
func servedClientOver(t *testing.T, u *Upstream, version string, stdio bool) (*client.Client, context.Context) {
	t.Helper()
	g := newGW(t, u)
	m := gateway.NewMCPServer(&gateway.MCPOptions{Name: "toolgate", Version: "test", Catalog: g.cat, Pipeline: g.pipe})
	m.AddPromptSource(u)
	var tr transport.Interface
	if stdio {
		inR, inW := io.Pipe()
		outR, outW := io.Pipe()
		sctx, stop := context.WithCancel(context.Background())
		served := make(chan struct{})
		go func() {
			defer close(served)
			_ = m.ServeStdio(sctx, inR, outW)
			_ = outW.Close()
		}()
		t.Cleanup(func() {
			stop()
			_ = inW.Close()
			<-served
		})
		tr = transport.NewIO(outR, inW, io.NopCloser(strings.NewReader("")))
	} else {
		tr = serveHTTP(t, m)
	}
	c := client.NewClient(tr, client.WithProtocolVersion(version), client.WithRootsHandler(secretRoots{}))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	if _, err := c.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{
		ProtocolVersion: version, ClientInfo: mcp.Implementation{Name: "t", Version: "1"},
		Capabilities: mcp.ClientCapabilities{Roots: &struct {
			ListChanged bool `json:"listChanged,omitempty"`
		}{ListChanged: true}},
	}}); err != nil {
		t.Fatal(err)
	}
	return c, ctx
}

// A client's roots never reach an upstream of 2026-07-28 without
// forward_roots, whatever the client's era: the roots capability the
// client declared is not passed on in the requests' envelope, and a round
// in which the upstream asks for roots anyway (roots/list in its
// input_required result) is refused, as the 2025-11-25 relay refuses its
// roots/list request, instead of being asked of the client and the answer
// handed to the upstream. With forward_roots the client is asked.
func TestModernRootsOnlyWithForwardRoots(t *testing.T) {
	for _, tc := range []struct {
		version        string
		forward, stdio bool
	}{
		{mcp.ProtocolVersion20260728, false, false},
		{mcp.LATEST_LEGACY_PROTOCOL_VERSION, false, false},
		{mcp.ProtocolVersion20260728, true, false},
		{mcp.LATEST_LEGACY_PROTOCOL_VERSION, true, false},
		{mcp.LATEST_LEGACY_PROTOCOL_VERSION, true, true},
	} {
		t.Run(tc.version+map[bool]string{true: "/forward_roots"}[tc.forward]+map[bool]string{true: "/stdio"}[tc.stdio], func(t *testing.T) {
			cfg := stdio2026Config(t, "m")
			cfg.ForwardRoots = tc.forward
			c, ctx := servedClientOver(t, start(t, cfg, nil, true), tc.version, tc.stdio)

			caps, err := c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "m__client_caps", Arguments: map[string]any{}}})
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Contains(caps.Content[0].(mcp.TextContent).Text, `"roots"`); got != tc.forward {
				t.Errorf("the upstream was told the client capabilities %s; roots declared: %v, want %v",
					caps.Content[0].(mcp.TextContent).Text, got, tc.forward)
			}

			res, err := c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "m__ask_roots", Arguments: map[string]any{}}})
			var said string
			if err == nil && len(res.Content) > 0 {
				said = res.Content[0].(mcp.TextContent).Text
			}
			switch {
			case tc.forward && (err != nil || said != "got roots: "+secretRoot):
				t.Errorf("tools/call with forward_roots: %v %q; want the client's roots at the upstream", err, said)
			case !tc.forward && strings.Contains(said, secretRoot):
				t.Errorf("tools/call: the upstream got the client's roots without forward_roots: %q", said)
			case !tc.forward && (err == nil && !res.IsError || !strings.Contains(said+errText(err), "roots are not offered to this upstream")):
				t.Errorf("tools/call: %v %q; want the round refused: roots are not offered to this upstream", err, said)
			}

			pr, err := c.GetPrompt(ctx, mcp.GetPromptRequest{Params: mcp.GetPromptParams{Name: "m__ask_roots"}})
			said = ""
			if err == nil && len(pr.Messages) > 0 {
				said = pr.Messages[0].Content.(mcp.TextContent).Text
			}
			switch {
			case tc.forward && (err != nil || said != "got roots: "+secretRoot):
				t.Errorf("prompts/get with forward_roots: %v %q; want the client's roots at the upstream", err, said)
			case !tc.forward && strings.Contains(said, secretRoot):
				t.Errorf("prompts/get: the upstream got the client's roots without forward_roots: %q", said)
			case !tc.forward && (err == nil || !strings.Contains(err.Error(), "roots are not offered to this upstream")):
				t.Errorf("prompts/get: %v %q; want the round refused: roots are not offered to this upstream", err, said)
			}
		})
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
