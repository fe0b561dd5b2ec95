package server

// toolgate patch, item 61: a server-to-client request (sampling,
// elicitation, roots) that the server stops waiting for — its context
// ended: the request it serves was cancelled or timed out, or the caller
// gave up — is cancelled at the client with notifications/cancelled, its
// id and a reason, as MCP lets the sender of a request do. v1.2.1 just
// stopped waiting, and the client kept the question (a form, a prompt for
// a model) open for nobody. A request the server never sent (still queued
// for a streamable HTTP stream) is not sent late, and not cancelled.

import (
	"context"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
)

// serverRequestClaim decides, once, whether a queued server request is
// sent (by the stream that takes it) or abandoned (by its waiter): the
// stream sends only what it claimed, the waiter cancels at the client only
// what was sent.
//
// Item 79: the cancellation of a request a stream claimed but has not
// written yet waits until it has ([serverRequestClaim.written]). Sent at
// once, it went to the session's notifications, which another of the
// session's streams (a POST's) could take and write first: the client got
// the cancellation of a request it had not seen (and ignored it, as MCP
// lets it), then the request, and kept it open for nobody.
//
// One mutex orders every change: a claim, a write, a claim given back
// (item 83), an abandon. It is a leaf: nothing is called while it is held.
type serverRequestClaim struct {
	mu      sync.Mutex
	state   claimState
	onWrite func() // the cancellation that waits for the claiming stream's write (item 79)

	// reoffer offers a task's request to its routes again (item 84): set
	// before the claim is shared; nil for a request of no task.
	reoffer func(context.Context)
}

// claimState is where a request is: queued (it may be sent), claimed by
// a stream that has not written it yet, written, or abandoned unsent. A
// request abandoned once claimed stays claimed or written: its
// cancellation depends on which.
type claimState int

const (
	claimQueued claimState = iota
	claimSent
	claimWritten
	claimAbandoned
)

// send claims the request for sending; false: it was abandoned, or sent
// by another stream already (item 77: a task's request is offered to the
// GET stream and to a tasks/result stream), skip it. A nil claim is
// always sent.
func (c *serverRequestClaim) send() bool {
	if c == nil {
		return true
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.state != claimQueued {
		return false
	}
	c.state = claimSent
	return true
}

// pending reports whether the request may still be sent: no stream has
// sent it and its waiter has not given it up. A nil claim is pending.
func (c *serverRequestClaim) pending() bool {
	if c == nil {
		return true
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.state == claimQueued
}

// settled reports whether the request is done with: written, or
// abandoned unsent. A claimed request that is not written yet may still
// be given back (item 84), so its task keeps it parked. A nil claim is
// never settled.
func (c *serverRequestClaim) settled() bool {
	if c == nil {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.state == claimWritten || c.state == claimAbandoned
}

// abandon marks the request abandoned, and reports whether it had been
// sent (then the client must be told).
func (c *serverRequestClaim) abandon() (sent bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.state == claimQueued {
		c.state = claimAbandoned
	}
	return c.state == claimSent || c.state == claimWritten
}

// written is called by the stream that claimed the request once it has
// written it (or tried to, where a failed write does not end the stream):
// a cancellation waiting for that is sent now.
// Not with a lock of the stream's held: the cancellation is sent on the
// session's notifications. A nil claim has nothing waiting.
func (c *serverRequestClaim) written() {
	if c == nil {
		return
	}
	c.mu.Lock()
	c.state = claimWritten
	cancel := c.onWrite
	c.onWrite = nil
	c.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

// unsend gives back the claim of a request its stream could not write
// (item 83), so that another stream may send it; false: its waiter
// abandoned it meanwhile, and the client, which never got it, needs no
// cancellation either.
func (c *serverRequestClaim) unsend() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.state != claimSent {
		return false
	}
	if c.onWrite != nil {
		c.state, c.onWrite = claimAbandoned, nil
		return false
	}
	c.state = claimQueued
	return true
}

// offerAgain offers a request that a stream claimed and then gave back,
// because its write failed (item 84), to its other routes again: a
// task's, to the session's GET queue, which may have dropped it as sent
// meanwhile, and to the latest tasks/result waiting for the task, which,
// if it came while the stream held the claim, was not offered it. ctx is
// the failed stream's; the offer does not end with it, and waits for room
// on the other stream. A request of no task has no other stream to go to.
func (c *serverRequestClaim) offerAgain(ctx context.Context) {
	if c.reoffer != nil {
		c.reoffer(context.WithoutCancel(ctx))
	}
}

// abandonAt is the waiter's side over streamable HTTP, its context ctx
// ended: the request the session sent with id is abandoned, and cancelled
// at the client if a stream sent it, after that stream wrote it.
func (c *serverRequestClaim) abandonAt(ctx context.Context, session ClientSession, id int64) {
	c.abandonThen(func() { cancelAtClient(ctx, session, id) })
}

// abandonThen abandons the request and, if a stream sent it, runs cancel
// (its cancellation at the client) once that stream has written it: at
// once if it has, else from [serverRequestClaim.written]. A stream that
// ends before it writes the request never runs it: the client never got
// the request.
func (c *serverRequestClaim) abandonThen(cancel func()) {
	c.mu.Lock()
	switch c.state {
	case claimQueued:
		c.state, cancel = claimAbandoned, nil
	case claimSent:
		c.onWrite, cancel = cancel, nil
	case claimAbandoned:
		cancel = nil
	}
	c.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

// abandonedReason says why the server stopped waiting: the cause its
// context was cancelled with, when one was given, else what ended it.
func abandonedReason(ctx context.Context) string {
	cause := context.Cause(ctx)
	switch {
	case cause == nil:
		return "the server no longer waits for the answer"
	case cause == context.DeadlineExceeded:
		return "the server's time for the request it asked this for ran out"
	case cause == context.Canceled:
		return "the request the server asked this for was cancelled"
	}
	return cause.Error()
}

// cancelledNotification is the notifications/cancelled of the server's
// request id, saying why it was abandoned (ctx ended).
func cancelledNotification(ctx context.Context, id int64) mcp.JSONRPCNotification {
	return mcp.JSONRPCNotification{
		JSONRPC: mcp.JSONRPC_VERSION,
		Notification: mcp.Notification{
			Method: string(mcp.MethodNotificationCancelled),
			Params: mcp.NotificationParams{AdditionalFields: map[string]any{
				"requestId": id,
				"reason":    abandonedReason(ctx),
			}},
		},
	}
}

// cancelAtClient queues the notifications/cancelled of a request the
// session sent with id, without blocking: a session whose notifications
// are not read any more (full) is not waited for.
func cancelAtClient(ctx context.Context, session ClientSession, id int64) {
	if s, ok := session.(SessionWithStreamableHTTPConfig); ok {
		s.UpgradeToSSEWhenReceiveNotification() // starts a POST's forwarder
	}
	select {
	case session.NotificationChannel() <- cancelledNotification(ctx, id):
	default:
	}
}
