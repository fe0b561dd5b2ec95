//lint:file-ignore SA1019 these clients are of 2025-11-25, whose GET stream and roots (deprecated in 2026-07-28) are what is tested

package gateway

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// rootsAnswer answers roots/list with one root.
type rootsAnswer string

func (r rootsAnswer) ListRoots(context.Context, mcp.ListRootsRequest) (*mcp.ListRootsResult, error) {
	return &mcp.ListRootsResult{Roots: []mcp.Root{{URI: string(r), Name: "project"}}}, nil
}

// rootsClient is how a test client takes part in roots: whether it
// declares the capability (mcp-go's client does when it has a roots
// handler, which answers with root) and whether it opens the GET stream
// (mcp-go's client opens none by default).
type rootsClient struct {
	root    rootsAnswer
	declare bool
	listen  bool
}

// dial connects a 2025-11-25 client to url over streamable HTTP.
func (rc rootsClient) dial(t *testing.T, url string) *client.Client {
	t.Helper()
	opts := []transport.StreamableHTTPCOption{transport.WithHTTPLogger(slog.New(slog.DiscardHandler))}
	if rc.listen {
		opts = append(opts, transport.WithContinuousListening())
	}
	tr, err := transport.NewStreamableHTTP(url, opts...)
	if err != nil {
		t.Fatal(err)
	}
	copts := []client.ClientOption{client.WithProtocolVersion(mcp.LATEST_LEGACY_PROTOCOL_VERSION)}
	if rc.declare {
		copts = append(copts, client.WithRootsHandler(rc.root))
	}
	return rc.start(t, client.NewClient(tr, copts...))
}

// start starts and initializes c.
func (rc rootsClient) start(t *testing.T, c *client.Client) *client.Client {
	t.Helper()
	if err := c.Start(context.Background()); err != nil { // the GET stream's context
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	params := mcp.InitializeParams{ProtocolVersion: mcp.LATEST_LEGACY_PROTOCOL_VERSION, ClientInfo: mcp.Implementation{Name: "t", Version: "1"}}
	if rc.declare {
		params.Capabilities.Roots = &struct {
			ListChanged bool `json:"listChanged,omitempty"`
		}{}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := c.Initialize(ctx, mcp.InitializeRequest{Params: params}); err != nil {
		t.Fatal(err)
	}
	return c
}

// rootsServer is an MCP server whose catalog holds a toolset that follows
// the client's roots (as an upstream with forward_roots does), and an ask
// of its ClientRoots.
func rootsServer(t *testing.T) (*MCPServer, rootsFollower, func() ([]ClientRoot, error)) {
	t.Helper()
	ts, err := NewToolset("up")
	if err != nil {
		t.Fatal(err)
	}
	f := rootsFollower{Toolset: ts, told: make(chan struct{}, 16)}
	cat := NewCatalog(nil)
	if err := cat.Add(context.Background(), f); err != nil {
		t.Fatal(err)
	}
	m := NewMCPServer(&MCPOptions{Name: "t", Version: "1", Catalog: cat, Pipeline: NewPipeline(&Options{Tools: cat})})
	// An ask may wait at most the test's patience: a wait for a client that
	// cannot answer ends as the context's error, none of those asserted.
	ask := func() ([]ClientRoot, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		return m.ClientRoots(ctx)
	}
	return m, f, ask
}

// waitTold waits for the follower to be told the roots changed.
func (f rootsFollower) waitTold(t *testing.T, why string) {
	t.Helper()
	select {
	case <-f.told:
	case <-time.After(10 * time.Second):
		t.Fatalf("the toolset following the client's roots was not told they changed: %s", why)
	}
}

// The roots forwarded to upstreams (forward_roots) are asked of the latest
// client that declared the roots capability and can be asked: over HTTP,
// one that opened its GET stream, where a request outside its own
// requests goes. The latest client connected may be neither; asking it
// kept the upstream waiting to its deadline. An upstream is told the
// roots changed when the client that would be asked does (a client
// becomes askable, or leaves), so that one that asked before any client
// could answer, at its own start, asks again. With no client to ask the
// answer is an error at once.
func TestClientRootsAskTheLatestClientThatCanAnswer(t *testing.T) {
	m, follower, ask := rootsServer(t)
	url := serveMCP(t, m)

	if _, err := ask(); !errors.Is(err, ErrNoClient) {
		t.Fatalf("no client connected: %v, want ErrNoClient", err)
	}

	first := rootsClient{root: "file:///work/first", declare: true, listen: true}.dial(t, url)
	follower.waitTold(t, "a client that declared roots opened its GET stream")
	want := func(uri string) {
		t.Helper()
		roots, err := ask()
		if err != nil || len(roots) != 1 || roots[0].URI != uri {
			t.Fatalf("roots %+v (%v): want %s", roots, err, uri)
		}
	}
	want("file:///work/first")

	// Later clients that cannot be asked: one that declared nothing, one
	// that declared roots but opened no GET stream.
	silent := rootsClient{}.dial(t, url)
	streamless := rootsClient{root: "file:///work/streamless", declare: true}.dial(t, url)
	want("file:///work/first")

	// The only askable client leaves: the roots change (to none).
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	follower.waitTold(t, "the client asked left")
	if _, err := ask(); !errors.Is(err, ErrClientCannot) || !strings.Contains(err.Error(), "none has opened one") {
		t.Fatalf("a declaring client without a GET stream: %v", err)
	}
	if err := streamless.Close(); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the streamless client's session to end", func() bool {
		_, err := ask()
		return err != nil && strings.Contains(err.Error(), "no connected client declared the roots capability")
	})
	if _, err := ask(); !errors.Is(err, ErrClientCannot) {
		t.Fatalf("only a client that declared nothing: %v", err)
	}
	if err := silent.Close(); err != nil {
		t.Fatal(err)
	}
	eventually(t, "every session to end", func() bool {
		_, err := ask()
		return errors.Is(err, ErrNoClient)
	})
	select {
	case <-follower.told:
		t.Error("told the roots changed when clients that were never asked left")
	default:
	}
}

// Over stdio the client is asked once it said it is initialized, and the
// upstreams that follow its roots are told then.
func TestClientRootsOverStdio(t *testing.T) {
	m, follower, ask := rootsServer(t)
	inW, outR := serveMCPStdio(t, m)
	rc := rootsClient{root: "file:///work/stdio", declare: true}
	rc.start(t, client.NewClient(transport.NewIO(outR, inW, io.NopCloser(strings.NewReader(""))), client.WithRootsHandler(rc.root)))
	follower.waitTold(t, "the stdio client is initialized")
	roots, err := ask()
	if err != nil || len(roots) != 1 || roots[0].URI != "file:///work/stdio" {
		t.Fatalf("roots %+v (%v)", roots, err)
	}
}
