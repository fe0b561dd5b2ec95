package upstream

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestTidyTransportError(t *testing.T) {
	base := errors.New("base")
	page := "<!DOCTYPE HTML>\n<html lang=\"en\">\n  <head>\n    <title>Error response</title>\n    <style>body { color: red }</style>\n  </head>\n  <body>\n    <h1>Error response</h1>\n    <p>Message: Unsupported method ('POST').</p>\n  </body>\n</html>\n"
	for _, tc := range []struct {
		name string
		in   error
		want string // "" for unchanged
	}{
		{"an HTML page", fmt.Errorf("initialize: transport error: %w", fmt.Errorf("request failed with status 501: %s", page)),
			`initialize: transport error: request failed with status 501 Not Implemented, an HTML page, not an MCP answer (is the URL the server's MCP endpoint?): "Error response Error response Message: Unsupported method ('POST')."`},
		{"text over lines", fmt.Errorf("request failed with status 502: upstream connect error\nor disconnect/reset before headers\n"),
			`request failed with status 502 Bad Gateway: "upstream connect error or disconnect/reset before headers"`},
		{"a long body", fmt.Errorf("request failed with status 500: %s", strings.Repeat("é", 300)),
			`request failed with status 500 Internal Server Error: "` + strings.Repeat("é", 250) + `…"`},
		{"a long page", fmt.Errorf("request failed with status 500: <html><body>%s</body></html>", strings.Repeat("é", 300)),
			`request failed with status 500 Internal Server Error, an HTML page, not an MCP answer (is the URL the server's MCP endpoint?): "` + strings.Repeat("é", 100) + `…"`},
		{"a prefix twice", fmt.Errorf("failed to send request: failed to send request: %w", base),
			"failed to send request: base"},
		{"nothing to tidy", base, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := tidyTransportError(tc.in)
			if tc.want == "" {
				if got != tc.in {
					t.Fatalf("changed: %v", got)
				}
				return
			}
			if got.Error() != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
			if !errors.Is(got, tc.in) {
				t.Error("the tidied error does not unwrap to the original")
			}
			if again := tidyTransportError(got); again != got {
				t.Errorf("tidied twice: %v", again)
			}
		})
	}
}

// TestURLThatIsNoMCPEndpoint: an HTTP upstream whose URL is a web
// server's page, not an MCP endpoint, fails in one line that says so: a
// 404 everywhere is "nothing at URL speaks MCP" naming every way tried,
// and another status's HTML page is named, not dumped into the status.
func TestURLThatIsNoMCPEndpoint(t *testing.T) {
	for _, tc := range []struct {
		status int
		want   string
	}{
		{http.StatusNotFound, "speaks MCP: it answered 404 Not Found to streamable HTTP (2025-11-25), streamable HTTP (2026-07-28) and legacy SSE; is the URL the server's MCP endpoint"},
		{http.StatusBadGateway, `request failed with status 502 Bad Gateway, an HTML page, not an MCP answer (is the URL the server's MCP endpoint?): "502 Bad Gateway 502 Bad Gateway nginx"`},
	} {
		t.Run(http.StatusText(tc.status), func(t *testing.T) {
			ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/html")
				w.WriteHeader(tc.status)
				fmt.Fprintf(w, "<html>\n<head><title>%d %s</title></head>\n<body>\n<center><h1>%d %s</h1></center>\n<hr><center>nginx</center>\n</body>\n</html>\n",
					tc.status, http.StatusText(tc.status), tc.status, http.StatusText(tc.status))
			}))
			defer ts.Close()
			u := startTuned(t, Config{Name: "web", URL: ts.URL + "/mcp", StartupTimeout: 5 * time.Second}, nil, false, func(tu *tuning) {
				tu.backoffMin, tu.backoffMax = time.Hour, time.Hour
			})
			d := u.Status().Detail
			if !strings.Contains(d, tc.want) || strings.ContainsAny(d, "<\n") {
				t.Errorf("status %q\nwant one line with %s", d, tc.want)
			}
		})
	}
}

// TestUnauthorizedSaysWhatToDo: an upstream that answers 401 fails saying
// what to do: give it a token in headers (toolgate runs no OAuth login for
// its upstreams), or, when its headers carry one, that it was refused; with
// the metadata URL its WWW-Authenticate names.
func TestUnauthorizedSaysWhatToDo(t *testing.T) {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="https://auth.example/.well-known/oauth-protected-resource"`)
		http.Error(w, `{"error":"invalid_token"}`, http.StatusUnauthorized)
	}))
	defer ts.Close()
	for _, tc := range []struct {
		headers map[string]string
		want    string
	}{
		{nil, `initialize: transport error: the server requires authorization (401 Unauthorized): give it a token in headers, as Authorization: "Bearer ${TOKEN}" (toolgate runs no OAuth login for its upstreams); its OAuth metadata is at https://auth.example/.well-known/oauth-protected-resource`},
		{map[string]string{"Authorization": "Bearer expired-token-value"}, "initialize: transport error: the server refused the credentials in headers.Authorization (401 Unauthorized): wrong, or expired; its OAuth metadata is at https://auth.example/"},
	} {
		u := startTuned(t, Config{Name: "au", URL: ts.URL + "/mcp", Headers: tc.headers, StartupTimeout: 5 * time.Second}, nil, false, func(tu *tuning) {
			tu.backoffMin, tu.backoffMax = time.Hour, time.Hour
		})
		if d := u.Status().Detail; !strings.Contains(d, tc.want) || strings.Contains(d, "expired-token-value") {
			t.Errorf("status %q\nwant %s", d, tc.want)
		}
	}
}
