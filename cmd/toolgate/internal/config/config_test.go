package config

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

func load(t *testing.T, yaml string, env []string, flags ...string) (*Config, error) {
	t.Helper()
	dir := t.TempDir()
	t.Chdir(dir) // no toolgate.yaml unless the test writes one
	file := ""
	if yaml != "" {
		file = filepath.Join(dir, "c.yaml")
		if err := os.WriteFile(file, []byte(yaml), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	fs.String("http", "", "")
	fs.String("log-level", "", "")
	if err := fs.Parse(flags); err != nil {
		t.Fatal(err)
	}
	cfg, _, _, err := Load(Options{File: file, Flags: fs, FlagKeys: map[string]string{"http": "http.addr", "log-level": "log.level"},
		Environ: func() []string { return env }})
	return cfg, err
}

func TestEmbeddedDefaultsWork(t *testing.T) {
	cfg, err := load(t, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Limits.MaxOutputBytes != 32768 || cfg.Limits.CallTimeout != time.Minute || cfg.HTTP.Path != "/mcp" || !cfg.Filesystem.Enabled {
		t.Fatalf("defaults: %+v", cfg)
	}
}

// TestDefaultsStayDefaults: the defaults are parsed once and shared by
// every Load (a reload is one), so a file's values merged into one Load
// must not reach the next.
func TestDefaultsStayDefaults(t *testing.T) {
	before, err := load(t, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := load(t, "limits:\n  call_timeout: 5s\npolicy:\n  tools:\n    deny: [x]\n  capabilities:\n    allow: [net]\nhttp:\n  path: /other\n", nil); err != nil {
		t.Fatal(err)
	}
	after, err := load(t, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(before, after) {
		t.Fatalf("a file's values stayed in the defaults:\nbefore %+v\nafter  %+v", before, after)
	}
}

func TestLayersOverrideInOrder(t *testing.T) {
	cfg, err := load(t, "log:\n  level: warn\nlimits:\n  call_timeout: 5s\nhttp:\n  addr: 127.0.0.1:1\n",
		[]string{"TOOLGATE_LIMITS__CALL_TIMEOUT=7s", "TOOLGATE_HTTP__ALLOWED_ORIGINS=https://a.example, https://b.example", "OTHER_VAR=x"},
		"--http", "127.0.0.1:9")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Log.Level != "warn" {
		t.Errorf("file did not set log.level: %q", cfg.Log.Level)
	}
	if cfg.Limits.CallTimeout != 7*time.Second {
		t.Errorf("env did not override the file: %s", cfg.Limits.CallTimeout)
	}
	if cfg.HTTP.Addr != "127.0.0.1:9" {
		t.Errorf("flag did not override the file: %q", cfg.HTTP.Addr)
	}
	if strings.Join(cfg.HTTP.AllowedOrigins, "|") != "https://a.example|https://b.example" {
		t.Errorf("env list: %q", cfg.HTTP.AllowedOrigins)
	}
}

// TestTokenEnvVariableIsNotASetting: a variable a *_env setting names
// holds a secret, not a setting, even when its name begins with
// TOOLGATE_: every such setting, named in the file or in the environment.
func TestTokenEnvVariableIsNotASetting(t *testing.T) {
	for _, tc := range []struct{ name, yaml, env string }{
		{"http.auth.token_env", "http:\n  auth:\n    token_env: TOOLGATE_TOKENS\n", "TOOLGATE_TOKENS=abc"},
		{"a named token's token_env", "http:\n  auth:\n    tokens: [{name: ci, token_env: TOOLGATE_CI}]\n", "TOOLGATE_CI=abc"},
		{"admin.token_env", "admin:\n  token_env: TOOLGATE_ADMIN\n", "TOOLGATE_ADMIN=abc"},
		{"http.session_keys_env", "http:\n  session_keys_env: TOOLGATE_SESSION_KEYS\n", "TOOLGATE_SESSION_KEYS=" + strings.Repeat("A", 43) + "="},
		{"introspection_client_secret_env", "http:\n  auth:\n    oauth:\n      introspection_client_secret_env: TOOLGATE_INTROSPECTION\n", "TOOLGATE_INTROSPECTION=abc"},
		{"named in the environment", "", "TOOLGATE_HTTP__SESSION_KEYS_ENV=TOOLGATE_KEYS"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := []string{tc.env}
			if tc.name == "named in the environment" {
				env = append(env, "TOOLGATE_KEYS="+strings.Repeat("A", 43)+"=")
			}
			if _, err := load(t, tc.yaml, env); err != nil && strings.Contains(err.Error(), "unknown key") {
				t.Fatalf("a secret's variable named TOOLGATE_* was read as a setting: %v", err)
			}
		})
	}
}

func TestUnchangedFlagsDoNotOverride(t *testing.T) {
	cfg, err := load(t, "http:\n  addr: 127.0.0.1:1\n", nil)
	if err != nil || cfg.HTTP.Addr != "127.0.0.1:1" {
		t.Fatalf("addr %q err %v", cfg.HTTP.Addr, err)
	}
}

func TestErrorsNameTheKey(t *testing.T) {
	tests := []struct {
		name, yaml string
		env        []string
		want       string
	}{
		{"unknown top-level key", "runs_dri: x\n", nil, "unknown key runs_dri"},
		{"unknown nested key", "limits:\n  call_timout: 5s\n", nil, "unknown key limits.call_timout; did you mean limits.call_timeout?"},
		{"a word of a known key", "limits:\n  timeout: 5s\n", nil, "unknown key limits.timeout; did you mean limits.call_timeout?"},
		{"a word of two known keys", "upstreams:\n  - name: x\n    command: y\n    timeout: 5s\n", nil, "unknown key upstreams[0].timeout; did you mean upstreams[0].call_timeout or upstreams[0].startup_timeout?"},
		{"unknown key of an entry", "upstreams:\n  - name: x\n    comand: y\n", nil, "unknown key upstreams[0].comand; did you mean upstreams[0].command?"},
		{"unknown key from env", "", []string{"TOOLGATE_LIMITS__NOPE=1"}, "unknown key limits.nope (from the environment variable TOOLGATE_LIMITS__NOPE)"},
		{"bad duration", "limits:\n  call_timeout: soon\n", nil, `limits.call_timeout: "soon" is not a duration: write it with a unit, as in 30s, 2m or 1h30m`},
		{"bad duration from env", "", []string{"TOOLGATE_LIMITS__CALL_TIMEOUT=soon"}, `limits.call_timeout (from the environment variable TOOLGATE_LIMITS__CALL_TIMEOUT): "soon" is not a duration`},
		{"a map for a duration", "limits:\n  call_timeout: {a: 1}\n", nil, "limits.call_timeout: takes a duration (with a unit, as in 30s, 2m or 1h30m), got a map"},
		{"not a number", "limits:\n  max_in_flight: lots\n", nil, `limits.max_in_flight: "lots" is not a whole number`},
		{"a fraction for a whole number", "limits:\n  max_in_flight: 1.5\n", nil, "limits.max_in_flight: 1.5 is not a whole number"},
		{"every problem at once", "limits:\n  max_in_flight: 1.5\n  call_timeout: soon\nlog:\n  formt: x\n", nil,
			"config: 3 problems:\n  limits.call_timeout: \"soon\" is not a duration: write it with a unit, as in 30s, 2m or 1h30m\n  limits.max_in_flight: 1.5 is not a whole number\n  unknown key log.formt; did you mean log.format?"},
		{"bad level", "log:\n  level: loud\n", nil, `log.level: "loud" is not one of`},
		// The checks after decoding list their problems as decoding does;
		// an upstream's name given twice is one problem, not also its
		// prefix's.
		{"every checked problem at once", "log:\n  level: loud\nupstreams:\n  - {name: ev, command: a}\n  - {name: ev, command: b}\n  - {name: x}\n", nil,
			"config: 3 problems:\n  log.level: \"loud\" is not one of debug, info, warn, error\n  upstream \"ev\": name: upstreams[0] has it too; each upstream needs a name of its own\n  upstream \"x\": url: required for an http upstream (or set command for a stdio upstream)"},
		{"small output limit", "limits:\n  max_output_bytes: 10\n", nil, "limits.max_output_bytes: must be at least 1024"},
		{"bad addr", "http:\n  addr: nope\n", nil, `http.addr: "nope" is not host:port`},
		{"bad port", "http:\n  addr: \":99999\"\n", nil, `http.addr: ":99999": the port "99999" is not a number from 0 to 65535`},
		{"bad admin port", "admin:\n  addr: 127.0.0.1:http2x\n", nil, `admin.addr: "127.0.0.1:http2x": the port "http2x" is not a number from 0 to 65535`},
		{"bad yaml", "limits: [\n", nil, "config file"},
		{"wrong type", "filesystem:\n  enabled: maybe\n", nil, `filesystem.enabled: "maybe" is not true or false`},
		// The mcpServers shape of other clients' files, a map by name,
		// was taken for a list of one entry: "unknown key upstreams[0].github".
		{"upstreams as a map", "upstreams:\n  github: {command: x}\n", nil, "upstreams is a list, not a map: write each entry on a line of its own that starts with \"- \" (`- name: github` and its keys below it)"},
		{"upstreams_from as a map", "upstreams_from:\n  claude: {path: x}\n", nil, "upstreams_from is a list, not a map: write each entry on a line of its own that starts with \"- \"; got a map with key(s) claude"},
		{"a map mixing an entry's keys and others", "upstreams:\n  name: a\n  github: {command: x}\n", nil, `upstreams is a list, not a map: write each entry on a line of its own that starts with "- " (` + "`- name: github`" + ` and its keys below it); got a map with key(s) github, name`},
		{"list of strings as a map", "sandbox:\n  roots: {a: b}\n", nil, "sandbox.roots is a list, not a map"},
		// A blank admin token is no credential: taken for "no tokens", it
		// left an admin API off loopback open to anyone.
		{"metrics token without its listener", "metrics:\n  enabled: true\n  token_env: TG_X\n", nil, "metrics.token_env: applies to the listener of metrics.addr only"},
		{"blank admin token", "admin:\n  addr: 0.0.0.0:9999\n  tokens: [\"\"]\n", nil, "admin.tokens[0]: is blank"},
		{"blank admin tokens from env", "admin:\n  addr: 0.0.0.0:9999\n", []string{"TOOLGATE_ADMIN__TOKENS=,"}, "is blank"},
		{"blank admin token on loopback", "admin:\n  addr: 127.0.0.1:9999\n  tokens: [\"s3cret\", \" \"]\n", nil, "admin.tokens[1]: is blank"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := load(t, tc.yaml, tc.env)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestToolgateYAMLInWorkingDirectory(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	if err := os.WriteFile(DefaultFile, []byte("limits:\n  call_timeout: 3s\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, src, _, err := Load(Options{Environ: func() []string { return nil }})
	if err != nil || cfg.Limits.CallTimeout != 3*time.Second || src.File != DefaultFile {
		t.Fatalf("cfg %+v src %+v err %v", cfg.Limits, src, err)
	}
}

// TestEffectiveRedactsTokens: toolgate config shows no token, whether it
// comes from the file or from the environment.
func TestEffectiveRedactsTokens(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
		env        []string
	}{
		{"file", "http:\n  auth:\n    tokens: [supersecret]\n", nil},
		{"named in the file", "http:\n  auth:\n    tokens: [{name: ci, token: supersecret}]\n", nil},
		{"environment", "", []string{"TOOLGATE_HTTP__AUTH__TOKENS=supersecret,other", "TOOLGATE_ADMIN__TOKENS=supersecret"}},
		{"an upstream's env, headers and URL", "upstreams:\n  - name: a\n    url: https://alice:supersecret@h.example/mcp?key=supersecret\n    headers: {X-Api-Key: supersecret, Authorization: \"Bearer ${TOKEN}\"}\n  - name: b\n    command: srv\n    env: {API_KEY: supersecret}\n", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("TOKEN", "from-the-environment")
			dir := t.TempDir()
			t.Chdir(dir)
			file := ""
			if tc.yaml != "" {
				file = filepath.Join(dir, "c.yaml")
				_ = os.WriteFile(file, []byte(tc.yaml), 0o644)
			}
			_, _, k, err := Load(Options{File: file, Environ: func() []string { return tc.env }})
			if err != nil {
				t.Fatal(err)
			}
			out, err := Effective(k)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(out), "supersecret") || !strings.Contains(string(out), "REDACTED") {
				t.Fatalf("effective config:\n%s", out)
			}
			if tc.yaml != "" && strings.Contains(tc.yaml, "${TOKEN}") && !strings.Contains(string(out), "Bearer ${TOKEN}") {
				t.Errorf("a value that references the environment is hidden:\n%s", out)
			}
		})
	}
}

func TestIsLoopback(t *testing.T) {
	for addr, want := range map[string]bool{"127.0.0.1:1": true, "[::1]:1": true, "localhost:1": true, "0.0.0.0:1": false, ":8080": false, "10.0.0.1:1": false} {
		if got := IsLoopback(addr); got != want {
			t.Errorf("IsLoopback(%q) = %v", addr, got)
		}
	}
}

func FuzzLoadConfigFile(f *testing.F) {
	f.Add("limits:\n  call_timeout: 5s\n")
	f.Add("http:\n  allowed_origins: [a, b]\n")
	f.Add("sandbox:\n  roots: [\"\"]\n")
	f.Add("runs_dir: 7\nlog: {level: debug}\n")
	f.Add(": : :\n")
	// One file, rewritten for each input: a new temporary directory per
	// input would make the target slow enough to starve the fuzzer.
	file := filepath.Join(f.TempDir(), "c.yaml")
	f.Fuzz(func(t *testing.T, yaml string) {
		if err := os.WriteFile(file, []byte(yaml), 0o644); err != nil {
			t.Fatal(err)
		}
		cfg, _, _, err := Load(Options{File: file, Environ: func() []string { return nil }})
		if err != nil {
			return // any error is fine; a panic is not
		}
		if cfg.check() != nil {
			t.Fatal("Load returned a config that fails its own checks")
		}
	})
}

// TestParseDuration: durations take whole days in front, as retention is
// said (runs.max_age: 30d, runs prune --older-than 2d).
func TestParseDuration(t *testing.T) {
	for in, want := range map[string]time.Duration{
		"30d": 30 * 24 * time.Hour, "1d12h": 36 * time.Hour, "0d": 0, "90m": 90 * time.Minute, "1h30m": 90 * time.Minute,
	} {
		if got, err := ParseDuration(in); err != nil || got != want {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"d", "1.5d", "-1d", "1d-2h", "2dd", "1dx", "soon", "99999d"} {
		if got, err := ParseDuration(in); err == nil {
			t.Errorf("ParseDuration(%q) = %v, want an error", in, got)
		}
	}
	cfg, err := load(t, "runs:\n  max_age: 14d\n", nil)
	if err != nil || cfg.Runs.MaxAge != 14*24*time.Hour {
		t.Fatalf("runs.max_age: 14d: %v (%v)", err, cfg)
	}
}

// TestDurationsNeedUnits: a bare number for a duration is refused from
// every layer, naming the key (YAML's 30 was 30 nanoseconds: every call
// then timed out at once).
func TestDurationsNeedUnits(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		name, yaml string
		env        []string
	}{
		{"yaml integer", "limits:\n  call_timeout: 30\n", nil},
		{"yaml float", "limits:\n  shutdown_grace: 2.5\n", nil},
		{"environment", "", []string{"TOOLGATE_LIMITS__CALL_TIMEOUT=30"}},
		{"upstream key", "upstreams:\n  - name: a\n    command: x\n    startup_timeout: 10\n", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "_")+".yaml")
			if err := os.WriteFile(path, []byte(c.yaml), 0o644); err != nil {
				t.Fatal(err)
			}
			env := c.env
			_, _, _, err := Load(Options{File: path, Environ: func() []string { return env }})
			if err == nil || !strings.Contains(err.Error(), "is a number, not a duration") {
				t.Fatalf("got %v, want a refusal of the bare number", err)
			}
			if !strings.Contains(err.Error(), "timeout") && !strings.Contains(err.Error(), "grace") {
				t.Errorf("the error does not name the key: %v", err)
			}
		})
	}
	path := filepath.Join(dir, "ok.yaml")
	_ = os.WriteFile(path, []byte("limits:\n  call_timeout: 30s\n"), 0o644)
	cfg, _, _, err := Load(Options{File: path, Environ: func() []string { return nil }})
	if err != nil || cfg.Limits.CallTimeout != 30*time.Second {
		t.Errorf("30s: %v %v", cfg, err)
	}
}

// TestOneEntryWithoutItsDash: a list of one entry written without its
// "- " (every key one an entry takes) is read as that entry, as it always
// was; a map by name is refused (TestErrorsNameTheKey).
func TestOneEntryWithoutItsDash(t *testing.T) {
	cfg, err := load(t, "upstreams:\n  name: a\n  command: x\nhttp:\n  auth:\n    tokens: {name: ci, token: ci-token-0123456789}\n", nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Upstreams) != 1 || cfg.Upstreams[0].Name != "a" || cfg.Upstreams[0].Command != "x" {
		t.Errorf("upstreams %+v, want the one entry", cfg.Upstreams)
	}
	if len(cfg.HTTP.Auth.Tokens) != 1 || cfg.HTTP.Auth.Tokens[0].Name != "ci" {
		t.Errorf("tokens %+v, want the one entry", cfg.HTTP.Auth.Tokens)
	}
}

// TestYAMLErrorLine (issue 10): an unclosed flow list is reported at the
// line that opened it.
func TestYAMLErrorLine(t *testing.T) {
	for _, tc := range []struct{ yaml, want string }{
		{"sandbox:\n  roots: [/srv/notes\n", "line 2: the flow list opened with \"[\" is not closed"},
		{"# a comment [\nlog:\n  level: debug\nsandbox:\n  roots: ['/a', \"/b]\"\n", "line 5: the flow list"},
		{"policy: {tools: {deny: [x]}\n", "line 1: the flow map opened with \"{\" is not closed"},
	} {
		dir := t.TempDir()
		path := filepath.Join(dir, "toolgate.yaml")
		if err := os.WriteFile(path, []byte(tc.yaml), 0o644); err != nil {
			t.Fatal(err)
		}
		_, _, _, err := Load(Options{File: path, Environ: func() []string { return nil }})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want %q", tc.yaml, err, tc.want)
		}
		if err != nil && strings.Count(err.Error(), "line ") != 1 {
			t.Errorf("%q: %v names more than one line", tc.yaml, err)
		}
	}
}

// TestNamedTokens (issue 14): tokens are plain strings or {name, token} /
// {name, token_env}; names are identities, so they are unique; an unnamed
// token is named by its fingerprint; the environment's one token is named
// after its variable.
func TestNamedTokens(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "toolgate.yaml")
	yaml := "http:\n  auth:\n    token_env: MORE_TOKENS\n    tokens:\n      - plain-token-value\n      - {name: ci, token_env: CI_TOKEN}\n      - {name: alice, token: alice-token-0123}\n"
	if err := os.WriteFile(path, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	environ := func() []string { return nil }
	t.Setenv("CI_TOKEN", "ci-token-value-0123")
	t.Setenv("MORE_TOKENS", "more-token-one-0123,more-token-two-0123")
	cfg, _, k, err := Load(Options{File: path, Environ: environ})
	if err != nil {
		t.Fatal(err)
	}
	toks, err := cfg.Tokens()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, tk := range toks {
		got = append(got, tk.Name+"="+tk.Value)
	}
	// An unnamed token is known by its fingerprint: the first 12 hex
	// digits of its SHA-256 (printf %s TOKEN | sha256sum | cut -c1-12);
	// several tokens of token_env are unnamed, one is named after it.
	const plain, one, two = "sha256:c80226c1c8a3", "sha256:59da3440a520", "sha256:827b3aa68d15"
	want := plain + "=plain-token-value ci=ci-token-value-0123 alice=alice-token-0123 " + one + "=more-token-one-0123 " + two + "=more-token-two-0123"
	if strings.Join(got, " ") != want {
		t.Errorf("tokens %v, want %s", got, want)
	}
	// Removing (revoking) a token leaves the others their names: none
	// takes the removed token's place, and with it its identity.
	c2 := *cfg
	c2.HTTP.Auth.Tokens = cfg.HTTP.Auth.Tokens[1:]
	t.Setenv("MORE_TOKENS", "more-token-two-0123")
	if toks, err := c2.Tokens(); err != nil || len(toks) != 3 || toks[2].Name != "MORE_TOKENS" {
		t.Errorf("one token left in MORE_TOKENS: %+v, %v; want it named MORE_TOKENS", toks, err)
	}
	t.Setenv("MORE_TOKENS", "more-token-one-0123,more-token-two-0123")
	c2.HTTP.Auth.Tokens = append(slices.Clone(cfg.HTTP.Auth.Tokens[1:]), cfg.HTTP.Auth.Tokens[0], Token{Token: "another-plain-token"})
	if toks, err := c2.Tokens(); err != nil || len(toks) != 6 || toks[2].Name != plain || toks[4].Name != one || toks[5].Name != two {
		t.Errorf("tokens reordered: %+v, %v; want each with its name", toks, err)
	}
	c2.HTTP.Auth.Tokens = append(c2.HTTP.Auth.Tokens, Token{Token: "plain-token-value"})
	if _, err := c2.Tokens(); err == nil || !strings.Contains(err.Error(), "http.auth.tokens[4]: the same token is given twice") {
		t.Errorf("a token given twice: %v", err)
	}
	out, err := Effective(k)
	if err != nil || strings.Contains(string(out), "alice-token-0123") || strings.Contains(string(out), "plain-token-value") || !strings.Contains(string(out), "name: alice") ||
		!strings.Contains(string(out), "(identity token:"+plain+")") {
		t.Errorf("effective config shows a token, or drops names or an unnamed token's fingerprint (%v):\n%s", err, out)
	}
	// {token} without a name is unnamed too: toolgate config shows the
	// name it goes by, as for a plain string.
	path2 := filepath.Join(dir, "unnamed.yaml")
	if err := os.WriteFile(path2, []byte("http: {auth: {tokens: [{token: bob-token-0123456789}]}}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg2, _, k2, err := Load(Options{File: path2, Environ: environ})
	if err != nil {
		t.Fatal(err)
	}
	toks2, err := cfg2.Tokens()
	if err != nil || len(toks2) != 1 || !strings.HasPrefix(toks2[0].Name, "sha256:") {
		t.Fatalf("{token} without a name: %+v, %v", toks2, err)
	}
	if out, err := Effective(k2); err != nil || strings.Contains(string(out), "bob-token") || !strings.Contains(string(out), "(identity token:"+toks2[0].Name+")") {
		t.Errorf("effective config of an unnamed {token}: want it redacted with its identity (%v):\n%s", err, out)
	}
	cfg.HTTP.Auth.Tokens = append(cfg.HTTP.Auth.Tokens, Token{Name: "ci", Token: "x-long-enough-token"})
	if _, err := cfg.Tokens(); err == nil || !strings.Contains(err.Error(), `the name "ci" is used by two tokens`) {
		t.Errorf("duplicate names: %v", err)
	}
	// local and anonymous name callers that are not tokens: a token may
	// not take their names (nor the name of the environment's tokens).
	for _, name := range []string{"local", "anonymous", one} {
		cfg.HTTP.Auth.Tokens = []Token{{Name: name, Token: "x-long-enough-token"}}
		if _, err := cfg.Tokens(); err == nil || !strings.Contains(err.Error(), name) || strings.Contains(err.Error(), "same token") {
			t.Errorf("a token named %s: %v", name, err)
		}
	}
}

// TestSecretsFromTheEnvironment: every secret read from a variable a
// setting names (tokens, session keys, the introspection secret) is an
// error naming the setting and the variable when the variable is unset.
func TestSecretsFromTheEnvironment(t *testing.T) {
	const unset = "TOOLGATE_TEST_SURELY_UNSET_VAR"
	c := &Config{}
	c.HTTP.Auth.TokenEnv = unset
	c.HTTP.SessionKeysEnv = unset
	c.HTTP.Auth.OAuth.IntrospectionSecretEnv = unset
	_, tokErr := c.Tokens()
	_, keyErr := c.SessionKeys()
	_, secErr := c.IntrospectionSecret()
	for key, err := range map[string]error{"http.auth.token_env": tokErr, "http.session_keys_env": keyErr,
		"http.auth.oauth.introspection_client_secret_env": secErr} {
		if err == nil || err.Error() != key+": environment variable "+unset+" is not set" {
			t.Errorf("%s: %v", key, err)
		}
	}
	t.Setenv(unset, "s3cret")
	if s, err := c.IntrospectionSecret(); s != "s3cret" || err != nil {
		t.Errorf("set: %q %v", s, err)
	}
	if s, err := (&Config{}).IntrospectionSecret(); s != "" || err != nil {
		t.Errorf("none named: %q %v", s, err)
	}
}

// An upstream's tasks map keeps its tool-name keys whole, dots included
// (upstream tool names may hold them).
func TestUpstreamTasksKeys(t *testing.T) {
	cfg, err := load(t, "upstreams:\n  - name: a\n    command: x\n    tasks:\n      \"files.build_*\": optional\n      export: required\n", nil)
	if err != nil {
		t.Fatal(err)
	}
	got := cfg.Upstreams[0].Tasks
	if len(got) != 2 || got["files.build_*"] != "optional" || got["export"] != "required" {
		t.Errorf("tasks = %v", got)
	}
}

// toolgate config shows a list set from the environment as the list toolgate
// uses (README.md: lists comma-separated, TOOLGATE_SANDBOX__ROOTS=/a,/b), not
// as the one string the variable holds.
func TestEffectiveShowsListsFromTheEnvironment(t *testing.T) {
	t.Chdir(t.TempDir())
	_, _, k, err := Load(Options{Environ: func() []string {
		return []string{"TOOLGATE_SANDBOX__ROOTS=/a, /b", "TOOLGATE_POLICY__TOOLS__DENY=write_file", "TOOLGATE_ADMIN__TOKENS=supersecret,other"}
	}})
	if err != nil {
		t.Fatal(err)
	}
	out, err := Effective(k)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"roots:\n        - /a\n        - /b\n", "deny:\n            - write_file\n"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("effective config lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(string(out), "supersecret") || strings.Contains(string(out), "other") {
		t.Errorf("a token is shown:\n%s", out)
	}
}

// An empty file is the defaults at start, and an error under RefuseEmpty
// (a reload's load), decided on the bytes read: a reload that looked at
// the file's size first and read it after could take a truncation in
// between for the defaults (every upstream stopped, the policy reset).
func TestRefuseEmpty(t *testing.T) {
	file := filepath.Join(t.TempDir(), "toolgate.yaml")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := Load(Options{File: file, Environ: func() []string { return nil }}); err != nil {
		t.Fatalf("empty file at start: %v", err)
	}
	_, _, _, err := Load(Options{File: file, RefuseEmpty: true, Environ: func() []string { return nil }})
	if !errors.Is(err, ErrEmptyFile) || !strings.Contains(err.Error(), file) {
		t.Fatalf("empty file under RefuseEmpty: %v, want ErrEmptyFile naming %s", err, file)
	}
	if err := os.WriteFile(file, []byte("log: {level: warn}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if cfg, _, _, err := Load(Options{File: file, RefuseEmpty: true, Environ: func() []string { return nil }}); err != nil || cfg.Log.Level != "warn" {
		t.Fatalf("a written file under RefuseEmpty: %v", err)
	}
}

// A policy.identities rule may not name a token by its place in a list
// (an unnamed token's "2", a token_env list's "VAR[2]"): places name no
// token (unnamed tokens go by their fingerprint), and a rule that looks
// bound to one would match nothing. Names given to tokens are fine.
func TestIdentityRuleByPlaceRefused(t *testing.T) {
	for _, c := range []struct {
		yaml, want string
	}{
		{"http: {auth: {tokens: [aaaaaaaaaaaaaaaa, bbbbbbbbbbbbbbbb]}}\npolicy: {identities: [{match: {name: \"2\"}, tools: {deny: [x]}}]}\n",
			`policy.identities[0].match.name: "2" is the place of the unnamed token http.auth.tokens[1], which names no token`},
		{"http: {auth: {token_env: TG_TOKS}}\npolicy: {identities: [{match: {name: \"TG_TOKS[1]\"}, tools: {deny: [x]}}]}\n",
			`"TG_TOKS[1]" is the place of a token in the list of http.auth.token_env TG_TOKS`},
		{"http: {auth: {tokens: [{name: ci, token: aaaaaaaaaaaaaaaa}, bbbbbbbbbbbbbbbb]}}\npolicy: {identities: [{match: {name: ci}, tools: {deny: [x]}}]}\n", ""},
		{"http: {auth: {tokens: [{name: \"1\", token: aaaaaaaaaaaaaaaa}]}}\npolicy: {identities: [{match: {name: \"1\"}, tools: {deny: [x]}}]}\n", ""},
	} {
		_, err := load(t, c.yaml, []string{"TG_TOKS=a,b"})
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.yaml, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: %v, want %s", c.yaml, err, c.want)
		}
	}
}

// A bearer token shorter than 16 characters is refused, naming its
// setting and never the token: it is the whole of a caller's or an
// operator's authentication, and nothing slows guesses down.
func TestShortTokensRefused(t *testing.T) {
	t.Setenv("TG_SHORT", "abc")
	t.Setenv("TG_LONG", "a-long-enough-token-0123")
	for _, c := range []struct {
		name string
		yaml string
		get  func(*Config) error
		want string
	}{
		{"plain", "http: {auth: {tokens: [sekrit]}}\n", func(c *Config) error { _, err := c.Tokens(); return err }, "http.auth.tokens[0]: a token of 6 characters"},
		{"named", "http: {auth: {tokens: [{name: ci, token_env: TG_SHORT}]}}\n", func(c *Config) error { _, err := c.Tokens(); return err }, "http.auth.tokens[0]: a token of 3 characters"},
		{"token_env", "http: {auth: {token_env: TG_SHORT}}\n", func(c *Config) error { _, err := c.Tokens(); return err }, "http.auth.token_env: a token of 3 characters"},
		{"admin", "admin: {tokens: [a-long-enough-token-0123, short]}\n", func(c *Config) error { _, err := c.AdminTokens(); return err }, "admin.tokens[1]: a token of 5 characters"},
		{"metrics", "metrics: {addr: \"127.0.0.1:9464\", token_env: TG_SHORT}\n", func(c *Config) error { _, err := c.MetricsTokens(); return err }, "metrics.token_env: a token of 3 characters"},
		{"long enough", "http: {auth: {token_env: TG_LONG}}\nadmin: {token_env: TG_LONG}\n", func(c *Config) error {
			if _, err := c.Tokens(); err != nil {
				return err
			}
			_, err := c.AdminTokens()
			return err
		}, ""},
	} {
		cfg, err := load(t, c.yaml, nil)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		err = c.get(cfg)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: %v, want %s", c.name, err, c.want)
		case err != nil && (strings.Contains(err.Error(), "sekrit") || strings.Contains(err.Error(), "short")):
			t.Errorf("%s: the error shows the token: %v", c.name, err)
		}
	}
}

// TestUpstreamsFromUnsetVariable: a server of an upstreams_from file that
// cannot start as written (it needs a variable nobody set: a VS Code
// ${input:ID}, a Claude Code ${VAR} in a header) is not served, and the
// note says why; the file's other servers and the gateway still start, as
// they do in the client. Before, the one server's validation error failed
// the whole configuration; nor does an entry toolgate cannot take at all
// (one without a command or URL).
func TestUpstreamsFromUnsetVariable(t *testing.T) {
	dir := t.TempDir()
	vscode := filepath.Join(dir, "mcp.json")
	if err := os.WriteFile(vscode, []byte(`{
  "inputs": [{"type": "promptString", "id": "toolgate-test-unset-key", "password": true}],
  "servers": {
    "needs-input": {"type": "stdio", "command": "srv", "env": {"KEY": "${input:toolgate-test-unset-key}"}},
    "plain": {"type": "stdio", "command": "srv2"}
  }
}`), 0o644); err != nil {
		t.Fatal(err)
	}
	claude := filepath.Join(dir, ".mcp.json")
	if err := os.WriteFile(claude, []byte(`{"mcpServers": {
  "api": {"type": "http", "url": "https://api.example.com/mcp", "headers": {"Authorization": "Bearer ${TOOLGATE_TEST_UNSET_TOKEN}"}},
  "broken": {"type": "stdio"},
  "local": {"type": "stdio", "command": "srv3"}
}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := load(t, "upstreams_from:\n  - {format: vscode, path: "+vscode+"}\n  - {format: claude-code, path: "+claude+"}\n", nil)
	if err != nil {
		t.Fatalf("one server needing an unset variable fails the configuration: %v", err)
	}
	if names := upstreamNames(cfg); names != "plain,local" {
		t.Errorf("upstreams %s, want plain,local", names)
	}
	notes := strings.Join(cfg.ImportNotes, "\n")
	for _, want := range []string{`"needs-input"`, "TOOLGATE_TEST_UNSET_KEY", `"api"`, "TOOLGATE_TEST_UNSET_TOKEN", "skipped broken: neither command nor a URL"} {
		if !strings.Contains(notes, want) {
			t.Errorf("the notes do not name %s:\n%s", want, notes)
		}
	}
	// toolgate.yaml's own upstreams are still checked strictly.
	if _, err := load(t, "upstreams:\n  - name: own\n    command: x\n    env: {K: \"${TOOLGATE_TEST_UNSET_TOKEN}\"}\n", nil); err == nil {
		t.Error("an own upstream with an unset variable is accepted")
	}
}

// TestUpstreamNamedAsABuiltin: an upstream may not take the name of a
// built-in toolset the configuration turns on (the catalog serves one
// toolset per name, and the upstream's tools were never served, its log
// saying they would appear when it connects); it may when that toolset is
// off. An imported server of that name is left out with a note, as one
// that cannot start is, so the configuration still loads.
func TestUpstreamNamedAsABuiltin(t *testing.T) {
	skills := t.TempDir()
	tests := []struct {
		name, yaml string
		want       string // "" loads
	}{
		{"memory on", "upstreams:\n  - {name: memory, command: x}\n", `upstreams[0].name: "memory" is the name of toolgate's built-in memory toolset`},
		{"memory off", "memory: {enabled: false}\nupstreams:\n  - {name: memory, command: x}\n", ""},
		{"filesystem on", "upstreams:\n  - {name: filesystem, command: x}\n", `upstreams[0].name: "filesystem" is the name of`},
		{"tool search on", "upstreams:\n  - {name: discovery, command: x}\n", `upstreams[0].name: "discovery" is the name of`},
		{"tool search off", "discovery: {mode: all}\nupstreams:\n  - {name: discovery, command: x}\n", ""},
		{"skills on", "skills: {dirs: [" + skills + "]}\nupstreams:\n  - {name: skills, command: x}\n", `upstreams[0].name: "skills" is the name of`},
		{"skills off", "upstreams:\n  - {name: skills, command: x}\n", ""},
		{"disabled upstream", "upstreams:\n  - {name: memory, command: x, disabled: true}\n", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := load(t, tc.yaml, nil)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}

	claude := filepath.Join(t.TempDir(), ".mcp.json")
	if err := os.WriteFile(claude, []byte(`{"mcpServers": {
  "memory": {"type": "stdio", "command": "srv"},
  "github": {"type": "stdio", "command": "srv2"}
}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := load(t, "upstreams_from:\n  - {format: claude-code, path: "+claude+"}\n", nil)
	if err != nil {
		t.Fatalf("an imported server named memory fails the configuration: %v", err)
	}
	if names := upstreamNames(cfg); names != "github" {
		t.Errorf("upstreams %s, want github", names)
	}
	if notes := strings.Join(cfg.ImportNotes, "\n"); !strings.Contains(notes, `server "memory" is not served`) {
		t.Errorf("the notes do not say why memory is not served:\n%s", notes)
	}
}

// upstreamNames is cfg's upstreams' names, comma-separated.
func upstreamNames(cfg *Config) string {
	var names []string
	for _, u := range cfg.Upstreams {
		names = append(names, u.Name)
	}
	return strings.Join(names, ",")
}
