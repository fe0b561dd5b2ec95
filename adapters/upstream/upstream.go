package upstream

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/toolgate/toolgate/gateway"
)

// States of an upstream, as [Upstream.Status] reports them.
const (
	StateStarting     = "starting"     // the first connection attempt is under way
	StateReady        = "ready"        // connected; tools listed
	StateReconnecting = "reconnecting" // was connected, lost it, reconnecting; last known tools are kept
	StateFailed       = "failed"       // never connected (retrying with backoff), or closed
	StateDisabled     = "disabled"     // disabled in the config; never started
)

// Options configure [New].
type Options struct {
	// Logger receives the upstream's own logs (with upstream=<name>), its
	// stderr lines and the log messages it sends. Nil discards.
	Logger *slog.Logger
	// DefaultCallTimeout is the call deadline of upstreams whose config sets
	// none. Zero leaves it to the pipeline's default.
	DefaultCallTimeout time.Duration
	// Roots answers roots/list requests of upstreams whose config sets
	// forward_roots. Nil answers with an empty list. It is not consulted
	// for other upstreams, which are never offered roots.
	Roots func(ctx context.Context) ([]Root, error)
	// Restarts is where the upstream counts its restarts (connections lost
	// and re-established). A caller that replaces an upstream by another of
	// the same name (a reload that changed its settings) passes both the
	// same counter, so that the count, reported in [Upstream.Status] and as
	// a Prometheus counter, continues instead of starting again at 0. Nil:
	// a counter of its own.
	Restarts *atomic.Int64
}

// Root is a client root (a file:// URI the client works in).
type Root struct {
	URI  string
	Name string
}

// tuning holds the supervisor's timings; tests shorten them.
type tuning struct {
	pingInterval time.Duration // health check of a quiet connection (conn.quiet)
	pingTimeout  time.Duration
	backoffMin   time.Duration // first reconnection delay, doubled per failure
	backoffMax   time.Duration
	stableAfter  time.Duration // a connection up this long resets the backoff
	killGrace    time.Duration // SIGTERM to SIGKILL
	debounce     time.Duration // list_changed to re-list
	lateWindow   time.Duration // streamable HTTP: see relay.go
	modernProbe  time.Duration // server/discover of a 2026-07-28 connection beside the main one (modern.go)
	failLogEvery time.Duration // a failure that repeats the last one, past the first few: logged this often
}

var defaultTuning = tuning{
	pingInterval: 15 * time.Second,
	pingTimeout:  10 * time.Second,
	backoffMin:   250 * time.Millisecond,
	backoffMax:   30 * time.Second,
	stableAfter:  30 * time.Second,
	killGrace:    2 * time.Second,
	debounce:     100 * time.Millisecond,
	lateWindow:   time.Second,
	modernProbe:  5 * time.Second,
	failLogEvery: 10 * time.Minute,
}

// loudFailures is how many failed connection attempts in a row are each
// logged; after them, one that fails as the last did is logged only every
// tuning.failLogEvery, with the count of those not logged (a dead
// upstream retried every 30 s would otherwise write a line each time).
const loudFailures = 5

// Upstream is an upstream MCP server wrapped as a gateway toolset. It is a
// [gateway.Toolset], [gateway.ChangeNotifier], [gateway.StatusReporter],
// [gateway.Unofferer], [gateway.Closer], [gateway.PromptSource] (+
// [gateway.PromptsChangeNotifier], [gateway.PromptCompleter]) and
// [gateway.ResourceSource] (+ [gateway.ResourcesChangeNotifier],
// [gateway.ResourceSubscriber], [gateway.ResourceCompleter]).
//
// Create it with [New], start it with [Upstream.Start] and, to serve
// after a bounded wait, [Upstream.WaitReady]. A supervisor keeps it
// connected: it reconnects with exponential backoff and jitter when the
// child exits, the HTTP session ends or a ping fails, and lists tools,
// prompts and resources again each time. All methods are safe for
// concurrent use.
type Upstream struct {
	cfg     Config
	name    string
	prefix  string
	kind    string
	log     *slog.Logger
	relayed *logLimiter // the upstream's own log lines (stderr, notifications/message)
	opts    Options
	env     []string          // stdio: the child's whole environment
	headers map[string]string // http, sse: resolved headers
	filter  *filter
	trust   bool
	timeout time.Duration
	startup time.Duration
	sem     chan struct{}
	tune    tuning
	redact  *strings.Replacer // hides env and header values and the URL's query in logs and errors

	mu          sync.Mutex
	state       string
	lastErr     string
	restarts    *atomic.Int64 // opts.Restarts or its own
	failures    int
	conn        *conn
	ever        bool // connected at least once
	started     bool
	closed      bool
	stopped     bool // the supervisor ended with Start's context
	tools       []*gateway.Tool
	unoffered   map[string]string
	notes       []string
	warnings    []string // filter globs that match no tool
	prompts     []gateway.Prompt
	promptNames map[string]string // served prompt name -> the upstream's
	resources   []gateway.Resource
	templates   []gateway.ResourceTemplate
	toolL       []func()
	promptL     []func()
	resourceL   []func()
	updatedL    []func(uri string, params map[string]any)
	subs        map[string]bool // resource URIs the gateway subscribed to
	debounce    map[listKind]*time.Timer
	pending     map[listKind]bool            // list_changed seen while no connection was live
	listed      [3][32]byte                  // per listKind: the digest of the installed raw list
	announced   [3]bool                      // per listKind: the upstream sent list_changed since its last re-listing
	split       map[listKind]map[string]bool // tools, prompts only one child lists (sidecar.go)
	splitOn     atomic.Bool                  // split is not empty: calls look it up

	ready     chan struct{}
	readyErr  error
	readyOnce sync.Once
	cancel    context.CancelFunc
	done      chan struct{}

	relistMu sync.Mutex // one re-listing at a time

	asked askedURLs // URL-mode elicitations relayed, by elicitationId (relay.go)

	// sseFallback: the upstream, whose transport is not written, refused
	// streamable HTTP and was connected over legacy SSE (connect); its
	// connections use SSE until one fails to open.
	sseFallback atomic.Bool

	// The 2026-07-28 connection (modern.go), opened on demand.
	modernMu     sync.Mutex
	modern       *modernSlot
	modernClosed bool
	modernCtx    context.Context // ends with Close: probes and opening under way
	modernStop   context.CancelFunc
}

type listKind int

const (
	listTools listKind = iota
	listPrompts
	listResources
)

func (k listKind) String() string {
	return [...]string{"tools", "prompts", "resources"}[k]
}

var errClosed = errors.New("upstream closed")

// New validates cfg, resolves its ${VAR} references and returns the
// upstream, not yet started.
func New(cfg Config, opts *Options) (*Upstream, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	var o Options
	if opts != nil {
		o = *opts
	}
	base := o.Logger
	if base == nil {
		base = slog.New(slog.DiscardHandler)
	}
	u := &Upstream{
		cfg:      cfg,
		name:     cfg.Name,
		prefix:   cfg.EffectivePrefix(),
		kind:     cfg.EffectiveTransport(),
		opts:     o,
		trust:    cfg.TrustAnnotations == nil || *cfg.TrustAnnotations,
		timeout:  cfg.CallTimeout,
		startup:  cfg.StartupTimeout,
		tune:     defaultTuning,
		state:    StateStarting,
		ready:    make(chan struct{}),
		debounce: map[listKind]*time.Timer{},
		pending:  map[listKind]bool{},
		subs:     map[string]bool{},
		restarts: o.Restarts,
	}
	if u.restarts == nil {
		u.restarts = new(atomic.Int64)
	}
	if u.timeout == 0 {
		u.timeout = o.DefaultCallTimeout
	}
	if u.startup == 0 {
		u.startup = defaultStartupTimeout
	}
	n := cfg.MaxConcurrency
	if n == 0 {
		n = defaultMaxConcurrency
	}
	u.sem = make(chan struct{}, n)
	f, err := newFilter(cfg.Allow, cfg.Deny)
	if err != nil {
		return nil, fmt.Errorf("upstream %q: %w", cfg.Name, err)
	}
	u.filter = f
	if cfg.Disabled {
		u.log = base.With("upstream", cfg.Name)
		u.state = StateDisabled
		u.signalReady(nil)
		return u, nil
	}
	// Validate resolved every variable already; resolving again here
	// keeps the values, which are never logged.
	var secrets []string // values that came from the gateway's environment
	collect := func(v string) { secrets = append(secrets, v) }
	env, err := expandMap(cfg.Env, lookupEnv, collect)
	if err != nil {
		return nil, fmt.Errorf("upstream %q: env.%w", cfg.Name, err)
	}
	u.env = curatedEnv(env)
	if u.headers, err = expandMap(cfg.Headers, lookupEnv, collect); err != nil {
		return nil, fmt.Errorf("upstream %q: headers.%w", cfg.Name, err)
	}
	for _, m := range []map[string]string{env, u.headers} {
		for _, v := range m {
			if len(v) >= 8 {
				secrets = append(secrets, v)
			}
		}
	}
	u.redact = newRedactor(cfg.URL, u.target(), secrets)
	u.log = slog.New(redactHandler{base.Handler(), u.redact}).With("upstream", cfg.Name)
	u.relayed = newLogLimiter(u.log)
	return u, nil
}

// timeoutSetting names the setting that gives the upstream's calls their
// deadline: its own call_timeout, else toolgate's limits.call_timeout.
func (u *Upstream) timeoutSetting() string {
	if u.cfg.CallTimeout > 0 {
		return fmt.Sprintf("upstreams[].call_timeout of %q", u.name)
	}
	return "limits.call_timeout"
}

// errText is err's text in one line (tidy) with secrets hidden.
func (u *Upstream) errText(err error) string {
	if err == nil {
		return ""
	}
	return u.redacted(u.tidy(err).Error())
}

func (u *Upstream) redacted(s string) string {
	if u.redact == nil {
		return s
	}
	return u.redact.Replace(s)
}

// Name implements [gateway.Toolset]: the upstream's configured name.
func (u *Upstream) Name() string { return u.name }

// Config returns the upstream's configuration (with ${VAR} references
// unresolved), for the wiring (its Grant list, say).
func (u *Upstream) Config() Config { return u.cfg }

// Prefix is the prefix of the upstream's tool and prompt names ("" for
// none).
func (u *Upstream) Prefix() string { return u.prefix }

// Namespace implements [gateway.Namespacer]: the prefix, so that no other
// toolset's tool is served under "<prefix>__..." (where the policy written
// for this upstream would reach it). An upstream without a prefix has no
// namespace.
func (u *Upstream) Namespace() string { return u.prefix }

// Start connects in the background and keeps the upstream connected until
// Close. ctx bounds only the supervisor's life: pass the gateway's
// lifetime context, not a startup deadline (when ctx ends, the connection
// is closed and the upstream stays down until Close). Start does not
// block; see [Upstream.WaitReady]. Starting twice, or after Close, does
// nothing.
func (u *Upstream) Start(ctx context.Context) {
	u.mu.Lock()
	if u.started || u.closed || u.cfg.Disabled {
		u.mu.Unlock()
		return
	}
	u.started = true
	sctx, cancel := context.WithCancel(ctx)
	u.cancel = cancel
	u.done = make(chan struct{})
	u.mu.Unlock()
	u.log.Info("starting upstream", "transport", u.kind, "target", u.target())
	go u.supervise(sctx)
}

// WaitReady returns when the first connection attempt has succeeded (nil)
// or failed (its error), or when ctx ends (ctx's error). A failed upstream
// keeps retrying in the background.
func (u *Upstream) WaitReady(ctx context.Context) error {
	select {
	case <-u.ready:
		return u.readyErr
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (u *Upstream) signalReady(err error) {
	u.readyOnce.Do(func() {
		u.readyErr = err
		close(u.ready)
	})
}

var _ gateway.RootsFollower = (*Upstream)(nil)

// RootsChanged implements [gateway.RootsFollower]: an upstream with
// forward_roots is sent notifications/roots/list_changed, so that it asks
// for the client's roots again (servers that keep them, such as the
// reference filesystem server, would otherwise keep the old ones). Only
// the 2025-era connection asks for roots; the notification goes out in
// the background, within 5 s.
func (u *Upstream) RootsChanged() {
	if !u.cfg.ForwardRoots {
		return
	}
	c, _ := u.liveConn()
	if c == nil || c.modern || c.client == nil {
		return // a connection made from now on asks for the roots anew
	}
	go func() {
		ctx, cancel := context.WithTimeout(c.ctx, 5*time.Second)
		defer cancel()
		if err := c.client.RootListChanges(ctx); err != nil {
			u.log.Debug("telling the upstream its roots changed", "err", u.errText(err))
		}
	}()
}

// CloseWhenIdle closes u once no call is in flight on it (every slot of
// its concurrency limit free), or when ctx ends, whichever comes first. A
// reload that removes or changes an upstream takes it out of the catalog
// and closes it so: the calls it was serving finish on it rather than
// being cut with its process. A call that comes for a slot meanwhile (it
// resolved the tool before the removal) runs too; one that comes after
// finds the upstream closed.
func (u *Upstream) CloseWhenIdle(ctx context.Context) error {
	held := 0
	defer func() {
		for range held {
			<-u.sem
		}
	}()
	for held < cap(u.sem) {
		select {
		case u.sem <- struct{}{}:
			held++
		case <-ctx.Done():
			return u.Close()
		}
	}
	return u.Close()
}

// Close stops the supervisor, closes the connection and ends the stdio
// child's whole process group. It is safe to call at any time, more than
// once, and after a partial start.
func (u *Upstream) Close() error {
	u.mu.Lock()
	if u.closed {
		u.mu.Unlock()
		return nil
	}
	u.closed = true
	cancel, done := u.cancel, u.done
	for k, t := range u.debounce {
		t.Stop()
		delete(u.debounce, k)
	}
	u.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
	u.closeModern()
	if u.relayed != nil {
		u.relayed.Flush()
	}
	u.mu.Lock()
	if u.cfg.Disabled {
		u.state = StateDisabled
	} else {
		u.state, u.lastErr = StateFailed, errClosed.Error()
	}
	c := u.conn
	u.conn = nil
	u.mu.Unlock()
	if c != nil { // cannot happen: the supervisor closes its connection
		c.close()
	}
	u.signalReady(errClosed)
	return nil
}

// supervise connects, watches the connection and reconnects with
// exponential backoff and jitter until ctx ends.
func (u *Upstream) supervise(ctx context.Context) {
	defer close(u.done)
	defer func() {
		u.mu.Lock()
		if !u.closed { // Start's context ended
			u.stopped = true
			u.state, u.lastErr = StateFailed, "stopped: "+context.Cause(ctx).Error()
		}
		u.mu.Unlock()
		u.signalReady(errClosed)
	}()
	backoff := u.tune.backoffMin
	wait := func() bool {
		d := backoff/2 + rand.N(backoff/2+1)
		backoff = min(backoff*2, u.tune.backoffMax)
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
			return true
		case <-ctx.Done():
			return false
		}
	}
	var (
		streak     int // failed attempts in a row
		unlogged   int // of them, not logged since the last that was
		lastLogged time.Time
	)
	for {
		c, lists, err := u.connect(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			streak++
			u.mu.Lock()
			u.failures++
			prev := u.lastErr
			u.lastErr = u.errText(err)
			same := u.lastErr == prev
			wasStarting := u.state == StateStarting
			if !u.ever {
				u.state = StateFailed
			} else {
				u.state = StateReconnecting
			}
			failures := u.failures
			u.mu.Unlock()
			if streak <= loudFailures || !same || time.Since(lastLogged) >= u.tune.failLogEvery {
				args := []any{"err", err, "attempt", failures}
				if unlogged > 0 {
					args = append(args, "unlogged_attempts", unlogged)
				}
				if streak == loudFailures {
					args = append(args, "note", "the same failure again is logged once every "+u.tune.failLogEvery.String())
				}
				u.log.Warn("upstream connection attempt failed", args...)
				lastLogged, unlogged = time.Now(), 0
			} else {
				unlogged++
				u.log.Debug("upstream connection attempt failed as before", "err", err, "attempt", failures)
			}
			u.signalReady(err)
			if wasStarting {
				u.fire(listTools) // Tools now reports the failure
			}
			if !wait() {
				return
			}
			continue
		}
		streak, unlogged = 0, 0
		since := time.Now()
		if !u.install(c, lists) {
			c.close()
			return
		}
		err = u.watch(ctx, c)
		u.mu.Lock()
		if u.conn == c {
			u.conn = nil
		}
		closing := ctx.Err() != nil
		if !closing {
			u.state = StateReconnecting
			u.restarts.Add(1)
			u.lastErr = u.errText(err)
		}
		restarts := u.restarts.Load()
		u.mu.Unlock()
		c.close()
		if closing {
			return
		}
		u.log.Warn("upstream connection lost; reconnecting", "err", err, "restarts", restarts)
		if time.Since(since) >= u.tune.stableAfter {
			backoff = u.tune.backoffMin
		}
		if !wait() {
			return
		}
	}
}

// watch returns when the connection is dead (its child exited, its
// transport closed, its session ended, a ping failed) or ctx ends. A
// quiet connection (nothing heard for pingInterval, no request awaiting
// an answer) is pinged; a failed call pings at once. A ping left
// unanswered is the connection's death only if the upstream stayed
// silent and no request went out meanwhile: a server that handles one
// message at a time cannot answer it while it works on a call, whose own
// deadline bounds the wait. A 2026-07-28 connection is not pinged (see
// listen).
func (u *Upstream) watch(ctx context.Context, c *conn) error {
	t := time.NewTicker(u.tune.pingInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return errClosed
		case <-c.dead:
			return c.deathCause()
		case <-c.kick:
		case <-t.C:
			if !c.quiet(u.tune.pingInterval) {
				continue
			}
		}
		if c.modern {
			// 2026-07-28 has no ping: its listen stream and its failed
			// requests tell (modern.go).
			continue
		}
		sent := time.Now()
		if err := c.ping(u.tune.pingTimeout); err != nil {
			if errors.Is(err, errNoPingAnswer) && (c.waiting.Load() > 0 || c.heard.Load() > sent.UnixNano()) {
				u.log.Debug("ping unanswered while the upstream is busy; not taken as its end", "err", err)
				continue
			}
			c.markDead(err)
		}
	}
}

// install makes c the live connection with the given listings and tells
// the listeners. It returns false if the upstream was closed meanwhile.
func (u *Upstream) install(c *conn, l *listings) bool {
	tools, unoffered, notes, warnings := u.buildTools(l.tools)
	prompts, promptNames := u.buildPrompts(l.prompts)
	resources, templates := u.buildResources(l.resources, l.templates)
	u.mu.Lock()
	if u.closed {
		u.mu.Unlock()
		return false
	}
	first := !u.ever
	u.conn, u.state, u.ever = c, StateReady, true
	var changed [3]bool
	for k, sum := range [...][32]byte{sumOf(l.tools), sumOf(l.prompts), sumOf(l.resources, l.templates)} {
		changed[k] = sum != u.listed[k]
		u.listed[k] = sum
	}
	logChanges := u.toolChanges(unoffered, notes, warnings)
	u.tools, u.unoffered, u.notes, u.warnings = tools, unoffered, notes, warnings
	u.prompts, u.promptNames, u.resources, u.templates = prompts, promptNames, resources, templates
	u.split = nil // lists of this connection alone, for now
	u.splitOn.Store(false)
	var resub []string // subscribed on the last connection: subscribe this one too
	for uri := range u.subs {
		resub = append(resub, uri)
	}
	var again []listKind
	for k := range u.pending {
		again = append(again, k)
	}
	clear(u.pending)
	u.mu.Unlock()
	logChanges()
	if u.sidecar() != nil { // it may list what this one does not
		again = append(again, listTools, listPrompts)
	}
	for _, k := range again {
		u.scheduleRelist(k)
	}
	u.signalReady(nil)
	u.log.Info("upstream ready", "server", c.serverInfo.Name, "server_version", c.serverInfo.Version,
		"protocol", c.protocol, "tools", len(tools), "prompts", len(prompts), "resources", len(resources)+len(templates),
		"first", first)
	for k, ch := range changed {
		if ch {
			u.fire(listKind(k))
		}
	}
	if len(resub) > 0 {
		go u.resubscribe(c, resub)
	}
	return true
}

// toolChanges returns what logs the tools left out or renamed that were
// not before. Callers hold u.mu, which it reads, and call what it returns
// after letting go of it: a log handler is code of others.
func (u *Upstream) toolChanges(unoffered map[string]string, notes, warnings []string) (logThem func()) {
	type line struct {
		msg  string
		args []any
	}
	var lines []line
	for _, w := range warnings {
		if !slices.Contains(u.warnings, w) {
			lines = append(lines, line{"upstream: " + w, nil}) // u.log names the upstream
		}
	}
	for name, why := range unoffered {
		if u.unoffered[name] != why {
			lines = append(lines, line{"upstream tool not offered", []any{"tool", name, "reason", why}})
		}
	}
	for _, n := range notes {
		if !slices.Contains(u.notes, n) {
			lines = append(lines, line{"upstream tool renamed", []any{"detail", n}})
		}
	}
	return func() {
		for _, l := range lines {
			u.log.Warn(l.msg, l.args...)
		}
	}
}

// fire calls the listeners of one kind of change.
func (u *Upstream) fire(k listKind) {
	u.mu.Lock()
	var ls []func()
	switch k {
	case listTools:
		ls = append(ls, u.toolL...)
	case listPrompts:
		ls = append(ls, u.promptL...)
	case listResources:
		ls = append(ls, u.resourceL...)
	}
	u.mu.Unlock()
	for _, f := range ls {
		f()
	}
}

// announce is the upstream's word that a list changed (list_changed): it
// is re-listed, and the listeners are told even when the new list is the
// same (the server may have changed what its tools do).
func (u *Upstream) announce(k listKind) {
	u.mu.Lock()
	u.announced[k] = true
	u.mu.Unlock()
	u.scheduleRelist(k)
}

// sumOf is the digest of raw lists, to tell whether a re-listing changed
// anything.
func sumOf(lists ...[]json.RawMessage) [32]byte {
	h := sha256.New()
	for _, l := range lists {
		for _, b := range l {
			h.Write(b)
			h.Write([]byte{0})
		}
		h.Write([]byte{1})
	}
	var sum [32]byte
	h.Sum(sum[:0])
	return sum
}

// scheduleRelist re-lists one kind after the debounce delay; list_changed
// notifications that come in a burst make one re-listing. It never blocks
// (it is called on the transport's read loop).
func (u *Upstream) scheduleRelist(k listKind) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.closed {
		return
	}
	if t := u.debounce[k]; t != nil {
		t.Reset(u.tune.debounce)
		return
	}
	u.debounce[k] = time.AfterFunc(u.tune.debounce, func() { u.relist(k) })
}

// relisters fetch one kind of list from a connection (and from the
// 2026-07-28 sidecar beside it, if open: side) and return how to install
// it (called with u.mu held, only if the connection is still the live
// one), which returns what to do once u.mu is let go (nil: nothing). It
// is set in init: the fetchers lead back to relist.
var relisters map[listKind]relister

type relister struct {
	what  string
	fetch func(ctx context.Context, u *Upstream, c, side *conn) (install func() (after func()), sum [32]byte, err error)
}

func init() {
	relisters = map[listKind]relister{
		listTools: {"tools", func(ctx context.Context, u *Upstream, c, side *conn) (func() func(), [32]byte, error) {
			raw, split, err := u.listBoth(ctx, c, side, (*conn).listTools)
			if err != nil {
				return nil, [32]byte{}, err
			}
			tools, unoffered, notes, warnings := u.buildTools(raw)
			return func() func() {
				logChanges := u.toolChanges(unoffered, notes, warnings)
				u.tools, u.unoffered, u.notes, u.warnings = tools, unoffered, notes, warnings
				u.setSplit(listTools, split)
				return logChanges
			}, sumOf(raw), nil
		}},
		listPrompts: {"prompts", func(ctx context.Context, u *Upstream, c, side *conn) (func() func(), [32]byte, error) {
			raw, split, err := u.listBoth(ctx, c, side, (*conn).listPrompts)
			if err != nil {
				return nil, [32]byte{}, err
			}
			prompts, promptNames := u.buildPrompts(raw)
			return func() func() {
				u.prompts, u.promptNames = prompts, promptNames
				u.setSplit(listPrompts, split)
				return nil
			}, sumOf(raw), nil
		}},
		// Resources are the main child's: reads by URI and subscriptions
		// stay on its connection.
		listResources: {"resources", func(ctx context.Context, u *Upstream, c, _ *conn) (func() func(), [32]byte, error) {
			rs, err := c.listResources(ctx)
			if err != nil {
				return nil, [32]byte{}, err
			}
			ts, err := c.listTemplates(ctx)
			if err != nil {
				return nil, [32]byte{}, fmt.Errorf("resource templates: %w", err)
			}
			resources, templates := u.buildResources(rs, ts)
			return func() func() {
				u.resources, u.templates = resources, templates
				return nil
			}, sumOf(rs, ts), nil
		}},
	}
}

// relist lists one kind again on the live connection and tells the
// listeners.
func (u *Upstream) relist(k listKind) {
	u.relistMu.Lock()
	defer u.relistMu.Unlock()
	u.mu.Lock()
	c := u.conn
	if c == nil || c.isDead() {
		// A connection being set up may have listed before this
		// list_changed: install lists again. Checked and marked under one
		// hold of u.mu, which install also takes to put a connection in
		// place and take the marks: the mark cannot fall between the two,
		// after install took them, and wait for the next reconnection.
		u.pending[k] = true
		u.mu.Unlock()
		return
	}
	// The announcement this re-listing answers; one made while it runs
	// schedules another.
	announced := u.announced[k]
	u.announced[k] = false
	u.mu.Unlock()
	ctx, cancel := context.WithTimeout(c.ctx, u.startup)
	defer cancel()
	r := relisters[k]
	install, sum, err := r.fetch(ctx, u, c, u.sidecar())
	u.mu.Lock()
	if err != nil || u.conn != c || u.closed {
		// Not installed. After a failure the announcement stands, for the
		// next re-listing; when the connection changed meanwhile, its own
		// listing stands.
		if err != nil {
			u.announced[k] = u.announced[k] || announced
		}
		u.mu.Unlock()
		if err != nil {
			u.log.Warn("re-listing "+r.what+" failed", "err", err)
		}
		return
	}
	after := install()
	changed := sum != u.listed[k]
	u.listed[k] = sum
	u.mu.Unlock()
	if after != nil {
		after()
	}
	if !changed && !announced {
		return // toolgate's own re-listing (sidecar.go), and nothing changed
	}
	if k == listTools {
		u.log.Info("upstream tools re-listed", "tools", u.toolCount(), "changed", changed)
	}
	u.fire(k)
}

// toolCount is the number of tools the upstream serves now.
func (u *Upstream) toolCount() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return len(u.tools)
}

// liveConn returns the live connection, or nil and why there is none.
func (u *Upstream) liveConn() (*conn, string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if c := u.conn; c != nil && !c.isDead() {
		return c, ""
	}
	switch {
	case u.closed:
		return nil, fmt.Sprintf("upstream %q is closed", u.name)
	case u.stopped:
		return nil, fmt.Sprintf("upstream %q is %s", u.name, u.lastErr)
	case u.state == StateDisabled:
		return nil, fmt.Sprintf("upstream %q is disabled", u.name)
	case !u.started:
		return nil, fmt.Sprintf("upstream %q has not been started", u.name)
	case u.state == StateStarting:
		return nil, fmt.Sprintf("upstream %q is still starting", u.name)
	case !u.ever:
		return nil, fmt.Sprintf("upstream %q is not connected (%s); retrying", u.name, u.lastErr)
	default:
		return nil, fmt.Sprintf("upstream %q lost its connection (%s) and is reconnecting", u.name, u.lastErr)
	}
}

// Tools implements [gateway.Toolset]. While reconnecting it returns the
// last known tools (calls to them are answered as unavailable); an
// upstream that never connected has no tools and returns its error.
func (u *Upstream) Tools(context.Context) ([]*gateway.Tool, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.state == StateFailed && !u.ever && !u.closed {
		return nil, fmt.Errorf("upstream %q is not connected: %s", u.name, u.lastErr)
	}
	return append([]*gateway.Tool(nil), u.tools...), nil
}

// Unoffered implements [gateway.Unofferer]: the tools the upstream lists
// that are not offered, by gateway name, with the reason (a schema that
// does not compile, a tool that requires task-augmented calls). Tools
// filtered out by allow/deny are not included: they are simply not
// offered.
func (u *Upstream) Unoffered() map[string]string {
	u.mu.Lock()
	defer u.mu.Unlock()
	out := make(map[string]string, len(u.unoffered))
	for k, v := range u.unoffered {
		out[k] = v
	}
	return out
}

// OnToolsChanged implements [gateway.ChangeNotifier].
func (u *Upstream) OnToolsChanged(f func()) {
	u.mu.Lock()
	u.toolL = append(u.toolL, f)
	u.mu.Unlock()
}

// OnPromptsChanged implements [gateway.PromptsChangeNotifier].
func (u *Upstream) OnPromptsChanged(f func()) {
	u.mu.Lock()
	u.promptL = append(u.promptL, f)
	u.mu.Unlock()
}

// OnResourcesChanged implements [gateway.ResourcesChangeNotifier].
func (u *Upstream) OnResourcesChanged(f func()) {
	u.mu.Lock()
	u.resourceL = append(u.resourceL, f)
	u.mu.Unlock()
}

// Prompts implements [gateway.PromptSource]: the upstream's prompts as of
// its last listing, named "<prefix>__<name>".
func (u *Upstream) Prompts(context.Context) ([]gateway.Prompt, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]gateway.Prompt(nil), u.prompts...), nil
}

// Resources implements [gateway.ResourceSource]: the upstream's resources
// and templates as of its last listing, with their own URIs. Reads go to
// this upstream, uncached.
func (u *Upstream) Resources(context.Context) ([]gateway.Resource, []gateway.ResourceTemplate, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]gateway.Resource(nil), u.resources...), append([]gateway.ResourceTemplate(nil), u.templates...), nil
}

// Status implements [gateway.StatusReporter].
func (u *Upstream) Status() gateway.ToolsetStatus {
	u.mu.Lock()
	defer u.mu.Unlock()
	var parts []string
	if kind := u.transport(); kind != u.kind {
		parts = append(parts, "transport "+kind+" (it "+sseFallbackNote+")")
	} else {
		parts = append(parts, "transport "+kind)
	}
	if u.conn != nil {
		parts = append(parts, "protocol "+u.conn.protocol)
	}
	parts = append(parts, fmt.Sprintf("restarts %d", u.restarts.Load()))
	if u.state == StateFailed && u.failures > 0 {
		parts = append(parts, gateway.Plural(u.failures, "failed attempt", "failed attempts"))
	}
	if u.lastErr != "" {
		parts = append(parts, "last error: "+u.lastErr)
	}
	if len(u.unoffered) > 0 {
		names := make([]string, 0, len(u.unoffered))
		for _, k := range sortedKeys(u.unoffered) {
			names = append(names, fmt.Sprintf("%s (%s)", k, u.unoffered[k]))
		}
		parts = append(parts, fmt.Sprintf("%s not offered: %s", gateway.Plural(len(names), "tool", "tools"), strings.Join(names, "; ")))
	}
	parts = append(parts, u.notes...)
	return gateway.ToolsetStatus{State: u.state, Detail: strings.Join(parts, "; "), Warnings: slices.Clone(u.warnings),
		Upstream: &gateway.UpstreamStatus{Transport: u.transport(), Restarts: int(u.restarts.Load())}}
}

// Restarts is how many times the connection was lost and re-established
// (or is being re-established), counted in [Options.Restarts] when that
// is set.
func (u *Upstream) Restarts() int {
	return int(u.restarts.Load())
}

// target describes where the upstream is, for logs: the command, or the
// URL without its query and user info (either may hold secrets).
func (u *Upstream) target() string {
	if u.kind == TransportStdio {
		return u.cfg.Command
	}
	p, err := url.Parse(u.cfg.URL)
	if err != nil {
		return ""
	}
	p.User, p.RawQuery, p.Fragment = nil, "", ""
	return p.String()
}

var (
	_ gateway.Toolset                 = (*Upstream)(nil)
	_ gateway.ChangeNotifier          = (*Upstream)(nil)
	_ gateway.StatusReporter          = (*Upstream)(nil)
	_ gateway.Unofferer               = (*Upstream)(nil)
	_ gateway.Namespacer              = (*Upstream)(nil)
	_ gateway.Closer                  = (*Upstream)(nil)
	_ gateway.PromptSource            = (*Upstream)(nil)
	_ gateway.PromptsChangeNotifier   = (*Upstream)(nil)
	_ gateway.ResourceSource          = (*Upstream)(nil)
	_ gateway.ResourcesChangeNotifier = (*Upstream)(nil)
)
