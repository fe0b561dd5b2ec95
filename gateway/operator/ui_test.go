package operator

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/gateway"
	"golang.org/x/net/html"
)

// pageClient is a browser-like client of the page: it keeps cookies, does
// not follow redirects, and sends what a browser sends on same-origin
// requests.
type pageClient struct {
	t    *testing.T
	base string
	c    *http.Client
}

func newPageClient(t *testing.T, srv *httptest.Server) *pageClient {
	jar, _ := cookiejar.New(nil)
	return &pageClient{t: t, base: srv.URL, c: &http.Client{
		Jar:           jar,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
}

func (p *pageClient) do(method, path string, form url.Values, hdr map[string]string) (*http.Response, string) {
	p.t.Helper()
	var body *strings.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	} else {
		body = strings.NewReader("")
	}
	req, _ := http.NewRequest(method, p.base+path, body)
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	for k, v := range hdr {
		if v == "" {
			req.Header.Del(k)
		} else {
			req.Header.Set(k, v)
		}
	}
	res, err := p.c.Do(req)
	if err != nil {
		p.t.Fatal(err)
	}
	defer res.Body.Close()
	var b strings.Builder
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		b.WriteString(sc.Text() + "\n")
	}
	return res, b.String()
}

var csrfRE = regexp.MustCompile(`name="csrf" value="([0-9a-f]+)"`)

func TestPageSignInAndAnswer(t *testing.T) {
	q := NewQueue()
	srv := httptest.NewServer(Handler(q, HTTPOptions{Tokens: []string{"tok"}}))
	defer srv.Close()
	p := newPageClient(t, srv)

	// Signed out: the page sends a browser to sign in; its parts refuse.
	if res, _ := p.do("GET", "/ui", nil, nil); res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/ui/login" {
		t.Fatalf("signed out /ui: %d %s", res.StatusCode, res.Header.Get("Location"))
	}
	for _, path := range []string{"/ui/state", "/ui/events", "/ui/calls/x"} {
		if res, _ := p.do("GET", path, nil, nil); res.StatusCode != http.StatusUnauthorized {
			t.Errorf("signed out %s: %d", path, res.StatusCode)
		}
	}
	if res, _ := p.do("POST", "/ui/login", url.Values{"token": {"wrong"}}, nil); res.StatusCode != http.StatusUnauthorized {
		t.Errorf("a wrong token signs in: %d", res.StatusCode)
	}
	if res, _ := p.do("POST", "/ui/login", url.Values{"token": {"tok"}}, map[string]string{"Sec-Fetch-Site": "cross-site"}); res.StatusCode != http.StatusForbidden {
		t.Errorf("a cross-site sign-in: %d", res.StatusCode)
	}
	res, _ := p.do("POST", "/ui/login", url.Values{"token": {"tok"}}, nil)
	if res.StatusCode != http.StatusSeeOther {
		t.Fatalf("signing in: %d", res.StatusCode)
	}
	c := res.Cookies()
	if len(c) != 1 || !c[0].HttpOnly || c[0].SameSite != http.SameSiteStrictMode || c[0].Path != "/ui" {
		t.Errorf("the session cookie: %+v", c)
	}

	// A call waits; the page shows it with its arguments escaped.
	got := make(chan Answer, 1)
	go func() {
		a, _ := q.Wait(context.Background(), Item{
			ID: "c1", Kind: KindApproval, Tool: "send_mail", Toolset: "mail",
			Arguments: json.RawMessage(`{"to":"<script>alert(1)</script>"}`), Reason: "policy.approval.tools lists it",
			Deadline: time.Now().Add(time.Minute),
		}, nil)
		got <- a
	}()
	waitListed(t, q, 1)
	res, page := p.do("GET", "/ui", nil, nil)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("/ui: %d", res.StatusCode)
	}
	if strings.Contains(page, "<script>alert") || !strings.Contains(page, "&lt;script&gt;alert(1)&lt;/script&gt;") {
		t.Errorf("the arguments are not escaped:\n%s", page)
	}
	if csp := res.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") || strings.Contains(csp, "unsafe-inline") {
		t.Errorf("CSP: %q", csp)
	}
	if strings.Contains(page, "<script>") {
		t.Error("the page has an inline script")
	}
	m := csrfRE.FindStringSubmatch(page)
	if m == nil {
		t.Fatal("no CSRF token in the page's forms")
	}
	token := m[1]

	// Forged answers are refused and the call keeps waiting.
	for name, tc := range map[string]struct {
		form url.Values
		hdr  map[string]string
		want int
	}{
		"no CSRF token":  {url.Values{"decision": {"allow_once"}}, nil, http.StatusForbidden},
		"wrong token":    {url.Values{"decision": {"allow_once"}, "csrf": {strings.Repeat("0", 64)}}, nil, http.StatusForbidden},
		"cross-site":     {url.Values{"decision": {"allow_once"}, "csrf": {token}}, map[string]string{"Sec-Fetch-Site": "cross-site"}, http.StatusForbidden},
		"foreign Origin": {url.Values{"decision": {"allow_once"}, "csrf": {token}}, map[string]string{"Sec-Fetch-Site": "", "Origin": "http://evil.example"}, http.StatusForbidden},
		"unknown call":   {url.Values{"decision": {"allow_once"}, "csrf": {token}}, nil, http.StatusNotFound},
	} {
		path := "/ui/pending/c1"
		if name == "unknown call" {
			path = "/ui/pending/nope"
		}
		if res, _ := p.do("POST", path, tc.form, tc.hdr); res.StatusCode != tc.want {
			t.Errorf("%s: %d, want %d", name, res.StatusCode, tc.want)
		}
	}
	if len(q.List()) != 1 {
		t.Fatal("a refused answer ended the wait")
	}
	res, _ = p.do("POST", "/ui/pending/c1", url.Values{"decision": {"allow_session"}, "csrf": {token}}, nil)
	if res.StatusCode != http.StatusSeeOther {
		t.Fatalf("answering: %d", res.StatusCode)
	}
	if a := <-got; a.Decision != "allow_session" || a.By != "ui" {
		t.Errorf("the call got %+v", a)
	}

	// Signing out ends the session.
	if res, _ := p.do("POST", "/ui/logout", url.Values{"csrf": {token}}, nil); res.StatusCode != http.StatusSeeOther {
		t.Errorf("sign out: %d", res.StatusCode)
	}
	if res, _ := p.do("GET", "/ui/state", nil, nil); res.StatusCode != http.StatusUnauthorized {
		t.Errorf("after sign-out: %d", res.StatusCode)
	}
}

func TestPageOutputAnswer(t *testing.T) {
	q := NewQueue()
	srv := httptest.NewServer(Handler(q, HTTPOptions{})) // loopback, no tokens
	defer srv.Close()
	p := newPageClient(t, srv)
	got := make(chan Answer, 2)
	for _, id := range []string{"json", "text"} {
		go func() {
			a, _ := q.Wait(context.Background(), Item{ID: id, Kind: KindOutput, Tool: "ask_reviewer"}, func(a Answer) error {
				if !json.Valid(a.Output) {
					return errors.New("not JSON")
				}
				return nil
			})
			got <- a
		}()
	}
	waitListed(t, q, 2)
	res, page := p.do("GET", "/ui", nil, nil) // no tokens: opens a session at once
	if res.StatusCode != http.StatusOK {
		t.Fatalf("/ui without tokens: %d", res.StatusCode)
	}
	token := csrfRE.FindStringSubmatch(page)[1]
	p.do("POST", "/ui/pending/json", url.Values{"output": {`{"verdict": "approve"}`}, "csrf": {token}}, nil)
	p.do("POST", "/ui/pending/text", url.Values{"output": {"looks good"}, "csrf": {token}}, nil)
	outs := map[string]bool{}
	for range 2 {
		outs[string((<-got).Output)] = true
	}
	if !outs[`{"verdict": "approve"}`] || !outs[`"looks good"`] {
		t.Errorf("outputs: %v (JSON as JSON, plain text as a string)", outs)
	}

	// A Host that is not a loopback name is refused without tokens.
	req, _ := http.NewRequest("GET", srv.URL+"/ui", nil)
	req.Host = "rebound.example:80"
	r2, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	r2.Body.Close()
	if r2.StatusCode != http.StatusForbidden {
		t.Errorf("DNS rebinding: %d", r2.StatusCode)
	}
}

// TestPageRefusedOutputKeepsItsText: a refused output is shown again in its
// text box as it was typed, a first blank line included. HTML's parser
// drops one newline right after <textarea>, so the page puts one there.
func TestPageRefusedOutputKeepsItsText(t *testing.T) {
	q := NewQueue()
	srv := httptest.NewServer(Handler(q, HTTPOptions{})) // loopback, no tokens
	defer srv.Close()
	p := newPageClient(t, srv)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go q.Wait(ctx, Item{ID: "c1", Kind: KindOutput, Tool: "ask_reviewer"}, func(Answer) error {
		return errors.New("not what the tool wants")
	})
	waitListed(t, q, 1)
	_, page := p.do("GET", "/ui", nil, nil)
	token := csrfRE.FindStringSubmatch(page)[1]
	typed := "\nafter a blank line\n  indented <b>&amp;</b>"
	res, page := p.do("POST", "/ui/pending/c1", url.Values{"output": {typed}, "csrf": {token}}, nil)
	if res.StatusCode != http.StatusUnprocessableEntity {
		t.Fatalf("a refused output: %d", res.StatusCode)
	}
	doc, err := html.Parse(strings.NewReader(page))
	if err != nil {
		t.Fatal(err)
	}
	var boxes []string
	for n := range doc.Descendants() {
		if n.Type == html.ElementNode && n.Data == "textarea" {
			var b strings.Builder
			for c := range n.ChildNodes() {
				b.WriteString(c.Data)
			}
			boxes = append(boxes, b.String())
		}
	}
	if len(boxes) != 1 || boxes[0] != typed {
		t.Fatalf("text boxes %q; want one holding %q", boxes, typed)
	}
}

func TestPageEventsAndStatus(t *testing.T) {
	q := NewQueue()
	recent := NewRecent(2)
	st := &Status{
		Calls: recent,
		Toolsets: func() []ToolsetView {
			return []ToolsetView{{Name: "filesystem", Kind: "builtin", State: "ready"}, {Name: "gh", Kind: "upstream", State: "failed", Detail: "exit 1"}}
		},
		Tools: func(context.Context) []ToolView {
			return []ToolView{{Name: "gh__merge", Toolset: "gh", Decision: gateway.Decision{Ask: true, Layer: "config", Rule: "policy.approval.tools:gh__*"}}}
		},
		Record: func(id string) (json.RawMessage, bool) {
			return json.RawMessage(`{"call_id":"` + id + `","tool":"echo"}`), id == "done"
		},
		Artifact: func(uri string) ([]byte, string, error) {
			return []byte("<script>alert(1)</script>"), "text/html", nil
		},
	}
	srv := httptest.NewServer(Handler(q, HTTPOptions{Status: st}))
	defer srv.Close()

	// The API's views.
	getJSON := func(path string, v any) int {
		res, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		_ = json.NewDecoder(res.Body).Decode(v)
		return res.StatusCode
	}
	var ups struct{ Upstreams []ToolsetView }
	if getJSON("/v1/upstreams", &ups); len(ups.Upstreams) != 1 || ups.Upstreams[0].State != "failed" {
		t.Errorf("/v1/upstreams: %+v", ups)
	}
	var tools struct{ Tools []ToolView }
	if getJSON("/v1/tools", &tools); len(tools.Tools) != 1 || !tools.Tools[0].Decision.Ask {
		t.Errorf("/v1/tools: %+v", tools)
	}
	for i, name := range []string{"a", "b", "c"} {
		call := &gateway.Call{ID: name, Name: "echo", Started: time.Unix(int64(i), 0)}
		_ = recent.CallStarted(call)
		recent.CallFinished(call, gateway.OkText("ok"), time.Millisecond)
	}
	_ = recent.CallStarted(&gateway.Call{ID: "live", Name: "sleep", Started: time.Unix(9, 0)})
	var calls struct{ Calls []CallView }
	getJSON("/v1/calls", &calls)
	var ids []string
	for _, c := range calls.Calls {
		ids = append(ids, c.ID+":"+c.Status)
	}
	if strings.Join(ids, ",") != "live:running,c:ok,b:ok" {
		t.Errorf("/v1/calls = %v, want the one running, then the last 2 finished, newest first", ids)
	}
	if code := getJSON("/v1/calls?limit=0", &calls); code != http.StatusBadRequest {
		t.Errorf("limit=0: %d", code)
	}
	var rec map[string]any
	if code := getJSON("/v1/calls/done", &rec); code != http.StatusOK || rec["tool"] != "echo" {
		t.Errorf("/v1/calls/done: %d %v", code, rec)
	}
	if code := getJSON("/v1/calls/nope", &rec); code != http.StatusNotFound {
		t.Errorf("/v1/calls/nope: %d", code)
	}

	// An artifact never runs as part of the page.
	p := newPageClient(t, srv)
	res, body := p.do("GET", "/ui/artifact?uri="+url.QueryEscape("toolgate://runs/r/artifacts/x.html"), nil, nil)
	if ct := res.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") || !strings.Contains(res.Header.Get("Content-Security-Policy"), "sandbox") || !strings.Contains(body, "<script>") {
		t.Errorf("an HTML artifact is served as %q with CSP %q", ct, res.Header.Get("Content-Security-Policy"))
	}

	// The events stream says "changed" when a call starts waiting.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+"/ui/events", nil)
	es, err := p.c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer es.Body.Close()
	if ct := es.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("events: %d %s", es.StatusCode, ct)
	}
	lines := bufio.NewScanner(es.Body)
	lines.Scan() // retry:
	go func() { _, _ = q.Wait(ctx, Item{ID: "w", Kind: KindApproval, Tool: "x"}, nil) }()
	for lines.Scan() {
		if lines.Text() == "data: changed" {
			return
		}
	}
	t.Errorf("no change event: %v", lines.Err())
}

// TestPageAnswerForAnEarlierWait: a call that waits again under the same ID
// (its approval, then its output) is not answered by the form shown for its
// first wait: that answer is refused (409) and the call keeps waiting.
func TestPageAnswerForAnEarlierWait(t *testing.T) {
	q := NewQueue()
	srv := httptest.NewServer(Handler(q, HTTPOptions{}))
	defer srv.Close()
	p := newPageClient(t, srv)
	waitRE := regexp.MustCompile(`name="wait" value="([0-9]+)"`)

	approved := make(chan Answer, 1)
	go func() {
		a, _ := q.Wait(context.Background(), Item{ID: "c1", Kind: KindApproval, Tool: "t"}, nil)
		approved <- a
	}()
	waitListed(t, q, 1)
	_, page := p.do("GET", "/ui", nil, nil)
	token := csrfRE.FindStringSubmatch(page)[1]
	first := waitRE.FindStringSubmatch(page)
	if first == nil {
		t.Fatalf("the answer form does not name its wait:\n%s", page)
	}
	if err := q.Submit("c1", Answer{Decision: AllowOnce, By: "cli"}); err != nil { // answered elsewhere
		t.Fatal(err)
	}
	<-approved
	outputs := make(chan Answer, 1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		a, _ := q.Wait(ctx, Item{ID: "c1", Kind: KindOutput, Tool: "t"}, nil) // no check: any answer would do
		outputs <- a
	}()
	waitListed(t, q, 1)
	res, body := p.do("POST", "/ui/pending/c1", url.Values{"decision": {Deny}, "wait": {first[1]}, "csrf": {token}}, nil)
	if res.StatusCode != http.StatusConflict || !strings.Contains(body, "waiting for something else") {
		t.Errorf("the first wait's form answered the second: %d\n%s", res.StatusCode, body)
	}
	select {
	case a := <-outputs:
		t.Fatalf("the call's output wait took the approval form's answer: %+v", a)
	default:
	}
	_, page = p.do("GET", "/ui", nil, nil)
	second := waitRE.FindStringSubmatch(page)
	if second == nil || second[1] == first[1] {
		t.Fatalf("the second wait's form: %v (first %v)", second, first)
	}
	if res, _ := p.do("POST", "/ui/pending/c1", url.Values{"output": {"done"}, "wait": {second[1]}, "csrf": {token}}, nil); res.StatusCode != http.StatusSeeOther {
		t.Fatalf("answering the second wait: %d", res.StatusCode)
	}
	if a := <-outputs; string(a.Output) != `"done"` {
		t.Errorf("the output: %s", a.Output)
	}
}

// TestPageStateNotModified: the sections carry an ETag of what they show;
// asked again with it (If-None-Match) while nothing shown has changed,
// the answer is 304 with no body, so the page's script rebuilds nothing.
// Once a call starts waiting the sections are sent again.
func TestPageStateNotModified(t *testing.T) {
	q := NewQueue()
	srv := httptest.NewServer(Handler(q, HTTPOptions{}))
	defer srv.Close()
	p := newPageClient(t, srv)
	p.do("GET", "/ui", nil, nil) // opens the session
	res, body := p.do("GET", "/ui/state", nil, nil)
	tag := res.Header.Get("ETag")
	if res.StatusCode != http.StatusOK || tag == "" || !strings.Contains(body, `id="pending"`) {
		t.Fatalf("/ui/state: %d, ETag %q", res.StatusCode, tag)
	}
	res, body = p.do("GET", "/ui/state", nil, map[string]string{"If-None-Match": tag})
	if res.StatusCode != http.StatusNotModified || strings.TrimSpace(body) != "" {
		t.Fatalf("nothing changed, asked with its ETag: %d, %d bytes", res.StatusCode, len(body))
	}
	if res, _ := p.do("GET", "/ui/state", nil, map[string]string{"If-None-Match": `"other"`}); res.StatusCode != http.StatusOK {
		t.Errorf("asked with another ETag: %d", res.StatusCode)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go q.Wait(ctx, Item{ID: "c1", Kind: KindApproval, Tool: "send_mail"}, nil)
	waitListed(t, q, 1)
	res, body = p.do("GET", "/ui/state", nil, map[string]string{"If-None-Match": tag})
	if res.StatusCode != http.StatusOK || res.Header.Get("ETag") == tag || !strings.Contains(body, "send_mail") {
		t.Errorf("a call waits now: %d, ETag %q (was %q)", res.StatusCode, res.Header.Get("ETag"), tag)
	}
}
