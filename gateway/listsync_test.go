package gateway

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

func TestListSyncTellsOfChangesAndAnnouncements(t *testing.T) {
	a, b := [32]byte{1}, [32]byte{2}
	var l listSync
	type step struct {
		name          string
		announce      int // announcements before the sync begins
		digest        [32]byte
		current, tell bool
	}
	for _, s := range []step{
		{name: "first listing", digest: a, current: true, tell: true},
		{name: "same listing, nobody said it changed", digest: a, current: true},
		{name: "same listing, announced", announce: 1, digest: a, current: true, tell: true},
		{name: "same listing again", digest: a, current: true},
		{name: "a different listing", digest: b, current: true, tell: true},
		{name: "two announcements, one sync", announce: 2, digest: b, current: true, tell: true},
	} {
		for range s.announce {
			l.announce()
		}
		if current, tell := l.install(l.begin(0), s.digest); current != s.current || tell != s.tell {
			t.Errorf("%s: current %v, tell %v; want %v, %v", s.name, current, tell, s.current, s.tell)
		}
	}
	// Overlapping syncs: the older one, installing last, is dropped.
	older, newer := l.begin(0), l.begin(0)
	l.install(newer, a)
	if current, tell := l.install(older, b); current || tell {
		t.Errorf("a sync older than the installed one: current %v, tell %v", current, tell)
	}
}

// announcer is a toolset and prompt source that announces changes
// without changing anything, as an upstream whose server re-registers
// its tools does.
type announcer struct {
	mu      sync.Mutex
	toolL   []func()
	promptL []func()
	tools   []*Tool
}

func (a *announcer) Name() string                           { return "ann" }
func (a *announcer) Tools(context.Context) ([]*Tool, error) { return a.tools, nil }
func (a *announcer) Prompts(context.Context) ([]Prompt, error) {
	return plainPrompts{}.Prompts(context.Background())
}
func (a *announcer) OnToolsChanged(f func()) {
	a.mu.Lock()
	a.toolL = append(a.toolL, f)
	a.mu.Unlock()
}
func (a *announcer) OnPromptsChanged(f func()) {
	a.mu.Lock()
	a.promptL = append(a.promptL, f)
	a.mu.Unlock()
}

func (a *announcer) fire(ls *[]func()) {
	a.mu.Lock()
	fs := append([]func(){}, *ls...)
	a.mu.Unlock()
	for _, f := range fs {
		f()
	}
}

// An announced change reaches clients as list_changed even when the list
// they would get is the same; a resync that finds nothing new does not.
func TestAnnouncedChangesReachClients(t *testing.T) {
	ann := &announcer{tools: []*Tool{Must(NewTool(ToolDef{Name: "still", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *Call) (*Result, error) { return OkText("x"), nil }))}}
	cat := NewCatalog(nil)
	if err := cat.Add(context.Background(), ann); err != nil {
		t.Fatal(err)
	}
	m := NewMCPServer(&MCPOptions{Name: "t", Version: "1", Catalog: cat, Pipeline: NewPipeline(&Options{Tools: cat})})
	m.AddPromptSource(ann)
	_, notes := dialMCP(t, serveMCP(t, m))
	count := func(method string) int {
		n := 0
		for _, x := range notes() {
			if x.Method == method {
				n++
			}
		}
		return n
	}
	for _, c := range []struct {
		method string
		fire   func()
	}{
		{string(mcp.MethodNotificationToolsListChanged), func() { ann.fire(&ann.toolL) }},
		{string(mcp.MethodNotificationPromptsListChanged), func() { ann.fire(&ann.promptL) }},
	} {
		before := count(c.method)
		c.fire()
		deadline := time.Now().Add(10 * time.Second)
		for count(c.method) == before && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if count(c.method) == before {
			t.Errorf("an announced change sent no %s", c.method)
		}
	}
}
