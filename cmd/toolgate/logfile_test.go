package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLogFileKeepsTheLastLines: with log.file, the lines logged as serve
// stops ("toolgate stopped") reach the file (they were logged after it was
// closed, and lost).
func TestLogFileKeepsTheLastLines(t *testing.T) {
	logFile := filepath.Join(t.TempDir(), "toolgate.log")
	code, _, stderr := run(t, "log:\n  file: "+logFile+"\n", "serve") // stdin is empty: the client is gone at once
	if code != 0 {
		t.Fatalf("serve: exit %d: %s", code, stderr)
	}
	b, err := os.ReadFile(logFile)
	if err != nil {
		t.Fatal(err)
	}
	// The stdio serve says what it serves on, and why it stopped.
	for _, want := range []string{"toolgate starting", "serving MCP over stdio", "stdin closed: the client ended the session", "toolgate stopped"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("log.file lacks %q:\n%s", want, b)
		}
	}
}

// TestLoggerFailure: a log.file that cannot be opened is a clear error, and
// nothing is left running.
func TestLoggerFailure(t *testing.T) {
	code, _, stderr := run(t, "log:\n  file: /nonexistent-dir/x/toolgate.log\n", "serve")
	if code == 0 || !strings.Contains(stderr, "log.file") {
		t.Errorf("exit %d, stderr %q: want a failure naming log.file", code, stderr)
	}
}
