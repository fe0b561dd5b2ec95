package clientconfig

import (
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/adapters/upstream"
	"go.yaml.in/yaml/v3"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// fixtures are each client's file as its documentation shows it.
var fixtures = map[string]string{
	ClaudeDesktop: "testdata/claude-desktop/claude_desktop_config.json",
	ClaudeCode:    "testdata/claude-code/.mcp.json",
	Cursor:        "testdata/cursor/.cursor/mcp.json",
	VSCode:        "testdata/vscode/.vscode/mcp.json",
	Gemini:        "testdata/gemini/.gemini/settings.json",
	Windsurf:      "testdata/windsurf/.codeium/windsurf/mcp_config.json",
	Codex:         "testdata/codex/.codex/config.toml",
}

var testEnv = map[string]string{
	"HOME": "/home/me", "SEARCH_KEY": "k-123", "REPO": "/src/app", "API_BASE_URL": "",
}

func lookup(name string) (string, bool) { v, ok := testEnv[name]; return v, ok }

// TestImportGolden: every format, detected from its usual file name,
// prints the upstreams toolgate would run (testdata/*.golden.yaml).
func TestImportGolden(t *testing.T) {
	for format, path := range fixtures {
		t.Run(format, func(t *testing.T) {
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if got, err := Detect(path, data); err != nil || got != format {
				t.Errorf("Detect(%s) = %q, %v", path, got, err)
			}
			res, err := Parse(path, data, Auto, lookup)
			if err != nil {
				t.Fatal(err)
			}
			got, err := res.YAML()
			if err != nil {
				t.Fatal(err)
			}
			// A project's relative cwd is printed from the project's
			// root: where this checkout is, written <testdata>.
			abs, err := filepath.Abs("testdata")
			if err != nil {
				t.Fatal(err)
			}
			got = []byte(strings.ReplaceAll(string(got), abs, "<testdata>"))
			golden := filepath.Join("testdata", format+".golden.yaml")
			if *update {
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update)", err)
			}
			if string(got) != string(want) {
				t.Errorf("%s:\n%s\nwant:\n%s", path, got, want)
			}
		})
	}
}

func TestImportDetails(t *testing.T) {
	parse := func(format string) *Result {
		t.Helper()
		res, err := Load(fixtures[format], format, lookup)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	byName := func(r *Result, name string) int {
		for i, u := range r.Upstreams {
			if u.Name == name {
				return i
			}
		}
		t.Fatalf("no upstream %q in %+v", name, r.Upstreams)
		return -1
	}
	cd := parse(ClaudeDesktop)
	if len(cd.Upstreams) != 2 || len(cd.Skipped) != 1 || !strings.Contains(cd.Skipped[0], "toolgate's own entry") {
		t.Errorf("Claude Desktop: %d upstreams, skipped %v", len(cd.Upstreams), cd.Skipped)
	}
	cc := parse(ClaudeCode)
	api := cc.Upstreams[byName(cc, "api-server")]
	if api.URL != "https://api.example.com/mcp" || api.Headers["Authorization"] != "Bearer ${API_KEY}" {
		t.Errorf("Claude Code expansion: url %q, headers %v (default used for an empty var; header a reference)", api.URL, api.Headers)
	}
	local := cc.Upstreams[byName(cc, "local-tools")]
	if local.Command != "/home/me/bin/mcp-tools" || local.Env["CACHE_DIR"] != "${CACHE_DIR:-/tmp/cache}" {
		t.Errorf("Claude Code stdio: %+v", local)
	}
	// ${VAR:-default} keeps its default: with CACHE_DIR unset the entry
	// still validates, as Claude Code still starts the server.
	t.Setenv("CACHE_DIR", "")
	os.Unsetenv("CACHE_DIR")
	if err := upstream.ValidateAll([]upstream.Config{local}); err != nil {
		t.Errorf("Claude Code ${VAR:-default} with VAR unset: %v", err)
	}
	if !strings.Contains(strings.Join(cc.Notes, "\n"), "alwaysAllow") {
		t.Errorf("an unknown field is not reported: %v", cc.Notes)
	}
	cu := parse(Cursor)
	ws := cu.Upstreams[byName(cu, "web-search")]
	if strings.Join(ws.Args, " ") != "-y mcp-search --key k-123" || ws.Env["SEARCH_REGION"] != "${REGION}" {
		t.Errorf("Cursor ${env:}: %+v", ws)
	}
	if !cu.Upstreams[byName(cu, "old")].Disabled {
		t.Error("a disabled server is not kept disabled")
	}
	vs := parse(VSCode)
	p := vs.Upstreams[byName(vs, "Perplexity")]
	if p.Env["PERPLEXITY_API_KEY"] != "${PERPLEXITY_KEY}" || !strings.Contains(strings.Join(vs.Notes, "\n"), "PERPLEXITY_KEY") {
		t.Errorf("VS Code ${input:}: env %v, notes %v", p.Env, vs.Notes)
	}
	gm := parse(Gemini)
	if u := gm.Upstreams[byName(gm, "sseServer")]; u.Transport != "sse" {
		t.Errorf("Gemini url is SSE: %+v", u)
	}
	if u := gm.Upstreams[byName(gm, "httpServer")]; u.Transport != "http" || u.Headers["Authorization"] != "Bearer ${TOKEN}" {
		t.Errorf("Gemini httpUrl: %+v", u)
	}
	wantDir, _ := filepath.Abs("testdata/gemini/mcp-servers/python") // the project's, not toolgate's working directory
	if u := gm.Upstreams[byName(gm, "pythonTools")]; u.Dir != wantDir || u.Env["DATABASE_URL"] != "${DB_CONNECTION_STRING}" {
		t.Errorf("Gemini cwd and $VAR: %+v", u)
	}
}

// TestImportEditorVariables: VS Code's and Cursor's predefined variables
// are resolved where they mean the same to toolgate (${userHome},
// ${pathSeparator}, ${/}); an entry using one of the editor's state (the
// open workspace, the current file) is skipped, saying which and what to
// do, never imported with the variable as literal text or as an
// environment reference that cannot be set.
func TestImportEditorVariables(t *testing.T) {
	for _, c := range []struct {
		name, format, entry string
		env                 map[string]string
		wantArgs, wantEnv   string // the imported args (joined by spaces) and env (NAME=VALUE)
		wantSkip            string // or what the skip says
	}{
		{"userHome in args and env", VSCode, `{"command": "srv", "args": ["${userHome}/data"], "env": {"D": "${userHome}${/}x"}}`, testEnv, "/home/me/data", "D=/home/me/x", ""},
		{"pathSeparator", Cursor, `{"command": "srv", "args": ["a${pathSeparator}b"]}`, testEnv, "a/b", "", ""},
		{"userHome from USERPROFILE", Cursor, `{"command": "srv", "args": ["${userHome}"]}`, map[string]string{"USERPROFILE": `C:\Users\me`}, `C:\Users\me`, "", ""},
		{"userHome unknown", VSCode, `{"command": "srv", "args": ["${userHome}"]}`, nil, "", "", "${userHome}"},
		{"workspaceFolder in args", VSCode, `{"command": "npx", "args": ["-y", "fs", "${workspaceFolder}"]}`, testEnv, "", "", "${workspaceFolder}"},
		{"workspaceFolder in env", VSCode, `{"command": "srv", "env": {"ROOT": "${workspaceFolder}"}}`, testEnv, "", "", "${workspaceFolder}"},
		{"named workspace folder in cwd", VSCode, `{"command": "srv", "cwd": "${workspaceFolder:app}"}`, testEnv, "", "", "${workspaceFolder:app}"},
		{"workspaceFolderBasename in a header", Cursor, `{"url": "https://x/mcp", "headers": {"X-Project": "${workspaceFolderBasename}"}}`, testEnv, "", "", "${workspaceFolderBasename}"},
		{"current file", VSCode, `{"command": "srv", "args": ["${file}"]}`, testEnv, "", "", "${file}"},
	} {
		t.Run(c.name, func(t *testing.T) {
			key := map[string]string{VSCode: "servers", Cursor: "mcpServers"}[c.format]
			env := func(n string) (string, bool) { v, ok := c.env[n]; return v, ok }
			res, err := Parse("x.json", []byte(`{"`+key+`": {"s": `+c.entry+`}}`), c.format, env)
			if err != nil {
				t.Fatal(err)
			}
			if c.wantSkip != "" {
				if len(res.Upstreams) != 0 || len(res.Skipped) != 1 || !strings.Contains(res.Skipped[0], c.wantSkip) {
					t.Errorf("upstreams %+v, skipped %q; want skipped naming %s", res.Upstreams, res.Skipped, c.wantSkip)
				}
				return
			}
			if len(res.Upstreams) != 1 {
				t.Fatalf("upstreams %+v, skipped %q", res.Upstreams, res.Skipped)
			}
			u := res.Upstreams[0]
			var env2 []string
			for k, v := range u.Env {
				env2 = append(env2, k+"="+v)
			}
			if got := strings.Join(u.Args, " "); got != c.wantArgs || strings.Join(env2, " ") != c.wantEnv {
				t.Errorf("args %q, env %q; want %q, %q", got, env2, c.wantArgs, c.wantEnv)
			}
			if err := upstream.ValidateAll(res.Upstreams); err != nil {
				t.Errorf("imported entry does not validate: %v", err)
			}
		})
	}
}

// TestImportLiteralDollar: a "$" the client passes on as written reaches
// the started server as written, in every format; only the client's own
// references are expanded (toolgate expands env values itself, so a
// literal "$$" would otherwise become "$" and a literal "${x}" an unset
// variable). Checked in the environment of a real child.
func TestImportLiteralDollar(t *testing.T) {
	if _, err := os.Stat("/bin/sh"); err != nil {
		t.Skip("no /bin/sh")
	}
	t.Setenv("TG_REF", "r1")
	for _, c := range []struct {
		format, value, want string
	}{
		{ClaudeDesktop, `pa$$w0rd ${TG_REF} $TG_REF end$`, `pa$$w0rd ${TG_REF} $TG_REF end$`}, // no expansion at all
		{ClaudeCode, `pa$$w0rd ${TG_REF} ${TG_UNSET:-d$$} $TG_REF`, `pa$$w0rd r1 d$$ $TG_REF`},
		{Gemini, `a$ b$5 $TG_REF ${TG_REF}`, `a$ b$5 r1 r1`},
		{Cursor, `pa$$w0rd ${env:TG_REF} ${TG_REF} $TG_REF`, `pa$$w0rd r1 ${TG_REF} $TG_REF`},
		{VSCode, `pa$$w0rd ${env:TG_REF} $$`, `pa$$w0rd r1 $$`},
		{Windsurf, `${env:TG_REF}$${x}`, `r1$${x}`},
		{Codex, `pa$$w0rd ${TG_REF} $TG_REF`, `pa$$w0rd ${TG_REF} $TG_REF`}, // Codex expands nothing
	} {
		t.Run(c.format, func(t *testing.T) {
			dir := t.TempDir()
			out := filepath.Join(dir, "out")
			script := filepath.Join(dir, "s.sh")
			if err := os.WriteFile(script, []byte(`printf %s "$PASS" > "$0.tmp" && mv "$0.tmp" `+out+"\n"), 0o700); err != nil {
				t.Fatal(err)
			}
			entry, _ := json.Marshal(map[string]any{"command": "/bin/sh", "args": []string{script}, "env": map[string]string{"PASS": c.value}})
			data := `{"` + specs[c.format].key + `": {"s": ` + string(entry) + `}}`
			if c.format == Codex {
				data = "[mcp_servers.s]\ncommand = '/bin/sh'\nargs = ['" + script + "']\nenv = { PASS = '" + c.value + "' }\n"
			}
			res, err := Parse("x.json", []byte(data), c.format, lookup)
			if err != nil {
				t.Fatal(err)
			}
			if err := upstream.ValidateAll(res.Upstreams); err != nil {
				t.Fatalf("env %q: %v", res.Upstreams[0].Env, err)
			}
			got, err := startUntilWritten(t, res.Upstreams[0], out)
			if err != nil || string(got) != c.want {
				t.Errorf("the child got PASS=%q (%v) from %q; the client gives it %q", got, err, res.Upstreams[0].Env["PASS"], c.want)
			}
		})
	}
}

// TestImportYAMLComments: text from the client's file in the printed
// comments (an envFile, unknown field names, input ids, a skipped
// server's name) stays on its comment line: the output parses to the
// upstreams section alone, with the servers imported.
func TestImportYAMLComments(t *testing.T) {
	for _, c := range []struct{ name, format, data string }{
		{"envFile", Cursor, `{"mcpServers": {"s": {"command": "srv", "envFile": "x\ninjected: {listen: \"0.0.0.0:80\"}\n#"}}}`},
		{"unknown field", ClaudeCode, `{"mcpServers": {"s": {"command": "srv", "x\rinjected: 1": true}}}`},
		{"input id", VSCode, `{"servers": {"s": {"command": "srv", "env": {"K": "${input:a\u2028injected: 1}"}}}}`},
		{"skipped name", ClaudeDesktop, `{"mcpServers": {"s": {"command": "srv"}, "t\u0085injected: 1": {"command": "toolgate"}}}`},
		{"renamed server", ClaudeDesktop, `{"mcpServers": {"s": {"command": "srv"}, "t\ninjected: 1": {"command": "srv"}}}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			res, err := Parse("x.json", []byte(c.data), c.format, lookup)
			if err != nil {
				t.Fatal(err)
			}
			checkYAML(t, res)
		})
	}
}

// checkYAML checks that res's YAML parses to exactly its upstreams.
func checkYAML(t *testing.T, res *Result) {
	t.Helper()
	out, err := res.YAML()
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string][]map[string]any
	if err := yaml.Unmarshal(out, &doc); err != nil {
		t.Fatalf("the printed config does not parse: %v\n%s", err, out)
	}
	if len(doc) > 1 || len(doc["upstreams"]) != len(res.Upstreams) {
		t.Fatalf("the printed config holds %d keys, %d upstreams; want only upstreams, %d:\n%s", len(doc), len(doc["upstreams"]), len(res.Upstreams), out)
	}
	for i, u := range res.Upstreams {
		if doc["upstreams"][i]["name"] != u.Name {
			t.Fatalf("upstream %d is %v, want %q:\n%s", i, doc["upstreams"][i]["name"], u.Name, out)
		}
	}
}

func TestImportErrors(t *testing.T) {
	for _, c := range []struct {
		name, format, path, data, want string
	}{
		{"bad JSON with position", ClaudeDesktop, "x.json", "{\n  \"mcpServers\": {\n    \"a\": {\"command\": \"x\",}\n  }\n}", "x.json:3:"},
		{"comments where the client has none", ClaudeDesktop, "x.json", "{\n // hi\n \"mcpServers\": {}}", "x.json:2:"},
		{"comments where the client has them", VSCode, "x.json", "{\n // hi\n \"servers\": {},}", ""},
		{"unknown format", "zed", "x.json", `{}`, "unknown client format"},
		{"not a client file", Auto, "x.json", `{"runs_dir": "x"}`, "not an MCP client configuration"},
	} {
		_, err := Parse(c.path, []byte(c.data), c.format, lookup)
		if c.want == "" {
			if err != nil {
				t.Errorf("%s: %v", c.name, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
}

// TestBrokenEntriesAreSkipped: an entry toolgate cannot take is skipped,
// saying why, and the file's other servers are imported, as the client
// starts them: one broken entry fails neither import nor upstreams_from.
func TestBrokenEntriesAreSkipped(t *testing.T) {
	res, err := Parse("x.json", []byte(`{"mcpServers": {
		"a": {"type": "stdio"},
		"b": {"type": "ws", "url": "u"},
		"c": "srv --flag",
		"good": {"command": "srv"}}}`), ClaudeCode, lookup)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"a: neither command nor a URL",
		`b: type "ws" is not one of stdio, http, sse`,
		"c: the entry is not an object",
	}
	if !slices.Equal(res.Skipped, want) {
		t.Errorf("skipped %q, want %q", res.Skipped, want)
	}
	if len(res.Upstreams) != 1 || res.Upstreams[0].Name != "good" || !slices.Equal(res.Imported, []string{"good"}) {
		t.Errorf("upstreams %+v, imported %q; want good alone", res.Upstreams, res.Imported)
	}
}

// FuzzParse: any file parses or is refused, never panics; what parses
// prints a configuration that parses to exactly its upstreams.
func FuzzParse(f *testing.F) {
	for _, p := range fixtures {
		b, _ := os.ReadFile(p)
		f.Add(b)
	}
	f.Add([]byte(`{"mcpServers": {"s\u2028x: 1": {"command": "srv", "envFile": "x\ninjected: 1", "k\r: 2": 0}}}`))
	f.Add([]byte("[mcp_servers.\"s\\nx: 1\"]\ncommand = \"srv\"\nenv_vars = [{ name = \"A\", source = \"remote\\ninjected: 1\" }]\n\"k\\r: 2\" = 0\n" +
		"[mcp_servers.h]\nurl = \"https://x/mcp\"\nenv_http_headers = { \"X\\ny\" = \"V\" }\nenabled_tools = []\ntool_timeout_sec = 1e300\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, format := range append([]string{Auto}, Formats...) {
			res, err := Parse("f.json", data, format, lookup)
			if err == nil {
				for _, u := range res.Upstreams {
					if u.Name == "" || len(u.Name) > 32 {
						t.Fatalf("bad upstream name %q", u.Name)
					}
				}
				checkYAML(t, res)
			}
		}
	})
}

// TestRewrite: the client's servers are replaced by one toolgate entry, the
// rest of the file stays (other settings, comments), a backup holds the
// original, and nothing changes when the backup cannot be written.
func TestRewrite(t *testing.T) {
	for _, format := range []string{ClaudeDesktop, VSCode, Gemini, Cursor} {
		t.Run(format, func(t *testing.T) {
			orig, _ := os.ReadFile(fixtures[format])
			dir := t.TempDir()
			path := filepath.Join(dir, filepath.Base(fixtures[format]))
			if err := os.WriteFile(path, orig, 0o640); err != nil {
				t.Fatal(err)
			}
			now := time.Date(2026, 11, 24, 2, 40, 0, 0, time.UTC)
			before, err := Load(path, format, lookup)
			if err != nil {
				t.Fatal(err)
			}
			// The file is reached through a symbolic link (a dotfiles
			// setup): the target is rewritten, the link stays.
			link := filepath.Join(dir, "link-"+filepath.Base(path))
			if err := os.Symlink(path, link); err != nil {
				t.Fatal(err)
			}
			done, err := Rewrite(link, format, Entry{Command: "/opt/toolgate", Args: []string{"serve", "--config", "/etc/toolgate.yaml"}}, before.Imported, now)
			if err != nil {
				t.Fatal(err)
			}
			backup := done.Backup
			if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
				t.Errorf("the link was replaced: %v %v", fi, err)
			}
			if b, _ := os.ReadFile(backup); string(b) != string(orig) || !strings.HasSuffix(backup, ".toolgate-backup-20261124T024000Z") {
				t.Errorf("backup %s does not hold the original", backup)
			}
			res, err := Load(path, format, lookup)
			if err != nil {
				t.Fatalf("the rewritten file does not parse: %v", err)
			}
			// The imported servers are gone; the skipped ones stay (the
			// import does not serve them: removed, they would be lost).
			// So do those whose command, args or URL take a value from
			// the environment (printed disabled, not imported).
			others := len(before.Upstreams) - len(before.Imported) // skipped before, toolgate's own entry aside (it is replaced)
			for _, sk := range before.Skipped {
				if !strings.HasPrefix(sk, "toolgate:") {
					others++
				}
			}
			if len(res.Upstreams)+len(res.Skipped) != others+1 || len(res.Imported) != 0 {
				t.Errorf("after rewrite: upstreams %v, skipped %v; want toolgate's entry and the %d others skipped before (%v)", res.Upstreams, res.Skipped, others, before.Skipped)
			}
			after, _ := os.ReadFile(path)
			keep := map[string]string{ClaudeDesktop: `"globalShortcut"`, VSCode: `"inputs"`, Gemini: `"theme"`, Cursor: "// Cursor project servers"}[format]
			if !strings.Contains(string(after), keep) {
				t.Errorf("the rewrite lost %s:\n%s", keep, after)
			}
			if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o640 {
				t.Errorf("mode %v, want the file's own 0640", fi.Mode().Perm())
			}
			// A second rewrite in the same second cannot overwrite the backup:
			// it refuses and changes nothing.
			if _, err := Rewrite(path, format, Entry{Command: "x"}, before.Imported, now); err == nil || !strings.Contains(err.Error(), "backup cannot be written") {
				t.Errorf("rewrite with an unwritable backup: %v", err)
			}
			if b, _ := os.ReadFile(path); string(b) != string(after) {
				t.Error("a refused rewrite changed the file")
			}
		})
	}
}

// TestRewriteAgain: a second rewrite updates the toolgate entry the first
// one wrote instead of rebuilding it from its own flags: what it was not
// told to change (the first rewrite's --config, flags and fields added by
// hand) is kept and reported; what it sets replaces the old value. An entry
// named "toolgate" that is not toolgate's is replaced. And the entry
// toolgate wrote is recognized however its binary is named, so
// re-importing the rewritten file never lists toolgate as its own
// upstream.
func TestRewriteAgain(t *testing.T) {
	tests := []struct {
		name     string
		format   string
		existing string // the toolgate entry in the file
		entry    Entry
		want     string // the toolgate entry after the rewrite
		kept     []string
	}{
		{"keeps --config", ClaudeDesktop,
			`{"command": "/opt/tg/bin/tg-1.4", "args": ["serve", "--config", "/etc/toolgate.yaml"]}`,
			Entry{Command: "/usr/bin/tg-1.5", Args: []string{"serve"}},
			`{"command":"/usr/bin/tg-1.5","args":["serve","--config","/etc/toolgate.yaml"]}`,
			[]string{"--config /etc/toolgate.yaml"}},
		{"a new --config replaces it", ClaudeDesktop,
			`{"command": "/opt/toolgate", "args": ["serve", "--config=/etc/old.yaml", "--log-level", "debug"], "env": {"A": "1"}}`,
			Entry{Command: "/opt/toolgate", Args: []string{"serve", "--config", "/etc/new.yaml"}},
			`{"command":"/opt/toolgate","args":["serve","--config","/etc/new.yaml","--log-level","debug"],"env":{"A":"1"}}`,
			[]string{"--log-level debug", "env"}},
		{"vscode keeps its type", VSCode,
			`{"type": "stdio", "command": "/opt/toolgate", "args": ["serve", "--config", "/w/toolgate.yaml"]}`,
			Entry{Command: "/opt/toolgate", Args: []string{"serve"}},
			`{"type":"stdio","command":"/opt/toolgate","args":["serve","--config","/w/toolgate.yaml"]}`,
			[]string{"--config /w/toolgate.yaml"}},
		{"another server named toolgate is replaced", ClaudeDesktop,
			`{"command": "npx", "args": ["-y", "toolgate-lookalike"], "env": {"A": "1"}}`,
			Entry{Command: "/opt/toolgate", Args: []string{"serve"}},
			`{"command":"/opt/toolgate","args":["serve"]}`,
			nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			key := specs[tc.format].key
			path := filepath.Join(t.TempDir(), "mcp.json")
			file := `{"` + key + `": {"fs": {"command": "npx", "args": ["-y", "fs-server"]}, "toolgate": ` + tc.existing + `}}`
			if err := os.WriteFile(path, []byte(file), 0o600); err != nil {
				t.Fatal(err)
			}
			before, err := Load(path, tc.format, lookup)
			if err != nil {
				t.Fatal(err)
			}
			done, err := Rewrite(path, tc.format, tc.entry, before.Imported, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			if strings.Join(done.Kept, "|") != strings.Join(tc.kept, "|") {
				t.Errorf("kept %q, want %q", done.Kept, tc.kept)
			}
			data, _ := os.ReadFile(path)
			root, err := decode(path, data, true)
			if err != nil {
				t.Fatal(err)
			}
			servers := root[key].(map[string]any)
			got, _ := json.Marshal(servers["toolgate"])
			var want any
			json.Unmarshal([]byte(tc.want), &want)
			wantJSON, _ := json.Marshal(want)
			if string(got) != string(wantJSON) {
				t.Errorf("toolgate entry\n got %s\nwant %s", got, wantJSON)
			}
			if _, ok := servers["fs"]; ok {
				t.Errorf("the imported server is still there: %s", data)
			}
			// Re-importing the rewritten file: toolgate's entry is its own,
			// whatever its binary is called.
			after, err := Load(path, tc.format, lookup)
			if err != nil {
				t.Fatal(err)
			}
			if len(after.Upstreams) != 0 || len(after.Skipped) != 1 || !strings.Contains(after.Skipped[0], "toolgate's own entry") {
				t.Errorf("re-import: upstreams %+v, skipped %v; want only toolgate's own entry, skipped", after.Upstreams, after.Skipped)
			}
		})
	}
}

// TestImportPrintsNoSecret: a value the client takes from the environment
// in command, args or the URL (where toolgate's upstreams expand nothing)
// is never written in clear into the printed configuration, which people
// paste into toolgate.yaml: the entry is printed with the client's own
// text, disabled, with a note naming the variable, and --rewrite leaves it
// in the client's file. Served live (upstreams_from) it is expanded as the
// client does. A variable naming the home directory is not a secret and
// is still written out.
func TestImportPrintsNoSecret(t *testing.T) {
	const secret = "s3cr3t-value"
	env := func(n string) (string, bool) {
		switch n {
		case "TG_SECRET":
			return secret, true
		case "HOME":
			return "/home/me", true
		}
		return "", false
	}
	for _, c := range []struct {
		name, format, entry, ref string
	}{
		{"cursor args", Cursor, `{"command": "npx", "args": ["-y", "mcp-search", "--key", "${env:TG_SECRET}"]}`, "${env:TG_SECRET}"},
		{"vscode url", VSCode, `{"type": "http", "url": "https://x.example/mcp?key=${env:TG_SECRET}"}`, "${env:TG_SECRET}"},
		{"claude code args", ClaudeCode, `{"type": "stdio", "command": "${HOME}/bin/srv", "args": ["--token=${TG_SECRET}"]}`, "${TG_SECRET}"},
		{"claude code url default", ClaudeCode, `{"type": "http", "url": "https://x.example/mcp/${TG_SECRET:-none}"}`, "${TG_SECRET:-none}"},
		{"gemini args", Gemini, `{"command": "srv", "args": ["--key", "$TG_SECRET"]}`, "$TG_SECRET"},
		{"windsurf serverUrl", Windsurf, `{"serverUrl": "https://x.example/mcp?k=${env:TG_SECRET}"}`, "${env:TG_SECRET}"},
	} {
		t.Run(c.name, func(t *testing.T) {
			key := specs[c.format].key
			data := `{"` + key + `": {"s": ` + c.entry + `, "plain": {"command": "srv2"}}}`
			res, err := Parse("x.json", []byte(data), c.format, env)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Upstreams) != 2 {
				t.Fatalf("upstreams %+v, skipped %v", res.Upstreams, res.Skipped)
			}
			live, _ := json.Marshal(res.Upstreams)
			if !strings.Contains(string(live), secret) {
				t.Errorf("served live, the entry does not get the value: %s", live)
			}
			out, err := res.YAML()
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(out), secret) {
				t.Errorf("the printed configuration holds the secret in clear:\n%s", out)
			}
			if !strings.Contains(string(out), c.ref) || !strings.Contains(string(out), "disabled: true") {
				t.Errorf("the printed entry is not the client's text (%s), disabled:\n%s", c.ref, out)
			}
			if !strings.Contains(strings.Join(res.Notes, "\n"), "TG_SECRET") {
				t.Errorf("no note names the variable: %v", res.Notes)
			}
			if strings.Join(res.Imported, ",") != "plain" {
				t.Errorf("Imported %v: --rewrite would take the entry out of the client's file", res.Imported)
			}
			if c.format == ClaudeCode && c.name == "claude code args" && !strings.Contains(string(out), "/home/me/bin/srv") {
				t.Errorf("${HOME} is not written out:\n%s", out)
			}
			checkYAML(t, res)
		})
	}
}

// TestImportGeminiAllowedExcluded: Gemini CLI connects to no server that
// its settings' mcp.excluded names, nor, when mcp.allowed is set, to one
// it does not name (allowMCPServers / excludeMCPServers in older
// settings): toolgate skips those too, saying why, instead of starting
// servers the user switched off.
func TestImportGeminiAllowedExcluded(t *testing.T) {
	servers := `"mcpServers": {"a": {"command": "a"}, "b": {"command": "b"}, "c": {"command": "c"}}`
	for _, c := range []struct {
		name, settings, want, skip string
	}{
		{"excluded", `"mcp": {"excluded": ["b"]}`, "a,c", "mcp.excluded"},
		{"allowed", `"mcp": {"allowed": ["a", "b"]}`, "a,b", "mcp.allowed"},
		{"both", `"mcp": {"allowed": ["a", "b"], "excluded": ["a"]}`, "b", "mcp.excluded"},
		{"legacy", `"allowMCPServers": ["a", "c"], "excludeMCPServers": ["c"]`, "a", "excludeMCPServers"},
	} {
		t.Run(c.name, func(t *testing.T) {
			res, err := Parse("settings.json", []byte(`{`+c.settings+`, `+servers+`}`), Gemini, lookup)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, u := range res.Upstreams {
				names = append(names, u.Name)
			}
			if strings.Join(names, ",") != c.want || !strings.Contains(strings.Join(res.Skipped, "\n"), c.skip) {
				t.Errorf("upstreams %v, skipped %q; want %s, a skip naming %s", names, res.Skipped, c.want, c.skip)
			}
		})
	}
}

// TestImportClaudeCodeUnsetVariable: Claude Code does not start a server
// whose command, args or url use a ${VAR} that is not set and has no
// default (its config fails to parse); toolgate skips it, naming the
// variable, instead of starting it with the reference replaced by
// nothing (a "--token=" the server rejects, or worse, accepts).
func TestImportClaudeCodeUnsetVariable(t *testing.T) {
	for _, c := range []struct{ name, entry, skip string }{
		{"args", `{"type": "stdio", "command": "srv", "args": ["--token=${TG_UNSET_TOKEN}"]}`, "${TG_UNSET_TOKEN}"},
		{"command", `{"type": "stdio", "command": "${TG_UNSET_BIN}/srv"}`, "${TG_UNSET_BIN}"},
		{"url", `{"type": "http", "url": "${TG_UNSET_BASE}/mcp"}`, "${TG_UNSET_BASE}"},
		{"default", `{"type": "stdio", "command": "srv", "args": ["--level=${TG_UNSET_LEVEL:-info}"]}`, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			res, err := Parse(".mcp.json", []byte(`{"mcpServers": {"s": `+c.entry+`}}`), ClaudeCode, lookup)
			if err != nil {
				t.Fatal(err)
			}
			if c.skip == "" {
				if len(res.Upstreams) != 1 || res.Upstreams[0].Args[0] != "--level=info" {
					t.Errorf("upstreams %+v, skipped %v", res.Upstreams, res.Skipped)
				}
				return
			}
			if len(res.Upstreams) != 0 || len(res.Skipped) != 1 || !strings.Contains(res.Skipped[0], c.skip) {
				t.Errorf("upstreams %+v, skipped %q; want skipped naming %s", res.Upstreams, res.Skipped, c.skip)
			}
		})
	}
}

// TestImportClaudeCodeLocalScope: Claude Code's ~/.claude.json holds the
// user-scope servers (mcpServers) and, under projects, each project's
// local-scope ones, which win over a user-scope server of the same name
// when Claude Code runs there. The import takes the user scope and says
// which project servers it left out (and which of them override a user
// server), never dropping them silently.
func TestImportClaudeCodeLocalScope(t *testing.T) {
	res, err := Load("testdata/claude-code-user/.claude.json", Auto, lookup)
	if err != nil {
		t.Fatal(err)
	}
	if res.Format != ClaudeCode || len(res.Upstreams) != 2 {
		t.Fatalf("format %s, upstreams %+v", res.Format, res.Upstreams)
	}
	notes := strings.Join(res.Notes, "\n")
	for _, want := range []string{"/home/me/src/app", `"playwright"`, `"db"`} {
		if !strings.Contains(notes, want) {
			t.Errorf("the notes do not name %s:\n%s", want, notes)
		}
	}
	if strings.Contains(notes, "/home/me/src/empty") {
		t.Errorf("a project without servers is named:\n%s", notes)
	}
}

// TestImportProjectRelative: a relative cwd, or a relative command (with a
// slash) and no cwd, in a project's file is the client's project-relative
// path: the client starts the server in the project (the directory holding
// .vscode, .cursor or .gemini, or .mcp.json's own), and so must toolgate,
// whatever its own working directory. A user-wide file belongs to no
// project: its relative paths are left as they are, with a note.
func TestImportProjectRelative(t *testing.T) {
	root := t.TempDir()
	home := filepath.Join(root, "home")
	proj := filepath.Join(root, "proj")
	env := func(n string) (string, bool) {
		if n == "HOME" {
			return home, true
		}
		return "", false
	}
	for _, c := range []struct {
		name, format, file, entry string
		wantDir, wantCommand      string
		wantNote                  bool
	}{
		{"vscode relative cwd", VSCode, "proj/.vscode/mcp.json", `{"command": "python", "args": ["-m", "srv"], "cwd": "./mcp-servers/python"}`, filepath.Join(proj, "mcp-servers", "python"), "python", false},
		{"vscode relative command", VSCode, "proj/.vscode/mcp.json", `{"command": "./server.sh"}`, proj, "./server.sh", false},
		{"vscode command and cwd both relative", VSCode, "proj/.vscode/mcp.json", `{"command": "./run.sh", "cwd": "tools"}`, filepath.Join(proj, "tools"), "./run.sh", false},
		{"vscode absolute cwd", VSCode, "proj/.vscode/mcp.json", `{"command": "./run.sh", "cwd": "/srv/tools"}`, "/srv/tools", "./run.sh", false},
		{"vscode bare command", VSCode, "proj/.vscode/mcp.json", `{"command": "npx", "args": ["-y", "x"]}`, "", "npx", false},
		{"cursor node_modules command", Cursor, "proj/.cursor/mcp.json", `{"command": "node_modules/.bin/mcp-x"}`, proj, "node_modules/.bin/mcp-x", false},
		{"gemini relative cwd", Gemini, "proj/.gemini/settings.json", `{"command": "python", "cwd": "./mcp-servers/python"}`, filepath.Join(proj, "mcp-servers", "python"), "python", false},
		{"claude code relative command", ClaudeCode, "proj/.mcp.json", `{"type": "stdio", "command": "./bin/server"}`, proj, "./bin/server", false},
		{"http server", VSCode, "proj/.vscode/mcp.json", `{"type": "http", "url": "https://x.example/mcp"}`, "", "", false},
		{"user-wide cursor file", Cursor, "home/.cursor/mcp.json", `{"command": "./server.sh"}`, "", "./server.sh", true},
		{"user-wide gemini file", Gemini, "home/.gemini/settings.json", `{"command": "python", "cwd": "srv"}`, "srv", "python", true},
		{"claude desktop", ClaudeDesktop, "claude_desktop_config.json", `{"command": "./server.sh"}`, "", "./server.sh", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(root, c.file)
			key := specs[c.format].key
			res, err := Parse(path, []byte(`{"`+key+`": {"s": `+c.entry+`}}`), c.format, env)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Upstreams) != 1 {
				t.Fatalf("upstreams %+v, skipped %v", res.Upstreams, res.Skipped)
			}
			u := res.Upstreams[0]
			if u.Dir != c.wantDir || u.Command != c.wantCommand {
				t.Errorf("dir %q, command %q; want %q, %q (the client starts it in the project %s)", u.Dir, u.Command, c.wantDir, c.wantCommand, proj)
			}
			noted := strings.Contains(strings.Join(res.Notes, "\n"), "relative")
			if noted != c.wantNote {
				t.Errorf("a note on the relative path: %v, want %v: %q", noted, c.wantNote, res.Notes)
			}
			out, err := res.YAML()
			if err != nil {
				t.Fatal(err)
			}
			if c.wantDir != "" && !strings.Contains(string(out), "dir: "+c.wantDir) {
				t.Errorf("the printed configuration does not start it in %s:\n%s", c.wantDir, out)
			}
		})
	}
}

// TestImportProjectRelativeStarts: the server of a project's file with a
// relative command and cwd really starts, from a toolgate working
// elsewhere, in the directory the client would start it in.
func TestImportProjectRelativeStarts(t *testing.T) {
	if _, err := os.Stat("/bin/sh"); err != nil {
		t.Skip("no /bin/sh")
	}
	proj := t.TempDir()
	out := filepath.Join(t.TempDir(), "out")
	if err := os.MkdirAll(filepath.Join(proj, "tools"), 0o755); err != nil {
		t.Fatal(err)
	}
	script := "#!/bin/sh\npwd > " + out + ".tmp && mv " + out + ".tmp " + out + "\n"
	if err := os.WriteFile(filepath.Join(proj, "tools", "run.sh"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(proj, ".vscode", "mcp.json")
	res, err := Parse(path, []byte(`{"servers": {"s": {"command": "./run.sh", "cwd": "tools"}}}`), Auto, lookup)
	if err != nil {
		t.Fatal(err)
	}
	if err := upstream.ValidateAll(res.Upstreams); err != nil {
		t.Fatal(err)
	}
	got, err := startUntilWritten(t, res.Upstreams[0], out)
	want, _ := filepath.EvalSymlinks(filepath.Join(proj, "tools"))
	if gotDir, _ := filepath.EvalSymlinks(strings.TrimSpace(string(got))); err != nil || gotDir != want {
		t.Errorf("the server ran in %q (%v), want %s", got, err, want)
	}
}

// TestImportCodex: the Codex CLI's config.toml, as its documentation
// describes it: what each field becomes, what is not used (said), what is
// switched off (skipped, saying why), and values from the environment
// never written in clear.
func TestImportCodex(t *testing.T) {
	res, err := Load(fixtures[Codex], Auto, lookup)
	if err != nil {
		t.Fatal(err)
	}
	by := map[string]upstream.Config{}
	for _, u := range res.Upstreams {
		by[u.Name] = u
	}
	c7 := by["context7"]
	if c7.Env["CONTEXT7_API_KEY"] != "${CONTEXT7_API_KEY:-}" || c7.StartupTimeout != 20*time.Second || c7.CallTimeout != 45500*time.Millisecond ||
		strings.Join(c7.Allow, ",") != "resolve-library-id,get-library-docs" {
		t.Errorf("context7: %+v", c7)
	}
	if _, ok := c7.Env["REMOTE_ONLY"]; ok {
		t.Errorf("a remote executor's variable is passed on: %v", c7.Env)
	}
	fg := by["figma"]
	if fg.Transport != upstream.TransportHTTP || fg.Headers["Authorization"] != "Bearer ${FIGMA_OAUTH_TOKEN}" ||
		fg.Headers["X-Trace"] != "${TRACE_ID:-}" || fg.Headers["X-Figma-Region"] != "us-east-1" || fg.StartupTimeout != 15*time.Second {
		t.Errorf("figma: %+v", fg)
	}
	if _, ok := by["linear"]; ok || !strings.Contains(strings.Join(res.Skipped, "\n"), "linear: enabled = false in Codex's configuration: Codex does not start it (using the Linear app instead)") {
		t.Errorf("a server Codex does not start: upstreams %v, skipped %q", res.Upstreams, res.Skipped)
	}
	notes := strings.Join(res.Notes, "\n")
	for _, want := range []string{"supports_parallel_tool_calls", "required", "REMOTE_ONLY"} {
		if !strings.Contains(notes, want) {
			t.Errorf("the notes do not say %s:\n%s", want, notes)
		}
	}

	// Values from the environment: references, never the value.
	const secret = "s3cr3t-value"
	env := func(n string) (string, bool) {
		if strings.HasPrefix(n, "TG_SECRET") {
			return secret, true
		}
		return "", false
	}
	data := `
[mcp_servers.stdio]
command = "srv"
args = ["--literal", "${TG_SECRET}"]
env_vars = ["TG_SECRET"]

[mcp_servers.http]
url = "https://x.example/mcp"
bearer_token_env_var = "TG_SECRET_TOKEN"
env_http_headers = { "X-Key" = "TG_SECRET_KEY" }
`
	res, err = Parse("config.toml", []byte(data), Codex, env)
	if err != nil {
		t.Fatal(err)
	}
	out, err := res.YAML()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(out), secret) {
		t.Errorf("the printed configuration holds a secret in clear:\n%s", out)
	}
	live, _ := json.Marshal(res.Upstreams)
	if strings.Contains(string(live), secret) || !strings.Contains(string(live), "${TG_SECRET}") {
		t.Errorf("Codex expands no variable in args (it passes ${TG_SECRET} as written), and the others are references: %s", live)
	}
	if strings.Join(res.Imported, ",") != "http,stdio" {
		t.Errorf("imported %v", res.Imported)
	}
	checkYAML(t, res)

	// A bearer token variable that is not set: Codex does not connect,
	// and toolgate does not serve the server, naming the variable.
	res, err = Parse("config.toml", []byte("[mcp_servers.h]\nurl = \"https://x.example/mcp\"\nbearer_token_env_var = \"TG_UNSET_TOKEN_VAR\"\n"), Codex, lookup)
	if err != nil {
		t.Fatal(err)
	}
	if err := upstream.ValidateAll(res.Upstreams); err == nil || !strings.Contains(err.Error(), "TG_UNSET_TOKEN_VAR") {
		t.Errorf("an unset bearer_token_env_var: %v", err)
	}
}

// TestImportCodexFields: the rest of the fields, one by one.
func TestImportCodexFields(t *testing.T) {
	for _, c := range []struct {
		name, entry string
		check       func(u upstream.Config) bool
		skip, err   string
	}{
		{"no tools enabled", `command = "srv"` + "\nenabled_tools = []", func(u upstream.Config) bool { return strings.Join(u.Deny, ",") == "*" }, "", ""},
		{"tool names are not globs", `command = "srv"` + "\nenabled_tools = [\"a*b\", \"c?\"]", func(u upstream.Config) bool { return strings.Join(u.Allow, " ") == `a\*b c\?` }, "", ""},
		{"env wins over env_vars", `command = "srv"` + "\nenv = { A = \"1\" }\nenv_vars = [\"A\", \"B\"]", func(u upstream.Config) bool { return u.Env["A"] == "1" && u.Env["B"] == "${B:-}" }, "", ""},
		{"enabled", `command = "srv"` + "\nenabled = true", func(u upstream.Config) bool { return !u.Disabled }, "", ""},
		{"integer seconds", `command = "srv"` + "\ntool_timeout_sec = 90", func(u upstream.Config) bool { return u.CallTimeout == 90*time.Second }, "", ""},
		{"disabled", `command = "srv"` + "\nenabled = false", nil, "enabled = false", ""},
		{"enabled not a boolean", `command = "srv"` + "\nenabled = \"no\"", nil, "s: enabled is not a boolean", ""},
		{"env_vars not names", `command = "srv"` + "\nenv_vars = [\"A B\"]", nil, "not a variable name", ""},
		{"negative timeout", `command = "srv"` + "\nstartup_timeout_sec = -1", nil, "not a duration", ""},
		{"timeout not a number", `command = "srv"` + "\ntool_timeout_sec = \"60\"", nil, "is not a number", ""},
		{"neither", `enabled = true`, nil, "s: neither command nor a URL", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			res, err := Parse("config.toml", []byte("[mcp_servers.s]\n"+c.entry+"\n"), Codex, lookup)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Errorf("error %v, want %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.skip != "" {
				if len(res.Upstreams) != 0 || len(res.Skipped) != 1 || !strings.Contains(res.Skipped[0], c.skip) {
					t.Errorf("upstreams %+v, skipped %q", res.Upstreams, res.Skipped)
				}
				return
			}
			if len(res.Upstreams) != 1 || !c.check(res.Upstreams[0]) {
				t.Errorf("upstreams %+v, skipped %q", res.Upstreams, res.Skipped)
			}
			if err := upstream.ValidateAll(res.Upstreams); err != nil {
				t.Error(err)
			}
		})
	}
}

// TestImportCodexFile: Codex's file is found by its name under .codex
// and by its content; TOML errors say where; a user-wide config.toml
// belongs to no project; and --rewrite refuses to touch it (the rewrite
// edits JSON) rather than corrupt it.
func TestImportCodexFile(t *testing.T) {
	toml := []byte("model = \"o3\"\n[mcp_servers.s]\ncommand = \"./run.sh\"\n")
	for _, c := range []struct{ path, want string }{
		{"proj/.codex/config.toml", Codex},
		{"servers.toml", Codex},
		{"x.json", Codex},
	} {
		if got, err := Detect(c.path, toml); err != nil || got != c.want {
			t.Errorf("Detect(%s) = %q, %v; want %s", c.path, got, err, c.want)
		}
	}
	if !IsClientConfig(toml) || IsClientConfig([]byte("model = \"o3\"\n")) || IsClientConfig([]byte("upstreams: []\n")) {
		t.Error("IsClientConfig: a TOML file with [mcp_servers] is a client's, one without (or toolgate's YAML) is not")
	}
	if _, err := Detect("other.toml", []byte("model = \"o3\"\n")); err == nil || !strings.Contains(err.Error(), "TOML without an [mcp_servers] table") {
		t.Errorf("a TOML file without servers: %v", err)
	}
	if _, err := Detect("empty.json", nil); err == nil || strings.Contains(err.Error(), "TOML") {
		t.Errorf("an empty JSON file: %v, want JSON's error", err)
	}
	if _, err := Detect("x.json", []byte("{\n \"mcpServers\": {,}\n}")); err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("a JSON syntax error still says where: %v", err)
	}
	if _, err := Parse("c/.codex/config.toml", []byte("[mcp_servers.s]\ncommand = \"srv\"\nargs = [\"a\",\n"), Auto, lookup); err == nil || !strings.Contains(err.Error(), "c/.codex/config.toml:3:") {
		t.Errorf("a TOML syntax error: %v, want its line", err)
	}

	root := t.TempDir()
	home := filepath.Join(root, "home")
	codexHome := filepath.Join(root, "codex-home", ".codex")
	env := func(n string) (string, bool) {
		switch n {
		case "HOME":
			return home, true
		case "CODEX_HOME":
			return codexHome, true
		}
		return "", false
	}
	for _, c := range []struct{ path, wantDir string }{
		{filepath.Join(root, "proj", ".codex", "config.toml"), filepath.Join(root, "proj")},
		{filepath.Join(home, ".codex", "config.toml"), ""},
		{filepath.Join(codexHome, "config.toml"), ""},
	} {
		res, err := Parse(c.path, toml, Auto, env)
		if err != nil {
			t.Fatal(err)
		}
		u := res.Upstreams[0]
		noted := strings.Contains(strings.Join(res.Notes, "\n"), "relative")
		if u.Dir != c.wantDir || noted != (c.wantDir == "") {
			t.Errorf("%s: dir %q, notes %q; want dir %q (a project's) or a note (the user's)", c.path, u.Dir, res.Notes, c.wantDir)
		}
	}

	path := filepath.Join(root, "proj", ".codex", "config.toml")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, toml, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Rewrite(path, Auto, Entry{Command: "/opt/toolgate", Args: []string{"serve"}}, []string{"s"}, time.Now()); err == nil ||
		!strings.Contains(err.Error(), "TOML") || !strings.Contains(err.Error(), "[mcp_servers.toolgate]") {
		t.Errorf("Rewrite of Codex's file: %v, want a refusal saying why and what to write", err)
	}
	if b, _ := os.ReadFile(path); string(b) != string(toml) {
		t.Errorf("the refused rewrite changed the file:\n%s", b)
	}
	if backups, _ := filepath.Glob(path + ".toolgate-backup-*"); len(backups) != 0 {
		t.Errorf("the refused rewrite wrote a backup: %v", backups)
	}
}

// TestImportURLTransport: a url entry keeps a transport only where the
// client pins one it does not fall back from: legacy SSE (type sse,
// Gemini's url), or streamable HTTP named as such (Gemini's httpUrl,
// type streamable-http). An entry that says nothing, or type http (VS
// Code falls back to legacy SSE from it, as the spec describes), leaves
// it unset, so that toolgate falls back too (adapters/upstream connect);
// the printed YAML says the same as the live import.
func TestImportURLTransport(t *testing.T) {
	for _, tc := range []struct {
		format, file, entry, want string
	}{
		{Cursor, ".cursor/mcp.json", `{"url":"https://a.example/mcp"}`, ""},
		{Cursor, ".cursor/mcp.json", `{"type":"sse","url":"https://a.example/sse"}`, "sse"},
		{ClaudeDesktop, "claude_desktop_config.json", `{"url":"https://a.example/mcp"}`, ""},
		{ClaudeCode, ".mcp.json", `{"type":"http","url":"https://a.example/mcp"}`, ""},
		{ClaudeCode, ".mcp.json", `{"url":"https://a.example/mcp"}`, ""},
		{ClaudeCode, ".mcp.json", `{"type":"sse","url":"https://a.example/sse"}`, "sse"},
		{VSCode, ".vscode/mcp.json", `{"type":"http","url":"https://a.example/mcp"}`, ""},
		{VSCode, ".vscode/mcp.json", `{"type":"streamable-http","url":"https://a.example/mcp"}`, "http"},
		{Windsurf, "mcp_config.json", `{"serverUrl":"https://a.example/mcp"}`, ""},
		{Gemini, ".gemini/settings.json", `{"httpUrl":"https://a.example/mcp"}`, "http"},
		{Gemini, ".gemini/settings.json", `{"url":"https://a.example/sse"}`, "sse"},
	} {
		key := "mcpServers"
		if tc.format == VSCode {
			key = "servers"
		}
		data := []byte(`{"` + key + `":{"s":` + tc.entry + `}}`)
		res, err := Parse(tc.file, data, tc.format, lookup)
		if err != nil || len(res.Upstreams) != 1 {
			t.Errorf("%s %s: %v, %+v", tc.format, tc.entry, err, res)
			continue
		}
		if got := res.Upstreams[0].Transport; got != tc.want {
			t.Errorf("%s %s: transport %q, want %q", tc.format, tc.entry, got, tc.want)
		}
		y, err := res.YAML()
		if err != nil {
			t.Fatal(err)
		}
		var printed struct {
			Upstreams []struct {
				Transport string `yaml:"transport"`
			} `yaml:"upstreams"`
		}
		if err := yaml.Unmarshal(y, &printed); err != nil || len(printed.Upstreams) != 1 || printed.Upstreams[0].Transport != tc.want {
			t.Errorf("%s %s: printed %s; want transport %q", tc.format, tc.entry, y, tc.want)
		}
	}
}

// startUntilWritten starts an upstream of cfg, whose child writes the file
// out, stopping it when the test ends, and waits up to 10 s for out: it
// gives what out holds, or the error of the last try to read it.
func startUntilWritten(t *testing.T, cfg upstream.Config, out string) ([]byte, error) {
	t.Helper()
	u, err := upstream.New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	u.Start(context.Background())
	t.Cleanup(func() { _ = u.Close() })
	var got []byte
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if got, err = os.ReadFile(out); err == nil {
			break
		}
	}
	return got, err
}

// TestWrittenSecrets: toolgate import notes each env or header value that
// is a secret written out in the client's file (the printed configuration
// copies it), with the ${VAR} reference that would take it from toolgate's
// environment instead; a reference, an empty value and a key that names
// no secret are not noted.
func TestWrittenSecrets(t *testing.T) {
	data := `{"mcpServers": {
		"gh": {"command": "srv", "env": {"GITHUB_TOKEN": "ghp_abc", "LOG_LEVEL": "debug", "API_KEY": "${API_KEY}", "PASSWORD": ""}},
		"remote-1": {"type": "http", "url": "https://x.example/mcp", "headers": {"Authorization": "Bearer xyz", "X-Api-Key": "k-123", "Accept": "application/json"}}}}`
	res, err := Parse("claude_desktop_config.json", []byte(data), ClaudeDesktop, func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	notes := res.WrittenSecrets()
	want := []string{
		`upstream "gh": env GITHUB_TOKEN holds a secret written out, copied from the client's file into this configuration; GITHUB_TOKEN: "${GITHUB_TOKEN}" takes it from toolgate's environment instead`,
		`upstream "remote-1": header Authorization holds a secret written out, copied from the client's file into this configuration; Authorization: "Bearer ${REMOTE_1_AUTHORIZATION}" takes it from toolgate's environment instead`,
		`upstream "remote-1": header X-Api-Key holds a secret written out, copied from the client's file into this configuration; X-Api-Key: "${REMOTE_1_X_API_KEY}" takes it from toolgate's environment instead`,
	}
	if strings.Join(notes, "\n") != strings.Join(want, "\n") {
		t.Errorf("notes:\n%s\nwant:\n%s", strings.Join(notes, "\n"), strings.Join(want, "\n"))
	}
	out, err := res.YAML()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), `# Note: upstream "gh": env GITHUB_TOKEN holds a secret written out`) {
		t.Errorf("the printed configuration does not say so:\n%s", out)
	}
}
