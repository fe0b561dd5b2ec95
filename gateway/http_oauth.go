package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
)

// OAuth on the HTTP transport (MCP authorization, 2025-11-25): a request
// whose bearer token is not one of the static tokens is checked as an
// OAuth access token by the [TokenVerifier]. A missing or invalid token
// gets 401 with a WWW-Authenticate challenge that points to the Protected
// Resource Metadata (RFC 9728), served at /.well-known/oauth-protected-resource
// and at the same path followed by the MCP endpoint's path; a valid token
// without the required scopes gets 403 insufficient_scope naming them.
// The client's token is never passed on to upstreams.

// TokenVerifier checks an OAuth access token. The identity names the
// caller in records ("sub:alice"). An error wrapping [ErrAuthUnavailable]
// means the token could not be checked now (the authorization server did
// not answer): the request gets 503 with Retry-After, not the 401 that
// would tell the client to throw its token away.
type TokenVerifier interface {
	Verify(ctx context.Context, token string) (identity string, p *Principal, err error)
}

// ErrAuthUnavailable is a token a [TokenVerifier] could not check for
// want of the authorization server.
var ErrAuthUnavailable = errors.New("the authorization server could not be reached")

// authRetryAfter is the Retry-After, in seconds, of a 503 for
// [ErrAuthUnavailable].
const authRetryAfter = "5"

// Principal is what a verified OAuth access token says of its caller,
// beside the subject (which is the call's identity, "sub:alice").
type Principal struct {
	ClientID string
	Scopes   []string
	// Claims are the token's other claims of simple values (strings,
	// numbers, booleans, lists of them) as text, such as groups:
	// policy.identities can match them.
	Claims map[string][]string
	// Recorded names the claims that records keep
	// (http.auth.oauth.record_claims).
	Recorded []string
}

// HasScope reports whether the token grants scope s.
func (p *Principal) HasScope(s string) bool {
	return p != nil && slices.Contains(p.Scopes, s)
}

// HasClaim reports whether the token's claim name has the value v (is v,
// or is a list holding v).
func (p *Principal) HasClaim(name, v string) bool {
	return p != nil && slices.Contains(p.Claims[name], v)
}

// PrincipalRecord is what records keep of a [Principal].
type PrincipalRecord struct {
	ClientID string              `json:"client_id,omitempty"`
	Scopes   []string            `json:"scopes,omitempty"`
	Claims   map[string][]string `json:"claims,omitempty"`
}

// Record is what records keep of p: the client id, the scopes and the
// recorded claims (nil for a nil p).
func (p *Principal) Record() *PrincipalRecord {
	if p == nil {
		return nil
	}
	return &PrincipalRecord{ClientID: p.ClientID, Scopes: p.Scopes, Claims: p.recordedClaims()}
}

// recordedClaims are the claims that records keep, nil when none.
func (p *Principal) recordedClaims() map[string][]string {
	if p == nil || len(p.Recorded) == 0 {
		return nil
	}
	var out map[string][]string
	for _, name := range p.Recorded {
		if v, ok := p.Claims[name]; ok {
			if out == nil {
				out = map[string][]string{}
			}
			out[name] = v
		}
	}
	return out
}

// OAuthOptions configure OAuth on the HTTP transport.
type OAuthOptions struct {
	Verifier TokenVerifier
	// RequiredScopes must all be granted to the token (403 otherwise).
	RequiredScopes []string
	// Metadata is the Protected Resource Metadata document.
	Metadata map[string]any
}

// errInsufficientScope is a valid token that lacks required scopes.
var errInsufficientScope = errors.New("insufficient scope")

// metadataPath is where the Protected Resource Metadata is served.
const metadataPath = "/.well-known/oauth-protected-resource"

// serveMetadata serves the Protected Resource Metadata document.
func (g *httpGuard) serveMetadata(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "max-age=3600")
	_ = json.NewEncoder(w).Encode(g.opts.OAuth.Metadata)
}

// challenge writes the 401 or 403 of a request that OAuth refuses.
func (g *httpGuard) challenge(w http.ResponseWriter, r *http.Request, err error) {
	scheme := "http"
	if r.TLS != nil || r.Header.Get("X-Forwarded-Proto") == "https" {
		scheme = "https"
	}
	meta := fmt.Sprintf("%s://%s%s%s", scheme, r.Host, metadataPath, g.opts.Path)
	if errors.Is(err, ErrAuthUnavailable) {
		g.count(refusedAuthUnavailable)
		w.Header().Set("Retry-After", authRetryAfter)
		httpError(w, http.StatusServiceUnavailable, "the access token cannot be checked now: the authorization server could not be reached; retry later")
		return
	}
	if errors.Is(err, errInsufficientScope) {
		g.count(refusedScope)
		scope := strings.Join(g.opts.OAuth.RequiredScopes, " ")
		w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer error="insufficient_scope", scope=%q, resource_metadata=%q`, scope, meta))
		httpError(w, http.StatusForbidden, fmt.Sprintf("the access token lacks the scope %q", scope))
		return
	}
	// The required scopes are named on a 401 too: the MCP authorization
	// specification asks servers to, and clients request the challenge's
	// scopes first (scopes_supported only when it names none).
	params := fmt.Sprintf(`resource_metadata=%q`, meta)
	if scope := strings.Join(g.opts.OAuth.RequiredScopes, " "); scope != "" {
		params += fmt.Sprintf(`, scope=%q`, scope)
	}
	if r.Header.Get("Authorization") == "" {
		w.Header().Set("WWW-Authenticate", "Bearer "+params)
	} else {
		w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token", `+params)
	}
	g.count(refusedUnauthorized)
	// What was wrong: no token, another scheme, or the verifier's reason
	// (expired, another audience, an unknown key), which quotes no token.
	httpError(w, http.StatusUnauthorized, err.Error())
}

// verifyOAuth checks token with the verifier and the required scopes.
func (g *httpGuard) verifyOAuth(ctx context.Context, token string) (string, *Principal, error) {
	identity, p, err := g.opts.OAuth.Verifier.Verify(ctx, token)
	if err != nil {
		return "", nil, err
	}
	for _, s := range g.opts.OAuth.RequiredScopes {
		if !p.HasScope(s) {
			return "", nil, errInsufficientScope
		}
	}
	return identity, p, nil
}
