package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/toolgate/toolgate/gateway"
)

// The gateway interfaces an upstream serves through, checked at compile
// time: its tools, prompts and resources, their changes, subscriptions and
// completions.
var (
	_ gateway.Toolset                 = (*Upstream)(nil)
	_ gateway.ChangeNotifier          = (*Upstream)(nil)
	_ gateway.PromptSource            = (*Upstream)(nil)
	_ gateway.PromptsChangeNotifier   = (*Upstream)(nil)
	_ gateway.ResourceSource          = (*Upstream)(nil)
	_ gateway.ResourcesChangeNotifier = (*Upstream)(nil)
	_ gateway.ResourceSubscriber      = (*Upstream)(nil)
	_ gateway.PromptCompleter         = (*Upstream)(nil)
	_ gateway.ResourceCompleter       = (*Upstream)(nil)
)

// Relaying to the caller's client.
//
// An upstream connection is shared by every downstream client, and what
// the upstream sends on its own (log messages, sampling and elicitation
// requests) does not say which request it is about. It is passed to a
// client only when it can be attributed to exactly one request made on
// behalf of a client:
//
//   - a server-to-client request that arrived on the response stream of a
//     call (streamable HTTP) belongs to that call: mcp-go hands it over
//     with the call's context;
//   - otherwise the request or notification belongs to the only request in
//     flight on the connection (tools/call, prompts/get, resources/read,
//     completion/complete, (un)subscribe). On stdio and SSE the upstream's
//     messages arrive in the order it sent them, so a message sent while
//     handling a request arrives before that request's answer, while it is
//     still in flight. Streamable HTTP spreads messages over several
//     streams, which may deliver a message late, after its request ended:
//     there, no request of another session may have ended within the last
//     second either (tuning.lateWindow).
//
// Anything else (no request in flight, several, a request without a
// client) is ambiguous: log messages then go only to toolgate's log, and
// requests are refused with a JSON-RPC error. Nothing is ever delivered to
// a client other than the one whose request it is attributed to, and the
// client's own log level and capabilities apply (gateway.Client).

// inflight is one request made on behalf of a downstream caller.
type inflight struct {
	ctx     context.Context
	session string
}

// ended is a request that ended, for lateWindow.
type ended struct {
	session string
	at      time.Time
}

// recentEnds answers soleRequest's question about ended requests — did a
// request of a session other than S end within the late window? — from
// two entries: the latest end, and the latest end of a session other than
// the latest's. The latest end of a session other than S is the first if
// S is not its session, else the second. O(1) per call and per question:
// a list of every request ended within the window (the first version)
// held thousands of entries under load and was scanned at every end.
type recentEnds struct {
	latest, other ended
}

// add records an end.
func (r *recentEnds) add(e ended) {
	if e.session != r.latest.session {
		r.other = r.latest
	}
	r.latest = e
}

// lastOther is the time of the latest end of a session other than s (zero
// if none). A request of no session ("": every 2026-07-28 caller over
// HTTP, whose ephemeral session has no ID) is of a session of its own:
// every other end counts, or one such caller's late message would go to
// another caller, another user's.
func (r *recentEnds) lastOther(session string) time.Time {
	if session == "" || r.latest.session != session {
		return r.latest.at
	}
	return r.other.at
}

// track registers a request in flight on the connection until the
// returned function is called.
func (c *conn) track(ctx context.Context) func() {
	r := &inflight{ctx: ctx}
	if cl := gateway.ClientFrom(ctx); cl != nil {
		r.session = cl.SessionID()
	}
	c.callsMu.Lock()
	c.calls[r] = struct{}{}
	c.callsMu.Unlock()
	return func() {
		c.callsMu.Lock()
		delete(c.calls, r)
		if c.lateWindow > 0 {
			c.ended.add(ended{session: r.session, at: time.Now()})
		}
		c.callsMu.Unlock()
	}
}

// soleRequest returns the context of the only request in flight, or nil
// and why there is none that a message can be attributed to.
func (c *conn) soleRequest() (context.Context, string) {
	c.callsMu.Lock()
	defer c.callsMu.Unlock()
	if n := len(c.calls); n != 1 {
		return nil, fmt.Sprintf("%d requests in flight on the connection", n)
	}
	var r *inflight
	for r = range c.calls {
	}
	if gateway.ClientFrom(r.ctx) == nil {
		return nil, "the request in flight has no MCP client"
	}
	if r.ctx.Err() != nil {
		return nil, "the request in flight has ended"
	}
	if at := c.ended.lastOther(r.session); !at.IsZero() && time.Since(at) < c.lateWindow {
		return nil, "another session's request ended moments ago (messages may arrive late over streamable HTTP)"
	}
	return r.ctx, ""
}

// relayLog passes an upstream's notifications/message to the client of
// the request it belongs to, if that can be told.
func (c *conn) relayLog(f map[string]any) {
	ctx, _ := c.soleRequest()
	if ctx == nil {
		return
	}
	level, _ := f["level"].(string)
	logger, _ := f["logger"].(string)
	gateway.ReportLog(ctx, level, logger, f["data"])
}

// onRequest answers the upstream's requests. It replaces mcp-go's client
// handler, which would decode and re-encode sampling and elicitation
// through its types and could not tell which call they belong to.
func (c *conn) onRequest(ctx context.Context, req transport.JSONRPCRequest) (*transport.JSONRPCResponse, error) {
	c.heardNow()
	switch req.Method {
	case string(mcp.MethodPing):
		return transport.NewJSONRPCResultResponse(req.ID, json.RawMessage(`{}`)), nil
	case string(mcp.MethodListRoots):
		if !c.u.cfg.ForwardRoots {
			return transport.NewJSONRPCErrorResponse(req.ID, mcp.METHOD_NOT_FOUND, "roots are not offered to this upstream", nil), nil
		}
		rctx, end := c.relayWait(ctx, nil, req.ID.String())
		defer end()
		res, err := rootsHandler{c.u}.ListRoots(rctx, mcp.ListRootsRequest{})
		if err != nil {
			return transport.NewJSONRPCErrorResponse(req.ID, mcp.INTERNAL_ERROR, err.Error(), nil), nil
		}
		b, err := json.Marshal(res)
		if err != nil {
			return transport.NewJSONRPCErrorResponse(req.ID, mcp.INTERNAL_ERROR, err.Error(), nil), nil
		}
		return transport.NewJSONRPCResultResponse(req.ID, b), nil
	case gateway.MethodSampling, gateway.MethodElicitation:
		return c.relayRequest(ctx, req), nil
	default:
		return transport.NewJSONRPCErrorResponse(req.ID, mcp.METHOD_NOT_FOUND, "method not supported by toolgate: "+req.Method, nil), nil
	}
}

// relayRequest passes a sampling or elicitation request to the client of
// the call it belongs to and returns the client's answer, or refuses it.
func (c *conn) relayRequest(ctx context.Context, req transport.JSONRPCRequest) *transport.JSONRPCResponse {
	refuse := func(code int, why string) *transport.JSONRPCResponse {
		c.u.log.Warn("upstream request not relayed", "method", req.Method, "reason", why)
		return transport.NewJSONRPCErrorResponse(req.ID, code, fmt.Sprintf("toolgate did not relay %s: %s", req.Method, why), nil)
	}
	if !c.u.relays(req.Method) {
		return refuse(mcp.METHOD_NOT_FOUND, "relaying it is not switched on for this upstream (relay_sampling, relay_elicitation)")
	}
	target := ctx
	if gateway.ClientFrom(ctx) == nil {
		// Not on a call's own stream: the only request in flight, if any.
		var why string
		if target, why = c.soleRequest(); target == nil {
			return refuse(mcp.INTERNAL_ERROR, "it cannot be attributed to a single call ("+why+")")
		}
	}
	params := json.RawMessage(`{}`)
	if req.Params != nil {
		b, err := json.Marshal(req.Params)
		if err != nil {
			return refuse(mcp.INVALID_PARAMS, "its params do not encode: "+err.Error())
		}
		params = b
	}
	var url urlElicitation // an elicitation of URL mode, whose completion comes later
	if req.Method == gateway.MethodElicitation && json.Unmarshal(params, &url) == nil && url.Mode == mcp.ElicitationModeURL {
		c.u.asked.remember(url.ID, gateway.ClientFrom(target))
	}
	rctx, end := c.relayWait(ctx, target, req.ID.String())
	defer end()
	res, err := gateway.RequestFromClient(rctx, req.Method, params)
	if err != nil && url.Mode != "" {
		c.u.asked.take(url.ID) // not asked: nothing to complete
	}
	var ce *gateway.ClientError
	switch {
	case err == nil:
		attrs := []any{"method", req.Method}
		if call := gateway.CallFrom(target); call != nil {
			attrs = append(attrs, "call_id", call.ID, "tool", call.Name)
		}
		c.u.log.Debug("upstream request relayed to the caller's client", attrs...)
		return transport.NewJSONRPCResultResponse(req.ID, res)
	case errors.As(err, &ce):
		code := ce.Code
		if code == 0 {
			code = mcp.INTERNAL_ERROR
		}
		return transport.NewJSONRPCErrorResponse(req.ID, code, ce.Message, nil)
	case errors.Is(err, gateway.ErrClientCannot):
		if url.Mode != "" {
			return refuse(mcp.METHOD_NOT_FOUND, "the calling client did not declare URL-mode elicitation (or its protocol revision has no server-to-client requests)")
		}
		return refuse(mcp.METHOD_NOT_FOUND, "the calling client did not declare the capability (or its protocol revision has no server-to-client requests)")
	case errors.Is(err, gateway.ErrNoClient):
		return refuse(mcp.INTERNAL_ERROR, "the call has no MCP client")
	case rctx.Err() != nil:
		// Why the wait ended: the call's end, the upstream's own
		// cancellation, its disconnection (relayWait's causes).
		return transport.NewJSONRPCErrorResponse(req.ID, mcp.REQUEST_INTERRUPTED, "the client's answer was not waited for: "+context.Cause(rctx).Error(), nil)
	default:
		return refuse(mcp.INTERNAL_ERROR, err.Error())
	}
}

// relayWait returns the context a request of the upstream (its id) waits
// in while it is relayed to the client, and the function that ends it.
// The wait ends with the call it belongs to (call; nil for a request of
// no call, roots/list), when the upstream cancels its request, or when the
// connection ends (ctx, the transport's, and the connection's death), each
// with a cause that the client is told in the notifications/cancelled it
// gets for the request toolgate sent it (see gateway.Client). The values
// of call (its client), else of ctx, are kept.
func (c *conn) relayWait(ctx, call context.Context, id string) (context.Context, func()) {
	base := call
	if base == nil {
		base = ctx
	}
	rctx, cancel := context.WithCancelCause(context.WithoutCancel(base))
	gone := func() { cancel(fmt.Errorf("the upstream server %q disconnected", c.u.name)) }
	var stops []func() bool
	if call != nil {
		stops = append(stops, context.AfterFunc(call, func() {
			cancel(fmt.Errorf("the call it was asked for ended (%v)", context.Cause(call)))
		}))
	}
	if ctx != call { // else ctx is the call's own (its response stream)
		stops = append(stops, context.AfterFunc(ctx, gone))
	}
	unask := c.askedUntil(id, cancel)
	go func() {
		select {
		case <-c.dead:
			gone()
		case <-rctx.Done():
		}
	}()
	return rctx, func() {
		unask()
		for _, stop := range stops {
			stop()
		}
		cancel(nil)
	}
}

// askedUntil registers a request of the upstream being relayed, whose
// notifications/cancelled calls cancel, until the returned function is
// called. A request the upstream cancelled before this is cancelled at
// once.
func (c *conn) askedUntil(id string, cancel context.CancelCauseFunc) func() {
	c.askedMu.Lock()
	if early, ok := c.cancelled[id]; ok {
		delete(c.cancelled, id)
		c.askedMu.Unlock()
		cancel(c.upstreamCancelled(early.why))
		return func() {}
	}
	if c.asked == nil {
		c.asked = map[string]context.CancelCauseFunc{}
	}
	c.asked[id] = cancel
	c.askedMu.Unlock()
	return func() {
		c.askedMu.Lock()
		delete(c.asked, id)
		c.askedMu.Unlock()
	}
}

// cancelAsked handles the upstream's notifications/cancelled: the request
// it names, if it is being relayed, ends (the client's wait with it, and
// the client is told why: the upstream's reason); one not handled yet is
// remembered for a while, as it may be on its way.
func (c *conn) cancelAsked(rawID, rawReason any) {
	switch rawID.(type) {
	case string, float64:
	default:
		return
	}
	id := mcp.NewRequestId(rawID).String()
	why, _ := rawReason.(string)
	c.askedMu.Lock()
	if cancel, ok := c.asked[id]; ok {
		delete(c.asked, id)
		c.askedMu.Unlock()
		cancel(c.upstreamCancelled(why))
		return
	}
	defer c.askedMu.Unlock()
	if c.cancelled == nil {
		c.cancelled = map[string]cancelledAsk{}
	}
	now := time.Now()
	for k, e := range c.cancelled {
		if now.Sub(e.at) > 10*time.Second {
			delete(c.cancelled, k)
		}
	}
	if len(c.cancelled) < 1024 {
		c.cancelled[id] = cancelledAsk{at: now, why: why}
	}
}

// cancelledAsk is a notifications/cancelled of a request not relayed yet.
type cancelledAsk struct {
	at  time.Time
	why string // the upstream's reason, if it gave one
}

// upstreamCancelled is the cause of a relayed request's end that the
// upstream cancelled, with its reason (bounded) if it gave one.
func (c *conn) upstreamCancelled(why string) error {
	if why == "" {
		return fmt.Errorf("the upstream server %q cancelled its request", c.u.name)
	}
	return fmt.Errorf("the upstream server %q cancelled its request: %s", c.u.name, gateway.Truncate(why, 512))
}

// relays reports whether the upstream's requests of the method are
// relayed (config relay_sampling, relay_elicitation; default false).
func (u *Upstream) relays(method string) bool {
	switch method {
	case gateway.MethodSampling:
		return u.cfg.RelaySampling
	case gateway.MethodElicitation:
		return u.cfg.RelayElicitation
	}
	return false
}

// Resource subscriptions.

// SubscribeResource implements [gateway.ResourceSubscriber]: it forwards
// resources/subscribe to the upstream (which must offer subscriptions).
// The URI is subscribed again on every reconnection.
func (u *Upstream) SubscribeResource(ctx context.Context, uri string) error {
	c, why := u.liveConn()
	if c == nil {
		return errors.New(why)
	}
	if c.caps.Resources == nil || !c.caps.Resources.Subscribe {
		return fmt.Errorf("upstream %q does not offer resource subscriptions", u.name)
	}
	u.mu.Lock()
	had := u.subs[uri]
	u.subs[uri] = true // before the request: a reconnection meanwhile subscribes again
	u.mu.Unlock()
	if _, err := u.do(ctx, string(mcp.MethodResourcesSubscribe), map[string]any{"uri": uri}, ""); err != nil {
		if !had {
			u.mu.Lock()
			delete(u.subs, uri)
			u.mu.Unlock()
		}
		return err
	}
	return nil
}

// UnsubscribeResource implements [gateway.ResourceSubscriber].
func (u *Upstream) UnsubscribeResource(ctx context.Context, uri string) error {
	u.mu.Lock()
	had := u.subs[uri]
	delete(u.subs, uri)
	u.mu.Unlock()
	if !had {
		return nil
	}
	if c, _ := u.liveConn(); c == nil {
		return nil // the next connection is not subscribed
	}
	_, err := u.do(ctx, string(mcp.MethodResourcesUnsubscribe), map[string]any{"uri": uri}, "")
	return err
}

// OnResourceUpdated implements [gateway.ResourceSubscriber].
func (u *Upstream) OnResourceUpdated(f func(uri string, params map[string]any)) {
	u.mu.Lock()
	u.updatedL = append(u.updatedL, f)
	u.mu.Unlock()
}

// resourceUpdated passes on notifications/resources/updated for a
// subscribed URI. It runs on the read loop; the listeners do not block.
func (u *Upstream) resourceUpdated(f map[string]any) {
	uri, _ := f["uri"].(string)
	u.mu.Lock()
	subscribed := u.subs[uri]
	ls := make([]func(string, map[string]any), len(u.updatedL))
	copy(ls, u.updatedL)
	u.mu.Unlock()
	if !subscribed {
		return
	}
	for _, l := range ls {
		l(uri, f)
	}
}

// resubscribe subscribes a new connection to the URIs the gateway was
// subscribed to on the last one, and tells the listeners they may have
// changed while the upstream was away.
func (u *Upstream) resubscribe(c *conn, uris []string) {
	if c.caps.Resources == nil || !c.caps.Resources.Subscribe {
		u.log.Warn("the upstream no longer offers resource subscriptions; subscribed clients get no more updates", "uris", len(uris))
		return
	}
	ctx, cancel := context.WithTimeout(c.ctx, u.startup)
	defer cancel()
	for _, uri := range uris {
		if _, err := c.request(ctx, string(mcp.MethodResourcesSubscribe), map[string]any{"uri": uri}); err != nil {
			u.log.Warn("subscribing to a resource again after reconnecting failed", "uri", uri, "err", err)
			continue
		}
		u.resourceUpdated(map[string]any{"uri": uri})
	}
}

// Completions.

// CompletePrompt implements [gateway.PromptCompleter]: completion/complete
// forwarded under the upstream's own prompt name. An upstream that does
// not offer completions completes to nothing.
func (u *Upstream) CompletePrompt(ctx context.Context, name string, req gateway.CompletionRequest) (*gateway.Completion, error) {
	u.mu.Lock()
	upName, ok := u.promptNames[name]
	u.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("upstream %q has no prompt %q", u.name, name)
	}
	return u.complete(ctx, map[string]any{"type": "ref/prompt", "name": upName}, req)
}

// CompleteResource implements [gateway.ResourceCompleter]: the URI (or
// URI template) is the upstream's own.
func (u *Upstream) CompleteResource(ctx context.Context, uri string, req gateway.CompletionRequest) (*gateway.Completion, error) {
	return u.complete(ctx, map[string]any{"type": "ref/resource", "uri": uri}, req)
}

func (u *Upstream) complete(ctx context.Context, ref map[string]any, req gateway.CompletionRequest) (*gateway.Completion, error) {
	if c, _ := u.liveConn(); c != nil && c.caps.Completions == nil {
		return &gateway.Completion{}, nil
	}
	params := map[string]any{"ref": ref, "argument": map[string]any{"name": req.Argument, "value": req.Value}}
	if len(req.Context) > 0 {
		params["context"] = map[string]any{"arguments": req.Context}
	}
	raw, err := u.do(ctx, string(mcp.MethodCompletionComplete), params, "")
	if err != nil {
		return nil, err
	}
	var wire struct {
		Completion struct {
			Values  []string `json:"values"`
			Total   int      `json:"total"`
			HasMore bool     `json:"hasMore"`
		} `json:"completion"`
	}
	if err := json.Unmarshal(raw, &wire); err != nil {
		return nil, fmt.Errorf("upstream %q: decoding completion/complete result: %w", u.name, err)
	}
	return &gateway.Completion{Values: wire.Completion.Values, Total: wire.Completion.Total, HasMore: wire.Completion.HasMore}, nil
}

var (
	_ gateway.ResourceSubscriber = (*Upstream)(nil)
	_ gateway.PromptCompleter    = (*Upstream)(nil)
	_ gateway.ResourceCompleter  = (*Upstream)(nil)
)

// askedURLs remembers to which client each URL-mode elicitation of the
// upstream went, by its elicitationId, so that the upstream's
// notifications/elicitation/complete, which may come after the call ended,
// reaches that client and no other. It keeps the last maxAskedURLs.
type askedURLs struct {
	mu      sync.Mutex
	clients map[string]gateway.Client
	order   []string
}

const maxAskedURLs = 256

// urlElicitation is what the relay reads of an elicitation/create's params.
type urlElicitation struct {
	Mode string `json:"mode"`
	ID   string `json:"elicitationId"`
}

// remember notes the client the URL-mode elicitation id goes to.
func (a *askedURLs) remember(id string, cl gateway.Client) {
	if cl == nil || id == "" {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.clients == nil {
		a.clients = map[string]gateway.Client{}
	}
	if _, ok := a.clients[id]; !ok {
		a.order = append(a.order, id)
	}
	a.clients[id] = cl
	if len(a.order) > maxAskedURLs {
		delete(a.clients, a.order[0])
		a.order = a.order[1:]
	}
}

// take returns the client asked the elicitation id, and forgets it.
func (a *askedURLs) take(id string) gateway.Client {
	a.mu.Lock()
	defer a.mu.Unlock()
	cl, ok := a.clients[id]
	if ok {
		delete(a.clients, id)
		a.order = slices.DeleteFunc(a.order, func(s string) bool { return s == id })
	}
	return cl
}

// elicitationComplete passes the upstream's
// notifications/elicitation/complete to the client that was asked that
// elicitation, if it can be sent one.
func (c *conn) elicitationComplete(f map[string]any) {
	id, _ := f["elicitationId"].(string)
	cl, _ := c.u.asked.take(id).(gateway.Notifier)
	if cl == nil {
		c.u.log.Debug("upstream elicitation completion not passed on: no client was asked it here", "elicitation_id", id)
		return
	}
	if err := cl.Notify(string(mcp.MethodNotificationElicitationComplete), f); err != nil {
		c.u.log.Debug("upstream elicitation completion not passed on", "elicitation_id", id, "err", err)
	}
}
