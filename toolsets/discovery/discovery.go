// Package discovery is tool search, for catalogs too large to list: in
// search mode tools/list holds a few pinned tools plus find_tools and
// call_tool, and the model finds the rest by asking.
//
//   - find_tools(query, limit) ranks the caller's tools with BM25 over their
//     names, titles, descriptions and parameters ([Index], SQLite FTS5) and
//     returns the best, each with its input schema, so the model can call
//     one at once.
//   - call_tool(name, arguments) calls a tool by its real name through the
//     same pipeline as every other call: validated against the real schema,
//     authorized under the real name, recorded under the real name with its
//     toolset. call_tool's own record says which tool it called.
//
// Why call_tool rather than adding found tools to the session's list and
// sending tools/list_changed: many clients (Claude Desktop among them)
// read the tool list once per conversation or ignore list_changed, so a
// tool that appears later would never be called; call_tool works with
// every client, and the real call still goes through every stage.
//
// Which tools are listed is decided per request by the view
// [Discovery.View] wraps around a profile: mode all lists everything, mode
// search lists the pinned tools and the discovery tools, and mode auto
// behaves as search once the profile has more than the threshold of tools.
package discovery

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"

	"github.com/toolgate/toolgate/gateway"
)

// Name is the toolset's name; FindTools and CallTool its tools.
const (
	Name      = "discovery"
	FindTools = "find_tools"
	CallTool  = "call_tool"
)

// Modes of [Options.Mode].
const (
	ModeAll    = "all"
	ModeSearch = "search"
	ModeAuto   = "auto"
)

// DefaultThreshold is the tool count above which mode auto searches.
const DefaultThreshold = 60

// Caller runs a call through the pipeline ([gateway.Pipeline] is one).
type Caller interface {
	Call(ctx context.Context, call *gateway.Call) *gateway.Result
}

// Options configure [New].
type Options struct {
	// Catalog is searched. Required.
	Catalog *gateway.Catalog
	// Mode is all, search or auto (the default).
	Mode string
	// Threshold is auto's switch-over count; zero means [DefaultThreshold].
	Threshold int
	// Pinned says which tools stay listed in search mode (config
	// discovery.pinned globs). Nil pins none.
	Pinned func(tool string) bool
	// Visible, if set, hides tools from find_tools the way tools/list hides
	// them (policy.list_denied: hide).
	Visible func(ctx context.Context, tool string) bool
}

// Discovery is the discovery toolset and the listing views built on it.
type Discovery struct {
	*gateway.SimpleToolset
	opts   Options
	index  *Index
	caller atomic.Pointer[Caller]
	// counts caches how many tools each view admits, per catalog version.
	version atomic.Int64
}

// New builds the toolset. Call [Discovery.Bind] with the pipeline before
// serving (the pipeline is built after the catalog that holds this
// toolset).
func New(opts Options) (*Discovery, error) {
	if opts.Catalog == nil {
		return nil, fmt.Errorf("discovery: no catalog")
	}
	switch opts.Mode {
	case "":
		opts.Mode = ModeAuto
	case ModeAll, ModeSearch, ModeAuto:
	default:
		return nil, fmt.Errorf("discovery.mode: %q is not one of all, search, auto", opts.Mode)
	}
	if opts.Threshold <= 0 {
		opts.Threshold = DefaultThreshold
	}
	d := &Discovery{opts: opts}
	var err error
	d.index, err = NewIndex(d.docs)
	if err != nil {
		return nil, err
	}
	opts.Catalog.OnChange(func() {
		d.index.Invalidate()
		d.version.Add(1)
	})
	find, err := gateway.NewTypedTool(gateway.ToolDef{
		Name:  FindTools,
		Title: "Find tools",
		Description: "Search the tools available to you by what you want to do, in plain words " +
			"(\"open a pull request\", \"read a file\"). Returns the best matches, each with its name, " +
			"what it does and its input schema. Then call one with call_tool.",
		Permissions: gateway.Permissions{Hints: gateway.ReadOnlyHints()},
	}, d.find)
	if err != nil {
		return nil, err
	}
	call, err := gateway.NewTool(gateway.ToolDef{
		Name:  CallTool,
		Title: "Call a tool",
		Description: "Call a tool found with find_tools, by its exact name, with arguments that match its input schema. " +
			"The call is validated, authorized and recorded as a call of that tool.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{` +
			`"name":{"type":"string","description":"The tool's exact name, as find_tools gave it","minLength":1,"maxLength":64},` +
			`"arguments":{"type":"object","description":"The tool's arguments, matching its input schema"}},` +
			`"required":["name"],"additionalProperties":false}`),
		// call_tool itself touches nothing: the real call is authorized
		// under its own name, and runs under its own deadline (the
		// tool's, else limits.call_timeout), not under call_tool's.
		Timeout:     gateway.NoDeadline,
		Permissions: gateway.Permissions{Hints: gateway.Hints{ReadOnly: gateway.Bool(false), Destructive: gateway.Bool(false), OpenWorld: gateway.Bool(false)}},
		// A client may call call_tool as a task, and the named tool then
		// runs under that task; a tool whose task support is required
		// runs only so. For a 2026-07-28 caller of the tasks extension,
		// call_tool decides as the named tool's direct call would be
		// decided (see call).
		TaskSupport:  gateway.TaskOptional,
		TaskDirected: true,
	}, d.call)
	if err != nil {
		return nil, err
	}
	d.SimpleToolset, err = gateway.NewToolset(Name, find, call)
	if err != nil {
		return nil, err
	}
	return d, nil
}

// Bind sets the pipeline call_tool calls through.
func (d *Discovery) Bind(c Caller) { d.caller.Store(&c) }

// Close releases the search index.
func (d *Discovery) Close() error { return d.index.Close() }

// docs is the catalog's tools, for the index (the discovery tools left out).
func (d *Discovery) docs() []Doc {
	entries := d.opts.Catalog.Entries()
	docs := make([]Doc, 0, len(entries))
	for _, e := range entries {
		if e.Toolset == Name {
			continue
		}
		docs = append(docs, Doc{Name: e.Tool.Name, Toolset: e.Toolset, Title: e.Tool.Title, Description: e.Tool.Description, InputSchema: e.Tool.InputSchema})
	}
	return docs
}

type findParams struct {
	Query string `json:"query" jsonschema:"description=What you want to do\\, in plain words,minLength=1,maxLength=500"`
	Limit int    `json:"limit,omitempty" jsonschema:"description=How many tools to return (default 5),minimum=1,maximum=20"`
}

type foundTool struct {
	Name        string          `json:"name"`
	Toolset     string          `json:"toolset"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"inputSchema"`
}

func (d *Discovery) find(ctx context.Context, p findParams) (*gateway.Result, error) {
	limit := p.Limit
	if limit <= 0 {
		limit = 5
	}
	call := gateway.CallFrom(ctx)
	keep := func(name string) bool {
		if call != nil && call.View != nil && !call.View.Admits(name) {
			return false
		}
		return d.opts.Visible == nil || d.opts.Visible(ctx, name)
	}
	hits, err := d.index.Search(ctx, p.Query, limit, keep)
	if err != nil {
		return nil, err
	}
	found := make([]foundTool, 0, len(hits))
	var lines []string
	for _, h := range hits {
		t, _, ok := d.opts.Catalog.Resolve(h.Name)
		if !ok {
			continue
		}
		desc := gateway.Truncate(strings.Join(strings.Fields(t.Description), " "), 400)
		found = append(found, foundTool{Name: h.Name, Toolset: h.Toolset, Description: desc, InputSchema: t.InputSchema})
		lines = append(lines, fmt.Sprintf("%s (%s): %s", h.Name, h.Toolset, desc))
	}
	b, err := json.Marshal(map[string]any{"tools": found})
	if err != nil {
		return nil, err
	}
	if len(found) == 0 {
		// Still the JSON the output always is, for clients that read it.
		return gateway.OkText(string(b)).
			WithMessage("No tool matches. Try other words for what you want to do.").
			WithBrief(fmt.Sprintf("No tool found for %q", gateway.Truncate(p.Query, 80))), nil
	}
	return gateway.OkText(string(b)).
		WithMessage("Best matches first. Call one with call_tool({\"name\": ..., \"arguments\": {...}}).\n" + strings.Join(lines, "\n")).
		WithBrief(fmt.Sprintf("Found %s for %q", gateway.Plural(len(found), "tool", "tools"), gateway.Truncate(p.Query, 80))), nil
}

func (d *Discovery) call(ctx context.Context, outer *gateway.Call) (*gateway.Result, error) {
	var p struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	}
	if err := json.Unmarshal(outer.Arguments, &p); err != nil {
		return nil, err // validated already; cannot happen
	}
	if p.Name == FindTools || p.Name == CallTool {
		return gateway.Error(fmt.Sprintf("call %s directly, not through call_tool", p.Name), "Refused a nested discovery call"), nil
	}
	c := d.caller.Load()
	if c == nil {
		return gateway.UnavailableResult(CallTool, "the gateway is not serving yet"), nil
	}
	// The real call: same caller, same profile; its own ID, record,
	// validation and policy decision. A repeat that answers a round (an
	// approval's form, the tool's own question) carries the inner call's
	// state and the answers: the outer call's round stage has opened its
	// own seal (bound to call_tool's arguments, so to this tool and these
	// arguments), and the inner call's stages check theirs.
	view := outer.View
	if d.opts.Visible != nil {
		// Tools hidden from the caller (policy.list_denied: hide) are not
		// found through call_tool either, as a direct tools/call of one is
		// not, and are never suggested for a mistyped name.
		view = visibleView{base: view, ctx: ctx, visible: d.opts.Visible}
	}
	if res := d.asTask(ctx, outer, p.Name, view); res != nil {
		return res, nil
	}
	inner := &gateway.Call{Name: p.Name, Arguments: p.Arguments, Session: outer.Session, Client: outer.Client,
		Identity: outer.Identity, Principal: outer.Principal, View: view,
		RequestState: outer.RequestState, InputResponses: outer.InputResponses, Task: outer.CurrentTask()}
	// The named tool may make the call a task (an upstream that answers
	// with one, [gateway.BecomeTask]): call_tool's call, which offered to
	// become one, then is that task too, and its record names it.
	res := (*c).Call(ctx, inner)
	if res.Extras == nil {
		res.Extras = map[string]any{}
	}
	res.Extras["toolgate/called"] = map[string]string{"name": p.Name, "call_id": inner.ID, "toolset": inner.Toolset}
	return res, nil
}

// asTask makes the call of ctx (call_tool's, outer) a task where a direct
// call of the named tool would be one, and refuses it where the tool runs
// only as a task and the call is not one (MCP 2025-11-25, tasks: a server
// must not run a tool whose taskSupport is required outside a task).
// It returns nil to go on with the call. A tool the caller may not see is
// left to the pipeline, which answers "not found" as for any.
//
//   - called as a task (2025-11-25, or a 2026-07-28 task's repeat): the
//     named tool runs under that task;
//   - a tool that decides itself ([gateway.Tool.TaskDirected], an
//     upstream's): it gets the call as a direct call, and may make it the
//     caller's task;
//   - any other task-supporting tool, for a caller that can take a task
//     (2026-07-28, tasks extension declared): the call becomes a task now,
//     as a direct call of the tool would be one from the start.
func (d *Discovery) asTask(ctx context.Context, outer *gateway.Call, name string, view gateway.View) *gateway.Result {
	t, _, ok := d.opts.Catalog.Resolve(name)
	switch {
	case !ok || view != nil && !view.Admits(name):
		return nil // not found, said by the pipeline
	case t.TaskSupport == "" || outer.CurrentTask() != nil || t.TaskDirected:
		return nil // a plain call, one under the caller's task, or the tool's decision
	case gateway.BecomeTask(ctx):
		return nil // a task now, as a direct call would be
	case t.TaskSupport != gateway.TaskRequired:
		return nil // a plain call: the caller cannot take a task
	case gateway.CanBecomeTask(ctx):
		// The caller takes tasks, but as many run as the gateway allows
		// (a direct call would be refused the same).
		return gateway.Error(fmt.Sprintf("tool %q runs only as a task, and too many tasks are running: try again when one has ended", name),
			fmt.Sprintf("Refused: too many tasks running for %s", gateway.Truncate(name, 64)))
	}
	return gateway.Error(fmt.Sprintf("tool %q runs only as a task (its execution.taskSupport is required), and this call of call_tool is not one: "+
		"call call_tool as a task (its taskSupport is optional; on 2026-07-28, declare the io.modelcontextprotocol/tasks extension), "+
		"or call %q directly with tools/call as a task", name, name),
		fmt.Sprintf("Refused: %s runs only as a task", gateway.Truncate(name, 64)))
}

// visibleView is base (nil: the whole catalog) without the tools
// [Options.Visible] hides from the caller of ctx.
type visibleView struct {
	base    gateway.View
	ctx     context.Context
	visible func(ctx context.Context, tool string) bool
}

func (v visibleView) Name() string {
	if v.base == nil {
		return "" // the whole catalog
	}
	return v.base.Name()
}

func (v visibleView) Admits(tool string) bool {
	return (v.base == nil || v.base.Admits(tool)) && v.visible(v.ctx, tool)
}

// View wraps a profile (nil: the whole catalog) in the listing rule of the
// configured mode.
func (d *Discovery) View(base gateway.View) gateway.View {
	return &listingView{d: d, base: base}
}

type listingView struct {
	d    *Discovery
	base gateway.View
	// count of tools base admits, for the catalog version it was taken at.
	cached atomic.Pointer[viewCount]
}

type viewCount struct {
	version int64
	n       int
}

func (v *listingView) Name() string {
	if v.base == nil {
		return "" // the whole catalog
	}
	return v.base.Name()
}

func (v *listingView) Admits(tool string) bool {
	return v.base == nil || v.base.Admits(tool) || tool == FindTools || tool == CallTool
}

// Lists implements [gateway.ListingView].
func (v *listingView) Lists(tool string) bool {
	searching := v.searching()
	if tool == FindTools || tool == CallTool {
		return searching
	}
	return !searching || v.d.opts.Pinned != nil && v.d.opts.Pinned(tool)
}

func (v *listingView) searching() bool {
	switch v.d.opts.Mode {
	case ModeSearch:
		return true
	case ModeAll:
		return false
	}
	ver := v.d.version.Load()
	if c := v.cached.Load(); c != nil && c.version == ver {
		return c.n > v.d.opts.Threshold
	}
	n := 0
	for _, e := range v.d.opts.Catalog.Entries() {
		if e.Toolset != Name && (v.base == nil || v.base.Admits(e.Tool.Name)) {
			n++
		}
	}
	v.cached.Store(&viewCount{version: ver, n: n})
	return n > v.d.opts.Threshold
}
