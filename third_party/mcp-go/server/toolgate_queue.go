package server

// toolgate patch, item 67: a session's queues of server-to-client requests
// for its GET stream drop the requests abandoned in them when they are full.
// v1.2.1's queues were channels of 10: a request abandoned while queued
// (item 61) kept its place until a GET stream took it and skipped it, so a
// client that never opens one saw every request past ten abandoned ones
// fail at once as the queue being full. A channel cannot be compacted
// safely: a writer draining it races with the stream taking from it (the
// stream can take a later request while the writer holds earlier ones,
// reordering them) and with other writers (whose requests land before the
// ones put back, or fill the room they need). So the queue is a slice under
// a mutex, with a channel that tells its reader it may hold a request.

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
)

// serverRequestQueueCap is how many live requests a queue holds, as
// v1.2.1's channels did.
const serverRequestQueueCap = 10

// queuedServerRequest is an item of a serverRequestQueue: its claim, and
// the JSON-RPC request it is on the wire. Every route (a POST's stream, a
// GET stream's writer, the event store's pump) sends wire(); v1.2.1 built
// it anew in each.
type queuedServerRequest interface {
	queuedClaim() *serverRequestClaim
	wire() mcp.JSONRPCRequest
}

func (i samplingRequestItem) queuedClaim() *serverRequestClaim    { return i.claim }
func (i elicitationRequestItem) queuedClaim() *serverRequestClaim { return i.claim }
func (i rootsRequestItem) queuedClaim() *serverRequestClaim       { return i.claim }

func (i samplingRequestItem) wire() mcp.JSONRPCRequest {
	return serverRequest(i.requestID, mcp.MethodSamplingCreateMessage, i.request.CreateMessageParams)
}

func (i elicitationRequestItem) wire() mcp.JSONRPCRequest {
	return serverRequest(i.requestID, mcp.MethodElicitationCreate, i.request.Params)
}

func (i rootsRequestItem) wire() mcp.JSONRPCRequest {
	return serverRequest(i.requestID, mcp.MethodListRoots, nil)
}

// serverRequest is a server-to-client JSON-RPC request.
func serverRequest(id int64, method mcp.MCPMethod, params any) mcp.JSONRPCRequest {
	return mcp.JSONRPCRequest{
		JSONRPC: mcp.JSONRPC_VERSION,
		ID:      mcp.NewRequestId(id),
		Request: mcp.Request{Method: string(method)},
		Params:  params,
	}
}

// serverRequestQueue is a session's queue of one kind of server-to-client
// request for its GET stream. A reader selects on ready and then calls pop;
// a writer calls push. Neither calls out while holding mu.
type serverRequestQueue[T queuedServerRequest] struct {
	// ready holds a token whenever items may be non-empty: push leaves one
	// after adding, pop after taking when more remain. A token with the
	// queue empty (another reader took the request, or it was dropped as
	// abandoned) only makes pop report nothing.
	ready chan struct{}

	mu    sync.Mutex
	items []T // in the order pushed
}

func newServerRequestQueue[T queuedServerRequest]() *serverRequestQueue[T] {
	return &serverRequestQueue[T]{ready: make(chan struct{}, 1)}
}

// push queues item, first dropping the requests abandoned, or sent by
// another route (item 77), when the queue is full; false: it holds
// serverRequestQueueCap live requests.
func (q *serverRequestQueue[T]) push(item T) bool { return q.add(item, false) }

// pushUnlessQueued is push, unless the queue holds item already (item
// 84): a request given back is queued again, once, however many streams
// give it back at a time.
func (q *serverRequestQueue[T]) pushUnlessQueued(item T) bool { return q.add(item, true) }

func (q *serverRequestQueue[T]) add(item T, once bool) bool {
	q.mu.Lock()
	if once && slices.ContainsFunc(q.items, func(it T) bool { return it.queuedClaim() == item.queuedClaim() }) {
		q.mu.Unlock()
		return true
	}
	if len(q.items) >= serverRequestQueueCap {
		live := q.items[:0]
		for _, it := range q.items {
			if it.queuedClaim().pending() {
				live = append(live, it)
			}
		}
		clear(q.items[len(live):])
		q.items = live
	}
	ok := len(q.items) < serverRequestQueueCap
	if ok {
		q.items = append(q.items, item)
	}
	q.mu.Unlock()
	if ok {
		q.signal()
	}
	return ok
}

// pop takes the oldest request; false: the queue is empty.
func (q *serverRequestQueue[T]) pop() (item T, ok bool) {
	q.mu.Lock()
	n := len(q.items)
	if n > 0 {
		item, ok = q.items[0], true
		copy(q.items, q.items[1:])
		var zero T
		q.items[n-1] = zero
		q.items = q.items[:n-1]
	}
	more := len(q.items) > 0
	q.mu.Unlock()
	if more {
		q.signal()
	}
	return item, ok
}

// putBack returns item, which pop took, to the front of the queue, where
// it was (item 83): its stream could not write it. It may hold one more
// than serverRequestQueueCap for a while: a push that came meanwhile took
// the place it had.
func (q *serverRequestQueue[T]) putBack(item T) {
	q.mu.Lock()
	q.items = slices.Insert(q.items, 0, item)
	q.mu.Unlock()
	q.signal()
}

// len is how many requests the queue holds, abandoned and sent ones
// included.
func (q *serverRequestQueue[T]) len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.items)
}

func (q *serverRequestQueue[T]) signal() {
	select {
	case q.ready <- struct{}{}:
	default:
	}
}

// sendServerRequest sends a server-to-client request, item (kind names it
// in errors), on the stream of the POST being served when there is one
// (items 40 and 65), else queues it for the session's GET stream (item
// 67) and, for a task, also offers it to a tasks/result waiting for the
// task (item 77), without waiting: a request whose context already ended
// is not queued, and a queue of live requests that is full refuses it.
func sendServerRequest[T queuedServerRequest](ctx context.Context, q *serverRequestQueue[T], item T, kind string) error {
	req, claim := item.wire(), item.queuedClaim()
	if scoped, ok := ctx.Value(requestScopedSSEKey{}).(*requestScopedSSE); ok && scoped.trySend(ctx, req, claim) {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	queue := func() error {
		if !q.push(item) {
			return fmt.Errorf("%s request queue is full - server overloaded", kind)
		}
		return nil
	}
	if route, ok := ctx.Value(taskRouteKey{}).(*taskRoute); ok {
		// Where a stream that gives the request back offers it again (item
		// 84), set before any stream can see the claim.
		claim.reoffer = func(ctx context.Context) {
			q.pushUnlessQueued(item)
			route.offerParked(ctx)
		}
		return route.send(ctx, req, claim, queue) // item 77
	}
	return queue()
}

// writeQueuedRequest takes the request the session's queue q holds next
// and writes it on a GET stream (item 80), if it can claim it, and tells
// the claim once it is written (item 79); false: the write failed, and the
// stream ends. A request it claimed but could not write goes back to the
// front of the queue for the session's next GET stream (item 83): the
// connection failed, and the client, which discards an event cut short,
// never got it.
//
// One taken when the stream's request has ended already (the writer's
// select chose the queue over ctx.Done: both were ready) goes back
// unclaimed: the client is gone, and a write to its connection could
// still succeed (TCP takes the first write after the peer closed).
func writeQueuedRequest[T queuedServerRequest](ctx context.Context, s *StreamableHTTPServer, w HTTPResponseWriter, sessionID string, q *serverRequestQueue[T]) bool {
	item, ok := q.pop()
	if !ok {
		return true // another reader took it
	}
	if ctx.Err() != nil {
		q.putBack(item)
		return false
	}
	claim := item.queuedClaim()
	if !claim.send() {
		return true // taken by another route, or abandoned unsent (item 61)
	}
	if err := writeSSEEvent(w, item.wire()); err != nil {
		s.logger.Error("Failed to write SSE event", "err", err)
		if claim.unsend() {
			q.putBack(item)
			claim.offerAgain(ctx) // a task's, to its tasks/result too (item 84)
		}
		return false
	}
	w.Flush()
	claim.written()
	s.touchSession(sessionID)
	return true
}

// pumpQueuedRequest records the request q holds next on st, the session's
// listening stream with an event store, if it can claim it, and tells the
// claim (item 79): the event store's pump's side of writeQueuedRequest.
// Recorded, it is sent to the stream's connection or replayed to the next.
func pumpQueuedRequest[T queuedServerRequest](ctx context.Context, st *resumableStream, q *serverRequestQueue[T]) {
	item, ok := q.pop()
	if !ok || !item.queuedClaim().send() {
		return // taken by another stream, or abandoned unsent (item 61)
	}
	st.deliver(ctx, item.wire(), false)
	item.queuedClaim().written()
}
