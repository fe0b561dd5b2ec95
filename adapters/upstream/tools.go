package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/jsonscan"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/toolgate/toolgate/gateway"
)

// serverInfoMeta is the _meta member in which 2026-07-28 servers name
// themselves on every result; the gateway is the server downstream, so it
// is dropped.
const serverInfoMeta = "io.modelcontextprotocol/serverInfo"

// relatedTaskMeta is the _meta member in which a task's result names its
// task: an upstream task's id means nothing to the caller, so it is
// dropped (the MCP mirror names the caller's own task, if any).
const relatedTaskMeta = "io.modelcontextprotocol/related-task"

// rawTool is the part of an upstream tools/list entry the gateway reads.
// Schemas and _meta stay raw, so they pass through byte for byte.
type rawTool struct {
	Name         string                     `json:"name"`
	Title        string                     `json:"title"`
	Description  string                     `json:"description"`
	InputSchema  json.RawMessage            `json:"inputSchema"`
	OutputSchema json.RawMessage            `json:"outputSchema"`
	RawAnnots    json.RawMessage            `json:"annotations"`
	Annotations  *mcp.ToolAnnotation        `json:"-"` // decoded from RawAnnots
	Icons        json.RawMessage            `json:"icons"`
	Meta         map[string]json.RawMessage `json:"_meta"`
	Execution    *struct {
		TaskSupport string `json:"taskSupport"`
	} `json:"execution"`
}

// taskSupport is the tool's execution.taskSupport: "optional",
// "required", or "" for any other value (forbidden, absent).
func (rt rawTool) taskSupport() string {
	if rt.Execution != nil {
		switch rt.Execution.TaskSupport {
		case gateway.TaskOptional, gateway.TaskRequired:
			return rt.Execution.TaskSupport
		}
	}
	return ""
}

// maxSchemaDepth bounds how deeply a tool's input or output schema may
// nest objects and arrays (JSON levels, two per level of properties).
// Compiling a schema, checked against the metaschema, takes time that
// grows with the square of its depth (10 ms at 128 levels, 200 ms at 512,
// seconds at 2,000), on the supervisor's goroutine, which Close waits
// for; the 312 schemas of real servers in e2e/testdata/discovery nest 21
// levels at most.
const maxSchemaDepth = 128

// nestedDeeper reports whether the JSON value b nests objects and arrays
// more than max levels deep.
func nestedDeeper(b []byte, max int) bool {
	depth, inString, escaped := 0, false, false
	for _, c := range b {
		switch {
		case escaped:
			escaped = false
		case inString && c == '\\':
			escaped = true
		case c == '"':
			inString = !inString
		case inString:
		case c == '{' || c == '[':
			if depth++; depth > max {
				return true
			}
		case c == '}' || c == ']':
			depth--
		}
	}
	return false
}

// tooDeep says why a tool's schemas are not compiled ("" if they are not
// too deep).
func (rt rawTool) tooDeep() string {
	for _, s := range []struct {
		what string
		b    json.RawMessage
	}{{"input", rt.InputSchema}, {"output", rt.OutputSchema}} {
		if nestedDeeper(s.b, maxSchemaDepth) {
			return fmt.Sprintf("schema rejected: its %s schema nests objects and arrays more than %d levels deep", s.what, maxSchemaDepth)
		}
	}
	return ""
}

// toolMembers are the JSON names of rawTool's fields, in order.
var toolMembers = []string{"name", "title", "description", "inputSchema", "outputSchema", "annotations", "icons", "_meta", "execution"}

// decodeTool decodes one tools/list entry as json.Unmarshal into a rawTool
// does, with its annotations. The entry is read in one pass with jsonscan:
// the raw members are b's own bytes (NewTool copies what it keeps), and
// only what needs decoding is decoded (a string with escapes, _meta,
// execution). Where jsonscan does not read the entry as encoding/json
// would, or a member does not decode, the entry is left to json.Unmarshal
// whole, which also words the error.
func decodeTool(b []byte) (rawTool, error) {
	var rt rawTool
	ok := jsonscan.Fields(b, toolMembers, func(i, start, end int) bool {
		v := json.RawMessage(b[start:end:end])
		switch i {
		case 0, 1, 2:
			s, ok := jsonscan.PlainString(v)
			if !ok && json.Unmarshal(v, &s) != nil { // null leaves it empty, as in a struct
				return false
			}
			switch i {
			case 0:
				rt.Name = s
			case 1:
				rt.Title = s
			default:
				rt.Description = s
			}
		case 3:
			rt.InputSchema = v
		case 4:
			rt.OutputSchema = v
		case 5:
			rt.RawAnnots = v
		case 6:
			rt.Icons = v
		case 7:
			return json.Unmarshal(v, &rt.Meta) == nil
		case 8:
			return json.Unmarshal(v, &rt.Execution) == nil
		}
		return true
	})
	var err error
	if !ok {
		rt = rawTool{}
		err = json.Unmarshal(b, &rt)
	}
	if err == nil && !isNull(rt.RawAnnots) {
		var a mcp.ToolAnnotation
		a, err = gateway.DecodeToolAnnotations(rt.RawAnnots)
		rt.Annotations = &a
	}
	return rt, err
}

func isNull(b json.RawMessage) bool {
	b = bytes.TrimSpace(b)
	return len(b) == 0 || string(b) == "null"
}

// buildTools turns the raw tools/list entries into gateway tools: allowed
// by the filter, named "<prefix>__<name>" (mapped, shortened, collisions
// suffixed), with schemas, title and _meta unchanged. A tool that cannot
// be served (its schema does not compile or nests too deep, its entry is
// malformed) is
// left out, and the reason kept for
// Unoffered and Status; the others still load. It also returns notes on
// renamed tools, and warnings on filter globs that match no tool.
func (u *Upstream) buildTools(raws []json.RawMessage) ([]*gateway.Tool, map[string]string, []string, []string) {
	unoffered := map[string]string{}
	var defs []rawTool
	seen := map[string]bool{}
	for i, b := range raws {
		rt, err := decodeTool(b)
		if err != nil {
			unoffered[fmt.Sprintf("%s#%d", u.prefix, i)] = "malformed tools/list entry: " + err.Error()
			continue
		}
		if rt.Name == "" {
			unoffered[fmt.Sprintf("%s#%d", u.prefix, i)] = "tools/list entry without a name"
			continue
		}
		if seen[rt.Name] {
			continue // listed twice: the first entry wins
		}
		seen[rt.Name] = true
		if !u.filter.allows(rt.Name) {
			continue
		}
		defs = append(defs, rt)
	}
	warnings := u.filter.unmatched(slices.Sorted(maps.Keys(seen)))
	names := make([]string, len(defs))
	for i, d := range defs {
		names[i] = d.Name
	}
	served, cols := assignNames(u.prefix, names)
	var notes []string
	for _, c := range cols {
		notes = append(notes, c.String())
	}
	sort.Slice(defs, func(i, j int) bool { return served[defs[i].Name] < served[defs[j].Name] })
	tools := make([]*gateway.Tool, 0, len(defs))
	for _, d := range defs {
		name := served[d.Name]
		if why := d.tooDeep(); why != "" {
			unoffered[name] = why
			continue
		}
		t, err := gateway.NewTool(u.toolDef(name, d), u.handler(d.Name, d.taskSupport()))
		if err != nil {
			unoffered[name] = "schema rejected: " + err.Error()
			continue
		}
		tools = append(tools, t)
	}
	return tools, unoffered, notes, warnings
}

func (u *Upstream) toolDef(name string, d rawTool) gateway.ToolDef {
	def := gateway.ToolDef{
		Name:           name,
		Title:          d.Title,
		Description:    d.Description,
		Timeout:        u.timeout,
		TimeoutSetting: u.timeoutSetting(),
		Meta:           d.Meta,
		// Over streamable HTTP and stdio every wait of a call honours
		// its context (the request, a concurrency slot, the 2026-07-28
		// connection being opened, a task's polls, the progress drain; a
		// write to a stdio child never waits: childInput), so the call
		// runs on the caller's goroutine. Over SSE it does not: a POST to
		// the SSE endpoint ignores the context, so the pipeline keeps
		// such calls on a goroutine of their own, bounded by the deadline.
		HonoursContext: u.transport() != TransportSSE,
	}
	if !isNull(d.InputSchema) {
		def.InputSchema = d.InputSchema
	}
	if !isNull(d.OutputSchema) {
		def.OutputSchema = d.OutputSchema
	}
	if !isNull(d.RawAnnots) {
		def.Annotations = d.RawAnnots // advertised as sent; the policy reads the hints below
	}
	if !isNull(d.Icons) {
		def.Icons = d.Icons
	}
	if d.taskSupport() != "" {
		// toolgate runs the upstream's task itself when the caller does
		// not ask for one (tasks.go), so for callers the tool is optional;
		// whether a call becomes a task is the upstream's to say.
		def.TaskSupport, def.TaskDirected = gateway.TaskOptional, true
	}
	if ts := u.cfg.taskSupport(d.Name); ts != "" {
		// The operator's word: toolgate runs the task.
		def.TaskSupport, def.TaskDirected = ts, false
	}
	def.Permissions.Capabilities = append([]string(nil), u.cfg.Capabilities...)
	switch {
	case !u.trust:
		def.Permissions.Hints = gateway.Hints{
			ReadOnly: gateway.Bool(false), Destructive: gateway.Bool(true),
			Idempotent: gateway.Bool(false), OpenWorld: gateway.Bool(true),
		}
	case d.Annotations != nil:
		a := d.Annotations
		def.Permissions.Hints = gateway.Hints{
			ReadOnly: a.ReadOnlyHint, Destructive: a.DestructiveHint,
			Idempotent: a.IdempotentHint, OpenWorld: a.OpenWorldHint,
		}
	}
	return def
}

// handler forwards calls of the upstream tool upstreamName, whose
// execution.taskSupport is taskSupport.
func (u *Upstream) handler(upstreamName, taskSupport string) gateway.ToolHandler {
	return func(ctx context.Context, call *gateway.Call) (*gateway.Result, error) {
		return u.callTool(ctx, upstreamName, taskSupport, call)
	}
}

// callTool forwards one call: the raw arguments unchanged, a progress
// token when the caller listens to progress, the raw result mapped with
// [gateway.ResultFromMCP]. The upstream runs it as a task when the tool
// requires that, or allows it and the caller asked for a task; toolgate
// then waits for the task's result ([Upstream.awaitTask]). A 2026-07-28
// caller's call goes over the connection of its era, with the round it
// answers (modern.go).
func (u *Upstream) callTool(ctx context.Context, upstreamName, taskSupport string, call *gateway.Call) (*gateway.Result, error) {
	name := call.Name
	if name == "" {
		name = mapName(u.prefix, upstreamName)
	}
	if !u.filter.allows(upstreamName) {
		return gateway.NotFoundResult(name), nil
	}
	c, release, why, err := u.acquire(ctx)
	if err != nil {
		return nil, err
	}
	if c == nil {
		return gateway.UnavailableResult(name, why), nil
	}
	defer release()

	// A task-supporting tool runs as the upstream's task when the tool
	// requires it, or allows it and the caller takes tasks: a task of
	// 2025-11-25 on the main connection, which toolgate follows, and which
	// makes the call the caller's task if it may become one (a 2026-07-28
	// caller of the tasks extension). But a 2026-07-28 connection whose
	// upstream serves the tasks extension decides itself: the call goes
	// over it with the caller's capabilities, and the upstream answers
	// with a task or not (tasks.go, awaitModernTask). A tool only the
	// 2026-07-28 child lists (sidecar.go) is called there in any case.
	wantTask := call.Task != nil || gateway.CanBecomeTask(ctx)
	asTask := taskSupport == gateway.TaskRequired || taskSupport == gateway.TaskOptional && wantTask
	directed := false
	var caps json.RawMessage
	switch mc, mcaps, pinned := u.connForName(ctx, c, listTools, upstreamName); {
	case !asTask || mc.servesTasks() || pinned && mc.modern:
		c, caps = mc, mcaps
		directed, asTask = taskSupport != "" && c.servesTasks(), false
	case c.modern:
		asTask = false // an upstream of 2026-07-28 without the extension: a plain call
	}
	if asTask {
		gateway.BecomeTask(ctx)
	}
	defer c.track(ctx)()

	args := json.RawMessage(bytes.TrimSpace(call.Arguments))
	if isNull(args) {
		args = json.RawMessage(`{}`)
	}
	params := callParams{Name: upstreamName, Arguments: args}
	if gateway.ProgressRequested(ctx) {
		tok := "tg-progress-" + strconv.FormatInt(c.seq.Add(1), 10)
		r := newRelay(ctx)
		c.progress.Store(tok, r)
		defer func() {
			c.progress.Delete(tok)
			r.finish(time.Second)
		}()
		params.Meta = map[string]any{"progressToken": tok}
	}
	params.Meta = withTraceMeta(ctx, params.Meta)
	if asTask {
		params.Task = upstreamTaskParams(call)
	}
	var req any = &params
	round := false
	if c.modern { // the round a repeat answers: 2026-07-28 only
		m := params.members()
		round = addRound(m, call.InputResponses, call.RequestState)
		req = m
	}
	raw, err := c.requestAs(ctx, string(mcp.MethodToolsCall), req, caps)
	switch {
	case err == nil && asTask:
		raw, err = u.awaitTask(ctx, c, call, raw)
	case err == nil && directed:
		raw, err = u.awaitModernTask(ctx, c, caps, raw)
	}
	if err != nil {
		var rpc *rpcError
		switch {
		case ctx.Err() != nil:
			return nil, ctx.Err() // the pipeline reports the timeout or cancellation
		case errors.As(err, &rpc) && c.modern && (round || rpc.Code == mcp.MISSING_REQUIRED_CLIENT_CAPABILITY):
			// A refusal of the round itself (its answers, its state) or of
			// the caller's capabilities is the caller's to see, as a
			// protocol error, as it would be talking to the upstream.
			return gateway.RequestErrorResult(&gateway.RequestError{Code: rpc.Code, Data: rpc.Data,
				Message: fmt.Sprintf("upstream %q refused the call of `%s`: %s", u.name, name, rpc.Message)}), nil
		case errors.As(err, &rpc) && rpc.Code == mcp.URL_ELICITATION_REQUIRED && gateway.TakesURLElicitationError(ctx):
			// The upstream needs the user to open a URL first (2025-11-25):
			// the caller's client starts that flow from this error and its
			// data, and calls again; a tool error would hide it.
			return gateway.RequestErrorResult(&gateway.RequestError{Code: rpc.Code, Data: rpc.Data,
				Message: fmt.Sprintf("upstream %q needs a URL elicitation before the call of `%s`: %s", u.name, name, rpc.Message)}), nil
		case errors.As(err, &rpc) && rpc.Code == mcp.URL_ELICITATION_REQUIRED && !c.modern && gateway.CanElicitInRounds(ctx, mcp.ElicitationModeURL):
			// A 2026-07-28 caller, for which the code is reserved, is
			// asked the same in a round of its call; its repeat calls the
			// upstream again (the round stage seals urlRetryState). Only
			// on a 2025-era connection, which does not carry the round's
			// state to the upstream.
			if res := urlRound(rpc, u.name, name); res != nil {
				return res, nil
			}
			fallthrough
		case errors.As(err, &rpc):
			msg := fmt.Sprintf("Upstream %q answered the call of `%s` with JSON-RPC error %d: %s", u.name, name, rpc.Code, rpc.Message)
			if len(rpc.Data) > 0 && string(rpc.Data) != "null" {
				msg += " (data: " + gateway.Truncate(string(rpc.Data), 512) + ")"
			}
			res := gateway.Error(msg, fmt.Sprintf("Upstream error %d", rpc.Code)).WithExtra("jsonrpc_error", rpc)
			res.Cause = &gateway.RequestError{Code: rpc.Code, Message: rpc.Error(), Data: rpc.Data}
			return res, nil
		default:
			return gateway.UnavailableResult(name, fmt.Sprintf(
				"the connection to upstream %q failed during the call (%s); the call may or may not have run; toolgate is reconnecting",
				u.name, u.errText(c.childExit(err)))), nil
		}
	}
	var res *gateway.Result
	if c.modern {
		res, err = u.modernResult(name, raw)
	} else {
		res, err = gateway.ResultFromMCP(raw)
	}
	if err != nil {
		return gateway.RuntimeErrorResult(name, fmt.Errorf("upstream %q sent a tools/call result toolgate cannot read: %w", u.name, err)), nil
	}
	delete(res.Meta, serverInfoMeta)
	if asTask || directed {
		delete(res.Meta, relatedTaskMeta) // the upstream's task, not the caller's
	}
	if len(res.Meta) == 0 {
		res.Meta = nil
	}
	return res, nil
}

// urlRetryState is the state of a round that asks a 2026-07-28 caller to
// open the pages of an upstream's -32042; the repeat of the call, which
// carries it back, calls the upstream again, as a 2025-11-25 client does.
const urlRetryState = "url-retry"

// urlRound is the round that asks a caller the URL elicitations of an
// upstream's -32042 (rpc), or nil when its data holds none.
func urlRound(rpc *rpcError, upstream, tool string) *gateway.Result {
	var data struct {
		Elicitations []json.RawMessage `json:"elicitations"`
	}
	if json.Unmarshal(rpc.Data, &data) != nil || len(data.Elicitations) == 0 {
		return nil
	}
	reqs := make(map[string]json.RawMessage, len(data.Elicitations))
	for i, e := range data.Elicitations {
		b, err := json.Marshal(map[string]any{"method": gateway.MethodElicitation, "params": e})
		if err != nil {
			return nil
		}
		reqs["url-"+strconv.Itoa(i+1)] = b
	}
	return gateway.InputRequiredResult(reqs, urlRetryState,
		fmt.Sprintf("upstream %q needs a URL elicitation before the call of `%s`: %s", upstream, tool, rpc.Message))
}

// acquire waits for a free slot of the upstream's concurrency limit and
// returns the live connection with the function that frees the slot. With
// no live connection it returns nil and why; when ctx ends while waiting,
// ctx's error.
func (u *Upstream) acquire(ctx context.Context) (*conn, func(), string, error) {
	if c, why := u.liveConn(); c == nil {
		return nil, nil, why, nil
	}
	select {
	case u.sem <- struct{}{}:
	case <-ctx.Done():
		return nil, nil, "", ctx.Err()
	}
	release := func() { <-u.sem }
	c, why := u.liveConn() // it may have died while we waited
	if c == nil {
		release()
		return nil, nil, why, nil
	}
	return c, release, "", nil
}

// do sends one request within the concurrency limit, for prompts,
// resources and completions, over the connection of the caller's era
// ([Upstream.connFor]); a prompts/get names its prompt (the upstream's
// name; "" for other requests), which only one child may list: it goes
// to that child (sidecar.go). On a 2026-07-28 connection, a prompts/get
// carries the round it answers ([gateway.PromptRoundFrom]).
func (u *Upstream) do(ctx context.Context, method string, params map[string]any, prompt string) (json.RawMessage, error) {
	c, release, why, err := u.acquire(ctx)
	if err != nil {
		return nil, err
	}
	if c == nil {
		return nil, errors.New(why)
	}
	defer release()
	c, caps, _ := u.connForName(ctx, c, listPrompts, prompt)
	if r := gateway.PromptRoundFrom(ctx); r != nil && c.modern {
		addRound(params, r.InputResponses, r.RequestState)
	}
	defer c.track(ctx)()
	raw, err := c.requestAs(ctx, method, params, caps)
	if err != nil {
		var rpc *rpcError
		if errors.As(err, &rpc) || ctx.Err() != nil {
			return nil, fmt.Errorf("upstream %q: %w", u.name, err)
		}
		return nil, fmt.Errorf("upstream %q: %s", u.name, u.errText(c.childExit(err)))
	}
	return raw, nil
}

func progressOf(f map[string]any) gateway.Progress {
	var p gateway.Progress
	p.Progress, _ = f["progress"].(float64)
	p.Total, _ = f["total"].(float64)
	p.Message, _ = f["message"].(string)
	return p
}

// relay passes one call's upstream progress on to the caller, in order,
// off the transport's read loop. A report that does not advance past the
// last one passed on is dropped: some servers' notifications overtake
// each other (mcp-go's HTTP server spreads a session's notifications over
// all its open streams), and MCP progress must increase.
type relay struct {
	ctx     context.Context
	mu      sync.Mutex
	ch      chan gateway.Progress
	closed  bool
	started bool
	last    float64
	done    chan struct{}
}

func newRelay(ctx context.Context) *relay {
	r := &relay{ctx: ctx, ch: make(chan gateway.Progress, 64), done: make(chan struct{})}
	go func() {
		defer close(r.done)
		for p := range r.ch {
			gateway.ReportProgress(r.ctx, p)
		}
	}()
	return r
}

// push queues a report; when the queue is full the report is dropped
// (progress is advisory), so the read loop never waits.
func (r *relay) push(p gateway.Progress) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed || (r.started && p.Progress <= r.last) {
		return
	}
	select {
	case r.ch <- p:
		r.started, r.last = true, p.Progress
	default:
	}
}

// finish delivers what is queued (waiting at most max, and not past the
// call's end) and stops.
func (r *relay) finish(max time.Duration) {
	r.mu.Lock()
	if !r.closed {
		r.closed = true
		close(r.ch)
	}
	r.mu.Unlock()
	t := time.NewTimer(max)
	defer t.Stop()
	select {
	case <-r.done:
	case <-t.C:
	case <-r.ctx.Done():
	}
}

// Prompts.

type rawPrompt struct {
	Name        string                     `json:"name"`
	Title       string                     `json:"title"`
	Description string                     `json:"description"`
	Meta        map[string]json.RawMessage `json:"_meta"`
	Arguments   []struct {
		Name        string `json:"name"`
		Title       string `json:"title"`
		Description string `json:"description"`
		Required    bool   `json:"required"`
	} `json:"arguments"`
}

// buildPrompts names the upstream's prompts "<prefix>__<name>" (mapped
// like tool names); getting one forwards prompts/get to this upstream.
func (u *Upstream) buildPrompts(raws []json.RawMessage) ([]gateway.Prompt, map[string]string) {
	var defs []rawPrompt
	seen := map[string]bool{}
	for _, b := range raws {
		var rp rawPrompt
		if err := json.Unmarshal(b, &rp); err != nil || rp.Name == "" || seen[rp.Name] {
			u.log.Warn("upstream prompt left out: malformed prompts/list entry", "entry", gateway.Truncate(string(b), 200))
			continue
		}
		seen[rp.Name] = true
		defs = append(defs, rp)
	}
	names := make([]string, len(defs))
	for i, d := range defs {
		names[i] = d.Name
	}
	served, _ := assignNames(u.prefix, names)
	out := make([]gateway.Prompt, 0, len(defs))
	upNames := make(map[string]string, len(defs))
	for _, d := range defs {
		upNames[served[d.Name]] = d.Name
		p := gateway.Prompt{Name: served[d.Name], Title: d.Title, Description: d.Description, Meta: d.Meta}
		for _, a := range d.Arguments {
			p.Arguments = append(p.Arguments, gateway.PromptArgument{Name: a.Name, Title: a.Title, Description: a.Description, Required: a.Required})
		}
		upName := d.Name
		p.Get = func(ctx context.Context, args map[string]string) (*gateway.PromptResult, error) {
			return u.getPrompt(ctx, upName, args)
		}
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, upNames
}

func (u *Upstream) getPrompt(ctx context.Context, name string, args map[string]string) (*gateway.PromptResult, error) {
	params := map[string]any{"name": name}
	if args != nil {
		params["arguments"] = args
	}
	raw, err := u.do(ctx, string(mcp.MethodPromptsGet), params, name)
	if err != nil {
		return nil, err
	}
	var wire struct {
		Description string `json:"description"`
		Messages    []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
		ResultType    string                     `json:"resultType"`
		InputRequests map[string]json.RawMessage `json:"inputRequests"`
		RequestState  string                     `json:"requestState"`
	}
	if err := json.Unmarshal(raw, &wire); err != nil {
		return nil, fmt.Errorf("upstream %q: decoding prompts/get result: %w", u.name, err)
	}
	if wire.ResultType == inputRequiredResponse {
		if why := u.refusedAsk(wire.InputRequests); why != "" {
			return nil, fmt.Errorf("upstream %q asked the caller of prompt %q, in a round, for what toolgate does not pass on: %s", u.name, name, why)
		}
		return &gateway.PromptResult{InputRequests: wire.InputRequests, RequestState: wire.RequestState}, nil
	}
	res := &gateway.PromptResult{Description: wire.Description}
	for i, m := range wire.Messages {
		part, err := gateway.UnmarshalPart(m.Content)
		if err != nil {
			return nil, fmt.Errorf("upstream %q: prompts/get message %d: %w", u.name, i, err)
		}
		res.Messages = append(res.Messages, gateway.PromptMessage{Role: m.Role, Content: part})
	}
	return res, nil
}

// Resources.

type rawResource struct {
	URI         string                     `json:"uri"`
	URITemplate string                     `json:"uriTemplate"`
	Name        string                     `json:"name"`
	Title       string                     `json:"title"`
	Description string                     `json:"description"`
	MIMEType    string                     `json:"mimeType"`
	Size        *int64                     `json:"size"`
	Meta        map[string]json.RawMessage `json:"_meta"`
}

// buildResources keeps the upstream's URIs and URI templates unchanged;
// reading one forwards resources/read to this upstream.
func (u *Upstream) buildResources(rs, ts []json.RawMessage) ([]gateway.Resource, []gateway.ResourceTemplate) {
	var resources []gateway.Resource
	seen := map[string]bool{}
	for _, b := range rs {
		var r rawResource
		if err := json.Unmarshal(b, &r); err != nil || r.URI == "" || seen[r.URI] {
			u.log.Warn("upstream resource left out: malformed or repeated resources/list entry", "entry", gateway.Truncate(string(b), 200))
			continue
		}
		seen[r.URI] = true
		uri := r.URI
		resources = append(resources, gateway.Resource{
			URI: r.URI, Name: r.Name, Title: r.Title, Description: r.Description, MIMEType: r.MIMEType, Size: r.Size, Meta: r.Meta,
			Read: func(ctx context.Context) ([]gateway.ResourceContents, error) { return u.readResource(ctx, uri) },
		})
	}
	var templates []gateway.ResourceTemplate
	seen = map[string]bool{}
	for _, b := range ts {
		var r rawResource
		if err := json.Unmarshal(b, &r); err != nil || r.URITemplate == "" || seen[r.URITemplate] {
			u.log.Warn("upstream resource template left out: malformed or repeated entry", "entry", gateway.Truncate(string(b), 200))
			continue
		}
		seen[r.URITemplate] = true
		templates = append(templates, gateway.ResourceTemplate{
			URITemplate: r.URITemplate, Name: r.Name, Title: r.Title, Description: r.Description, MIMEType: r.MIMEType, Meta: r.Meta,
			Read: u.readResource,
		})
	}
	return resources, templates
}

func (u *Upstream) readResource(ctx context.Context, uri string) ([]gateway.ResourceContents, error) {
	raw, err := u.do(ctx, string(mcp.MethodResourcesRead), map[string]any{"uri": uri}, "")
	if err != nil {
		return nil, err
	}
	var wire struct {
		Contents []gateway.ResourceContents `json:"contents"`
	}
	if err := json.Unmarshal(raw, &wire); err != nil {
		return nil, fmt.Errorf("upstream %q: decoding resources/read result: %w", u.name, err)
	}
	return wire.Contents, nil
}

// withTraceMeta puts the caller's trace context (when there is one) into
// the _meta of an upstream request's params, so the upstream's spans join
// the caller's trace, and returns that _meta (nil when it stays empty).
func withTraceMeta(ctx context.Context, meta map[string]any) map[string]any {
	if !gateway.Traced(ctx) {
		return meta
	}
	if meta == nil {
		meta = map[string]any{}
	}
	gateway.InjectTrace(ctx, meta)
	if len(meta) == 0 {
		return nil
	}
	return meta
}
