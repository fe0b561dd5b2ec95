package oauth

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"
)

// Opaque (non-JWT) access tokens are checked by RFC 7662 introspection
// when an introspection endpoint is configured: the authorization server
// says whether the token is active, for whom, with which scopes, for
// which audience. Answers are cached for introspectCacheTTL (keyed by the
// token's SHA-256, never the token), at most introspectCacheMax of them,
// so that a session's requests do not each cost a round trip.
//
// Only answers are cached: an endpoint that cannot be reached, answers
// other than 200 or with something other than JSON says nothing about the
// token ([ErrUnavailable]), and the next request asks again, so a valid
// token works as soon as the endpoint is back. Failures are not cached even
// briefly: a short failure cache would not bound the load on a failing
// endpoint (anyone can send a new made-up token per request, each a cache
// miss), only delay the recovery of valid tokens.
//
// At most introspectMaxInFlight tokens are being asked about at once: a
// flood of made-up opaque tokens (each a cache miss) must not tie up a
// goroutine per request for the endpoint's timeout, nor pass the flood on
// to the authorization server. One more is [ErrUnavailable] at once (503,
// retry); tokens in the cache are not affected.
const (
	introspectCacheTTL    = 30 * time.Second
	introspectCacheMax    = 10000
	introspectMaxInFlight = 32
)

// Introspection configures RFC 7662 token introspection.
type Introspection struct {
	URL          string
	ClientID     string
	ClientSecret string
}

// ErrUnavailable is a token that could not be checked: the introspection
// endpoint did not give an answer. It is not a verdict on the token.
var ErrUnavailable = errors.New("the authorization server could not be reached")

type cached struct {
	p       Principal
	err     error
	expires time.Time
}

type introspector struct {
	cfg      Introspection
	audience string
	issuer   string
	hc       *http.Client

	mu    sync.Mutex
	cache map[[32]byte]cached
	slots chan struct{} // introspection requests under way (introspectMaxInFlight)
}

// newIntrospector is an introspector for cfg, with an empty cache.
func newIntrospector(cfg Introspection, audience, issuer string, hc *http.Client) *introspector {
	return &introspector{cfg: cfg, audience: audience, issuer: issuer, hc: hc,
		cache: map[[32]byte]cached{}, slots: make(chan struct{}, introspectMaxInFlight)}
}

// isJWT reports whether a token has the shape of a JWS compact JWT.
func isJWT(token string) bool { return strings.Count(token, ".") == 2 }

func (in *introspector) verify(ctx context.Context, token string) (Principal, error) {
	key := sha256.Sum256([]byte(token))
	now := time.Now()
	in.mu.Lock()
	if c, ok := in.cache[key]; ok && now.Before(c.expires) {
		in.mu.Unlock()
		return c.p, c.err
	}
	in.mu.Unlock()

	select {
	case in.slots <- struct{}{}:
	default:
		return Principal{}, fmt.Errorf("token introspection: %w: %d tokens are being checked already", ErrUnavailable, introspectMaxInFlight)
	}
	p, exp, err := in.ask(ctx, token)
	<-in.slots
	if errors.Is(err, ErrUnavailable) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return Principal{}, err // not an answer about the token: not cached
	}
	until := now.Add(introspectCacheTTL)
	if err == nil && !exp.IsZero() && exp.Before(until) {
		until = exp
	}
	in.mu.Lock()
	if len(in.cache) >= introspectCacheMax { // drop the expired; if none, start over
		for k, c := range in.cache {
			if now.After(c.expires) {
				delete(in.cache, k)
			}
		}
		if len(in.cache) >= introspectCacheMax {
			clear(in.cache)
		}
	}
	in.cache[key] = cached{p, err, until}
	in.mu.Unlock()
	return p, err
}

// ask posts the token to the introspection endpoint.
func (in *introspector) ask(ctx context.Context, token string) (Principal, time.Time, error) {
	form := url.Values{"token": {token}, "token_type_hint": {"access_token"}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, in.cfg.URL, strings.NewReader(form.Encode()))
	if err != nil {
		return Principal{}, time.Time{}, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	if in.cfg.ClientID != "" {
		req.SetBasicAuth(url.QueryEscape(in.cfg.ClientID), url.QueryEscape(in.cfg.ClientSecret))
	}
	resp, err := in.hc.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return Principal{}, time.Time{}, ctx.Err() // the request's own end
		}
		return Principal{}, time.Time{}, fmt.Errorf("token introspection: %w: %w", ErrUnavailable, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return Principal{}, time.Time{}, fmt.Errorf("token introspection: %w: HTTP %d", ErrUnavailable, resp.StatusCode)
	}
	var r map[string]any
	if err := json.NewDecoder(http.MaxBytesReader(nil, resp.Body, maxResponseBytes)).Decode(&r); err != nil {
		return Principal{}, time.Time{}, fmt.Errorf("token introspection: %w: %w", ErrUnavailable, err)
	}
	p := principalOf(r)
	iss, _ := r["iss"].(string)
	aud := claimValues(r["aud"])
	unix := func(k string) time.Time { // exp, nbf: seconds since the epoch
		if f, ok := r[k].(float64); ok && f != 0 {
			return time.Unix(int64(f), 0)
		}
		return time.Time{}
	}
	exp, nbf := unix("exp"), unix("nbf")
	now := time.Now()
	switch {
	case r["active"] != true:
		return Principal{}, time.Time{}, errors.New("invalid access token: not active")
	case p.Subject == "":
		return Principal{}, time.Time{}, errors.New("invalid access token: no subject")
	case iss != "" && strings.TrimSuffix(iss, "/") != strings.TrimSuffix(in.issuer, "/"):
		return Principal{}, time.Time{}, errors.New("invalid access token: another issuer")
	case len(aud) > 0 && !slices.Contains(aud, in.audience):
		return Principal{}, time.Time{}, errors.New("invalid access token: another audience")
	case !exp.IsZero() && now.After(exp.Add(Leeway)):
		return Principal{}, time.Time{}, errors.New("invalid access token: expired")
	case !nbf.IsZero() && now.Add(Leeway).Before(nbf):
		return Principal{}, time.Time{}, errors.New("invalid access token: not yet valid")
	}
	return p, exp, nil
}
