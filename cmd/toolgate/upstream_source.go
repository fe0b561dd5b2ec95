package main

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/toolgate/toolgate/adapters/upstream"
	"github.com/toolgate/toolgate/gateway"
)

// upstreamSource is an upstream as the MCP server's prompt and resource
// source. A reload that removes the upstream retires it: it then offers
// nothing, and the server is told, so the upstream's prompts and
// resources leave with its tools (the server has no way to remove a
// source).
type upstreamSource struct {
	*upstream.Upstream
	retired atomic.Bool

	mu                sync.Mutex
	promptL, resource []func()
}

func (s *upstreamSource) Prompts(ctx context.Context) ([]gateway.Prompt, error) {
	if s.retired.Load() {
		return nil, nil
	}
	return s.Upstream.Prompts(ctx)
}

func (s *upstreamSource) Resources(ctx context.Context) ([]gateway.Resource, []gateway.ResourceTemplate, error) {
	if s.retired.Load() {
		return nil, nil, nil
	}
	return s.Upstream.Resources(ctx)
}

func (s *upstreamSource) OnPromptsChanged(f func()) {
	s.mu.Lock()
	s.promptL = append(s.promptL, f)
	s.mu.Unlock()
	s.Upstream.OnPromptsChanged(f)
}

func (s *upstreamSource) OnResourcesChanged(f func()) {
	s.mu.Lock()
	s.resource = append(s.resource, f)
	s.mu.Unlock()
	s.Upstream.OnResourcesChanged(f)
}

// retire empties the source and tells the listeners of what it served:
// clients are told of every call of them (gateway.PromptsChangeNotifier).
func (s *upstreamSource) retire() {
	ps, _ := s.Upstream.Prompts(context.Background())
	rs, ts, _ := s.Upstream.Resources(context.Background())
	s.retired.Store(true)
	var ls []func()
	s.mu.Lock()
	if len(ps) > 0 {
		ls = append(ls, s.promptL...)
	}
	if len(rs)+len(ts) > 0 {
		ls = append(ls, s.resource...)
	}
	s.mu.Unlock()
	for _, f := range ls {
		f()
	}
}
