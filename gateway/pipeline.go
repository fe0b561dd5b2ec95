package gateway

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"go.opentelemetry.io/otel/trace"
)

// Handler handles a call and always returns a Result: failures are error
// Results, never Go errors or panics.
type Handler func(ctx context.Context, call *Call) *Result

// Middleware is one stage of the pipeline: it gets the next handler and
// returns a handler that does its part around it, as net/http middleware
// does. A stage that has nothing to do returns next unchanged.
type Middleware func(next Handler) Handler

// Chain composes stages around h. The first stage is the outermost: it
// sees the call first and the result last.
func Chain(h Handler, stages ...Middleware) Handler {
	for i := len(stages) - 1; i >= 0; i-- {
		h = stages[i](h)
	}
	return h
}

// Resolver finds a tool by the name a client calls it by, and names the
// toolset it belongs to. [Catalog] is the gateway's resolver.
type Resolver interface {
	Resolve(name string) (t *Tool, toolset string, ok bool)
}

// Defaults for [Options].
const (
	DefaultMaxOutputBytes = 32 << 10
	DefaultCallTimeout    = 60 * time.Second
)

// Options configure a [Pipeline]. The zero value of each field is its
// default; a nil stage dependency switches that stage off, which tests and
// benchmarks use to measure stages one at a time. A serving gateway sets
// them all.
type Options struct {
	// Tools resolves tool names. Required.
	Tools Resolver
	// Policy authorizes calls. If nil, the authorize stage is off and
	// every call is allowed.
	Policy Policy
	// Recorder records calls. If nil, the record stage only logs.
	Recorder Recorder
	// Approver asks a person about calls the policy allows only with
	// approval. If nil, such calls are denied.
	Approver Approver
	// Artifacts stores large outputs. If nil, the summarize stage is off.
	Artifacts ArtifactStore
	// MaxOutputBytes is the output size above which output is saved as an
	// artifact and replaced by a summary. If zero, [DefaultMaxOutputBytes].
	MaxOutputBytes int
	// CallTimeout is the per-call deadline (a tool's own Timeout wins).
	// If zero, [DefaultCallTimeout].
	CallTimeout time.Duration
	// SkipValidation switches the validate stage off (arguments are still
	// decoded). For benchmarks only.
	SkipValidation bool
	// Logger receives a line per call (at debug; failed calls at info) and
	// the pipeline's own problems.
	// If nil, logs are discarded.
	Logger *slog.Logger
	// Tracer, if set, makes every call an OpenTelemetry span (trace.go).
	// If nil, there is no trace stage.
	Tracer trace.Tracer
	// RoundSecrets, if any, are the secrets the keys of round states
	// (rounds.go) are derived from, the first sealing: replicas sharing
	// them open each other's states. If none, a key is drawn at start.
	RoundSecrets [][]byte
}

// Pipeline runs every tool call, built-in or upstream, through the same
// stages, in this order:
//
//	trace      the call's span, when a Tracer is set (trace.go)
//	record     tool.started, then tool.completed / tool.failed and the call's line (record.go)
//	resolve    find the tool, or a not-found result (resolve.go)
//	validate   decode the arguments and check them against the schema (validate.go)
//	authorize  ask the policy (authorize.go)
//	approve    wait for a person's approval where the policy asks (approve.go)
//	summarize  save output over the limit as an artifact, keep a summary (summarize.go)
//	execute    run the handler with deadline, cancellation and panic recovery (execute.go)
//
// record is outermost so that it sees every outcome, including denials and
// summaries; execute is the terminal handler.
//
// A Pipeline is safe for concurrent use. [Pipeline.Shutdown] stops it.
type Pipeline struct {
	opts    Options
	log     *slog.Logger
	handler Handler
	// rounds seals and opens the request states of calls' rounds, and
	// exchanges holds the calls waiting for a client's answer in one.
	rounds    *RoundStates
	exchanges exchanges
	// limits are the per-call limits in force; [Pipeline.SetLimits]
	// replaces them, and each call keeps the ones it started with.
	limits atomic.Pointer[Limits]

	mu       sync.Mutex
	closing  bool
	closed   chan struct{} // closed when closing is set ([Pipeline.Closing])
	inflight sync.WaitGroup
	// running counts the calls in the pipeline, and overlaps (a buffer
	// of one, sent to without blocking) receives when a call starts while
	// another runs ([Pipeline.Overlaps]).
	running  atomic.Int64
	overlaps chan struct{}
	// overlapAt is when a call last started while another ran (unix
	// nanoseconds), for [Call.CallsOverlap].
	overlapAt atomic.Int64
	// executing holds the cancel functions of the calls being executed or
	// waiting for approval (by a sequence number), which Shutdown calls
	// when its grace period ends (then killed is set, and calls that start after it are cancelled at once): every
	// call still running is cancelled, and records its end. A map entry
	// rather than a context.AfterFunc on a shared "kill" context: the
	// same effect without two allocations per call.
	killMu    sync.Mutex
	killed    bool
	execSeq   uint64
	executing map[uint64]canceller
}

// canceller cancels a call being executed: its [callDeadline], or the
// cancel function of its context ([cancelFunc]). An interface rather than
// a func, so that registering a callDeadline needs no method value (an
// allocation).
type canceller interface{ cancel() }

// cancelFunc is a context's cancel function as a [canceller].
type cancelFunc context.CancelFunc

func (f cancelFunc) cancel() { f() }

// NewPipeline builds a pipeline. options is copied; nil means the zero
// Options, whose fields are the defaults except Tools, which is required:
// NewPipeline panics without it.
func NewPipeline(options *Options) *Pipeline {
	var opts Options
	if options != nil {
		opts = *options
	}
	if opts.Tools == nil {
		panic("gateway: NewPipeline without Options.Tools")
	}
	if opts.MaxOutputBytes <= 0 {
		opts.MaxOutputBytes = DefaultMaxOutputBytes
	}
	if opts.CallTimeout <= 0 {
		opts.CallTimeout = DefaultCallTimeout
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	p := &Pipeline{opts: opts, log: log, rounds: NewRoundStates(roundPrefix, opts.RoundSecrets), closed: make(chan struct{})}
	p.limits.Store(&Limits{CallTimeout: opts.CallTimeout, MaxOutputBytes: opts.MaxOutputBytes})
	p.executing = map[uint64]canceller{}
	p.overlaps = make(chan struct{}, 1)
	stages := []Middleware{
		p.recordStage,
		p.resolveStage,
		p.validateStage,
		p.authorizeStage,
		p.approveStage,
		p.roundStage,
		p.summarizeStage,
	}
	if opts.Tracer != nil {
		stages = append([]Middleware{p.traceStage}, stages...)
	}
	p.handler = Chain(p.execute, stages...)
	return p
}

// Limits are the per-call limits a pipeline applies.
type Limits struct {
	CallTimeout    time.Duration // the deadline of a call whose tool sets none
	MaxOutputBytes int           // output above this becomes an artifact and a summary
}

// SetLimits replaces the limits for the calls that start from now on
// (a reload); calls in flight finish under the limits they started with.
// A zero field keeps its default.
func (p *Pipeline) SetLimits(l Limits) {
	if l.CallTimeout <= 0 {
		l.CallTimeout = DefaultCallTimeout
	}
	if l.MaxOutputBytes <= 0 {
		l.MaxOutputBytes = DefaultMaxOutputBytes
	}
	p.limits.Store(&l)
}

// ErrShuttingDown is the reason given to calls that arrive after
// [Pipeline.Shutdown] began.
var ErrShuttingDown = errors.New("gateway is shutting down")

// Call runs one call through the pipeline and returns its result. It never
// panics and never returns nil. It blocks until the call ends; use
// [Pipeline.Start] to not block.
func (p *Pipeline) Call(ctx context.Context, call *Call) (res *Result) {
	if call.ID == "" {
		call.ID = NewCallID()
	}
	if call.sessionRef == "" && call.Session != "" {
		// Set before the stages share the call (and once: a call may pass
		// the pipeline again while the first pass's handler reads it).
		call.sessionRef = SessionRef(call.Session)
	}
	p.mu.Lock()
	if p.closing {
		p.mu.Unlock()
		return p.reject(ctx, call)
	}
	p.inflight.Add(1)
	p.mu.Unlock()
	defer p.inflight.Done()
	if p.running.Add(1) > 1 {
		p.overlapAt.Store(time.Now().UnixNano())
		select {
		case p.overlaps <- struct{}{}:
		default: // one is waiting already
		}
	}
	defer p.running.Add(-1)

	ctx = call.inContext(ctx)
	call.limits = p.limits.Load()
	call.pipeline = p

	defer func() {
		// The stages do not panic; this is the last line of defence so
		// that a bug in one never takes the gateway down.
		if r := recover(); r != nil {
			p.log.Error("pipeline panic", "call_id", call.ID, "tool", call.Name, "panic", r, "stack", string(debug.Stack()))
			res = RuntimeErrorResult(call.Name, fmt.Errorf("internal error: %v", r))
		}
	}()
	res = p.handler(ctx, call)
	if res == nil {
		res = RuntimeErrorResult(call.Name, errNoResult)
	}
	return res
}

// Overlaps receives when a call starts while another is in the pipeline;
// at most one such signal waits, and a call never waits to send it. A
// caller that drains it learns whether calls overlapped since it last
// looked: toolgate serve gives the Go runtime one processor while calls
// come one at a time, and all of them as soon as two overlap
// (cmd/toolgate/procs.go).
func (p *Pipeline) Overlaps() <-chan struct{} { return p.overlaps }

// reject records and refuses a call that arrived during shutdown.
func (p *Pipeline) reject(ctx context.Context, call *Call) *Result {
	res := UnavailableResult(call.Name, ErrShuttingDown.Error())
	p.RecordOutside(ctx, call, res)
	return res
}

// RecordOutside records a call that was answered without entering the
// pipeline (mcp-go answers calls to unknown tools itself), so that every
// call a client made is in the record; with traces on, it is a span too,
// in the trace of ctx.
func (p *Pipeline) RecordOutside(ctx context.Context, call *Call, res *Result) {
	if call.ID == "" {
		call.ID = NewCallID()
	}
	call.Started = time.Now()
	if p.opts.Tracer != nil {
		p.traceOutside(ctx, call, res)
	}
	if p.opts.Recorder != nil {
		_ = p.opts.Recorder.CallStarted(call) // the call is answered anyway
		p.opts.Recorder.CallFinished(call, res, 0)
	}
	p.log.Warn("tool call", "call_id", call.ID, "tool", call.Name, "status", res.Status(), "session", call.SessionRef())
}

// Start runs a call in its own goroutine and returns at once; the result
// arrives on the returned channel, which is buffered so that nobody has to
// read it. This is the seeds' Toolset.handle: it never blocks the caller
// and never panics.
func (p *Pipeline) Start(ctx context.Context, call *Call) <-chan *Result {
	ch := make(chan *Result, 1)
	go func() { ch <- p.Call(ctx, call) }()
	return ch
}

// Batch starts all calls at once and returns their results in call order
// (the seeds' step()). When ctx ends, calls still running are cancelled and
// their results say so; Batch returns once every call has its result.
func (p *Pipeline) Batch(ctx context.Context, calls []*Call) []*Result {
	chans := make([]<-chan *Result, len(calls))
	for i, c := range calls {
		chans[i] = p.Start(ctx, c)
	}
	results := make([]*Result, len(calls))
	for i, ch := range chans {
		results[i] = <-ch
	}
	return results
}

// Shutdown stops the pipeline: new calls are refused (and recorded as
// refused), calls in flight may finish until ctx ends, then the ones still
// running (executing, or waiting for approval) are cancelled, and Shutdown
// waits until each has recorded its end.
// It returns ctx's error if the grace period ran out.
func (p *Pipeline) Shutdown(ctx context.Context) error {
	p.mu.Lock()
	if !p.closing {
		p.closing = true
		close(p.closed)
	}
	p.mu.Unlock()
	done := make(chan struct{})
	go func() { p.inflight.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		p.killExecuting()
		<-done // execute returns at once on cancellation, so this is short
		return ctx.Err()
	}
}

// Closing returns a channel closed once [Pipeline.Shutdown] has begun:
// calls are refused from then on, so what waits for a call to come (a
// task parked until its caller answers a round) ends instead.
func (p *Pipeline) Closing() <-chan struct{} { return p.closed }

// killExecuting cancels every call being executed or waiting for
// approval, and the ones that start either after it.
func (p *Pipeline) killExecuting() {
	p.killMu.Lock()
	p.killed = true
	cancels := make([]canceller, 0, len(p.executing))
	for _, c := range p.executing {
		cancels = append(cancels, c)
	}
	p.killMu.Unlock()
	for _, c := range cancels {
		c.cancel()
	}
}

// execStart registers the cancel function of a call being executed and
// returns its key for forget; after killExecuting, it cancels the call
// at once instead.
func (p *Pipeline) execStart(cancel canceller) uint64 {
	p.killMu.Lock()
	if p.killed {
		p.killMu.Unlock()
		cancel.cancel()
		return 0
	}
	p.execSeq++
	key := p.execSeq
	p.executing[key] = cancel
	p.killMu.Unlock()
	return key
}

// execEnd forgets the call registered under key.
func (p *Pipeline) execEnd(key uint64) {
	if key == 0 {
		return
	}
	p.killMu.Lock()
	delete(p.executing, key)
	p.killMu.Unlock()
}

func init() {
	// Random bytes for UUIDs are read from crypto/rand ahead, in blocks,
	// instead of once per UUID (which costs an allocation per call ID).
	// Safe here: no UUID is made before package initialization ends.
	uuid.EnableRandPool()
}

// NewCallID returns a new time-ordered call ID (a UUIDv7: IDs sort by the
// time they were made).
func NewCallID() string {
	id, err := uuid.NewV7()
	if err != nil {
		return uuid.NewString()
	}
	return id.String()
}
