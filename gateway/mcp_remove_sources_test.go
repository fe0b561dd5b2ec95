package gateway

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

// A source removed from the server (an upstream a reload retired) leaves
// prompts/list and resources/list, clients are told, the server holds it
// no more, and its later change callbacks (the old process still
// finishing its calls) tell clients nothing. The other sources stay.
func TestRemoveSources(t *testing.T) {
	cat := NewCatalog(nil)
	m := NewMCPServer(&MCPOptions{Name: "t", Version: "1", Catalog: cat, Pipeline: NewPipeline(&Options{Tools: cat})})
	stay := &announcer{}
	gone := &reentrantSource{}
	m.AddPromptSource(gone)
	m.AddResourceSource(gone)
	m.AddPromptSource(stay)
	c, notes := dialMCP(t, serveMCP(t, m))
	ctx := context.Background()
	count := func(method mcp.MCPMethod) int { return countNotified(notes, method) }
	waitFor := func(method mcp.MCPMethod, n int) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for count(method) < n && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if got := count(method); got < n {
			t.Fatalf("%d %s, want at least %d", got, method, n)
		}
	}
	prompts, resources := count(mcp.MethodNotificationPromptsListChanged), count(mcp.MethodNotificationResourcesListChanged)

	m.RemovePromptSource(gone)
	m.RemoveResourceSource(gone)
	m.RemovePromptSource(gone) // again: nothing happens
	waitFor(mcp.MethodNotificationPromptsListChanged, prompts+1)
	waitFor(mcp.MethodNotificationResourcesListChanged, resources+1)
	lp, err := c.ListPrompts(ctx, mcp.ListPromptsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	want, _ := plainPrompts{}.Prompts(ctx)
	if len(lp.Prompts) != len(want) {
		t.Errorf("prompts after the removal: %+v, want only those of the source that stays", lp.Prompts)
	}
	for _, p := range lp.Prompts {
		if p.Name[0] == 'p' && len(p.Name) == 2 {
			t.Errorf("the removed source's prompt %s is still listed", p.Name)
		}
	}
	lr, err := c.ListResources(ctx, mcp.ListResourcesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if len(lr.Resources) != 0 {
		t.Errorf("resources after the removal: %+v", lr.Resources)
	}
	m.srcMu.Lock()
	held := len(m.promptSources) != 1 || len(m.resourceSources) != 0 || m.promptOwner["pa"] != nil || m.resourceOwner["test://r"] != nil
	m.srcMu.Unlock()
	if held {
		t.Error("the server still holds the removed source")
	}

	// The removed source announces a change: no one is told.
	gone.changed.Store(true)
	gone.notice()
	time.Sleep(200 * time.Millisecond)
	if n := count(mcp.MethodNotificationPromptsListChanged); n != prompts+1 {
		t.Errorf("a removed source's change sent %d more prompts/list_changed", n-prompts-1)
	}
}

// namedPrompt is a source of one prompt, "same", that says who it is.
type namedPrompt string

func (n namedPrompt) Prompts(context.Context) ([]Prompt, error) {
	return []Prompt{{Name: "same", Get: func(context.Context, map[string]string) (*PromptResult, error) {
		return &PromptResult{Description: string(n)}, nil
	}}}, nil
}

// When the source serving a prompt is removed and another one offers the
// same prompt (the listing unchanged), prompts/get reaches the one left,
// not the removed one (mcp-go's handlers are replaced only when the
// listing's digest changes).
func TestRemovedSourceHandsItsPromptOn(t *testing.T) {
	cat := NewCatalog(nil)
	m := NewMCPServer(&MCPOptions{Name: "t", Version: "1", Catalog: cat, Pipeline: NewPipeline(&Options{Tools: cat})})
	first, second := namedPrompt("first"), namedPrompt("second")
	m.AddPromptSource(first)
	m.AddPromptSource(second)
	get := func() string {
		b, _ := json.Marshal(m.srv.HandleMessage(context.Background(), json.RawMessage(`{"jsonrpc":"2.0","id":1,"method":"prompts/get","params":{"name":"same"}}`)))
		return string(b)
	}
	if got := get(); !strings.Contains(got, `"description":"first"`) {
		t.Fatalf("before: %s", got)
	}
	m.RemovePromptSource(first)
	if got := get(); !strings.Contains(got, `"description":"second"`) {
		t.Errorf("after the first source's removal: %s, want the second source's prompt", got)
	}
}
