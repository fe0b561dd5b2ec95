package skills

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/toolgate/toolgate/gateway"
)

// These tests show seed 002 acceptance criterion 3, "Skill tools expose
// list/load" (Skill tools 暴露 list/load): list_skills and load_skill over
// skill folders, run through a real gateway pipeline so that argument
// validation applies, with capability requests going through a Granter.

// skillMD returns a SKILL.md with the given front matter lines and body.
func skillMD(front, body string) string {
	return "---\n" + front + "\n---\n" + body
}

// good is a valid skill that every problem case keeps beside the broken one.
var good = map[string]string{
	"good/SKILL.md": skillMD("name: good\ndescription: A skill that always loads.", "Good body.\n"),
}

// writeTree creates files under base. A value starting with "symlink:" makes
// a symbolic link to the rest of the value; a name ending in "/" makes a
// directory.
func writeTree(t testing.TB, base string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(base, filepath.FromSlash(name))
		if strings.HasSuffix(name, "/") {
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if target, ok := strings.CutPrefix(content, "symlink:"); ok {
			if err := os.Symlink(target, p); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func merge(ms ...map[string]string) map[string]string {
	out := map[string]string{}
	for _, m := range ms {
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}

// tempBase returns a temporary directory with symbolic links resolved, and
// base/outside/secret.txt for escape tests.
func tempBase(t testing.TB) string {
	t.Helper()
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	writeTree(t, base, map[string]string{"outside/secret.txt": "SECRET\n"})
	return base
}

// fakeGranter records its calls and grants the capabilities in allow.
type fakeGranter struct {
	allow  map[string]string // capability -> reason it is granted
	answer func(skill string, caps []string) []Grant

	mu    sync.Mutex
	calls []grantCall
}

type grantCall struct {
	Skill string
	Caps  []string
}

func (g *fakeGranter) Request(_ context.Context, skill string, caps []string) []Grant {
	g.mu.Lock()
	g.calls = append(g.calls, grantCall{skill, slices.Clone(caps)})
	g.mu.Unlock()
	if g.answer != nil {
		return g.answer(skill, caps)
	}
	var out []Grant
	for _, c := range caps {
		if why, ok := g.allow[c]; ok {
			out = append(out, Grant{Capability: c, Granted: true, Reason: why})
		} else {
			out = append(out, Grant{Capability: c, Granted: false, Reason: fmt.Sprintf("config does not mark %q requestable", c)})
		}
	}
	return out
}

func (g *fakeGranter) Calls() []grantCall {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.calls)
}

// env is the toolset over a temporary tree, served through a pipeline.
type env struct {
	t    testing.TB
	base string
	ts   *Toolset
	p    *gateway.Pipeline
}

// newEnv writes files under base/skills and serves the toolset over that
// directory (opts.Dirs, if set, are used instead, relative to base).
func newEnv(t testing.TB, opts Options, files map[string]string) *env {
	t.Helper()
	base := tempBase(t)
	writeTree(t, filepath.Join(base, "skills"), files)
	if len(opts.Dirs) == 0 {
		opts.Dirs = []string{"skills"}
	}
	for i, d := range opts.Dirs {
		opts.Dirs[i] = filepath.Join(base, d)
	}
	ts, err := New(&opts)
	if err != nil {
		t.Fatal(err)
	}
	cat := gateway.NewCatalog(nil)
	if err := cat.Add(context.Background(), ts); err != nil {
		t.Fatal(err)
	}
	return &env{t: t, base: base, ts: ts, p: gateway.NewPipeline(&gateway.Options{Tools: cat})}
}

func (e *env) call(name string, args any) *gateway.Result {
	e.t.Helper()
	raw, err := json.Marshal(args)
	if err != nil {
		e.t.Fatal(err)
	}
	return e.p.Call(context.Background(), &gateway.Call{Name: name, Arguments: raw})
}

func (e *env) list() (*gateway.Result, listOutput) {
	e.t.Helper()
	res := e.call("list_skills", map[string]any{})
	if res.IsError {
		e.t.Fatalf("list_skills failed: %s", res.Message)
	}
	var out listOutput
	e.structured(res, &out)
	return res, out
}

func (e *env) load(id string) *gateway.Result {
	e.t.Helper()
	return e.call("load_skill", map[string]any{"skill_id": id})
}

// structured decodes the result's structured output into v. The tool
// checks it against its output schema itself (gateway.NewTypedToolOut).
func (e *env) structured(res *gateway.Result, v any) {
	e.t.Helper()
	if err := json.Unmarshal(res.Structured, v); err != nil {
		e.t.Fatalf("structured output %s: %v", res.Structured, err)
	}
}

func names(out listOutput) []string {
	var ns []string
	for _, s := range out.Skills {
		ns = append(ns, s.Name)
	}
	return ns
}

func mustContain(t testing.TB, what, s string, subs ...string) {
	t.Helper()
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			t.Errorf("%s does not contain %q:\n%s", what, sub, s)
		}
	}
}

// Criterion 3: list_skills lists valid skills; load_skill returns body,
// resources and allowed tools, and applies the capability requests through
// the Granter, reporting its answers verbatim.
func TestListAndLoad(t *testing.T) {
	g := &fakeGranter{allow: map[string]string{"net": `config marks "net" requestable`}}
	e := newEnv(t, Options{Granter: g}, map[string]string{
		"pdf-forms/SKILL.md": skillMD(`name: pdf-forms
description: |
  Fill in PDF forms.
  Use for any PDF form.
capabilities: [net, shell.exec, net]
allowed_tools: [filesystem__read_file, "filesystem__*"]
license: MIT`, "# Filling forms\n\nRun scripts/fill.py.\n\n"),
		"pdf-forms/scripts/fill.py":     "print('hi')\n",
		"pdf-forms/reference/fields.md": strings.Repeat("x", 2048),
		"pdf-forms/.hidden":             "skipped",
		"pdf-forms/.git/config":         "skipped",
		"pdf-forms/inner-link":          "symlink:scripts/fill.py",
		"pdf-forms/dir-link":            "symlink:reference",
		"notes/SKILL.md":                skillMD("name: notes\ndescription: Take notes.\nallowed-tools: read_file, write_file", "Notes body"),
		"README.md":                     "not a skill folder: ignored",
		".trash/SKILL.md":               "hidden folder: ignored",
	})

	res, out := e.list()
	if got := res.OutputText(); got != "notes: Take notes.\npdf-forms: Fill in PDF forms. Use for any PDF form." {
		t.Errorf("list output:\n%s", got)
	}
	mustContain(t, "list message", res.Message, "2 skills, sorted by name")
	if strings.Contains(res.Message, "problem") {
		t.Errorf("list message mentions problems: %s", res.Message)
	}
	if !slices.Equal(names(out), []string{"notes", "pdf-forms"}) || out.Total != 2 || out.Truncated || len(out.Problems) != 0 {
		t.Errorf("list structured: %+v", out)
	}
	if out.Skills[1].Description != "Fill in PDF forms.\nUse for any PDF form." {
		t.Errorf("structured description: %q", out.Skills[1].Description)
	}
	if res.Brief() != "2 skills" {
		t.Errorf("list brief %q", res.Brief())
	}

	res = e.load("pdf-forms")
	if res.IsError {
		t.Fatalf("load_skill: %s", res.Message)
	}
	if got := res.OutputText(); got != "# Filling forms\n\nRun scripts/fill.py." {
		t.Errorf("body %q", got)
	}
	folder := filepath.Join(e.base, "skills", "pdf-forms")
	mustContain(t, "load message", res.Message,
		`Loaded skill "pdf-forms" from `+folder,
		"Resources (3, paths relative to the skill folder",
		"- inner-link (12 B)", "- reference/fields.md (2.0 KiB)", "- scripts/fill.py (12 B)",
		"Allowed tools: filesystem__read_file, filesystem__*",
		"Capability requests (1 of 2 granted by the permission policy):",
		`- net: granted (config marks "net" requestable)`,
		`- shell.exec: refused (config does not mark "shell.exec" requestable)`)
	if strings.Contains(res.Message, "hidden") || strings.Contains(res.Message, ".git") || strings.Contains(res.Message, "dir-link") {
		t.Errorf("hidden files or directory links listed:\n%s", res.Message)
	}
	if b := res.Brief(); b != "Loaded skill pdf-forms (1 of 2 requested capabilities granted)" {
		t.Errorf("brief %q", b)
	}
	var lo loadOutput
	e.structured(res, &lo)
	want := loadOutput{
		Name:        "pdf-forms",
		Description: "Fill in PDF forms.\nUse for any PDF form.",
		Folder:      folder,
		Resources: []Resource{
			{"inner-link", 12}, {"reference/fields.md", 2048}, {"scripts/fill.py", 12},
		},
		AllowedTools: []string{"filesystem__read_file", "filesystem__*"},
		Capabilities: []string{"net", "shell.exec"},
		Grants: []Grant{
			{"net", true, `config marks "net" requestable`},
			{"shell.exec", false, `config does not mark "shell.exec" requestable`},
		},
	}
	if !jsonEqual(t, lo, want) {
		t.Errorf("load structured:\n got %+v\nwant %+v", lo, want)
	}
	if calls := g.Calls(); len(calls) != 1 || calls[0].Skill != "pdf-forms" || !slices.Equal(calls[0].Caps, []string{"net", "shell.exec"}) {
		t.Errorf("granter calls %+v", calls)
	}

	// A skill that requests nothing does not reach the granter.
	res = e.load("notes")
	if res.IsError {
		t.Fatalf("load notes: %s", res.Message)
	}
	mustContain(t, "notes message", res.Message, "Resources: none.", "Allowed tools: read_file, write_file", "Capability requests: none.")
	if res.Brief() != "Loaded skill notes" {
		t.Errorf("brief %q", res.Brief())
	}
	e.structured(res, &lo)
	if len(lo.Grants) != 0 || lo.Grants == nil || lo.Capabilities == nil {
		t.Errorf("notes grants %+v", lo)
	}
	if n := len(g.Calls()); n != 1 {
		t.Errorf("granter called %d times, want 1", n)
	}
}

func jsonEqual(t testing.TB, a, b any) bool {
	t.Helper()
	ja, err := json.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	jb, err := json.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Equal(ja, jb)
}

func TestGrants(t *testing.T) {
	skill := map[string]string{"s/SKILL.md": skillMD("name: s\ndescription: d\ncapabilities: net, fs.write, memory.write", "b")}
	tests := []struct {
		name    string
		granter Granter
		want    []Grant
		brief   string
	}{
		{
			name:  "no policy",
			want:  []Grant{{"net", false, "no policy"}, {"fs.write", false, "no policy"}, {"memory.write", false, "no policy"}},
			brief: "Loaded skill s (0 of 3 requested capabilities granted)",
		},
		{
			name: "answers verbatim in the granter's order, unanswered refused, unrequested dropped",
			granter: &fakeGranter{answer: func(string, []string) []Grant {
				return []Grant{
					{"memory.write", true, "requestable: memory.write"},
					{"shell.exec", true, "not requested, must be dropped"},
					{"net", false, "runtime deny rule \"no-net\""},
				}
			}},
			want: []Grant{
				{"memory.write", true, "requestable: memory.write"},
				{"net", false, "runtime deny rule \"no-net\""},
				{"fs.write", false, "the policy gave no answer"},
			},
			brief: "Loaded skill s (1 of 3 requested capabilities granted)",
		},
		{
			name:    "all granted",
			granter: &fakeGranter{allow: map[string]string{"net": "ok", "fs.write": "ok", "memory.write": "ok"}},
			want:    []Grant{{"net", true, "ok"}, {"fs.write", true, "ok"}, {"memory.write", true, "ok"}},
			brief:   "Loaded skill s (3 of 3 requested capabilities granted)",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, Options{Granter: tc.granter}, skill)
			res := e.load("s")
			if res.IsError {
				t.Fatal(res.Message)
			}
			var lo loadOutput
			e.structured(res, &lo)
			if !slices.Equal(lo.Grants, tc.want) {
				t.Errorf("grants\n got %+v\nwant %+v", lo.Grants, tc.want)
			}
			if res.Brief() != tc.brief {
				t.Errorf("brief %q, want %q", res.Brief(), tc.brief)
			}
			for _, g := range tc.want {
				verdict := "refused"
				if g.Granted {
					verdict = "granted"
				}
				mustContain(t, "message", res.Message, fmt.Sprintf("- %s: %s (%s)", g.Capability, verdict, g.Reason))
			}
			if strings.Contains(res.Message, "shell.exec") {
				t.Errorf("unrequested grant reported:\n%s", res.Message)
			}
		})
	}
}

// Broken skills are reported as problems, are not listed, cannot be loaded
// (the error names the problem), and do not stop the good skill loading.
func TestProblems(t *testing.T) {
	tests := []struct {
		name     string
		files    map[string]string
		opts     Options
		path     string // problem path, relative to base
		problem  string // substring of the problem message
		load     string // load_skill id to try
		loadWant string // substring of its error
	}{
		{
			name:    "bad YAML",
			files:   map[string]string{"bad/SKILL.md": skillMD("name: bad\ndescription: d: e", "b")},
			path:    "skills/bad/SKILL.md",
			problem: "front matter is not valid YAML: line 3: ",
			load:    "bad", loadWant: "front matter is not valid YAML",
		},
		{
			// The parser names the line before an unclosed "[": the
			// problem names SKILL.md's line of the bracket.
			name:    "unclosed flow list",
			files:   map[string]string{"bad/SKILL.md": skillMD("name: bad\ndescription: d\ntags: [a, b", "b")},
			path:    "skills/bad/SKILL.md",
			problem: `front matter is not valid YAML: line 4: the flow list opened with "[" is not closed with "]"`,
			load:    "bad", loadWant: "front matter is not valid YAML",
		},
		{
			name:    "no opening fence",
			files:   map[string]string{"bad/SKILL.md": "name: bad\ndescription: d\n---\nbody"},
			path:    "skills/bad/SKILL.md",
			problem: `SKILL.md must start with YAML front matter`,
			load:    "bad", loadWant: "must start with YAML front matter",
		},
		{
			name:    "no closing fence",
			files:   map[string]string{"bad/SKILL.md": "---\nname: bad\ndescription: d\nbody"},
			path:    "skills/bad/SKILL.md",
			problem: "front matter is not closed",
			load:    "bad", loadWant: "front matter is not closed",
		},
		{
			name:    "missing name",
			files:   map[string]string{"bad/SKILL.md": skillMD("description: d", "b")},
			path:    "skills/bad/SKILL.md",
			problem: "front matter has no name",
			load:    "bad", loadWant: "front matter has no name",
		},
		{
			name:    "bad name characters",
			files:   map[string]string{"bad/SKILL.md": skillMD("name: Bad_Name\ndescription: d", "b")},
			path:    "skills/bad/SKILL.md",
			problem: `name "Bad_Name" is invalid: use 1 to 64 characters of a-z, 0-9 and -`,
			load:    "Bad_Name", loadWant: `name "Bad_Name" is invalid`,
		},
		{
			name:    "name too long",
			files:   map[string]string{"bad/SKILL.md": skillMD("name: "+strings.Repeat("a", 65)+"\ndescription: d", "b")},
			path:    "skills/bad/SKILL.md",
			problem: "is invalid",
			load:    "bad", loadWant: "is invalid",
		},
		{
			name:    "missing description",
			files:   map[string]string{"bad/SKILL.md": skillMD("name: bad", "b")},
			path:    "skills/bad/SKILL.md",
			problem: "front matter has no description",
			load:    "bad", loadWant: "front matter has no description",
		},
		{
			name:    "description too long",
			files:   map[string]string{"bad/SKILL.md": skillMD("name: bad\ndescription: "+strings.Repeat("é", 1025), "b")},
			path:    "skills/bad/SKILL.md",
			problem: "description is 1025 characters, over the limit of 1024",
			load:    "bad", loadWant: "over the limit of 1024",
		},
		{
			name:    "front matter is a list",
			files:   map[string]string{"bad/SKILL.md": skillMD("- name: bad", "b")},
			path:    "skills/bad/SKILL.md",
			problem: "front matter must be a YAML mapping",
			load:    "bad", loadWant: "must be a YAML mapping",
		},
		{
			name:    "capabilities of the wrong type",
			files:   map[string]string{"bad/SKILL.md": skillMD("name: bad\ndescription: d\ncapabilities: {net: true}", "b")},
			path:    "skills/bad/SKILL.md",
			problem: "front matter line 4: capabilities must be a list of strings, got a mapping",
			load:    "bad", loadWant: "capabilities must be a list of strings",
		},
		{
			name:    "field given twice",
			files:   map[string]string{"bad/SKILL.md": skillMD("name: bad\ndescription: d\nallowed_tools: [a]\nallowed-tools: [b]", "b")},
			path:    "skills/bad/SKILL.md",
			problem: "front matter line 5: allowed-tools is given twice",
			load:    "bad", loadWant: "given twice",
		},
		{
			name:    "no SKILL.md",
			files:   map[string]string{"bad/notes.txt": "x"},
			path:    "skills/bad",
			problem: "no SKILL.md in skill folder",
			load:    "bad", loadWant: "no SKILL.md",
		},
		{
			name:    "SKILL.md is a directory",
			files:   map[string]string{"bad/SKILL.md/": ""},
			path:    "skills/bad/SKILL.md",
			problem: "SKILL.md is not a regular file",
			load:    "bad", loadWant: "not a regular file",
		},
		{
			name:    "SKILL.md not UTF-8",
			files:   map[string]string{"bad/SKILL.md": "---\nname: bad\ndescription: \xff\xfe\n---\n"},
			path:    "skills/bad/SKILL.md",
			problem: "SKILL.md is not valid UTF-8",
			load:    "bad", loadWant: "not valid UTF-8",
		},
		{
			name:    "oversize body",
			opts:    Options{MaxBodyBytes: 1000},
			files:   map[string]string{"bad/SKILL.md": skillMD("name: bad\ndescription: d", strings.Repeat("x", 1000))},
			path:    "skills/bad/SKILL.md",
			problem: "SKILL.md is 1033 bytes, over the limit of 1000 bytes",
			load:    "bad", loadWant: "over the limit",
		},
		{
			name: "resource symlink to outside",
			files: map[string]string{
				"bad/SKILL.md": skillMD("name: bad\ndescription: d", "b"),
				"bad/data/key": "symlink:../../../outside/secret.txt",
			},
			path:    "skills/bad/data/key",
			problem: `resource "data/key" is a symbolic link to "../../../outside/secret.txt", which resolves outside the skill folder`,
			load:    "bad", loadWant: "resolves outside the skill folder",
		},
		{
			name: "resource absolute symlink",
			files: map[string]string{
				"bad/SKILL.md": skillMD("name: bad\ndescription: d", "b"),
				"bad/passwd":   "symlink:/etc/passwd",
			},
			path:    "skills/bad/passwd",
			problem: `resource "passwd" is a symbolic link to the absolute path "/etc/passwd"`,
			load:    "bad", loadWant: "absolute path",
		},
		{
			name: "resource symlink to nothing",
			files: map[string]string{
				"bad/SKILL.md": skillMD("name: bad\ndescription: d", "b"),
				"bad/gone":     "symlink:missing.txt",
			},
			path:    "skills/bad/gone",
			problem: `resource "gone" is a symbolic link to "missing.txt", which does not exist`,
			load:    "bad", loadWant: "does not exist",
		},
		{
			name:    "SKILL.md symlink to outside",
			files:   map[string]string{"bad/SKILL.md": "symlink:../../outside/SKILL.md"},
			path:    "skills/bad/SKILL.md",
			problem: `"SKILL.md" is a symbolic link to "../../outside/SKILL.md", which resolves outside the skill folder`,
			load:    "bad", loadWant: "resolves outside the skill folder",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, tc.opts, merge(good, tc.files))
			// A valid SKILL.md outside the skills dir, for the SKILL.md
			// escape case: it must not be read.
			writeTree(t, e.base, map[string]string{"outside/SKILL.md": skillMD("name: bad\ndescription: escaped", "SECRET")})

			probs := e.ts.Problems()
			wantPath := filepath.Join(e.base, filepath.FromSlash(tc.path))
			found := false
			for _, p := range probs {
				if p.Path == wantPath && strings.Contains(p.Message, tc.problem) {
					found = true
				}
			}
			if !found {
				t.Errorf("no problem %s: %q in %+v", wantPath, tc.problem, probs)
			}

			res, out := e.list()
			if !slices.Equal(names(out), []string{"good"}) {
				t.Errorf("listed %v, want only good", names(out))
			}
			if len(out.Problems) != len(probs) {
				t.Errorf("structured problems %+v, want %+v", out.Problems, probs)
			}
			mustContain(t, "list message", res.Message, "found while loading skills", wantPath)

			res = e.load(tc.load)
			if !res.IsError || res.Kind != gateway.KindToolError {
				t.Fatalf("load %q: want a tool error, got %+v", tc.load, res)
			}
			mustContain(t, "load error", res.Message, fmt.Sprintf("Skill %q cannot be loaded", tc.load), tc.loadWant)
			if strings.Contains(res.Message, "SECRET") || strings.Contains(res.OutputText(), "SECRET") {
				t.Errorf("content from outside the folder leaked: %+v", res)
			}

			if res := e.load("good"); res.IsError || res.OutputText() != "Good body." {
				t.Errorf("good skill: %+v", res)
			}
			if st := e.ts.Status(); st.State != "degraded" {
				t.Errorf("status %+v", st)
			}
		})
	}
}

func TestValidVariants(t *testing.T) {
	tests := []struct {
		name  string
		file  string
		body  string
		tools []string
		caps  []string
	}{
		{"CRLF line endings", "---\r\nname: s\r\ndescription: d\r\n---\r\nline 1\r\nline 2\r\n", "line 1\r\nline 2", []string{}, []string{}},
		{"byte order mark", "\uFEFF---\nname: s\ndescription: d\n---\nbody", "body", []string{}, []string{}},
		{"empty body", "---\nname: s\ndescription: d\n---\n", "", []string{}, []string{}},
		{"no newline after closing fence", "---\nname: s\ndescription: d\n---", "", []string{}, []string{}},
		{"dashed allowed-tools as string", "---\nname: s\ndescription: d\nallowed-tools: Read, Grep ,\n---\nb", "b", []string{"Read", "Grep"}, []string{}},
		{"scalar capability, null lists", "---\nname: s\ndescription: d\ncapabilities: net\nallowed_tools:\n---\nb", "b", []string{}, []string{"net"}},
		{"anchors", "---\nname: &n s\ndescription: *n\n---\nb", "b", []string{}, []string{}},
		{"numeric-looking name", "---\nname: 2024\ndescription: d\n---\nb", "b", []string{}, []string{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, Options{}, map[string]string{"s/SKILL.md": tc.file})
			if p := e.ts.Problems(); len(p) != 0 {
				t.Fatalf("problems: %+v", p)
			}
			_, out := e.list()
			if len(out.Skills) != 1 {
				t.Fatalf("skills %+v", out.Skills)
			}
			res := e.load(out.Skills[0].Name)
			if res.IsError {
				t.Fatal(res.Message)
			}
			if got := res.OutputText(); got != tc.body {
				t.Errorf("body %q, want %q", got, tc.body)
			}
			var lo loadOutput
			e.structured(res, &lo)
			if !slices.Equal(lo.AllowedTools, tc.tools) || !slices.Equal(lo.Capabilities, tc.caps) {
				t.Errorf("allowed_tools %q capabilities %q", lo.AllowedTools, lo.Capabilities)
			}
		})
	}
}

func TestSymlinksInside(t *testing.T) {
	// SKILL.md may be a link to a file inside its folder, and a skill
	// folder may be a link (placed by the operator) to a folder elsewhere.
	base := tempBase(t)
	writeTree(t, base, map[string]string{
		"elsewhere/linked/SKILL.md": skillMD("name: linked\ndescription: d", "linked body"),
		"skills/inner/docs/real.md": skillMD("name: inner\ndescription: d", "inner body"),
		"skills/inner/SKILL.md":     "symlink:docs/real.md",
	})
	if err := os.Symlink(filepath.Join(base, "elsewhere", "linked"), filepath.Join(base, "skills", "linked")); err != nil {
		t.Fatal(err)
	}
	ts, err := New(&Options{Dirs: []string{filepath.Join(base, "skills")}})
	if err != nil {
		t.Fatal(err)
	}
	if p := ts.Problems(); len(p) != 0 {
		t.Fatalf("problems %+v", p)
	}
	for name, body := range map[string]string{"inner": "inner body", "linked": "linked body"} {
		res, _, _ := ts.loadSkill(context.Background(), loadParams{SkillID: name})
		if res.IsError || res.OutputText() != body {
			t.Errorf("%s: %+v", name, res)
		}
	}
}

func TestDuplicateNames(t *testing.T) {
	e := newEnv(t, Options{Dirs: []string{"first", "second"}}, nil)
	writeTree(t, e.base, map[string]string{
		"first/alpha/SKILL.md":  skillMD("name: dup\ndescription: first", "first body"),
		"second/alpha/SKILL.md": skillMD("name: dup\ndescription: second", "second body"),
		"second/a/SKILL.md":     skillMD("name: twin\ndescription: a", "a body"),
		"second/b/SKILL.md":     skillMD("name: twin\ndescription: b", "b body"),
	})
	if err := e.ts.Reload(); err != nil {
		t.Fatal(err)
	}
	first := filepath.Join(e.base, "first", "alpha", "SKILL.md")
	second := filepath.Join(e.base, "second", "alpha", "SKILL.md")
	twinA := filepath.Join(e.base, "second", "a", "SKILL.md")
	twinB := filepath.Join(e.base, "second", "b", "SKILL.md")
	want := []Problem{
		{second, fmt.Sprintf(`duplicate skill name "dup": %s already defines it and keeps it; this skill is ignored`, first)},
		{twinB, fmt.Sprintf(`duplicate skill name "twin": %s already defines it and keeps it; this skill is ignored`, twinA)},
	}
	if got := e.ts.Problems(); !slices.Equal(got, want) {
		t.Errorf("problems\n got %+v\nwant %+v", got, want)
	}
	_, out := e.list()
	if !jsonEqual(t, out.Skills, []listEntry{{"dup", "first"}, {"twin", "a"}}) {
		t.Errorf("skills %+v", out.Skills)
	}
	if res := e.load("dup"); res.IsError || res.OutputText() != "first body" {
		t.Errorf("dup: %+v", res)
	}
	if res := e.load("twin"); res.IsError || res.OutputText() != "a body" {
		t.Errorf("twin: %+v", res)
	}
}

func TestMissingDir(t *testing.T) {
	e := newEnv(t, Options{Dirs: []string{"missing", "skills"}}, good)
	missing := filepath.Join(e.base, "missing")
	if got := e.ts.Problems(); !slices.Equal(got, []Problem{{missing, "skill directory does not exist"}}) {
		t.Errorf("problems %+v", got)
	}
	res, out := e.list()
	if !slices.Equal(names(out), []string{"good"}) {
		t.Errorf("skills %v", names(out))
	}
	mustContain(t, "message", res.Message, "1 skill, sorted by name", "1 problem was found", missing+": skill directory does not exist")
	if res.Brief() != "1 skill, 1 problem" {
		t.Errorf("brief %q", res.Brief())
	}
	if st := e.ts.Status(); st.State != "degraded" || !strings.Contains(st.Detail, "does not exist") {
		t.Errorf("status %+v", st)
	}

	// The directory appearing later is picked up.
	writeTree(t, missing, map[string]string{"late/SKILL.md": skillMD("name: late\ndescription: d", "b")})
	_ = e.ts.Reload()
	if _, out := e.list(); !slices.Equal(names(out), []string{"good", "late"}) {
		t.Errorf("after reload: %v", names(out))
	}
	if st := e.ts.Status(); st.State != "ready" {
		t.Errorf("status %+v", st)
	}
}

func TestUnknownSkill(t *testing.T) {
	e := newEnv(t, Options{}, map[string]string{
		"a/SKILL.md": skillMD("name: pdf-forms\ndescription: d", "b"),
		"b/SKILL.md": skillMD("name: pdf-tools\ndescription: d", "b"),
		"c/SKILL.md": skillMD("name: release-notes\ndescription: d", "b"),
	})
	tests := []struct {
		id      string
		suggest []string
		message string
	}{
		{"pdf-form", []string{"pdf-forms"}, `Unknown skill "pdf-form". Close matches: pdf-forms. Call list_skills to see all 3 skills.`},
		{"PDF-Tools", []string{"pdf-tools", "pdf-forms"}, "Close matches: pdf-tools, pdf-forms."},
		{"release", []string{"release-notes"}, "Close matches: release-notes."},
		{"kubernetes", []string{}, `Unknown skill "kubernetes", and no skill has a similar name. Call list_skills to see all 3 skills.`},
	}
	for _, tc := range tests {
		t.Run(tc.id, func(t *testing.T) {
			res := e.load(tc.id)
			if !res.IsError || res.Kind != gateway.KindToolError {
				t.Fatalf("want tool error, got %+v", res)
			}
			mustContain(t, "message", res.Message, tc.message)
			if got, _ := res.Extras["suggestions"].([]string); !slices.Equal(got, tc.suggest) {
				t.Errorf("suggestions %v, want %v", got, tc.suggest)
			}
			if res.Brief() != "Unknown skill "+tc.id {
				t.Errorf("brief %q", res.Brief())
			}
		})
	}

	// Schema validation applies before the handler.
	for _, args := range []map[string]any{{}, {"skill_id": ""}, {"skill_id": 7}, {"skill_id": "a", "extra": 1}} {
		if res := e.call("load_skill", args); res.Kind != gateway.KindInvalid {
			t.Errorf("args %v: kind %q (%s), want invalid_arguments", args, res.Kind, res.Message)
		}
	}
	if res := e.call("list_skills", map[string]any{"x": 1}); res.Kind != gateway.KindInvalid {
		t.Errorf("list_skills with an argument: kind %q", res.Kind)
	}

	empty := newEnv(t, Options{}, map[string]string{"x/": ""})
	mustContain(t, "no skills", empty.load("anything").Message, `Unknown skill "anything": there are no skills.`)
}

func TestListBound(t *testing.T) {
	files := map[string]string{}
	for _, n := range []string{"c", "a", "d", "b"} {
		files[n+"/SKILL.md"] = skillMD("name: "+n+"\ndescription: skill "+n, "b")
	}
	e := newEnv(t, Options{MaxSkills: 2}, files)
	res, out := e.list()
	if res.OutputText() != "a: skill a\nb: skill b" || !slices.Equal(names(out), []string{"a", "b"}) || !out.Truncated || out.Total != 4 {
		t.Errorf("list %q %+v", res.OutputText(), out)
	}
	mustContain(t, "message", res.Message, "Showing the first 2 of 4 skills (sorted by name)")
	if ps, _ := e.ts.Prompts(context.Background()); len(ps) != 2 {
		t.Errorf("%d prompts, want 2", len(ps))
	}
	// Listing is bounded, loading is not.
	if res := e.load("d"); res.IsError {
		t.Errorf("load d: %s", res.Message)
	}
}

func TestResourceBound(t *testing.T) {
	files := map[string]string{"s/SKILL.md": skillMD("name: s\ndescription: d", "b")}
	for i := range MaxResources + 5 {
		files[fmt.Sprintf("s/r/%03d.txt", i)] = "x"
	}
	e := newEnv(t, Options{}, files)
	res := e.load("s")
	var lo loadOutput
	e.structured(res, &lo)
	if len(lo.Resources) != MaxResources || !lo.ResourcesTruncated {
		t.Errorf("%d resources, truncated %v", len(lo.Resources), lo.ResourcesTruncated)
	}
	mustContain(t, "message", res.Message, fmt.Sprintf("listing stopped at %d resources", MaxResources))
}

func TestReloadAndPromptsChanged(t *testing.T) {
	// In a bubble: the rescan interval passes in fake time.
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, Options{}, good)
		var fired atomic.Int32
		e.ts.OnPromptsChanged(func() { fired.Add(1) })

		// Nothing changed: no event.
		_ = e.ts.Reload()
		if n := fired.Load(); n != 0 {
			t.Fatalf("fired %d times without a change", n)
		}

		writeTree(t, filepath.Join(e.base, "skills"), map[string]string{"new/SKILL.md": skillMD("name: new\ndescription: d", "new body")})
		_ = e.ts.Reload()
		if n := fired.Load(); n != 1 {
			t.Errorf("fired %d times after a new skill, want 1", n)
		}
		if _, out := e.list(); !slices.Equal(names(out), []string{"good", "new"}) {
			t.Errorf("skills %v", names(out))
		}

		// A description change is a change of the prompt list; a body change
		// is not, but the body served changes.
		writeTree(t, filepath.Join(e.base, "skills"), map[string]string{"new/SKILL.md": skillMD("name: new\ndescription: d2", "new body 2")})
		_ = e.ts.Reload()
		if n := fired.Load(); n != 2 {
			t.Errorf("fired %d times after a description change, want 2", n)
		}
		writeTree(t, filepath.Join(e.base, "skills"), map[string]string{"new/SKILL.md": skillMD("name: new\ndescription: d2", "new body 3")})
		_ = e.ts.Reload()
		if n := fired.Load(); n != 2 {
			t.Errorf("fired %d times after a body change, want 2", n)
		}
		if res := e.load("new"); res.OutputText() != "new body 3" {
			t.Errorf("body %q", res.OutputText())
		}

		// Without Reload, a call sees the change once rescanInterval has passed
		// since the last check, and not before (fake time: exact).
		writeTree(t, filepath.Join(e.base, "skills"), map[string]string{"lazy/SKILL.md": skillMD("name: lazy\ndescription: d", "b")})
		time.Sleep(rescanInterval - time.Nanosecond)
		if _, out := e.list(); slices.Contains(names(out), "lazy") {
			t.Errorf("picked up before the rescan interval passed: %v", names(out))
		}
		time.Sleep(time.Nanosecond)
		if _, out := e.list(); !slices.Equal(names(out), []string{"good", "lazy", "new"}) {
			t.Errorf("lazy rescan: %v", names(out))
		}
		if n := fired.Load(); n != 3 {
			t.Errorf("fired %d times after the lazy rescan, want 3", n)
		}

		// Removing a skill is a change too.
		if err := os.RemoveAll(filepath.Join(e.base, "skills", "lazy")); err != nil {
			t.Fatal(err)
		}
		time.Sleep(rescanInterval)
		if ps, _ := e.ts.Prompts(context.Background()); len(ps) != 2 {
			t.Errorf("%d prompts after removal", len(ps))
		}
		if n := fired.Load(); n != 4 {
			t.Errorf("fired %d times after removal, want 4", n)
		}
	})
}

func TestPrompts(t *testing.T) {
	e := newEnv(t, Options{Granter: &fakeGranter{}}, merge(good, map[string]string{
		"alpha/SKILL.md":  skillMD("name: alpha\ndescription: First skill.\ncapabilities: [net]", "# Alpha\n\nDo alpha things."),
		"broken/SKILL.md": skillMD("name: broken", "b"),
	}))
	ps, err := e.ts.Prompts(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range ps {
		got = append(got, p.Name+"|"+p.Description+"|"+fmt.Sprint(len(p.Arguments))+"|"+p.Tool)
	}
	// Each follows load_skill: served to the callers who may load it.
	if want := []string{"alpha|First skill.|0|load_skill", "good|A skill that always loads.|0|load_skill"}; !slices.Equal(got, want) {
		t.Errorf("prompts %q, want %q", got, want)
	}
	pr, err := ps[0].Get(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if pr.Description != "First skill." || len(pr.Messages) != 1 || pr.Messages[0].Role != "user" {
		t.Fatalf("prompt result %+v", pr)
	}
	if tp, ok := pr.Messages[0].Content.(gateway.TextPart); !ok || tp.Text != "# Alpha\n\nDo alpha things." {
		t.Errorf("content %#v", pr.Messages[0].Content)
	}

	// A prompt whose skill went away says so.
	if err := os.RemoveAll(filepath.Join(e.base, "skills", "alpha")); err != nil {
		t.Fatal(err)
	}
	_ = e.ts.Reload()
	if _, err := ps[0].Get(context.Background(), nil); err == nil || !strings.Contains(err.Error(), `skill "alpha" no longer exists`) {
		t.Errorf("get after removal: %v", err)
	}
}

func TestNewOptions(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		opts Options
		err  string
	}{
		{"no dirs", Options{}, "no skill directories"},
		{"empty dir", Options{Dirs: []string{" "}}, "empty skill directory path"},
		{"twice", Options{Dirs: []string{dir, dir + "/"}}, "listed twice"},
		{"negative max skills", Options{Dirs: []string{dir}, MaxSkills: -1}, "MaxSkills"},
		{"negative max body", Options{Dirs: []string{dir}, MaxBodyBytes: -1}, "MaxBodyBytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := New(&tc.opts); err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("err %v, want %q", err, tc.err)
			}
		})
	}
	if _, err := New(nil); err == nil || !strings.Contains(err.Error(), "no skill directories") {
		t.Errorf("nil options: err %v", err)
	}
	ts, err := New(&Options{Dirs: []string{filepath.Join(dir, "nope")}})
	if err != nil {
		t.Fatalf("a missing directory is a problem, not an error: %v", err)
	}
	if ts.Name() != "skills" || len(ts.Problems()) != 1 {
		t.Errorf("name %q problems %+v", ts.Name(), ts.Problems())
	}
	tools, _ := ts.Tools(context.Background())
	for _, tl := range tools {
		h := tl.Permissions.Resolved()
		if !slices.Equal(tl.Permissions.Capabilities, []string{"skills.read"}) || !h.ReadOnly || h.Destructive || h.OpenWorld {
			t.Errorf("%s permissions %+v", tl.Name, tl.Permissions)
		}
		if len(tl.OutputSchema) == 0 {
			t.Errorf("%s has no output schema", tl.Name)
		}
	}
}

// Calls, prompt listings and reloads run concurrently (run with -race).
func TestConcurrent(t *testing.T) {
	e := newEnv(t, Options{Granter: &fakeGranter{allow: map[string]string{"net": "ok"}}}, merge(good, map[string]string{
		"n/SKILL.md": skillMD("name: n\ndescription: d\ncapabilities: [net]", "b"),
	}))
	var fired atomic.Int32
	e.ts.OnPromptsChanged(func() {
		fired.Add(1)
		_, _ = e.ts.Prompts(context.Background()) // listeners may call back in
	})
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range 20 {
				switch (i + j) % 4 {
				case 0:
					e.ts.lastCheck.Store(0)
					if res := e.call("list_skills", map[string]any{}); res.IsError {
						t.Error(res.Message)
					}
				case 1:
					if res := e.load("n"); res.IsError {
						t.Error(res.Message)
					}
				case 2:
					_, _ = e.ts.Prompts(context.Background())
				case 3:
					name := fmt.Sprintf("x%d-%d", i, j)
					writeTree(t, filepath.Join(e.base, "skills"), map[string]string{name + "/SKILL.md": skillMD("name: "+name+"\ndescription: d", "b")})
					_ = e.ts.Reload()
				}
			}
		}()
	}
	wg.Wait()
	_ = e.ts.Reload()
	if _, out := e.list(); len(out.Skills) != 2+40 {
		t.Errorf("%d skills, want 42", len(out.Skills))
	}
	if fired.Load() == 0 {
		t.Error("listeners never fired")
	}
}
