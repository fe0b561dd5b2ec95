// Command bareserver is the end-to-end benchmark's baseline: a bare mcp-go
// server exposing the same echo tool as toolgate's diagnostics toolset over
// streamable HTTP, with no pipeline (no validation, policy, records or
// logs). It uses the same transport mode as `toolgate serve --http`
// (stateful sessions) so that the comparison measures what toolgate adds.
//
//	bareserver -addr 127.0.0.1:8766
//
// It serves until SIGINT or SIGTERM. With -stdio it serves the same tool
// on stdin/stdout instead (the proxy-hop benchmark's stdio upstream). The
// server itself is package bare's.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/mark3labs/mcp-go/server"
	"github.com/toolgate/toolgate/e2e/bench/bare"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8766", "listen address (loopback)")
	stateless := flag.Bool("stateless", false, "serve without sessions (mcp-go's stateless mode) instead of toolgate's stateful mode")
	stdio := flag.Bool("stdio", false, "serve on stdin/stdout instead of HTTP")
	flag.Parse()

	s := bare.NewServer()

	if *stdio {
		if err := server.ServeStdio(s); err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, io.EOF) {
			log.Fatal(err)
		}
		return
	}

	var opts []server.StreamableHTTPOption
	if *stateless {
		opts = append(opts, server.WithStateLess(true))
	} else {
		opts = append(opts, server.WithStateful(true), server.WithSessionIdleTTL(30*time.Minute))
	}
	streamable := server.NewStreamableHTTPServer(s, opts...)
	mux := http.NewServeMux()
	mux.Handle("/mcp", streamable)
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintln(w, `{"status":"ok"}`)
	})

	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatal(err)
	}
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = streamable.Shutdown(sctx)
		_ = hs.Shutdown(sctx)
	}()
	fmt.Fprintf(os.Stderr, "bareserver: serving http://%s/mcp\n", ln.Addr())
	if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		log.Fatal(err)
	}
}
