package server

import (
	"context"
	"fmt"
	"sync"
)

// inflightRequests holds the cancel function of every request being
// handled, so that the client's notifications/cancelled can cancel it
// (MCP spec: cancellation). Keys are scoped by session, so that two
// clients' requests with the same ID stay apart.
//
// toolgate patch, for speed (item 42): v1.2.1 kept them in a sync.Map under
// the string "<session id>:<request id as %v prints it>", which cost every
// request three allocations (the key, the key boxed as an interface, the
// map's entry). A plain map under a lock, with a comparable struct as the
// key, costs none once the map has grown to the number of requests in
// flight; the lock is held for the map operation alone, and a cancel
// function is called after it is released. (A Go map does not shrink: after
// a burst it keeps about 64 bytes per request that was in flight at the
// peak, which the connection and session limits bound.)
//
// Request IDs are compared as JSON-RPC values: a string with a string, a
// number with a number. v1.2.1's formatted key also took the string "1"
// for the number 1; JSON-RPC does not, and a client cancels a request
// with the ID it sent it with.
//
// Only a request of a session with an ID is registered (toolgate patch,
// item 43). v1.2.1 registered every request, those of no session under the
// empty session ID: so on the 2026-07-28 HTTP wire, where every request's
// session is an ephemeral one without an ID, any client's
// notifications/cancelled cancelled any other client's request that had
// the ID it named, and IDs count up from 0 or 1 in every client. There a
// client cancels a request by closing its response stream (the request's
// context ends with it), and a notification names nothing that tells the
// client apart; the same holds for a stateless server's requests.
type inflightRequests struct {
	mu sync.Mutex
	m  map[inflightKey]inflightRequest
}

type inflightKey struct {
	session string
	id      any // see requestIDKey
}

type inflightRequest struct {
	ctx    context.Context // tells this request from a later one with its ID
	cancel context.CancelFunc
}

// newInflightKey is the key of the request id of ctx's session; ok is
// false when the session has no ID, or there is none (item 43).
func newInflightKey(ctx context.Context, id any) (k inflightKey, ok bool) {
	s := ClientSessionFromContext(ctx)
	if s == nil {
		return inflightKey{}, false
	}
	session := s.SessionID()
	if session == "" {
		return inflightKey{}, false
	}
	return inflightKey{session: session, id: requestIDKey(id)}, true
}

// requestIDKey is a request ID as a map key: a string or a float64 (what
// JSON decodes an ID to) as it is, anything else (a malformed ID, an ID
// of another type from other code) as fmt's %v prints it, which is always
// comparable. So is a NaN, which is not equal to itself as a float64.
func requestIDKey(id any) any {
	switch v := id.(type) {
	case string:
		return id
	case float64:
		if v == v {
			return id
		}
	}
	return fmt.Sprint(id)
}

// add registers the request ctx under k, until remove; a later request
// with the same key takes its place.
func (r *inflightRequests) add(k inflightKey, ctx context.Context, cancel context.CancelFunc) {
	r.mu.Lock()
	if r.m == nil {
		r.m = make(map[inflightKey]inflightRequest)
	}
	r.m[k] = inflightRequest{ctx: ctx, cancel: cancel}
	r.mu.Unlock()
}

// remove unregisters the request ctx, if k is still its.
func (r *inflightRequests) remove(k inflightKey, ctx context.Context) {
	r.mu.Lock()
	if r.m[k].ctx == ctx {
		delete(r.m, k)
	}
	r.mu.Unlock()
}

// cancel cancels the request registered under k, if there is one, and
// unregisters it.
func (r *inflightRequests) cancel(k inflightKey) {
	r.mu.Lock()
	req, ok := r.m[k]
	delete(r.m, k)
	r.mu.Unlock()
	if ok {
		req.cancel()
	}
}
