package upstream

import (
	"strings"
	"testing"
)

// TestStderrTailWhy: the line an exit's report quotes is the last one that
// reads like an error and is not a stack frame, else the last line.
func TestStderrTailWhy(t *testing.T) {
	for _, tc := range []struct{ name, stderr, want string }{
		{"python", "Traceback (most recent call last):\n  File \"/srv/server.py\", line 1, in <module>\n    import mcp\nModuleNotFoundError: No module named 'mcp'\n", "ModuleNotFoundError: No module named 'mcp'"},
		{"node", "/srv/index.js:10\n    throw new Error(\"boom\");\n    ^\n\nError: boom\n    at Object.<anonymous> (/srv/index.js:10:11)\n    at Module._compile (node:internal/modules/cjs/loader:1376:14)\n    at node:internal/main/run_main_module:28:49\n\nNode.js v20.11.0\n", "Error: boom"},
		{"go panic", "panic: no API key\n\ngoroutine 1 [running]:\nmain.main()\n\t/srv/main.go:9 +0x25\n", "panic: no API key"},
		{"no error words", "listening on stdio\nshutting down: stdin closed\n", "shutting down: stdin closed"},
		{"nothing", "\n  \n", ""},
	} {
		var tail stderrTail
		for _, l := range strings.Split(tc.stderr, "\n") {
			tail.add(l)
		}
		if got := tail.why(); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
	// Bounded: the last tailLines lines, each cut.
	var tail stderrTail
	for i := 0; i < 3*tailLines; i++ {
		tail.add(strings.Repeat("x", 2*tailLineKept))
	}
	if len(tail.lines) != tailLines || len(tail.lines[0]) != tailLineKept {
		t.Errorf("kept %d lines of %d bytes", len(tail.lines), len(tail.lines[0]))
	}
}
