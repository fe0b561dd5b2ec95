package e2e

import (
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"math/big"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// TestOAuthResourceServer (issue 14): toolgate as an OAuth 2.1 resource
// server in front of a loopback authorization server: 401 with the
// Protected Resource Metadata's address, the metadata itself, 403
// insufficient_scope, and a valid token's subject as the caller's identity
// in the records.
func TestOAuthResourceServer(t *testing.T) {
	t.Parallel()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	as := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode(map[string]any{"keys": []any{map[string]any{"kty": "RSA", "kid": "k1", "alg": "RS256", "use": "sig",
			"n": base64.RawURLEncoding.EncodeToString(key.N.Bytes()),
			"e": base64.RawURLEncoding.EncodeToString(big.NewInt(int64(key.E)).Bytes())}}})
	}))
	defer as.Close()
	const aud = "http://127.0.0.1/toolgate-test/mcp"
	e := newEnv(t,
		set("http.auth.oauth.issuer", as.URL),
		set("http.auth.oauth.audience", aud),
		set("http.auth.oauth.jwks_url", as.URL+"/jwks"),
		set("http.auth.oauth.scopes_supported", []string{"tools:call"}),
		set("http.auth.oauth.required_scopes", []string{"tools:call"}),
		set("http.auth.oauth.record_claims", []string{"groups"}),
		set("profiles", map[string]any{"readers": map[string]any{"tools": []string{"echo"}}}),
		set("policy.identities", []any{
			map[string]any{"match": map[string]any{"scope": "tools:read"}, "tools": map[string]any{"deny": []string{"sleep"}}},
			map[string]any{"match": map[string]any{"claim": map[string]any{"groups": "guests"}}, "profile": "readers"},
		}),
	)
	s := e.StartHTTP(t)
	if !waitFor(10*time.Second, func() bool { return strings.Contains(s.Stderr(), "auth=oauth") }) {
		t.Errorf("the start line does not say the transport takes OAuth tokens:\n%s", s.Stderr())
	}
	signed := func(sub, scope string, groups ...string) string {
		claims := jwt.MapClaims{"iss": as.URL, "aud": aud, "sub": sub, "client_id": "e2e-client",
			"scope": scope, "exp": time.Now().Add(time.Hour).Unix(), "email": "not-recorded@example.com"}
		if groups != nil {
			claims["groups"] = groups
		}
		tok := jwt.NewWithClaims(jwt.SigningMethodRS256, claims)
		tok.Header["kid"] = "k1"
		str, err := tok.SignedString(key)
		if err != nil {
			t.Fatal(err)
		}
		return str
	}
	token := func(scope string) string { return signed("alice", scope) }

	code, h, body := post(t, s.URL, initializeBody, nil)
	meta := s.Base + "/.well-known/oauth-protected-resource/mcp"
	if code != http.StatusUnauthorized || !strings.Contains(h.Get("WWW-Authenticate"), `resource_metadata="`+meta+`"`) || !strings.Contains(body, "no bearer token") {
		t.Errorf("no token: %d %q %s", code, h.Get("WWW-Authenticate"), body)
	}
	resp, err := httpClient.Get(meta)
	if err != nil {
		t.Fatal(err)
	}
	var prm map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&prm)
	resp.Body.Close()
	if prm["resource"] != aud || !strings.Contains(mustJSON(prm["authorization_servers"]), as.URL) {
		t.Errorf("protected resource metadata: %v", prm)
	}
	code, h, _ = post(t, s.URL, initializeBody, map[string]string{"Authorization": "Bearer " + token("tools:read")})
	if code != http.StatusForbidden || !strings.Contains(h.Get("WWW-Authenticate"), `error="insufficient_scope"`) || !strings.Contains(h.Get("WWW-Authenticate"), `scope="tools:call"`) {
		t.Errorf("a token without the scope: %d %q", code, h.Get("WWW-Authenticate"))
	}
	code, h, _ = post(t, s.URL, initializeBody, map[string]string{"Authorization": "Bearer " + token("tools:call")[:40] + "x"})
	if code != http.StatusUnauthorized || !strings.Contains(h.Get("WWW-Authenticate"), `error="invalid_token"`) {
		t.Errorf("a broken token: %d %q", code, h.Get("WWW-Authenticate"))
	}
	// An expired token's 401 says so: the client knows to get a new one.
	expired := jwt.NewWithClaims(jwt.SigningMethodRS256, jwt.MapClaims{"iss": as.URL, "aud": aud, "sub": "alice",
		"scope": "tools:call", "exp": time.Now().Add(-time.Hour).Unix()})
	expired.Header["kid"] = "k1"
	old, err := expired.SignedString(key)
	if err != nil {
		t.Fatal(err)
	}
	code, h, body = post(t, s.URL, initializeBody, map[string]string{"Authorization": "Bearer " + old})
	if code != http.StatusUnauthorized || !strings.Contains(h.Get("WWW-Authenticate"), `error="invalid_token"`) || !strings.Contains(body, "invalid access token") || !strings.Contains(body, "expired") {
		t.Errorf("an expired token: %d %q %s", code, h.Get("WWW-Authenticate"), body)
	}

	auth := map[string]string{"Authorization": "Bearer " + token("tools:call tools:read")}
	id := initSession(t, s, auth)
	hdr := sessionHeader(id)
	hdr["Authorization"] = auth["Authorization"]
	if code, _, body := post(t, s.URL, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{"text":"as alice"}}}`, hdr); code != http.StatusOK || !strings.Contains(body, "as alice") {
		t.Fatalf("a call with a good token: %d %s", code, body)
	}
	// A rule for the token's scope applies to its calls.
	if code, _, body := post(t, s.URL, `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"sleep","arguments":{"ms":1}}}`, hdr); code != http.StatusOK || !strings.Contains(body, "policy.identities[0].tools.deny") {
		t.Errorf("a call a scope rule denies: %d %s", code, body)
	}
	rec := awaitRecord(10*time.Second, func() []ToolRecord { return e.liveTools(t) }, "echo")
	if rec == nil || rec.Identity != "sub:alice" || rec.Principal == nil || rec.Principal.ClientID != "e2e-client" ||
		!slices.Equal(rec.Principal.Scopes, []string{"tools:call", "tools:read"}) || rec.Principal.Claims != nil {
		t.Errorf("the record's identity and principal: %+v", rec)
	}

	// A caller in group guests is confined to profile readers on the plain
	// endpoint: it lists and calls echo only, and its records keep the
	// groups claim (http.auth.oauth.record_claims) and not the email.
	guest := s.Connect(t, era2025, &ConnectOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + signed("gina", "tools:call", "staff", "guests")}}})
	if lt, err := guest.ListTools(t.Context(), nil); err != nil || len(lt.Tools) != 1 || lt.Tools[0].Name != "echo" {
		t.Errorf("the guest's tools/list: %v %v", lt, err)
	}
	if _, err := guest.CallTool(callCtx(t), &mcp.CallToolParams{Name: "sleep", Arguments: map[string]any{"ms": 1}}); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Errorf("the guest calling a tool outside its profile: %v", err)
	}
	if res := call(t, guest, "echo", map[string]any{"text": "as gina"}); res.IsError {
		t.Errorf("the guest calling echo: %s", textOf(res))
	}
	ginas := func() []ToolRecord {
		var out []ToolRecord
		for _, r := range e.liveTools(t) {
			if r.Identity == "sub:gina" {
				out = append(out, r)
			}
		}
		return out
	}
	gr := awaitRecord(10*time.Second, ginas, "echo")
	if gr == nil || gr.Principal == nil || !slices.Equal(gr.Principal.Claims["groups"], []string{"staff", "guests"}) || len(gr.Principal.Claims) != 1 {
		t.Errorf("the guest's record: %+v", gr)
	}
	if sr := awaitRecord(10*time.Second, ginas, "sleep"); sr == nil || sr.Status != "not_found" {
		t.Errorf("the guest's refused call is not recorded as not_found: %+v", sr)
	}

	// The TypeScript SDK client with the token in its headers; without the
	// scope it cannot connect.
	var o tsObservations
	runNode(t, "sdk-client.mjs", map[string]any{"transport": "http", "url": s.URL, "headers": map[string]string{"Authorization": "Bearer " + token("tools:call")}}, &o)
	if !o.Connected || !slices.Contains(o.Steps.List.Names, "echo") {
		t.Errorf("TypeScript SDK client with a token: connected %v, tools %v, error %v", o.Connected, o.Steps.List.Names, o.Error)
	}
	var refused tsObservations
	runNode(t, "sdk-client.mjs", map[string]any{"transport": "http", "url": s.URL, "headers": map[string]string{"Authorization": "Bearer " + token("tools:read")}}, &refused)
	if refused.Connected {
		t.Error("TypeScript SDK client connected with a token that lacks the required scope")
	}

	// The official Go SDK client, on both protocol eras, with the token.
	for _, era := range []string{era2025, era2026} {
		cs := s.Connect(t, era, &ConnectOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + token("tools:call")}}})
		if res := call(t, cs, "echo", map[string]any{"text": "sdk " + era}); res.IsError || !strings.Contains(textOf(res), "sdk "+era) {
			t.Errorf("Go SDK client (%s): %s", era, textOf(res))
		}
	}
}

// TestOAuthIssuerDownAtStart: toolgate serves though its authorization
// server cannot be reached when it starts, and answers a token 503 with
// Retry-After (it may be good; a 401 would tell the client to throw it
// away) until the issuer's keys are discovered.
func TestOAuthIssuerDownAtStart(t *testing.T) {
	t.Parallel()
	down := httptest.NewServer(http.NotFoundHandler())
	down.Close() // nothing listens there now
	e := newEnv(t,
		set("http.auth.oauth.issuer", down.URL),
		set("http.auth.oauth.audience", "http://127.0.0.1/toolgate-test/mcp"),
	)
	s := e.StartHTTP(t)
	if !waitFor(10*time.Second, func() bool { return strings.Contains(s.Stderr(), "the issuer cannot be reached; serving") }) {
		t.Errorf("no warning that the issuer cannot be reached:\n%s", s.Stderr())
	}
	tok := "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJhbGljZSJ9.c2ln" // a JWT's shape; its signature cannot be checked yet
	code, h, body := post(t, s.URL, initializeBody, map[string]string{"Authorization": "Bearer " + tok})
	if code != http.StatusServiceUnavailable || h.Get("Retry-After") == "" || !strings.Contains(body, "could not be reached") {
		t.Errorf("a token before the issuer's keys are known: %d (Retry-After %q) %s, want 503 with Retry-After", code, h.Get("Retry-After"), body)
	}
	if code, _, _ := post(t, s.URL, initializeBody, nil); code != http.StatusUnauthorized {
		t.Errorf("no token: %d, want 401", code)
	}
	if !waitFor(10*time.Second, func() bool { return strings.Contains(s.Stderr(), `reason="the access token cannot be checked now"`) }) {
		t.Errorf("the refusal is not logged as a token that cannot be checked:\n%s", s.Stderr())
	}
}
