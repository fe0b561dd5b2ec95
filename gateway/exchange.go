package gateway

import (
	"container/list"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/mark3labs/mcp-go/mcp"
)

// Exchanges: a tool's requests to a 2026-07-28 client, asked in rounds.
//
// A tool (an upstream relaying its server's elicitation/create or
// sampling/createMessage, say) asks the calling client through
// [RequestFromClient] and waits for the answer. A client of 2026-07-28
// cannot be sent a request: it is asked through the result of its own
// call, which ends input-required, and answers by repeating the call. So
// for such a client (one that declared elicitation or sampling) the round
// stage runs the rest of the call (summarize, execute) in an exchange that
// outlives the round: when the tool asks, the round ends input-required
// with the question, and the tool goes on waiting; the client's repeat
// carries the answer to it, and that round ends with the tool's next
// question or its result.
//
// The exchange is bound to its call by the sealed request state (the
// round stage refuses a state of another call or caller) and lives as
// long as the tool is allowed to run: the call's deadline ends it, and
// with it a tool still waiting for an answer. It is held by the replica
// that started it: a repeat that reaches another replica is refused
// (the exchange is not there).
//
// A tool that never asks costs the client one goroutine per call and
// nothing else: its result is the round's.
//
// A tool may give up on its question while the client is being asked it
// (an upstream of 2025-11-25 that cancels its relayed request with
// notifications/cancelled, say; one of 2026-07-28 cannot, having sent no
// request). A 2026-07-28 client cannot be told: the question stays with
// it. So the question is marked withdrawn: the client's repeat, answered
// or not, gets what the tool did next (its next question, or its result)
// instead of the question again, and a tool that ends on its own while
// its exchange is parked leaves its result there for that repeat (until
// RoundTTL, when the round's state expires, and among maxKeptExchanges)
// instead of dropping it. A task of the tasks extension, which waits for
// the answers, goes on at once (the round's result carries the signal:
// Result.withdrawn).

// parkPrefix marks a tool's state that names an exchange (sealed by the
// round stage before it leaves; never taken from a client unsealed).
const parkPrefix = "tgx:"

// maxKeptExchanges bounds the exchanges kept for a repeat after their
// tool ended (see toolEnded).
const maxKeptExchanges = 1024

type exchange struct {
	id     string
	call   *Call           // the first round's, which the stages after this one see
	ctx    context.Context // the tool's: it ends with a task's (tasks/cancel)
	cancel context.CancelFunc
	asks   chan *ask    // the tool's questions, one at a time
	done   chan *Result // the tool's result (buffered)
	// pending is the question the client is being asked. It is read and
	// written only by the round that holds the exchange (see exchanges).
	pending *ask
	seq     atomic.Int64
	// round is the context of the round's request that holds the
	// exchange now: the tool's log messages and progress go to its
	// client, while that request is open.
	round atomic.Pointer[context.Context]
	// expire and unwatch, set (under exchanges.mu) when the tool ended
	// while the exchange was parked, drop the exchange if no repeat takes
	// it, or once its context ends (a task cancelled).
	expire  *time.Timer
	unwatch func() bool
	// parkedAt is when the exchange was last parked (under exchanges.mu):
	// the round's state, sealed then, expires RoundTTL after.
	parkedAt time.Time
	// kept is the exchange's place among those kept after their tool
	// ended, and ended the tool's result (both under exchanges.mu).
	kept  *list.Element
	ended *Result
}

// exchangeProgress passes a tool's progress on to the round's request.
type exchangeProgress struct{ ex *exchange }

func (p exchangeProgress) Report(pr Progress) { ReportProgress(*p.ex.round.Load(), pr) }

type ask struct {
	key    string
	method string
	params json.RawMessage
	answer chan json.RawMessage // buffered
	// gone is closed once the question no longer stands: the tool gave
	// up on it, or ended.
	gone     chan struct{}
	goneOnce sync.Once
}

// withdraw marks the question as no longer standing.
func (a *ask) withdraw() { a.goneOnce.Do(func() { close(a.gone) }) }

// withdrawn reports whether the question no longer stands.
func (a *ask) withdrawn() bool {
	select {
	case <-a.gone:
		return true
	default:
		return false
	}
}

// exchanges holds the exchanges waiting for a client's repeat. A round
// takes its exchange out while it works with it, so only one round at a
// time touches one.
type exchanges struct {
	mu sync.Mutex
	m  map[string]*exchange
	// kept are the exchanges of m whose tool ended (toolEnded), the one
	// kept longest first; at most maxKeptExchanges.
	kept list.List
}

// park parks the exchange, and reports whether it did: an exchange whose
// tool has ended (its result is in done) is not parked. The tool sends its
// result before it looks for its exchange here (toolEnded), so either it
// finds the exchange parked, or the exchange is not parked after.
func (x *exchanges) park(ex *exchange) bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	if len(ex.done) > 0 {
		return false
	}
	if x.m == nil {
		x.m = map[string]*exchange{}
	}
	x.m[ex.id] = ex
	ex.parkedAt = time.Now()
	return true
}

func (x *exchanges) take(id string) *exchange {
	x.mu.Lock()
	defer x.mu.Unlock()
	ex := x.m[id]
	if ex != nil {
		x.removeLocked(ex)
	}
	return ex
}

// removeLocked takes ex out, and stops what would drop it if it was kept.
func (x *exchanges) removeLocked(ex *exchange) {
	delete(x.m, ex.id)
	if ex.kept != nil {
		ex.expire.Stop()
		ex.unwatch()
		x.kept.Remove(ex.kept)
		ex.expire, ex.unwatch, ex.kept = nil, nil, nil
	}
}

// toolEnded is told that the tool of ex ended with res, and reports
// whether the exchange was parked (its client being asked), and then the
// question pending. A parked exchange is kept for the client's repeat
// when keep (see Pipeline.toolEnded), until ttl after it was parked (when
// the round's state expires), when p drops it if no repeat took it; else
// it is taken out. What drops it is built only then: the end of a tool in
// an exchange nobody is being asked in (the round waits for it)
// allocates nothing. Past maxKeptExchanges kept, the one kept longest is
// taken out: evicted, for the caller to drop.
func (x *exchanges) toolEnded(p *Pipeline, ex *exchange, res *Result, keep bool, ttl time.Duration) (parked bool, pending *ask, evicted *exchange) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.m[ex.id] != ex {
		return false, nil, nil
	}
	if !keep {
		delete(x.m, ex.id)
		return true, ex.pending, nil
	}
	drop := func() {
		if x.take(ex.id) != nil {
			p.dropExchange(ex, res)
		}
	}
	ex.ended = res
	ex.expire = time.AfterFunc(time.Until(ex.parkedAt.Add(ttl)), drop)
	ex.unwatch = context.AfterFunc(ex.ctx, drop)
	ex.kept = x.kept.PushBack(ex)
	if x.kept.Len() > maxKeptExchanges {
		evicted = x.kept.Front().Value.(*exchange)
		x.removeLocked(evicted)
	}
	return true, ex.pending, evicted
}

// canAskInRounds reports whether the caller is a 2026-07-28 client that
// can be asked something in rounds.
func canAskInRounds(ctx context.Context) bool {
	return CanAskInRounds(ctx, MethodElicitation) || CanAskInRounds(ctx, MethodSampling)
}

// runExchange runs the rest of the call in a new exchange, and returns
// the round's result: the tool's result, or its first question.
func (p *Pipeline) runExchange(ctx context.Context, call *Call, next Handler) *Result {
	ex := &exchange{id: uuid.NewString(), call: call, asks: make(chan *ask), done: make(chan *Result, 1)}
	// The tool runs past this round's request, until its own deadline
	// (the execute stage's) or the exchange's end. A task's rounds all
	// run on the task's context, which ends only with the task
	// (tasks/cancel): the exchange ends with it.
	base := context.WithoutCancel(ctx)
	if call.Task != nil {
		base = ctx
	}
	hctx, cancel := context.WithCancel(base)
	ex.ctx, ex.cancel = hctx, cancel
	if o, ok := ctx.Value(becomeTaskKey{}).(*taskOffer); ok && call.Task == nil {
		// A call that may become a task once its tool runs (BecomeTask):
		// its context ends with its first round if it stays a plain call,
		// and with the task (tasks/cancel) if it becomes one; only then
		// does the exchange end with it.
		context.AfterFunc(ctx, func() {
			if o.accepted() {
				cancel()
			}
		})
	}
	ex.round.Store(&ctx)
	hctx = WithClient(hctx, &askingClient{ex: ex})
	if ProgressRequested(ctx) {
		hctx, _ = WithProgress(hctx, exchangeProgress{ex})
	}
	go func() {
		res := next(hctx, call)
		ex.done <- res
		p.toolEnded(ex, call, res)
	}()
	return p.awaitExchange(ctx, ex, call)
}

// toolEnded handles the end of the tool of ex (with res) while no round
// may be waiting for it: its exchange parked, the client being asked. The
// question no longer stands. A result the tool came to by itself (after
// giving up on its question) is kept for the client's repeat, as is any
// result of a task's call (the task goes on at once and takes it; a call
// that became a task is one, [Call.CurrentTask]); a
// timeout or a cancellation of a plain call, which nobody waits for, is
// dropped with the exchange, as is a kept result no repeat takes before
// the round's state expires, and any result of a task cancelled
// (tasks/cancel ends the exchange's context: the task waits no more).
// At most maxKeptExchanges are kept: past it, the one kept longest is
// dropped.
func (p *Pipeline) toolEnded(ex *exchange, call *Call, res *Result) {
	keep := ex.ctx.Err() == nil && (call.CurrentTask() != nil || res.Kind != KindTimeout && res.Kind != KindCancelled)
	parked, pending, evicted := p.exchanges.toolEnded(p, ex, res, keep, RoundTTL)
	if !parked {
		return
	}
	if evicted != nil {
		p.dropExchange(evicted, evicted.ended)
	}
	if pending != nil {
		pending.withdraw()
	}
	if !keep {
		p.dropExchange(ex, res)
	}
}

// dropExchange ends the exchange whose tool ended with res while its
// client was being asked, and says that the result is dropped.
func (p *Pipeline) dropExchange(ex *exchange, res *Result) {
	ex.cancel()
	p.log.Warn("a call ended while its client was being asked; its result is dropped", "call_id", ex.call.ID, "tool", ex.call.Name, "status", res.Status())
}

// resumeExchange hands the exchange named by a round's state the client's
// answer and returns the round's result.
func (p *Pipeline) resumeExchange(ctx context.Context, call *Call, id string) *Result {
	ex := p.exchanges.take(id)
	if ex == nil {
		return RequestErrorResult(roundRefusal(fmt.Sprintf("call of %q: the exchange this request state continues has ended (the call ran past its deadline, or this replica did not start it); repeat the call without it to begin again", call.Name)))
	}
	return p.resume(ctx, call, ex)
}

// resume goes on with the exchange ex, which the round of call took.
func (p *Pipeline) resume(ctx context.Context, call *Call, ex *exchange) *Result {
	a := ex.pending
	answer, ok := call.InputResponses[a.key]
	if !ok && !a.withdrawn() {
		// Not answered: ask again (SEP-2322 re-requests missing input).
		return p.askRound(ctx, ex, a, call)
	}
	ex.pending = nil
	ex.round.Store(&ctx)
	if ok {
		a.answer <- answer // buffered: dropped if the tool gave up on it
	}
	return p.awaitExchange(ctx, ex, call)
}

// awaitExchange waits for the tool's next question or its result. When
// the round's own request ends first (the client went away), the
// exchange ends too. round is the call of this round.
func (p *Pipeline) awaitExchange(ctx context.Context, ex *exchange, round *Call) *Result {
	select {
	case res := <-ex.done:
		ex.cancel()
		return ex.finish(round, res)
	case a := <-ex.asks:
		return p.askRound(ctx, ex, a, round)
	case <-ctx.Done():
		ex.cancel()
		return ex.finish(round, <-ex.done) // the execute stage ends the call at once
	}
}

// finish hands the round that ends the exchange the artifacts that
// summarize saved on the first round's call: the first round's record
// was written when it asked, and the last round's is the one written
// with the result, so it must name them.
func (ex *exchange) finish(round *Call, res *Result) *Result {
	if round != ex.call {
		round.Artifacts = append(round.Artifacts, ex.call.Artifacts...)
		round.ArtifactErrors = append(round.ArtifactErrors, ex.call.ArtifactErrors...)
	}
	return res
}

// askRound parks the exchange and ends the round input-required with the
// tool's question. A tool that ended meanwhile (it may end while the
// client's repeat holds its exchange: it then finds the exchange not
// parked, and leaves its result to the round) has its result be the
// round's, and the question no longer stands.
func (p *Pipeline) askRound(ctx context.Context, ex *exchange, a *ask, round *Call) *Result {
	ex.pending = a
	req, err := json.Marshal(map[string]any{"method": a.method, "params": a.params})
	if err != nil {
		ex.cancel()
		return RuntimeErrorResult("", fmt.Errorf("the tool's %s request does not encode: %w", a.method, err))
	}
	if !p.exchanges.park(ex) {
		ex.pending = nil
		a.withdraw()
		ex.round.Store(&ctx)
		return p.awaitExchange(ctx, ex, round) // its result is there
	}
	res := InputRequiredResult(map[string]json.RawMessage{a.key: req}, parkPrefix+ex.id,
		fmt.Sprintf("The tool asks the client (%s): answer and repeat the call with the request state.", a.method))
	res.withdrawn = a.gone
	return res
}

// endExchange ends the exchange of res, a round the round stage refused,
// when res is one an exchange asked in (askRound; not a tool's own
// input_required, whose state is the tool's): nobody will answer the
// tool's question, so the tool stops waiting for it.
func (p *Pipeline) endExchange(res *Result) {
	if res.withdrawn == nil {
		return
	}
	if id, ok := strings.CutPrefix(res.RequestState, parkPrefix); ok {
		if ex := p.exchanges.take(id); ex != nil {
			ex.cancel()
		}
	}
}

// askingClient is the client a tool in an exchange sees: it asks the
// requests a 2026-07-28 client can answer in rounds, and passes the rest
// to the client of the round's request.
type askingClient struct {
	ex *exchange
}

// inner is the client of the round's request.
func (c *askingClient) inner() Client { return ClientFrom(*c.ex.round.Load()) }

func (c *askingClient) SessionID() string {
	if in := c.inner(); in != nil {
		return in.SessionID()
	}
	return ""
}

func (c *askingClient) Log(level, logger string, data any) error {
	if in := c.inner(); in != nil {
		return in.Log(level, logger, data)
	}
	return ErrNoClient
}

func (c *askingClient) rounds() (roundsClient, bool) {
	rc, ok := c.inner().(roundsClient)
	return rc, ok
}

func (c *askingClient) CanAskInRounds(method string) bool {
	rc, ok := c.rounds()
	return ok && rc.CanAskInRounds(method)
}

func (c *askingClient) Modern() bool {
	rc, ok := c.rounds()
	return ok && rc.Modern()
}

func (c *askingClient) Capabilities() json.RawMessage {
	if rc, ok := c.rounds(); ok {
		return rc.Capabilities()
	}
	return nil
}

// typedCapabilities implements [typedCapsClient] for the client of the
// round's request, whatever it holds.
func (c *askingClient) typedCapabilities() (mcp.ClientCapabilities, bool) {
	if rc, ok := c.rounds(); ok {
		return capabilitiesOf(rc)
	}
	return mcp.ClientCapabilities{}, false
}

func (c *askingClient) CanRequest(method string) bool { return c.CanAskInRounds(method) }

// declaresMode reports whether the client declared the mode of the
// elicitation params asks in (a client that declared form mode only
// cannot be asked to open a URL, and the other way round).
func (c *askingClient) declaresMode(params json.RawMessage) bool {
	var p struct {
		Mode string `json:"mode"`
	}
	if json.Unmarshal(params, &p) != nil {
		return false
	}
	caps, ok := c.typedCapabilities()
	return ok && elicitModeDeclared(caps, p.Mode)
}

// Request asks the client in the exchange's next round and waits for the
// answer its repeat carries.
func (c *askingClient) Request(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	if !c.CanAskInRounds(method) || method == MethodElicitation && !c.declaresMode(params) {
		return nil, fmt.Errorf("%s: %w", method, ErrClientCannot)
	}
	a := &ask{
		key:    fmt.Sprintf("toolgate-%s-%d", strings.SplitN(method, "/", 2)[0], c.ex.seq.Add(1)),
		method: method, params: params, answer: make(chan json.RawMessage, 1), gone: make(chan struct{}),
	}
	select {
	case c.ex.asks <- a:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	select {
	case ans := <-a.answer:
		return ans, nil
	case <-ctx.Done():
		a.withdraw() // the client may still be holding it: see the top of this file
		return nil, ctx.Err()
	}
}
