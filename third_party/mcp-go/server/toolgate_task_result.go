package server

// toolgate patch, item 77: a 2025-11-25 task's requests to its client
// (elicitation, sampling, roots) go on the stream of a tasks/result that
// waits for the task. MCP 2025-11-25 (tasks, "Input Required Status"): a
// requestor that finds the task input_required SHOULD call tasks/result at
// once, and the receiver sends the task's requests there. Item 72 sent
// them to the session's GET stream only, which a client need not open
// (mcp-go's does not by default): such a client, polling and then calling
// tasks/result as the specification asks, was never asked, and the task
// waited in input_required until its call's deadline.
//
// A task's request is parked on the task, queued for the session's GET
// stream (item 67), and offered to the latest tasks/result waiting for the
// task; a tasks/result that comes later is offered the parked requests.
// Every route holds the request's one claim (item 61), and only the first
// to claim it sends it.

import (
	"context"
	"maps"
	"slices"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
)

// taskRoute holds where a task's requests to its client can go.
type taskRoute struct {
	mu      sync.Mutex
	streams []*requestScopedSSE // of the tasks/result POSTs waiting for the task, in arrival order
	parked  []scopedRequest     // the task's requests, also queued for the GET stream; dropped once written or abandoned
}

// taskRouteKey and taskIDKey are the context keys of a task's route and
// id.
type (
	taskRouteKey struct{}
	taskIDKey    struct{}
)

// taskContext is a task's context: without the originating POST's stream
// (requestScopedSSEKey), which ends with the CreateTaskResult it carries
// (item 72), and with the task's route and id (item 82).
type taskContext struct {
	context.Context
	route *taskRoute
	id    string
}

func (c taskContext) Value(key any) any {
	switch key.(type) {
	case requestScopedSSEKey:
		return nil
	case taskRouteKey:
		return c.route
	case taskIDKey:
		return c.id
	}
	return c.Context.Value(key)
}

// withTaskMeta is notification as sent from ctx: from a 2025-11-25 task's
// context (its handler's, or one derived from it), with the task's
// related-task in _meta (toolgate patch, item 82). MCP 2025-11-25 (tasks):
// every notification related to a task MUST carry it; v1.2.1 sent a
// task's progress and log messages without it. The notification's own
// _meta map is copied, not changed.
func withTaskMeta(ctx context.Context, notification mcp.JSONRPCNotification) mcp.JSONRPCNotification {
	id, _ := ctx.Value(taskIDKey{}).(string)
	if id == "" {
		return notification
	}
	meta := maps.Clone(notification.Params.Meta)
	if meta == nil {
		meta = make(map[string]any, 1)
	}
	meta[mcp.RelatedTaskMetaKey] = mcp.RelatedTaskMeta(id)
	notification.Params.Meta = meta
	return notification
}

// send parks req on the task, queues it for the GET stream (queue), and
// offers it to the latest tasks/result stream waiting for the task, if
// any. The parked request is the one that lasts: a tasks/result stream
// that ends before it claims a request offered to it drops it (as any
// POST's stream does), and a later tasks/result is offered it again. An
// error comes back only when the GET queue refuses the request and no
// tasks/result waits for the task, or one has sent it meanwhile.
func (r *taskRoute) send(ctx context.Context, req mcp.JSONRPCRequest, claim *serverRequestClaim, queue func() error) error {
	r.mu.Lock()
	r.parkLocked(req, claim)
	latest := r.latestLocked()
	r.mu.Unlock()
	err := queue()
	if latest != nil {
		latest.trySend(ctx, req, claim) // parked whether it takes it or not
		return nil
	}
	if err != nil {
		r.mu.Lock()
		r.parked = slices.DeleteFunc(r.parked, func(p scopedRequest) bool { return p.claim == claim })
		r.mu.Unlock()
		if claim.abandon() {
			return nil // a tasks/result that came meanwhile sent it
		}
		return err
	}
	return nil
}

// latestLocked is the stream of the latest tasks/result waiting, or nil.
func (r *taskRoute) latestLocked() *requestScopedSSE {
	if n := len(r.streams); n > 0 {
		return r.streams[n-1]
	}
	return nil
}

// parkLocked parks req, first dropping the parked requests that were
// written or abandoned.
func (r *taskRoute) parkLocked(req mcp.JSONRPCRequest, claim *serverRequestClaim) {
	r.parked = slices.DeleteFunc(r.parked, func(p scopedRequest) bool { return p.claim.settled() })
	r.parked = append(r.parked, scopedRequest{req, claim})
}

// wait registers stream, a tasks/result's, as waiting for the task, sends
// it the parked requests no stream has claimed yet, and returns the
// function that ends the wait.
func (r *taskRoute) wait(ctx context.Context, stream *requestScopedSSE) (done func()) {
	r.mu.Lock()
	r.streams = append(r.streams, stream)
	r.mu.Unlock()
	r.offerParked(ctx)
	return func() {
		r.mu.Lock()
		r.streams = slices.DeleteFunc(r.streams, func(s *requestScopedSSE) bool { return s == stream })
		r.mu.Unlock()
	}
}

// offerParked sends the parked requests not yet claimed on the latest
// waiting tasks/result stream, in the order they were made; the claim
// decides whether that stream or the GET stream sends each. A request
// claimed by a stream that has not written it stays parked: that
// stream gives it back if its write fails, and offers it again (item
// 84).
func (r *taskRoute) offerParked(ctx context.Context) {
	r.mu.Lock()
	r.parked = slices.DeleteFunc(r.parked, func(p scopedRequest) bool { return p.claim.settled() })
	parked := slices.DeleteFunc(slices.Clone(r.parked), func(p scopedRequest) bool { return !p.claim.pending() })
	latest := r.latestLocked()
	r.mu.Unlock()
	if latest == nil {
		return
	}
	for _, p := range parked {
		if !latest.trySend(ctx, p.req, p.claim) {
			return
		}
	}
}

// waitForTaskInput is tasks/result's side: while it waits for the task of
// entry, on ctx's POST stream (a 2025-11-25 POST over streamable HTTP),
// the task's requests go to that stream. Elsewhere (stdio, a POST without
// a stream) it does nothing.
func waitForTaskInput(ctx context.Context, entry *taskEntry) (done func()) {
	stream, ok := ctx.Value(requestScopedSSEKey{}).(*requestScopedSSE)
	if !ok || stream == nil {
		return func() {}
	}
	return entry.route.wait(ctx, stream)
}
