package main

import (
	"context"
	stdlog "log"
	"log/slog"
	"strings"
)

// httpErrorLog is net/http's error log for the served endpoint, in
// toolgate's log. A handler's panic, which net/http recovers by closing
// the connection without an answer (the client sees EOF), is an error;
// a handler's second WriteHeader is a bug, a warning; the rest is what
// clients do (a malformed request, a connection dropped mid-request, a
// failed TLS handshake) and goes at debug, so that clients cannot fill
// the log.
func httpErrorLog(log *slog.Logger) *stdlog.Logger {
	return stdlog.New(httpErrorWriter{log}, "", 0)
}

type httpErrorWriter struct{ log *slog.Logger }

func (w httpErrorWriter) Write(p []byte) (int, error) {
	msg := strings.TrimSuffix(string(p), "\n")
	level := slog.LevelDebug
	switch {
	case strings.HasPrefix(msg, "http: panic serving"):
		level = slog.LevelError
	case strings.HasPrefix(msg, "http: superfluous response.WriteHeader"):
		level = slog.LevelWarn
	}
	w.log.Log(context.Background(), level, msg, "source", "net/http")
	return len(p), nil
}
