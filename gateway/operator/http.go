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
}

// maxAnswerBytes bounds a submitted answer.
const maxAnswerBytes = 4 << 20

// Handler is the admin HTTP API:
//
//	GET  /v1/pending              the waiting calls, oldest first: {"pending": [Item...]}
//	POST /v1/pending/{id}/submit  {"output": <JSON value>}: answer a waiting call
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
	var tokens [][32]byte
	for _, t := range opts.Tokens {
		if t != "" {
			tokens = append(tokens, sha256.Sum256([]byte(t)))
		}
	}
	mux := http.NewServeMux()
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
		case err != nil:
			writeError(w, http.StatusUnprocessableEntity, err.Error())
		default:
			log.Info("operator answered a waiting call", "call_id", id, "by", a.By)
			writeJSON(w, http.StatusOK, map[string]any{"ok": true})
		}
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Origin") != "" {
			writeError(w, http.StatusForbidden, "requests from browser pages are refused")
			return
		}
		if !hostIsLoopback(r.Host) && len(tokens) == 0 {
			writeError(w, http.StatusForbidden, "Host "+r.Host+" is not a loopback name and no admin token is configured")
			return
		}
		if len(tokens) > 0 && !authorized(tokens, r) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="toolgate-admin"`)
			writeError(w, http.StatusUnauthorized, "missing or invalid admin token")
			return
		}
		mux.ServeHTTP(w, r)
	})
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

// hostIsLoopback reports whether a Host header names this machine by a
// loopback name (DNS rebinding protection when no token is configured).
func hostIsLoopback(host string) bool {
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
