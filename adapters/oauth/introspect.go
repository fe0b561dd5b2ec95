package oauth

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
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
const (
	introspectCacheTTL = 30 * time.Second
	introspectCacheMax = 10000
)

// Introspection configures RFC 7662 token introspection.
type Introspection struct {
	URL          string
	ClientID     string
	ClientSecret string
}

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

	p, exp, err := in.ask(ctx, token)
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
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
		return Principal{}, time.Time{}, fmt.Errorf("token introspection: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return Principal{}, time.Time{}, fmt.Errorf("token introspection: HTTP %d", resp.StatusCode)
	}
	body, err := io.ReadAll(http.MaxBytesReader(nil, resp.Body, 1<<20))
	if err != nil {
		return Principal{}, time.Time{}, fmt.Errorf("token introspection: %w", err)
	}
	var r struct {
		Active bool   `json:"active"`
		Sub    string `json:"sub"`
		Iss    string `json:"iss"`
		Aud    any    `json:"aud"`
		Exp    int64  `json:"exp"`
		Nbf    int64  `json:"nbf"`
	}
	var all map[string]any
	if err := json.Unmarshal(body, &r); err != nil {
		return Principal{}, time.Time{}, fmt.Errorf("token introspection: %w", err)
	}
	if err := json.Unmarshal(body, &all); err != nil {
		return Principal{}, time.Time{}, fmt.Errorf("token introspection: %w", err)
	}
	now := time.Now()
	var aud []string
	switch a := r.Aud.(type) {
	case string:
		aud = []string{a}
	case []any:
		for _, x := range a {
			if s, ok := x.(string); ok {
				aud = append(aud, s)
			}
		}
	}
	var exp time.Time
	if r.Exp != 0 {
		exp = time.Unix(r.Exp, 0)
	}
	switch {
	case !r.Active:
		return Principal{}, time.Time{}, errors.New("invalid access token: not active")
	case r.Sub == "":
		return Principal{}, time.Time{}, errors.New("invalid access token: no subject")
	case r.Iss != "" && strings.TrimSuffix(r.Iss, "/") != strings.TrimSuffix(in.issuer, "/"):
		return Principal{}, time.Time{}, errors.New("invalid access token: another issuer")
	case len(aud) > 0 && !slices.Contains(aud, in.audience):
		return Principal{}, time.Time{}, errors.New("invalid access token: another audience")
	case !exp.IsZero() && now.After(exp.Add(Leeway)):
		return Principal{}, time.Time{}, errors.New("invalid access token: expired")
	case r.Nbf != 0 && now.Add(Leeway).Before(time.Unix(r.Nbf, 0)):
		return Principal{}, time.Time{}, errors.New("invalid access token: not yet valid")
	}
	return principalOf(all), exp, nil
}
