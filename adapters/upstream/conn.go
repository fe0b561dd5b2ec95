package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/jsonscan"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/toolgate/toolgate/gateway"
)

// lookupEnv resolves ${VAR} references; tests replace it.
var lookupEnv = os.LookupEnv

// conn is one connection to the upstream: one child process (stdio) or
// one session (http, sse). The supervisor replaces it when it dies.
type conn struct {
	u      *Upstream
	ctx    context.Context // lives as long as the connection: client.Start gets it
	cancel context.CancelCauseFunc
	client *client.Client
	tr     transport.Interface
	proc   *process     // stdio only
	hc     *http.Client // http, sse only
	kind   string       // its transport: TransportStdio, TransportHTTP or TransportSSE

	serverInfo mcp.Implementation
	protocol   string
	caps       mcp.ServerCapabilities
	modern     bool            // a 2026-07-28 connection (modern.go)
	ownCaps    json.RawMessage // toolgate's capabilities as a client: what it relays

	seq      atomic.Int64
	progress sync.Map // upstream progress token (string) -> *relay

	// Requests in flight on behalf of callers, and (streamable HTTP only,
	// lateWindow > 0) those that ended recently: see relay.go.
	callsMu    sync.Mutex
	calls      map[*inflight]struct{}
	ended      recentEnds
	lateWindow time.Duration

	// The upstream's requests being relayed to a client, by request ID
	// (mcp.RequestId.String), so that its notifications/cancelled takes
	// the question back; and IDs it cancelled before their request was
	// handled (requests are handled off the read loop), with when.
	askedMu   sync.Mutex
	asked     map[string]context.CancelCauseFunc
	cancelled map[string]cancelledAsk

	// For the supervisor's ping (Upstream.watch): when the upstream was
	// last heard from (Unix nanoseconds), and how many requests other than
	// pings await its answer.
	heard   atomic.Int64
	waiting atomic.Int32

	dead      chan struct{}
	deadOnce  sync.Once
	deadErr   error
	kick      chan struct{}
	closeOnce sync.Once
}

// listings are the raw lists of a connection's first listing.
type listings struct {
	tools     []json.RawMessage
	prompts   []json.RawMessage
	resources []json.RawMessage
	templates []json.RawMessage
}

var errStartupTimeout = errors.New("startup timed out")

// connect opens a connection: transport, client.Start, initialize (pinned
// to the last protocol revision with the initialize handshake, so there
// is no server/discover probe) and the first listing, all within the
// startup timeout.
//
// An upstream that refuses initialize and speaks only 2026-07-28 gets a
// 2026-07-28 connection instead (modern.go); protocol pins one era. An
// upstream whose transport is not written (http because it has a url)
// and whose initialize POST is refused with 400, 404 or 405 is tried over
// legacy SSE at the same URL, as the spec's backwards-compatibility
// section has clients do; when that connects, its next connections use
// SSE straight away, until one of them fails (see sseFallback).
func (u *Upstream) connect(ctx context.Context) (*conn, *listings, error) {
	if u.sseFallback.Load() {
		c, l, err := u.open(ctx, TransportSSE, false, true)
		if err != nil && ctx.Err() == nil {
			// The next attempt probes again: the upstream may have
			// moved to streamable HTTP.
			u.sseFallback.Store(false)
		}
		return c, l, err
	}
	if u.cfg.Protocol == ProtocolModern {
		return u.open(ctx, u.kind, true, true)
	}
	c, l, err := u.open(ctx, u.kind, false, true)
	if err == nil || ctx.Err() != nil || errors.Is(err, errStartupTimeout) || u.kind == TransportSSE {
		return c, l, err
	}
	var refused *initializeRefused
	if !errors.As(err, &refused) {
		return nil, nil, err
	}
	tried := []string{"streamable HTTP (2025-11-25)"}
	if u.cfg.Protocol != ProtocolLegacy {
		mc, ml, merr := u.open(ctx, u.kind, true, true)
		if merr == nil {
			return mc, ml, nil
		}
		err = fmt.Errorf("%w; as protocol 2026-07-28: %v", err, merr)
		if errors.Is(merr, transport.ErrSessionTerminated) { // its 404
			tried = append(tried, "streamable HTTP (2026-07-28)")
		}
	}
	if ctx.Err() != nil || !u.mayFallBackToSSE(refused) {
		return nil, nil, u.nothingThere(refused, tried, err)
	}
	sc, sl, serr := u.open(ctx, TransportSSE, false, true)
	if serr != nil {
		err = fmt.Errorf("%w; over legacy SSE: %v", err, serr)
		if strings.Contains(serr.Error(), "status code: 404") {
			tried = append(tried, "legacy SSE")
		}
		return nil, nil, u.nothingThere(refused, tried, err)
	}
	u.sseFallback.Store(true)
	u.log.Warn("upstream "+sseFallbackNote, "url", u.target(), "refused", u.errText(refused))
	return sc, sl, nil
}

// nothingThere is err, the failure of every way of speaking MCP tried at
// the upstream's URL, led by what it most likely means when its
// initialize POST got 404 Not Found: a URL that is not the server's MCP
// endpoint (a path left out or mistyped), which the attempts' own words
// ("likely a legacy SSE server", "session terminated (404). need to
// re-initialize") hide.
func (u *Upstream) nothingThere(refused *initializeRefused, tried []string, err error) error {
	var le *transport.LegacySSEServerError
	if !errors.As(refused, &le) || le.StatusCode != http.StatusNotFound {
		return err
	}
	to := tried[len(tried)-1]
	if len(tried) > 1 {
		to = strings.Join(tried[:len(tried)-1], ", ") + " and " + to
	}
	return &tidyError{err: err, text: fmt.Sprintf("nothing at %s speaks MCP: it answered 404 Not Found to %s; is the URL the server's MCP endpoint (often ending in /mcp, or /sse for legacy SSE)? (%v)",
		u.target(), to, err)} // err's attempts were each tidied as they failed (open)
}

// sseFallbackNote is what the status and the log say of an upstream
// served over legacy SSE by the fallback.
const sseFallbackNote = "speaks legacy SSE; set transport: sse to skip the probe"

// mayFallBackToSSE reports whether an upstream whose initialize POST was
// refused so is tried over legacy SSE: only when its transport is not
// written (transport: http is a decision) and the refusal is an HTTP 400,
// 404 or 405, the statuses a server gives a method or path it does not
// serve. 401 and 403 are about credentials, which a GET would be refused
// too; a 5xx or a network error is a server that is there and failing.
func (u *Upstream) mayFallBackToSSE(refused *initializeRefused) bool {
	if u.cfg.Transport != "" || u.kind != TransportHTTP {
		return false
	}
	var le *transport.LegacySSEServerError
	if !errors.As(refused, &le) {
		return false
	}
	switch le.StatusCode {
	case http.StatusBadRequest, http.StatusNotFound, http.StatusMethodNotAllowed:
		return true
	}
	return false
}

// transport is the transport of the upstream's connections: its
// configured one, or legacy SSE once the fallback found it speaks that.
func (u *Upstream) transport() string {
	if u.sseFallback.Load() {
		return TransportSSE
	}
	return u.kind
}

// initializeRefused is an upstream's JSON-RPC refusal of initialize.
type initializeRefused struct{ err error }

func (e *initializeRefused) Error() string { return e.err.Error() }
func (e *initializeRefused) Unwrap() error { return e.err }

// open opens a connection over transport kind, of either era: modern is a 2026-07-28 one
// (see modern.go), which begins with server/discover instead of
// initialize. A main connection lists what the upstream offers and
// follows its changes; the other (a 2026-07-28 one beside a 2025-11-25
// main one) only carries calls.
func (u *Upstream) open(ctx context.Context, kind string, modern, main bool) (_ *conn, _ *listings, err error) {
	if modern && kind == TransportSSE {
		return nil, nil, errNoModernSSE
	}
	cctx, cancel := context.WithCancelCause(ctx)
	c := &conn{u: u, ctx: cctx, cancel: cancel, kind: kind, modern: modern, dead: make(chan struct{}), kick: make(chan struct{}, 1), calls: map[*inflight]struct{}{}}
	defer func() {
		if err != nil {
			c.closeWith(false)
		}
	}()
	tlog := slog.New(demote{u.log.Handler()}).With("component", "mcp-go")
	switch kind {
	case TransportStdio:
		path, _ := envValue(u.env, "PATH")
		c.proc = &process{log: u.log, relayed: u.relayed, env: u.env, dir: u.cfg.Dir, path: path, grace: u.tune.killGrace}
		// The child is started here, not by mcp-go, so that its stdout is
		// read through the per-message limit (see lineLimiter).
		tr, err := c.proc.start(cctx, u.cfg.Command, u.cfg.Args, u.cfg.maxResultBytes(), u.name)
		if err != nil {
			return nil, nil, fmt.Errorf("start: %w", err)
		}
		transport.WithCommandLogger(tlog)(tr)
		c.tr = tr
	case TransportHTTP:
		c.lateWindow = u.tune.lateWindow
		c.hc = u.httpClient(false)
		hopts := []transport.StreamableHTTPCOption{
			transport.WithHTTPHeaders(u.headers),
			transport.WithHTTPBasicClient(c.hc),
			transport.WithHTTPLogger(tlog),
		}
		if !modern {
			// The GET stream carries list_changed and logs that are not
			// tied to a request (legacy protocol revisions).
			//lint:ignore SA1019 upstreams on 2025 protocol revisions still send list_changed and logs on the GET stream
			hopts = append(hopts, transport.WithContinuousListening())
		}
		var sh *transport.StreamableHTTP
		sh, err = transport.NewStreamableHTTP(u.cfg.URL, hopts...)
		if err == nil && modern {
			sh.SetProtocolVersion(mcp.ProtocolVersion20260728)
		}
		c.tr = sh
	case TransportSSE:
		c.hc = u.httpClient(true)
		c.tr, err = transport.NewSSE(u.cfg.URL,
			transport.WithHeaders(u.headers),
			transport.WithHTTPClient(c.hc),
			transport.WithSSELogger(tlog),
			transport.WithEndpointTimeout(u.startup),
			// Calls are bounded by their context, not by a fixed 60s.
			transport.WithResponseTimeout(365*24*time.Hour))
	}
	if err != nil {
		return nil, nil, err
	}
	opts := []client.ClientOption{client.WithProtocolVersion(mcp.LATEST_LEGACY_PROTOCOL_VERSION)}
	if u.cfg.ForwardRoots {
		opts = append(opts, client.WithRootsHandler(rootsHandler{u}))
	}
	c.client = client.NewClient(c.tr, opts...)
	c.client.OnNotification(c.onNotification)
	c.client.OnConnectionLost(func(err error) { // SSE only
		c.markDead(fmt.Errorf("SSE stream lost: %v", err))
	})

	watchdog := time.AfterFunc(u.startup, func() {
		cancel(fmt.Errorf("%w after %s", errStartupTimeout, u.startup))
	})
	defer watchdog.Stop()
	// The connection's death while it is set up (a legacy SSE stream that
	// ends before its endpoint event or while initialize awaits its
	// answer, which can only come on that stream) fails the setup at
	// once, with its cause: nothing else ends a wait for an answer that
	// can no longer come, and the startup timeout is long.
	setupDone := make(chan struct{})
	defer close(setupDone)
	go func() {
		select {
		case <-c.dead:
			cancel(c.deadErr)
		case <-setupDone:
		}
	}()
	fail := func(step string, err error) (*conn, *listings, error) {
		if cause := context.Cause(cctx); cause != nil && ctx.Err() == nil {
			err = cause
		}
		if ctx.Err() == nil {
			err = c.childExit(err)
			if c.proc != nil {
				err = c.proc.explain(err)
			}
		}
		return nil, nil, fmt.Errorf("%s: %w", step, u.tidy(err))
	}

	// The transport's life is tied to this context: it must outlive
	// every request (cancelling it asks the stdio child to end: proc.go).
	startErr := c.client.Start(cctx)
	// Requests from the upstream are answered by onRequest, not by
	// mcp-go's client (Start installed its handler; this replaces it).
	// Legacy SSE transports cannot carry them.
	var caps mcp.ClientCapabilities
	if bidi, ok := c.tr.(transport.BidirectionalInterface); ok {
		bidi.SetRequestHandler(c.onRequest)
		if u.relays(string(mcp.MethodSamplingCreateMessage)) {
			caps.Sampling = &mcp.SamplingCapability{}
		}
		if u.relays(string(mcp.MethodElicitationCreate)) {
			// Both modes: a URL-mode elicitation goes to a caller that
			// declared that mode (and is refused for the others, as a form
			// is to a caller without elicitation), and a -32042 of a call
			// reaches such a caller as the protocol error (tools.go).
			caps.Elicitation = &mcp.ElicitationCapability{Form: &struct{}{}, URL: &struct{}{}}
		}
	}
	if c.proc != nil && c.proc.started() {
		exited := c.proc.exitedChan()
		go func() {
			select {
			case <-exited:
				c.markDead(fmt.Errorf("upstream process %s", c.proc.exitReport()))
			case <-cctx.Done():
			}
		}()
	}
	if startErr != nil {
		return fail("start", startErr)
	}
	c.ownCaps, _ = json.Marshal(caps)
	if modern {
		dctx := cctx
		if !main {
			// A probe beside a main connection: an upstream that knows
			// server/discover answers as soon as it is up, one of an older
			// SDK may ignore it, and the caller waits meanwhile.
			var stop context.CancelFunc
			dctx, stop = context.WithTimeoutCause(cctx, u.tune.modernProbe, errNoDiscoverAnswer)
			defer stop()
		}
		if err := c.discover(dctx); err != nil {
			if cctx.Err() == nil && errors.Is(context.Cause(dctx), errNoDiscoverAnswer) {
				err = fmt.Errorf("%w (%v within %s)", errModernUnsupported, errNoDiscoverAnswer, u.tune.modernProbe)
			}
			return fail("server/discover", err)
		}
		if !main {
			if !watchdog.Stop() {
				return fail("startup", errStartupTimeout)
			}
			return c, nil, nil
		}
	} else if err := c.initialize(cctx, caps); err != nil {
		return fail("initialize", err)
	}
	l := &listings{}
	if c.caps.Tools != nil {
		if l.tools, err = c.listTools(cctx); err != nil {
			return fail("tools/list", err)
		}
	}
	// Prompts and resources are extras: an upstream that refuses to list
	// them (or pages them past listAll's bound) still serves its tools,
	// without them. A connection that fails while listing fails.
	for _, x := range []struct {
		on   bool
		what string
		list func(*conn, context.Context) ([]json.RawMessage, error)
		into *[]json.RawMessage
	}{
		{c.caps.Prompts != nil, "prompts/list", (*conn).listPrompts, &l.prompts},
		{c.caps.Resources != nil, "resources/list", (*conn).listResources, &l.resources},
		{c.caps.Resources != nil, "resources/templates/list", (*conn).listTemplates, &l.templates},
	} {
		if !x.on {
			continue
		}
		if *x.into, err = x.list(c, cctx); err != nil {
			var ce *connError
			if errors.As(err, &ce) || cctx.Err() != nil || c.isDead() {
				return fail(x.what, err)
			}
			u.log.Warn("upstream listing failed; served without what it lists until it lists again (list_changed, reconnection)",
				"method", x.what, "err", u.errText(err))
			*x.into, err = nil, nil
		}
	}
	if !watchdog.Stop() {
		return fail("startup", errStartupTimeout)
	}
	if modern {
		go c.listen()
	}
	return c, l, nil
}

// initialize opens a 2025-11-25 connection: the initialize handshake,
// then the log level.
func (c *conn) initialize(ctx context.Context, caps mcp.ClientCapabilities) error {
	u := c.u
	init, err := c.client.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{
		ProtocolVersion: mcp.LATEST_LEGACY_PROTOCOL_VERSION,
		ClientInfo:      mcp.Implementation{Name: "toolgate", Version: version()},
		Capabilities:    caps,
	}})
	if err != nil {
		if ctx.Err() == nil && isRPCRefusal(err) {
			return &initializeRefused{err}
		}
		return err
	}
	c.serverInfo, c.protocol, c.caps = init.ServerInfo, init.ProtocolVersion, init.Capabilities
	if c.caps.Logging != nil {
		level := "info"
		if u.log.Enabled(ctx, slog.LevelDebug) {
			level = "debug"
		}
		if _, err := c.request(ctx, string(mcp.MethodSetLogLevel), map[string]any{"level": level}); err != nil {
			u.log.Debug("logging/setLevel failed", "err", err)
		}
	}
	return nil
}

// close ends the connection: the stdio child's process group is sent
// SIGTERM, then SIGKILL after a short grace, then the transport is closed
// (for HTTP it ends the session with DELETE); stop reaps the child.
func (c *conn) close() { c.closeWith(true) }

// closeWith closes the connection; served says whether it got past its
// setup (see [process.stop]).
func (c *conn) closeWith(served bool) {
	c.closeOnce.Do(func() {
		c.markDead(errClosed)
		if c.proc != nil {
			c.proc.stop(c.u.tune.killGrace, served)
		}
		if c.client != nil {
			if err := c.client.Close(); err != nil {
				c.u.log.Debug("closing transport", "err", err)
			}
		}
		c.cancel(errClosed)
		if c.hc != nil {
			c.hc.CloseIdleConnections()
		}
	})
}

func (c *conn) markDead(err error) {
	c.deadOnce.Do(func() {
		c.deadErr = err
		close(c.dead)
	})
}

// deathCause says why a dead connection died, preferring the child's exit
// status (which the exit watcher may report just after the transport
// noticed the end of its stdout).
func (c *conn) deathCause() error {
	if c.proc == nil || errors.Is(c.deadErr, errClosed) {
		return c.deadErr
	}
	return c.exitOr(c.deadErr)
}

// exitOr is the stdio child's exit status, if it exits within 200 ms
// (the exit watcher may report it just after the transport saw the end of
// its pipes), or else err.
func (c *conn) exitOr(err error) error {
	if exited := c.proc.exitedChan(); exited != nil {
		select {
		case <-exited:
			return fmt.Errorf("upstream process %s", c.proc.exitReport())
		case <-time.After(200 * time.Millisecond):
		}
	}
	return err
}

// childExit is err, a failure of a request to a stdio child, or the
// child's exit when err is a failure of its pipes (its stdout ended, its
// stdin a broken pipe): the exit status (which the exit watcher may
// report just after the transport saw the end) says more than
// "transport closed" or "broken pipe".
func (c *conn) childExit(err error) error {
	var te *transport.Error
	var ce *connError
	if c.proc == nil || errors.Is(err, errNotReading) || !(errors.Is(err, transport.ErrTransportClosed) || errors.As(err, &te) || errors.As(err, &ce)) {
		return err
	}
	return c.exitOr(err)
}

func (c *conn) isDead() bool {
	select {
	case <-c.dead:
		return true
	default:
		return false
	}
}

// suspect asks the supervisor to check the connection now.
func (c *conn) suspect(err error) {
	if errors.Is(err, transport.ErrTransportClosed) || errors.Is(err, transport.ErrSessionTerminated) {
		c.markDead(err)
		return
	}
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

// rpcError is a JSON-RPC error the upstream answered a request with.
type rpcError struct {
	Method  string
	Code    int
	Message string
	Data    json.RawMessage
}

// JSONRPCCode and JSONRPCData make an upstream's refusal of a prompts/get,
// resources/read or completion the caller's as the upstream made it:
// the MCP mirror answers a handler error that carries them with them
// (server.CodedError, third_party/README.md).
func (e *rpcError) JSONRPCCode() int { return e.Code }
func (e *rpcError) JSONRPCData() any {
	if len(e.Data) == 0 {
		return nil
	}
	return e.Data
}

func (e *rpcError) Error() string {
	s := fmt.Sprintf("%s: JSON-RPC error %d: %s", e.Method, e.Code, e.Message)
	if len(e.Data) > 0 && string(e.Data) != "null" {
		s += " (data: " + gateway.Truncate(string(e.Data), 512) + ")"
	}
	return s
}

// connError is a failure of the connection itself (as opposed to an
// answer from the upstream).
type connError struct{ err error }

func (e *connError) Error() string { return e.err.Error() }
func (e *connError) Unwrap() error { return e.err }

// request sends one JSON-RPC request straight through the transport and
// returns the raw result, so nothing in it is re-encoded (mcp-go's typed
// methods drop schema keywords and unknown content). IDs are strings
// ("tg-N"), which never collide with the client's own numeric IDs. When
// ctx ends first, the upstream is sent notifications/cancelled with the
// request's ID (mcp-go does that only for its own requests, and never
// over HTTP; the MCP spec asks for it on every transport), and on HTTP
// the request is also dropped.
func (c *conn) request(ctx context.Context, method string, params any) (json.RawMessage, error) {
	return c.requestAs(ctx, method, params, nil)
}

// requestAs is request made for a caller whose client capabilities (JSON)
// are caps: a 2026-07-28 connection carries them in each request's
// envelope (toolgate's own when caps is nil; see modernRequest); an
// earlier one declared toolgate's at initialize.
func (c *conn) requestAs(ctx context.Context, method string, params any, caps json.RawMessage) (json.RawMessage, error) {
	if !c.modern {
		return c.requestWith(ctx, method, params, nil)
	}
	m, err := paramsMap(params)
	if err != nil {
		return nil, err
	}
	if caps == nil {
		caps = c.ownCaps
	}
	return c.modernRequest(ctx, method, m, caps)
}

// requestWith is request with HTTP headers (streamable HTTP only): the
// standard headers of a 2026-07-28 request.
func (c *conn) requestWith(ctx context.Context, method string, params any, header http.Header) (json.RawMessage, error) {
	id := mcp.NewRequestId("tg-" + strconv.FormatInt(c.seq.Add(1), 10))
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if method != string(mcp.MethodPing) {
		c.waiting.Add(1)
		defer c.waiting.Add(-1)
	}
	resp, err := c.tr.SendRequest(ctx, transport.JSONRPCRequest{
		JSONRPC: mcp.JSONRPC_VERSION, ID: id, Method: method, Params: params, Header: header,
	})
	if resp != nil {
		c.heardNow()
	}
	if err != nil {
		if ctx.Err() != nil {
			c.sendCancel(id, context.Cause(ctx))
			return nil, ctx.Err()
		}
		cerr := &connError{fmt.Errorf("%s: %w", method, err)}
		c.suspect(err)
		return nil, cerr
	}
	if resp == nil {
		err := &connError{fmt.Errorf("%s: no response", method)}
		c.suspect(err)
		return nil, err
	}
	if resp.Error != nil {
		e := &rpcError{Method: method, Code: resp.Error.Code, Message: resp.Error.Message}
		if resp.Error.Data != nil {
			e.Data, _ = json.Marshal(resp.Error.Data)
		}
		if resp.ID.IsNil() || resp.ID.String() != id.String() {
			// Not an answer to this request: an HTTP-level refusal such as
			// an unknown session (some servers say 400, not 404).
			err := &connError{fmt.Errorf("%s: the upstream refused the request: %d %s", method, e.Code, e.Message)}
			c.suspect(err)
			return nil, err
		}
		return nil, e
	}
	return resp.Result, nil
}

// sendCancel tells the upstream to stop working on request id, off the
// caller's path and best effort.
func (c *conn) sendCancel(id mcp.RequestId, cause error) {
	reason := "cancelled"
	if cause != nil {
		reason = cause.Error()
	}
	n := mcp.JSONRPCNotification{
		JSONRPC: mcp.JSONRPC_VERSION,
		Notification: mcp.Notification{
			Method: string(mcp.MethodNotificationCancelled),
			Params: mcp.NotificationParams{AdditionalFields: map[string]any{"requestId": id, "reason": reason}},
		},
	}
	go func() {
		ctx, cancel := context.WithTimeout(c.ctx, 5*time.Second)
		defer cancel()
		if err := c.tr.SendNotification(ctx, n); err != nil {
			c.u.log.Debug("sending notifications/cancelled failed", "err", err)
		}
	}()
}

// heardNow records that the upstream sent something (an answer, a
// notification, a request).
func (c *conn) heardNow() { c.heard.Store(time.Now().UnixNano()) }

// quiet reports whether the upstream has sent nothing for d and no
// request awaits its answer: only then is a ping worth its risk. A server
// that handles one message at a time answers no ping while it works on a
// call, and that call is bounded by its own deadline.
func (c *conn) quiet(d time.Duration) bool {
	return c.waiting.Load() == 0 && time.Since(time.Unix(0, c.heard.Load())) >= d
}

// errNoPingAnswer is a ping that got no answer within its timeout.
var errNoPingAnswer = errors.New("ping: no answer")

// ping checks the connection. A JSON-RPC error answer (a server that does
// not implement ping) still proves it alive.
func (c *conn) ping(timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(c.ctx, timeout)
	defer cancel()
	_, err := c.request(ctx, string(mcp.MethodPing), nil)
	var rpc *rpcError
	switch {
	case err == nil, errors.As(err, &rpc):
		return nil
	case c.ctx.Err() != nil:
		return errClosed
	case ctx.Err() != nil:
		return fmt.Errorf("%w within %s", errNoPingAnswer, timeout)
	default:
		return err
	}
}

// maxListPages bounds the pages listAll reads of one listing (a variable
// for tests).
var maxListPages = 1000

// listAll pages through a list method and returns the raw items under key.
func (c *conn) listAll(ctx context.Context, method, key string) ([]json.RawMessage, error) {
	var out []json.RawMessage
	cursor := ""
	seen := map[string]bool{}
	for page := 0; ; page++ {
		var params any
		if cursor != "" {
			params = map[string]any{"cursor": cursor}
		}
		raw, err := c.request(ctx, method, params)
		if err != nil {
			return nil, err
		}
		if out, cursor, err = appendPage(out, raw, method, key); err != nil {
			return nil, err
		}
		if cursor == "" {
			return out, nil
		}
		if seen[cursor] || page >= maxListPages {
			return nil, fmt.Errorf("%s: pagination does not end (cursor %q repeats or over %d pages)", method, cursor, maxListPages)
		}
		seen[cursor] = true
	}
}

// appendPage appends the items of one page of a list result (raw, the
// result of method, items under key) to out, and returns the page's
// nextCursor ("" for none).
//
// The page is read in one pass with jsonscan, which validates it as
// encoding/json does: the items are raw's own bytes, where decoding into
// a map and then a slice of json.RawMessage scanned and copied the page
// twice (16% of toolgate's CPU at start-up behind 20 upstreams of 100
// tools, in a profile, with the copies' page faults; decoding each entry
// took another 13%, see decodeTool). A page jsonscan does not read as
// encoding/json would (a member's name escaped, repeated, or matching only
// in another case; a cursor with escapes) is left to encoding/json, which
// also words the errors.
func appendPage(out []json.RawMessage, raw json.RawMessage, method, key string) ([]json.RawMessage, string, error) {
	var items, next []byte
	n := len(out)
	ok := jsonscan.Fields(raw, []string{key, "nextCursor"}, func(i, start, end int) bool {
		if i == 0 {
			items = raw[start:end]
		} else {
			next = raw[start:end]
		}
		return true
	})
	cursor := ""
	if ok && len(items) > 0 && string(items) != "null" {
		ok = jsonscan.Elements(items, func(start, end int) bool {
			out = append(out, json.RawMessage(items[start:end:end]))
			return true
		})
	}
	if ok && len(next) > 0 && string(next) != "null" {
		cursor, ok = jsonscan.PlainString(next)
	}
	if ok {
		return out, cursor, nil
	}
	out = out[:n]
	var res map[string]json.RawMessage
	if err := json.Unmarshal(raw, &res); err != nil {
		return nil, "", fmt.Errorf("%s: decoding result: %w", method, err)
	}
	var page []json.RawMessage
	if b := res[key]; len(b) > 0 && string(b) != "null" {
		if err := json.Unmarshal(b, &page); err != nil {
			return nil, "", fmt.Errorf("%s: decoding %s: %w", method, key, err)
		}
	}
	out = append(out, page...)
	if b := res["nextCursor"]; len(b) > 0 && string(b) != "null" {
		if err := json.Unmarshal(b, &cursor); err != nil {
			return nil, "", fmt.Errorf("%s: decoding nextCursor: %w", method, err)
		}
	}
	return out, cursor, nil
}

func (c *conn) listTools(ctx context.Context) ([]json.RawMessage, error) {
	return c.listAll(ctx, string(mcp.MethodToolsList), "tools")
}

func (c *conn) listPrompts(ctx context.Context) ([]json.RawMessage, error) {
	return c.listAll(ctx, string(mcp.MethodPromptsList), "prompts")
}

func (c *conn) listResources(ctx context.Context) ([]json.RawMessage, error) {
	return c.listAll(ctx, string(mcp.MethodResourcesList), "resources")
}

func (c *conn) listTemplates(ctx context.Context) ([]json.RawMessage, error) {
	return c.listAll(ctx, string(mcp.MethodResourcesTemplatesList), "resourceTemplates")
}

// onNotification handles the upstream's notifications. It runs on the
// transport's read loop, so it never calls the upstream and never blocks:
// re-listing happens later in its own goroutine, progress goes through a
// per-call queue, log messages and resource updates are queued to the
// clients they are for.
func (c *conn) onNotification(n mcp.JSONRPCNotification) {
	c.heardNow()
	f := n.Params.AdditionalFields
	switch n.Method {
	case string(mcp.MethodNotificationProgress):
		tok, ok := f["progressToken"].(string)
		if !ok {
			return
		}
		if r, ok := c.progress.Load(tok); ok {
			r.(*relay).push(progressOf(f))
		}
	case string(mcp.MethodNotificationToolsListChanged):
		c.u.announce(listTools)
	case string(mcp.MethodNotificationPromptsListChanged):
		c.u.announce(listPrompts)
	case string(mcp.MethodNotificationResourcesListChanged):
		c.u.announce(listResources)
	case string(mcp.MethodNotificationMessage):
		c.u.logMessage(f)
		c.relayLog(f)
	case string(mcp.MethodNotificationResourceUpdated):
		c.u.resourceUpdated(f)
	case string(mcp.MethodNotificationCancelled):
		c.cancelAsked(f["requestId"], f["reason"])
	case string(mcp.MethodNotificationElicitationComplete):
		c.elicitationComplete(f)
	default:
		c.u.log.Debug("upstream notification ignored", "method", n.Method)
	}
}

// logMessage logs an upstream's notifications/message with its level
// mapped onto slog's.
func (u *Upstream) logMessage(f map[string]any) {
	level := slog.LevelInfo
	lv, _ := f["level"].(string)
	switch lv {
	case "debug":
		level = slog.LevelDebug
	case "info", "notice":
		level = slog.LevelInfo
	case "warning":
		level = slog.LevelWarn
	case "error", "critical", "alert", "emergency":
		level = slog.LevelError
	}
	msg := "upstream log message"
	attrs := []any{"mcp_level", lv}
	if s, ok := f["data"].(string); ok {
		msg = s
	} else if d, ok := f["data"]; ok {
		attrs = append(attrs, "data", d)
	}
	if lg, ok := f["logger"].(string); ok && lg != "" {
		attrs = append(attrs, "logger", lg)
	}
	u.relayed.Log(level, msg, attrs...)
}

// rootsHandler answers roots/list for upstreams with forward_roots.
type rootsHandler struct{ u *Upstream }

func (h rootsHandler) ListRoots(ctx context.Context, _ mcp.ListRootsRequest) (*mcp.ListRootsResult, error) {
	res := &mcp.ListRootsResult{Roots: []mcp.Root{}}
	if h.u.opts.Roots == nil {
		return res, nil
	}
	roots, err := h.u.opts.Roots(ctx)
	if err != nil {
		return nil, err
	}
	for _, r := range roots {
		res.Roots = append(res.Roots, mcp.Root{URI: r.URI, Name: r.Name})
	}
	return res, nil
}

// demote lowers mcp-go's transport logs: errors become warnings, the
// rest debug (its retry loops are chatty at info and error).
type demote struct{ h slog.Handler }

func (d demote) level(l slog.Level) slog.Level {
	if l >= slog.LevelError {
		return slog.LevelWarn
	}
	return slog.LevelDebug
}
func (d demote) Enabled(ctx context.Context, l slog.Level) bool {
	return d.h.Enabled(ctx, d.level(l))
}
func (d demote) Handle(ctx context.Context, r slog.Record) error {
	r2 := slog.NewRecord(r.Time, d.level(r.Level), r.Message, r.PC)
	r.Attrs(func(a slog.Attr) bool { r2.AddAttrs(a); return true })
	return d.h.Handle(ctx, r2)
}
func (d demote) WithAttrs(as []slog.Attr) slog.Handler { return demote{d.h.WithAttrs(as)} }
func (d demote) WithGroup(g string) slog.Handler       { return demote{d.h.WithGroup(g)} }

func version() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}

// httpClient is the upstream's HTTP client: Go's default transport, with a
// pool that keeps as many idle connections to the upstream as calls may be
// in flight (plus the GET stream). The default of 2 per host made every
// other concurrent call open and close a TCP connection. For a legacy SSE
// connection, its GET stream's oversized events are replaced (limit.go).
func (u *Upstream) httpClient(legacySSE bool) *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = cap(u.sem) + 2
	if t.MaxIdleConns < t.MaxIdleConnsPerHost {
		t.MaxIdleConns = t.MaxIdleConnsPerHost
	}
	return &http.Client{Transport: limitTransport{base: t, max: u.cfg.maxResultBytes(), upstream: u.name, sse: legacySSE},
		CheckRedirect: sameOriginRedirect}
}

// sameOriginRedirect follows an upstream's redirect only within the origin
// (scheme, host and port) of the request it answers: net/http copies every
// header to the new request, and drops Authorization only when the host
// name changes, so a redirect to another port, to http from https, or to
// another host would hand that server the upstream's configured secret
// headers (an API key, its session id).
func sameOriginRedirect(req *http.Request, via []*http.Request) error {
	if len(via) >= 10 {
		return errors.New("stopped after 10 redirects")
	}
	if from := via[0].URL; req.URL.Scheme != from.Scheme || req.URL.Host != from.Host {
		return fmt.Errorf("the upstream redirected to another origin (%s://%s); toolgate sends an upstream's headers to its own origin only: configure the URL it redirects to", req.URL.Scheme, req.URL.Host)
	}
	return nil
}
