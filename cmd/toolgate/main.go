// Command toolgate is an MCP tool gateway: it serves sandboxed built-in
// tools and the tools of upstream MCP servers to MCP clients over stdio or
// streamable HTTP, passing every call through one pipeline that validates,
// authorizes, executes, summarizes and records it.
//
// Usage:
//
//	toolgate serve [--http ADDR] [--config FILE]   serve MCP (stdio unless --http)
//	toolgate tools [--json]                        list the tools and the policy's decision for each
//	toolgate call TOOL [JSON-ARGS] [--json]        run one call through the pipeline
//	toolgate config                                print the effective configuration
//	toolgate version                               print the version
//
// This file and its siblings stay thin: they parse flags into a config, wire
// the packages together (app.go) and run.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := Main(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
