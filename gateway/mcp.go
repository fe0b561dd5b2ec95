package gateway

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// This file is the mirror of the contract onto MCP, and the one place where
// mcp-go's types meet the gateway's:
//
//	Tool name, description, schema  -> name, description, inputSchema (bytes passed through)
//	Permissions hints               -> annotations (readOnlyHint, destructiveHint, idempotentHint, openWorldHint)
//	Result.Output                   -> content blocks
//	Result.Message                  -> one more text block, after the output
//	Result.IsError                  -> isError
//	Result.Structured               -> structuredContent (with the tool's outputSchema)
//	display, brief, extras, kind    -> _meta["toolgate/display"|"toolgate/brief"|"toolgate/extras"|"toolgate/kind"]
//
// [ResultFromMCP] is the reverse, so a toolgate behind a toolgate loses
// nothing.
//
// Besides tools, the mirror serves prompts and resources from sources
// (sources.go), with resources/subscribe (tracked per session, forwarded
// to the serving source once per URI) and completion/complete (routed to
// the serving source). Every request it hands to a toolset or source
// carries the request's own [Client] (mcp_client.go), through which
// upstream log messages, sampling and elicitation reach the client that
// made the request and no other.

// Keys of toolgate's members in a result's _meta.
const (
	MetaDisplay = "toolgate/display"
	MetaBrief   = "toolgate/brief"
	MetaExtras  = "toolgate/extras"
	MetaKind    = "toolgate/kind"
	MetaMessage = "toolgate/message"
	MetaCallID  = "toolgate/call_id"
)

// ArtifactURIPrefix begins the URI of every artifact:
// toolgate://artifacts/<run-id>/<file>.
const ArtifactURIPrefix = "toolgate://artifacts/"

// MCPOptions configure [NewMCPServer].
type MCPOptions struct {
	// Name and Version identify the server to clients.
	Name, Version string
	// Instructions are sent to clients at initialization.
	Instructions string
	// Catalog is the tools to serve. Required.
	Catalog *Catalog
	// Pipeline runs the calls. Required.
	Pipeline *Pipeline
	// Artifacts serves artifacts through resources/read. Optional.
	Artifacts ArtifactStore
	// ToolFilter, if set, is asked per tools/list and tools/call request
	// whether a tool is visible; a hidden tool is "not found" at call time.
	ToolFilter func(ctx context.Context, t *Tool) bool
	// ToolMeta, if set, adds _meta members to a tool in tools/list (for
	// example its permission decision).
	ToolMeta func(t *Tool) map[string]any
	// OnSessionEnd, if set, is called with the ID of each client session
	// that ends (state tied to a session, such as skill grants, can go).
	OnSessionEnd func(sessionID string)
	// ListDebounce is how long catalog changes settle before clients get
	// one tools/list_changed. If zero, 50ms.
	ListDebounce time.Duration
	// Logger; nil discards.
	Logger *slog.Logger
}

// MCPServer serves the catalog over MCP through mcp-go. Create it with
// [NewMCPServer], then serve it with [MCPServer.ServeStdio] or
// [MCPServer.HTTPHandler].
type MCPServer struct {
	opts MCPOptions
	log  *slog.Logger
	srv  *server.MCPServer

	syncMu   sync.Mutex
	digest   [32]byte
	debounce *time.Timer

	sessMu   sync.Mutex
	sessions []server.ClientSession // registered, oldest first

	srcMu           sync.Mutex
	promptSources   []PromptSource
	resourceSources []ResourceSource
	promptDigest    [32]byte
	resourceDigest  [32]byte
	promptOwner     map[string]PromptSource   // served prompt name -> its source
	resourceOwner   map[string]ResourceSource // resource URI -> its source
	templateOwners  []templateOwner           // in the order served

	subMu    sync.Mutex
	subs     map[string]*subscription   // by resource URI
	sessSubs map[string]map[string]bool // session ID -> URIs it subscribed to
}

// templateOwner is a served resource template and the source that serves
// it (nil for the artifact template).
type templateOwner struct {
	template *mcp.URITemplate
	src      ResourceSource
}

// NewMCPServer mirrors the catalog onto an mcp-go server and keeps it in
// step with the catalog: every change is debounced and sent to clients as
// one tools/list_changed, and only when the tool list really changed.
func NewMCPServer(opts MCPOptions) *MCPServer {
	if opts.Catalog == nil || opts.Pipeline == nil {
		panic("gateway: NewMCPServer needs Catalog and Pipeline")
	}
	if opts.ListDebounce <= 0 {
		opts.ListDebounce = 50 * time.Millisecond
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	m := &MCPServer{opts: opts, log: log, subs: map[string]*subscription{}, sessSubs: map[string]map[string]bool{}}

	hooks := &server.Hooks{}
	hooks.AddOnError(m.recordUnknownTool)
	hooks.AddOnRequestInitialization(m.refuseUnoffered)
	hooks.AddOnRequestInitialization(m.interceptSubscription)
	hooks.AddOnRegisterSession(func(_ context.Context, s server.ClientSession) {
		m.sessMu.Lock()
		m.sessions = append(m.sessions, s)
		m.sessMu.Unlock()
	})
	hooks.AddOnUnregisterSession(func(_ context.Context, s server.ClientSession) {
		m.sessMu.Lock()
		for i, have := range m.sessions {
			if have.SessionID() == s.SessionID() {
				m.sessions = append(m.sessions[:i], m.sessions[i+1:]...)
				break
			}
		}
		m.sessMu.Unlock()
		m.dropSubscriptions(s.SessionID())
		if opts.OnSessionEnd != nil {
			opts.OnSessionEnd(s.SessionID())
		}
	})
	srvOpts := []server.ServerOption{
		server.WithToolCapabilities(true),
		server.WithLogging(),
		server.WithRecovery(),
		server.WithResourceRecovery(),
		server.WithHooks(hooks),
	}
	if opts.Instructions != "" {
		srvOpts = append(srvOpts, server.WithInstructions(opts.Instructions))
	}
	if opts.ToolFilter != nil {
		srvOpts = append(srvOpts, server.WithToolFilter(m.filterTools))
	}
	srvOpts = append(srvOpts,
		server.WithResourceCapabilities(true, true),
		server.WithPromptCapabilities(true),
		server.WithCompletions(),
		server.WithPromptCompletionProvider(completer{m}),
		server.WithResourceCompletionProvider(completer{m}),
	)
	m.srv = server.NewMCPServer(opts.Name, opts.Version, srvOpts...)
	m.syncTools()
	m.syncResources()
	opts.Catalog.OnChange(m.scheduleSync)
	return m
}

// Server returns the underlying mcp-go server, for transports and for
// adapters that add resources or prompts.
func (m *MCPServer) Server() *server.MCPServer { return m.srv }

// ClientRoot is a root a client declared (a file:// URI it works in).
type ClientRoot struct {
	URI  string
	Name string
}

// ErrNoClient is returned by [MCPServer.ClientRoots] when no client is
// connected.
var ErrNoClient = errors.New("no client session")

// ClientRoots asks the most recently connected client that is still
// connected for its roots (roots/list). With stdio there is one client;
// over HTTP, the latest session answers, so operators only forward roots
// upstream where that is what they want (upstreams' forward_roots).
func (m *MCPServer) ClientRoots(ctx context.Context) ([]ClientRoot, error) {
	m.sessMu.Lock()
	var s server.ClientSession
	for i := len(m.sessions) - 1; i >= 0; i-- {
		if _, ok := m.sessions[i].(server.SessionWithRoots); ok && m.sessions[i].Initialized() {
			s = m.sessions[i]
			break
		}
	}
	m.sessMu.Unlock()
	if s == nil {
		return nil, ErrNoClient
	}
	res, err := m.srv.RequestRoots(m.srv.WithContext(ctx, s), mcp.ListRootsRequest{})
	if err != nil {
		return nil, fmt.Errorf("asking the client for its roots: %w", err)
	}
	roots := make([]ClientRoot, 0, len(res.Roots))
	for _, r := range res.Roots {
		roots = append(roots, ClientRoot{URI: r.URI, Name: r.Name})
	}
	return roots, nil
}

// scheduleSync debounces catalog changes into one sync.
func (m *MCPServer) scheduleSync() {
	m.syncMu.Lock()
	defer m.syncMu.Unlock()
	if m.debounce != nil {
		m.debounce.Stop()
	}
	m.debounce = time.AfterFunc(m.opts.ListDebounce, m.syncTools)
}

// syncTools replaces mcp-go's tools with the catalog's, if they differ
// from what clients have, which sends clients one tools/list_changed.
func (m *MCPServer) syncTools() {
	entries := m.opts.Catalog.Entries()
	tools := make([]server.ServerTool, 0, len(entries))
	h := sha256.New()
	for _, e := range entries {
		t := m.mcpTool(e.Tool)
		b, err := json.Marshal(t)
		if err != nil {
			m.log.Error("tool does not encode; not served", "tool", e.Tool.Name, "err", err)
			continue
		}
		h.Write(b)
		tools = append(tools, server.ServerTool{Tool: t, Handler: m.handleCall})
	}
	var digest [32]byte
	copy(digest[:], h.Sum(nil))

	m.syncMu.Lock()
	defer m.syncMu.Unlock()
	if digest == m.digest && len(m.srv.ListTools()) == len(tools) {
		return
	}
	m.digest = digest
	m.srv.SetTools(tools...)
}

// AddPromptSource serves the source's prompts (and keeps them in step with
// it if it is a [PromptsChangeNotifier]).
func (m *MCPServer) AddPromptSource(src PromptSource) {
	m.srcMu.Lock()
	m.promptSources = append(m.promptSources, src)
	m.srcMu.Unlock()
	if n, ok := src.(PromptsChangeNotifier); ok {
		n.OnPromptsChanged(m.syncPrompts)
	}
	m.syncPrompts()
}

// AddResourceSource serves the source's resources and templates (and keeps
// them in step with it if it is a [ResourcesChangeNotifier]).
func (m *MCPServer) AddResourceSource(src ResourceSource) {
	m.srcMu.Lock()
	m.resourceSources = append(m.resourceSources, src)
	m.srcMu.Unlock()
	if n, ok := src.(ResourcesChangeNotifier); ok {
		n.OnResourcesChanged(m.syncResources)
	}
	if rs, ok := src.(ResourceSubscriber); ok {
		rs.OnResourceUpdated(m.resourceUpdated)
	}
	m.syncResources()
}

// syncPrompts replaces the served prompts with the sources' current ones.
// A prompt name offered twice is served once, by the first source, and
// the conflict is logged.
func (m *MCPServer) syncPrompts() {
	m.srcMu.Lock()
	defer m.srcMu.Unlock()
	var out []server.ServerPrompt
	seen := map[string]bool{}
	owner := map[string]PromptSource{}
	h := sha256.New()
	for _, src := range m.promptSources {
		prompts, err := src.Prompts(context.Background())
		if err != nil {
			m.log.Warn("listing prompts", "err", err)
			continue
		}
		for _, p := range prompts {
			if seen[p.Name] {
				m.log.Warn("prompt name conflict; first source kept", "prompt", p.Name)
				continue
			}
			seen[p.Name] = true
			owner[p.Name] = src
			mp := mcp.Prompt{Name: p.Name, Title: p.Title, Description: p.Description, Meta: metaOf(p.Meta)}
			for _, a := range p.Arguments {
				mp.Arguments = append(mp.Arguments, mcp.PromptArgument{Name: a.Name, Title: a.Title, Description: a.Description, Required: a.Required})
			}
			b, _ := json.Marshal(mp)
			h.Write(b)
			out = append(out, server.ServerPrompt{Prompt: mp, Handler: m.promptHandler(p)})
		}
	}
	m.promptOwner = owner
	var digest [32]byte
	copy(digest[:], h.Sum(nil))
	if digest == m.promptDigest {
		return
	}
	m.promptDigest = digest
	m.srv.SetPrompts(out...)
}

func (m *MCPServer) promptHandler(p Prompt) server.PromptHandlerFunc {
	return func(ctx context.Context, req mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		cctx, client := m.withClient(ctx, nil, "prompt "+p.Name)
		res, err := p.Get(cctx, req.Params.Arguments)
		settle(ctx, client.lastSent.Load())
		if err != nil {
			return nil, err
		}
		out := &mcp.GetPromptResult{Description: res.Description, Messages: make([]mcp.PromptMessage, 0, len(res.Messages))}
		for _, msg := range res.Messages {
			b, err := marshalNoEscape(msg.Content)
			if err != nil {
				return nil, fmt.Errorf("prompt %s: encoding message: %w", p.Name, err)
			}
			out.Messages = append(out.Messages, mcp.PromptMessage{Role: mcp.Role(msg.Role), Content: rawContent{raw: b}})
		}
		return out, nil
	}
}

// syncResources replaces the served resources and templates with the
// sources' current ones, plus the artifact template.
func (m *MCPServer) syncResources() {
	m.srcMu.Lock()
	defer m.srcMu.Unlock()
	var resources []server.ServerResource
	var templates []server.ServerResourceTemplate
	resourceOwner := map[string]ResourceSource{}
	var templateOwners []templateOwner
	h := sha256.New()
	if m.opts.Artifacts != nil {
		at := mcp.NewResourceTemplate(ArtifactURIPrefix+"{run}/{file}", "artifact",
			mcp.WithTemplateDescription("A tool output too large to return, saved whole in the run archive"))
		templates = append(templates, server.ServerResourceTemplate{Template: at, Handler: m.readArtifact})
		templateOwners = append(templateOwners, templateOwner{template: at.URITemplate})
	}
	seen := map[string]bool{}
	for _, src := range m.resourceSources {
		rs, ts, err := src.Resources(context.Background())
		if err != nil {
			m.log.Warn("listing resources", "err", err)
			continue
		}
		for _, r := range rs {
			if seen[r.URI] {
				m.log.Warn("resource URI conflict; first source kept", "uri", r.URI)
				continue
			}
			seen[r.URI] = true
			resourceOwner[r.URI] = src
			mr := mcp.Resource{URI: r.URI, Name: r.Name, Title: r.Title, Description: r.Description, MIMEType: r.MIMEType, Size: r.Size, Meta: metaOf(r.Meta)}
			b, _ := json.Marshal(mr)
			h.Write(b)
			read := r.Read
			resources = append(resources, server.ServerResource{Resource: mr, Handler: func(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
				cctx, client := m.withClient(ctx, nil, "resource "+req.Params.URI)
				c, err := read(cctx)
				settle(ctx, client.lastSent.Load())
				if err != nil {
					return nil, err
				}
				return mcpContents(c), nil
			}})
		}
		for _, t := range ts {
			mt, err := newResourceTemplate(t.URITemplate, t.Name)
			if err != nil {
				m.log.Warn("resource template not served: its URI template does not parse", "template", t.URITemplate, "err", err)
				continue
			}
			mt.Description, mt.MIMEType = t.Description, t.MIMEType
			mt.Title, mt.Meta = t.Title, metaOf(t.Meta)
			b, _ := json.Marshal(mt)
			h.Write(b)
			templateOwners = append(templateOwners, templateOwner{template: mt.URITemplate, src: src})
			read := t.Read
			templates = append(templates, server.ServerResourceTemplate{Template: mt, Handler: func(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
				cctx, client := m.withClient(ctx, nil, "resource "+req.Params.URI)
				c, err := read(cctx, req.Params.URI)
				settle(ctx, client.lastSent.Load())
				if err != nil {
					return nil, err
				}
				return mcpContents(c), nil
			}})
		}
	}
	m.resourceOwner, m.templateOwners = resourceOwner, templateOwners
	var digest [32]byte
	copy(digest[:], h.Sum(nil))
	if digest == m.resourceDigest {
		return
	}
	m.resourceDigest = digest
	m.srv.SetResources(resources...)
	m.srv.SetResourceTemplates(templates...)
}

// newResourceTemplate is mcp.NewResourceTemplate, which panics on a URI
// template that does not parse (an upstream's, say), with an error instead.
func newResourceTemplate(uriTemplate, name string) (t mcp.ResourceTemplate, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%v", r)
		}
	}()
	return mcp.NewResourceTemplate(uriTemplate, name), nil
}

func metaOf(meta map[string]json.RawMessage) *mcp.Meta {
	if len(meta) == 0 {
		return nil
	}
	fields := make(map[string]any, len(meta))
	for k, v := range meta {
		fields[k] = v
	}
	return &mcp.Meta{AdditionalFields: fields}
}

func mcpContents(cs []ResourceContents) []mcp.ResourceContents {
	out := make([]mcp.ResourceContents, 0, len(cs))
	for _, c := range cs {
		var meta map[string]any
		if len(c.Meta) > 0 {
			_ = json.Unmarshal(c.Meta, &meta)
		}
		if c.Text != nil {
			out = append(out, mcp.TextResourceContents{URI: c.URI, MIMEType: c.MIMEType, Text: *c.Text, Meta: meta})
		} else {
			out = append(out, mcp.BlobResourceContents{URI: c.URI, MIMEType: c.MIMEType, Blob: base64.StdEncoding.EncodeToString(c.Blob), Meta: meta})
		}
	}
	return out
}

// mcpTool is the MCP form of a tool: the schema bytes pass through.
func (m *MCPServer) mcpTool(t *Tool) mcp.Tool {
	mt := mcp.Tool{
		Name:            t.Name,
		Title:           t.Title,
		Description:     t.Description,
		RawInputSchema:  t.InputSchema,
		RawOutputSchema: t.OutputSchema,
		Annotations: mcp.ToolAnnotation{
			Title:           t.Title,
			ReadOnlyHint:    t.Permissions.ReadOnly,
			DestructiveHint: t.Permissions.Destructive,
			IdempotentHint:  t.Permissions.Idempotent,
			OpenWorldHint:   t.Permissions.OpenWorld,
		},
	}
	if len(t.Annotations) > 0 {
		// An upstream's annotations go out as it sent them (the five
		// MCP-defined members; mcp-go's type has no room for others).
		mt.Annotations = mcp.ToolAnnotation{}
		if err := json.Unmarshal(t.Annotations, &mt.Annotations); err != nil {
			m.log.Warn("tool annotations do not decode; sent without them", "tool", t.Name, "err", err)
		}
	}
	if len(t.Icons) > 0 {
		if err := json.Unmarshal(t.Icons, &mt.Icons); err != nil {
			m.log.Warn("tool icons do not decode; sent without them", "tool", t.Name, "err", err)
		}
	}
	meta := map[string]any{}
	for k, v := range t.Meta {
		meta[k] = v
	}
	if len(t.Permissions.Capabilities) > 0 {
		meta["toolgate/capabilities"] = t.Permissions.Capabilities
	}
	if m.opts.ToolMeta != nil {
		for k, v := range m.opts.ToolMeta(t) {
			meta[k] = v
		}
	}
	if len(meta) > 0 {
		mt.Meta = &mcp.Meta{AdditionalFields: meta}
	}
	return mt
}

func (m *MCPServer) filterTools(ctx context.Context, tools []mcp.Tool) []mcp.Tool {
	out := tools[:0:0]
	for _, mt := range tools {
		t, _, ok := m.opts.Catalog.Resolve(mt.Name)
		if ok && m.opts.ToolFilter(ctx, t) {
			out = append(out, mt)
		}
	}
	return out
}

// handleCall is the handler of every tool: it runs the call through the
// pipeline and maps the result. It never returns a Go error, so every
// outcome, failures included, reaches the model as a tool result.
func (m *MCPServer) handleCall(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	call := &Call{Name: req.Params.Name, Arguments: rawArguments(req)}
	call.Session, call.Client = caller(ctx)
	reqCtx := ctx
	ctx, client := m.withClient(ctx, call, "")
	if req.Params.Meta != nil && req.Params.Meta.ProgressToken != nil {
		progress := &mcpProgress{ctx: reqCtx, srv: m.srv, token: req.Params.Meta.ProgressToken, sent: &client.lastSent}
		var stop func()
		ctx, stop = WithProgress(ctx, progress)
		defer stop()
	}
	res := m.opts.Pipeline.Call(ctx, call)
	settle(reqCtx, client.lastSent.Load())
	return ToMCPResult(call.ID, res), nil
}

// progressSettle is how long after a request's last notification (progress,
// relayed log message) its response waits; see [settle].
const progressSettle = 10 * time.Millisecond

// recordUnknownTool records calls that mcp-go answered itself with "tool
// not found" (a protocol error, as the MCP spec asks), so that they are in
// the run archive like every other call.
func (m *MCPServer) recordUnknownTool(ctx context.Context, _ any, method mcp.MCPMethod, message any, err error) {
	if method != mcp.MethodToolsCall || !errors.Is(err, server.ErrToolNotFound) {
		return
	}
	var call *Call
	switch req := message.(type) {
	case *mcp.CallToolRequest:
		call = &Call{Name: req.Params.Name, Arguments: rawArguments(*req)}
	case mcp.CallToolRequest:
		call = &Call{Name: req.Params.Name, Arguments: rawArguments(req)}
	default:
		return
	}
	call.Session, call.Client = caller(ctx)
	m.opts.Pipeline.RecordOutside(call, NotFoundResult(call.Name))
}

// refuseUnoffered answers a call to a tool a toolset deliberately does not
// offer with an error that says why (mcp-go would only say "not found"),
// and records it.
func (m *MCPServer) refuseUnoffered(ctx context.Context, _ any, message any) error {
	if !m.opts.Catalog.HasUnoffered() {
		return nil
	}
	raw, ok := message.(json.RawMessage)
	if !ok || !bytes.Contains(raw, []byte(`"tools/call"`)) {
		return nil
	}
	var req struct {
		Method string `json:"method"`
		Params struct {
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
		} `json:"params"`
	}
	if json.Unmarshal(raw, &req) != nil || req.Method != string(mcp.MethodToolsCall) {
		return nil
	}
	why := m.opts.Catalog.WhyNotFound(req.Params.Name)
	if why == "" {
		return nil
	}
	call := &Call{Name: req.Params.Name, Arguments: req.Params.Arguments}
	call.Session, call.Client = caller(ctx)
	res := NotFoundResult(call.Name)
	res.Message += ": " + why
	m.opts.Pipeline.RecordOutside(call, res)
	return fmt.Errorf("tool %q is not offered: %s", req.Params.Name, why)
}

func rawArguments(req mcp.CallToolRequest) json.RawMessage {
	if len(req.Params.RawArguments) > 0 {
		return req.Params.RawArguments
	}
	if req.Params.Arguments == nil {
		return nil
	}
	b, err := json.Marshal(req.Params.Arguments)
	if err != nil {
		return nil
	}
	return b
}

// caller names the session and client of a request, when known.
func caller(ctx context.Context) (session, client string) {
	var info *mcp.Implementation
	if s := server.ClientSessionFromContext(ctx); s != nil {
		session = s.SessionID()
		if ci, ok := s.(server.SessionWithClientInfo); ok {
			i := ci.GetClientInfo()
			info = &i
		}
	}
	if pi := server.RequestProtocolInfoFromContext(ctx); pi != nil && pi.ClientInfo != nil {
		info = pi.ClientInfo
	}
	if info != nil && info.Name != "" {
		client = info.Name
		if info.Version != "" {
			client += "/" + info.Version
		}
	}
	return session, client
}

// mcpProgress sends a call's progress as notifications/progress with the
// token the client gave. [WithProgress] serializes the reports.
type mcpProgress struct {
	ctx   context.Context
	srv   *server.MCPServer
	token mcp.ProgressToken
	sent  *atomic.Int64 // unix nanoseconds of the last notification queued (shared with the request's client)
}

// settle holds a request's response back until the notifications it sent
// (progress reports, relayed log messages), the last one queued at last
// (unix nanoseconds; 0 for none), have had the time to reach the client
// first.
//
// mcp-go queues notifications on a per-session channel that other
// goroutines write out (on stdio a writer goroutine; on HTTP the request's
// stream, or the session's GET stream if the client opened one), while the
// response is written by the request's goroutine; a report queued just
// before the response can be written after it, or lost when the request's
// stream closes first. And the TypeScript SDK client dispatches
// notifications asynchronously but responses at once, so a report read in
// the same chunk as the response is dropped. Waiting until the session's
// queue is empty and at least progressSettle has passed since the last
// report keeps reports ahead of the result in practice. Only requests that
// sent notifications wait, and the wait is bounded (100ms for the queue).
func settle(ctx context.Context, last int64) {
	if last == 0 {
		return
	}
	if s := server.ClientSessionFromContext(ctx); s != nil {
		ch := s.NotificationChannel()
		deadline := time.Now().Add(100 * time.Millisecond)
		for len(ch) > 0 && time.Now().Before(deadline) {
			time.Sleep(200 * time.Microsecond)
		}
	}
	if wait := time.Until(time.Unix(0, last).Add(progressSettle)); wait > 0 {
		time.Sleep(wait)
	}
}

func (p *mcpProgress) Report(pr Progress) {
	params := map[string]any{"progressToken": p.token, "progress": pr.Progress}
	if pr.Total > 0 {
		params["total"] = pr.Total
	}
	if pr.Message != "" {
		params["message"] = pr.Message
	}
	if p.srv.SendNotificationToClient(p.ctx, string(mcp.MethodNotificationProgress), params) == nil {
		p.sent.Store(time.Now().UnixNano())
	}
}

func (m *MCPServer) readArtifact(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
	uri := req.Params.URI
	data, mime, err := m.opts.Artifacts.ReadArtifact(uri)
	if err != nil {
		return nil, fmt.Errorf("reading artifact %s: %w", uri, err)
	}
	if isTextMIME(mime) {
		return []mcp.ResourceContents{mcp.TextResourceContents{URI: uri, MIMEType: mime, Text: string(data)}}, nil
	}
	return []mcp.ResourceContents{mcp.BlobResourceContents{URI: uri, MIMEType: mime, Blob: base64.StdEncoding.EncodeToString(data)}}, nil
}

func isTextMIME(mime string) bool {
	return strings.HasPrefix(mime, "text/") || strings.HasPrefix(mime, "application/json")
}

// rawContent is an MCP content block given as JSON. Embedding TextContent
// makes it an mcp.Content; MarshalJSON sends the bytes unchanged.
type rawContent struct {
	mcp.TextContent
	raw json.RawMessage
}

func (c rawContent) MarshalJSON() ([]byte, error) { return c.raw, nil }

// ToMCPResult maps a Result onto an MCP tools/call result. callID, when
// not empty, is sent in _meta so that a client can find the call's record.
func ToMCPResult(callID string, res *Result) *mcp.CallToolResult {
	out := &mcp.CallToolResult{IsError: res.IsError}
	out.Content = make([]mcp.Content, 0, len(res.Output)+1)
	for _, p := range res.Output {
		if t, ok := p.(TextPart); ok && len(t.Annotations) == 0 && len(t.Meta) == 0 {
			out.Content = append(out.Content, mcp.NewTextContent(t.Text))
			continue
		}
		b, err := marshalNoEscape(p)
		if err != nil {
			b, _ = json.Marshal(map[string]string{"type": "text", "text": fmt.Sprintf("[content block could not be encoded: %v]", err)})
		}
		out.Content = append(out.Content, rawContent{raw: b})
	}
	if res.Message != "" {
		out.Content = append(out.Content, mcp.NewTextContent(res.Message))
	}
	if len(res.Structured) > 0 {
		out.RawStructuredContent = res.Structured
	}
	meta := make(map[string]any, len(res.Meta)+6)
	for k, v := range res.Meta {
		meta[k] = v
	}
	// A display that is only the brief travels as toolgate/brief alone.
	if len(res.Display) > 1 || (len(res.Display) == 1 && res.Display[0].BlockType() != BlockBrief) {
		if b, err := marshalNoEscape(res.Display); err == nil {
			meta[MetaDisplay] = json.RawMessage(b)
		}
	}
	if brief := res.Brief(); brief != "" {
		meta[MetaBrief] = brief
	}
	if len(res.Extras) > 0 {
		if b, err := marshalNoEscape(res.Extras); err == nil {
			meta[MetaExtras] = json.RawMessage(b)
		}
	}
	if res.Kind != "" {
		meta[MetaKind] = string(res.Kind)
	}
	if res.Message != "" {
		meta[MetaMessage] = res.Message
	}
	if callID != "" {
		meta[MetaCallID] = callID
	}
	if len(meta) > 0 {
		out.Meta = &mcp.Meta{AdditionalFields: meta}
	}
	return out
}

// ResultFromMCP maps the JSON of an MCP tools/call result back onto a
// Result: the reverse of [ToMCPResult]. Content blocks of every type and
// _meta members that are not toolgate's pass through unchanged; toolgate's
// own _meta members become display blocks (unknown types kept), brief,
// extras and kind again, and the message block is separated from the
// output.
func ResultFromMCP(data []byte) (*Result, error) {
	var wire struct {
		Content           json.RawMessage            `json:"content"`
		StructuredContent json.RawMessage            `json:"structuredContent"`
		IsError           bool                       `json:"isError"`
		Meta              map[string]json.RawMessage `json:"_meta"`
	}
	if err := json.Unmarshal(data, &wire); err != nil {
		return nil, fmt.Errorf("decoding tool result: %w", err)
	}
	res := &Result{IsError: wire.IsError}
	var brief string
	if len(wire.Content) > 0 && !bytes.Equal(wire.Content, []byte("null")) {
		parts, err := unmarshalPartsPassthrough(wire.Content)
		if err != nil {
			return nil, err
		}
		res.Output = parts
	}
	if len(wire.StructuredContent) > 0 && !bytes.Equal(wire.StructuredContent, []byte("null")) {
		res.Structured = wire.StructuredContent
	}
	for k, v := range wire.Meta {
		switch k {
		case MetaDisplay:
			blocks, err := unmarshalDisplay(v)
			if err != nil {
				return nil, err
			}
			res.Display = blocks
		case MetaExtras:
			if err := json.Unmarshal(v, &res.Extras); err != nil {
				return nil, fmt.Errorf("decoding %s: %w", MetaExtras, err)
			}
		case MetaKind:
			var s string
			_ = json.Unmarshal(v, &s)
			res.Kind = Kind(s)
		case MetaMessage:
			_ = json.Unmarshal(v, &res.Message)
		case MetaBrief:
			_ = json.Unmarshal(v, &brief)
		case MetaCallID:
			// the upstream's own call ID
		default:
			if res.Meta == nil {
				res.Meta = map[string]json.RawMessage{}
			}
			res.Meta[k] = v
		}
	}
	if brief != "" && len(res.Display) == 0 {
		res.Display = []DisplayBlock{BriefBlock{Text: brief}}
	}
	// The message travels as the last text block; take it back out.
	if res.Message != "" && len(res.Output) > 0 {
		if t, ok := res.Output[len(res.Output)-1].(TextPart); ok && t.Text == res.Message {
			res.Output = res.Output[:len(res.Output)-1]
		}
	}
	if res.IsError && res.Kind == "" {
		res.Kind = KindToolError
	}
	if !res.IsError {
		res.Kind = ""
	}
	return res, nil
}

// Resource subscriptions.
//
// mcp-go answers resources/subscribe and resources/unsubscribe itself but
// tracks nothing, so the mirror keeps the subscriptions: per URI, the
// sessions subscribed to it, and whether the source that serves it
// ([ResourceSubscriber]) has been subscribed. The source is subscribed
// when the first session subscribes and unsubscribed when the last one
// unsubscribes or ends; its updates go to the subscribed sessions only.
// Subscribing is done before mcp-go answers (in a request-initialization
// hook), so that a source's refusal, or a URI no source serves, fails the
// request.

// subscription is the state of one subscribed URI. sessions and pending
// are guarded by MCPServer.subMu; io serializes the source's subscribe and
// unsubscribe calls for the URI and guards active. subMu is never held
// while waiting for io or for a source, so updates are never delayed by a
// subscription in progress.
type subscription struct {
	src      ResourceSource // nil: the artifact template (never changes)
	sessions map[string]bool
	pending  int // subscribe/unsubscribe calls under way; the entry stays while > 0
	io       sync.Mutex
	active   bool // the source is subscribed
}

// subscriptionTimeout bounds a source's unsubscribe when no request bounds
// it (a session that ended).
const subscriptionTimeout = 10 * time.Second

// interceptSubscription handles resources/subscribe and
// resources/unsubscribe of 2025-era clients before mcp-go acknowledges
// them (2026-07-28 removed both; mcp-go refuses them itself).
func (m *MCPServer) interceptSubscription(ctx context.Context, _ any, message any) error {
	raw, ok := message.(json.RawMessage)
	if !ok || !bytes.Contains(raw, []byte(`"resources/`)) || !bytes.Contains(raw, []byte(`subscribe"`)) {
		return nil
	}
	var req struct {
		Method string `json:"method"`
		Params struct {
			URI  string                     `json:"uri"`
			Meta map[string]json.RawMessage `json:"_meta"`
		} `json:"params"`
	}
	if json.Unmarshal(raw, &req) != nil || req.Params.URI == "" {
		return nil // mcp-go says what is wrong
	}
	if _, modern := req.Params.Meta[mcp.MetaKeyProtocolVersion]; modern {
		return nil
	}
	s := server.ClientSessionFromContext(ctx)
	if s == nil {
		return nil
	}
	switch req.Method {
	case string(mcp.MethodResourcesSubscribe):
		return m.subscribe(ctx, s.SessionID(), req.Params.URI)
	case string(mcp.MethodResourcesUnsubscribe):
		m.unsubscribe(ctx, s.SessionID(), req.Params.URI)
	}
	return nil
}

// resourceSourceFor returns the source that serves uri (a resource's URI
// or one matching a template); ok is false when nothing serves it.
func (m *MCPServer) resourceSourceFor(uri string) (src ResourceSource, ok bool) {
	m.srcMu.Lock()
	defer m.srcMu.Unlock()
	if src, ok := m.resourceOwner[uri]; ok {
		return src, true
	}
	for _, t := range m.templateOwners {
		if t.template.Raw() == uri || t.template.Regexp().MatchString(uri) {
			return t.src, true
		}
	}
	return nil, false
}

func (m *MCPServer) subscribe(ctx context.Context, session, uri string) error {
	src, ok := m.resourceSourceFor(uri)
	if !ok {
		return fmt.Errorf("resource %s not found: no resource or template served by toolgate matches it", uri)
	}
	m.subMu.Lock()
	st := m.subs[uri]
	if st == nil {
		st = &subscription{src: src, sessions: map[string]bool{}}
		m.subs[uri] = st
	}
	if st.sessions[session] {
		m.subMu.Unlock()
		return nil
	}
	st.pending++
	m.subMu.Unlock()

	st.io.Lock()
	defer st.io.Unlock()
	var err error
	if !st.active {
		if rs, ok := st.src.(ResourceSubscriber); ok {
			err = rs.SubscribeResource(ctx, uri)
		}
		st.active = err == nil
	}
	m.subMu.Lock()
	defer m.subMu.Unlock()
	st.pending--
	if err != nil {
		m.forgetIfIdle(uri, st)
		return fmt.Errorf("subscribing to %s: %w", uri, err)
	}
	st.sessions[session] = true
	if m.sessSubs[session] == nil {
		m.sessSubs[session] = map[string]bool{}
	}
	m.sessSubs[session][uri] = true
	return nil
}

// unsubscribe removes session's subscription to uri, if any, and
// unsubscribes the source when it was the last.
func (m *MCPServer) unsubscribe(ctx context.Context, session, uri string) {
	m.subMu.Lock()
	st := m.subs[uri]
	if st == nil || !st.sessions[session] {
		m.subMu.Unlock()
		return
	}
	delete(st.sessions, session)
	if set := m.sessSubs[session]; set != nil {
		delete(set, uri)
		if len(set) == 0 {
			delete(m.sessSubs, session)
		}
	}
	st.pending++
	m.subMu.Unlock()
	m.release(ctx, uri, st)
}

// release unsubscribes the source of uri if no session is subscribed any
// more, and drops the entry. The caller counted itself in st.pending.
func (m *MCPServer) release(ctx context.Context, uri string, st *subscription) {
	st.io.Lock()
	defer st.io.Unlock()
	m.subMu.Lock()
	idle := len(st.sessions) == 0
	m.subMu.Unlock()
	if idle && st.active {
		if rs, ok := st.src.(ResourceSubscriber); ok {
			if err := rs.UnsubscribeResource(ctx, uri); err != nil {
				m.log.Warn("unsubscribing from a resource failed", "uri", uri, "err", err)
			}
		}
		st.active = false
	}
	m.subMu.Lock()
	st.pending--
	m.forgetIfIdle(uri, st)
	m.subMu.Unlock()
}

// forgetIfIdle drops an entry no one uses. Callers hold subMu (and st.io,
// so active is stable).
func (m *MCPServer) forgetIfIdle(uri string, st *subscription) {
	if st.pending == 0 && len(st.sessions) == 0 && !st.active && m.subs[uri] == st {
		delete(m.subs, uri)
	}
}

// dropSubscriptions ends every subscription of a session that ended, in
// the background (sources are unsubscribed within subscriptionTimeout).
func (m *MCPServer) dropSubscriptions(session string) {
	m.subMu.Lock()
	set := m.sessSubs[session]
	delete(m.sessSubs, session)
	type drop struct {
		uri string
		st  *subscription
	}
	var drops []drop
	for uri := range set {
		if st := m.subs[uri]; st != nil && st.sessions[session] {
			delete(st.sessions, session)
			st.pending++
			drops = append(drops, drop{uri, st})
		}
	}
	m.subMu.Unlock()
	if len(drops) == 0 {
		return
	}
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), subscriptionTimeout)
		defer cancel()
		for _, d := range drops {
			m.release(ctx, d.uri, d.st)
		}
	}()
}

// resourceUpdated passes a source's update of uri to the sessions
// subscribed to it. It never blocks (sources call it from their read
// loops).
func (m *MCPServer) resourceUpdated(uri string, params map[string]any) {
	m.subMu.Lock()
	var sessions []string
	if st := m.subs[uri]; st != nil {
		for s := range st.sessions {
			sessions = append(sessions, s)
		}
	}
	m.subMu.Unlock()
	if len(sessions) == 0 {
		return
	}
	out := make(map[string]any, len(params)+1)
	for k, v := range params {
		out[k] = v
	}
	out["uri"] = uri
	for _, s := range sessions {
		err := m.srv.SendNotificationToSpecificClient(s, string(mcp.MethodNotificationResourceUpdated), out)
		if errors.Is(err, server.ErrSessionNotFound) {
			m.dropSubscriptions(s) // it ended without our hook seeing it
		} else if err != nil {
			m.log.Debug("resource update not delivered", "uri", uri, "session", s, "err", err)
		}
	}
}

// Completions.

// completer routes completion/complete to the source that serves the
// prompt or resource template; sources that do not complete answer with
// no values.
type completer struct{ m *MCPServer }

func (c completer) CompletePromptArgument(ctx context.Context, name string, arg mcp.CompleteArgument, cc mcp.CompleteContext) (*mcp.Completion, error) {
	c.m.srcMu.Lock()
	src, ok := c.m.promptOwner[name]
	c.m.srcMu.Unlock()
	if !ok {
		return nil, fmt.Errorf("prompt %q not found", name)
	}
	pc, ok := src.(PromptCompleter)
	if !ok {
		return &mcp.Completion{Values: []string{}}, nil
	}
	res, err := pc.CompletePrompt(ctx, name, CompletionRequest{Argument: arg.Name, Value: arg.Value, Context: cc.Arguments})
	return mcpCompletion(res), err
}

func (c completer) CompleteResourceArgument(ctx context.Context, uri string, arg mcp.CompleteArgument, cc mcp.CompleteContext) (*mcp.Completion, error) {
	src, ok := c.m.resourceSourceFor(uri)
	if !ok {
		return nil, fmt.Errorf("resource template %q not found", uri)
	}
	rc, ok := src.(ResourceCompleter)
	if !ok {
		return &mcp.Completion{Values: []string{}}, nil
	}
	res, err := rc.CompleteResource(ctx, uri, CompletionRequest{Argument: arg.Name, Value: arg.Value, Context: cc.Arguments})
	return mcpCompletion(res), err
}

func mcpCompletion(c *Completion) *mcp.Completion {
	if c == nil {
		return &mcp.Completion{Values: []string{}}
	}
	out := &mcp.Completion{Values: c.Values, Total: c.Total, HasMore: c.HasMore}
	if out.Values == nil {
		out.Values = []string{}
	}
	return out
}
