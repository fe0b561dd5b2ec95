package gateway

import (
	"fmt"
	"net/http"
	"net/http/httptest"
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
