package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spf13/pflag"
	"github.com/toolgate/toolgate/adapters/upstream"
	"github.com/toolgate/toolgate/cmd/toolgate/internal/config"
	"github.com/toolgate/toolgate/gateway"
	"github.com/toolgate/toolgate/gateway/operator"
	"github.com/toolgate/toolgate/gateway/runs"
	"github.com/toolgate/toolgate/gateway/telemetry"
	"github.com/toolgate/toolgate/policy"
	"github.com/toolgate/toolgate/toolsets/discovery"
	"github.com/toolgate/toolgate/toolsets/skills"
)

// app is toolgate assembled from its configuration: the run archive, the
// toolsets in a catalog, the policy and the pipeline. Every command that
// touches tools builds one; serve then puts the MCP server in front of it.
type app struct {
	cfg      *config.Config
	log      *slog.Logger
	logClose io.Closer

	run     *runs.Run // nil when the command records nothing
	globs   globWarner
	tempDir string // a throwaway directory when there is no run
	sandbox *policy.Sandbox
	catalog *gateway.Catalog
	policy  *policy.Live // replaced whole on reload
	// hideDenied is policy.list_denied: hide at start. tools/list's filter
	// and find_tools are built with it or without it, so a reload cannot
	// change it (it logs so); the filter itself asks the policy in force.
	hideDenied bool
	pipeline   *gateway.Pipeline
	// metrics, when enabled, observes every call (nil when off).
	metrics *telemetry.Metrics
	// traceShutdown flushes and closes the trace provider (nil when traces are off).
	traceShutdown func(context.Context) error
	// queue holds calls waiting for an operator (nil when nothing can wait).
	queue *operator.Queue
	// approvals asks a person about calls (nil when no rule asks).
	approvals *operator.Approvals
	// recent keeps the latest calls for the admin API and page (nil when
	// admin.addr is off).
	recent *operator.Recent
	// What rebuilding a built-in toolset on reload needs.
	artifacts gateway.ArtifactStore
	recordRun bool
	// skills serves the skills toolset's prompts (the toolset may be
	// replaced on reload).
	skills *livePrompts
	// retired are replaced toolsets and sandboxes, closed at shutdown:
	// calls in flight may still use them.
	retired []io.Closer
	// liveViews are the profiles' views in force (serve).
	liveViews atomic.Pointer[viewSet]
	// servedProfile is serve's --profile: a reload keeps it.
	servedProfile string
	// discovery is tool search (nil when discovery.mode is all).
	discovery *discovery.Discovery

	// prompts and resources the MCP server serves besides tools.
	promptSources   []gateway.PromptSource
	resourceSources []gateway.ResourceSource

	// bg lives as long as the app: upstream supervisors run under it.
	bg       context.Context
	bgCancel context.CancelFunc
	// clientRoots, once serve has an MCP server, asks the client for its
	// roots (for upstreams with forward_roots).
	clientRoots atomic.Pointer[func(context.Context) ([]gateway.ClientRoot, error)]
	// reloads, in serve, reloads the configuration on change (reload.go).
	reloads      *reloader
	reloadCounts reloadCounts
	// upSources are the upstreams serving prompts and resources, by name;
	// set at start, then changed only by the reloader's goroutine.
	upSources map[string]*upstream.Upstream
	// retiring are the upstreams a reload took out, until closed (once
	// their calls in flight are done, or at shutdown).
	retiring retiringUpstreams
	// upRestarts counts each upstream's restarts by name, for the life of
	// the process: a reload that replaces an upstream gives the new one
	// the old one's counter, so that /healthz and
	// toolgate_upstream_restarts_total continue rather than drop to 0
	// (which Prometheus takes for a counter reset).
	upRestarts sync.Map // name -> *atomic.Int64
}

type appOptions struct {
	// record opens a run archive; without it the default sandbox root is
	// a temporary directory and nothing is recorded (toolgate tools).
	record bool
	// command and configFile go into the run's manifest.
	command    []string
	configFile string
	// upstreams says which upstreams newApp starts and how long it waits
	// for them; the zero value starts all and waits for each.
	upstreams upstreamStart
	// serve says the command goes on serving (toolgate serve). It serves
	// the admin API when admin.addr is set: only then can an operator
	// answer an approval or a definition-only tool's call, so only then is
	// one asked of the operator (elsewhere such a call is refused at
	// once). And an upstream not ready at start joins later, which its
	// log says; a command that ends (tools, call) says in its own output
	// what it found, and logs it at DEBUG.
	serve bool
}

// upstreamStart says which upstreams a command starts and how long newApp
// waits for them before the command goes on. An upstream that is ready
// only later joins the catalog when it connects (its tools appear and MCP
// clients are told with notifications/tools/list_changed).
type upstreamStart struct {
	// forTool, when set, starts only the upstreams that can serve this
	// tool name, and none when a built-in tool serves it (toolgate call).
	forTool string
	// grace caps the wait for each upstream; zero waits up to its
	// startup_timeout (toolgate tools, which shows each upstream's state).
	grace time.Duration
}

// serveStartupGrace is how long serve waits for upstreams before it
// answers clients: long enough for a quick upstream's tools to be in the
// first tools/list (some clients never re-list), short enough that a hung
// or slow one (a first `npx -y` download) does not hold up initialize.
const serveStartupGrace = 3 * time.Second

// loadConfig loads the configuration for a command's flags.
func loadConfig(fs *pflag.FlagSet, keys map[string]string) (*config.Config, error) {
	file, _ := fs.GetString("config")
	return loadConfigFrom(config.Options{File: file, Flags: fs, FlagKeys: keys})
}

// loadConfigFrom loads the configuration from opts.File ("":
// ./toolgate.yaml if there is one), the environment and the flags; an
// error is a usage error (exit 2).
func loadConfigFrom(opts config.Options) (*config.Config, error) {
	cfg, _, _, err := config.Load(opts)
	if err != nil {
		return nil, usageError{err.Error()}
	}
	return cfg, nil
}

// newLogger builds the operator logger: to the configured file or to
// stderr, never to stdout.
func newLogger(cfg *config.Config, stderr io.Writer) (*slog.Logger, io.Closer, error) {
	var w io.Writer = stderr
	var closer io.Closer
	if cfg.Log.File != "" {
		f, err := os.OpenFile(cfg.Log.File, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
		if err != nil {
			return nil, nil, fmt.Errorf("log.file: %w", err)
		}
		w, closer = f, f
	}
	var level slog.Level
	_ = level.UnmarshalText([]byte(cfg.Log.Level))
	opts := &slog.HandlerOptions{Level: level}
	var h slog.Handler = slog.NewTextHandler(w, opts)
	if cfg.Log.Format == "json" {
		h = slog.NewJSONHandler(w, opts)
	}
	return slog.New(h), closer, nil
}

func newApp(ctx context.Context, cfg *config.Config, stderr io.Writer, opts appOptions) (a *app, err error) {
	a = &app{cfg: cfg}
	if a.log, a.logClose, err = newLogger(cfg, stderr); err != nil {
		return nil, err
	}
	a.bg, a.bgCancel = context.WithCancel(context.Background())
	for _, n := range cfg.ImportNotes {
		a.log.Info("upstreams_from", "note", n)
	}
	built := a // a is nil once an error is returned
	defer func() {
		if err != nil {
			built.close()
		}
	}()

	var recorder gateway.Recorder
	var artifacts gateway.ArtifactStore
	if opts.record {
		a.applyRetention(cfg) // before this run exists: it is never a candidate
		a.run, err = runs.Open(cfg.ResolvedRunsDir(), &runs.Options{Version: version(), Logger: a.log,
			Command: append([]string{"toolgate"}, opts.command...), Config: opts.configFile, Replica: cfg.ReplicaID})
		if err != nil {
			return nil, err
		}
		recorder, artifacts = a.run, a.run
		a.log = a.log.With("run", a.run.ID())
	} else {
		if a.tempDir, err = os.MkdirTemp("", "toolgate-"); err != nil {
			return nil, err
		}
		// Commands that describe tools without running them (tools,
		// policy) describe them as serve and call run them: with the
		// archive (write_file's description says an overwrite loses
		// nothing). No call runs here, so nothing is ever written.
		artifacts = describeOnly{}
	}

	a.artifacts, a.recordRun = artifacts, opts.record
	var shownRoots []string
	if a.sandbox, shownRoots, err = a.newSandbox(cfg, ownState(cfg)); err != nil {
		return nil, err
	}
	profiles, err := cfg.PolicyProfiles()
	if err != nil {
		return nil, usageError{err.Error()}
	}
	eff, err := policy.New(cfg.EffectivePolicy(), &policy.Options{SandboxRoots: shownRoots, Logger: a.log, Profiles: profiles})
	if err != nil {
		return nil, usageError{err.Error()}
	}
	a.policy = policy.NewLive(eff)
	a.hideDenied = eff.HideDenied()

	a.catalog = gateway.NewCatalog(a.log)
	a.catalog.OnChange(a.tellPolicyDestructive)
	if a.run != nil {
		a.catalog.OnConflict(func(c gateway.Conflict) {
			fields := map[string]any{"name": c.Name, "kept_by": c.Kept, "renamed_in": c.Renamed, "served_as": c.ServedAs}
			if c.Namespace != "" {
				fields["namespace"] = c.Namespace // refused, not renamed
			}
			a.run.Event("catalog.name_conflict", fields)
		})
	}
	for _, b := range builtins {
		ts, err := b.build(a, cfg)
		if err != nil {
			return nil, err
		}
		if ts == nil {
			continue // off in this configuration
		}
		if err := a.catalog.Add(ctx, ts); err != nil {
			return nil, err
		}
	}

	// Tool search before the upstreams: find_tools and call_tool are the
	// gateway's own names, so an upstream without a prefix that lists a
	// tool of that name is the one renamed (at start the catalog keeps a
	// name for the toolset added first, and then for its owner).
	if err := a.addDiscovery(ctx); err != nil {
		return nil, err
	}
	if err := a.startUpstreams(ctx, opts.upstreams, opts.serve); err != nil {
		return nil, err
	}
	if opts.serve && cfg.Admin.Addr != "" {
		// The operator channel, which the admin API serves: definition-only
		// calls and approvals wait here for an operator's answer.
		a.queue = operator.NewQueue()
	}
	if err := a.addDefinitions(ctx); err != nil {
		return nil, err
	}

	recorder = a.withRecent(a.withMetrics(recorder))
	tracer, err := a.startTracing(ctx)
	if err != nil {
		return nil, err
	}
	a.pipeline = gateway.NewPipeline(&gateway.Options{
		Tracer:         tracer,
		Tools:          a.catalog,
		Policy:         a.policy,
		Recorder:       recorder,
		Approver:       a.approver(),
		Artifacts:      artifacts,
		MaxOutputBytes: cfg.Limits.MaxOutputBytes,
		CallTimeout:    cfg.Limits.CallTimeout,
		Logger:         a.log,
		// Replicas that share session keys open each other's round
		// states (a bad value is reported by serve).
		RoundSecrets: roundSecrets(cfg),
	})
	if a.discovery != nil {
		a.discovery.Bind(a.pipeline)
	}
	return a, nil
}

// startUpstreams starts the configured upstreams the command needs at
// once, waits (each up to its startup_timeout, or start.grace) until each
// is ready or has failed, and adds them to the catalog; one still starting
// adds its tools when it connects. An upstream that fails does not stop the others or the
// gateway: its state shows in `toolgate tools` and /healthz, and its
// supervisor keeps reconnecting with backoff. serving is appOptions.serve.
func (a *app) startUpstreams(ctx context.Context, start upstreamStart, serving bool) error {
	if start.forTool != "" {
		if _, ts, ok := a.catalog.Resolve(start.forTool); ok {
			if ts != discovery.Name {
				return nil // a built-in tool: no upstream is needed
			}
			start.forTool = "" // call_tool may call a tool of any upstream
		}
	}
	var ups []*upstream.Upstream
	var waits []time.Duration
	for _, uc := range a.cfg.Upstreams {
		u, err := a.newUpstream(uc)
		if err != nil {
			return usageError{err.Error()}
		}
		if start.forTool != "" && !mayServe(u.Prefix(), start.forTool) {
			continue
		}
		u.Start(a.bg)
		ups = append(ups, u)
		wait := uc.StartupTimeout
		if wait <= 0 {
			wait = 30 * time.Second
		}
		// A little past the upstream's own startup deadline, so that the
		// attempt has failed (and says why) when we stop waiting.
		wait += time.Second
		if start.grace > 0 && start.grace < wait {
			wait = start.grace
		}
		waits = append(waits, wait)
	}
	var wg sync.WaitGroup
	for i, u := range ups {
		wg.Add(1)
		go func() {
			defer wg.Done()
			wctx, cancel := context.WithTimeout(ctx, waits[i])
			defer cancel()
			_ = u.WaitReady(wctx)
		}()
	}
	wg.Wait()
	toolsets := make([]gateway.Toolset, len(ups))
	for i, u := range ups {
		if u.Status().State == upstream.StateStarting && serving {
			a.log.Info("upstream still starting; its tools will be added when it connects", "upstream", u.Name())
		}
		toolsets[i] = u
	}
	// All at once: one rebuild of the catalog for all of them.
	errs := a.catalog.AddAll(ctx, toolsets)
	for i, u := range ups {
		switch {
		case errs[i] == nil:
		case serving:
			a.log.Info("upstream not ready; its tools will appear when it connects", "upstream", u.Name(), "err", errs[i])
		default: // the command's own output says it (toolgate tools, call)
			a.log.Debug("upstream not ready", "upstream", u.Name(), "err", errs[i])
		}
		a.addUpstreamSource(u)
		a.promptSources = append(a.promptSources, u)
		a.resourceSources = append(a.resourceSources, u)
	}
	return nil
}

// addUpstreamSource records u as the source of its prompts and resources,
// which a reload may retire.
func (a *app) addUpstreamSource(u *upstream.Upstream) {
	if a.upSources == nil {
		a.upSources = map[string]*upstream.Upstream{}
	}
	a.upSources[u.Name()] = u
}

// retiringUpstreams are upstreams taken out by a reload and not closed
// yet. The reloader adds them; the goroutine that closes one once idle
// takes it out, so that a closed upstream is not held until shutdown.
type retiringUpstreams struct {
	mu  sync.Mutex
	ups map[*upstream.Upstream]struct{}
}

func (r *retiringUpstreams) add(u *upstream.Upstream) {
	r.mu.Lock()
	if r.ups == nil {
		r.ups = map[*upstream.Upstream]struct{}{}
	}
	r.ups[u] = struct{}{}
	r.mu.Unlock()
}

func (r *retiringUpstreams) remove(u *upstream.Upstream) {
	r.mu.Lock()
	delete(r.ups, u)
	r.mu.Unlock()
}

func (r *retiringUpstreams) all() []*upstream.Upstream {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Collect(maps.Keys(r.ups))
}

// newUpstream makes (but does not start) the toolset of one upstream.
func (a *app) newUpstream(uc upstream.Config) (*upstream.Upstream, error) {
	return upstream.New(uc, &upstream.Options{
		Logger:             a.log,
		DefaultCallTimeout: a.cfg.Limits.CallTimeout,
		Roots:              a.forwardRoots,
		Restarts:           a.restartCounter(uc.Name),
	})
}

// restartCounter is the restart count of the upstreams named name.
func (a *app) restartCounter(name string) *atomic.Int64 {
	n, _ := a.upRestarts.LoadOrStore(name, new(atomic.Int64))
	return n.(*atomic.Int64)
}

// mayServe says whether an upstream with this prefix may serve the tool:
// its tools are named "<prefix>__<name>", or have no prefix at all.
func mayServe(prefix, tool string) bool {
	return prefix == "" || strings.HasPrefix(tool, prefix+"__")
}

// forwardRoots answers an upstream's roots/list (only upstreams with
// forward_roots ask) with the roots of the connected client. Before serve
// has an MCP server there is no client: an error, as later with none
// connected, not an empty list, which would say the client has no roots.
// The upstream is told the roots changed once a client can be asked
// ([gateway.MCPServer.ClientRoots]).
func (a *app) forwardRoots(ctx context.Context) ([]upstream.Root, error) {
	f := a.clientRoots.Load()
	if f == nil {
		return nil, gateway.ErrNoClient
	}
	roots, err := (*f)(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]upstream.Root, len(roots))
	for i, r := range roots {
		out[i] = upstream.Root{URI: r.URI, Name: r.Name}
	}
	return out, nil
}

// skillGranter lets loaded skills request capabilities from the policy
// (merge rule 4: a request takes effect only for requestable capabilities).
type skillGranter struct{ p *policy.Live }

func (g skillGranter) Request(ctx context.Context, skill string, caps []string) []skills.Grant {
	res := g.p.Request(ctx, skill, caps)
	out := make([]skills.Grant, len(res))
	for i, r := range res {
		out[i] = skills.Grant{Capability: r.Capability, Granted: r.Granted, Reason: r.Reason}
	}
	return out
}

// listingApp loads the configuration and builds an app that records
// nothing, for the commands that only describe the catalog (tools, policy).
// The caller closes it.
func listingApp(e *env, fs *pflag.FlagSet, args []string, name string) (*app, error) {
	if len(args) > 0 {
		return nil, usagef("%s takes no arguments", name)
	}
	cfg, err := loadConfig(fs, configFlagKeys)
	if err != nil {
		return nil, err
	}
	if fs.Lookup("profile") != nil {
		if err := checkProfile(cfg, fs); err != nil {
			return nil, err
		}
	}
	return newApp(e.ctx, cfg, e.stderr, appOptions{})
}

// drain stops the pipeline: new calls are refused (and recorded), calls in
// flight get limits.shutdown_grace to finish, then are cancelled; every
// call has its record when drain returns. Draining again returns at once.
func (a *app) drain() {
	if a.queue != nil {
		a.queue.Close() // calls waiting for a person end now, cancelled
	}
	if a.pipeline == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), a.cfg.Limits.ShutdownGrace)
	defer cancel()
	if err := a.pipeline.Shutdown(ctx); err != nil {
		a.log.Warn("shutdown grace period ended; remaining calls were cancelled", "err", err)
	}
}

// close shuts the app down and closes the log.
func (a *app) close() error {
	return errors.Join(a.shutdown(), a.closeLog())
}

// closeLog closes the log file, if there is one; nothing can be logged
// after it (log the last words first).
func (a *app) closeLog() error {
	c := a.logClose
	a.logClose = nil
	if c == nil {
		return nil
	}
	return c.Close()
}

// shutdown drains the pipeline, closes the toolsets (ending upstream
// processes), and flushes and closes the run archive. The log stays open.
func (a *app) shutdown() error {
	var errs []error
	a.drain()
	if a.catalog != nil {
		errs = append(errs, a.catalog.Close()) // ends upstream processes too
	}
	if a.bgCancel != nil {
		a.bgCancel()
	}
	if a.sandbox != nil {
		errs = append(errs, a.sandbox.Close())
	}
	for _, c := range a.retired {
		errs = append(errs, c.Close())
	}
	for _, u := range a.retiring.all() { // closed outside its lock
		errs = append(errs, u.Close())
	}
	if a.traceShutdown != nil {
		tctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		if err := a.traceShutdown(tctx); err != nil { // the last spans are exported
			errs = append(errs, fmt.Errorf("traces: exporting the last spans: %w", err))
		}
		cancel()
	}
	if a.run != nil {
		errs = append(errs, a.run.Close())
	}
	if a.tempDir != "" {
		errs = append(errs, os.RemoveAll(a.tempDir))
	}
	return errors.Join(errs...)
}

// toolFilter hides denied tools from tools/list when the policy says so
// (policy.list_denied: hide); by default every tool is listed and denied
// ones are refused at call time.
func (a *app) toolFilter() func(context.Context, *gateway.Tool) bool {
	if !a.hideDenied {
		return nil
	}
	return func(ctx context.Context, t *gateway.Tool) bool { return listable(a.policy.Decide(ctx, t)) }
}

// listable says whether list_denied: hide keeps a tool of that decision:
// one the policy allows, or allows once a person approves (ask); only
// denied tools are left out.
func listable(d gateway.Decision) bool { return d.Allow || d.Ask }

// toolMeta marks each listed tool with the policy's decision, so clients
// can show which tools will be refused (one map per decision, shared:
// [gateway.DecisionMeta]).
func (a *app) toolMeta(ctx context.Context, t *gateway.Tool) map[string]any {
	return gateway.DecisionMeta(a.policy.Decide(ctx, t))
}

// describeOnly is the artifact store of commands that run no call.
type describeOnly struct{}

var errDescribeOnly = errors.New("this command runs no tool calls and keeps no archive")

func (describeOnly) SaveArtifact(*gateway.Call, string, string, []byte) (gateway.Artifact, error) {
	return gateway.Artifact{}, errDescribeOnly
}

func (describeOnly) ReadArtifact(string) ([]byte, string, error) { return nil, "", errDescribeOnly }

// tellPolicyDestructive gives the policy the catalog's destructive tools
// by toolset (see policy.Effective.SetDestructiveTools); called after every
// catalog change, outside the catalog's lock.
func (a *app) tellPolicyDestructive() {
	sets := map[string][]string{}
	for _, e := range a.catalog.Entries() {
		if e.Tool.Permissions.Resolved().Destructive {
			sets[e.Toolset] = append(sets[e.Toolset], e.Tool.Name)
		}
	}
	a.policy.Current().SetDestructiveTools(sets)
}

// roundSecrets are the shared session keys, if any: replicas derive the
// keys of round states from them.
func roundSecrets(cfg *config.Config) [][]byte {
	keys, err := cfg.SessionKeys()
	if err != nil {
		return nil
	}
	return keys
}
