package gateway

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestOAuthChallenge: a refused token gets 401 invalid_token, a token
// without the scopes 403, and a token that could not be checked because
// the authorization server did not answer 503 with Retry-After (a 401
// would tell the client to discard a token that may well be valid).
func TestOAuthChallenge(t *testing.T) {
	g := &httpGuard{opts: HTTPOptions{Path: "/mcp", OAuth: &OAuthOptions{RequiredScopes: []string{"tools:call"}}}}
	for _, c := range []struct {
		name       string
		err        error
		status     int
		retryAfter bool
	}{
		{"invalid", fmt.Errorf("invalid access token: not active"), http.StatusUnauthorized, false},
		{"scope", errInsufficientScope, http.StatusForbidden, false},
		{"unavailable", fmt.Errorf("%w: token introspection: HTTP 503", ErrAuthUnavailable), http.StatusServiceUnavailable, true},
	} {
		w := httptest.NewRecorder()
		r := httptest.NewRequest(http.MethodPost, "/mcp", nil)
		r.Header.Set("Authorization", "Bearer opaque")
		g.challenge(w, r, c.err)
		if w.Code != c.status || (w.Header().Get("Retry-After") != "") != c.retryAfter {
			t.Errorf("%s: %d, Retry-After %q; want %d", c.name, w.Code, w.Header().Get("Retry-After"), c.status)
		}
	}
}

// TestOAuthChallengeNamesScopes: a 401 names the required scopes in its
// challenge (MCP authorization 2025-11-25: servers SHOULD include scope,
// and clients MUST request the challenge's scopes before falling back to
// scopes_supported), beside resource_metadata; without required scopes it
// names none.
func TestOAuthChallengeNamesScopes(t *testing.T) {
	for _, c := range []struct {
		name, auth, scopes, want string
	}{
		{"no token", "", "tools:call tools:read", `Bearer resource_metadata="http://example.com/.well-known/oauth-protected-resource/mcp", scope="tools:call tools:read"`},
		{"invalid token", "Bearer junk", "tools:call", `Bearer error="invalid_token", resource_metadata="http://example.com/.well-known/oauth-protected-resource/mcp", scope="tools:call"`},
		{"no required scopes", "", "", `Bearer resource_metadata="http://example.com/.well-known/oauth-protected-resource/mcp"`},
	} {
		var req []string
		if c.scopes != "" {
			req = strings.Fields(c.scopes)
		}
		g := &httpGuard{opts: HTTPOptions{Path: "/mcp", OAuth: &OAuthOptions{RequiredScopes: req}}}
		w := httptest.NewRecorder()
		r := httptest.NewRequest(http.MethodPost, "/mcp", nil)
		if c.auth != "" {
			r.Header.Set("Authorization", c.auth)
		}
		g.challenge(w, r, errors.New("missing or invalid bearer token"))
		if got := w.Header().Get("WWW-Authenticate"); w.Code != http.StatusUnauthorized || got != c.want {
			t.Errorf("%s: %d %s\nwant 401 %s", c.name, w.Code, got, c.want)
		}
	}
}
