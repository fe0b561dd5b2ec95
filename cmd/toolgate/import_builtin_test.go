package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/cmd/toolgate/internal/config"
)

// A client's servers named like toolgate's built-in toolsets (memory and
// filesystem are Claude Desktop's favourite examples) were printed by
// toolgate import under those names, which serve refuses (exit 2: an
// upstream named like a built-in that is on). The printed configuration
// now starts whatever built-ins are on: such a server gets another name
// and prefix: its own name, so its tools keep their names (memory__*), and
// stderr says so.
func TestImportRenamesBuiltinNames(t *testing.T) {
	dir := t.TempDir()
	desktop := filepath.Join(dir, "claude_desktop_config.json")
	if err := os.WriteFile(desktop, []byte(`{"mcpServers": {
  "memory": {"command": "/usr/bin/env", "args": ["mcp-server-memory"]},
  "filesystem": {"command": "/usr/bin/env", "args": ["mcp-server-filesystem", "/tmp"]},
  "fetch": {"command": "/usr/bin/env", "args": ["mcp-server-fetch"]}
}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := run(t, "", "import", desktop)
	if code != exitOK {
		t.Fatalf("import: exit %d\n%s", code, errOut)
	}
	// The printed upstreams under a configuration with every built-in that
	// can clash on (filesystem and memory are on by default, discovery in
	// its default auto mode), loaded as serve loads it.
	skills := filepath.Join(dir, "skills")
	if err := os.MkdirAll(skills, 0o755); err != nil {
		t.Fatal(err)
	}
	cfgFile := filepath.Join(dir, "toolgate.yaml")
	cfgText := "diagnostics:\n  enabled: true\nskills:\n  dirs: [" + skills + "]\n" + out
	if err := os.WriteFile(cfgFile, []byte(cfgText), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := loadConfigFrom(config.Options{File: cfgFile, Environ: func() []string { return nil }})
	if err != nil {
		t.Fatalf("the printed configuration does not load: %v\n%s", err, cfgText)
	}
	prefixes := map[string]string{}
	for _, u := range cfg.Upstreams {
		prefixes[u.EffectivePrefix()] = u.Name
	}
	for _, name := range []string{"memory", "filesystem", "fetch"} {
		up, ok := prefixes[name]
		if !ok {
			t.Errorf("no upstream serves %s's tools under %s__*:\n%s", name, name, out)
			continue
		}
		if name != "fetch" && (up == name || !strings.Contains(errOut, `"`+name+`"`) || !strings.Contains(errOut, `"`+up+`"`) ||
			!strings.Contains(errOut, "built-in")) {
			t.Errorf("server %s is upstream %q; stderr does not say it was renamed and why:\n%s", name, up, errOut)
		}
	}
	if !strings.Contains(out, "prefix: memory") {
		t.Errorf("the printed YAML lacks prefix: memory:\n%s", out)
	}
}
