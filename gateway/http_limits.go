package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// Defaults of the HTTP limits ([HTTPOptions]). Each bounds what one kind
// of abuse can cost: a session is ~13 KiB, a GET stream ~50 KiB and a few
// goroutines, a 4 MiB body up to ~35 MiB once decoded, validated and
// written. At the defaults the worst case stays within a few hundred MiB.
const (
	DefaultMaxSessions           = 1000
	DefaultMaxStreams            = 256
	DefaultMaxInFlight           = 1024
	DefaultMaxInFlightPerSession = 256
	DefaultMaxBodyMemory         = 32 << 20
	DefaultBodyReadTimeout       = 30 * time.Second
)

// limiter is a counter with a ceiling.
type limiter struct {
	max int64
	n   atomic.Int64
}

func (l *limiter) acquire(k int64) bool {
	if l.n.Add(k) > l.max {
		l.n.Add(-k)
		return false
	}
	return true
}

func (l *limiter) release(k int64) { l.n.Add(-k) }

// HTTPStats are the HTTP transport's counters, for /healthz and the
// metrics.
type HTTPStats struct {
	Sessions   int   `json:"sessions"`
	Streams    int64 `json:"streams"`
	InFlight   int64 `json:"in_flight"`
	BodyMemory int64 `json:"body_bytes_in_flight"`
	Refused    int64 `json:"refused_over_limits"`
	Evicted    int64 `json:"sessions_evicted"`
	// RefusedBy counts the requests refused before they reached the MCP
	// server, by reason (every name of [HTTPRefusalReasons], zeros too).
	RefusedBy map[string]int64 `json:"refused"`
}

// refusal is why the HTTP transport refused a request before the MCP
// server saw it.
type refusal int

const (
	refusedHost               refusal = iota // 403: Host not allowed
	refusedOrigin                            // 403: Origin not allowed
	refusedUnauthorized                      // 401: no valid bearer or access token
	refusedScope                             // 403: an access token without the required scope
	refusedAuthUnavailable                   // 503: the authorization server could not be reached
	refusedSessionOwner                      // 403: a session of another identity
	refusedBodyTooLarge                      // 413: over http.max_body_bytes
	refusedMaxSessions                       // 503: http.max_sessions
	refusedMaxStreams                        // 503: http.max_streams
	refusedMaxBodyMemory                     // 503: http.max_body_memory
	refusedMaxInFlight                       // 429: limits.max_in_flight
	refusedMaxInFlightSession                // 429: limits.max_in_flight_per_session
	nRefusals
)

// HTTPRefusalReasons names the reasons [HTTPStats.RefusedBy] counts, a
// fixed set: a limit's by the setting that raises it.
var HTTPRefusalReasons = [nRefusals]string{
	"host_not_allowed", "origin_not_allowed", "unauthorized", "insufficient_scope", "auth_unavailable",
	"session_of_another_identity", "body_too_large",
	"http.max_sessions", "http.max_streams", "http.max_body_memory", "limits.max_in_flight", "limits.max_in_flight_per_session",
}

// count counts a refusal.
func (g *httpGuard) count(r refusal) { g.refusals[r].Add(1) }

// overLimits is how many requests a limit refused (the refusedMax*
// reasons).
func (g *httpGuard) overLimits() int64 {
	var n int64
	for r := refusedMaxSessions; r < nRefusals; r++ {
		n += g.refusals[r].Load()
	}
	return n
}

// refuse answers a request that a limit stops (limit, one of the
// refusedMax* reasons, whose name is the setting that raises it): HTTP
// status (429 or 503) with Retry-After, and a JSON-RPC error naming the
// limit and the key, with the request's id when it has one.
func (g *httpGuard) refuse(w http.ResponseWriter, status int, id json.RawMessage, limit refusal, max int64, what string) {
	g.count(limit)
	key := HTTPRefusalReasons[limit]
	n := g.overLimits()
	// One WARN a second at most: a flood of refusals must not become a
	// flood of log lines. /healthz counts them all.
	if now := time.Now().UnixNano(); now-g.lastRefusalLog.Load() >= int64(time.Second) {
		g.lastRefusalLog.Store(now)
		g.log.Warn("http request refused", "reason", what, "limit", key, "max", max, "refused_so_far", n)
	}
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	b, _ := json.Marshal(map[string]any{
		"jsonrpc": "2.0", "id": id,
		"error": map[string]any{
			"code":    -32000,
			"message": fmt.Sprintf("%s: the limit %s (%d) is reached; retry later", what, key, max),
			"data":    map[string]any{"limit": key, "max": max},
		},
	})
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Retry-After", "1")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// rpcHead is the part of a JSON-RPC message the guard looks at.
type rpcHead struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params struct {
		Meta struct {
			// A 2026-07-28 request names its version here when its header
			// does not (mcp-go tells the eras apart so too).
			Version string `json:"io.modelcontextprotocol/protocolVersion"`
		} `json:"_meta"`
	} `json:"params"`
}

func headOf(body []byte) rpcHead {
	var h rpcHead
	if b := bytes.TrimSpace(body); len(b) > 0 && b[0] == '{' {
		_ = json.Unmarshal(b, &h)
	}
	return h
}

type reservationKey struct{}

// reservation is a session slot held for an initialize request until
// mcp-go mints its session id ([ownedManager.Generate]).
type reservation struct{ minted atomic.Bool }

// serveMCP is the MCP endpoint behind the checks of wrap: sessions bound
// to their identity, then the limits, then mcp-go.
func (g *httpGuard) serveMCP(w http.ResponseWriter, r *http.Request, next http.Handler) {
	switch r.Method {
	case http.MethodPost, http.MethodGet, http.MethodDelete, http.MethodHead:
	default:
		// mcp-go answers any other method 404, which tells a 2025-era
		// client that its session ended.
		w.Header().Set("Allow", "GET, POST, DELETE")
		httpError(w, http.StatusMethodNotAllowed, fmt.Sprintf("method %s is not allowed on the MCP endpoint", r.Method))
		return
	}
	v := r.Header.Get("Mcp-Protocol-Version")
	modern := mcp.IsValidProtocolVersion(v) && mcp.IsModernProtocol(v)
	owner := identityFrom(r.Context())
	if v != "" && !mcp.IsValidProtocolVersion(v) && r.Method != http.MethodPost {
		// The transport's MUST: 400 for an invalid or unsupported version.
		// mcp-go would take any later string ("2099-01-01", "garbage") for
		// 2026-07-28 and answer a GET or DELETE 405, which reads as "no
		// stream here" or "no ending sessions" (a POST gets its 400 there,
		// with the era's error).
		httpError(w, http.StatusBadRequest, fmt.Sprintf("unsupported MCP-Protocol-Version %q; supported: %s", v, strings.Join(mcp.ValidProtocolVersions, ", ")))
		return
	}

	var sess *httpSession
	if sid := r.Header.Get("Mcp-Session-Id"); sid != "" && !modern {
		s, err := g.sessions.acquire(sid, owner)
		switch err {
		case errUnknownSession:
			httpError(w, http.StatusNotFound, "unknown or ended session: initialize a new one")
			return
		case errNotYourSession:
			g.count(refusedSessionOwner)
			g.log.Warn("http request refused", "reason", "session of another identity", "session", SessionRef(sid), "remote", r.RemoteAddr)
			httpError(w, http.StatusForbidden, "this session belongs to another client identity")
			return
		}
		sess = s
		defer g.sessions.release(s)
	} else if !modern && (r.Method == http.MethodGet || r.Method == http.MethodDelete) {
		httpError(w, http.StatusBadRequest, fmt.Sprintf("%s needs the Mcp-Session-Id header of an initialized session", r.Method))
		return
	}

	switch r.Method {
	case http.MethodGet:
		if !g.streams.acquire(1) {
			g.refuse(w, http.StatusServiceUnavailable, nil, refusedMaxStreams, g.streams.max, "too many open streams")
			return
		}
		defer g.streams.release(1)
		if sess != nil && g.onListen != nil {
			// mcp-go's handler serves the stream from here; a request
			// already waiting for it goes out on it.
			g.onListen(r.Header.Get("Mcp-Session-Id"))
		}
	case http.MethodPost:
		// mcp-go answers another content type 400 in plain text, the one
		// refusal of the endpoint that is not JSON-RPC; 415 is HTTP's
		// status for it (the TypeScript SDK's server answers so too).
		if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
			httpError(w, http.StatusUnsupportedMediaType, fmt.Sprintf("the body must be JSON-RPC with Content-Type: application/json, not %q", r.Header.Get("Content-Type")))
			return
		}
		// A 2026-07-28 subscriptions/listen is the era's GET stream, open
		// for as long as the client likes: it takes a stream, not a call's
		// in-flight slot (max_in_flight listen streams shut every call out).
		// mcp-go refuses a request whose Mcp-Method is not its method.
		stream := modern && r.Header.Get(mcp.HeaderMethod) == string(mcp.MethodSubscriptionsListen)
		a, ok := g.admitPost(w, r, sess, modern, stream)
		if !ok {
			return
		}
		defer a.release()
		r = a.r
	}
	next.ServeHTTP(w, r)
}

// admission is what an admitted POST holds until it is answered.
type admission struct {
	g     *httpGuard
	r     *http.Request // with the body read, and a session reservation for initialize
	slot  *limiter      // g.inFlight, or g.streams for a listen stream
	bytes int64         // body memory held
	sess  *httpSession  // a call of this session is counted
	res   *reservation  // a session slot is held
}

func (a *admission) release() {
	a.slot.release(1)
	a.g.bodyMem.release(a.bytes)
	if a.sess != nil {
		a.g.sessions.endCall(a.sess)
	}
	if a.res != nil && !a.res.minted.Load() {
		a.g.sessions.unreserve()
	}
}

// admitPost reads a POST body within the memory budget and its read
// deadline, and admits the request past the in-flight and session limits,
// or answers it with the refusal. A stream (subscriptions/listen) is
// admitted past http.max_streams instead of the in-flight limit.
func (g *httpGuard) admitPost(w http.ResponseWriter, r *http.Request, sess *httpSession, modern, stream bool) (*admission, bool) {
	if r.ContentLength > g.opts.MaxBodyBytes {
		g.count(refusedBodyTooLarge)
		httpError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body of %d bytes is over the limit of %d bytes", r.ContentLength, g.opts.MaxBodyBytes))
		return nil, false
	}
	// Reserve what the body may hold before reading it: its declared
	// length, or the body limit when it does not say.
	held := r.ContentLength
	if held < 0 {
		held = g.opts.MaxBodyBytes
	}
	if !g.bodyMem.acquire(held) {
		g.refuse(w, http.StatusServiceUnavailable, nil, refusedMaxBodyMemory, g.bodyMem.max, "too many request bytes in flight")
		return nil, false
	}
	// A client that sends headers and then no body would hold the
	// connection forever: the body has its own read deadline.
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Now().Add(g.opts.BodyReadTimeout))
	// Read the body here, bounded: mcp-go reads it whole with no limit.
	// A declared length (within the limit, checked above) is read into a
	// buffer of that size (net/http ends the body there); otherwise one
	// byte more than the limit tells a body that is over.
	var body []byte
	var err error
	if r.ContentLength >= 0 {
		body = make([]byte, r.ContentLength)
		var n int
		n, err = io.ReadFull(r.Body, body)
		body = body[:n]
	} else {
		body, err = io.ReadAll(io.LimitReader(r.Body, g.opts.MaxBodyBytes+1))
	}
	if err == nil {
		_ = rc.SetReadDeadline(time.Time{})
	} // else the deadline stays: net/http would wait for the rest of the body
	g.bodyMem.release(held - int64(len(body))) // hold what was read, no more
	held = int64(len(body))
	refused := func() (*admission, bool) {
		g.bodyMem.release(held)
		return nil, false
	}
	if err != nil {
		status := http.StatusBadRequest
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			status = http.StatusRequestTimeout
		}
		w.Header().Set("Connection", "close")
		httpError(w, status, fmt.Sprintf("reading request body: %v", err))
		return refused()
	}
	if held > g.opts.MaxBodyBytes {
		g.count(refusedBodyTooLarge)
		httpError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body is over the limit of %d bytes", g.opts.MaxBodyBytes))
		return refused()
	}
	if len(bytes.TrimSpace(body)) == 0 { // mcp-go: "request body is not valid json"
		httpError(w, http.StatusBadRequest, "the request body is empty: POST one JSON-RPC message")
		return refused()
	}

	slot := g.inFlight
	if stream {
		slot = g.streams
		if !slot.acquire(1) {
			g.refuse(w, http.StatusServiceUnavailable, headOf(body).ID, refusedMaxStreams, slot.max, "too many open streams")
			return refused()
		}
	} else if !slot.acquire(1) {
		g.refuse(w, http.StatusTooManyRequests, headOf(body).ID, refusedMaxInFlight, slot.max, "too many requests in flight")
		return refused()
	}
	a := &admission{g: g, r: r, bytes: held, slot: slot}
	if sess != nil {
		if !g.sessions.startCall(sess, g.opts.MaxInFlightPerSession) {
			slot.release(1)
			g.refuse(w, http.StatusTooManyRequests, headOf(body).ID, refusedMaxInFlightSession, int64(g.opts.MaxInFlightPerSession), "too many requests in flight on this session")
			return refused()
		}
		a.sess = sess
	}
	// A 2025-era POST's method matters here only without a session (which
	// only initialize may lack) or for an initialize sent with one:
	// mayHold keeps decoding its head off every call of a session.
	if !modern && (sess == nil || mayHold(body, `"initialize"`)) {
		switch h := headOf(body); {
		case h.Method == string(mcp.MethodInitialize):
			// Every 2025-era initialize, with a session id or not: mcp-go
			// mints a new session for each (the id it carries is ignored),
			// so each takes a slot.
			evict, admitted := g.sessions.admit()
			if !admitted {
				a.release()
				g.refuse(w, http.StatusServiceUnavailable, h.ID, refusedMaxSessions, int64(g.sessions.max), "too many sessions in use")
				return nil, false
			}
			if evict != "" {
				g.endSession(evict)
			}
			a.res = new(reservation)
			a.r = r.WithContext(context.WithValue(r.Context(), reservationKey{}, a.res))
		case sess == nil && h.Method != "" && !mcp.IsModernProtocol(h.Params.Meta.Version):
			// A 2025-era request needs its session (mcp-go would say 404,
			// which tells a client its session ended): 400, as the
			// streamable HTTP transport says. A 2026-07-28 request,
			// stateless, names its version in the header or in _meta.
			a.release()
			httpErrorFor(w, http.StatusBadRequest, h.ID, fmt.Sprintf("%s needs the Mcp-Session-Id header of an initialized session", h.Method))
			return nil, false
		}
	}

	a.r.Body = newReadBody(body)
	a.r.ContentLength = held
	if modern {
		if fixed, ok := addProtocolVersionToNotification(body, r.Header.Get("Mcp-Protocol-Version")); ok {
			a.r.Body = newReadBody(fixed)
			a.r.ContentLength = int64(len(fixed))
		}
	}
	return a, true
}

// readBody is a POST's body as admitPost read it: a reader over its bytes
// for any handler, and the bytes themselves for mcp-go's, which takes them
// as they are instead of reading them into a buffer of its own
// (server.ReadBody, mcp-go copy item 38, third_party/README.md). The bytes
// are read into a buffer of their own per request and never reused.
type readBody struct {
	bytes.Reader
	b []byte
}

var _ server.ReadBody = (*readBody)(nil)

func newReadBody(b []byte) *readBody {
	r := &readBody{b: b}
	r.Reset(b)
	return r
}

func (r *readBody) Close() error      { return nil }
func (r *readBody) BodyBytes() []byte { return r.b }

// endSession ends an idle session to make room for a new one, through
// mcp-go's own DELETE handling so that everything it keeps for the
// session (and every listener of session ends) sees it go.
func (g *httpGuard) endSession(id string) {
	g.evicted.Add(1)
	g.log.Debug("http session ended to make room for a new one (http.max_sessions)", "session", SessionRef(id))
	req, err := http.NewRequestWithContext(context.WithValue(context.Background(), evictionKey{}, true), http.MethodDelete, g.opts.Path, nil)
	if err != nil {
		return
	}
	req.Header.Set("Mcp-Session-Id", id)
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25") // sessions are of the 2025 era
	g.mcp.ServeHTTP(discardResponse{http.Header{}}, req)
}

type discardResponse struct{ h http.Header }

func (d discardResponse) Header() http.Header         { return d.h }
func (d discardResponse) Write(p []byte) (int, error) { return len(p), nil }
func (d discardResponse) WriteHeader(int)             {}

// Stats returns the HTTP transport's counters.
func (g *httpGuard) Stats() HTTPStats {
	by := make(map[string]int64, nRefusals)
	for r, name := range HTTPRefusalReasons {
		by[name] = g.refusals[r].Load()
	}
	return HTTPStats{
		RefusedBy:  by,
		Sessions:   g.sessions.len(),
		Streams:    g.streams.n.Load(),
		InFlight:   g.inFlight.n.Load(),
		BodyMemory: g.bodyMem.n.Load(),
		Refused:    g.overLimits(),
		Evicted:    g.evicted.Load(),
	}
}
