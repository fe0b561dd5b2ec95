package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// run runs the command line in process, in a temporary working directory
// with its own state directory, and returns the exit code and output.
func run(t *testing.T, config string, args ...string) (int, string, string) {
	t.Helper()
	dir := t.TempDir()
	t.Chdir(dir)
	t.Setenv("XDG_STATE_HOME", filepath.Join(dir, "state"))
	// The configuration reads every TOOLGATE_* variable (and refuses unknown
	// ones): run with none from the developer's environment.
	for _, kv := range os.Environ() {
		if name, _, _ := strings.Cut(kv, "="); strings.HasPrefix(name, "TOOLGATE_") {
			t.Setenv(name, "") // restores it after the test
			os.Unsetenv(name)
		}
	}
	if config != "" {
		if err := os.WriteFile("toolgate.yaml", []byte(config), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var stdout, stderr bytes.Buffer
	code := Main(context.Background(), args, strings.NewReader(""), &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

func TestExitCodes(t *testing.T) {
	tests := []struct {
		name     string
		config   string
		args     []string
		want     int
		inStdout string
		inStderr string
	}{
		{"no command", "", nil, exitUsage, "", "Usage:"},
		{"unknown command", "", []string{"frobnicate"}, exitUsage, "", `unknown command "frobnicate"`},
		{"version", "", []string{"version"}, exitOK, "toolgate ", ""},
		// Help asked for is on stdout, to be paged; a mistake's usage on stderr.
		{"help", "", []string{"help"}, exitOK, "toolgate serve [--http ADDR]", ""},
		{"--help", "", []string{"--help"}, exitOK, "Run 'toolgate COMMAND --help'", ""},
		{"help of a command", "", []string{"help", "call"}, exitOK, "Usage: toolgate call TOOL", ""},
		{"a command's --help", "", []string{"runs", "--help"}, exitOK, "--older-than string", ""},
		{"help of an unknown command", "", []string{"help", "frobnicate"}, exitUsage, "", `unknown command "frobnicate"`},
		{"bad flag", "", []string{"tools", "--nope"}, exitUsage, "", "unknown flag"},
		{"unknown config key", "limits:\n  call_timout: 1s\n", []string{"tools"}, exitUsage, "", "unknown key limits.call_timout"},
		{"bad policy config", "policy:\n  capabilities:\n    allow: [nett]\n", []string{"policy"}, exitUsage, "", `unknown capability "nett"`},
		{"call without tool", "", []string{"call"}, exitUsage, "", "usage: toolgate call TOOL"},
		{"call with bad JSON", "", []string{"call", "list_files", "{nope"}, exitUsage, "", "not valid JSON"},
		{"call ok", "", []string{"call", "write_file", `{"path":"a.txt","content":"hi\n"}`}, exitOK, "Wrote 3 B to a.txt", "recorded in"},
		{"call tool error", "", []string{"call", "read_file", `{"path":"../x"}`}, exitFailure, "outside the sandbox", ""},
		{"call invalid arguments", "", []string{"call", "read_file", `{"path":"a","limit":5000}`}, exitFailure, "at '/limit': maximum 2000, got 5000", ""},
		{"call unknown tool", "", []string{"call", "nope"}, exitFailure, "Tool `nope` not found", ""},
		{"call denied", "policy:\n  tools:\n    deny: [write_file]\n", []string{"call", "write_file", `{"path":"a","content":""}`}, exitFailure, "policy.tools.deny:write_file", ""},
		{"serve non-loopback without tokens", "", []string{"serve", "--http", "0.0.0.0:0"}, exitUsage, "", "refusing to serve"},
		{"missing sandbox root is bad config", "sandbox:\n  roots: [/nonexistent/toolgate-root]\n", []string{"tools"}, exitUsage, "", "sandbox.roots"},
		{"import unknown format", "", []string{"import", "--from", "claude"}, exitUsage, "", `unknown client format "claude" (one of auto, claude-desktop`},
		{"memory promote bad run id", "", []string{"memory", "promote", "../x"}, exitUsage, "", "is not a run ID"},
		// Config flags before the command, as git and kubectl take theirs.
		{"config flag before the command", "", []string{"--config", "other.yaml", "tools"}, exitUsage, "", "other.yaml"},
		{"config flags before the command, = form", "", []string{"--log-level=debug", "--runs-dir", "r", "call", "write_file", `{"path":"a.txt","content":"hi\n"}`}, exitOK, "Wrote 3 B to a.txt", "level=DEBUG"},
		{"config flag and no command", "", []string{"--config", "x.yaml"}, exitUsage, "", "--config x.yaml is given, but no command"},
		{"other flag before the command", "", []string{"--json", "tools"}, exitUsage, "", `unknown command "--json"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := run(t, tc.config, tc.args...)
			if code != tc.want {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", code, tc.want, out, errOut)
			}
			if !strings.Contains(out, tc.inStdout) || !strings.Contains(errOut, tc.inStderr) {
				t.Fatalf("stdout %q does not contain %q, or stderr %q does not contain %q", out, tc.inStdout, errOut, tc.inStderr)
			}
		})
	}
}

// TestOneShotMakesNoPromise: toolgate tools (which ends) with an upstream
// that cannot start shows its state in its output, and its log does not
// promise that the tools will appear when it connects: that is serve's.
func TestOneShotMakesNoPromise(t *testing.T) {
	code, out, errOut := run(t, "upstreams:\n  - name: gone\n    command: /nonexistent/toolgate-test-server\n", "tools")
	if code != exitOK || !strings.Contains(out, "toolset gone: failed (transport stdio;") || strings.Contains(errOut, "will appear when it connects") {
		t.Errorf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
}

// TestHelpOnStdout: help asked for, of the whole command or of one, is
// written to stdout alone (to be paged or grepped), and exits 0.
func TestHelpOnStdout(t *testing.T) {
	for _, args := range [][]string{{"help"}, {"-h"}, {"--help"}, {"help", "serve"}, {"serve", "-h"}, {"memory", "--help"}} {
		code, out, errOut := run(t, "", args...)
		if code != exitOK || errOut != "" || !strings.Contains(out, "toolgate ") {
			t.Errorf("toolgate %s: exit %d, stdout %q, stderr %q; want 0, the help on stdout alone", strings.Join(args, " "), code, out, errOut)
		}
	}
}

func TestCallJSONIsTheMCPResult(t *testing.T) {
	code, out, errOut := run(t, "", "call", "read_file", `{"path":"missing.txt"}`, "--json")
	if code != exitFailure {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var res struct {
		IsError bool           `json:"isError"`
		Content []any          `json:"content"`
		Meta    map[string]any `json:"_meta"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("--json output is not JSON: %v\n%s", err, out)
	}
	if !res.IsError || len(res.Content) == 0 || res.Meta["toolgate/call_id"] == nil {
		t.Fatalf("result %s", out)
	}
}

func TestToolsAndPolicyJSON(t *testing.T) {
	code, out, errOut := run(t, "policy:\n  tools:\n    deny: [grep_files]\n", "tools", "--json")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var tools struct {
		Tools []struct {
			Name     string `json:"name"`
			Decision struct {
				Allow bool   `json:"allow"`
				Rule  string `json:"rule"`
			} `json:"decision"`
		} `json:"tools"`
	}
	if err := json.Unmarshal([]byte(out), &tools); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, tool := range tools.Tools {
		if tool.Name == "grep_files" {
			found = true
			if tool.Decision.Allow || tool.Decision.Rule != "policy.tools.deny:grep_files" {
				t.Errorf("grep_files decision %+v", tool.Decision)
			}
		}
	}
	if !found {
		t.Fatalf("grep_files not listed: %s", out)
	}
	code, out, _ = run(t, "", "policy", "--json")
	if code != exitOK || !json.Valid([]byte(out)) || !strings.Contains(out, `"layers"`) {
		t.Fatalf("policy --json: %d %s", code, out)
	}
}

func TestConfigRedactsTokens(t *testing.T) {
	code, out, _ := run(t, "http:\n  auth:\n    tokens: [sekrit]\n", "config")
	if code != exitOK || strings.Contains(out, "sekrit") || !strings.Contains(out, "REDACTED") {
		t.Fatalf("config: %d\n%s", code, out)
	}
}

// TestVersionFlag: --version prints the version like the version command.
func TestVersionFlag(t *testing.T) {
	code, out, _ := run(t, "", "--version")
	want, wantOut, _ := run(t, "", "version")
	if code != 0 || code != want || out != wantOut || out == "" {
		t.Errorf("--version: exit %d %q; version: exit %d %q", code, out, want, wantOut)
	}
}

// TestPromoteNothing: promoting a run that wrote no memory candidates is
// not a failure: one line, exit 0.
func TestPromoteNothing(t *testing.T) {
	runsDir := t.TempDir()
	id := "20261124T025132Z-def8a7"
	if err := os.MkdirAll(filepath.Join(runsDir, id), 0o755); err != nil {
		t.Fatal(err)
	}
	// The run is named as runs show takes it: here by its random part.
	cfg := "runs_dir: " + runsDir + "\nmemory:\n  path: " + filepath.Join(runsDir, "m.db") + "\n"
	code, out, stderr := run(t, cfg, "memory", "promote", "def8a7")
	if code != 0 || !strings.Contains(out, "Run "+id+" has no memory candidates: nothing to promote") || strings.Count(out, "\n") != 1 {
		t.Errorf("exit %d, stdout %q, stderr %q", code, out, stderr)
	}
	if code, _, stderr := run(t, cfg, "memory", "promote", "abc123"); code != exitFailure || !strings.Contains(stderr, `no run "abc123"`) {
		t.Errorf("an unknown run: exit %d, stderr %q", code, stderr)
	}
}

// TestPromoteNothingJSON: with --json, a run without candidates is an
// empty report in JSON, as any other --json output, not a sentence.
func TestPromoteNothingJSON(t *testing.T) {
	runsDir := t.TempDir()
	id := "20261124T025132Z-def8a7"
	if err := os.MkdirAll(filepath.Join(runsDir, id), 0o755); err != nil {
		t.Fatal(err)
	}
	code, out, stderr := run(t, "runs_dir: "+runsDir+"\nmemory:\n  path: "+filepath.Join(runsDir, "m.db")+"\n", "memory", "promote", id, "--json")
	var rep struct {
		RunID      string `json:"run_id"`
		Candidates int    `json:"candidates"`
		Outcomes   []any  `json:"outcomes"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil || code != 0 || rep.RunID != id || rep.Candidates != 0 || rep.Outcomes == nil {
		t.Fatalf("exit %d, --json stdout %q (%v), stderr %q", code, out, err, stderr)
	}
}

// TestCallShowsArtifactPath: output saved as an artifact is shown with
// its file path as well as its URI.
func TestCallShowsArtifactPath(t *testing.T) {
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "big.txt"), []byte(strings.Repeat("line of text\n", 400)), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := run(t, "sandbox:\n  roots: ["+root+"]\nlimits:\n  max_output_bytes: 1024\n", "call", "read_file", `{"path":"big.txt"}`)
	if code != 0 || !strings.Contains(stderr, "artifact toolgate://artifacts/") || !strings.Contains(stderr, "saved at /") {
		t.Errorf("exit %d, stderr:\n%s", code, stderr)
	}
}

// TestOneWarningPerUpstreamFailure: an upstream that cannot start is one
// WARN line, not three (the adapter's; the catalog and the app add none).
func TestOneWarningPerUpstreamFailure(t *testing.T) {
	code, _, stderr := run(t, "upstreams:\n  - name: broken\n    command: /nonexistent/toolgate-test-server\n", "serve")
	if code != 0 {
		t.Fatalf("serve: exit %d\n%s", code, stderr)
	}
	n := 0
	for _, line := range strings.Split(stderr, "\n") {
		if strings.Contains(line, "level=WARN") && strings.Contains(line, "broken") {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d WARN lines about the failed upstream, want 1:\n%s", n, stderr)
	}
}

// TestUnknownProfileStartsNothing: serve and tools refuse a --profile the
// configuration does not define before they start an upstream (or serve
// makes its run): they started every upstream first.
func TestUnknownProfileStartsNothing(t *testing.T) {
	cfg := "upstreams:\n  - name: u\n    command: /nonexistent/toolgate-test-server\nprofiles: {a: {tools: [read_file]}}\n"
	for _, cmd := range []string{"serve", "tools"} {
		code, _, stderr := run(t, cfg, cmd, "--profile", "nope")
		if code != exitUsage || !strings.Contains(stderr, "--profile nope: no such profile; configured: [a]") {
			t.Errorf("%s: exit %d\n%s", cmd, code, stderr)
		}
		if strings.Contains(stderr, "upstream") {
			t.Errorf("%s started an upstream before refusing the profile:\n%s", cmd, stderr)
		}
		if ents, _ := os.ReadDir(filepath.Join("state", "toolgate", "runs")); len(ents) > 0 {
			t.Errorf("%s left a run behind: %v", cmd, ents)
		}
	}
}

// TestOneWarningPerSkillProblem: a skill that cannot be loaded is warned
// of once; the toolset and the command both logged it.
func TestOneWarningPerSkillProblem(t *testing.T) {
	skills := t.TempDir()
	if err := os.MkdirAll(filepath.Join(skills, "broken"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(skills, "broken", "SKILL.md"), []byte("no front matter\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := run(t, "skills:\n  dirs: ["+skills+"]\n", "tools")
	if code != 0 {
		t.Fatalf("tools: exit %d\n%s", code, stderr)
	}
	if n := strings.Count(stderr, "SKILL.md must start with YAML front matter"); n != 1 {
		t.Errorf("the skill's problem logged %d times, want once:\n%s", n, stderr)
	}
}

// TestWriteFileDescribedAlike (issue 10): `tools --json` describes
// write_file as serve and call run it: the previous content is archived.
func TestWriteFileDescribedAlike(t *testing.T) {
	code, out, errOut := run(t, "", "tools", "--json")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var tools struct {
		Tools []struct{ Name, Description string } `json:"tools"`
	}
	if err := json.Unmarshal([]byte(out), &tools); err != nil {
		t.Fatal(err)
	}
	for _, tool := range tools.Tools {
		if tool.Name == "write_file" && !strings.Contains(tool.Description, "Overwriting loses nothing") {
			t.Errorf("tools --json describes write_file as: %s", tool.Description)
		}
	}
}

// TestUnmatchedGlobsShown (issue 10): `policy.tools.deny: ["writefile"]`
// leaves write_file allowed; tools and policy say so and suggest the name.
func TestUnmatchedGlobsShown(t *testing.T) {
	const cfg = "policy:\n  tools:\n    deny: [writefile]\n"
	want := `policy.tools.deny[0] "writefile" matches no tool; did you mean write_file?`
	for _, cmd := range []string{"tools", "policy"} {
		code, out, errOut := run(t, cfg, cmd)
		if code != exitOK || !strings.Contains(out, "warning: "+want) {
			t.Errorf("%s: exit %d, stdout:\n%s\nstderr:\n%s", cmd, code, out, errOut)
		}
	}
	code, out, _ := run(t, cfg, "tools", "--json")
	if code != exitOK || !strings.Contains(out, `"did_you_mean": [`) {
		t.Errorf("tools --json: %s", out)
	}
}

// TestServeBindFailureLeavesNoRun (issue 10): a serve that cannot bind
// fails with the reason and leaves no run directory behind.
func TestServeBindFailureLeavesNoRun(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	code, _, errOut := run(t, "", "serve", "--http", ln.Addr().String())
	if code == exitOK || !strings.Contains(errOut, "address already in use") {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if ents, _ := os.ReadDir(filepath.Join("state", "toolgate", "runs")); len(ents) > 0 {
		t.Errorf("a run directory was left: %v", ents)
	}
}

// TestPolicyAs (issue 14): `toolgate policy --as NAME` decides as that
// caller, with policy.identities applied.
func TestPolicyAs(t *testing.T) {
	const cfg = "policy:\n  identities:\n    - match: {name: ci}\n      tools: {deny: [write_file]}\n"
	code, out, errOut := run(t, cfg, "policy", "--as", "ci")
	if code != exitOK || !strings.Contains(out, "policy.identities[0].tools.deny:write_file") {
		t.Fatalf("policy --as ci: exit %d\n%s\n%s", code, out, errOut)
	}
	if !strings.HasPrefix(out, "As token:ci: policy.identities[0] applies.\n") {
		t.Errorf("policy --as ci does not say which entry applies:\n%s", out)
	}
	// A name no entry matches (a misspelling, say) is told so, not
	// shown every caller's decisions without a word.
	code, out, _ = run(t, cfg, "policy", "--as", "cj", "--json")
	var rep struct {
		Caller *struct {
			Identity   string   `json:"identity"`
			Identities []string `json:"identities"`
		} `json:"caller"`
	}
	if err := json.Unmarshal([]byte(out), &rep); code != exitOK || err != nil || rep.Caller == nil || rep.Caller.Identity != "token:cj" || rep.Caller.Identities == nil || len(rep.Caller.Identities) != 0 {
		t.Errorf("policy --as cj --json: exit %d %v %+v", code, err, rep.Caller)
	}
	code, out, _ = run(t, cfg, "policy", "--as", "cj")
	if code != exitOK || !strings.HasPrefix(out, "As token:cj: no entry of policy.identities matches this caller") {
		t.Errorf("policy --as cj:\n%s", out)
	}
	code, out, _ = run(t, cfg, "policy")
	if code != exitOK || strings.Contains(out, "policy.identities[0].tools.deny:write_file") || strings.HasPrefix(out, "As ") {
		t.Errorf("policy without --as applies the identity's rule:\n%s", out)
	}
	code, _, errOut = run(t, "policy:\n  identities:\n    - match: {group: x}\n", "policy")
	if code != exitUsage || !strings.Contains(errOut, "policy.identities[0].match.group") {
		t.Errorf("an unknown match key: exit %d %s", code, errOut)
	}
	code, _, errOut = run(t, "policy:\n  identities:\n    - match: {claim: x}\n", "policy")
	if code != exitUsage || !strings.Contains(errOut, "policy.identities[0].match.claim") {
		t.Errorf("a claim match that is not a map: exit %d %s", code, errOut)
	}
	// A claim match confining a group to a profile: --as claim.NAME=VALUE.
	const grouped = "profiles:\n  readers: {tools: [read_file]}\npolicy:\n  identities:\n    - match: {claim: {groups: guests}}\n      profile: readers\n"
	code, out, errOut = run(t, grouped, "policy", "--as", "sub=gina,claim.groups=guests")
	if code != exitOK || !strings.Contains(out, "policy.identities[0].profile:readers") || !strings.Contains(out, `write_file: deny: the tool is not in profile "readers"`) {
		t.Errorf("policy --as a guest: exit %d\n%s\n%s", code, out, errOut)
	}
	code, out, _ = run(t, grouped, "policy", "--as", "sub=gina,claim.groups=staff")
	if code != exitOK || strings.Contains(out, "profile:readers") {
		t.Errorf("policy --as another group is confined:\n%s", out)
	}
	// A namespaced claim (dots in its name) through the list form.
	const namespaced = "policy:\n  identities:\n    - match: {claims: [{name: \"https://example.com/roles\", value: admin}]}\n      tools: {deny: [write_file]}\n"
	code, out, errOut = run(t, namespaced, "policy", "--as", "sub=root,claim.https://example.com/roles=admin")
	if code != exitOK || !strings.Contains(out, "policy.identities[0].tools.deny:write_file") {
		t.Errorf("policy --as with a namespaced claim: exit %d\n%s\n%s", code, out, errOut)
	}
	code, _, errOut = run(t, "policy:\n  identities:\n    - match: {name: ci}\n      profile: nope\n", "policy")
	if code != exitUsage || !strings.Contains(errOut, `policy.identities[0].profile: "nope" is not a profile (define it under profiles)`) {
		t.Errorf("an unknown profile: exit %d %s", code, errOut)
	}
	const scoped = "policy:\n  identities:\n    - match: {scope: tools:write}\n      destructive: {allow: [nothing_*]}\n      tools: {deny: [grep_files]}\n"
	code, out, errOut = run(t, scoped, "policy", "--as", "sub=alice,scope=tools:write")
	if code != exitOK || !strings.Contains(out, "policy.identities[0].tools.deny:grep_files") {
		t.Errorf("policy --as with a scope: exit %d\n%s\n%s", code, out, errOut)
	}
	code, out, _ = run(t, scoped, "policy", "--as", "sub=alice,scope=tools:read")
	if code != exitOK || strings.Contains(out, "policy.identities[0].tools.deny:grep_files") {
		t.Errorf("policy --as without the scope applies the rule:\n%s", out)
	}
}

// TestImportRewriteTwiceKeepsConfig: a second import --rewrite without
// --config keeps the --config the first one wrote in the client's entry
// (the gateway would otherwise start on defaults), and says so.
func TestImportRewriteTwiceKeepsConfig(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	path := filepath.Join(dir, "claude_desktop_config.json")
	rewrite := func(server string, args ...string) string {
		t.Helper()
		// A server added to the client since the last rewrite.
		data, err := os.ReadFile(path)
		if err != nil {
			data = []byte(`{"mcpServers": {}}`)
		}
		data = []byte(strings.Replace(string(data), `"mcpServers": {`, `"mcpServers": {"`+server+`": {"command": "npx", "args": ["-y", "`+server+`"]},`, 1))
		data = []byte(strings.Replace(string(data), "},}", "}}", 1))
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		var out, errOut bytes.Buffer
		if code := Main(context.Background(), append(append([]string{"import", "--rewrite"}, args...), path), strings.NewReader(""), &out, &errOut); code != exitOK {
			t.Fatalf("import --rewrite %v: exit %d\n%s", args, code, errOut.String())
		}
		return errOut.String()
	}
	first := rewrite("fs", "--config", "toolgate.yaml")
	time.Sleep(1100 * time.Millisecond) // a backup of another name
	stderr := rewrite("git")
	wantConfig := "--config " + filepath.Join(dir, "toolgate.yaml")
	// Both say which file the entry serves, the second from what it kept.
	for i, out := range []string{first, stderr} {
		if !strings.Contains(out, "Add the upstreams printed above to "+filepath.Join(dir, "toolgate.yaml")+", the configuration the toolgate entry serves") {
			t.Errorf("rewrite %d does not name the configuration the entry serves:\n%s", i+1, out)
		}
	}
	data, _ := os.ReadFile(path)
	var file struct {
		MCPServers map[string]struct{ Args []string } `json:"mcpServers"`
	}
	if err := json.Unmarshal(data, &file); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(file.MCPServers["toolgate"].Args, " "); got != "serve "+wantConfig || len(file.MCPServers) != 1 {
		t.Errorf("after the second rewrite: %s\nwant only toolgate, args %q", data, "serve "+wantConfig)
	}
	if !strings.Contains(stderr, "keeps what this run did not set: "+wantConfig) {
		t.Errorf("the second rewrite does not say what it kept:\n%s", stderr)
	}
	if !strings.Contains(stderr, ": 1 imported server is replaced by one toolgate entry;") {
		t.Errorf("the second rewrite (one server) does not count it in words that agree:\n%s", stderr)
	}
}

// TestImportRewriteWithoutConfig: a rewrite without --config (and no
// earlier one's to keep) says that the entry now serves toolgate's
// defaults, not the servers it took out, and how to point it at a
// configuration; it once said "add the upstreams to toolgate's
// configuration", naming none.
func TestImportRewriteWithoutConfig(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	path := filepath.Join(dir, "claude_desktop_config.json")
	if err := os.WriteFile(path, []byte(`{"mcpServers": {"fs": {"command": "npx", "args": ["-y", "fs"]}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	if code := Main(context.Background(), []string{"import", "--rewrite", path}, strings.NewReader(""), &out, &errOut); code != exitOK {
		t.Fatalf("exit %d\n%s", code, errOut.String())
	}
	if !strings.Contains(errOut.String(), "The toolgate entry runs `toolgate serve` without --config: it serves toolgate's defaults") ||
		!strings.Contains(errOut.String(), `"--config", "/ABSOLUTE/PATH/toolgate.yaml" after "serve"`) || strings.Contains(errOut.String(), "the configuration the toolgate entry serves") {
		t.Errorf("a rewrite without --config:\n%s", errOut.String())
	}
}

// toolgate import without PATH looks at every project file in the working
// directory before the user's files (docs/import.md): a user-wide Cursor
// list must not win over the project's .gemini/settings.json.
func TestImportPrefersProjectFiles(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	if err := os.MkdirAll(filepath.Join(home, ".cursor"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, ".cursor", "mcp.json"), []byte(`{"mcpServers": {"users": {"command": "users-server"}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	t.Chdir(dir)
	if err := os.MkdirAll(".gemini", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(".gemini", "settings.json"), []byte(`{"mcpServers": {"project": {"command": "project-server"}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	if code := Main(context.Background(), []string{"import"}, strings.NewReader(""), &out, &errOut); code != exitOK {
		t.Fatalf("import: exit %d\n%s", code, errOut.String())
	}
	if !strings.Contains(out.String(), "project-server") || strings.Contains(out.String(), "users-server") {
		t.Errorf("import without PATH read the user's file before the project's:\n%s", out.String())
	}
}

// TestImportCodex: toolgate import without PATH finds Codex's files after
// every other client's (a project's .codex/config.toml does not win over
// the user's Cursor list that was found before Codex was known), and at
// $CODEX_HOME when it is set; --rewrite on Codex's TOML is refused before
// anything is printed or written, saying what to write by hand.
func TestImportCodex(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("CODEX_HOME", "")
	dir := t.TempDir()
	t.Chdir(dir)
	write := func(path, body string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	importAuto := func(args ...string) (int, string, string) {
		t.Helper()
		var out, errOut bytes.Buffer
		code := Main(context.Background(), append([]string{"import"}, args...), strings.NewReader(""), &out, &errOut)
		return code, out.String(), errOut.String()
	}
	write(filepath.Join(home, ".codex", "config.toml"), "[mcp_servers.user-codex]\ncommand = \"user-codex-server\"\n")
	if code, out, errOut := importAuto(); code != exitOK || !strings.Contains(out, "user-codex-server") || !strings.Contains(out, "(codex)") {
		t.Fatalf("import, only ~/.codex/config.toml: exit %d\n%s%s", code, out, errOut)
	}
	write(filepath.Join(".codex", "config.toml"), "[mcp_servers.project-codex]\ncommand = \"project-codex-server\"\n")
	if _, out, _ := importAuto(); !strings.Contains(out, "project-codex-server") {
		t.Errorf("import: the project's .codex/config.toml is not read before the user's:\n%s", out)
	}
	write(filepath.Join(home, ".cursor", "mcp.json"), `{"mcpServers": {"users": {"command": "users-server"}}}`)
	if _, out, _ := importAuto(); !strings.Contains(out, "users-server") {
		t.Errorf("import: Codex's file now wins over the user's Cursor list found before:\n%s", out)
	}
	codexHome := filepath.Join(t.TempDir(), "ch")
	write(filepath.Join(codexHome, "config.toml"), "[mcp_servers.moved]\ncommand = \"moved-server\"\n")
	t.Setenv("CODEX_HOME", codexHome)
	os.Remove(filepath.Join(".codex", "config.toml"))
	if code, out, errOut := importAuto("--from", "codex"); code != exitOK || !strings.Contains(out, "moved-server") {
		t.Errorf("import --from codex with CODEX_HOME: exit %d\n%s%s", code, out, errOut)
	}

	path := filepath.Join(codexHome, "config.toml")
	before, _ := os.ReadFile(path)
	code, out, errOut := importAuto("--rewrite", path)
	if code != exitUsage || out != "" || !strings.Contains(errOut, "TOML") || !strings.Contains(errOut, "[mcp_servers.toolgate]") {
		t.Errorf("import --rewrite of Codex's file: exit %d, stdout %q\n%s", code, out, errOut)
	}
	if after, _ := os.ReadFile(path); string(after) != string(before) {
		t.Errorf("the refused rewrite changed the file:\n%s", after)
	}
	if backups, _ := filepath.Glob(path + ".toolgate-backup-*"); len(backups) != 0 {
		t.Errorf("the refused rewrite wrote a backup: %v", backups)
	}
}

// TestDecideEscapesCallID: approve, deny and submit send the call ID as
// one path segment, whatever it holds: an ID with '/', '?' or '%' reaches
// the admin API as that ID, not as another path (a bare 404 page) or a
// URL that does not parse.
func TestDecideEscapesCallID(t *testing.T) {
	cfg, got := fakeAdmin(t, `[{"id": "a/b", "kind": "approval"}, {"id": "a?b", "kind": "approval"}, {"id": "50%zz", "kind": "output"}]`)
	for _, args := range [][]string{{"approve", "a/b"}, {"deny", "a?b"}, {"submit", "50%zz", `"ok"`}} {
		code, out, errOut := run(t, cfg, args...)
		if code != exitOK {
			t.Fatalf("%v: exit %d, stdout %q, stderr %q", args, code, out, errOut)
		}
	}
	if want := []string{"a/b", "a?b", "50%zz"}; !slices.Equal(*got, want) {
		t.Fatalf("the admin API got IDs %q, want %q", *got, want)
	}
}

// fakeAdmin serves an admin API that lists pending (a JSON array) and
// takes every answer, and returns the configuration that points the
// operator commands at it and the IDs answered, in order.
func fakeAdmin(t *testing.T, pending string) (cfg string, answered *[]string) {
	t.Helper()
	got := new([]string)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/pending", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"pending": ` + pending + `}`))
	})
	mux.HandleFunc("POST /v1/pending/{id}/submit", func(w http.ResponseWriter, r *http.Request) {
		*got = append(*got, r.PathValue("id"))
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"ok":true}`))
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return "admin:\n  addr: " + strings.TrimPrefix(srv.URL, "http://") + "\n", got
}

// TestAnswerNamesTheCall: approve, deny and submit take a waiting call's
// ID or enough of its start or end to name one call, refuse a reference
// that names several or none, and refuse an answer of the wrong kind with
// the command that answers the call, sending nothing.
func TestAnswerNamesTheCall(t *testing.T) {
	cfg, got := fakeAdmin(t, `[
		{"id": "01a2276c-dff2-789c-9905-903d96e53695", "kind": "approval", "tool": "write_file"},
		{"id": "01a2276c-e000-7173-a4a3-f097bc7a7fdc", "kind": "output", "tool": "ask_reviewer"}]`)
	for _, c := range []struct {
		args []string
		sent string // the ID the answer went to; "" for none
		want string // in stdout, or in stderr when nothing is sent
	}{
		{[]string{"approve", "01a2276c-dff2"}, "01a2276c-dff2-789c-9905-903d96e53695", "of write_file: allow_once"},
		{[]string{"deny", "903d96e53695"}, "01a2276c-dff2-789c-9905-903d96e53695", "of write_file: deny"},
		{[]string{"submit", "7fdc", `{"verdict":"approve"}`}, "01a2276c-e000-7173-a4a3-f097bc7a7fdc", "output of call 01a2276c-e000-7173-a4a3-f097bc7a7fdc of ask_reviewer"},
		{[]string{"approve", "01a2276c"}, "", `"01a2276c" names 2 waiting calls`},
		{[]string{"approve", "nothing"}, "", `no call with that ID is waiting: "nothing"`},
		{[]string{"approve", "7fdc"}, "", "waits for its output, not for an approval: answer it with toolgate submit 01a2276c-e000-7173-a4a3-f097bc7a7fdc JSON"},
		{[]string{"submit", "3695", `"ok"`}, "", "waits for approval, not for an output: answer it with toolgate approve 01a2276c-dff2-789c-9905-903d96e53695"},
	} {
		*got = nil
		code, out, errOut := run(t, cfg, c.args...)
		if c.sent == "" {
			if code == exitOK || len(*got) > 0 || !strings.Contains(errOut, c.want) {
				t.Errorf("%v: exit %d, sent to %q, stderr %q; want a refusal with %q", c.args, code, *got, errOut, c.want)
			}
			continue
		}
		if code != exitOK || !slices.Equal(*got, []string{c.sent}) || !strings.Contains(out, c.want) {
			t.Errorf("%v: exit %d, sent to %q, stdout %q, stderr %q; want %s answered (%q)", c.args, code, *got, out, errOut, c.sent, c.want)
		}
	}
}

// TestAdminTokenRefused: an operator command whose configuration gives no
// admin token, or another than the serve's, says so in the configuration's
// terms, not as a bare 401.
func TestAdminTokenRefused(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("WWW-Authenticate", `Bearer realm="toolgate-admin"`)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		w.Write([]byte(`{"error":"the admin token is not one this gateway accepts (admin.tokens, admin.token_env)"}`))
	}))
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")
	for cfg, want := range map[string]string{
		"admin:\n  addr: " + addr + "\n":                                      "wants a token, and this command's configuration gives none",
		"admin:\n  addr: " + addr + "\n  tokens: [\"0123456789abcdefXYZ\"]\n": "refused the admin token of this command's configuration",
	} {
		for _, args := range [][]string{{"pending"}, {"approve", "x"}} {
			code, _, errOut := run(t, cfg, args...)
			if code != exitFailure || !strings.Contains(errOut, want) || strings.Contains(errOut, "0123456789abcdefXYZ") {
				t.Errorf("%v: exit %d, stderr %q; want %q", args, code, errOut, want)
			}
		}
	}
}

// TestStdoutReaderGone: a command whose stdout's reader went away
// (toolgate runs list | head) ends quietly, not with "write /dev/stdout:
// broken pipe" on stderr.
func TestStdoutReaderGone(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
	defer w.Close()
	var stderr bytes.Buffer
	if code := Main(context.Background(), []string{"config", "--defaults"}, strings.NewReader(""), w, &stderr); code != exitOK || stderr.Len() != 0 {
		t.Fatalf("exit %d, stderr %q", code, stderr.String())
	}
}

// TestCallInterrupted: Ctrl-C during a call cancels it, records it as
// cancelled, and exits 130 as an interrupted command does, not 1 as if
// the tool had failed.
func TestCallInterrupted(t *testing.T) {
	run(t, "diagnostics:\n  enabled: true\n", "version") // the working directory and state
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(300*time.Millisecond, cancel)
	var stdout, stderr bytes.Buffer
	code := Main(ctx, []string{"call", "sleep", `{"ms":20000}`}, strings.NewReader(""), &stdout, &stderr)
	if code != exitInterrupt || !strings.Contains(stdout.String(), "cancelled") || !strings.Contains(stderr.String(), "recorded in") {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, stdout.String(), stderr.String())
	}
	_, dir, _ := strings.Cut(strings.TrimSpace(stderr.String()), "recorded in ")
	rec, err := os.ReadFile(filepath.Join(dir, "logs", "tools.jsonl"))
	if err != nil || !strings.Contains(string(rec), `"status":"cancelled"`) {
		t.Fatalf("the run's record %q (%v)", rec, err)
	}
}

// TestCallArgsFromStdin: `toolgate call TOOL -` reads the arguments from
// stdin (a file's content needs no shell quoting), and JSON that does not
// parse is refused saying where.
func TestCallArgsFromStdin(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	t.Setenv("XDG_STATE_HOME", filepath.Join(dir, "state"))
	content := "line one\n\"quoted\" and \\ backslash\n"
	args, _ := json.Marshal(map[string]string{"path": "notes.md", "content": content})
	call := func(stdin string, args ...string) (int, string, string) {
		var stdout, stderr bytes.Buffer
		code := Main(context.Background(), append([]string{"call"}, args...), strings.NewReader(stdin), &stdout, &stderr)
		return code, stdout.String(), stderr.String()
	}
	if code, _, errOut := call(string(args)+"\n", "write_file", "-"); code != exitOK {
		t.Fatalf("write_file -: exit %d: %s", code, errOut)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "state", "toolgate", "workspace", "notes.md")); err != nil || string(b) != content {
		t.Errorf("the file holds %q (%v), want %q", b, err, content)
	}
	for _, tc := range []struct{ stdin, arg, want string }{
		{"", "-", "JSON-ARGS: - reads them from stdin, which is empty"},
		{`{"path": notes}`, "-", `JSON-ARGS is not valid JSON (invalid character 'o' in literal null (expecting 'u') at byte 11): {"path": notes}`},
		{"", `{"path":`, "JSON-ARGS is not valid JSON (unexpected end of JSON input at byte 8)"},
	} {
		if code, _, errOut := call(tc.stdin, "read_file", tc.arg); code != exitUsage || !strings.Contains(errOut, tc.want) {
			t.Errorf("%q on stdin, %q: exit %d %s, want %s", tc.stdin, tc.arg, code, errOut, tc.want)
		}
	}
}
