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
	m := &MCPServer{opts: opts, log: log}

	hooks := &server.Hooks{}
	hooks.AddOnError(m.recordUnknownTool)
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
	if opts.Artifacts != nil {
		srvOpts = append(srvOpts, server.WithResourceCapabilities(false, false))
	}
	m.srv = server.NewMCPServer(opts.Name, opts.Version, srvOpts...)
	if opts.Artifacts != nil {
		m.srv.AddResourceTemplate(mcp.NewResourceTemplate(ArtifactURIPrefix+"{run}/{file}", "artifact",
			mcp.WithTemplateDescription("A tool output too large to return, saved whole in the run archive")),
			m.readArtifact)
	}
	m.syncTools()
	opts.Catalog.OnChange(m.scheduleSync)
	return m
}

// Server returns the underlying mcp-go server, for transports and for
// adapters that add resources or prompts.
func (m *MCPServer) Server() *server.MCPServer { return m.srv }

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
	if req.Params.Meta != nil && req.Params.Meta.ProgressToken != nil {
		var stop func()
		ctx, stop = WithProgress(ctx, &mcpProgress{ctx: ctx, srv: m.srv, token: req.Params.Meta.ProgressToken})
		defer stop()
	}
	res := m.opts.Pipeline.Call(ctx, call)
	return ToMCPResult(call.ID, res), nil
}

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
}

func (p *mcpProgress) Report(pr Progress) {
	params := map[string]any{"progressToken": p.token, "progress": pr.Progress}
	if pr.Total > 0 {
		params["total"] = pr.Total
	}
	if pr.Message != "" {
		params["message"] = pr.Message
	}
	_ = p.srv.SendNotificationToClient(p.ctx, string(mcp.MethodNotificationProgress), params)
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
	if len(res.Display) > 0 {
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
	if len(wire.Content) > 0 && !bytes.Equal(wire.Content, []byte("null")) {
		parts, err := unmarshalParts(wire.Content)
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
		case MetaBrief, MetaCallID:
			// derived from the display, and the upstream's own call ID
		default:
			if res.Meta == nil {
				res.Meta = map[string]json.RawMessage{}
			}
			res.Meta[k] = v
		}
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
