package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/toolgate/toolgate/gateway"
)

// The 2026-07-28 connection.
//
// An upstream's main connection (conn.go) speaks 2025-11-25: it lists the
// tools, carries the list_changed and log notifications, and serves the
// callers of that era, relaying the upstream's server-to-client requests
// (elicitation, sampling, roots) to them (relay.go). A caller of
// 2026-07-28 cannot be sent requests: it is asked through the results of
// its own calls (SEP-2322, resultType "input_required"), and it declares
// its capabilities on every request. Over a 2025-11-25 connection neither
// reaches the upstream.
//
// So the calls of 2026-07-28 callers go over a second connection of their
// own era, opened on the first such call when the upstream speaks it
// (server/discover names it among its supportedVersions): a second child
// process for stdio, requests without a session for streamable HTTP; never
// for legacy SSE. Every request on it carries the 2026-07-28 envelope:
// _meta with the protocol version, toolgate's client info and the
// caller's own client capabilities (less roots without forward_roots:
// callerCaps), and on HTTP the standard headers
// (MCP-Protocol-Version, Mcp-Method, Mcp-Name). An input_required result
// passes through as a [gateway.KindInputRequired] result (the pipeline's
// round stage seals its request state, bound to the call and caller, and
// records the round); the caller's repeat carries its inputResponses and
// the upstream's own requestState back.
//
// When the upstream does not speak 2026-07-28 (the discover probe fails,
// or gets no answer within modernProbe: a server that knows the method
// answers it as soon as it is up, while one of an older SDK may ignore
// it), the 2025-11-25 connection serves these callers too, as before, and
// the probe is not repeated while that connection lasts. The connection has no ping (2026-07-28 has
// none): a request that fails on it marks it dead, and the next call opens
// a new one. Calls made as tasks keep to the main connection (toolgate
// relays 2025-11-25 tasks; see tasks.go).
//
// Per-process state of a stdio upstream (a tool it adds at run time, say)
// is per connection: the two children do not share it, and toolgate
// lists the union and routes by it (sidecar.go).
//
// An upstream that speaks only 2026-07-28 refuses initialize: its main
// connection is then of that era ([Upstream.connect]), and serves callers
// of both eras. It lists with the envelope (toolgate's own capabilities),
// follows list changes over one subscriptions/listen stream, which is also
// its liveness check, and is never pinged. A 2025-era caller's call
// carries that caller's capabilities; when the upstream asks in a round,
// the MCP mirror (mcp-go) asks the caller with elicitation/create,
// sampling/createMessage or roots/list and repeats the call with the
// answers and the sealed state.

var (
	errNoModernSSE        = errors.New("the legacy SSE transport cannot carry protocol 2026-07-28")
	errModernUnsupported  = errors.New("the upstream does not speak protocol 2026-07-28")
	modernRetry           = 5 * time.Second // a failed probe (other than unsupported) is retried after this
	errNoDiscoverAnswer   = errors.New("no answer to server/discover")
	modernVersion         = mcp.ProtocolVersion20260728
	modernClientInfo      = map[string]string{"name": "toolgate", "version": version()}
	inputRequiredResponse = string(mcp.ResultTypeInputRequired)
)

// modernSlot is the state of an upstream's 2026-07-28 connection: being
// opened until done is closed, then c or err.
type modernSlot struct {
	done     chan struct{}
	c        *conn
	err      error
	failedAt time.Time
	beside   *conn // the main connection when the probe began
}

// usable reports whether the slot can still be used beside the main
// connection main; an opened slot whose connection died, a probe that
// failed for a reason other than the upstream's era a while ago, and the
// verdict that the upstream does not speak 2026-07-28 once the main
// connection was replaced (the upstream may have been upgraded) are
// replaced.
func (s *modernSlot) usable(main *conn) bool {
	select {
	case <-s.done:
	default:
		return true // being opened
	}
	if s.c != nil {
		return !s.c.isDead()
	}
	return (errors.Is(s.err, errNoModernSSE) && s.beside.kind == main.kind) || (errors.Is(s.err, errModernUnsupported) && s.beside == main) ||
		time.Since(s.failedAt) < modernRetry
}

// modernConn returns the upstream's 2026-07-28 connection, opening it if
// needed, or nil when there is none (the upstream does not speak it, or
// it failed to open): the caller then uses the main connection main.
func (u *Upstream) modernConn(ctx context.Context, main *conn) *conn {
	u.modernMu.Lock()
	if u.modernClosed {
		u.modernMu.Unlock()
		return nil
	}
	if u.modernCtx == nil {
		u.modernCtx, u.modernStop = context.WithCancel(context.Background())
	}
	s := u.modern
	var old *conn
	if s == nil || !s.usable(main) {
		if s != nil {
			old = s.c
		}
		s = &modernSlot{done: make(chan struct{}), beside: main}
		u.modern = s
		u.modernMu.Unlock()
		if old != nil {
			// Not on the caller's goroutine: a stdio child's end waits
			// for it to exit (up to its grace period).
			go old.close()
		}
		// The connection outlives this call (Close ends it), and the
		// call waits for it as any other does: no longer than its
		// context.
		go u.openModern(u.modernCtx, s)
	} else {
		u.modernMu.Unlock()
	}
	select {
	case <-s.done:
	case <-ctx.Done():
		return nil
	}
	if s.c == nil || s.c.isDead() {
		return nil
	}
	return s.c
}

// openModern opens the 2026-07-28 connection of slot s and publishes it;
// ctx ends with Close.
func (u *Upstream) openModern(ctx context.Context, s *modernSlot) {
	c, _, err := u.open(ctx, s.beside.kind, true, false)
	switch {
	case err == nil:
		u.log.Info("upstream connected for 2026-07-28 callers", "protocol", c.protocol, "server", c.serverInfo.Name)
	case errors.Is(err, errModernUnsupported), errors.Is(err, errNoModernSSE):
		u.log.Info("2026-07-28 callers use the 2025-11-25 connection", "why", u.errText(err))
	default:
		u.log.Warn("opening the 2026-07-28 connection failed; its callers use the 2025-11-25 connection for now", "err", u.errText(err))
	}
	var stale *conn
	u.modernMu.Lock()
	if u.modernClosed && c != nil { // Close ran while it opened
		stale, c = c, nil
	}
	s.c, s.err, s.failedAt = c, err, time.Now()
	u.modernMu.Unlock()
	close(s.done)
	if stale != nil {
		stale.close()
	}
	if c != nil {
		go u.followSidecar(c)
	}
}

// closeModern ends the 2026-07-28 connection (Close), and the probe of
// one being opened.
func (u *Upstream) closeModern() {
	u.modernMu.Lock()
	s, stop := u.modern, u.modernStop
	u.modern, u.modernClosed = nil, true
	u.modernMu.Unlock()
	if stop != nil {
		stop()
	}
	if s == nil {
		return
	}
	<-s.done
	if s.c != nil {
		s.c.close()
	}
}

// discover opens a 2026-07-28 connection: server/discover must name the
// version among the upstream's supported ones.
func (c *conn) discover(ctx context.Context) error {
	raw, err := c.request(ctx, string(mcp.MethodServerDiscover), nil)
	if err != nil {
		var rpc *rpcError
		if errors.As(err, &rpc) {
			return fmt.Errorf("%w (server/discover: %d %s)", errModernUnsupported, rpc.Code, rpc.Message)
		}
		return err
	}
	var res struct {
		SupportedVersions []string                   `json:"supportedVersions"`
		Capabilities      mcp.ServerCapabilities     `json:"capabilities"`
		ServerInfo        *mcp.Implementation        `json:"serverInfo"`
		Meta              map[string]json.RawMessage `json:"_meta"`
	}
	if err := json.Unmarshal(raw, &res); err != nil {
		return fmt.Errorf("%w (server/discover result: %v)", errModernUnsupported, err)
	}
	if !slices.Contains(res.SupportedVersions, modernVersion) {
		return fmt.Errorf("%w (it supports %v)", errModernUnsupported, res.SupportedVersions)
	}
	c.protocol, c.caps = modernVersion, res.Capabilities
	if res.ServerInfo != nil {
		c.serverInfo = *res.ServerInfo
	} else if si, ok := res.Meta[mcp.MetaKeyServerInfo]; ok {
		_ = json.Unmarshal(si, &c.serverInfo)
	}
	return nil
}

// modernRequest sends one request of 2026-07-28: params (a JSON object,
// which it extends) get the _meta envelope with caps as the client's
// capabilities, and HTTP the standard headers. A request that fails for
// want of a connection marks the connection dead: the next call opens a
// new one.
func (c *conn) modernRequest(ctx context.Context, method string, params map[string]any, caps json.RawMessage) (json.RawMessage, error) {
	meta, _ := params["_meta"].(map[string]any)
	if meta == nil {
		meta = map[string]any{}
	}
	meta[mcp.MetaKeyProtocolVersion] = modernVersion
	meta[mcp.MetaKeyClientInfo] = modernClientInfo
	meta[mcp.MetaKeyClientCapabilities] = caps
	params["_meta"] = meta
	body, err := json.Marshal(params)
	if err != nil {
		return nil, err
	}
	var header http.Header
	if c.hc != nil {
		header = http.Header{}
		for k, v := range mcp.StandardHeaders(modernVersion, mcp.MCPMethod(method), body) {
			header.Set(k, v)
		}
		header.Set(mcp.HeaderProtocolVersion, modernVersion)
	}
	raw, err := c.requestWith(ctx, method, json.RawMessage(body), header)
	var ce *connError
	if errors.As(err, &ce) {
		c.markDead(err)
	}
	return raw, err
}

// modernResult maps a 2026-07-28 tools/call result: an input_required
// one becomes a [gateway.KindInputRequired] result with the upstream's
// requests and state, anything else goes through [gateway.ResultFromMCP].
func (u *Upstream) modernResult(name string, raw json.RawMessage) (*gateway.Result, error) {
	var head struct {
		ResultType    string                     `json:"resultType"`
		InputRequests map[string]json.RawMessage `json:"inputRequests"`
		RequestState  string                     `json:"requestState"`
	}
	if err := json.Unmarshal(raw, &head); err != nil {
		return nil, err
	}
	if head.ResultType != inputRequiredResponse {
		return gateway.ResultFromMCP(raw)
	}
	if why := u.refusedAsk(head.InputRequests); why != "" {
		msg := fmt.Sprintf("Upstream %q asked the caller of `%s`, in a round, for what toolgate does not pass on: %s. The call ends here.", u.name, name, why)
		res := gateway.Error(msg, "Input request refused")
		res.Cause = &gateway.RequestError{Code: mcp.METHOD_NOT_FOUND, Message: why}
		return res, nil
	}
	return gateway.InputRequiredResult(head.InputRequests, head.RequestState, fmt.Sprintf(
		"Upstream %q asks for input before `%s` can go on: answer its requests and repeat the call with the request state.", u.name, name)), nil
}

// refusedAsk returns why a round of the upstream that asks requests is
// not passed on to the caller, or "" when it may be. An upstream without
// forward_roots is never given the client's roots: it is not told the
// client declared them ([Upstream.callerCaps]), and a round in which it
// asks for them anyway (roots/list) is refused, as its roots/list request
// is over a 2025-11-25 connection (onRequest), instead of being asked of
// the client, whose answer would go to the upstream with the repeat.
func (u *Upstream) refusedAsk(requests map[string]json.RawMessage) string {
	if u.cfg.ForwardRoots {
		return ""
	}
	for _, id := range slices.Sorted(maps.Keys(requests)) {
		var r struct {
			Method string `json:"method"`
		}
		_ = json.Unmarshal(requests[id], &r)
		if r.Method == string(mcp.MethodListRoots) {
			u.log.Warn("upstream request not relayed", "method", r.Method, "reason", "roots are not offered to this upstream (forward_roots)")
			return fmt.Sprintf("input request %q (%s): roots are not offered to this upstream (forward_roots is off)", id, r.Method)
		}
	}
	return ""
}

// callerCaps returns the client capabilities a request made for the caller
// of ctx carries to the upstream (nil when there is no such caller): the
// caller's own, less roots for an upstream without forward_roots, which
// is never offered them (nor asks for them: refusedAsk).
func (u *Upstream) callerCaps(ctx context.Context) json.RawMessage {
	caps := gateway.ClientCapabilities(ctx)
	if u.cfg.ForwardRoots || !mayNameRoots(caps) {
		return caps
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(caps, &m) != nil {
		return json.RawMessage(`{}`)
	}
	for k := range m {
		if strings.EqualFold(k, "roots") { // decoders match member names so
			delete(m, k)
		}
	}
	b, err := json.Marshal(m)
	if err != nil {
		return json.RawMessage(`{}`)
	}
	return b
}

// mayNameRoots reports whether the JSON text caps may have a member named
// roots: it holds "roots" in any case, or an escape. Without allocating:
// most callers declare no roots.
func mayNameRoots(caps json.RawMessage) bool {
	for i := range caps {
		if caps[i] == '\\' || i+5 <= len(caps) && bytes.EqualFold(caps[i:i+5], []byte("roots")) {
			return true
		}
	}
	return false
}

// addRound puts the round a request answers into its params, and reports
// whether there is one.
func addRound(params map[string]any, responses map[string]json.RawMessage, state string) bool {
	if len(responses) > 0 {
		params["inputResponses"] = responses
	}
	if state != "" {
		params["requestState"] = state
	}
	return len(responses) > 0 || state != ""
}

// connFor returns the connection a request made for the caller of ctx
// goes over, and the caller's capabilities when it carries them
// ([Upstream.callerCaps]): the main
// connection when it is of 2026-07-28 (an upstream that speaks only that),
// else for a 2026-07-28 caller the connection of that era beside it, when
// the upstream speaks it and protocol allows; main otherwise.
func (u *Upstream) connFor(ctx context.Context, main *conn) (*conn, json.RawMessage) {
	switch {
	case main.modern:
		return main, u.callerCaps(ctx)
	case gateway.ModernClient(ctx) && u.cfg.Protocol != ProtocolLegacy:
		if mc := u.modernConn(ctx, main); mc != nil {
			return mc, u.callerCaps(ctx)
		}
	}
	return main, nil
}

// isRPCRefusal reports whether initialize failed because the upstream
// refused it (a JSON-RPC error; over HTTP a 4xx, which mcp-go reports as
// a legacy SSE server), not for want of an answer: an upstream that
// speaks only 2026-07-28 answers so.
func isRPCRefusal(err error) bool {
	return errors.Is(err, mcp.ErrMethodNotFound) || errors.Is(err, mcp.ErrInvalidRequest) ||
		errors.Is(err, mcp.ErrInvalidParams) || mcp.IsUnsupportedProtocolVersion(err) ||
		errors.Is(err, transport.ErrLegacySSEServer)
}

// paramsMap is params as the JSON object a 2026-07-28 request extends
// with its envelope.
func paramsMap(params any) (map[string]any, error) {
	switch p := params.(type) {
	case nil:
		return map[string]any{}, nil
	case map[string]any:
		return p, nil
	}
	b, err := json.Marshal(params)
	if err != nil {
		return nil, err
	}
	m := map[string]any{}
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("params are not a JSON object: %w", err)
	}
	return m, nil
}

// listen follows a 2026-07-28 connection's list changes (a main one's,
// or a sidecar's: sidecar.go): one subscriptions/listen request for the
// lifetime of the connection, whose stream carries
// notifications/*/list_changed (onNotification re-lists). The stream is
// the connection's liveness check (the revision has no ping): when it
// ends while the connection is open, the connection is dead, and the
// supervisor reconnects (a sidecar is opened again by the next call that
// needs it).
func (c *conn) listen() {
	want := map[string]any{}
	if c.caps.Tools != nil && c.caps.Tools.ListChanged {
		want["toolsListChanged"] = true
	}
	if c.caps.Prompts != nil && c.caps.Prompts.ListChanged {
		want["promptsListChanged"] = true
	}
	if c.caps.Resources != nil && c.caps.Resources.ListChanged {
		want["resourcesListChanged"] = true
	}
	if len(want) == 0 {
		return // nothing to follow: requests that fail mark the connection dead
	}
	_, err := c.request(c.ctx, string(mcp.MethodSubscriptionsListen), map[string]any{"notifications": want})
	if c.ctx.Err() != nil {
		return
	}
	var rpc *rpcError
	if errors.As(err, &rpc) {
		// The upstream refused the stream, not the connection: its
		// requests still tell whether it lives.
		c.u.log.Warn("the upstream refused subscriptions/listen; its list changes are not followed", "err", rpc.Error())
		return
	}
	if err == nil {
		err = errors.New("the upstream ended it")
	}
	c.markDead(fmt.Errorf("the subscriptions/listen stream ended: %v", err))
}
