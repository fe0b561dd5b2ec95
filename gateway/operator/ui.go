package operator

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"embed"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/toolgate/toolgate/gateway"
)

// The operator page (/ui): server-rendered html/template pages with
// embedded assets, no build step and no CDN. What it shows comes from the
// queue and [Status]; it answers waiting calls through [Queue.Submit],
// exactly as the API does.
//
// Its safety, as a page a browser holds open beside others:
//   - Login: with admin tokens configured, a person signs in with one (a
//     form, compared in constant time) and gets a session cookie
//     (HttpOnly, SameSite=Strict, Path=/ui) that lasts 12 hours. Without
//     tokens (loopback only: config refuses a non-loopback admin.addr
//     without them) the page is as open as the API, to this machine.
//   - CSRF: every form carries a token derived from the session (HMAC
//     under a key drawn at start), and a POST whose Origin is not the
//     page's own is refused; the strict cookie is not sent cross-site.
//   - DNS rebinding: as for the API, the Host must be a loopback name
//     unless tokens are configured.
//   - XSS: data reaches the page only through html/template's escaping;
//     the one script is a static embedded file and the Content Security
//     Policy allows no other (no inline scripts, no eval, no framing).
//     Artifacts are served as text (images as images) in a sandbox.

//go:embed ui
var uiFiles embed.FS

var uiTemplates = template.Must(template.New("ui").Funcs(template.FuncMap{
	"since":    func(t time.Time) string { return time.Since(t).Truncate(time.Second).String() },
	"until":    func(t time.Time) string { return max(time.Until(t), 0).Truncate(time.Second).String() },
	"clock":    func(t time.Time) string { return t.Local().Format("15:04:05") },
	"ms":       func(ms float64) string { return fmt.Sprintf("%.1f ms", ms) },
	"join":     strings.Join,
	"pretty":   prettyJSON,
	"artifact": func(uri string) string { return "/ui/artifact?uri=" + url.QueryEscape(uri) },
}).ParseFS(uiFiles, "ui/*.html"))

const (
	uiCookie       = "toolgate_ui"
	uiSessionTTL   = 12 * time.Hour
	uiMaxSessions  = 1000
	uiMaxStreams   = 32
	uiCallsShown   = 50
	uiTick         = 5 * time.Second
	uiMaxFormBytes = maxAnswerBytes + 64<<10
)

type ui struct {
	q      *Queue
	st     Status
	tokens [][32]byte
	log    *slog.Logger
	key    [32]byte // CSRF tokens are HMACs of the session under it

	mu       sync.Mutex
	sessions map[string]time.Time // session ID -> expiry
	streams  atomic.Int32
}

func newUI(q *Queue, st *Status, tokens [][32]byte, log *slog.Logger) *ui {
	u := &ui{q: q, tokens: tokens, log: log, sessions: map[string]time.Time{}}
	if st != nil {
		u.st = *st
	}
	if _, err := rand.Read(u.key[:]); err != nil {
		panic(err) // crypto/rand does not fail on supported platforms
	}
	return u
}

// routes adds the page's routes to mux.
func (u *ui) routes(mux *http.ServeMux) {
	static, _ := fs.Sub(uiFiles, "ui/static")
	mux.Handle("GET /ui/static/", http.StripPrefix("/ui/static/", http.FileServerFS(static)))
	mux.HandleFunc("GET /ui/login", u.loginPage)
	mux.HandleFunc("POST /ui/login", u.login)
	mux.HandleFunc("POST /ui/logout", u.session(u.logout))
	mux.HandleFunc("GET /ui", u.session(u.page))
	mux.HandleFunc("GET /ui/{$}", u.session(u.page))
	mux.HandleFunc("GET /ui/state", u.session(u.state))
	mux.HandleFunc("GET /ui/events", u.session(u.events))
	mux.HandleFunc("POST /ui/pending/{id}", u.session(u.answer))
	mux.HandleFunc("GET /ui/calls/{id}", u.session(u.call))
	mux.HandleFunc("GET /ui/artifact", u.session(u.artifact))
}

// headers are the page's security headers, on every /ui answer.
func uiHeaders(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "same-origin")
	h.Set("Cache-Control", "no-store")
}

// sameOrigin reports whether a browser's request comes from the page
// itself: Sec-Fetch-Site says so (every current browser sends it), or,
// from an older browser, the Origin names this host. A request with
// neither is not from a browser page (a form post from another site always
// carries one of them); the CSRF token still guards it.
func sameOrigin(r *http.Request) bool {
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" {
		return site == "same-origin" || site == "none"
	}
	if o := r.Header.Get("Origin"); o != "" {
		ou, err := url.Parse(o)
		return err == nil && (ou.Scheme == "http" || ou.Scheme == "https") && ou.Host == r.Host
	}
	return true
}

type sessionHandler func(w http.ResponseWriter, r *http.Request, sid string)

// session admits a request with a live session cookie; without one it
// sends a browser to the login form (with tokens) or opens a session
// (without tokens, where the page is as open as the API).
func (u *ui) session(h sessionHandler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		uiHeaders(w)
		if r.Method != http.MethodGet && !sameOrigin(r) {
			http.Error(w, "cross-origin request refused", http.StatusForbidden)
			return
		}
		sid := ""
		if c, err := r.Cookie(uiCookie); err == nil && u.live(c.Value) {
			sid = c.Value
		}
		if sid == "" {
			if len(u.tokens) > 0 || r.Method != http.MethodGet {
				if r.URL.Path == "/ui" || r.URL.Path == "/ui/" {
					http.Redirect(w, r, "/ui/login", http.StatusSeeOther)
					return
				}
				http.Error(w, "sign in at /ui/login", http.StatusUnauthorized)
				return
			}
			sid = u.open(w)
		}
		h(w, r, sid)
	}
}

func (u *ui) live(sid string) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	exp, ok := u.sessions[sid]
	if ok && time.Now().After(exp) {
		delete(u.sessions, sid)
		return false
	}
	return ok
}

// open starts a session and sets its cookie.
func (u *ui) open(w http.ResponseWriter) string {
	var b [24]byte
	_, _ = rand.Read(b[:])
	sid := base64.RawURLEncoding.EncodeToString(b[:])
	now := time.Now()
	u.mu.Lock()
	if len(u.sessions) >= uiMaxSessions {
		for id, exp := range u.sessions { // drop the expired, else the one ending soonest
			if now.After(exp) {
				delete(u.sessions, id)
			}
		}
		for len(u.sessions) >= uiMaxSessions {
			first, firstExp := "", time.Time{}
			for id, exp := range u.sessions {
				if first == "" || exp.Before(firstExp) {
					first, firstExp = id, exp
				}
			}
			delete(u.sessions, first)
		}
	}
	u.sessions[sid] = now.Add(uiSessionTTL)
	u.mu.Unlock()
	http.SetCookie(w, &http.Cookie{Name: uiCookie, Value: sid, Path: "/ui", HttpOnly: true, SameSite: http.SameSiteStrictMode, MaxAge: int(uiSessionTTL / time.Second)})
	return sid
}

func (u *ui) csrf(sid string) string {
	m := hmac.New(sha256.New, u.key[:])
	m.Write([]byte("csrf:" + sid))
	return hex.EncodeToString(m.Sum(nil))
}

func (u *ui) checkCSRF(r *http.Request, sid string) bool {
	return hmac.Equal([]byte(r.PostFormValue("csrf")), []byte(u.csrf(sid)))
}

func (u *ui) loginPage(w http.ResponseWriter, r *http.Request) {
	uiHeaders(w)
	if len(u.tokens) == 0 {
		http.Redirect(w, r, "/ui", http.StatusSeeOther)
		return
	}
	u.render(w, http.StatusOK, "login.html", map[string]any{})
}

func (u *ui) login(w http.ResponseWriter, r *http.Request) {
	uiHeaders(w)
	if !sameOrigin(r) {
		http.Error(w, "cross-origin request refused", http.StatusForbidden)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	got := sha256.Sum256([]byte(strings.TrimSpace(r.PostFormValue("token"))))
	match := 0
	for i := range u.tokens {
		match |= subtle.ConstantTimeCompare(got[:], u.tokens[i][:])
	}
	if len(u.tokens) > 0 && match != 1 {
		u.log.Warn("operator page: sign-in with a wrong token", "remote", r.RemoteAddr)
		u.render(w, http.StatusUnauthorized, "login.html", map[string]any{"Error": "That is not an admin token."})
		return
	}
	u.open(w)
	http.Redirect(w, r, "/ui", http.StatusSeeOther)
}

func (u *ui) logout(w http.ResponseWriter, r *http.Request, sid string) {
	if !u.checkCSRF(r, sid) {
		http.Error(w, "stale form: reload the page", http.StatusForbidden)
		return
	}
	u.mu.Lock()
	delete(u.sessions, sid)
	u.mu.Unlock()
	http.SetCookie(w, &http.Cookie{Name: uiCookie, Value: "", Path: "/ui", MaxAge: -1, HttpOnly: true, SameSite: http.SameSiteStrictMode})
	http.Redirect(w, r, "/ui/login", http.StatusSeeOther)
}

// pageData is what the page's sections show.
type pageData struct {
	CSRF     string
	SignOut  bool
	Error    string
	Refused  *refusal // an answer refused while its call still waits
	Pending  []pendingView
	Toolsets []ToolsetView
	Tools    []ToolView
	Calls    []CallView
}

// refusal is an answer the call refused: shown in the call's row, with
// the output that was sent back in its box, to correct.
type refusal struct {
	ID     string
	Wait   uint64
	Output string
	Error  string
}

// RefusedFor is the refused answer to a wait, if any (for the template).
func (d pageData) RefusedFor(id string, wait uint64) *refusal {
	if d.Refused != nil && d.Refused.ID == id && d.Refused.Wait == wait {
		return d.Refused
	}
	return nil
}

type pendingView struct {
	wait
	Args   string
	Schema string
}

func (u *ui) data(ctx context.Context, sid string) pageData {
	d := pageData{CSRF: u.csrf(sid), SignOut: len(u.tokens) > 0}
	for _, w := range u.q.waits() {
		d.Pending = append(d.Pending, pendingView{wait: w, Args: prettyJSON(w.Arguments), Schema: prettyJSON(w.OutputSchema)})
	}
	if u.st.Toolsets != nil {
		d.Toolsets = u.st.Toolsets()
	}
	if u.st.Tools != nil {
		d.Tools = u.st.Tools(ctx)
	}
	if u.st.Calls != nil {
		d.Calls = u.st.Calls.List(uiCallsShown)
	}
	return d
}

func (u *ui) page(w http.ResponseWriter, r *http.Request, sid string) {
	u.render(w, http.StatusOK, "page.html", u.data(r.Context(), sid))
}

// state is the sections alone, which the page's script swaps in when the
// events stream says something changed. Their ETag is a digest of what
// they show: asked again with it (If-None-Match), as the script does on
// every tick, they answer 304 when nothing shown has changed, and the
// script rebuilds nothing. (Countdowns and running calls' durations are
// part of what is shown: with calls waiting or running, each tick differs.)
func (u *ui) state(w http.ResponseWriter, r *http.Request, sid string) {
	var buf bytes.Buffer
	if err := uiTemplates.ExecuteTemplate(&buf, "sections", u.data(r.Context(), sid)); err != nil {
		u.log.Error("operator page", "template", "sections", "err", err)
		http.Error(w, "the page failed to render", http.StatusInternalServerError)
		return
	}
	sum := sha256.Sum256(buf.Bytes())
	tag := `"` + hex.EncodeToString(sum[:16]) + `"`
	w.Header().Set("ETag", tag)
	for _, t := range strings.Split(r.Header.Get("If-None-Match"), ",") {
		if strings.TrimPrefix(strings.TrimSpace(t), "W/") == tag {
			w.WriteHeader(http.StatusNotModified)
			return
		}
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_, _ = w.Write(buf.Bytes())
}

// events is a server-sent events stream: "changed" when a call starts,
// ends or starts or stops waiting, and "tick" every few seconds (toolset
// states, countdowns). It ends with the request or at shutdown.
func (u *ui) events(w http.ResponseWriter, r *http.Request, sid string) {
	fl, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	if u.streams.Add(1) > uiMaxStreams {
		u.streams.Add(-1)
		w.Header().Set("Retry-After", "5")
		http.Error(w, fmt.Sprintf("too many open operator pages (limit %d)", uiMaxStreams), http.StatusServiceUnavailable)
		return
	}
	defer u.streams.Add(-1)
	// The change channels are taken before anything is written, and again
	// as soon as one fires: a change the page could not have seen yet is
	// never missed (the client acts once it has read the stream's start).
	never := make(chan struct{})
	watch := func() (q, calls <-chan struct{}) {
		q, calls = u.q.Changed(), never
		if u.st.Calls != nil {
			calls = u.st.Calls.Changed()
		}
		return q, calls
	}
	qc, cc := watch()
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	fmt.Fprint(w, "retry: 2000\n\n")
	fl.Flush()
	tick := time.NewTicker(uiTick)
	defer tick.Stop()
	for {
		var msg string
		select {
		case <-r.Context().Done():
			return
		case <-qc:
			msg = "changed"
		case <-cc:
			msg = "changed"
		case <-tick.C:
			msg = "tick"
		}
		if msg == "changed" {
			qc, cc = watch()
		}
		if _, err := fmt.Fprintf(w, "data: %s\n\n", msg); err != nil {
			return
		}
		fl.Flush()
		if msg == "changed" { // a burst of changes is one refresh
			select {
			case <-r.Context().Done():
				return
			case <-time.After(200 * time.Millisecond):
			}
		}
	}
}

// answer takes a person's answer from the page: a decision for an
// approval, an output for a definition-only call.
func (u *ui) answer(w http.ResponseWriter, r *http.Request, sid string) {
	r.Body = http.MaxBytesReader(w, r.Body, uiMaxFormBytes)
	if err := r.ParseForm(); err != nil {
		http.Error(w, "reading the form: "+err.Error(), http.StatusRequestEntityTooLarge)
		return
	}
	if !u.checkCSRF(r, sid) {
		http.Error(w, "stale form: reload the page", http.StatusForbidden)
		return
	}
	id := r.PathValue("id")
	// The form names the wait it answers: a call that waits again (its
	// approval, then its output) is not answered by the first one's form.
	seq, _ := strconv.ParseUint(r.PostFormValue("wait"), 10, 64)
	a := Answer{By: "ui", Decision: r.PostFormValue("decision")}
	if out, ok := r.PostForm["output"]; ok && a.Decision == "" {
		// A browser sends a text box's lines ended by "\r\n" (HTML's
		// form encoding); the person typed "\n".
		typed := strings.ReplaceAll(out[0], "\r\n", "\n")
		if text := strings.TrimSpace(typed); json.Valid([]byte(text)) {
			a.Output = json.RawMessage(text)
		} else { // plain text is the output text
			a.Output, _ = json.Marshal(typed)
		}
	}
	if err := u.q.submit(id, seq, a); err != nil {
		status := http.StatusUnprocessableEntity
		switch {
		case errors.Is(err, ErrUnknown):
			status = http.StatusNotFound
		case errors.Is(err, ErrBusy), errors.Is(err, errOtherWait):
			status = http.StatusConflict
		}
		d := u.data(r.Context(), sid)
		d.Error = err.Error()
		for _, p := range d.Pending {
			if p.ID == id && (seq == 0 || p.Wait == seq) { // still waits: say it beside its form
				d.Refused = &refusal{ID: id, Wait: p.Wait, Error: err.Error()}
				if out, ok := r.PostForm["output"]; ok && p.Kind == KindOutput {
					d.Refused.Output = out[0]
				}
				d.Error = ""
			}
		}
		u.render(w, status, "page.html", d)
		return
	}
	u.log.Info("operator answered a waiting call", "call_id", id, "by", "ui", "decision", a.Decision)
	http.Redirect(w, r, "/ui", http.StatusSeeOther)
}

// call shows one call: what the operator list knows and its line in the
// run archive, with links to its artifacts.
func (u *ui) call(w http.ResponseWriter, r *http.Request, sid string) {
	id := r.PathValue("id")
	var d struct {
		CSRF    string
		SignOut bool
		Call    CallView
		Known   bool
		Record  string
	}
	d.CSRF, d.SignOut = u.csrf(sid), len(u.tokens) > 0
	if u.st.Calls != nil {
		d.Call, d.Known = u.st.Calls.Find(id)
	}
	if u.st.Record != nil {
		if rec, ok := u.st.Record(id); ok {
			d.Record = prettyJSON(rec)
			if !d.Known {
				d.Call, d.Known = callFromRecord(rec), true
			}
		}
	}
	if !d.Known {
		u.render(w, http.StatusNotFound, "call.html", d)
		return
	}
	u.render(w, http.StatusOK, "call.html", d)
}

// callFromRecord reads a tools.jsonl line as the page shows a call.
func callFromRecord(rec json.RawMessage) CallView {
	var v struct {
		CallView
		Time time.Time `json:"time"`
	}
	_ = json.Unmarshal(rec, &v)
	v.CallView.Started = v.Time.Add(-time.Duration(v.DurationMS * float64(time.Millisecond)))
	return v.CallView
}

// artifact serves an artifact for reading in the browser: images as
// themselves, everything else as plain text, in a CSP sandbox, so that an
// artifact a tool wrote (HTML, say) never runs as part of the page.
func (u *ui) artifact(w http.ResponseWriter, r *http.Request, sid string) {
	uri := r.URL.Query().Get("uri")
	if u.st.Artifact == nil || !strings.HasPrefix(uri, "toolgate://") {
		http.Error(w, "no such artifact", http.StatusNotFound)
		return
	}
	data, mime, err := u.st.Artifact(uri)
	if err != nil {
		http.Error(w, err.Error(), http.StatusNotFound)
		return
	}
	switch mime {
	case "image/png", "image/jpeg", "image/gif", "image/webp":
	default:
		mime = "text/plain; charset=utf-8"
	}
	w.Header().Set("Content-Type", mime)
	w.Header().Set("Content-Security-Policy", "sandbox; default-src 'none'; img-src 'self'")
	_, _ = w.Write(data)
}

func (u *ui) render(w http.ResponseWriter, status int, name string, data any) {
	var buf bytes.Buffer
	if err := uiTemplates.ExecuteTemplate(&buf, name, data); err != nil {
		u.log.Error("operator page", "template", name, "err", err)
		http.Error(w, "the page failed to render", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// prettyJSON indents a JSON value for reading ("" for none).
func prettyJSON(v json.RawMessage) string {
	if len(v) == 0 || string(v) == "null" {
		return ""
	}
	var buf bytes.Buffer
	if err := json.Indent(&buf, v, "", "  "); err != nil {
		return gateway.Truncate(string(v), 64<<10)
	}
	return gateway.Truncate(buf.String(), 64<<10)
}
