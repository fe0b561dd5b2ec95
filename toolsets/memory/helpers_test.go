package memory_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolgate/toolgate/gateway"
	"github.com/toolgate/toolgate/toolsets/memory"
	"github.com/toolgate/toolgate/toolsets/memory/sqlitestore"
)

// env is the memory toolset over a real embedded store, served through a
// real pipeline, with a run archive layout under a temporary directory.
type env struct {
	t      testing.TB
	runID  string
	cands  string // the candidate file
	store  *sqlitestore.Store
	ts     *memory.Toolset
	cat    *gateway.Catalog
	p      *gateway.Pipeline
	nextID atomic.Int64
}

const testRunID = "20260101T000000Z-abcdef"

func newEnv(t testing.TB, mode memory.Mode, tweak ...func(*memory.Options)) *env {
	t.Helper()
	dir := t.TempDir()
	archive := filepath.Join(dir, "runs", testRunID, "archive")
	if err := os.MkdirAll(archive, 0o755); err != nil {
		t.Fatal(err)
	}
	store, err := sqlitestore.Open(filepath.Join(dir, "memory", "memory.db"))
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, runID: testRunID, cands: memory.CandidatesPath(archive), store: store}
	opts := memory.Options{Mode: mode, Store: store, CandidatesPath: e.cands}
	for _, f := range tweak {
		f(&opts)
	}
	e.serve(opts)
	return e
}

func (e *env) serve(opts memory.Options) {
	e.t.Helper()
	ts, err := memory.New(&opts)
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { ts.Close() })
	cat := gateway.NewCatalog(nil)
	if err := cat.Add(context.Background(), ts); err != nil {
		e.t.Fatal(err)
	}
	e.ts, e.cat = ts, cat
	e.p = gateway.NewPipeline(&gateway.Options{Tools: cat})
}

// call runs a call through the pipeline with a fresh call ID (which the
// handler reads with gateway.CallFrom) and returns the result and the ID.
func (e *env) call(name string, args any) (*gateway.Result, string) {
	e.t.Helper()
	raw, err := json.Marshal(args)
	if err != nil {
		e.t.Fatal(err)
	}
	id := fmt.Sprintf("call-%03d", e.nextID.Add(1))
	res := e.p.Call(context.Background(), &gateway.Call{ID: id, Name: name, Arguments: raw, Session: "session-1", Client: "test/1.0"})
	return res, id
}

func (e *env) ok(name string, args any) *gateway.Result {
	e.t.Helper()
	res, _ := e.call(name, args)
	if res.IsError {
		e.t.Fatalf("%s(%v): %s: %s", name, args, res.Kind, res.Message)
	}
	return res
}

func (e *env) write(content, scope string, tags ...string) *gateway.Result {
	e.t.Helper()
	args := map[string]any{"content": content, "scope": scope}
	if len(tags) > 0 {
		args["tags"] = tags
	}
	return e.ok(memory.WriteTool, args)
}

// recall returns the structured hits of a successful recall (the tool
// checks them against its output schema itself: gateway.NewTypedToolOut).
func (e *env) recall(args map[string]any) (*gateway.Result, memory.RecallOutput) {
	e.t.Helper()
	res := e.ok(memory.RecallTool, args)
	var out memory.RecallOutput
	if err := json.Unmarshal(res.Structured, &out); err != nil {
		e.t.Fatalf("structured output %s: %v", res.Structured, err)
	}
	return res, out
}

func (e *env) commit(content, scope string, tags ...string) memory.Memory {
	e.t.Helper()
	m, err := e.store.Write(context.Background(), memory.Memory{Content: content, Scope: scope, Tags: tags})
	if err != nil {
		e.t.Fatal(err)
	}
	return m
}

func (e *env) count(scope string) int {
	e.t.Helper()
	n, err := e.store.Count(context.Background(), scope)
	if err != nil {
		e.t.Fatal(err)
	}
	return n
}

func (e *env) candidateLines() []map[string]any {
	e.t.Helper()
	data, err := os.ReadFile(e.cands)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		e.t.Fatal(err)
	}
	var out []map[string]any
	for _, line := range bytes.Split(bytes.TrimRight(data, "\n"), []byte("\n")) {
		var m map[string]any
		if err := json.Unmarshal(line, &m); err != nil {
			e.t.Fatalf("candidate line %q: %v", line, err)
		}
		out = append(out, m)
	}
	return out
}

func toolNames(t testing.TB, ts gateway.Toolset) []string {
	t.Helper()
	tools, err := ts.Tools(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range tools {
		names = append(names, tl.Name)
	}
	sort.Strings(names)
	return names
}

// fakeStore is a store that is not SQLite: an in-memory map behind the
// Store interface, to show the toolset depends only on the contract.
type fakeStore struct {
	mu     sync.Mutex
	mems   []memory.Memory
	writes int
	closed bool
}

func (f *fakeStore) Write(_ context.Context, m memory.Memory) (memory.Memory, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.writes++
	for _, old := range f.mems {
		if m.SourceID != "" && old.SourceID == m.SourceID || old.Scope == m.Scope && old.Content == m.Content {
			return old, nil
		}
	}
	if m.ID == "" {
		m.ID = fmt.Sprintf("fake-%d", len(f.mems)+1)
	}
	if m.Created.IsZero() {
		m.Created = time.Now()
	}
	f.mems = append(f.mems, m)
	return m, nil
}

func (f *fakeStore) Recall(_ context.Context, q memory.Query) ([]memory.Hit, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var hits []memory.Hit
	for i := len(f.mems) - 1; i >= 0; i-- {
		m := f.mems[i]
		if m.Scope == q.Scope && strings.Contains(strings.ToLower(m.Content), strings.ToLower(q.Text)) {
			hits = append(hits, memory.Hit{Memory: m, Score: 1, Committed: true})
		}
	}
	if n := memory.ClampLimit(q.Limit); len(hits) > n {
		hits = hits[:n]
	}
	return hits, nil
}

func (f *fakeStore) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closed = true
	return nil
}
