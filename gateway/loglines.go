package gateway

import (
	"context"
	"log"
	"log/slog"
	"strings"
)

// logLines turns what a library writes to a log.Logger into toolgate's
// log: one record per line, the line as its message, the library as its
// source, at the level levelOf gives the line.
type logLines struct {
	log     *slog.Logger
	source  string
	levelOf func(line string) slog.Level
}

func (w logLines) Write(p []byte) (int, error) {
	line := strings.TrimSpace(string(p))
	w.log.Log(context.Background(), w.levelOf(line), line, "source", w.source)
	return len(p), nil
}

// HTTPErrorLog is an http.Server's ErrorLog in toolgate's log. A
// handler's panic, which net/http recovers by closing the connection
// without an answer (the client sees EOF), is an error; a handler's
// second WriteHeader is a bug, a warning; the rest is what clients do (a
// malformed request, a connection dropped mid-request, a failed TLS
// handshake) and goes at debug, so that clients cannot fill the log.
func HTTPErrorLog(l *slog.Logger) *log.Logger {
	return log.New(logLines{l, "net/http", httpErrorLevel}, "", 0)
}

func httpErrorLevel(line string) slog.Level {
	switch {
	case strings.HasPrefix(line, "http: panic serving"):
		return slog.LevelError
	case strings.HasPrefix(line, "http: superfluous response.WriteHeader"):
		return slog.LevelWarn
	}
	return slog.LevelDebug
}

// mcpgoErrorLog is mcp-go's stdio error log in toolgate's log, at warn.
func mcpgoErrorLog(l *slog.Logger) *log.Logger {
	return log.New(logLines{l, "mcp-go", func(string) slog.Level { return slog.LevelWarn }}, "", 0)
}
