package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// TestArchiveOutOfSandboxReach (issue 9): with the runs directory and the
// memory database inside a sandbox root (as the default runs directory
// under ~/.local/state is with `sandbox.roots: ["~"]`), no filesystem tool
// can read, write or list them, by path or through a symlink; every call,
// the refused ones included, is in the records; and a record file replaced
// from outside is detected, the foreign file kept aside, and every record
// kept.
func TestArchiveOutOfSandboxReach(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(cfg map[string]any) {
		set("sandbox.roots", []string{filepath.Dir(cfg["runs_dir"].(string))})(cfg)
		set("memory.enabled", true)(cfg)
		set("memory.path", filepath.Join(filepath.Dir(cfg["runs_dir"].(string)), "state", "memory.db"))(cfg)
	})
	s := e.StartHTTP(t)
	cs := s.Connect(t, era2025, nil)
	run := e.runDir(t)
	rel := func(p string) string { r, _ := filepath.Rel(e.Dir, p); return r }
	toolsFile := filepath.Join(run, "logs", "tools.jsonl")
	if err := os.Symlink(e.RunsDir, filepath.Join(e.Dir, "sandbox", "runs-link")); err != nil {
		t.Fatal(err)
	}

	refused := []struct {
		tool string
		args map[string]any
	}{
		{"write_file", map[string]any{"path": rel(toolsFile), "content": "{}\n"}},
		{"read_file", map[string]any{"path": rel(toolsFile)}},
		{"read_file", map[string]any{"path": rel(filepath.Join(run, "events.jsonl"))}},
		{"write_file", map[string]any{"path": rel(filepath.Join(run, "artifacts", "planted.txt")), "content": "planted"}},
		{"read_file", map[string]any{"path": "state/memory.db"}},
		{"write_file", map[string]any{"path": "state/memory.db", "content": "x"}},
		{"write_file", map[string]any{"path": "sandbox/runs-link/" + filepath.Base(run) + "/run.json", "content": "{}"}},
		{"list_files", map[string]any{"path": "runs"}},
		{"grep_files", map[string]any{"pattern": "call_id", "path": "runs"}},
	}
	for _, c := range refused {
		res := call(t, cs, c.tool, c.args)
		if !res.IsError || !strings.Contains(textOf(res), "toolgate's own state") {
			t.Errorf("%s %v: want refused as toolgate's own state, got %s", c.tool, c.args, tail(textOf(res), 300))
		}
	}
	// A listing of the root leaves the protected entries out; ordinary
	// files are served as usual.
	if res := call(t, cs, "list_files", map[string]any{"path": "."}); res.IsError || strings.Contains(textOf(res), "runs") || strings.Contains(textOf(res), "memory.db") || !strings.Contains(textOf(res), "sandbox") {
		t.Errorf("list_files of the root: %s", textOf(res))
	}
	// A grep of the whole root searches around them: nothing of the
	// records (full of "call_id") is found or named.
	if res := call(t, cs, "grep_files", map[string]any{"pattern": "call_id", "path": "."}); res.IsError || strings.Contains(textOf(res), "runs") || strings.Contains(textOf(res), "memory.db") || strings.Contains(textOf(res), "toolgate's own state") {
		t.Errorf("grep_files of the root: %s", tail(textOf(res), 600))
	}
	if res := call(t, cs, "write_file", map[string]any{"path": "sandbox/ok.txt", "content": "fine"}); res.IsError {
		t.Errorf("an ordinary write: %s", textOf(res))
	}
	if _, err := os.Stat(filepath.Join(run, "artifacts", "planted.txt")); err == nil {
		t.Error("a planted artifact exists")
	}

	// Every call is recorded, strictly, and nothing was lost.
	want := len(refused) + 3
	var recs []ToolRecord
	if !waitFor(10*time.Second, func() bool { recs = e.liveTools(t); return len(recs) >= want }) {
		t.Fatalf("tools.jsonl holds %d records, want %d", len(recs), want)
	}
	if d := healthDetails(t, s); d["write_errors"] != float64(0) {
		t.Errorf("/healthz write_errors = %v", d["write_errors"])
	}

	// Replaced from outside (rename over the file): detected, restored,
	// the foreign file kept aside, later calls recorded in the restored file.
	forged := filepath.Join(run, "logs", "forged.jsonl")
	if err := os.WriteFile(forged, []byte(`{"call_id":"forged","tool":"nothing"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(forged, toolsFile); err != nil {
		t.Fatal(err)
	}
	if !waitFor(15*time.Second, func() bool { return healthDetails(t, s)["record_files_replaced"] == float64(1) }) {
		t.Fatalf("/healthz record_files_replaced = %v, want 1", healthDetails(t, s)["record_files_replaced"])
	}
	if res := call(t, cs, "list_files", map[string]any{"path": "sandbox"}); res.IsError {
		t.Errorf("a call after the replacement: %s", textOf(res))
	}
	s.Stop(t)
	a := e.Archive(t)
	if len(a.Tools) != want+1 {
		t.Errorf("after the replacement tools.jsonl holds %d records, want %d", len(a.Tools), want+1)
	}
	for _, r := range a.Tools {
		if r.CallID == "forged" {
			t.Error("the forged record is in tools.jsonl")
		}
	}
	aside, _ := filepath.Glob(toolsFile + ".replaced-*")
	if len(aside) != 1 {
		t.Errorf("foreign files kept aside: %v, want 1", aside)
	}
	if a.eventTypes()["archive.file_replaced"] != 1 {
		t.Errorf("events: %v, want one archive.file_replaced", a.eventTypes())
	}
}

// TestRecordsStrictAndBounded (issue 9): arguments with invalid UTF-8 are
// recorded as the tool received them (U+FFFD), as strict JSON; a large
// write_file content is summarized in the record by size and digest, not
// copied; a multi-megabyte invalid argument is not echoed back whole.
func TestRecordsStrictAndBounded(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	s := e.StartHTTP(t)
	id := initSession(t, s, nil)
	send := func(n int, args string) string {
		body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"write_file","arguments":%s}}`, n, args)
		code, _, resp := post(t, s.URL, body, sessionHeader(id))
		if code != http.StatusOK {
			t.Fatalf("call %d: HTTP %d %s", n, code, tail(resp, 300))
		}
		return resp
	}
	send(1, "{\"path\":\"bad.txt\",\"content\":\"caf\xe9 \xff\"}")
	big := strings.Repeat("0123456789abcdef", 200<<10/16) // 200 KiB
	send(2, fmt.Sprintf(`{"path":"big.txt","content":%q}`, big))
	huge := strings.Repeat("x", 3<<20)
	if resp := send(3, fmt.Sprintf(`{"path":%q,"content":"y"}`, huge)); len(resp) > 64<<10 {
		t.Errorf("an invalid 3 MiB path is echoed back: the answer is %d bytes", len(resp))
	}
	got, err := os.ReadFile(filepath.Join(e.Sandbox, "bad.txt"))
	if err != nil || string(got) != "caf\uFFFD \uFFFD" {
		t.Errorf("bad.txt holds %q (%v), want the replacement characters", got, err)
	}
	s.Stop(t)
	raw, err := os.ReadFile(filepath.Join(e.runDir(t), "logs", "tools.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if !utf8.Valid(raw) {
		t.Error("tools.jsonl is not valid UTF-8")
	}
	for i, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		if len(line) > 16<<10 {
			t.Errorf("record line %d is %d bytes", i+1, len(line))
		}
	}
	recs := e.Archive(t).Tools // strict parse of every line
	if len(recs) != 3 {
		t.Fatalf("%d records, want 3", len(recs))
	}
	var args map[string]string
	if err := json.Unmarshal(recs[0].Arguments, &args); err != nil || args["content"] != "caf\uFFFD \uFFFD" {
		t.Errorf("record of the invalid UTF-8 call: %s (%v)", recs[0].Arguments, err)
	}
	if err := json.Unmarshal(recs[1].Arguments, &args); err != nil || !strings.Contains(args["content"], fmt.Sprintf("[%d bytes in all, sha256:", len(big))) {
		t.Errorf("record of the 200 KiB write: %s (%v)", tail(string(recs[1].Arguments), 300), err)
	}
}
