// Command minproxy is the proxy-hop benchmark's baseline proxy: a minimal
// passthrough MCP proxy built on mcp-go and nothing else. It connects to
// one upstream MCP server with mcp-go's client (streamable HTTP with
// -upstream-url, or a stdio child with -upstream-cmd), lists its tools once,
// and serves them unchanged over streamable HTTP (stateful, as
// `toolgate serve --http` does); each tools/call is forwarded with the
// client's CallTool as it came in and the result returned as it came
// back. No validation, policy, limits, records or logs: what is left is
// the cost of the second MCP hop itself, which is what toolgate's added
// latency is compared with.
//
//	minproxy -addr 127.0.0.1:8767 -upstream-url http://127.0.0.1:8766/mcp
//	minproxy -addr 127.0.0.1:8767 -upstream-cmd bareserver -upstream-arg -stdio
//
// One upstream connection serves every downstream session, as in
// toolgate. The upstream HTTP client is mcp-go's default (an
// http.Client{} on http.DefaultTransport, 2 idle connections per host),
// the same pool size toolgate's upstream client has; -upstream-idle-conns
// raises it. It serves until SIGINT or SIGTERM.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"github.com/toolgate/toolgate/e2e/bench/bare"
)

type multi []string

func (m *multi) String() string     { return strings.Join(*m, " ") }
func (m *multi) Set(s string) error { *m = append(*m, s); return nil }

func main() {
	addr := flag.String("addr", "127.0.0.1:8767", "listen address (loopback)")
	upURL := flag.String("upstream-url", "", "upstream streamable HTTP endpoint")
	upCmd := flag.String("upstream-cmd", "", "upstream stdio command")
	var upArgs multi
	flag.Var(&upArgs, "upstream-arg", "argument of -upstream-cmd (repeat for several)")
	idle := flag.Int("upstream-idle-conns", 0, "idle connections kept per upstream host (0: mcp-go's default client, i.e. Go's default of 2)")
	flag.Parse()
	if (*upURL == "") == (*upCmd == "") {
		log.Fatal("minproxy: exactly one of -upstream-url and -upstream-cmd")
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	var tr transport.Interface
	if *upURL != "" {
		var opts []transport.StreamableHTTPCOption
		if *idle > 0 {
			t := http.DefaultTransport.(*http.Transport).Clone()
			t.MaxIdleConns, t.MaxIdleConnsPerHost = *idle, *idle
			opts = append(opts, transport.WithHTTPBasicClient(&http.Client{Transport: t}))
		}
		var err error
		if tr, err = transport.NewStreamableHTTP(*upURL, opts...); err != nil {
			log.Fatalf("minproxy: %v", err)
		}
	} else {
		tr = transport.NewStdio(*upCmd, nil, upArgs...)
	}
	up := client.NewClient(tr, client.WithProtocolVersion(mcp.LATEST_LEGACY_PROTOCOL_VERSION))
	// The transport lives as long as the proxy (for stdio, cancelling its
	// context kills the child).
	if err := up.Start(ctx); err != nil {
		log.Fatalf("minproxy: starting the upstream client: %v", err)
	}
	defer up.Close()
	ictx, cancel := context.WithTimeout(ctx, 30*time.Second)
	if err := bare.Initialize(ictx, up, mcp.LATEST_LEGACY_PROTOCOL_VERSION, "minproxy"); err != nil {
		log.Fatalf("minproxy: %v", err)
	}
	tools, err := up.ListTools(ictx, mcp.ListToolsRequest{})
	cancel()
	if err != nil {
		log.Fatalf("minproxy: tools/list: %v", err)
	}

	s := server.NewMCPServer("minproxy", "1.0.0", server.WithToolCapabilities(true))
	for _, t := range tools.Tools {
		s.AddTool(t, func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return up.CallTool(ctx, req)
		})
	}

	streamable := server.NewStreamableHTTPServer(s, server.WithStateful(true), server.WithSessionIdleTTL(30*time.Minute))
	mux := http.NewServeMux()
	mux.Handle("/mcp", streamable)
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"status":"ok","tools":%d}`+"\n", len(tools.Tools))
	})
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatal(err)
	}
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = streamable.Shutdown(sctx)
		_ = hs.Shutdown(sctx)
	}()
	fmt.Fprintf(os.Stderr, "minproxy: serving %d upstream tools on http://%s/mcp\n", len(tools.Tools), ln.Addr())
	if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		log.Fatal(err)
	}
}
