package e2e

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// TestGrepFilesHostilePatterns (issue 9): patterns meant to exhaust the
// gateway's memory are refused before any work, with a clear error, and
// the gateway keeps serving. Before, a 3.9 MB pattern (within the 4 MiB
// body limit) cost ~950 MB of RSS per call and three at once 2.85 GB; a
// 4 KiB pattern of counted repeats compiled to ~90 MB, three times over.
func TestGrepFilesHostilePatterns(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	if err := os.WriteFile(filepath.Join(e.Sandbox, "notes.txt"), []byte("needle in a haystack\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s := e.StartHTTP(t)
	id := initSession(t, s, nil)
	call := func(n int, args map[string]any) string {
		b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": n, "method": "tools/call",
			"params": map[string]any{"name": "grep_files", "arguments": args}})
		code, _, body := post(t, s.URL, string(b), sessionHeader(id))
		if code != http.StatusOK {
			t.Errorf("call %d: HTTP %d %s", n, code, tail(body, 300))
		}
		return body
	}

	// Three 3.9 MB patterns at once: refused by validation.
	huge := strings.Repeat("a", 3900<<10)
	var wg sync.WaitGroup
	for i := range 3 {
		wg.Go(func() {
			body := call(10+i, map[string]any{"pattern": huge})
			if !strings.Contains(body, `"isError":true`) || !strings.Contains(body, "at '/pattern': maximum length 4096, got 3993600") {
				t.Errorf("a 3.9 MB pattern: %s", tail(body, 300))
			}
		})
	}
	wg.Wait()

	// The largest pattern of counted repeats within maxLength: refused by
	// the tool, saying why.
	worst := strings.Repeat(`[a-y]{1000}`, 4096/len(`[a-y]{1000}`))
	if body := call(20, map[string]any{"pattern": worst}); !strings.Contains(body, "pattern too large") {
		t.Errorf("a pattern of counted repeats: %s", tail(body, 300))
	}

	// The gateway keeps serving, and its peak RSS stayed bounded.
	if body := call(30, map[string]any{"pattern": "needle"}); !strings.Contains(body, "notes.txt:1:needle in a haystack") {
		t.Errorf("a plain grep afterwards: %s", tail(body, 300))
	}
	st := mustProcStats(t, s.cmd.Process.Pid)
	t.Logf("gateway after the hostile patterns: %s", st)
	if st.HWMKB > 256<<10 {
		t.Errorf("peak RSS %.1f MiB, want under 256 MiB", float64(st.HWMKB)/1024)
	}
	s.Stop(t)
}
