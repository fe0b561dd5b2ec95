package gateway

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// ServeStdio serves MCP over stdin and stdout until in reaches EOF or ctx
// ends. Only protocol messages are written to out; every log line goes to
// the logger (which must not write to out). Calls in flight when input ends
// are cancelled by mcp-go and recorded by the pipeline.
func (m *MCPServer) ServeStdio(ctx context.Context, in io.Reader, out io.Writer) error {
	s := server.NewStdioServer(m.srv)
	s.SetErrorLogger(mcpgoErrorLog(m.log))
	// mcp-go runs tools/call on a pool of workers (5 by default) and runs
	// the call on the read loop when the queue is full; a larger pool keeps
	// slow tools from holding up the others.
	server.WithWorkerPoolSize(100)(s) // mcp-go's maximum
	server.WithQueueSize(1024)(s)
	server.WithMaxMessageBytes(int(cmp.Or(m.opts.MaxStdioMessageBytes, DefaultMaxBodyBytes)))(s) // mcp-go patch item 46
	return s.Listen(context.WithValue(ctx, identityKey{}, "local"), in, out)
}

// HTTPOptions configure [MCPServer.HTTPHandler].
type HTTPOptions struct {
	// Path is the MCP endpoint. If empty, "/mcp".
	Path string
	// AllowedOrigins lists the browser origins allowed to call the endpoint
	// ("http://localhost:*" allows any port). Requests without an Origin
	// header (non-browser clients) are allowed; any other origin gets 403.
	// If nil, the loopback origins (localhost, 127.0.0.1, [::1], any port,
	// http or https) are allowed.
	AllowedOrigins []string
	// AllowedHosts lists the Host header values accepted ("name" or
	// "name:port"; "*" accepts any), against DNS rebinding. If nil, the
	// loopback names (localhost, 127.0.0.1, [::1]) are accepted.
	AllowedHosts []string
	// MaxBodyBytes caps a request body; a larger one gets 413. If zero,
	// 4 MiB.
	MaxBodyBytes int64
	// OAuth, if set, accepts OAuth access tokens too (see [OAuthOptions]).
	OAuth *OAuthOptions
	// Tokens, if any, are the bearer tokens accepted; a request without
	// one of them gets 401. Compared in constant time. A token's name is
	// the caller's identity ("token:NAME") in records, and the owner of
	// the sessions it creates.
	Tokens []BearerToken
	// SessionIdleTTL ends sessions idle this long. If zero, 30 minutes.
	SessionIdleTTL time.Duration
	// SessionKeys, if any, seal session ids so that any replica sharing
	// them serves a session (http_sealed.go); the first key seals, every
	// key opens. Each is 32 bytes.
	SessionKeys [][]byte
	// MaxSessions bounds the 2025-era sessions alive at once; a new one
	// ends the least recently used idle session, and with none idle,
	// initialize gets 503. If zero, [DefaultMaxSessions].
	MaxSessions int
	// MaxStreams bounds the GET streams open at once (503 past it). If
	// zero, [DefaultMaxStreams].
	MaxStreams int
	// MaxInFlight bounds the POST requests being answered at once, and
	// MaxInFlightPerSession those of one session (429 past either). If
	// zero, [DefaultMaxInFlight] and [DefaultMaxInFlightPerSession].
	MaxInFlight           int
	MaxInFlightPerSession int
	// MaxBodyMemory bounds the bytes of request bodies held at once, from
	// reading until the answer (503 past it). If zero,
	// [DefaultMaxBodyMemory] (and never less than MaxBodyBytes).
	MaxBodyMemory int64
	// BodyReadTimeout bounds the reading of one request body (408 past
	// it). If zero, [DefaultBodyReadTimeout].
	BodyReadTimeout time.Duration
	// Profile, if set, serves profiles at Path + "/" + name: it returns
	// the view of a profile by name (asked per request, so profiles can
	// change while serving), and false for none (404). Path itself serves
	// the server's default view.
	Profile func(name string) (View, bool)
	// Metrics, if set, is served at /metrics behind the same checks as the
	// MCP endpoint (Host, Origin, bearer token).
	Metrics http.Handler
	// TraceHeaders continues a caller's W3C trace context from the
	// request's traceparent header (set when tracing is on).
	TraceHeaders bool
	// Health, if set, returns the details /healthz shows to authorized
	// callers (everyone when there are no tokens).
	Health func() any
	// Ready, if set, says why the gateway cannot serve calls now (its
	// records cannot be written, say): /healthz then answers 503, so that
	// a load balancer or a readiness probe sends the calls elsewhere, with
	// the reason for authorized callers. It is asked at each /healthz.
	Ready func() error
}

// DefaultMaxBodyBytes is the default request body limit.
const DefaultMaxBodyBytes = 4 << 20

// HTTPHandler returns the streamable HTTP transport: the MCP endpoint at
// opts.Path behind the checks a network service needs, and /healthz. Both
// protocol eras are served on the endpoint: 2025-era clients initialize and
// get a session (tracked by the server: unknown or ended session IDs get
// 404; idle sessions expire), and 2026-07-28 clients send stateless
// requests. The checks, in order: Host (403, against DNS rebinding),
// Origin (403), bearer token (401), body size (413). The returned function
// closes every session, for shutdown, and ends every 2026-07-28
// subscriptions/listen stream with its request's result.
func (m *MCPServer) HTTPHandler(opts HTTPOptions) (http.Handler, func(context.Context) error) {
	if opts.Path == "" {
		opts.Path = "/mcp"
	}
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if opts.SessionIdleTTL <= 0 {
		opts.SessionIdleTTL = 30 * time.Minute
	}
	opts.MaxSessions = cmp.Or(opts.MaxSessions, DefaultMaxSessions)
	opts.MaxStreams = cmp.Or(opts.MaxStreams, DefaultMaxStreams)
	opts.MaxInFlight = cmp.Or(opts.MaxInFlight, DefaultMaxInFlight)
	opts.MaxInFlightPerSession = cmp.Or(opts.MaxInFlightPerSession, DefaultMaxInFlightPerSession)
	opts.MaxBodyMemory = max(cmp.Or(opts.MaxBodyMemory, DefaultMaxBodyMemory), opts.MaxBodyBytes)
	opts.BodyReadTimeout = cmp.Or(opts.BodyReadTimeout, DefaultBodyReadTimeout)
	if opts.AllowedOrigins == nil {
		opts.AllowedOrigins = []string{"http://localhost:*", "https://localhost:*", "http://127.0.0.1:*", "https://127.0.0.1:*", "http://[::1]:*", "https://[::1]:*"}
	}
	if opts.AllowedHosts == nil {
		opts.AllowedHosts = []string{"localhost", "127.0.0.1", "[::1]"}
	}
	heartbeat := opts.SessionIdleTTL / 3
	if heartbeat > 30*time.Second {
		heartbeat = 30 * time.Second
	}
	sealer, err := newSealer(opts.SessionKeys)
	if err != nil { // the configuration checks keys first
		panic("gateway: HTTPOptions.SessionKeys: " + err.Error())
	}
	g := &httpGuard{opts: opts, log: m.log, tokens: hashTokens(opts.Tokens), tokenNames: tokenNames(opts.Tokens),
		sessions: newSessionTable(opts.MaxSessions, sealer),
		streams:  &limiter{max: int64(opts.MaxStreams)},
		inFlight: &limiter{max: int64(opts.MaxInFlight)},
		bodyMem:  &limiter{max: opts.MaxBodyMemory},
		onListen: m.becameAskable,
	}
	streamable := server.NewStreamableHTTPServer(m.srv,
		server.WithStateful(true),
		server.WithSessionIdManagerResolver(g.sessions),
		server.WithSessionIdleTTL(opts.SessionIdleTTL),
		server.WithHeartbeatInterval(heartbeat),
		// Our own Host check below replaces mcp-go's, so that the
		// allow-list applies the same way whatever address we bind.
		server.WithDisableLocalhostProtection(true),
		server.WithStreamableHTTPLogger(slog.New(sessionRefHandler{m.log.Handler()})),
	)
	g.mcp = streamable
	mux := http.NewServeMux()
	mux.Handle(opts.Path, g.wrapMCP(streamable))
	if opts.Profile != nil {
		// The profile is looked up after the caller is identified and
		// before the session checks: an unknown profile is 404 whatever the
		// request, as an unknown path.
		mux.Handle(strings.TrimSuffix(opts.Path, "/")+"/{profile}", g.wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			v, ok := opts.Profile(r.PathValue("profile"))
			if !ok {
				httpError(w, http.StatusNotFound, fmt.Sprintf("no profile %q is configured", r.PathValue("profile")))
				return
			}
			g.serveMCP(w, r.WithContext(withView(r.Context(), v)), streamable)
		})))
	}
	mux.HandleFunc("/healthz", g.health)
	if opts.OAuth != nil {
		mux.HandleFunc("GET "+metadataPath, g.serveMetadata)
		mux.HandleFunc("GET "+metadataPath+opts.Path, g.serveMetadata)
	}
	if opts.Metrics != nil {
		mux.Handle("/metrics", g.wrap(opts.Metrics))
	}
	m.guard.Store(g)
	return g.checkHost(mux), func(ctx context.Context) error { return streamable.Shutdown(ctx) }
}

// HTTPStats returns the counters of the transport [MCPServer.HTTPHandler]
// returned last; false before it is called (a stdio serve).
func (m *MCPServer) HTTPStats() (HTTPStats, bool) {
	g := m.guard.Load()
	if g == nil {
		return HTTPStats{}, false
	}
	return g.Stats(), true
}

type httpGuard struct {
	opts       HTTPOptions
	log        *slog.Logger
	tokens     [][32]byte
	tokenNames []string     // of tokens, index for index
	mcp        http.Handler // mcp-go's transport
	// onListen, if set, is told a 2025-era session's GET stream opens.
	onListen func(sessionID string)

	sessions                   *sessionTable
	streams, inFlight, bodyMem *limiter
	evicted                    atomic.Int64
	refusals                   [nRefusals]atomic.Int64 // by reason
	lastRefusalLog             atomic.Int64            // unix nanoseconds
}

// BearerToken is a bearer token the HTTP transport accepts, and its name
// (the caller's identity is "token:" and it; empty: TokenFingerprint).
type BearerToken struct {
	Name  string
	Value string
}

func hashTokens(tokens []BearerToken) [][32]byte {
	out := make([][32]byte, 0, len(tokens))
	for _, t := range tokens {
		if t.Value != "" {
			out = append(out, sha256.Sum256([]byte(t.Value)))
		}
	}
	return out
}

func tokenNames(tokens []BearerToken) []string {
	out := make([]string, 0, len(tokens))
	for _, t := range tokens {
		if t.Value == "" {
			continue
		}
		name := t.Name
		if name == "" {
			name = TokenFingerprint(t.Value)
		}
		out = append(out, name)
	}
	return out
}

// TokenFingerprint names a bearer token that was given no name: "sha256:"
// and the first 12 hex digits of its SHA-256 (no quoting in YAML, and
// printf %s "$TOKEN" | sha256sum | cut -c1-12 computes it). The name follows the token, not
// its place in a list, so removing (revoking) one token never hands its
// identity (its sessions, tasks, artifacts and policy rules) to another,
// and reordering changes nothing. Tokens are at least 16 characters, from
// a random source (docs/auth.md): 48 bits of their digest in the records
// tell nothing usable about them.
func TokenFingerprint(value string) string {
	sum := sha256.Sum256([]byte(value))
	return "sha256:" + hex.EncodeToString(sum[:6])
}

// httpError writes a JSON-RPC error body with an HTTP status.
func httpError(w http.ResponseWriter, status int, msg string) { httpErrorFor(w, status, nil, msg) }

// httpErrorFor is httpError answering the request id (JSON-RPC's "id"
// is null only where the request's could not be read).
func httpErrorFor(w http.ResponseWriter, status int, id json.RawMessage, msg string) {
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	b, _ := json.Marshal(map[string]any{
		"jsonrpc": "2.0", "id": id,
		"error": map[string]any{"code": -32600, "message": msg},
	})
	_, _ = w.Write(b)
}

func (g *httpGuard) checkHost(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !hostAllowed(g.opts.AllowedHosts, r.Host) {
			g.count(refusedHost)
			g.log.Warn("http request refused", "reason", "host not allowed", "host", r.Host, "remote", r.RemoteAddr)
			httpError(w, http.StatusForbidden, fmt.Sprintf("Host %q is not allowed (DNS rebinding protection)", r.Host))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// wrap puts the checks every endpoint beside /healthz needs before next:
// Origin (403) and bearer token (401). The request's context carries the
// caller's identity.
func (g *httpGuard) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if origin := r.Header.Get("Origin"); origin != "" && !originAllowed(g.opts.AllowedOrigins, origin) {
			g.count(refusedOrigin)
			g.log.Warn("http request refused", "reason", "origin not allowed", "origin", origin, "remote", r.RemoteAddr)
			httpError(w, http.StatusForbidden, fmt.Sprintf("Origin %q is not allowed", origin))
			return
		}
		identity, principal, err := g.identify(r)
		if err != nil {
			reason := "missing or invalid bearer token"
			if errors.Is(err, ErrAuthUnavailable) {
				reason = "the access token cannot be checked now" // a 503, not a bad token
			}
			g.log.Warn("http request refused", "reason", reason, "err", err, "remote", r.RemoteAddr)
			if g.opts.OAuth != nil {
				g.challenge(w, r, err)
				return
			}
			g.count(refusedUnauthorized)
			// RFC 6750 §3.1: no error code when the request has no bearer
			// token, invalid_token when it has one that is refused.
			challenge := `Bearer realm="toolgate"`
			if errors.Is(err, errUnknownToken) {
				challenge += `, error="invalid_token"`
			}
			w.Header().Set("WWW-Authenticate", challenge)
			httpError(w, http.StatusUnauthorized, err.Error())
			return
		}
		ctx := context.WithValue(r.Context(), identityKey{}, identity)
		if g.opts.TraceHeaders {
			ctx = withHeaderTrace(ctx, r.Header)
		}
		if principal != nil {
			ctx = context.WithValue(ctx, principalKey{}, principal)
		}
		r = r.WithContext(ctx)
		next.ServeHTTP(w, r)
	})
}

// wrapMCP is wrap for an MCP endpoint, with its sessions and limits
// ([httpGuard.serveMCP]).
func (g *httpGuard) wrapMCP(next http.Handler) http.Handler {
	return g.wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		g.serveMCP(w, r, next)
	}))
}

// authorized reports whether the request carries an accepted token (or
// none is needed).
func (g *httpGuard) authorized(r *http.Request) bool {
	_, _, err := g.identify(r)
	return err == nil
}

// identify checks the bearer token in constant time: both sides are
// hashed first, so neither the token's content nor its length leaks
// through timing, and every configured token is compared. The identity is
// "token:" and the token's name, or "anonymous" when no tokens are
// configured; a token that is none of them is checked as an OAuth access
// token when OAuth is on.
func (g *httpGuard) identify(r *http.Request) (identity string, p *Principal, err error) {
	if len(g.tokens) == 0 && g.opts.OAuth == nil {
		return "anonymous", nil, nil
	}
	auth := r.Header.Get("Authorization")
	scheme, token, ok := strings.Cut(auth, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		ok, token = false, ""
	}
	got := sha256.Sum256([]byte(strings.TrimSpace(token)))
	match, which := 0, 0
	for i := range g.tokens {
		eq := subtle.ConstantTimeCompare(got[:], g.tokens[i][:])
		match |= eq
		which = subtle.ConstantTimeSelect(eq, i, which)
	}
	switch {
	case match == 1 && ok:
		return "token:" + g.tokenNames[which], nil, nil
	case g.opts.OAuth != nil && ok && strings.TrimSpace(token) != "":
		return g.verifyOAuth(r.Context(), strings.TrimSpace(token))
	case auth == "":
		return "", nil, errNoToken
	case !ok && !strings.EqualFold(strings.TrimSpace(auth), "Bearer"): // "Bearer " arrives trimmed
		return "", nil, errNotBearer
	case strings.TrimSpace(token) == "":
		return "", nil, errEmptyToken
	}
	return "", nil, errUnknownToken
}

// Why a request's credentials are refused, as its 401 says. None quotes
// the Authorization header: a token sent without its scheme is all of it.
var (
	errNoToken      = errors.New("no bearer token: send the header Authorization: Bearer TOKEN")
	errNotBearer    = errors.New("the Authorization header is not a bearer token: send Authorization: Bearer TOKEN")
	errEmptyToken   = errors.New("the bearer token is empty: send Authorization: Bearer TOKEN")
	errUnknownToken = errors.New("the bearer token is not one this gateway accepts")
)

func (g *httpGuard) health(w http.ResponseWriter, r *http.Request) {
	body := map[string]any{"status": "ok"}
	code := http.StatusOK
	authorized := g.authorized(r)
	if g.opts.Ready != nil {
		if err := g.opts.Ready(); err != nil {
			body["status"], code = "unavailable", http.StatusServiceUnavailable
			if authorized {
				body["reason"] = err.Error()
			}
		}
	}
	if g.opts.Health != nil && authorized {
		d := g.opts.Health()
		if m, ok := d.(map[string]any); ok {
			m["http"] = g.Stats()
		}
		body["details"] = d
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(body)
}

// hostAllowed matches a Host header against the allow-list: by host name
// alone ("localhost" allows every port) or by host and port.
func hostAllowed(allowed []string, host string) bool {
	if host == "" {
		return false
	}
	name := host
	if h, _, err := net.SplitHostPort(host); err == nil {
		name = h
		if strings.Contains(h, ":") {
			name = "[" + h + "]"
		}
	}
	for _, a := range allowed {
		if a == "*" || strings.EqualFold(a, host) || strings.EqualFold(a, name) {
			return true
		}
	}
	return false
}

// originAllowed matches an Origin against the allow-list; an entry ending
// in ":*" allows any port (or none).
func originAllowed(allowed []string, origin string) bool {
	u, err := url.Parse(origin)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return false
	}
	for _, a := range allowed {
		if a == "*" || strings.EqualFold(a, origin) {
			return true
		}
		if base, ok := strings.CutSuffix(a, ":*"); ok {
			au, err := url.Parse(base)
			if err != nil {
				continue
			}
			if strings.EqualFold(au.Scheme, u.Scheme) && strings.EqualFold(au.Hostname(), u.Hostname()) {
				return true
			}
		}
	}
	return false
}

// addProtocolVersionToNotification puts the protocol version of the
// Mcp-Protocol-Version header into the _meta of a 2026-07-28 notification
// that lacks it. The revision requires the version in the _meta of every
// request; some clients (the official Go SDK v1.8.0, for
// notifications/cancelled) leave it out of notifications, which mcp-go
// refuses with 400, and the client then drops its whole session. Requests
// are left alone: for them the rule is the spec's and mcp-go enforces it.
func addProtocolVersionToNotification(body []byte, version string) ([]byte, bool) {
	if bytes.Contains(body, []byte(mcp.MetaKeyProtocolVersion)) {
		return nil, false
	}
	var msg map[string]json.RawMessage
	if json.Unmarshal(body, &msg) != nil {
		return nil, false
	}
	if _, isRequest := msg["id"]; isRequest || msg["method"] == nil {
		return nil, false
	}
	// Decoding JSON null into a map leaves it nil: start from empty maps
	// and only accept objects (or null, or absent).
	var params, meta map[string]json.RawMessage
	if raw, ok := msg["params"]; ok && json.Unmarshal(raw, &params) != nil {
		return nil, false
	}
	if params == nil {
		params = map[string]json.RawMessage{}
	}
	if raw, ok := params["_meta"]; ok && json.Unmarshal(raw, &meta) != nil {
		return nil, false
	}
	if meta == nil {
		meta = map[string]json.RawMessage{}
	}
	if _, stated := meta[mcp.MetaKeyProtocolVersion]; stated {
		return nil, false // stated with an escape the test above does not see
	}
	meta[mcp.MetaKeyProtocolVersion], _ = json.Marshal(version)
	params["_meta"], _ = json.Marshal(meta)
	msg["params"], _ = json.Marshal(params)
	out, err := json.Marshal(msg)
	if err != nil {
		return nil, false
	}
	return out, true
}
