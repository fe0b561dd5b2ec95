// Package oauth makes toolgate an OAuth 2.1 resource server, as the MCP
// authorization specification (2025-11-25) asks of an HTTP MCP server: it
// checks JWT access tokens issued by an authorization server toolgate
// trusts, and describes itself with Protected Resource Metadata (RFC
// 9728) so that clients can find that server.
//
// Nothing here is home-made cryptography: signatures are checked by
// github.com/golang-jwt/jwt/v5 against the issuer's JSON Web Key Set,
// fetched, cached and refreshed by github.com/MicahParks/keyfunc/v3 (an
// unknown key id triggers a refresh at most once every 10 seconds, so a
// key rotation is picked up at once and a flood of made-up key ids costs
// nothing: beyond that rate they are refused within 100 ms). The checks: an allow-list of asymmetric algorithms (never
// "none", never an HMAC algorithm, which would let the public key act as
// a shared secret), the issuer, the audience (the resource URI, RFC
// 8707), and exp and nbf with 30 s of clock skew; exp is required.
package oauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/MicahParks/keyfunc/v3"
	"github.com/golang-jwt/jwt/v5"
	"golang.org/x/time/rate"
)

// Algorithms are the signature algorithms accepted.
var Algorithms = []string{"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"}

// Leeway is the clock skew tolerated on exp and nbf.
const Leeway = 30 * time.Second

// Options configure [New].
type Options struct {
	// Issuer is the authorization server's issuer identifier; tokens must
	// carry it as iss.
	Issuer string
	// Audience is this resource's URI (the MCP endpoint's URL); tokens
	// must name it in aud.
	Audience string
	// JWKSURL is where the issuer's keys are. If empty, it is discovered
	// from the issuer's metadata (RFC 8414, then OpenID Connect
	// discovery).
	JWKSURL string
	// HTTPClient fetches metadata and keys. If nil, a client with a 10 s
	// timeout.
	HTTPClient *http.Client
	// Logger receives key refresh failures.
	Logger *slog.Logger
	// Introspection, if its URL is set, checks tokens that are not JWTs
	// (RFC 7662).
	Introspection Introspection
	// DiscoveryRetry is the first wait before discovery is tried again
	// when the issuer could not be reached at start (doubling up to
	// [maxDiscoveryRetry]); 0 means 2 s.
	DiscoveryRetry time.Duration
}

// Verifier checks access tokens.
type Verifier struct {
	// keys are the issuer's keys, nil until the key set's URL is known:
	// an issuer that could not be reached at start is discovered later.
	keys   atomic.Pointer[keyfunc.Keyfunc]
	parser *jwt.Parser
	intro  *introspector // nil without an introspection endpoint
	// undiscovered says why the keys are not known yet (nil once they are).
	undiscovered atomic.Pointer[error]
}

// maxDiscoveryRetry bounds the wait between discovery attempts.
const maxDiscoveryRetry = time.Minute

// Principal is who a valid token speaks for.
type Principal struct {
	Subject  string
	ClientID string
	Scopes   []string
	// Claims are the token's other claims of simple values, for policy
	// (groups, email, ...).
	Claims map[string][]string
}

// New prepares a verifier: it discovers the key set's URL if needed and
// starts fetching the keys (refreshed hourly until ctx ends).
//
// An issuer that cannot be reached (no connection, a timeout, a 5xx
// answer) does not stop the gateway from starting: discovery is tried
// again in the background, with backoff, until it succeeds or ctx ends,
// and until then a token is refused as [ErrUnavailable] (503, not 401: the
// token may be good). A definite answer that is wrong (the metadata is not
// there, names another issuer, or no jwks_uri) is an error at once, as is
// an insecure URL: that is a configuration to fix, not an outage to wait
// out. A key set URL given (jwks_url) is never discovered; keyfunc fetches
// it and retries it the same way.
func New(ctx context.Context, o Options) (*Verifier, error) {
	if o.Issuer == "" || o.Audience == "" {
		return nil, errors.New("oauth: issuer and audience are required")
	}
	if o.HTTPClient == nil {
		o.HTTPClient = &http.Client{Timeout: 10 * time.Second}
	}
	o.HTTPClient = secureRedirects(o.HTTPClient)
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.DiscoveryRetry <= 0 {
		o.DiscoveryRetry = 2 * time.Second
	}
	v := &Verifier{parser: jwt.NewParser(
		jwt.WithValidMethods(Algorithms),
		jwt.WithIssuer(o.Issuer),
		jwt.WithAudience(o.Audience),
		jwt.WithLeeway(Leeway),
		jwt.WithExpirationRequired(),
	)}
	if o.Introspection.URL != "" {
		if err := secureURL(o.Introspection.URL); err != nil {
			return nil, fmt.Errorf("oauth: introspection_url: %w", err)
		}
		v.intro = newIntrospector(o.Introspection, o.Audience, o.Issuer, o.HTTPClient)
	}
	u, err := o.JWKSURL, error(nil)
	if u == "" {
		u, err = discoverJWKS(ctx, o.HTTPClient, o.Issuer)
	}
	if err == nil {
		if err := v.useKeys(ctx, o, u); err != nil {
			return nil, err
		}
		return v, nil
	}
	if !errors.Is(err, ErrUnavailable) {
		return nil, err
	}
	v.undiscovered.Store(&err)
	o.Logger.Warn("oauth: the issuer cannot be reached; serving, and refusing tokens as unavailable (503) until its keys are discovered", "issuer", o.Issuer, "err", err)
	go v.discover(ctx, o)
	return v, nil
}

// discover tries discovery again, with backoff, until it succeeds, fails
// for good (logged: tokens stay refused as unavailable, with that reason),
// or ctx ends.
func (v *Verifier) discover(ctx context.Context, o Options) {
	wait := o.DiscoveryRetry
	for {
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		u, err := discoverJWKS(ctx, o.HTTPClient, o.Issuer)
		if err == nil {
			err = v.useKeys(ctx, o, u)
		}
		if err == nil {
			o.Logger.Info("oauth: the issuer's keys discovered; tokens are checked", "issuer", o.Issuer, "jwks_url", u)
			return
		}
		v.undiscovered.Store(&err)
		if !errors.Is(err, ErrUnavailable) {
			o.Logger.Error("oauth: discovering the issuer's keys failed; tokens are refused until a restart with a configuration that works", "issuer", o.Issuer, "err", err)
			return
		}
		o.Logger.Debug("oauth: the issuer still cannot be reached", "issuer", o.Issuer, "err", err)
		wait = min(2*wait, maxDiscoveryRetry)
	}
}

// useKeys starts fetching the key set at u (refreshed until ctx ends) and
// puts the keys in force.
func (v *Verifier) useKeys(ctx context.Context, o Options, u string) error {
	if err := secureURL(u); err != nil {
		return fmt.Errorf("oauth: jwks_url: %w", err)
	}
	log := o.Logger
	kf, err := keyfunc.NewDefaultOverrideCtx(ctx, []string{u}, keyfunc.Override{
		Client:            keySetClient(o.HTTPClient),
		RefreshUnknownKID: rate.NewLimiter(rate.Every(10*time.Second), 1),
		// A token with an unknown kid beyond that rate is refused at once,
		// not held: a flood of made-up kids must not tie up requests.
		RateLimitWaitMax: 100 * time.Millisecond,
		RefreshErrorHandlerFunc: func(u string) func(context.Context, error) {
			return func(_ context.Context, err error) {
				log.Warn("oauth: cannot refresh the issuer's keys", "url", u, "err", err)
			}
		},
	})
	if err != nil {
		return fmt.Errorf("oauth: the issuer's keys at %s: %w", u, err)
	}
	v.keys.Store(&kf)
	v.undiscovered.Store(nil)
	return nil
}

// Bounds on fetching the issuer's key set.
const (
	keySetTimeout = 10 * time.Second // when the client sets none
	// maxResponseBytes bounds every answer read from the authorization
	// server: its metadata, its key set, an introspection.
	maxResponseBytes = 1 << 20
)

// keySetClient is hc for fetching the key set. keyfunc runs a refresh for
// an unknown kid under the context it waits for its rate limit with (100
// ms, RateLimitWaitMax): the fetch itself must not end with that wait, or a
// key set that takes longer to fetch (any remote server) is never fetched
// and a rotated key is refused until the hourly refresh. Each fetch is
// detached from the caller's context and bounded on its own instead: by
// the client's timeout (keySetTimeout if it sets none), and its body by
// maxResponseBytes.
func keySetClient(hc *http.Client) *http.Client {
	c := *hc
	base := c.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	timeout := c.Timeout
	if timeout == 0 {
		timeout = keySetTimeout
	}
	c.Transport = keySetTransport{base, timeout}
	c.Timeout = 0 // keySetTransport's own, which outlives the caller's wait
	return &c
}

type keySetTransport struct {
	base    http.RoundTripper
	timeout time.Duration
}

func (t keySetTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), t.timeout)
	resp, err := t.base.RoundTrip(r.WithContext(ctx))
	if err != nil {
		cancel()
		return nil, err
	}
	resp.Body = cappedBody{http.MaxBytesReader(nil, resp.Body, maxResponseBytes), cancel}
	return resp, nil
}

type cappedBody struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (b cappedBody) Close() error {
	err := b.ReadCloser.Close()
	b.cancel()
	return err
}

// Verify checks a token and returns who it speaks for. The error says why
// a token is refused, without echoing it.
func (v *Verifier) Verify(ctx context.Context, token string) (Principal, error) {
	if v.intro != nil && !isJWT(token) {
		return v.intro.verify(ctx, token)
	}
	kf := v.keys.Load()
	if kf == nil {
		// A token that is no JWT at all is refused as invalid (401) even
		// now: no key would make it good.
		if _, _, err := v.parser.ParseUnverified(token, jwt.MapClaims{}); err != nil {
			return Principal{}, fmt.Errorf("invalid access token: %w", err)
		}
		why := errors.New("not discovered yet") // useKeys is between its two stores
		if e := v.undiscovered.Load(); e != nil {
			why = *e
		}
		if !errors.Is(why, ErrUnavailable) { // discovery failed for good: still not the token's fault
			why = fmt.Errorf("%w: %w", ErrUnavailable, why)
		}
		return Principal{}, fmt.Errorf("the issuer's keys are not known yet: %w", why)
	}
	c := jwt.MapClaims{}
	if _, err := v.parser.ParseWithClaims(token, c, (*kf).KeyfuncCtx(ctx)); err != nil {
		return Principal{}, fmt.Errorf("invalid access token: %w", err)
	}
	p := principalOf(c)
	if p.Subject == "" {
		return Principal{}, errors.New("invalid access token: no subject")
	}
	return p, nil
}

// principalOf reads a principal from a token's claims (or an
// introspection response, which uses the same names): sub, client_id (else
// azp), scope (and scp, a string or a list, as some issuers send), and the
// other claims whose values are strings, numbers, booleans or lists of
// them, bounded: at most [MaxClaims] claims of [MaxClaimValues] values of
// [MaxClaimValueLen] bytes each (longer values are dropped).
func principalOf(c map[string]any) Principal {
	str := func(k string) string { s, _ := c[k].(string); return s }
	p := Principal{Subject: str("sub"), ClientID: str("client_id")}
	if p.ClientID == "" {
		p.ClientID = str("azp")
	}
	p.Scopes = strings.Fields(str("scope"))
	for _, s := range claimValues(c["scp"]) {
		p.Scopes = append(p.Scopes, strings.Fields(s)...)
	}
	names := make([]string, 0, len(c))
	for k := range c {
		if !registered[k] {
			names = append(names, k)
		}
	}
	slices.Sort(names)
	for _, k := range names {
		if len(p.Claims) == MaxClaims {
			break
		}
		if vs := claimValues(c[k]); len(vs) > 0 && len(k) <= MaxClaimValueLen {
			if p.Claims == nil {
				p.Claims = map[string][]string{}
			}
			p.Claims[k] = vs
		}
	}
	return p
}

// Bounds on the claims kept of a token.
const (
	MaxClaims        = 32
	MaxClaimValues   = 64
	MaxClaimValueLen = 256
)

// registered are the claims a [Principal] has fields for, or that say
// nothing of the caller.
var registered = map[string]bool{"iss": true, "sub": true, "aud": true, "exp": true, "nbf": true, "iat": true, "jti": true,
	"scope": true, "scp": true, "client_id": true, "azp": true, "active": true, "token_type": true}

// claimValues are a claim's values as strings: a string, number or
// boolean is one value, a list gives its elements of those kinds.
func claimValues(v any) []string {
	one := func(v any) (string, bool) {
		switch x := v.(type) {
		case string:
			return x, len(x) <= MaxClaimValueLen
		case bool:
			return fmt.Sprint(x), true
		case float64:
			return strconv.FormatFloat(x, 'f', -1, 64), true
		case json.Number:
			return x.String(), true
		}
		return "", false
	}
	if list, ok := v.([]any); ok {
		var out []string
		for _, x := range list {
			if s, ok := one(x); ok && len(out) < MaxClaimValues {
				out = append(out, s)
			}
		}
		return out
	}
	if s, ok := one(v); ok {
		return []string{s}
	}
	return nil
}

// discoverJWKS reads the issuer's metadata for its jwks_uri: RFC 8414
// first, then OpenID Connect discovery.
func discoverJWKS(ctx context.Context, hc *http.Client, issuer string) (string, error) {
	if err := secureURL(issuer); err != nil {
		return "", fmt.Errorf("oauth: issuer: %w", err)
	}
	u, err := url.Parse(issuer)
	if err != nil {
		return "", fmt.Errorf("oauth: issuer: %w", err)
	}
	path := strings.TrimSuffix(u.Path, "/")
	candidates := []string{
		u.Scheme + "://" + u.Host + "/.well-known/oauth-authorization-server" + path,
		strings.TrimSuffix(issuer, "/") + "/.well-known/openid-configuration",
	}
	var errs []error
	// A candidate that gave no answer (or a 5xx) may be the one that
	// works once the server is back: only definite answers from all of
	// them (not found, not metadata) make a configuration to fix.
	unreachable := false
	for _, c := range candidates {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, c, nil)
		if err != nil {
			return "", err
		}
		resp, err := hc.Do(req)
		if err != nil {
			errs = append(errs, err)
			unreachable = unreachable || noAnswer(err)
			continue
		}
		if resp.StatusCode >= 500 {
			resp.Body.Close()
			errs = append(errs, fmt.Errorf("%s: HTTP %d", c, resp.StatusCode))
			unreachable = true
			continue
		}
		var meta struct {
			Issuer  string `json:"issuer"`
			JWKSURI string `json:"jwks_uri"`
		}
		err = json.NewDecoder(http.MaxBytesReader(nil, resp.Body, maxResponseBytes)).Decode(&meta)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || err != nil || meta.JWKSURI == "" {
			errs = append(errs, fmt.Errorf("%s: HTTP %d, jwks_uri %q (%v)", c, resp.StatusCode, meta.JWKSURI, err))
			continue
		}
		if meta.Issuer != "" && strings.TrimSuffix(meta.Issuer, "/") != strings.TrimSuffix(issuer, "/") {
			return "", fmt.Errorf("oauth: the metadata at %s names issuer %q, not %q", c, meta.Issuer, issuer)
		}
		return meta.JWKSURI, nil
	}
	if unreachable {
		return "", fmt.Errorf("oauth: cannot discover the issuer's keys: %w: %w", ErrUnavailable, errors.Join(errs...))
	}
	return "", fmt.Errorf("oauth: cannot discover the issuer's keys (set http.auth.oauth.jwks_url): %w", errors.Join(errs...))
}

// secureRedirects is hc following only redirects that secureURL accepts:
// the metadata, key set and introspection URLs must be https, and a
// redirect must not take a request (an introspection's client
// credentials, which Go keeps on a redirect to the same host) to plain
// http off loopback.
func secureRedirects(hc *http.Client) *http.Client {
	c := *hc
	next := c.CheckRedirect
	c.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if err := secureURL(req.URL.String()); err != nil {
			return fmt.Errorf("oauth: refusing a redirect: %w", err)
		}
		if next != nil {
			return next(req, via)
		}
		if len(via) >= 10 {
			return errors.New("oauth: stopped after 10 redirects")
		}
		return nil
	}
	return &c
}

// noAnswer says whether a request failed for want of an answer (no
// connection, a reset, a timeout) rather than for what came back (a
// redirect refused, a certificate that does not verify).
func noAnswer(err error) bool {
	var op *net.OpError
	var ne net.Error
	return errors.As(err, &op) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout()
}

// secureURL accepts https URLs, and http ones on loopback only.
func secureURL(s string) error {
	u, err := url.Parse(s)
	if err != nil || u.Host == "" {
		return fmt.Errorf("%q is not a URL", s)
	}
	if u.Scheme == "https" {
		return nil
	}
	host := u.Hostname()
	if ip := net.ParseIP(host); u.Scheme == "http" && (host == "localhost" || ip != nil && ip.IsLoopback()) {
		return nil
	}
	return fmt.Errorf("%q must be https (http only on loopback)", s)
}

// ResourceMetadata is the Protected Resource Metadata document (RFC 9728)
// of the MCP endpoint at resource.
func ResourceMetadata(resource, issuer string, scopes []string) map[string]any {
	m := map[string]any{
		"resource":                 resource,
		"authorization_servers":    []string{issuer},
		"bearer_methods_supported": []string{"header"},
	}
	if len(scopes) > 0 {
		m["scopes_supported"] = scopes
	}
	return m
}
