package gateway

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"time"
)

// Call is one tool call on its way through the pipeline. The caller fills
// the request fields; the stages fill the rest as the call passes them. A
// Call belongs to the pipeline from [Pipeline.Call] until it returns and
// must not be shared between calls.
type Call struct {
	// ID identifies the call in every record; the pipeline assigns a
	// time-ordered ID when it is empty.
	ID string
	// Name is the tool name as the client called it.
	Name string
	// Arguments are the raw JSON arguments as received (nil means {}).
	Arguments json.RawMessage
	// Session and Client identify the caller when known (MCP session ID,
	// client name and version).
	Session string
	Client  string
	// Identity is who is calling: "token:NAME" for a bearer token of the
	// HTTP transport, "anonymous" over HTTP without tokens, "local" for
	// stdio and the command line.
	Identity string
	// Principal is what an OAuth caller's access token says of it (nil
	// for every other caller): policy.identities match it, records keep it.
	Principal *Principal
	// View, if set, is the profile the call came through: the resolve
	// stage answers a tool it does not admit as not found.
	View View
	// InputResponses and RequestState are a 2026-07-28 client's answers to
	// an earlier round of this call that ended input-required (SEP-2322):
	// the raw answer to each input request by its id, and the state the
	// gateway minted for that round, echoed back.
	InputResponses map[string]json.RawMessage
	RequestState   string
	// Round is set by the round stage when the call repeats an earlier
	// round of its exchange (its RequestState was one the stage minted).
	Round *Round
	// Task is set when the client called the tool as a task (2025-11-25
	// tasks, or a 2026-07-28 caller of the tasks extension): the call runs
	// in the background and the client polls the task for its result. It
	// is set before the call runs; a call that becomes a task while it
	// runs ([BecomeTask]) says so in [Call.CurrentTask] instead.
	Task *CallTask
	// became is the task the call became while it ran ([BecomeTask]):
	// atomic, because the handler that makes it one may run on a
	// goroutine of its own, still running when the pipeline records the
	// call (the execute stage gives up on a handler at its deadline).
	became atomic.Pointer[CallTask]

	// Tool and Toolset are set by the resolve stage.
	Tool    *Tool
	Toolset string
	// Args are the decoded, validated arguments, set by the validate stage.
	Args any
	// Decision is the policy's decision, set by the authorize stage.
	Decision *Decision
	// Started is when the call entered the pipeline.
	Started time.Time
	// Artifacts are the artifacts the summarize stage saved for this call.
	Artifacts []Artifact
	// ArtifactErrors say which outputs over the limit the summarize stage
	// could not save ("output.txt (40000 bytes): saving artifact: ..."):
	// they were cut from the answer and are kept nowhere.
	ArtifactErrors []string

	// limits are the pipeline's limits when the call started.
	limits *Limits
	// pipeline is the pipeline the call is in, for [CallEvent].
	pipeline *Pipeline
	// decision holds the policy's decision that Decision points to, so
	// that the authorize stage need not allocate one.
	decision Decision
	// deadline is the context execute runs a tool that honours its
	// context under (deadline.go), kept here for the same reason.
	deadline callDeadline
	// ctx is the call's context as the stages see it (inContext).
	ctx callContext
	// sessionRef is SessionRef(Session), worked out when the pipeline
	// takes the call: its records and log line write it three or four
	// times, and it is a SHA-256.
	sessionRef string
}

// overlapWindow is how long after calls last overlapped in the pipeline
// [Call.CallsOverlap] still says they do.
const overlapWindow = 100 * time.Millisecond

// CallsOverlap reports whether calls overlapped in the call's pipeline
// (one started while another ran) within overlapWindow before t: its
// recorder's writers then yield to each other so that their lines share
// a write (gateway/runs). False for a call outside a pipeline.
func (c *Call) CallsOverlap(t time.Time) bool {
	p := c.pipeline
	return p != nil && t.UnixNano()-p.overlapAt.Load() < int64(overlapWindow)
}

// SessionRef is [SessionRef] of the call's session.
func (c *Call) SessionRef() string {
	if c.sessionRef != "" || c.Session == "" {
		return c.sessionRef
	}
	return SessionRef(c.Session)
}

// CurrentTask is the task the call runs as: [Call.Task], or the task it
// became while it ran ([BecomeTask]); nil for a plain call. Safe while
// the call's handler runs on another goroutine.
func (c *Call) CurrentTask() *CallTask {
	if c.Task != nil {
		return c.Task
	}
	return c.became.Load()
}

// CallTask is the task a call runs as.
type CallTask struct {
	// ID is the task's id, as the client polls it (empty if unknown).
	ID string `json:"id,omitempty"`
	// TTLMs is how long, in milliseconds, the client asked the task to be
	// kept once created (zero: the server's choice).
	TTLMs int64 `json:"ttl_ms,omitempty"`
}

// CallEvent records an event about the call of ctx (with its ID, tool
// and caller) in the run archive, when the pipeline's recorder keeps
// events. Handlers use it for steps of a call worth keeping, such as the
// states of an upstream task. Outside a call it does nothing.
func CallEvent(ctx context.Context, typ string, fields map[string]any) {
	if c := CallFrom(ctx); c != nil && c.pipeline != nil {
		c.pipeline.event(typ, c, fields)
	}
}

// limitsOf is the call's limits, or the pipeline's for a call that did
// not come through Pipeline.Call.
func (p *Pipeline) limitsOf(call *Call) *Limits {
	if call.limits != nil {
		return call.limits
	}
	return p.limits.Load()
}

// Decision is the policy's answer for a tool: allowed or not, and which
// layer and rule decided, so that a refusal can say why and the decision
// can be printed and recorded.
type Decision struct {
	Allow bool `json:"allow"`
	// Ask means the call may run once a person approves it (Allow stays
	// false until then): the approve stage asks through the [Approver].
	Ask bool `json:"ask,omitempty"`
	// Layer is the policy layer that decided: for example "runtime",
	// "config", "skill", "sandbox" or "default".
	Layer string `json:"layer"`
	// Rule names the rule within the layer.
	Rule string `json:"rule"`
	// Reason explains the decision in a sentence.
	Reason string `json:"reason,omitempty"`
	// Capabilities are the capabilities involved in the decision.
	Capabilities []string `json:"capabilities,omitempty"`
	// Missing are the capabilities the tool needs and was not granted.
	Missing []string `json:"missing,omitempty"`
}

// Policy decides whether a tool may be called. It is consulted on every
// call (so decisions that change at run time, such as capabilities granted
// after a skill loads, take effect at once) and by `toolgate tools` to show
// each tool's decision. Implementations must be safe for concurrent use;
// the context carries the [Call] being authorized, if any ([CallFrom]).
type Policy interface {
	Decide(ctx context.Context, t *Tool) Decision
}

// PolicyFunc adapts a function to [Policy].
type PolicyFunc func(ctx context.Context, t *Tool) Decision

// Decide implements [Policy].
func (f PolicyFunc) Decide(ctx context.Context, t *Tool) Decision { return f(ctx, t) }

type callKey struct{}

// CallFrom returns the call a context belongs to, or nil. Tool handlers use
// it for the call ID (to name artifacts, say) and the caller's session.
func CallFrom(ctx context.Context) *Call {
	c, _ := ctx.Value(callKey{}).(*Call)
	return c
}

// callerFields puts who made the call into an event's fields: identity,
// session (as its [SessionRef]), client and OAuth principal, when known.
func callerFields(fields map[string]any, c *Call) {
	if c.Identity != "" {
		fields["identity"] = c.Identity
	}
	if c.Session != "" {
		fields["session"] = c.SessionRef()
	}
	if c.Client != "" {
		fields["client"] = c.Client
	}
	if c.Principal != nil {
		fields["principal"] = c.Principal.Record()
	}
}

func withCall(ctx context.Context, c *Call) context.Context {
	return context.WithValue(ctx, callKey{}, c)
}

// callContext is a context that carries its call ([CallFrom]), as
// context.WithValue would: kept in the Call ([Call.inContext]) so that a
// call's context costs no allocation of its own.
type callContext struct {
	context.Context
	call *Call
}

func (c *callContext) Value(key any) any {
	if key == (callKey{}) {
		return c.call
	}
	return c.Context.Value(key)
}

// inContext returns ctx carrying the call: the call's own callContext the
// first time, a fresh one for a call that passes the pipeline again
// (whatever holds the first keeps seeing it unchanged).
func (c *Call) inContext(ctx context.Context) context.Context {
	if c.ctx.call != nil {
		return withCall(ctx, c)
	}
	c.ctx = callContext{Context: ctx, call: c}
	return &c.ctx
}

// AsCaller returns ctx as the context of a call by c's caller (its
// session and identity), for asking the policy what it would decide for
// that caller without making a call (`toolgate policy --as`).
func AsCaller(ctx context.Context, c *Call) context.Context { return withCall(ctx, c) }

// View narrows the catalog for the clients of one profile: which tools they
// see and may call. A view only narrows: a tool it admits is still
// validated and authorized like any other, so a profile never widens the
// policy.
type View interface {
	// Name is the profile's name, for messages and records; "" for the
	// whole catalog (the plain endpoint without a profile named default),
	// which no message calls a profile.
	Name() string
	// Admits says whether the tool with this served name is in the view.
	Admits(tool string) bool
}

// ListingView is a [View] that also decides which of its tools tools/list
// shows (tool search lists a few and lets the rest be found). A tool it
// does not list stays callable.
type ListingView interface {
	View
	Lists(tool string) bool
}
