package oauth

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// issuer is a loopback authorization server: its metadata (RFC 8414) and
// its key set, which can rotate.
type issuer struct {
	srv  *httptest.Server
	mu   sync.Mutex
	keys map[string]*rsa.PrivateKey
	// metaStatus, when set, is the status its metadata answers with.
	metaStatus atomic.Int32
}

func newIssuer(t *testing.T) *issuer {
	t.Helper()
	is := &issuer{keys: map[string]*rsa.PrivateKey{}}
	is.addKey(t, "k1")
	mux := http.NewServeMux()
	mux.HandleFunc("/.well-known/oauth-authorization-server", func(w http.ResponseWriter, r *http.Request) {
		if st := is.metaStatus.Load(); st != 0 {
			w.WriteHeader(int(st))
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"issuer": is.srv.URL, "jwks_uri": is.srv.URL + "/jwks"})
	})
	mux.HandleFunc("/jwks", func(w http.ResponseWriter, r *http.Request) {
		is.mu.Lock()
		defer is.mu.Unlock()
		var keys []map[string]any
		for kid, k := range is.keys {
			keys = append(keys, map[string]any{"kty": "RSA", "kid": kid, "alg": "RS256", "use": "sig",
				"n": base64.RawURLEncoding.EncodeToString(k.N.Bytes()),
				"e": base64.RawURLEncoding.EncodeToString(big.NewInt(int64(k.E)).Bytes())})
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"keys": keys})
	})
	is.srv = httptest.NewServer(mux)
	t.Cleanup(is.srv.Close)
	return is
}

func (is *issuer) addKey(t *testing.T, kid string) {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	is.mu.Lock()
	is.keys[kid] = k
	is.mu.Unlock()
}

func (is *issuer) sign(t *testing.T, kid string, claims jwt.MapClaims) string {
	t.Helper()
	is.mu.Lock()
	k := is.keys[kid]
	is.mu.Unlock()
	tok := jwt.NewWithClaims(jwt.SigningMethodRS256, claims)
	tok.Header["kid"] = kid
	s, err := tok.SignedString(k)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestVerify (issue 14): a token is accepted only when signed by the
// issuer's key with an allowed algorithm, for this audience, in time;
// a rotated key is picked up; "none", HMAC with the public key, another
// issuer's key, other audiences and expired tokens are refused.
func TestVerify(t *testing.T) {
	is := newIssuer(t)
	const aud = "http://127.0.0.1:8765/mcp"
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	v, err := New(ctx, Options{Issuer: is.srv.URL, Audience: aud}) // keys discovered (RFC 8414)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	good := func() jwt.MapClaims {
		return jwt.MapClaims{"iss": is.srv.URL, "aud": aud, "sub": "alice", "exp": now.Add(time.Hour).Unix(), "scope": "tools:read tools:write", "client_id": "cli"}
	}
	p, err := v.Verify(ctx, is.sign(t, "k1", good()))
	if err != nil || p.Subject != "alice" || p.ClientID != "cli" || !slices.Contains(p.Scopes, "tools:write") {
		t.Fatalf("a good token: %+v %v", p, err)
	}
	// Claims of simple values are kept for policy, bounded; the registered
	// ones are not among them.
	withClaims := good()
	withClaims["groups"] = []any{"dev", "ops", map[string]any{"nested": true}}
	withClaims["email_verified"] = true
	withClaims["profile"] = map[string]any{"x": 1}
	withClaims["huge"] = strings.Repeat("x", MaxClaimValueLen+1)
	p, err = v.Verify(ctx, is.sign(t, "k1", withClaims))
	want := map[string][]string{"groups": {"dev", "ops"}, "email_verified": {"true"}}
	if err != nil || !reflect.DeepEqual(p.Claims, want) {
		t.Errorf("claims %v (%v), want %v", p.Claims, err, want)
	}

	is.addKey(t, "k2") // rotation: a new kid is fetched on first sight
	if _, err := v.Verify(ctx, is.sign(t, "k2", good())); err != nil {
		t.Errorf("a token of the rotated key: %v", err)
	}

	mod := func(f func(jwt.MapClaims)) jwt.MapClaims { c := good(); f(c); return c }
	rsaPub := x509.MarshalPKCS1PublicKey(&is.keys["k1"].PublicKey)
	hmac := jwt.NewWithClaims(jwt.SigningMethodHS256, good())
	hmac.Header["kid"] = "k1"
	hmacTok, _ := hmac.SignedString(rsaPub)
	none := jwt.NewWithClaims(jwt.SigningMethodNone, good())
	noneTok, _ := none.SignedString(jwt.UnsafeAllowNoneSignatureType)
	ec, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	foreign := jwt.NewWithClaims(jwt.SigningMethodES256, good())
	foreign.Header["kid"] = "k1"
	foreignTok, _ := foreign.SignedString(ec)
	goodTok := is.sign(t, "k1", good())
	parts := strings.Split(goodTok, ".")
	evil, _ := json.Marshal(mod(func(c jwt.MapClaims) { c["sub"] = "mallory" }))
	tampered := parts[0] + "." + base64.RawURLEncoding.EncodeToString(evil) + "." + parts[2]
	for name, tok := range map[string]string{
		"tampered payload": tampered,
		"unknown kid":      mustSignWithNewKey(t, good()),
		"expired":          is.sign(t, "k1", mod(func(c jwt.MapClaims) { c["exp"] = now.Add(-time.Hour).Unix() })),
		"no exp":           is.sign(t, "k1", mod(func(c jwt.MapClaims) { delete(c, "exp") })),
		"not yet valid":    is.sign(t, "k1", mod(func(c jwt.MapClaims) { c["nbf"] = now.Add(time.Hour).Unix() })),
		"other audience":   is.sign(t, "k1", mod(func(c jwt.MapClaims) { c["aud"] = "http://elsewhere/mcp" })),
		"other issuer":     is.sign(t, "k1", mod(func(c jwt.MapClaims) { c["iss"] = "http://127.0.0.1:1/" })),
		"no subject":       is.sign(t, "k1", mod(func(c jwt.MapClaims) { delete(c, "sub") })),
		"alg none":         noneTok,
		"HMAC, public key": hmacTok,
		"another key":      foreignTok,
		"garbage":          "not.a.token",
	} {
		if _, err := v.Verify(ctx, tok); err == nil {
			t.Errorf("%s: accepted", name)
		} else if strings.Contains(err.Error(), tok) {
			t.Errorf("%s: the error echoes the token", name)
		}
	}
	if _, err := New(ctx, Options{Issuer: "http://example.com", Audience: aud}); err == nil || !strings.Contains(err.Error(), "https") {
		t.Errorf("a plain-http issuer off loopback: %v", err)
	}
}

// TestIssuerDiscoveredLater: an issuer that cannot be reached when
// toolgate starts (down, or answering 5xx) does not keep it from starting:
// tokens are refused as unavailable (503: they may be good) until its keys
// are discovered in the background, and checked from then on. One that
// answers that its metadata is not there is an error at start.
func TestIssuerDiscoveredLater(t *testing.T) {
	is := newIssuer(t)
	const aud = "http://127.0.0.1:8765/mcp"
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	claims := jwt.MapClaims{"iss": is.srv.URL, "aud": aud, "sub": "alice", "exp": time.Now().Add(time.Hour).Unix()}
	tok := is.sign(t, "k1", claims)

	is.metaStatus.Store(http.StatusNotFound)
	if _, err := New(ctx, Options{Issuer: is.srv.URL, Audience: aud}); err == nil || errors.Is(err, ErrUnavailable) {
		t.Errorf("metadata not found: %v, want an error at start", err)
	}

	is.metaStatus.Store(http.StatusServiceUnavailable)
	v, err := New(ctx, Options{Issuer: is.srv.URL, Audience: aud, DiscoveryRetry: 10 * time.Millisecond})
	if err != nil {
		t.Fatalf("an issuer answering 503: %v, want a verifier that waits for it", err)
	}
	if _, err := v.Verify(ctx, tok); !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "not known yet") {
		t.Errorf("before discovery: %v, want the token refused as unavailable", err)
	}
	if _, err := v.Verify(ctx, "not-a-jwt"); err == nil || errors.Is(err, ErrUnavailable) {
		t.Errorf("garbage before discovery: %v, want it refused as invalid", err)
	}
	is.metaStatus.Store(0) // the issuer is back
	deadline := time.Now().Add(10 * time.Second)
	for {
		p, err := v.Verify(ctx, tok)
		if err == nil {
			if p.Subject != "alice" {
				t.Errorf("after discovery: %+v", p)
			}
			break
		}
		if !errors.Is(err, ErrUnavailable) || time.Now().After(deadline) {
			t.Fatalf("after the issuer came back: %v", err)
		}
		time.Sleep(5 * time.Millisecond)
	}

	down := httptest.NewServer(http.NotFoundHandler())
	down.Close() // nothing listens there now
	v, err = New(ctx, Options{Issuer: down.URL, Audience: aud, DiscoveryRetry: time.Hour})
	if err != nil {
		t.Fatalf("an issuer that is down: %v, want a verifier that waits for it", err)
	}
	if _, err := v.Verify(ctx, tok); !errors.Is(err, ErrUnavailable) {
		t.Errorf("an issuer that is down: %v, want the token refused as unavailable", err)
	}
}

// TestIntrospection (issue 14): opaque tokens are checked by RFC 7662
// introspection: active, for this audience, in time; answers are cached.
// TestSecureURL: keys, metadata and introspection are fetched over https,
// or plain http to this machine only; a host name that merely starts like
// a loopback address is not this machine.
func TestSecureURL(t *testing.T) {
	for u, ok := range map[string]bool{
		"https://issuer.example/": true, "http://127.0.0.1:8080/jwks": true, "http://[::1]/jwks": true,
		"http://localhost/jwks": true, "http://127.evil.example/jwks": false, "http://issuer.example/": false,
		"ftp://127.0.0.1/": false, "not a url": false,
	} {
		if err := secureURL(u); (err == nil) != ok {
			t.Errorf("secureURL(%q) = %v, want ok %v", u, err, ok)
		}
	}
}

// fakeTransport answers requests by URL without a network, and records
// which URLs were asked for.
type fakeTransport struct {
	mu     sync.Mutex
	asked  []string
	answer func(*http.Request) *http.Response
}

func (f *fakeTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	f.mu.Lock()
	f.asked = append(f.asked, r.URL.String())
	f.mu.Unlock()
	return f.answer(r), nil
}

// TestRedirectToPlainHTTPRefused: the issuer's metadata at an https URL
// that redirects to plain http off loopback is not followed there (the
// https rule would mean nothing; an introspection's credentials would
// follow a redirect to the same host in clear).
func TestRedirectToPlainHTTPRefused(t *testing.T) {
	ft := &fakeTransport{answer: func(r *http.Request) *http.Response {
		if r.URL.Scheme == "https" {
			return &http.Response{StatusCode: http.StatusFound, Header: http.Header{"Location": {"http://issuer.example" + r.URL.Path}},
				Body: io.NopCloser(strings.NewReader("")), Request: r}
		}
		return &http.Response{StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {"application/json"}},
			Body: io.NopCloser(strings.NewReader(`{"issuer":"https://issuer.example","jwks_uri":"https://issuer.example/jwks"}`)), Request: r}
	}}
	_, err := New(context.Background(), Options{Issuer: "https://issuer.example", Audience: "https://mcp.example/mcp",
		HTTPClient: &http.Client{Transport: ft}})
	if err == nil || !strings.Contains(err.Error(), "must be https") {
		t.Errorf("New: %v, want the redirect refused as not https", err)
	}
	for _, u := range ft.asked {
		if strings.HasPrefix(u, "http://") {
			t.Errorf("followed a redirect to %s", u)
		}
	}
}

func TestIntrospection(t *testing.T) {
	is := newIssuer(t)
	const aud = "http://127.0.0.1:8765/mcp"
	var mu sync.Mutex
	calls := 0
	intro := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		calls++
		mu.Unlock()
		if u, p, _ := r.BasicAuth(); u != "toolgate" || p != "s3cret" {
			http.Error(w, "who are you", http.StatusUnauthorized)
			return
		}
		_ = r.ParseForm()
		switch r.PostForm.Get("token") {
		case "opaque-good":
			_ = json.NewEncoder(w).Encode(map[string]any{"active": true, "sub": "bob", "scope": "tools:call", "aud": aud, "iss": is.srv.URL, "exp": time.Now().Add(time.Hour).Unix()})
		case "opaque-other-aud":
			_ = json.NewEncoder(w).Encode(map[string]any{"active": true, "sub": "bob", "aud": "http://elsewhere/mcp"})
		default:
			_ = json.NewEncoder(w).Encode(map[string]any{"active": false})
		}
	}))
	defer intro.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	v, err := New(ctx, Options{Issuer: is.srv.URL, Audience: aud,
		Introspection: Introspection{URL: intro.URL, ClientID: "toolgate", ClientSecret: "s3cret"}})
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		p, err := v.Verify(ctx, "opaque-good")
		if err != nil || p.Subject != "bob" || !slices.Contains(p.Scopes, "tools:call") {
			t.Fatalf("an active opaque token: %+v %v", p, err)
		}
	}
	mu.Lock()
	if calls != 1 {
		t.Errorf("%d introspection calls for three uses of one token, want 1 (cached)", calls)
	}
	mu.Unlock()
	for _, tok := range []string{"opaque-revoked", "opaque-other-aud"} {
		if _, err := v.Verify(ctx, tok); err == nil {
			t.Errorf("%s: accepted", tok)
		}
	}
	if _, err := v.Verify(ctx, is.sign(t, "k1", jwt.MapClaims{"iss": is.srv.URL, "aud": aud, "sub": "alice", "exp": time.Now().Add(time.Hour).Unix()})); err != nil {
		t.Errorf("a JWT still goes through signature checks: %v", err)
	}
}

// TestIntrospectionFailureNotCached: an introspection endpoint that gives
// no answer (an HTTP error, a broken connection, a body that is not JSON)
// fails the request with ErrUnavailable, not as an invalid token, and is
// not cached: once the endpoint answers, the valid token is accepted. A
// real answer, even "not active", is cached.
func TestIntrospectionFailureNotCached(t *testing.T) {
	for _, c := range []struct {
		name        string
		first       func(w http.ResponseWriter)
		unavailable bool // the first answer is no answer
	}{
		{"HTTP 503", func(w http.ResponseWriter) { http.Error(w, "busy", http.StatusServiceUnavailable) }, true},
		{"HTTP 500", func(w http.ResponseWriter) { http.Error(w, "oops", http.StatusInternalServerError) }, true},
		{"not JSON", func(w http.ResponseWriter) { _, _ = w.Write([]byte("<html>maintenance</html>")) }, true},
		{"connection closed", func(w http.ResponseWriter) {
			conn, _, _ := w.(http.Hijacker).Hijack()
			conn.Close()
		}, true},
		{"not active (a verdict)", func(w http.ResponseWriter) { _, _ = w.Write([]byte(`{"active":false}`)) }, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			var calls atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if calls.Add(1) == 1 {
					c.first(w)
					return
				}
				_, _ = w.Write([]byte(`{"active":true,"sub":"alice"}`))
			}))
			defer srv.Close()
			in := newIntrospector(Introspection{URL: srv.URL}, "https://mcp", "https://as", srv.Client())
			ctx := context.Background()
			_, err := in.verify(ctx, "opaque-token")
			if err == nil {
				t.Fatal("the first answer accepted the token")
			}
			if errors.Is(err, ErrUnavailable) != c.unavailable || c.unavailable && strings.Contains(err.Error(), "invalid access token") {
				t.Errorf("first: %v; want unavailable %v (and never called an invalid token)", err, c.unavailable)
			}
			p, err := in.verify(ctx, "opaque-token")
			switch {
			case c.unavailable && (err != nil || p.Subject != "alice" || calls.Load() != 2):
				t.Errorf("after the endpoint recovered: %+v %v, %d calls; want alice accepted on a new call", p, err, calls.Load())
			case !c.unavailable && (err == nil || calls.Load() != 1):
				t.Errorf("a verdict: second use %v after %d calls; want refused from the cache", err, calls.Load())
			}
		})
	}
}

// TestIntrospectionBoundedInFlight: a flood of made-up opaque tokens
// against a slow introspection endpoint ties up at most
// introspectMaxInFlight requests there; the next token is unavailable at
// once (503, retry), and a cached token still works meanwhile.
func TestIntrospectionBoundedInFlight(t *testing.T) {
	release := make(chan struct{})
	var asked atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		if r.Form.Get("token") == "known" {
			_, _ = w.Write([]byte(`{"active":true,"sub":"alice"}`))
			return
		}
		asked.Add(1)
		<-release
		_, _ = w.Write([]byte(`{"active":false}`))
	}))
	defer srv.Close()
	in := newIntrospector(Introspection{URL: srv.URL}, "https://mcp", "https://as", srv.Client())
	ctx := context.Background()
	if p, err := in.verify(ctx, "known"); err != nil || p.Subject != "alice" {
		t.Fatalf("known token: %+v %v", p, err)
	}
	var wg sync.WaitGroup
	for i := range introspectMaxInFlight {
		wg.Add(1)
		go func() { defer wg.Done(); _, _ = in.verify(ctx, fmt.Sprintf("made-up-%d", i)) }()
	}
	deadline := time.Now().Add(10 * time.Second)
	for asked.Load() < introspectMaxInFlight {
		if time.Now().After(deadline) {
			t.Fatalf("%d introspections under way, want %d", asked.Load(), introspectMaxInFlight)
		}
		time.Sleep(time.Millisecond)
	}
	start := time.Now()
	octx, cancel := context.WithTimeout(ctx, 2*time.Second) // without the bound it would wait
	defer cancel()
	if _, err := in.verify(octx, "one-more"); !errors.Is(err, ErrUnavailable) || time.Since(start) > time.Second {
		t.Errorf("one more token while %d are checked: %v after %s, want unavailable at once", introspectMaxInFlight, err, time.Since(start))
	}
	if p, err := in.verify(ctx, "known"); err != nil || p.Subject != "alice" {
		t.Errorf("the cached token during the flood: %+v %v", p, err)
	}
	if n := asked.Load(); n != introspectMaxInFlight {
		t.Errorf("%d made-up tokens reached the endpoint, want %d", n, introspectMaxInFlight)
	}
	close(release)
	wg.Wait()
}

// mustSignWithNewKey signs with a key the issuer never published, under a
// kid it does not know: the verifier refreshes its keys (at its bounded
// rate) and still refuses.
func mustSignWithNewKey(t *testing.T, c jwt.MapClaims) string {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	tok := jwt.NewWithClaims(jwt.SigningMethodRS256, c)
	tok.Header["kid"] = "never-published"
	s, err := tok.SignedString(k)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
