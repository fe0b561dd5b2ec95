package server_test

// toolgate patch: tests of the patch that need mcp-go's client, which
// imports this package (third_party/README.md).

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

type samplingAnswer struct{}

func (samplingAnswer) CreateMessage(ctx context.Context, req mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	return &mcp.CreateMessageResult{
		SamplingMessage: mcp.SamplingMessage{Role: mcp.RoleAssistant, Content: mcp.NewTextContent("sampled")},
		Model:           "test",
	}, nil
}

type rootsAnswer struct{}

func (rootsAnswer) ListRoots(ctx context.Context, req mcp.ListRootsRequest) (*mcp.ListRootsResult, error) {
	return &mcp.ListRootsResult{Roots: []mcp.Root{{URI: "file:///workspace", Name: "workspace"}}}, nil
}

// TestToolgateServerRequestsOverListeningStream: item 28 makes a session's
// queues of server-to-client requests on first use. A tool's sampling and
// roots requests must still reach a 2025-11-25 client over its listening
// (GET) stream, and their answers the tool, whichever of the stream and the
// request takes the queues first.
func TestToolgateServerRequestsOverListeningStream(t *testing.T) {
	s := server.NewMCPServer("t", "1", server.WithToolCapabilities(false))
	s.EnableSampling()
	s.AddTool(mcp.NewTool("ask"), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		res, err := server.ServerFromContext(ctx).RequestSampling(ctx, mcp.CreateMessageRequest{
			CreateMessageParams: mcp.CreateMessageParams{
				Messages:  []mcp.SamplingMessage{{Role: mcp.RoleUser, Content: mcp.NewTextContent("hi")}},
				MaxTokens: 5,
			},
		})
		if err != nil {
			return mcp.NewToolResultError("sampling: " + err.Error()), nil
		}
		text, _ := res.Content.(mcp.TextContent)
		return mcp.NewToolResultText(text.Text), nil
	})
	s.AddTool(mcp.NewTool("roots"), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		res, err := server.ServerFromContext(ctx).RequestRoots(ctx, mcp.ListRootsRequest{})
		if err != nil {
			return mcp.NewToolResultError("roots: " + err.Error()), nil
		}
		if len(res.Roots) != 1 {
			return mcp.NewToolResultError("roots: none"), nil
		}
		return mcp.NewToolResultText(res.Roots[0].URI), nil
	})
	ts := httptest.NewServer(server.NewStreamableHTTPServer(s))
	defer ts.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	//lint:ignore SA1019 the 2025-11-25 listening stream is what the queues serve
	tr, err := transport.NewStreamableHTTP(ts.URL, transport.WithContinuousListening())
	if err != nil {
		t.Fatal(err)
	}
	c := client.NewClient(tr, client.WithSamplingHandler(samplingAnswer{}), client.WithRootsHandler(rootsAnswer{}))
	defer c.Close()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = "2025-11-25"
	init.Params.ClientInfo = mcp.Implementation{Name: "t", Version: "1"}
	if _, err := c.Initialize(ctx, init); err != nil {
		t.Fatal(err)
	}
	for tool, want := range map[string]string{"ask": "sampled", "roots": "file:///workspace"} {
		req := mcp.CallToolRequest{}
		req.Params.Name = tool
		res, err := c.CallTool(ctx, req)
		if err != nil {
			t.Fatalf("%s: %v", tool, err)
		}
		if text, _ := res.Content[0].(mcp.TextContent); res.IsError || text.Text != want {
			t.Fatalf("%s: got %+v, want the text %q", tool, res.Content, want)
		}
	}
}
