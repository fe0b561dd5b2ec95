package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestUpstreamsFromClientConfig: a Claude Desktop file that lists a real
// server (server-everything) and toolgate's own entry, named in
// upstreams_from, serves that server's tools to a real client, and skips
// the toolgate entry.
func TestUpstreamsFromClientConfig(t *testing.T) {
	t.Parallel()
	server := everythingServer(t)
	dir := t.TempDir()
	desktop := filepath.Join(dir, "claude_desktop_config.json")
	body, _ := json.MarshalIndent(map[string]any{
		"mcpServers": map[string]any{
			"everything": map[string]any{"command": "node", "args": []string{server, "stdio"}},
			"toolgate":   map[string]any{"command": toolgateBin, "args": []string{"serve"}},
		},
	}, "", "  ")
	if err := os.WriteFile(desktop, body, 0o644); err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, set("upstreams_from", []map[string]any{{"format": "auto", "path": desktop}}))
	s := e.StartHTTP(t)
	cs := s.Connect(t, era2025, nil)
	names := listedOnceStarted(t, cs, "everything__echo")
	if !slices.Contains(names, "everything__echo") {
		t.Fatalf("tools/list %v lacks the imported server's everything__echo", names)
	}
	if r := call(t, cs, "everything__echo", map[string]any{"message": "imported"}); r.IsError || !strings.Contains(textOf(r), "imported") {
		t.Errorf("calling the imported server: %q", textOf(r))
	}
	if !strings.Contains(s.Stderr(), "toolgate's own entry") {
		t.Errorf("the skipped toolgate entry is not said in the log:\n%s", tail(s.Stderr(), 2000))
	}
}

// TestImportCommand: toolgate import prints the upstreams YAML, --rewrite
// leaves the client's file with one toolgate entry and a backup of the
// original, and --config pointed at a client's file says how to use it.
func TestImportCommand(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	path := filepath.Join(e.Dir, ".mcp.json")
	orig := `{"mcpServers": {"api": {"type": "http", "url": "https://api.example.com/mcp"}, "tools": {"type": "stdio", "command": "mcp-tools"}}, "other": 1}`
	if err := os.WriteFile(path, []byte(orig), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := e.command(callCtx(t), "import", path).Output()
	if err != nil || !strings.Contains(string(out), "upstreams:") || !strings.Contains(string(out), "name: api") {
		t.Fatalf("toolgate import: %v\n%s", err, out)
	}
	cmd := e.command(callCtx(t), "import", "--rewrite", path)
	if b, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(b), "toolgate-backup-") {
		t.Fatalf("toolgate import --rewrite: %v\n%s", err, b)
	}
	after, _ := os.ReadFile(path)
	if strings.Contains(string(after), "mcp-tools") || !strings.Contains(string(after), toolgateBin) || !strings.Contains(string(after), `"other"`) {
		t.Errorf("rewritten file:\n%s", after)
	}
	backups, _ := filepath.Glob(path + ".toolgate-backup-*")
	if len(backups) != 1 {
		t.Fatalf("backups %v", backups)
	}
	if b, _ := os.ReadFile(backups[0]); string(b) != orig {
		t.Errorf("the backup is not the original: %s", b)
	}

	cmd = e.command(callCtx(t), "tools")
	cmd.Args[len(cmd.Args)-1] = path // --config at the client's file
	b, _ := cmd.CombinedOutput()
	wrong := string(b)
	if !strings.Contains(wrong, "is an MCP client's server list") || !strings.Contains(wrong, "upstreams_from") {
		t.Errorf("--config at a client's file: %s", wrong)
	}
}

// TestUpstreamsFromProjectRelative: a project's client files name their
// servers by paths relative to the project (a VS Code entry with a relative
// cwd, a Claude Code .mcp.json entry running ./tools/run.sh), as their
// clients, started in the project, read them. Served with upstreams_from
// by a toolgate working elsewhere, both servers start and their tools are
// listed and called.
func TestUpstreamsFromProjectRelative(t *testing.T) {
	t.Parallel()
	server := everythingServer(t)
	proj := t.TempDir()
	if err := os.MkdirAll(filepath.Join(proj, "tools"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(proj, ".vscode"), 0o755); err != nil {
		t.Fatal(err)
	}
	run := "#!/bin/sh\nexec node " + server + " stdio\n"
	if err := os.WriteFile(filepath.Join(proj, "tools", "run.sh"), []byte(run), 0o755); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		filepath.Join(proj, ".vscode", "mcp.json"): `{"servers": {"vs": {"type": "stdio", "command": "./run.sh", "cwd": "tools"}}}`,
		filepath.Join(proj, ".mcp.json"):           `{"mcpServers": {"cc": {"type": "stdio", "command": "./tools/run.sh"}}}`,
	}
	var from []map[string]any
	for path, body := range files {
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		from = append(from, map[string]any{"format": "auto", "path": path})
	}
	e := newEnv(t, set("upstreams_from", from))
	s := e.StartHTTP(t)
	cs := s.Connect(t, era2025, nil)
	names := listedOnceStarted(t, cs, "vs__echo", "cc__echo")
	for _, want := range []string{"vs__echo", "cc__echo"} {
		if !slices.Contains(names, want) {
			t.Errorf("tools/list %v lacks %s: the project-relative server did not start\n%s", names, want, tail(s.Stderr(), 2000))
			continue
		}
		if r := call(t, cs, want, map[string]any{"message": "relative"}); r.IsError || !strings.Contains(textOf(r), "relative") {
			t.Errorf("calling %s: %q", want, textOf(r))
		}
	}
}

// TestUpstreamsFromCodex: Codex CLI's config.toml named in upstreams_from
// serves its enabled server to a real client and skips the one Codex has
// switched off, saying so.
func TestUpstreamsFromCodex(t *testing.T) {
	t.Parallel()
	server := everythingServer(t)
	path := filepath.Join(t.TempDir(), ".codex", "config.toml")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	body := "model = \"o3\"\n\n[mcp_servers.everything]\ncommand = \"node\"\nargs = ['" + server + "', \"stdio\"]\n" +
		"env_vars = [\"TG_CODEX_UNSET\"]\ntool_timeout_sec = 30\n\n" +
		"[mcp_servers.off]\ncommand = \"node\"\nargs = ['" + server + "', \"stdio\"]\nenabled = false\n"
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, set("upstreams_from", []map[string]any{{"format": "auto", "path": path}}))
	s := e.StartHTTP(t)
	cs := s.Connect(t, era2025, nil)
	names := listedOnceStarted(t, cs, "everything__echo")
	if !slices.Contains(names, "everything__echo") || slices.Contains(names, "off__echo") {
		t.Fatalf("tools/list %v: want everything__echo, and nothing of the server Codex has switched off\n%s", names, tail(s.Stderr(), 2000))
	}
	if r := call(t, cs, "everything__echo", map[string]any{"message": "from codex"}); r.IsError || !strings.Contains(textOf(r), "from codex") {
		t.Errorf("calling the imported server: %q", textOf(r))
	}
	if !strings.Contains(s.Stderr(), "enabled = false") {
		t.Errorf("the skipped server is not said in the log:\n%s", tail(s.Stderr(), 2000))
	}
}

// listedOnceStarted lists the tools until every one of want is among them
// (or 30 s pass), and returns the names last listed. An imported server is
// a child process that serve waits for only so long at start-up (3 s):
// under the load of parallel tests it may connect later, and its tools are
// listed once it has.
func listedOnceStarted(t *testing.T, cs *mcp.ClientSession, want ...string) []string {
	t.Helper()
	var names []string
	var lastErr error
	waitFor(30*time.Second, func() bool {
		res, err := cs.ListTools(callCtx(t), nil)
		if err != nil {
			lastErr = err
			return false
		}
		names = names[:0]
		for _, tl := range res.Tools {
			names = append(names, tl.Name)
		}
		for _, w := range want {
			if !slices.Contains(names, w) {
				return false
			}
		}
		return true
	})
	if names == nil && lastErr != nil {
		t.Fatalf("tools/list: %v", lastErr)
	}
	return names
}
