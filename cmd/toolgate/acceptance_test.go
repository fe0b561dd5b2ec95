package main

// Seed 002's acceptance criteria that are about the assembled gateway,
// shown through the command line (criterion 9: tool behaviour can be
// tested without a model). The others are shown where they live:
// 3 in toolsets/skills, 4 and 11 in toolsets/memory, 6, 7 and 10 in
// policy; merge rules in policy/effective_test.go.

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// toolsets returns the toolset of every tool `toolgate tools --json` lists.
func toolsets(t *testing.T, config string) map[string]string {
	t.Helper()
	code, out, errOut := run(t, config, "tools", "--json")
	if code != exitOK {
		t.Fatalf("tools: %d %s", code, errOut)
	}
	var v struct {
		Tools []struct{ Name, Toolset string } `json:"tools"`
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatal(err)
	}
	m := map[string]string{}
	for _, tool := range v.Tools {
		m[tool.Name] = tool.Toolset
	}
	return m
}

func names(m map[string]string) string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return strings.Join(out, ",")
}

// TestAcceptance1RuntimeBuildsToolsetsFromConfig: seed 002 criterion 1.
func TestAcceptance1RuntimeBuildsToolsetsFromConfig(t *testing.T) {
	skills := t.TempDir()
	os.MkdirAll(filepath.Join(skills, "s"), 0o755)
	os.WriteFile(filepath.Join(skills, "s", "SKILL.md"), []byte("---\nname: s\ndescription: d\n---\nbody\n"), 0o644)
	tests := []struct {
		name, config, want string
	}{
		{"defaults", "", "grep_files,list_files,read_file,recall_memory,write_file,write_memory"},
		{"no filesystem, memory writes disabled", "filesystem:\n  enabled: false\nmemory:\n  write_mode: disabled\n", "recall_memory"},
		{"skills and diagnostics", "filesystem:\n  enabled: false\nmemory:\n  enabled: false\ndiagnostics:\n  enabled: true\nskills:\n  dirs: [" + skills + "]\n",
			"echo,list_skills,load_skill,sleep"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := names(toolsets(t, tc.config)); got != tc.want {
				t.Errorf("tools %s, want %s", got, tc.want)
			}
		})
	}
}

// TestAcceptance2FilesystemToolsEnforceSandbox: seed 002 criterion 2.
func TestAcceptance2FilesystemToolsEnforceSandbox(t *testing.T) {
	root := t.TempDir()
	outside := t.TempDir()
	os.WriteFile(filepath.Join(outside, "secret.txt"), []byte("secret"), 0o644)
	os.Symlink(outside, filepath.Join(root, "link"))
	cfg := "sandbox:\n  roots: [" + root + "]\n"
	for _, args := range []string{
		`{"path":"../secret.txt"}`,
		`{"path":"` + filepath.Join(outside, "secret.txt") + `"}`,
		`{"path":"link/secret.txt"}`,
	} {
		code, out, _ := run(t, cfg, "call", "read_file", args)
		if code != exitFailure || strings.Contains(out, "secret\n") || !strings.Contains(out, "sandbox") {
			t.Errorf("read_file %s: exit %d\n%s", args, code, out)
		}
	}
	code, out, _ := run(t, cfg, "call", "write_file", `{"path":"link/new.txt","content":"x"}`)
	if code != exitFailure || fileExists(filepath.Join(outside, "new.txt")) {
		t.Errorf("write through a symlink out of the sandbox: exit %d\n%s", code, out)
	}
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

// lastRunTools reads logs/tools.jsonl of the only run under dir's state.
func lastRunTools(t *testing.T, runsDir string) []map[string]any {
	t.Helper()
	dirs, _ := filepath.Glob(filepath.Join(runsDir, "*", "logs", "tools.jsonl"))
	if len(dirs) != 1 {
		t.Fatalf("runs: %v", dirs)
	}
	f, err := os.Open(dirs[0])
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []map[string]any
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("tools.jsonl line %q: %v", sc.Text(), err)
		}
		out = append(out, m)
	}
	return out
}

// TestAcceptance5CallsRecordDurationAndStatus: seed 002 criterion 5.
func TestAcceptance5CallsRecordDurationAndStatus(t *testing.T) {
	runs := filepath.Join(t.TempDir(), "runs")
	code, _, errOut := run(t, "runs_dir: "+runs+"\n", "call", "read_file", `{"path":"missing.txt"}`)
	if code != exitFailure {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	recs := lastRunTools(t, runs)
	if len(recs) != 1 {
		t.Fatalf("%d records", len(recs))
	}
	r := recs[0]
	if r["tool"] != "read_file" || r["status"] != "tool_error" || r["is_error"] != true {
		t.Errorf("record %v", r)
	}
	if d, ok := r["duration_ms"].(float64); !ok || d < 0 {
		t.Errorf("duration_ms %v", r["duration_ms"])
	}
}

// TestAcceptance8LargeOutputSummarizedByDefault: seed 002 criterion 8,
// with the default limit (32 KiB).
func TestAcceptance8LargeOutputSummarizedByDefault(t *testing.T) {
	root := t.TempDir()
	runs := filepath.Join(t.TempDir(), "runs")
	var b strings.Builder
	for i := 0; b.Len() < 200_000; i++ {
		b.WriteString(strings.Repeat("x", 79) + "\n")
	}
	os.WriteFile(filepath.Join(root, "big.txt"), []byte(b.String()), 0o644)
	code, out, errOut := run(t, "runs_dir: "+runs+"\nsandbox:\n  roots: ["+root+"]\n", "call", "read_file", `{"path":"big.txt"}`, "--json")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if len(out) > 64<<10 {
		t.Errorf("result is %d bytes; want it summarized under the 32 KiB limit", len(out))
	}
	var res struct {
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
			URI  string `json:"uri"`
		} `json:"content"`
	}
	json.Unmarshal([]byte(out), &res)
	var link string
	for _, c := range res.Content {
		if c.Type == "resource_link" {
			link = c.URI
		}
	}
	if !strings.HasPrefix(link, "toolgate://artifacts/") || !strings.Contains(out, "output truncated") {
		t.Fatalf("no summary with an artifact link:\n%.2000s", out)
	}
	recs := lastRunTools(t, runs)
	arts, _ := recs[0]["artifacts"].([]any)
	if len(arts) != 1 {
		t.Fatalf("record artifacts %v", recs[0]["artifacts"])
	}
	path := arts[0].(map[string]any)["path"].(string)
	full, err := os.ReadFile(path)
	// read_file returns its first 2000 numbered lines (174 KB): the artifact
	// holds all of them, where the result holds a summary.
	if err != nil || len(full) < 150_000 || !strings.Contains(string(full), "  2000\t") {
		t.Errorf("artifact %s: %d bytes, %v", path, len(full), err)
	}
}
