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
	"sync/atomic"

	"github.com/mark3labs/mcp-go/mcp"
)

// serverRequestClaim decides, once, whether a queued server request is
// sent (by the stream that takes it) or abandoned (by its waiter): the
// stream sends only what it claimed, the waiter cancels at the client only
// what was sent.
type serverRequestClaim struct{ state atomic.Int32 }

const (
	claimQueued int32 = iota
	claimSent
	claimAbandoned
)

// send claims the request for sending; false: it was abandoned, or sent
// by another stream already (item 77: a task's request is offered to the
// GET stream and to a tasks/result stream), skip it. A nil claim is
// always sent.
func (c *serverRequestClaim) send() bool {
	return c == nil || c.state.CompareAndSwap(claimQueued, claimSent)
}

// pending reports whether the request may still be sent: no stream has
// sent it and its waiter has not given it up. A nil claim is pending.
func (c *serverRequestClaim) pending() bool {
	return c == nil || c.state.Load() == claimQueued
}

// abandon marks the request abandoned, and reports whether it had been
// sent (then the client must be told).
func (c *serverRequestClaim) abandon() (sent bool) {
	return !c.state.CompareAndSwap(claimQueued, claimAbandoned) && c.state.Load() == claimSent
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
