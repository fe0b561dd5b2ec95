package oauth

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// TestRotationWithSlowKeyServer: a key rotation is picked up on the first
// token of the new key even when the issuer's key set takes longer to
// fetch than the 100 ms a token with an unknown kid may wait for the
// refresh rate limit (a remote authorization server, TLS and all).
func TestRotationWithSlowKeyServer(t *testing.T) {
	is := newIssuer(t)
	var delay atomic.Int64
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(time.Duration(delay.Load()))
		is.srv.Config.Handler.ServeHTTP(w, r)
	}))
	defer slow.Close()
	const aud = "http://127.0.0.1:8765/mcp"
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	v, err := New(ctx, Options{Issuer: is.srv.URL, Audience: aud, JWKSURL: slow.URL + "/jwks"})
	if err != nil {
		t.Fatal(err)
	}
	delay.Store(int64(400 * time.Millisecond))
	is.addKey(t, "k2")
	tok := is.sign(t, "k2", jwt.MapClaims{"iss": is.srv.URL, "aud": aud, "sub": "alice", "exp": time.Now().Add(time.Hour).Unix()})
	if _, err := v.Verify(ctx, tok); err != nil {
		t.Errorf("a token of the rotated key, key set slow to fetch: %v", err)
	}
}

// TestKeySetFetchBounded: a key set endpoint that never answers, or
// answers without end, holds a token with an unknown kid for a bounded
// time (the fetch timeout), not for as long as the server likes.
func TestKeySetFetchBounded(t *testing.T) {
	is := newIssuer(t)
	var mode atomic.Int32 // 0 normal, 1 endless body
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if mode.Load() == 0 {
			is.srv.Config.Handler.ServeHTTP(w, r)
			return
		}
		_, _ = w.Write([]byte(`{"keys":[{"kty":"RSA","kid":"`))
		buf := make([]byte, 64<<10)
		for i := range buf {
			buf[i] = 'a'
		}
		for r.Context().Err() == nil {
			if _, err := w.Write(buf); err != nil {
				return
			}
		}
	}))
	defer srv.Close()
	const aud = "http://127.0.0.1:8765/mcp"
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	v, err := New(ctx, Options{Issuer: is.srv.URL, Audience: aud, JWKSURL: srv.URL + "/jwks"})
	if err != nil {
		t.Fatal(err)
	}
	mode.Store(1)
	start := time.Now()
	if _, err := v.Verify(ctx, mustSignWithNewKey(t, jwt.MapClaims{"iss": is.srv.URL, "aud": aud, "sub": "alice", "exp": time.Now().Add(time.Hour).Unix()})); err == nil {
		t.Error("accepted")
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("held %v by an endless key set", d)
	}
}
