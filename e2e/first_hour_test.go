package e2e

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestGlobsThatMatchNothing (issue 10): a new user's typos in globs are
// reported, with the name they probably meant, where they will look:
// serve's log at start, `toolgate tools`, and `toolgate call` of a
// misspelled tool. The policy typo `deny: [writefile]` (which leaves
// write_file allowed) and an upstream `allow: [ecoh]` (which drops echo).
func TestGlobsThatMatchNothing(t *testing.T) {
	t.Parallel()
	inner := newInner(t)
	e := newEnv(t, set("policy.tools.deny", []string{"writefile"}), func(cfg map[string]any) {
		inner.upstreamOpt(4)(cfg)
		ups := cfg["upstreams"].([]any)
		ups[0].(map[string]any)["allow"] = []string{"ecoh", "sleep"}
	})
	s := e.StartHTTP(t)
	for _, want := range []string{
		`policy: policy.tools.deny[0] \"writefile\" matches no tool; did you mean write_file?`,
		`upstream: allow glob \"ecoh\" matches no tool of the upstream; did you mean echo?`,
	} {
		if !waitFor(30*time.Second, func() bool { return strings.Contains(s.Stderr(), want) }) {
			t.Errorf("serve's log does not say %s", want)
		}
	}
	for _, line := range strings.Split(s.Stderr(), "\n") {
		if n := strings.Count(line, "upstream=inner"); strings.Contains(line, `allow glob \"ecoh\"`) && n != 1 {
			t.Errorf("the line names its upstream %d times: %s", n, line)
		}
	}
	s.Stop(t)

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out, _ := e.command(ctx, "tools").Output()
	for _, want := range []string{
		`warning: policy.tools.deny[0] "writefile" matches no tool; did you mean write_file?`,
		`warning: upstream inner: allow glob "ecoh" matches no tool of the upstream; did you mean echo?`,
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("toolgate tools does not say %s:\n%s", want, out)
		}
	}
	cmd := e.command(ctx, "call", "read_flie", `{"path":"x"}`)
	out, err := cmd.Output()
	if err == nil || !strings.Contains(string(out), "did you mean read_file?") {
		t.Errorf("toolgate call read_flie: %v\n%s", err, out)
	}
}

// TestDefaultWorkspacePersists (issue 10): with no sandbox.roots, files
// written by one `toolgate call` (or one session) are there for the next,
// in a workspace whose path serve logs and the tools' descriptions name.
func TestDefaultWorkspacePersists(t *testing.T) {
	t.Parallel()
	e := newEnv(t, set("sandbox.roots", []string{}))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if out, err := e.command(ctx, "call", "write_file", `{"path":"notes.txt","content":"from the first call"}`).CombinedOutput(); err != nil {
		t.Fatalf("write_file: %v\n%s", err, out)
	}
	out, err := e.command(ctx, "call", "read_file", `{"path":"notes.txt"}`).Output()
	if err != nil || !strings.Contains(string(out), "from the first call") {
		t.Fatalf("read_file in a second call: %v\n%s", err, out)
	}
	ws := e.Dir + "/state/toolgate/workspace"
	s := e.StartHTTP(t)
	if !strings.Contains(s.Stderr(), "persistent workspace") || !strings.Contains(s.Stderr(), ws) {
		t.Errorf("serve does not say where the workspace is:\n%s", s.Stderr())
	}
	cs := s.Connect(t, era2025, nil)
	if res := call(t, cs, "read_file", map[string]any{"path": "notes.txt"}); !strings.Contains(textOf(res), "from the first call") {
		t.Errorf("a session does not see the file: %s", textOf(res))
	}
	tools, err := cs.ListTools(callCtx(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range tools.Tools {
		if tool.Name == "list_files" && !strings.Contains(tool.Description, ws) {
			t.Errorf("list_files does not name the workspace: %s", tool.Description)
		}
	}
}
