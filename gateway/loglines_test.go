package gateway

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

type logRecord struct{ Level, Msg, Source string }

func logRecords(t *testing.T, buf *bytes.Buffer) []logRecord {
	t.Helper()
	var out []logRecord
	for _, line := range bytes.Split(bytes.TrimSpace(buf.Bytes()), []byte("\n")) {
		var rec logRecord
		if err := json.Unmarshal(line, &rec); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		out = append(out, rec)
	}
	return out
}

// TestHTTPErrorLogPanic: a handler's panic, which net/http answers by
// closing the connection, is in toolgate's log as an error that says what
// panicked (at the default level it used to be invisible).
func TestHTTPErrorLogPanic(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&buf, nil)) // info and above, as served
	ts := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		panic("boom")
	}))
	ts.Config.ErrorLog = HTTPErrorLog(log)
	ts.Start()
	resp, err := http.Post(ts.URL, "application/json", strings.NewReader("{}"))
	if err == nil {
		resp.Body.Close()
		t.Fatalf("a panicking handler answered %d; want the connection closed", resp.StatusCode)
	}
	ts.Close() // waits for the connection's goroutine, and so for its log line
	recs := logRecords(t, &buf)
	if len(recs) != 1 || recs[0].Level != "ERROR" || recs[0].Source != "net/http" ||
		!strings.HasPrefix(recs[0].Msg, "http: panic serving") || !strings.Contains(recs[0].Msg, "boom") {
		t.Fatalf("want one error from net/http about the panic; got %+v", recs)
	}
}

// TestHTTPErrorLogLevels: net/http's other lines by kind (a line as
// net/http writes it, through the log.Logger).
func TestHTTPErrorLogLevels(t *testing.T) {
	for _, c := range []struct{ line, level string }{
		{"http: panic serving 127.0.0.1:5555: boom\ngoroutine 7 [running]:\n", "ERROR"},
		{"http: superfluous response.WriteHeader call from main.handler (x.go:1)\n", "WARN"},
		{"http: TLS handshake error from 127.0.0.1:5555: EOF\n", "DEBUG"},
		{"http: URL query contains semicolon, which is no longer a supported separator\n", "DEBUG"},
	} {
		var buf bytes.Buffer
		HTTPErrorLog(slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))).Print(c.line)
		recs := logRecords(t, &buf)
		if len(recs) != 1 || recs[0].Level != c.level || recs[0].Msg != strings.TrimSuffix(c.line, "\n") {
			t.Errorf("%q: got %+v; want one %s record of the line", c.line, recs, c.level)
		}
	}
}

// TestMCPGoErrorLog: mcp-go's stdio error lines are warnings from mcp-go,
// the line as the message.
func TestMCPGoErrorLog(t *testing.T) {
	var buf bytes.Buffer
	mcpgoErrorLog(slog.New(slog.NewJSONHandler(&buf, nil))).Printf("Error reading input: %v", "EOF")
	recs := logRecords(t, &buf)
	if len(recs) != 1 || recs[0].Level != "WARN" || recs[0].Source != "mcp-go" || recs[0].Msg != "Error reading input: EOF" {
		t.Fatalf("got %+v; want one warning from mcp-go with the line", recs)
	}
}
