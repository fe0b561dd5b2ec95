// Command toolgate is an MCP tool gateway: it serves sandboxed built-in
// tools and the tools of upstream MCP servers to MCP clients over stdio or
// streamable HTTP, passing every call through one pipeline that validates,
// authorizes, executes, summarizes and records it.
//
// Usage: toolgate COMMAND [flags]. `toolgate help` lists the commands and
// `toolgate COMMAND --help` a command's flags. The list lives in one place,
// the commands' own registrations (one file per command), so this comment
// does not repeat it.
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
	// A client that dies closes the pipes: without this, Go's runtime
	// kills a process that writes to a broken stdout or stderr (SIGPIPE),
	// before the calls in flight are recorded and the run is stopped.
	// Notified, the write fails with EPIPE and the server ends as on EOF.
	// (Not signal.Ignore: upstream children would inherit SIG_IGN.)
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := Main(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
