package gateway

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// reentrantSource is a prompt and resource source that, like the skills
// toolset's rescan, calls its change listeners synchronously from inside
// Prompts/Resources when it notices a change.
type reentrantSource struct {
	mu        sync.Mutex
	listeners []func()
	changed   atomic.Bool // a change not yet announced
	version   atomic.Int64
}

func (s *reentrantSource) OnPromptsChanged(f func()) {
	s.mu.Lock()
	s.listeners = append(s.listeners, f)
	s.mu.Unlock()
}
func (s *reentrantSource) OnResourcesChanged(f func()) { s.OnPromptsChanged(f) }

func (s *reentrantSource) notice() {
	if s.changed.Swap(false) {
		s.mu.Lock()
		ls := append([]func(){}, s.listeners...)
		s.mu.Unlock()
		for _, f := range ls {
			f() // synchronously, as skills.rescan does
		}
	}
}

func (s *reentrantSource) Prompts(context.Context) ([]Prompt, error) {
	s.notice()
	return []Prompt{{Name: "p" + string(rune('a'+s.version.Load()%26))}}, nil
}

func (s *reentrantSource) Resources(context.Context) ([]Resource, []ResourceTemplate, error) {
	s.notice()
	return []Resource{{URI: "test://r", Name: "r"}}, nil, nil
}

// TestSyncReentrantSource: a source that calls its listeners while the
// mirror asks it for its prompts or resources must not deadlock the mirror
// (it did: the mirror held its source lock while asking, and the listener
// is the mirror's sync, which takes the same lock).
func TestSyncReentrantSource(t *testing.T) {
	cat := NewCatalog(nil)
	m := NewMCPServer(&MCPOptions{Name: "t", Version: "1", Catalog: cat, Pipeline: NewPipeline(&Options{Tools: cat})})
	src := &reentrantSource{}
	m.AddPromptSource(src)
	m.AddResourceSource(src)

	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 5 {
			src.version.Add(1)
			src.changed.Store(true)
			if i%2 == 0 {
				m.syncPrompts() // an upstream's prompts changed, say
			} else {
				m.syncResources()
			}
		}
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the mirror deadlocked syncing a source that calls its listeners while listing")
	}
	// And the mirror still serves: the lock is free.
	m.srcMu.Lock()
	n := len(m.promptOwner)
	m.srcMu.Unlock()
	if n != 1 {
		t.Errorf("serving %d prompts, want 1", n)
	}
}

// TestSyncToolsInstallsTheNewest: of overlapping syncs, the one that read
// the catalog last is what clients see, whatever order they finish in.
func TestSyncToolsInstallsTheNewest(t *testing.T) {
	cat := NewCatalog(nil)
	m := NewMCPServer(&MCPOptions{Name: "t", Version: "1", Catalog: cat, Pipeline: NewPipeline(&Options{Tools: cat})})
	for i := range 20 {
		tl, _ := NewDynamicTool(ToolDef{Name: "t" + string(rune('a'+i))}, func(context.Context, map[string]any) (*Result, error) { return OkText(""), nil })
		ts, _ := NewToolset("ts"+string(rune('a'+i)), tl)
		var wg sync.WaitGroup
		for range 4 { // overlapping syncs racing the catalog change
			wg.Add(1)
			go func() { defer wg.Done(); m.syncTools() }()
		}
		if err := cat.Add(context.Background(), ts); err != nil {
			t.Fatal(err)
		}
		wg.Wait()
		m.syncTools() // the sync a change schedules, after the others
		if got := len(m.srv.ListTools()); got != i+1 {
			t.Fatalf("after %d toolsets, mcp-go serves %d tools: an older listing was installed last", i+1, got)
		}
	}
}
