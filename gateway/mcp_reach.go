package gateway

import (
	"context"
	"slices"

	"github.com/mark3labs/mcp-go/mcp"
)

// Which upstreams' prompts and resources a caller reaches. A source that
// is a toolset of the catalog (an upstream, which serves its tools,
// prompts and resources) shares its reach with its tools: a caller
// reaches it when its view admits one of the toolset's tools and the
// policy lets it call that tool (or ask to); a toolset that serves no
// tools is reached by the view alone. Its prompts are served to callers
// whose view also admits the prompt's name (prompts share the tools'
// namespace), its resources and resource templates to callers who reach
// it. A caller with no view and no rules of its own in the policy
// ([CallerRules]) reaches every source, whatever the policy denies to
// everyone: the plain endpoint serves everything, as before. Sources that
// are no toolset (the artifacts) are served to every caller.

// CallerRules is implemented by a [Policy] with rules for some callers
// only (policy.identities). HasCallerRules reports whether any of them
// applies to the caller of c; the MCP mirror then narrows the upstream
// prompts and resources that caller reaches by the policy's decisions for
// it.
type CallerRules interface {
	HasCallerRules(c *Call) bool
}

// reach is what one caller (one request) reaches of the sources, worked
// out on demand and kept for the request.
type reach struct {
	m        *MCPServer
	ctx      context.Context // carries who
	who      *Call
	narrowed bool            // who has a view or rules of its own
	toolsets map[string]bool // by toolset name
}

// reachOf is the reach of the caller of ctx.
func (m *MCPServer) reachOf(ctx context.Context) *reach {
	who := m.caller(ctx)
	r := &reach{m: m, who: who, narrowed: who.View != nil}
	if !r.narrowed {
		if cr, ok := m.opts.Pipeline.opts.Policy.(CallerRules); ok {
			r.narrowed = cr.HasCallerRules(who)
		}
	}
	if r.narrowed {
		r.ctx = withCall(ctx, who)
	}
	return r
}

// prompt reports whether the caller is served the prompt named name of
// src (not one that follows a tool: see [MCPServer.filterPrompts]).
func (r *reach) prompt(src PromptSource, name string) bool {
	if !r.narrowed {
		return true
	}
	ts, ok := src.(Toolset)
	if !ok {
		return true
	}
	if r.who.View != nil && !r.who.View.Admits(name) {
		return false
	}
	if len(r.m.opts.Catalog.ToolsOf(ts.Name())) == 0 {
		return true // no tools: the view, which admits the name, decides
	}
	return r.toolset(ts)
}

// source reports whether the caller reaches src's resources.
func (r *reach) source(src any) bool {
	if !r.narrowed || src == nil {
		return true
	}
	ts, ok := src.(Toolset)
	if !ok {
		return true
	}
	return r.toolset(ts)
}

// toolset reports whether the caller reaches ts: its view admits one of
// ts's served tools and the policy allows it (or asks a person), or, for
// a toolset that serves none, the view admits its namespace (a glob such
// as github__* admits "github__") or one of its prompts.
func (r *reach) toolset(ts Toolset) bool {
	name := ts.Name()
	if ok, known := r.toolsets[name]; known {
		return ok
	}
	var ok bool
	v := r.who.View
	switch tools := r.m.opts.Catalog.ToolsOf(name); {
	case len(tools) > 0:
		ok = slices.ContainsFunc(tools, func(t *Tool) bool { return r.m.allows(r.ctx, r.who, t, true) })
	case v == nil:
		ok = true
	default:
		ok = r.m.viewAdmitsSource(v, ts)
	}
	if r.toolsets == nil {
		r.toolsets = map[string]bool{}
	}
	r.toolsets[name] = ok
	return ok
}

// viewAdmitsSource reports whether v admits the namespace of ts, a
// toolset that serves no tools (a glob such as github__* admits
// "github__"), or one of its prompts.
func (m *MCPServer) viewAdmitsSource(v View, ts Toolset) bool {
	if ns := namespaceOf(ts); ns != "" && v.Admits(ns+"__") {
		return true
	}
	m.srcMu.Lock()
	defer m.srcMu.Unlock()
	for p, owner := range m.promptOwner {
		if sameSource(owner, ts) && v.Admits(p) {
			return true
		}
	}
	return false
}

// filterResources is mcp-go's resource filter (resources/list, and
// resources/read of one resource): the resources of sources the caller
// reaches.
func (m *MCPServer) filterResources(ctx context.Context, resources []mcp.Resource) []mcp.Resource {
	r := m.reachOf(ctx)
	if !r.narrowed {
		return resources
	}
	m.srcMu.Lock()
	owners := m.resourceOwner
	m.srcMu.Unlock()
	out := resources[:0:0]
	for _, res := range resources {
		if r.source(owners[res.URI]) {
			out = append(out, res)
		}
	}
	return out
}

// filterTemplates is mcp-go's resource template filter (resources/templates/list,
// and resources/read through one template): the templates of sources the
// caller reaches.
func (m *MCPServer) filterTemplates(ctx context.Context, templates []mcp.ResourceTemplate) []mcp.ResourceTemplate {
	r := m.reachOf(ctx)
	if !r.narrowed {
		return templates
	}
	m.srcMu.Lock()
	owners := make(map[string]ResourceSource, len(m.templateOwners))
	for _, t := range m.templateOwners {
		owners[t.template.Raw()] = t.src
	}
	m.srcMu.Unlock()
	out := templates[:0:0]
	for _, t := range templates {
		if t.URITemplate == nil {
			continue
		}
		if src, ok := owners[t.URITemplate.Raw()]; ok && r.source(src) {
			out = append(out, t)
		}
	}
	return out
}
