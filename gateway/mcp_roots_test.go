//lint:file-ignore SA1019 these clients are of 2025-11-25, whose GET stream and roots (deprecated in 2026-07-28) are what is tested

package gateway

import (
	"context"
	"errors"
	"io"
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

	// A client declares roots when it has a roots handler (mcp-go's does).
	first, _ := dialMCPStream(t, url, true, client.WithRootsHandler(rootsAnswer("file:///work/first")))
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
	silent, _ := dialMCPStream(t, url, false)
	streamless, _ := dialMCPStream(t, url, false, client.WithRootsHandler(rootsAnswer("file:///work/streamless")))
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
	startMCPClient(t, transport.NewIO(outR, inW, io.NopCloser(strings.NewReader(""))), client.WithRootsHandler(rootsAnswer("file:///work/stdio")))
	follower.waitTold(t, "the stdio client is initialized")
	roots, err := ask()
	if err != nil || len(roots) != 1 || roots[0].URI != "file:///work/stdio" {
		t.Fatalf("roots %+v (%v)", roots, err)
	}
}
