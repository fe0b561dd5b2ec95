package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os/signal"
	"path/filepath"
	"runtime"
	"time"

	"github.com/spf13/pflag"
	"github.com/toolgate/toolgate/cmd/toolgate/internal/config"
	"github.com/toolgate/toolgate/gateway"
	"golang.org/x/net/netutil"
)

func init() {
	commands = append(commands, &command{
		name:  "serve",
		args:  "[--http ADDR] [--profile NAME] [--config FILE]",
		short: "serve MCP over stdio, or over streamable HTTP with --http",
		flags: func(fs *pflag.FlagSet) {
			configFlags(fs)
			fs.String("http", "", "serve streamable HTTP on ADDR (e.g. 127.0.0.1:8765) instead of stdio (config http.addr)")
			fs.String("profile", "", "serve the profile NAME (config profiles) on stdio and on http.path")
		},
		run: runServe,
	})
}

func runServe(e *env, fs *pflag.FlagSet, args []string) error {
	if len(args) > 0 {
		return usagef("serve takes no arguments, got %q", args)
	}
	hup := notifySIGHUP()
	defer signal.Stop(hup)
	keys := withKeys(map[string]string{"http": "http.addr"})
	cfg, err := loadConfig(fs, keys)
	if err != nil {
		return err
	}
	if err := checkProfile(cfg, fs); err != nil {
		return err
	}
	var tokens []gateway.BearerToken
	if cfg.HTTP.Addr != "" {
		if tokens, err = cfg.Tokens(); err != nil {
			return usageError{err.Error()}
		}
		if !config.IsLoopback(cfg.HTTP.Addr) && len(tokens) == 0 && !cfg.HTTP.Auth.OAuth.Enabled() && !cfg.HTTP.Auth.AllowUnauthenticatedRemote {
			return usagef("refusing to serve %s (not a loopback address) without bearer tokens: set http.auth.tokens, http.auth.token_env or http.auth.oauth, or set http.auth.allow_unauthenticated_remote: true", cfg.HTTP.Addr)
		}
	}
	// Bind before anything else is started or written: a serve that cannot
	// bind leaves no run directory behind and starts no upstream.
	var ln net.Listener
	if cfg.HTTP.Addr != "" {
		if ln, err = net.Listen("tcp", cfg.HTTP.Addr); err != nil {
			return fmt.Errorf("http: %w", err)
		}
		defer ln.Close()
	}
	a, err := newApp(e.ctx, cfg, e.stderr, appOptions{record: true, upstreams: upstreamStart{grace: serveStartupGrace}, serve: true,
		command: e.args, configFile: configPathOf(configFiles(fs))})
	if err != nil {
		return err
	}
	a.catalog.OnChange(func() { a.globs.check(a) })
	a.globs.check(a)
	profile, _ := fs.GetString("profile") // one the configuration defines (checkProfile)
	if err := a.setViews(cfg); err != nil {
		a.close()
		return err
	}
	a.servedProfile = profile
	var view gateway.View = liveView{a: a, name: profile}
	srv := gateway.NewMCPServer(&gateway.MCPOptions{
		Name:         "toolgate",
		Version:      version(),
		Instructions: "toolgate serves sandboxed tools; every call is validated, authorized and recorded. Large outputs are saved as artifacts you can read with resources/read.",
		Catalog:      a.catalog,
		Pipeline:     a.pipeline,
		Artifacts:    a.run,
		ToolFilter:   a.toolFilter(),
		View:         view,
		CallerView:   a.policy.IdentityView,
		ToolMeta:     a.toolMeta,
		SessionMeta:  a.policy.HasSessionGrants,
		OnSessionEnd: a.forgetSession,
		// One bound for a message however it comes: a POST's body, a line
		// on stdin.
		MaxStdioMessageBytes: cfg.HTTP.MaxBodyBytes,
		Logger:               a.log,
	})
	roots := srv.ClientRoots
	a.clientRoots.Store(&roots)
	for _, src := range a.promptSources {
		srv.AddPromptSource(src)
	}
	for _, src := range a.resourceSources {
		srv.AddResourceSource(src)
	}
	metricsCtx, stopMetrics := context.WithCancel(context.Background())
	defer stopMetrics()
	if err := a.serveMetrics(metricsCtx, cfg.HTTP.Addr != ""); err != nil {
		a.close()
		return err
	}
	if err := a.serveAdmin(metricsCtx); err != nil {
		a.close()
		return err
	}
	reloadCtx, stopReload := context.WithCancel(e.ctx)
	defer stopReload()
	if a.reloads, err = startReloader(reloadCtx, a, srv, hup, append(configFiles(fs), upstreamsFromFiles(cfg)...), reloadLoad(fs, keys)); err != nil {
		a.log.Warn("config file changes will not be picked up; SIGHUP still reloads", "err", err)
	}
	defer controlProcs(e.ctx, a.pipeline.Overlaps(), a.log)() // Go's default back before serve returns
	// The heap floor is for serving, so it starts here. Start-up (listing
	// the upstreams, building the catalog) makes garbage: Go's default
	// collects it and reuses its pages, where the floor would let the heap
	// grow to 16 MiB first, each page new to the process and faulted in.
	// With 20 upstreams of 100 tools that was 3,300 more page faults, and
	// page faults are half of start-up's CPU on a paravirtualized machine
	// (docs/benchmarks-journal.md).
	defer keepHeapFloor(serveHeapFloor)()
	a.log.Info("toolgate starting", "version", version(), "run_dir", a.run.Dir(), "tools", len(a.catalog.Entries()), "sandbox", a.sandbox.Roots())

	if cfg.HTTP.Addr == "" {
		err = serveStdio(e, a, srv)
	} else {
		err = serveHTTP(e, a, srv, ln, tokens)
	}
	stopReload()     // no reload starts upstreams while the app closes,
	a.reloads.wait() // and one under way has finished
	switch {
	case err != nil:
		a.run.SetStatus("error: " + err.Error())
	case e.ctx.Err() != nil:
		a.run.SetStatus("signal")
	}
	if cerr := a.shutdown(); cerr != nil {
		a.log.Error("closing", "err", cerr)
	}
	a.log.Info("toolgate stopped", "run_dir", a.run.Dir())
	_ = a.closeLog() // last: the lines above reach log.file too
	return err
}

// serveStdio serves until stdin ends or a signal arrives. On a signal,
// calls in flight get the grace period before the protocol stream closes.
func serveStdio(e *env, a *app, srv *gateway.MCPServer) error {
	listenCtx, stopListen := context.WithCancel(context.Background())
	defer stopListen()
	done := make(chan error, 1)
	go func() { done <- srv.ServeStdio(listenCtx, e.stdin, e.stdout) }()
	a.log.Info("serving MCP over stdio") // what a client's log of this process shows first
	select {
	case err := <-done: // stdin closed: the client is gone
		if err != nil && !errors.Is(err, context.Canceled) {
			return fmt.Errorf("stdio: %w", err)
		}
		a.log.Info("stdin closed: the client ended the session")
		return nil
	case <-e.ctx.Done():
		a.log.Info("signal received; draining calls", "grace", a.cfg.Limits.ShutdownGrace)
		a.drain()
		stopListen()
		select {
		case <-done:
		case <-time.After(2 * time.Second):
		}
		return nil
	}
}

func serveHTTP(e *env, a *app, srv *gateway.MCPServer, ln net.Listener, tokens []gateway.BearerToken) error {
	cfg := a.cfg
	hosts := cfg.HTTP.AllowedHosts
	if len(hosts) == 0 {
		if config.IsLoopback(cfg.HTTP.Addr) {
			hosts = nil // the loopback names
		} else {
			hosts = []string{"*"} // tokens guard a non-loopback bind
		}
	}
	origins := cfg.HTTP.AllowedOrigins
	if len(origins) == 0 {
		origins = nil // the loopback origins
	}
	oauthOpts, err := a.oauthOptions(e.ctx)
	if err != nil {
		return err
	}
	sessionKeys, err := cfg.SessionKeys()
	if err != nil {
		return usageError{err.Error()}
	}
	handler, closeSessions := srv.HTTPHandler(gateway.HTTPOptions{
		OAuth:                 oauthOpts,
		TraceHeaders:          cfg.Traces.Enabled,
		SessionKeys:           sessionKeys,
		Path:                  cfg.HTTP.Path,
		AllowedOrigins:        origins,
		AllowedHosts:          hosts,
		MaxBodyBytes:          cfg.HTTP.MaxBodyBytes,
		Tokens:                tokens,
		SessionIdleTTL:        cfg.HTTP.SessionIdleTTL,
		MaxSessions:           cfg.HTTP.MaxSessions,
		MaxStreams:            cfg.HTTP.MaxStreams,
		MaxBodyMemory:         cfg.HTTP.MaxBodyMemory,
		BodyReadTimeout:       cfg.HTTP.BodyTimeout,
		MaxInFlight:           cfg.Limits.MaxInFlight,
		MaxInFlightPerSession: cfg.Limits.MaxInFlightPerSession,
		Profile:               a.profileLookup,
		Metrics:               a.metricsHandler(),
		Health:                func() any { return health(a, srv) },
		Ready: func() error {
			if err := a.run.Writable(); err != nil {
				return fmt.Errorf("the run archive cannot be written (%w): every call is refused until it can", err)
			}
			return nil
		},
	})
	if a.metrics != nil {
		a.metrics.WatchHTTP(srv.HTTPStats)
	}
	conns := maxConnections(cfg.HTTP.MaxConnections)
	ln = netutil.LimitListener(ln, conns)
	hs := &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       cfg.HTTP.IdleTimeout,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          gateway.HTTPErrorLog(a.log),
	}
	done := make(chan error, 1)
	go func() { done <- hs.Serve(ln) }()
	a.log.Info("serving streamable HTTP", "url", "http://"+ln.Addr().String()+cfg.HTTP.Path, "auth", authMode(len(tokens) > 0, oauthOpts != nil), "max_connections", conns)

	select {
	case err := <-done:
		return fmt.Errorf("http: %w", err)
	case <-e.ctx.Done():
	}
	a.log.Info("signal received; draining calls", "grace", cfg.Limits.ShutdownGrace)
	a.drain() // before the sessions close, so calls in flight can answer
	closeCtx, cancelClose := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancelClose()
	_ = closeSessions(closeCtx)
	if err := hs.Shutdown(closeCtx); err != nil {
		_ = hs.Close() // streams that stay open (GET listeners) end here
	}
	return nil
}

// health is what /healthz shows an authorized caller.
func health(a *app, srv *gateway.MCPServer) any {
	d := map[string]any{
		"run_id":    a.run.ID(),
		"tools":     len(a.catalog.Entries()),
		"toolsets":  a.catalog.Toolsets(),
		"conflicts": a.catalog.Conflicts(),
		// tools mcp-go cannot serve (a bad x-mcp-header), with why
		"unserved_tools": srv.Unserved(),
		"write_errors":   a.run.WriteErrors(),
		// record files found replaced under the gateway (and restored)
		"record_files_replaced": a.run.ReplacedFiles(),
		"goroutines":            runtime.NumGoroutine(),
	}
	if last := a.reloads.lastReload(); last != nil { // none yet: no member, not null
		d["last_reload"] = last
	}
	return d
}

// fdReserve is how many file descriptors are kept from connections, for
// the archive, upstreams, the filesystem tools and the memory database:
// a flood of connections must never make a record fail for lack of fds.
const fdReserve = 256

// maxConnections is the configured connection limit, lowered so that
// connections can never take the last fdReserve file descriptors of the
// process's limit (Go raises the soft limit to the hard one at start).
func maxConnections(configured int) int {
	if limit, ok := openFileLimit(); ok && limit-fdReserve < uint64(configured) {
		return max(int(limit)-fdReserve, 16)
	}
	return configured
}

// configPathOf is the first config file, made absolute, or "" for none.
func configPathOf(s []string) string {
	if len(s) == 0 {
		return ""
	}
	if abs, err := filepath.Abs(s[0]); err == nil {
		return abs
	}
	return s[0]
}

// authMode is how the HTTP transport authenticates, for its start line:
// "tokens", "oauth", "tokens+oauth" or "none". The line said auth=false
// for a gateway whose only credentials were OAuth access tokens.
func authMode(tokens, oauth bool) string {
	switch {
	case tokens && oauth:
		return "tokens+oauth"
	case tokens:
		return "tokens"
	case oauth:
		return "oauth"
	}
	return "none"
}
