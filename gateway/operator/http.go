package operator

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
)

// HTTPOptions configure [Handler].
type HTTPOptions struct {
	// Tokens, if any, are the bearer tokens accepted (compared in constant
	// time); a request without one gets 401. Required when the listener is
	// not on loopback (the caller checks).
	Tokens []string
	// Logger; nil discards.
	Logger *slog.Logger
	// Status is what the API and the page show besides the waiting calls
	// (nil: only the waiting calls).
	Status *Status
}

// maxAnswerBytes bounds a submitted answer.
const maxAnswerBytes = 4 << 20

// Handler is the admin HTTP API:
//
//	GET  /v1/pending              the waiting calls, oldest first: {"pending": [Item...]}
//	POST /v1/pending/{id}/submit  {"output": <JSON value>}: answer a waiting call
//	GET  /v1/upstreams            the upstreams with their state: {"upstreams": [ToolsetView...]}
//	GET  /v1/toolsets             every toolset, built-in ones too: {"toolsets": [...]}
//	GET  /v1/tools                the tools with the policy's decision: {"tools": [ToolView...]}
//	GET  /v1/calls?limit=N        the latest calls, newest first: {"calls": [CallView...]}
//	GET  /v1/calls/{id}           one call's record line from the run archive
//	/ui                           the operator page (see ui.go)
//
// Answers: 200 {"ok": true}; 404 for an ID that is not waiting; 422 for an
// output the call cannot take (it keeps waiting); 401 without a valid
// token. Against cross-site requests from a browser on the same machine,
// every request with an Origin header is refused (the API is for programs
// and toolgate's own CLI) and POST bodies must be application/json, which
// a page cannot send cross-origin without a preflight this API never
// grants.
func Handler(q *Queue, opts HTTPOptions) http.Handler {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	tokens := hashTokens(opts.Tokens)
	st := Status{}
	if opts.Status != nil {
		st = *opts.Status
	}
	mux := http.NewServeMux()
	statusRoutes(mux, st)
	page := newUI(q, opts.Status, tokens, log)
	page.routes(mux)
	mux.HandleFunc("GET /v1/pending", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"pending": q.List()})
	})
	mux.HandleFunc("POST /v1/pending/{id}/submit", func(w http.ResponseWriter, r *http.Request) {
		if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
			writeError(w, http.StatusUnsupportedMediaType, "send the answer as application/json: {\"output\": ...}")
			return
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, maxAnswerBytes+1))
		if err != nil {
			writeError(w, http.StatusBadRequest, "reading the answer: "+err.Error())
			return
		}
		if len(body) > maxAnswerBytes {
			writeError(w, http.StatusRequestEntityTooLarge, "the answer is over 4 MiB")
			return
		}
		var a Answer
		if err := json.Unmarshal(body, &a); err != nil {
			writeError(w, http.StatusBadRequest, "the answer is not a JSON object {\"output\": ...}: "+err.Error())
			return
		}
		if a.By == "" {
			a.By = "http"
		}
		id := r.PathValue("id")
		switch err := q.Submit(id, a); {
		case errors.Is(err, ErrUnknown):
			writeError(w, http.StatusNotFound, err.Error())
		case errors.Is(err, ErrBusy):
			writeError(w, http.StatusConflict, err.Error())
		case err != nil:
			writeError(w, http.StatusUnprocessableEntity, err.Error())
		default:
			log.Info("operator answered a waiting call", "call_id", id, "by", a.By)
			writeJSON(w, http.StatusOK, map[string]any{"ok": true})
		}
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/ui" || strings.HasPrefix(r.URL.Path, "/ui/") {
			// The page: signed in with a session cookie, its forms
			// checked for origin and CSRF (ui.go).
			if !HostIsLoopback(r.Host) && len(tokens) == 0 {
				http.Error(w, "Host "+r.Host+" is not a loopback name and no admin token is configured", http.StatusForbidden)
				return
			}
			mux.ServeHTTP(w, r)
			return
		}
		if r.Header.Get("Origin") != "" {
			writeError(w, http.StatusForbidden, "requests from browser pages are refused")
			return
		}
		if !HostIsLoopback(r.Host) && len(tokens) == 0 {
			writeError(w, http.StatusForbidden, "Host "+r.Host+" is not a loopback name and no admin token is configured")
			return
		}
		if len(tokens) > 0 && !authorized(tokens, r) {
			msg := "the admin token is not one this gateway accepts (admin.tokens, admin.token_env)"
			if r.Header.Get("Authorization") == "" {
				msg = "no admin token: send the header Authorization: Bearer TOKEN (one of admin.tokens, or admin.token_env's)"
			}
			w.Header().Set("WWW-Authenticate", `Bearer realm="toolgate-admin"`)
			writeError(w, http.StatusUnauthorized, msg)
			return
		}
		mux.ServeHTTP(w, r)
	})
}

// statusRoutes are the read-only views of the gateway's state.
func statusRoutes(mux *http.ServeMux, st Status) {
	toolsets := func(kind string) []ToolsetView {
		out := []ToolsetView{}
		if st.Toolsets == nil {
			return out
		}
		for _, ts := range st.Toolsets() {
			if kind == "" || ts.Kind == kind {
				out = append(out, ts)
			}
		}
		return out
	}
	mux.HandleFunc("GET /v1/upstreams", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"upstreams": toolsets("upstream")})
	})
	mux.HandleFunc("GET /v1/toolsets", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"toolsets": toolsets("")})
	})
	mux.HandleFunc("GET /v1/tools", func(w http.ResponseWriter, r *http.Request) {
		tools := []ToolView{}
		if st.Tools != nil {
			tools = append(tools, st.Tools(r.Context())...)
		}
		writeJSON(w, http.StatusOK, map[string]any{"tools": tools})
	})
	mux.HandleFunc("GET /v1/calls", func(w http.ResponseWriter, r *http.Request) {
		limit := 50
		if v := r.URL.Query().Get("limit"); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 || n > 1000 {
				writeError(w, http.StatusBadRequest, "limit must be a number from 1 to 1000")
				return
			}
			limit = n
		}
		calls := []CallView{}
		if st.Calls != nil {
			calls = st.Calls.List(limit)
		}
		writeJSON(w, http.StatusOK, map[string]any{"calls": calls})
	})
	mux.HandleFunc("GET /v1/calls/{id}", func(w http.ResponseWriter, r *http.Request) {
		if st.Record != nil {
			if rec, ok := st.Record(r.PathValue("id")); ok {
				w.Header().Set("Content-Type", "application/json")
				_, _ = w.Write(append(rec, '\n'))
				return
			}
		}
		writeError(w, http.StatusNotFound, "no record of that call in this gateway's run (a call in flight has none yet)")
	})
}

// BearerCheck returns a check that a request carries one of tokens as
// its bearer token (compared in constant time, as the admin API does),
// for other listeners beside it (metrics.addr). Empty tokens are
// ignored; with none, the check refuses every request.
func BearerCheck(tokens []string) func(*http.Request) bool {
	sums := hashTokens(tokens)
	return func(r *http.Request) bool { return authorized(sums, r) }
}

// hashTokens are the SHA-256 sums of the tokens that are not empty,
// which authorized compares with.
func hashTokens(tokens []string) [][32]byte {
	var sums [][32]byte
	for _, t := range tokens {
		if t != "" {
			sums = append(sums, sha256.Sum256([]byte(t)))
		}
	}
	return sums
}

func authorized(tokens [][32]byte, r *http.Request) bool {
	scheme, token, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		token = ""
	}
	got := sha256.Sum256([]byte(strings.TrimSpace(token)))
	match := 0
	for i := range tokens {
		match |= subtle.ConstantTimeCompare(got[:], tokens[i][:])
	}
	return match == 1 && ok
}

// HostIsLoopback reports whether a Host header names this machine by a
// loopback name (DNS rebinding protection when no token is configured).
func HostIsLoopback(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.Trim(host, "[]")
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}

func writeError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]any{"error": msg})
}
