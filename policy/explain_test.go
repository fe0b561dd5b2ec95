package policy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/gateway"
)

var update = flag.Bool("update", false, "rewrite the policy_*.golden files in testdata")

// explainFixture is a gateway with built-in and upstream tools under a
// configuration that uses every layer.
func explainFixture(t *testing.T) (*Effective, []ExplainTool) {
	t.Helper()
	e := newPolicy(t, func(c *Config) {
		c.CustomCapabilities = []string{"gpu"}
		c.Capabilities.Requestable = []string{Net, "gpu"}
		c.Tools.Deny = []string{"legacy_*"}
		c.Grants = []Grant{{Tools: []string{"github__*"}, Capabilities: []string{Net}}}
		c.Destructive.Allow = []string{"delete_file", "github__delete_*"}
	}, &Options{SandboxRoots: []string{"/srv/toolgate/workspace"}})
	// A skill loaded outside any call (the "" session), and one in session sess-1.
	e.Request(context.Background(), "web-research", []string{Net})
	e.Request(sessionCtx(t, "sess-1"), "train", []string{"gpu"})

	tool := func(toolset, name string, caps []string, hints gateway.Hints) ExplainTool {
		return ExplainTool{Name: name, Toolset: toolset, Tool: testTool(t, name, caps, hints)}
	}
	entries := []ExplainTool{
		tool("filesystem", "read_file", []string{FSRead}, readOnly),
		tool("filesystem", "write_file", []string{FSWrite}, safeWrite),
		tool("filesystem", "delete_file", []string{FSWrite}, destructiveClosed),
		tool("memory", "recall_memory", []string{MemoryRead}, readOnly),
		tool("skills", "load_skill", []string{SkillsRead}, readOnly),
		tool("shell", "run_command", []string{ShellExec}, safeWrite),
		tool("github", "github__search", nil, gateway.Hints{ReadOnly: gateway.Bool(true)}),
		tool("github", "github__delete_repo", nil, noHints),
		tool("web", "web__fetch", nil, readOnlyOpen),
		tool("ml", "train_model", []string{"gpu"}, safeWrite),
		tool("legacy", "legacy_export", []string{FSRead}, readOnly),
		tool("other", "other__mutate", nil, noHints),
	}
	return e, entries
}

func checkGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./policy/ -run %s -update to create it)", err, t.Name())
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs (run go test ./policy/ -run %s -update after checking the change)\n--- got\n%s\n--- want\n%s", path, t.Name(), got, want)
	}
}

// TestAcceptance10ExplainGolden: seed 002 acceptance criterion 10, the
// effective permission policy computed explicitly. The text report (what
// `toolgate policy` prints) shows every tool's decision with its layer and
// rule, and every layer the policy is merged from.
func TestAcceptance10ExplainGolden(t *testing.T) {
	e, entries := explainFixture(t)
	rep := e.Explain(context.Background(), entries)
	var buf bytes.Buffer
	if err := rep.WriteText(&buf); err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "policy_explain.golden", buf.Bytes())

	// The report agrees with Decide, row by row.
	for i, en := range entries {
		d := e.Decide(context.Background(), en.Tool)
		row := rep.Tools[i]
		if row.Name != en.Name || (row.Decision == "allow") != d.Allow || row.Rule != d.Rule || row.Layer != d.Layer {
			t.Errorf("row %d = %+v, Decide = %+v", i, row, d)
		}
	}
}

// TestExplainJSON checks the shape of `toolgate policy --json`: stable
// keys, and lists that are [] rather than null.
func TestExplainJSON(t *testing.T) {
	e, entries := explainFixture(t)
	rep := e.Explain(context.Background(), entries)
	b, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "policy_explain_json.golden", append(b, '\n'))

	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	keys := func(v any) []string {
		m, ok := v.(map[string]any)
		if !ok {
			t.Fatalf("%v is not an object", v)
		}
		var ks []string
		for k := range m {
			ks = append(ks, k)
		}
		slices.Sort(ks)
		return ks
	}
	if got := keys(doc); !slices.Equal(got, []string{"layers", "tools", "unmatched_globs"}) {
		t.Errorf("top-level keys = %v", got)
	}
	layers := doc["layers"].(map[string]any)
	if got := keys(layers); !slices.Equal(got, []string{"config", "runtime", "sandbox", "skill"}) {
		t.Errorf("layer keys = %v", got)
	}
	if got := keys(layers["config"]); !slices.Equal(got, []string{"capabilities", "custom_capabilities", "destructive", "grants", "list_denied", "tools"}) {
		t.Errorf("config keys = %v", got)
	}
	tools := doc["tools"].([]any)
	if len(tools) != len(entries) {
		t.Fatalf("%d tool rows, want %d", len(tools), len(entries))
	}
	wantRow := []string{"capabilities", "decision", "hints", "layer", "missing", "name", "reason", "rule", "toolset"}
	for _, row := range tools {
		if got := keys(row); !slices.Equal(got, wantRow) {
			t.Errorf("row keys = %v, want %v", got, wantRow)
		}
		for _, k := range []string{"capabilities", "missing", "hints"} {
			if _, ok := row.(map[string]any)[k].([]any); !ok {
				t.Errorf("row %v: %s is not a list", row.(map[string]any)["name"], k)
			}
		}
	}

	// An empty policy encodes with lists, not nulls.
	b, err = json.Marshal(Default().Explain(context.Background(), nil))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(b, []byte("null")) {
		t.Errorf("empty report has nulls: %s", b)
	}
}

type failWriter struct{ n int }

func (w *failWriter) Write(p []byte) (int, error) {
	if w.n <= 0 {
		return 0, errors.New("disk full")
	}
	w.n--
	return len(p), nil
}

func TestWriteTextReportsWriteErrors(t *testing.T) {
	e, entries := explainFixture(t)
	rep := e.Explain(context.Background(), entries)
	for _, n := range []int{0, 1, 3} {
		if err := rep.WriteText(&failWriter{n: n}); err == nil || err.Error() != "disk full" {
			t.Errorf("WriteText after %d writes = %v, want the write error", n, err)
		}
	}
}

// TestExplainJSONEmptyLists: lists the configuration gives empty (the
// embedded defaults' [], not absent) are [] in JSON, never null: list
// appended them to nil, which gave null.
func TestExplainJSONEmptyLists(t *testing.T) {
	e := newPolicy(t, func(c *Config) {
		c.Capabilities.Allow, c.Capabilities.Deny, c.Capabilities.Requestable = []string{}, []string{}, []string{}
		c.Tools.Allow, c.Tools.Deny = []string{}, []string{}
		c.Destructive.Allow, c.CustomCapabilities = []string{}, []string{}
	}, nil)
	b, err := json.Marshal(e.Explain(context.Background(), nil))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "null") {
		t.Errorf("null in %s", b)
	}
}
