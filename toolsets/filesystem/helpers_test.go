package filesystem

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/toolgate/toolgate/gateway"
	"github.com/toolgate/toolgate/policy"
)

// env is a sandbox over a temporary tree with the toolset behind a real
// pipeline.
type env struct {
	t       testing.TB
	base    string // parent of root, holds "outside"
	root    string // the sandbox root
	sb      *policy.Sandbox
	ts      *gateway.SimpleToolset
	p       *gateway.Pipeline
	backups *memStore
}

// newEnv builds base/root (the sandbox) and base/outside/secret.txt, writes
// files under root (a name ending in "/" is a directory), and serves the
// toolset through a pipeline.
func newEnv(t testing.TB, opts *Options, files map[string]string) *env {
	t.Helper()
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, base: base, root: filepath.Join(base, "root")}
	mustMkdir(t, e.root)
	mustMkdir(t, filepath.Join(base, "outside"))
	mustWrite(t, filepath.Join(base, "outside", "secret.txt"), "SECRET\n")
	for name, content := range files {
		if strings.HasSuffix(name, "/") {
			mustMkdir(t, filepath.Join(e.root, name))
			continue
		}
		e.write(name, content)
	}
	e.sb, err = policy.NewSandbox([]string{e.root})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.sb.Close() })
	e.serve(opts)
	return e
}

func (e *env) serve(opts *Options) {
	e.t.Helper()
	ts, err := New(e.sb, opts)
	if err != nil {
		e.t.Fatal(err)
	}
	if opts != nil {
		if m, ok := opts.Backups.(*memStore); ok {
			e.backups = m
		}
	}
	cat := gateway.NewCatalog(nil)
	if err := cat.Add(context.Background(), ts); err != nil {
		e.t.Fatal(err)
	}
	e.ts = ts
	e.p = gateway.NewPipeline(&gateway.Options{Tools: cat})
}

func (e *env) write(name, content string) {
	e.t.Helper()
	p := filepath.Join(e.root, filepath.FromSlash(name))
	mustMkdir(e.t, filepath.Dir(p))
	mustWrite(e.t, p, content)
}

func (e *env) read(name string) string {
	e.t.Helper()
	b, err := os.ReadFile(filepath.Join(e.root, filepath.FromSlash(name)))
	if err != nil {
		e.t.Fatal(err)
	}
	return string(b)
}

func (e *env) symlink(target, name string) {
	e.t.Helper()
	if err := os.Symlink(target, filepath.Join(e.root, filepath.FromSlash(name))); err != nil {
		e.t.Fatal(err)
	}
}

// call runs tool with args (a map or a JSON string) through the pipeline.
func (e *env) call(ctx context.Context, tool string, args any) *gateway.Result {
	e.t.Helper()
	var raw json.RawMessage
	switch a := args.(type) {
	case string:
		raw = json.RawMessage(a)
	default:
		b, err := json.Marshal(a)
		if err != nil {
			e.t.Fatal(err)
		}
		raw = b
	}
	return e.p.Call(ctx, &gateway.Call{Name: tool, Arguments: raw})
}

func (e *env) tool(name string) *gateway.Tool {
	e.t.Helper()
	tools, _ := e.ts.Tools(context.Background())
	for _, t := range tools {
		if t.Name == name {
			return t
		}
	}
	e.t.Fatalf("no tool %q", name)
	return nil
}

func mustMkdir(t testing.TB, p string) {
	t.Helper()
	if err := os.MkdirAll(p, 0o755); err != nil {
		t.Fatal(err)
	}
}

func mustWrite(t testing.TB, p, content string) {
	t.Helper()
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// wantOK fails unless res is a success.
func wantOK(t testing.TB, res *gateway.Result) {
	t.Helper()
	if res.IsError {
		t.Fatalf("unexpected error result (%s): %s", res.Kind, res.Message)
	}
}

// wantListing fails unless res is a success whose output is lines (one
// per line), and whose message and brief are the ones given (when not "").
func wantListing(t testing.TB, res *gateway.Result, lines []string, message, brief string) {
	t.Helper()
	wantOK(t, res)
	if got, want := res.OutputText(), strings.Join(lines, "\n"); got != want {
		t.Errorf("output:\n%s\nwant:\n%s", got, want)
	}
	if message != "" && res.Message != message {
		t.Errorf("message = %q\nwant      %q", res.Message, message)
	}
	if brief != "" && res.Brief() != brief {
		t.Errorf("brief = %q, want %q", res.Brief(), brief)
	}
}

// wantError fails unless res is an error of kind whose message contains
// every one of subs.
func wantError(t testing.TB, res *gateway.Result, kind gateway.Kind, subs ...string) {
	t.Helper()
	if !res.IsError {
		t.Fatalf("want an error result, got success: %s\n%s", res.Message, res.OutputText())
	}
	if res.Kind != kind {
		t.Fatalf("kind = %s, want %s (message %q)", res.Kind, kind, res.Message)
	}
	for _, s := range subs {
		if !strings.Contains(res.Message, s) {
			t.Fatalf("message %q does not contain %q", res.Message, s)
		}
	}
	if res.Brief() == "" {
		t.Fatalf("error result without a brief: %q", res.Message)
	}
}

// memStore is an in-memory ArtifactStore.
type memStore struct {
	mu    sync.Mutex
	data  map[string][]byte
	mimes map[string]string
	calls []string // call IDs, in save order
	fail  error
}

func newMemStore() *memStore {
	return &memStore{data: map[string][]byte{}, mimes: map[string]string{}}
}

func (m *memStore) SaveArtifact(call *gateway.Call, name, mimeType string, data []byte) (gateway.Artifact, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.fail != nil {
		return gateway.Artifact{}, m.fail
	}
	uri := fmt.Sprintf("toolgate://artifacts/%s/%s", call.ID, name)
	m.data[uri] = append([]byte(nil), data...)
	m.mimes[uri] = mimeType
	m.calls = append(m.calls, call.ID)
	return gateway.Artifact{URI: uri, Name: name, MIMEType: mimeType, Size: int64(len(data))}, nil
}

func (m *memStore) ReadArtifact(uri string) ([]byte, string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	d, ok := m.data[uri]
	if !ok {
		return nil, "", os.ErrNotExist
	}
	return d, m.mimes[uri], nil
}

func TestToolsetDefinition(t *testing.T) {
	e := newEnv(t, nil, nil)
	if e.ts.Name() != "filesystem" {
		t.Errorf("toolset name = %q", e.ts.Name())
	}
	tools, _ := e.ts.Tools(context.Background())
	var names []string
	for _, tool := range tools {
		names = append(names, tool.Name)
		t.Logf("%s: %s", tool.Name, tool.InputSchema)
		if tool.Description == "" {
			t.Errorf("%s has no description", tool.Name)
		}
	}
	if got := strings.Join(names, ","); got != "read_file,write_file,list_files,grep_files" {
		t.Errorf("tools = %s", got)
	}
	for _, name := range []string{"read_file", "list_files", "grep_files"} {
		p := e.tool(name).Permissions
		h := p.Resolved()
		if len(p.Capabilities) != 1 || p.Capabilities[0] != "fs.read" || !h.ReadOnly || h.Destructive || !h.Idempotent || h.OpenWorld {
			t.Errorf("%s permissions = %+v %+v", name, p.Capabilities, h)
		}
	}
	p := e.tool("write_file").Permissions
	h := p.Resolved()
	if len(p.Capabilities) != 1 || p.Capabilities[0] != "fs.write" || h.ReadOnly || h.Destructive || !h.Idempotent || h.OpenWorld {
		t.Errorf("write_file permissions = %+v %+v", p.Capabilities, h)
	}
	// Every hint is explicit, so MCP annotations say exactly this.
	if p.ReadOnly == nil || p.Destructive == nil || p.Idempotent == nil || p.OpenWorld == nil {
		t.Errorf("write_file hints not all set: %+v", p.Hints)
	}
}

func TestSchemaBoundsFollowOptions(t *testing.T) {
	e := newEnv(t, &Options{MaxReadLines: 50, MaxGrepMatches: 30}, map[string]string{"a.txt": "a\n"})
	var schema struct {
		Properties map[string]map[string]any `json:"properties"`
	}
	if err := json.Unmarshal(e.tool("read_file").InputSchema, &schema); err != nil {
		t.Fatal(err)
	}
	if got := schema.Properties["limit"]["maximum"]; got != float64(50) {
		t.Errorf("limit maximum = %v, want 50", got)
	}
	res := e.call(context.Background(), "read_file", map[string]any{"path": "a.txt", "limit": 51})
	wantError(t, res, gateway.KindInvalid, "at '/limit': maximum 50, got 51")
	wantOK(t, e.call(context.Background(), "read_file", map[string]any{"path": "a.txt", "limit": 50}))

	if err := json.Unmarshal(e.tool("grep_files").InputSchema, &schema); err != nil {
		t.Fatal(err)
	}
	if got := schema.Properties["max_matches"]["default"]; got != float64(30) {
		t.Errorf("max_matches default = %v, want 30", got)
	}
	if got := schema.Properties["max_matches"]["maximum"]; got != float64(1000) {
		t.Errorf("max_matches maximum = %v, want 1000", got)
	}
}

func TestNewNilSandbox(t *testing.T) {
	if _, err := New(nil, nil); err == nil {
		t.Fatal("New(nil) succeeded")
	}
}
