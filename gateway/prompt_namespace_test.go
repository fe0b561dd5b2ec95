package gateway

import (
	"context"
	"testing"
)

// namedPrompts is a prompt source with fixed prompts, in a namespace if ns
// is set (an upstream with a prefix).
type namedPrompts struct {
	ns    string
	names []string
}

func (s *namedPrompts) Prompts(context.Context) ([]Prompt, error) {
	var out []Prompt
	for _, n := range s.names {
		from := s.ns
		out = append(out, Prompt{Name: n, Description: "from " + from, Get: func(context.Context, map[string]string) (*PromptResult, error) {
			return &PromptResult{Description: from}, nil
		}})
	}
	return out, nil
}

type nsPrompts struct{ *namedPrompts }

func (s nsPrompts) Namespace() string { return s.ns }

// A prompt of a source without a namespace (an upstream with prefix: "")
// named in another upstream's namespace is not served, even when that
// source comes first: prompts/get kg__summary renders kg's prompt, never
// another server's under kg's name.
func TestPromptInForeignNamespace(t *testing.T) {
	cat := NewCatalog(nil)
	m := NewMCPServer(&MCPOptions{Name: "t", Version: "1", Catalog: cat, Pipeline: NewPipeline(&Options{Tools: cat})})
	flat := &namedPrompts{names: []string{"kg__summary", "kg__other", "hello"}}
	kg := nsPrompts{&namedPrompts{ns: "kg", names: []string{"kg__summary"}}}
	m.AddPromptSource(flat)
	m.AddPromptSource(kg)
	m.srcMu.Lock()
	owners := map[string]PromptSource{}
	for k, v := range m.promptOwner {
		owners[k] = v
	}
	m.srcMu.Unlock()
	if owners["kg__summary"] != PromptSource(kg) {
		t.Errorf("kg__summary is served by %v, not by the source whose namespace it is in", owners["kg__summary"])
	}
	if _, ok := owners["kg__other"]; ok {
		t.Error("kg__other of the unprefixed source is served in kg's namespace")
	}
	if owners["hello"] != PromptSource(flat) {
		t.Error("hello of the unprefixed source is not served")
	}
}
