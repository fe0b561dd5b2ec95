package e2e

// Security checks against the binary: bearer tokens (near misses, scheme
// spelling, a timing report), Origin and Host on every method, body
// limits on a session and at initialize, path attacks through MCP, and
// secrets (arguments and the bearer token) kept out of every file and log.

import (
	"bytes"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// secTokenReal is the token the gateways of these tests accept: long, so
// that a near miss can share a long prefix with it.
const secTokenReal = "tg-7f3a9c1e5b2d4f6a8c0e1b3d5f7a9c2e4b6d8f0a"

// secTokenEnv starts an HTTP gateway whose token comes from token_env.
func secTokenEnv(t *testing.T, opts ...Opt) (*Env, *Server) {
	t.Helper()
	e := newEnv(t, append([]Opt{set("http.auth.token_env", "E2E_SEC_TOKENS")}, opts...)...)
	e.Environ = append(e.Environ, "E2E_SEC_TOKENS="+secTokenReal)
	return e, e.StartHTTP(t)
}

// nearMiss is the real token with its last character changed.
func nearMiss() string { return secTokenReal[:len(secTokenReal)-1] + "X" }

// TestSecurityBearerNearMisses: tokens that share all but the last
// character with the real one, that are a prefix of it or extend it, of a
// different length, in another scheme or without the space, or sent as a
// query parameter get 401 with WWW-Authenticate on POST, GET and DELETE;
// the scheme's spelling does not matter (RFC 9110 §11.1), so "bearer" and
// "BEARER" with the real token are served.
func TestSecurityBearerNearMisses(t *testing.T) {
	t.Parallel()
	_, s := secTokenEnv(t)
	const (
		unknown  = "the bearer token is not one this gateway accepts"
		noBearer = "the Authorization header is not a bearer token"
		empty    = "the bearer token is empty"
	)
	for _, tc := range []struct {
		name, auth string
		want       int
		why        string // in the 401's body
	}{
		{"long common prefix", "Bearer " + nearMiss(), http.StatusUnauthorized, unknown},
		{"first character changed", "Bearer X" + secTokenReal[1:], http.StatusUnauthorized, unknown},
		{"a prefix of the token", "Bearer " + secTokenReal[:len(secTokenReal)-1], http.StatusUnauthorized, unknown},
		{"the token extended", "Bearer " + secTokenReal + "0", http.StatusUnauthorized, unknown},
		{"different length", "Bearer tg-short", http.StatusUnauthorized, unknown},
		{"much longer", "Bearer " + strings.Repeat(secTokenReal, 8), http.StatusUnauthorized, unknown},
		{"lowercase bearer, wrong token", "bearer " + nearMiss(), http.StatusUnauthorized, unknown},
		{"empty token", "Bearer ", http.StatusUnauthorized, empty},
		{"scheme only", "Bearer", http.StatusUnauthorized, empty},
		{"no space", "Bearer" + secTokenReal, http.StatusUnauthorized, noBearer},
		{"another scheme", "Token " + secTokenReal, http.StatusUnauthorized, noBearer},
		{"the token alone", secTokenReal, http.StatusUnauthorized, noBearer},
		{"no header", "", http.StatusUnauthorized, "no bearer token: send the header Authorization: Bearer TOKEN"},
		{"lowercase bearer", "bearer " + secTokenReal, http.StatusOK, ""},
		{"uppercase BEARER", "BEARER " + secTokenReal, http.StatusOK, ""},
		{"right", "Bearer " + secTokenReal, http.StatusOK, ""},
	} {
		hdr := map[string]string{"Authorization": tc.auth}
		if tc.auth == "" {
			hdr = nil
		}
		code, resp, body := post(t, s.URL, initializeBody, hdr)
		if code != tc.want {
			t.Errorf("%s: %d, want %d (%s)", tc.name, code, tc.want, tail(body, 200))
		}
		if code != http.StatusUnauthorized {
			continue
		}
		challenge := resp.Get("WWW-Authenticate")
		if !strings.HasPrefix(challenge, "Bearer") {
			t.Errorf("%s: 401 without a Bearer WWW-Authenticate header", tc.name)
		}
		// RFC 6750 §3.1: invalid_token only for a bearer token refused.
		if strings.Contains(challenge, `error="invalid_token"`) != (tc.why == unknown) {
			t.Errorf("%s: WWW-Authenticate %q", tc.name, challenge)
		}
		if !strings.Contains(body, tc.why) || strings.Contains(body, secTokenReal[4:]) {
			t.Errorf("%s: the 401 says %q, want %q (and never the token)", tc.name, tail(body, 300), tc.why)
		}
	}
	if code, _, _ := post(t, s.URL+"?access_token="+secTokenReal, initializeBody, nil); code != http.StatusUnauthorized {
		t.Errorf("the token as a query parameter: %d, want 401", code)
	}

	// GET and DELETE on a real session with a near-miss token: 401, and
	// the session survives.
	authz := map[string]string{"Authorization": "Bearer " + secTokenReal}
	id := initSession(t, s, authz)
	for _, method := range []string{http.MethodGet, http.MethodDelete} {
		req, _ := http.NewRequest(method, s.URL, nil)
		req.Header.Set("Mcp-Session-Id", id)
		req.Header.Set("Mcp-Protocol-Version", era2025)
		req.Header.Set("Accept", "text/event-stream")
		req.Header.Set("Authorization", "Bearer "+nearMiss())
		if code, _, body := do(t, req); code != http.StatusUnauthorized {
			t.Errorf("%s with a near-miss token: %d, want 401 (%s)", method, code, tail(body, 200))
		}
	}
	hdr := sessionHeader(id)
	hdr["Authorization"] = "Bearer " + secTokenReal
	if code, _, body := post(t, s.URL, toolsListBody, hdr); code != http.StatusOK {
		t.Errorf("the session after a refused DELETE: %d %s, want 200", code, tail(body, 200))
	}
	s.Stop(t)
}

// TestSecurityBearerTimingReport logs the median latency of 200 requests
// with a wrong token that shares all but the last character with the real
// one, and of 200 with a wrong token of the same length sharing nothing.
// A report only: a naive comparison would make the first slower, but
// loopback timing is too noisy to assert on.
func TestSecurityBearerTimingReport(t *testing.T) {
	t.Parallel()
	_, s := secTokenEnv(t, set("log.level", "warn"))
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
	defer client.CloseIdleConnections()
	noCommon := "Z" + strings.Repeat("z", len(secTokenReal)-1)
	measure := func(token string) time.Duration {
		req, _ := http.NewRequest(http.MethodPost, s.URL, strings.NewReader(initializeBody))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", "Bearer "+token)
		start := time.Now()
		resp, err := client.Do(req)
		took := time.Since(start)
		if err != nil {
			t.Fatalf("request: %v", err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("wrong token served: %d", resp.StatusCode)
		}
		return took
	}
	for range 20 { // warm up
		measure(noCommon)
	}
	var prefix, none []time.Duration
	for range 200 { // interleaved, so that drift hits both alike
		prefix = append(prefix, measure(nearMiss()))
		none = append(none, measure(noCommon))
	}
	med := func(d []time.Duration) time.Duration {
		slices.Sort(d)
		return d[len(d)/2]
	}
	mp, mn := med(prefix), med(none)
	t.Logf("median latency of 200 wrong-token requests: long common prefix %s, no common prefix %s (ratio %.3f); report only",
		mp, mn, float64(mp)/float64(mn))
	s.Stop(t)
}

// TestSecurityOriginHostMethods: a foreign Origin gets 403 and a foreign
// Host a 4xx on POST, GET and DELETE of a live session; none of them
// reaches the session (it still works afterwards).
func TestSecurityOriginHostMethods(t *testing.T) {
	t.Parallel()
	s := newEnv(t).StartHTTP(t)
	port := strings.TrimPrefix(s.Base, "http://127.0.0.1:")
	id := initSession(t, s, nil)
	for _, method := range []string{http.MethodPost, http.MethodGet, http.MethodDelete} {
		for _, tc := range []struct {
			name, header, value string
			want                int // 0: any 4xx
		}{
			{"Origin evil", "Origin", "https://evil.example", http.StatusForbidden},
			{"Origin lookalike", "Origin", "http://localhost.evil.example:" + port, http.StatusForbidden},
			{"Origin null", "Origin", "null", http.StatusForbidden},
			{"Host evil", "Host", "evil.example", 0},
			{"Host evil with port", "Host", "evil.example:" + port, 0},
			{"Host lookalike", "Host", "127.0.0.1.evil.example:" + port, 0},
		} {
			var body *strings.Reader
			if method == http.MethodPost {
				body = strings.NewReader(toolsListBody)
			} else {
				body = strings.NewReader("")
			}
			req, _ := http.NewRequest(method, s.URL, body)
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			req.Header.Set("Mcp-Session-Id", id)
			req.Header.Set("Mcp-Protocol-Version", era2025)
			if tc.header == "Host" {
				req.Host = tc.value
			} else {
				req.Header.Set(tc.header, tc.value)
			}
			code, _, resp := do(t, req)
			if (tc.want != 0 && code != tc.want) || (tc.want == 0 && code/100 != 4) {
				t.Errorf("%s %s: %d, want %s (%s)", method, tc.name, code, wantText(tc.want), tail(resp, 200))
			}
		}
	}
	if code, _, body := post(t, s.URL, toolsListBody, sessionHeader(id)); code != http.StatusOK {
		t.Errorf("the session after the refused requests: %d %s, want 200", code, tail(body, 200))
	}
	s.Stop(t)
}

func wantText(code int) string {
	if code == 0 {
		return "4xx"
	}
	return fmt.Sprint(code)
}

// TestSecurityBodyLimit: with http.max_body_bytes 4096, a tools/call over
// the limit in a session gets 413 (declared length or chunked) and the
// session keeps working; at initialize a body of exactly the limit is
// served and one byte more is 413, as is an oversized 2026-era stateless
// request.
func TestSecurityBodyLimit(t *testing.T) {
	t.Parallel()
	const limit = 4096
	s := newEnv(t, set("http.max_body_bytes", limit)).StartHTTP(t)
	id := initSession(t, s, nil)
	big := `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"echo","arguments":{"text":"` + strings.Repeat("x", 5000) + `"}}}`
	if code, _, body := post(t, s.URL, big, sessionHeader(id)); code != http.StatusRequestEntityTooLarge {
		t.Errorf("oversized tools/call in a session: %d, want 413 (%s)", code, tail(body, 200))
	}
	req, _ := http.NewRequest(http.MethodPost, s.URL, hiddenLength{strings.NewReader(big)})
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range sessionHeader(id) {
		req.Header.Set(k, v)
	}
	if code, _, body := do(t, req); code != http.StatusRequestEntityTooLarge {
		t.Errorf("oversized chunked tools/call in a session: %d, want 413 (%s)", code, tail(body, 200))
	}
	small := `{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"echo","arguments":{"text":"still here"}}}`
	if code, _, body := post(t, s.URL, small, sessionHeader(id)); code != http.StatusOK || !strings.Contains(body, "still here") {
		t.Errorf("the session after the 413s: %d %s", code, tail(body, 200))
	}

	// initialize padded to exactly the limit, then one byte over.
	initOf := func(n int) string {
		head := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"`
		rest := `","version":"0"}}}`
		return head + strings.Repeat("n", n-len(head)-len(rest)) + rest
	}
	if code, _, body := post(t, s.URL, initOf(limit), nil); code != http.StatusOK {
		t.Errorf("initialize of exactly %d bytes: %d, want 200 (%s)", limit, code, tail(body, 200))
	}
	if code, _, body := post(t, s.URL, initOf(limit+1), nil); code != http.StatusRequestEntityTooLarge {
		t.Errorf("initialize of %d bytes: %d, want 413 (%s)", limit+1, code, tail(body, 200))
	}
	stateless := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"text":"` + strings.Repeat("s", 5000) + `"},` + rawMeta2026 + `}}`
	if code, _, body := post(t, s.URL, stateless, map[string]string{"Mcp-Protocol-Version": era2026, "Mcp-Method": "tools/call", "Mcp-Name": "echo"}); code != http.StatusRequestEntityTooLarge {
		t.Errorf("oversized stateless 2026 request: %d, want 413 (%s)", code, tail(body, 200))
	}
	s.Stop(t)
}

// snapshotTree maps every path under dir (symlinks not followed) to its
// content or link target.
func snapshotTree(t *testing.T, dir string) map[string]string {
	t.Helper()
	m := map[string]string{}
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		rel, _ := filepath.Rel(dir, p)
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			l, _ := os.Readlink(p)
			m[rel] = "link:" + l
		case d.IsDir():
			m[rel] = "dir"
		default:
			b, _ := os.ReadFile(p)
			m[rel] = string(b)
		}
		return nil
	})
	return m
}

// TestSecurityPathAttacks: through MCP, each filesystem tool refuses paths
// that leave the sandbox (.., absolute outside, NUL, a symlink out, a
// sibling directory sharing the sandbox's name as a prefix) with an
// isError result naming the path, leaks nothing, and writes nothing
// outside.
func TestSecurityPathAttacks(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	outside := filepath.Join(e.Dir, "outside")
	sibling := e.Sandbox + "-evil" // shares the sandbox's path as a prefix
	secret := filepath.Join(outside, "secret.txt")
	for _, d := range []string{outside, sibling, filepath.Join(e.Sandbox, "sub")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for p, c := range map[string]string{
		secret:                                "SECRET\n",
		filepath.Join(sibling, "f.txt"):       "SECRET\n",
		filepath.Join(e.Sandbox, "a.txt"):     "inside\n",
		filepath.Join(e.Sandbox, "sub/b.txt"): "b\n",
	} {
		if err := os.WriteFile(p, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for link, target := range map[string]string{
		"out_file":        "../outside/secret.txt",
		"out_dir":         "../outside",
		"abs_out":         secret,
		"sub/abs_out_dir": outside,
		"sibling_dir":     sibling,
	} {
		if err := os.Symlink(target, filepath.Join(e.Sandbox, link)); err != nil {
			t.Fatal(err)
		}
	}
	watched := map[string]string{"outside": outside, "sibling": sibling, "test dir": e.Dir}
	before := map[string]map[string]string{}
	for name, dir := range watched {
		before[name] = snapshotTree(t, dir)
	}

	type hostile struct{ path, reason string }
	common := []hostile{
		{"..", "outside the sandbox"},
		{"../x", "outside the sandbox"},
		{"sub/../../outside/secret.txt", "outside the sandbox"},
		{secret, "outside the sandbox"},
		{sibling + "/f.txt", "outside the sandbox"},
		{sibling, "outside the sandbox"},
		{"a\x00b", "NUL"},
		{"a.txt\x00/../../outside/secret.txt", "NUL"},
	}
	readLike := append(slices.Clone(common),
		hostile{"/etc/passwd", "outside the sandbox"},
		hostile{"out_file", "leaves the sandbox"},
		hostile{"out_dir/secret.txt", "leaves the sandbox"},
		hostile{"abs_out", "leaves the sandbox"},
		hostile{"sibling_dir/f.txt", "leaves the sandbox"},
	)
	dirLike := append(slices.Clone(common),
		hostile{"out_dir", "leaves the sandbox"},
		hostile{"sub/abs_out_dir", "leaves the sandbox"},
		hostile{"sibling_dir", "leaves the sandbox"},
	)
	writeLike := append(slices.Clone(common),
		hostile{outside + "/new.txt", "outside the sandbox"},
		hostile{sibling + "/new.txt", "outside the sandbox"},
		hostile{"out_file", "symlink"},
		hostile{"abs_out", "symlink"},
		hostile{"out_dir/new.txt", "leaves the sandbox"},
		hostile{"sub/abs_out_dir/new.txt", "leaves the sandbox"},
		hostile{"sibling_dir/new.txt", "leaves the sandbox"},
	)
	s := e.StartHTTP(t)
	cs := s.Connect(t, era2025, nil)
	n := 0
	for _, c := range []struct {
		tool  string
		paths []hostile
		args  func(p string) map[string]any
	}{
		{"read_file", readLike, func(p string) map[string]any { return map[string]any{"path": p} }},
		{"write_file", writeLike, func(p string) map[string]any { return map[string]any{"path": p, "content": "PWNED\n"} }},
		{"list_files", dirLike, func(p string) map[string]any { return map[string]any{"path": p, "recursive": true} }},
		{"grep_files", dirLike, func(p string) map[string]any { return map[string]any{"path": p, "pattern": "SECRET"} }},
	} {
		for _, h := range c.paths {
			res, err := cs.CallTool(callCtx(t), &mcp.CallToolParams{Name: c.tool, Arguments: c.args(h.path)})
			n++
			if err != nil {
				t.Errorf("%s %q: protocol error %v", c.tool, h.path, err)
				continue
			}
			txt := textOf(res)
			if !res.IsError || !strings.Contains(txt, fmt.Sprintf("path %q", h.path)) || !strings.Contains(txt, h.reason) {
				t.Errorf("%s %q: isError=%v %q; want an error naming the path and saying %q", c.tool, h.path, res.IsError, tail(txt, 300), h.reason)
			}
			if strings.Contains(txt, "SECRET") || strings.Contains(mustJSON(res.StructuredContent), "SECRET") {
				t.Errorf("%s %q: the result leaks the outside file: %s", c.tool, h.path, tail(txt, 300))
			}
		}
	}
	s.Stop(t)

	for name, dir := range watched {
		after := snapshotTree(t, dir)
		var changed []string
		for p, v := range after {
			if name == "test dir" && (strings.HasPrefix(p, "runs") || strings.HasPrefix(p, "sandbox") || strings.HasPrefix(p, "state")) {
				continue // the gateway's own files, and the sandbox itself
			}
			if w, ok := before[name][p]; !ok || w != v {
				changed = append(changed, p)
			}
		}
		for p := range before[name] {
			if _, ok := after[p]; !ok {
				changed = append(changed, p+" (removed)")
			}
		}
		sort.Strings(changed)
		if len(changed) > 0 {
			t.Errorf("%s (%s) changed: %v", name, dir, changed)
		}
	}
	if b, _ := os.ReadFile(secret); string(b) != "SECRET\n" {
		t.Errorf("%s changed: %q", secret, b)
	}
	for p, v := range snapshotTree(t, e.Sandbox) {
		if strings.Contains(v, "PWNED") {
			t.Errorf("write_file wrote %s inside the sandbox through a refused path", p)
		}
	}
	if a := e.Archive(t); len(a.Tools) != n {
		t.Errorf("tools.jsonl has %d lines for %d calls", len(a.Tools), n)
	}
}

// TestSecuritySecretsEverywhere: secret argument values and the bearer
// token (right, near-miss and in the scheme's other spellings) never
// appear in any file of the run directory, in the log file (log.file) or
// on stderr; the secret-looking arguments are recorded as [REDACTED].
func TestSecuritySecretsEverywhere(t *testing.T) {
	t.Parallel()
	logDir := t.TempDir()
	logFile := filepath.Join(logDir, "toolgate.log")
	e, s := secTokenEnv(t, set("log.file", logFile), set("log.level", "debug"))
	const argSecret = "sk-live-5f4dcc3b5aa765d61d8327deb882cf99"
	const headerSecret = "hdr-secret-0b1c2d3e4f"

	// Refused requests with tokens: near miss, lowercase scheme, query.
	for _, auth := range []string{"Bearer " + nearMiss(), "bearer " + nearMiss(), "Basic " + secTokenReal} {
		post(t, s.URL, initializeBody, map[string]string{"Authorization": auth})
	}
	// A session with the token, and secrets in arguments and headers.
	cs := s.Connect(t, era2025, &ConnectOptions{HTTPHeader: http.Header{
		"Authorization": {"Bearer " + secTokenReal},
		"X-Api-Key":     {headerSecret},
	}})
	res := call(t, cs, "echo", map[string]any{"text": "x", "api_key": argSecret, "nested": map[string]any{"password": argSecret}})
	if !res.IsError {
		t.Fatalf("echo with extra properties succeeded: %s", textOf(res))
	}
	call(t, cs, "read_file", map[string]any{"path": "a.txt", "options": []any{map[string]any{"Authorization": "Bearer " + secTokenReal, "token": argSecret}}})
	_, _ = cs.CallTool(callCtx(t), &mcp.CallToolParams{Name: "no_such_tool", Arguments: map[string]any{"access_token": argSecret, "client_secret": argSecret}})
	_ = healthDetailsAuth(t, s, "Bearer "+secTokenReal)
	cs2 := s.Connect(t, era2026, &ConnectOptions{HTTPHeader: http.Header{"Authorization": {"bearer " + secTokenReal}}})
	call(t, cs2, "echo", map[string]any{"text": "2026 era"})
	s.Stop(t)

	a := e.Archive(t)
	if len(a.Tools) != 4 {
		t.Errorf("tools.jsonl has %d lines, want 4", len(a.Tools))
	}
	if args := string(a.toolsByCallID(t)[callIDOf(res)].Arguments); !strings.Contains(args, `"api_key":"[REDACTED]"`) || !strings.Contains(args, `"password":"[REDACTED]"`) {
		t.Errorf("recorded arguments %s; want the secrets [REDACTED]", args)
	}
	needles := []string{secTokenReal, nearMiss(), argSecret, headerSecret,
		secTokenReal[:24], nearMiss()[len(nearMiss())-24:]} // no fragment of them either
	leaks := regexp.MustCompile(strings.Join(func() []string {
		var q []string
		for _, n := range needles {
			q = append(q, regexp.QuoteMeta(n))
		}
		return q
	}(), "|"))
	scan := func(what string, data []byte) {
		if m := leaks.Find(data); m != nil {
			i := bytes.Index(data, m)
			t.Errorf("%s holds a secret (%q) in %q", what, m, tail(string(data[max(0, i-120):min(len(data), i+len(m)+40)]), 240))
		}
	}
	files := 0
	_ = filepath.WalkDir(a.Dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err == nil {
			files++
			scan(p, b)
		}
		return nil
	})
	logData, err := os.ReadFile(logFile)
	if err != nil || len(logData) == 0 {
		t.Fatalf("log.file %s: %v (%d bytes); the logs did not go there", logFile, err, len(logData))
	}
	scan("log.file", logData)
	scan("stderr", []byte(s.Stderr()))
	for _, want := range []string{"tool call", "missing or invalid bearer token"} {
		if !strings.Contains(string(logData), want) {
			t.Errorf("log.file lacks %q: the scan would prove nothing", want)
		}
	}
	t.Logf("scanned %d files of the run directory, %d bytes of log.file and %d bytes of stderr", files, len(logData), len(s.Stderr()))
}

// healthDetailsAuth reads /healthz with an Authorization header.
func healthDetailsAuth(t *testing.T, s *Server, auth string) string {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, s.Base+"/healthz", nil)
	req.Header.Set("Authorization", auth)
	code, _, body := do(t, req)
	if code != http.StatusOK || !strings.Contains(body, "details") {
		t.Errorf("/healthz with the token: %d %s", code, body)
	}
	if strings.Contains(body, secTokenReal) {
		t.Errorf("/healthz shows the token: %s", body)
	}
	return body
}
