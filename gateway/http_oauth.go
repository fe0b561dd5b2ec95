package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
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
// caller in records ("sub:alice"); scopes are the token's.
type TokenVerifier interface {
	Verify(ctx context.Context, token string) (identity string, scopes []string, err error)
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
	if errors.Is(err, errInsufficientScope) {
		scope := strings.Join(g.opts.OAuth.RequiredScopes, " ")
		w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer error="insufficient_scope", scope=%q, resource_metadata=%q`, scope, meta))
		httpError(w, http.StatusForbidden, fmt.Sprintf("the access token lacks the scope %q", scope))
		return
	}
	if r.Header.Get("Authorization") == "" {
		w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer resource_metadata=%q`, meta))
	} else {
		w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer error="invalid_token", resource_metadata=%q`, meta))
	}
	httpError(w, http.StatusUnauthorized, "missing or invalid access token")
}

// verifyOAuth checks token with the verifier and the required scopes.
func (g *httpGuard) verifyOAuth(ctx context.Context, token string) (string, []string, error) {
	identity, scopes, err := g.opts.OAuth.Verifier.Verify(ctx, token)
	if err != nil {
		return "", nil, err
	}
	for _, s := range g.opts.OAuth.RequiredScopes {
		found := false
		for _, have := range scopes {
			found = found || have == s
		}
		if !found {
			return "", nil, errInsufficientScope
		}
	}
	return identity, scopes, nil
}
