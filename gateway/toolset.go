package gateway

import (
	"context"
	"fmt"
	"sync"
)

// Toolset is a group of related tools: a built-in toolset (filesystem,
// skills, memory) or an upstream MCP server wrapped by an adapter. It lists
// its tools; each [Tool] carries its own handler, and calls reach it only
// through the [Pipeline], which is what makes handling non-blocking and
// panic-free for every toolset alike.
type Toolset interface {
	// Name identifies the toolset in records, logs and `toolgate tools`.
	Name() string
	// Tools returns the toolset's current tools. An error means the
	// toolset cannot list them now (an upstream that is down, say); the
	// catalog then serves none of its tools and reports the error.
	Tools(ctx context.Context) ([]*Tool, error)
}

// ChangeNotifier is implemented by toolsets whose tools change at run time
// (an upstream that sent tools/list_changed). The catalog registers a
// callback and refreshes that toolset when it fires; the MCP mirror tells
// clients of every call of it, so a toolset calls it when its tools
// changed or its own source said they did, not to be safe. It is never
// called from within OnToolsChanged itself.
type ChangeNotifier interface {
	OnToolsChanged(func())
}

// StatusReporter is implemented by toolsets that have a state worth showing
// (an upstream connecting, ready, failed). /healthz and `toolgate tools`
// show it.
type StatusReporter interface {
	Status() ToolsetStatus
}

// ToolsetStatus is a toolset's state for health reports.
type ToolsetStatus struct {
	// State is "ready", "starting", "reconnecting", "degraded", "failed"
	// or "disabled".
	State string `json:"state"`
	// Detail says more, such as the last error.
	Detail string `json:"detail,omitempty"`
	// Warnings are configuration of the toolset that is valid but
	// probably a mistake, such as an allow glob that matches no tool.
	Warnings []string `json:"warnings,omitempty"`
	// Upstream is set for the toolset of an upstream MCP server.
	Upstream *UpstreamStatus `json:"upstream,omitempty"`
}

// UpstreamStatus is what an upstream toolset reports beside its state.
type UpstreamStatus struct {
	Transport string `json:"transport"`
	// Restarts is how many times the connection was lost and
	// re-established (or is being re-established).
	Restarts int `json:"restarts"`
}

// Unofferer is implemented by toolsets that deliberately do not offer some
// tools (write_memory when memory writes are disabled, say). The catalog
// keeps the reasons so that calling such a tool is a clear error rather
// than a bare "not found". It asks with each listing of the toolset
// (Tools), never while holding its own lock.
type Unofferer interface {
	Unoffered() map[string]string
}

// Namespacer is implemented by toolsets that name every tool
// "<namespace>__<name>" (an upstream with a prefix). Policy globs, grants
// and profiles written for a namespace (kg__*) are meant for that
// toolset's tools, so the catalog serves no other toolset's tool whose
// name falls in it (kg__wipe listed by an upstream without a prefix): it
// refuses it and reports a [Conflict] with Namespace set. Namespace is
// asked once, when the toolset enters the catalog; "" is no namespace.
type Namespacer interface {
	Namespace() string
}

// Closer is implemented by toolsets that hold resources (processes,
// connections, databases). The gateway closes them on shutdown.
type Closer interface {
	Close() error
}

// SimpleToolset is a fixed set of tools under one name.
type SimpleToolset struct {
	name string

	mu        sync.RWMutex
	tools     []*Tool
	listeners []func()
}

// NewToolset returns a toolset holding tools. It returns an error if two
// tools share a name.
func NewToolset(name string, tools ...*Tool) (*SimpleToolset, error) {
	ts := &SimpleToolset{name: name}
	if err := ts.Add(tools...); err != nil {
		return nil, err
	}
	return ts, nil
}

// Name implements [Toolset].
func (ts *SimpleToolset) Name() string { return ts.name }

// Tools implements [Toolset].
func (ts *SimpleToolset) Tools(context.Context) ([]*Tool, error) {
	ts.mu.RLock()
	defer ts.mu.RUnlock()
	return append([]*Tool(nil), ts.tools...), nil
}

// Add adds tools, refusing a name the toolset already has, and tells the
// catalog.
func (ts *SimpleToolset) Add(tools ...*Tool) error {
	ts.mu.Lock()
	seen := make(map[string]bool, len(ts.tools)+len(tools))
	for _, t := range ts.tools {
		seen[t.Name] = true
	}
	for _, t := range tools {
		if t == nil {
			ts.mu.Unlock()
			return fmt.Errorf("toolset %q: nil tool", ts.name)
		}
		if seen[t.Name] {
			ts.mu.Unlock()
			return fmt.Errorf("toolset %q: two tools named %q", ts.name, t.Name)
		}
		seen[t.Name] = true
	}
	ts.tools = append(ts.tools, tools...)
	listeners := append([]func(){}, ts.listeners...)
	ts.mu.Unlock()
	for _, f := range listeners {
		f()
	}
	return nil
}

// OnToolsChanged implements [ChangeNotifier].
func (ts *SimpleToolset) OnToolsChanged(f func()) {
	ts.mu.Lock()
	ts.listeners = append(ts.listeners, f)
	ts.mu.Unlock()
}

var (
	_ Toolset        = (*SimpleToolset)(nil)
	_ ChangeNotifier = (*SimpleToolset)(nil)
)
