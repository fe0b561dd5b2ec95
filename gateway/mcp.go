package gateway

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/jsonscan"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// The mirror of the contract onto MCP, and the one place where mcp-go's
// types meet the gateway's:
//
//	mcp.go            the server, tools/list from the catalog, tools/call through the pipeline
//	mcp_result.go     Result <-> tools/call result (ToMCPResult, ResultFromMCP)
//	mcp_sources.go    prompts, resources (artifacts included), subscriptions, completions
//	mcp_client.go     the per-request Client handed to toolsets (progress, logs, relayed requests)
//	mcp_transport.go  stdio and streamable HTTP with its checks
//
// Tool name, description and schema go out as name, description and
// inputSchema, the schema bytes passed through; permission hints become
// annotations (readOnlyHint, destructiveHint, idempotentHint,
// openWorldHint) unless the tool carries an upstream's own.

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
	// View, if set, is the profile this server serves by default (stdio's
	// --profile); over HTTP, [HTTPOptions.Profiles] serve others on their
	// own paths. Tools outside the view are not listed and not found.
	View View
	// CallerView, if set, is the view a caller is confined to whatever
	// endpoint it comes through (the profile of its identity, from
	// policy.identities), nil for none. It narrows the endpoint's view.
	CallerView func(call *Call) View
	// ToolMeta, if set, adds _meta members to a tool in tools/list (for
	// example its permission decision). It is called with a context
	// carrying no call when the list is built, and again per tools/list
	// with the caller's session (as a [Call] in the context) for sessions
	// SessionMeta says differ. The mirror only reads the map, and may
	// keep it as a tool's _meta: ToolMeta may return one map for many
	// tools, and must not change a map it returned.
	ToolMeta func(ctx context.Context, t *Tool) map[string]any
	// SessionMeta, if set, says whether a session's ToolMeta may differ
	// from the one built with no caller (a skill granted it capabilities,
	// say); its lists then get their _meta computed for it.
	SessionMeta func(session string) bool
	// OnSessionEnd, if set, is called with the ID of each client session
	// that ends (state tied to a session, such as skill grants, can go).
	OnSessionEnd func(sessionID string)
	// ListDebounce is how long catalog changes settle before clients get
	// one tools/list_changed. If zero, 50ms.
	ListDebounce time.Duration
	// MaxTasks bounds the tasks (calls made as MCP tasks) running at once;
	// one more is refused. If zero, [DefaultMaxTasks].
	MaxTasks int
	// MaxStdioMessageBytes bounds one message read over stdio (a line): a
	// longer one is skipped as it is read, never held, and answered with
	// an Invalid Request error; the session goes on. If zero,
	// [DefaultMaxBodyBytes], the HTTP body limit's default.
	MaxStdioMessageBytes int64
	// Logger; nil discards.
	Logger *slog.Logger
}

// MCPServer serves the catalog over MCP through mcp-go. Create it with
// [NewMCPServer], then serve it with [MCPServer.ServeStdio] or
// [MCPServer.HTTPHandler].
type MCPServer struct {
	opts  MCPOptions
	log   *slog.Logger
	srv   *server.MCPServer
	tasks *taskTable

	syncMu   sync.Mutex // guards debounce
	debounce *time.Timer

	// installMu serializes installing a listing into mcp-go (tools,
	// prompts, resources): it is never held while a source, the catalog or
	// a listener is called. Each sync takes a generation number before it
	// reads its sources; a sync older than the installed one is dropped.
	installMu sync.Mutex
	tools     listSync // announced by the catalog (Catalog.Announcements)
	prompts   listSync
	resources listSync

	modernTasks *modernTasks // the 2026-07-28 tasks extension (mcp_taskext.go)
	listing     atomic.Pointer[toolListing]
	// unserved are the catalog's tools left out of tools/list because
	// mcp-go cannot serve them ([CheckMCPTool]), by name, with why: as of
	// the last installed sync.
	unserved atomic.Pointer[map[string]string]

	sessMu   sync.Mutex
	sessions []clientSession // registered, oldest first

	srcMu           sync.Mutex // guards the sources and owner maps; never held while calling out
	promptSources   []PromptSource
	resourceSources []ResourceSource
	promptOwner     map[string]PromptSource   // served prompt name -> its source
	promptTool      map[string]string         // served prompt name -> the tool it follows (Prompt.Tool)
	resourceOwner   map[string]ResourceSource // resource URI -> its source
	templateOwners  []templateOwner           // in the order served

	subMu    sync.Mutex
	subs     map[string]*subscription   // by resource URI
	sessSubs map[string]map[string]bool // session ID -> URIs it subscribed to
	// subscribing counts, per session, the subscribes with a source now,
	// and notes that the session ended meanwhile (dropSubscriptions).
	subscribing map[string]*subscribing
	// listens are the 2026-07-28 subscriptions/listen streams with
	// resource subscriptions, by the key their subscriptions are held
	// under in subs (listenKey).
	listens   map[string]listenStream
	listenSeq atomic.Uint64

	guard atomic.Pointer[httpGuard] // of the last HTTPHandler, for HTTPStats
}

// NewMCPServer mirrors the catalog onto an mcp-go server and keeps it in
// step with the catalog: every change is debounced and sent to clients as
// one tools/list_changed, and only when the tool list really changed.
// options is copied; Catalog and Pipeline are required (it panics without
// them, or with nil options).
func NewMCPServer(options *MCPOptions) *MCPServer {
	var opts MCPOptions
	if options != nil {
		opts = *options
	}
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
	m := &MCPServer{opts: opts, log: log, tasks: newTaskTable(), subs: map[string]*subscription{}, sessSubs: map[string]map[string]bool{}, subscribing: map[string]*subscribing{}, listens: map[string]listenStream{}}

	m.unserved.Store(&map[string]string{})

	hooks := &server.Hooks{}
	hooks.AddOnError(m.recordUnknownTool)
	hooks.AddOnRequestInitialization(m.refuseUnoffered)
	hooks.AddOnRequestInitialization(m.interceptSubscription)
	hooks.AddOnRequestInitialization(m.checkTaskRequest)
	hooks.AddBeforeCallTool(m.tasks.before)
	hooks.AddAfterCallTool(m.tasks.after)
	hooks.AddOnError(m.tasks.failed)
	hooks.AddAfterInitialize(func(_ context.Context, _ any, _ *mcp.InitializeRequest, res *mcp.InitializeResult) {
		// The tasks extension is 2026-07-28's (server/discover); a
		// 2025-era client has the tasks capability of its own era.
		res.Capabilities.Extensions = nil
	})
	hooks.AddOnRegisterSession(func(_ context.Context, s server.ClientSession) {
		id := s.SessionID()
		m.sessMu.Lock()
		m.sessions = append(m.sessions, clientSession{ClientSession: s, id: id})
		m.sessMu.Unlock()
	})
	hooks.AddOnUnregisterSession(func(_ context.Context, s server.ClientSession) {
		id := s.SessionID()
		m.sessMu.Lock()
		wasAskable := false
		if i := m.sessionIndex(id); i >= 0 {
			wasAskable = m.sessions[i].askable
			m.sessions = slices.Delete(m.sessions, i, i+1)
		}
		m.sessMu.Unlock()
		if wasAskable && declaresRoots(s) {
			go opts.Catalog.RootsChanged() // another client's roots, or none, from now on
		}
		m.dropSubscriptions(id)
		if opts.OnSessionEnd != nil {
			opts.OnSessionEnd(id)
		}
	})
	srvOpts := []server.ServerOption{
		server.WithToolCapabilities(true),
		server.WithLogging(),
		server.WithRecovery(),
		server.WithResourceRecovery(),
		server.WithHooks(hooks),
	}
	srvOpts = append(srvOpts, m.taskServerOptions()...)
	m.modernTasks = &modernTasks{m: m}
	srvOpts = append(srvOpts,
		server.WithRequestInterceptor(m.intercept),
		server.WithExtensions(map[string]any{TasksExtension: map[string]any{}}),
	)
	if opts.Instructions != "" {
		srvOpts = append(srvOpts, server.WithInstructions(opts.Instructions))
	}
	// Always filtered: a request's view (its profile) comes with the
	// request, so any request may need it.
	srvOpts = append(srvOpts, server.WithToolFilter(m.filterTools), server.WithToolCallFilter(m.admitsCall),
		// A call's arguments are passed on as the client sent them
		// (rawArguments); mcp-go need not decode them into a map too.
		server.WithRawToolArguments(),
		// A call of a tool it has not got (or the view hides) is told
		// the nearest ones it may call (mcp-go copy item 88).
		server.WithToolNotFound(m.suggestTool))
	srvOpts = append(srvOpts,
		server.WithResourceCapabilities(true, true),
		server.WithPromptCapabilities(true),
		server.WithPromptFilter(m.filterPrompts), // at prompts/get too
		// A prompts/get of a prompt it has not got (or may not get) is
		// told the nearest it may get (mcp-go copy item 92).
		server.WithPromptNotFound(m.suggestPrompt),
		server.WithResourceFilter(m.filterResources),         // at resources/read too (mcp-go copy item 68)
		server.WithResourceTemplateFilter(m.filterTemplates), // idem
		server.WithCompletions(),
		server.WithPromptCompletionProvider(completer{m}),
		server.WithResourceCompletionProvider(completer{m}),
	)
	m.srv = server.NewMCPServer(opts.Name, opts.Version, srvOpts...)
	// A client whose roots changed says so; the toolsets that passed its
	// roots on (upstreams with forward_roots) tell theirs. Off mcp-go's
	// read loop, which runs notification handlers.
	m.srv.AddNotificationHandler(mcp.MethodNotificationRootsListChanged, func(context.Context, mcp.JSONRPCNotification) {
		go opts.Catalog.RootsChanged()
	})
	// A client over stdio can be asked once it said it is initialized; one
	// over streamable HTTP once it opens its GET stream (the guard's
	// onListen).
	m.srv.AddNotificationHandler(string(mcp.MethodNotificationInitialized), func(ctx context.Context, _ mcp.JSONRPCNotification) {
		if s := server.ClientSessionFromContext(ctx); s != nil && !overHTTP(s) {
			m.becameAskable(s.SessionID())
		}
	})
	m.syncTools()
	m.syncResources()
	opts.Catalog.OnChange(m.scheduleSync)
	return m
}

// ClientRoot is a root a client declared (a file:// URI it works in).
type ClientRoot struct {
	URI  string
	Name string
}

// ErrNoClient is returned by [MCPServer.ClientRoots] when no client is
// connected.
var ErrNoClient = errors.New("no client session")

// ClientRoots asks the most recently connected client that is still
// connected, declared the roots capability and can be asked now for its
// roots (roots/list). With stdio there is one client; over HTTP, the latest
// such session answers, so operators only forward roots upstream where
// that is what they want (upstreams' forward_roots).
//
// A client that did not declare the capability is never asked (MCP: a
// client that supports roots declares it), nor a 2025-11-25 client over
// streamable HTTP that has not opened its GET stream: this request comes
// outside any request of the client's, and only that stream could carry
// it. Asked anyway, either would have kept the upstream waiting to its
// deadline. With no such client the error wraps [ErrClientCannot] at
// once. Upstreams are told the roots changed when the client that would
// be asked does ([MCPServer.becameAskable], and a session's end).
func (m *MCPServer) ClientRoots(ctx context.Context) ([]ClientRoot, error) {
	m.sessMu.Lock()
	sessions := slices.Clone(m.sessions) // their methods are called outside the lock
	m.sessMu.Unlock()
	var s server.ClientSession
	connected, declared := false, false
	for _, c := range slices.Backward(sessions) {
		if _, ok := c.ClientSession.(server.SessionWithRoots); !ok || !c.Initialized() {
			continue
		}
		connected = true
		if !declaresRoots(c.ClientSession) {
			continue
		}
		declared = true
		if c.askable {
			s = c.ClientSession
			break
		}
	}
	switch {
	case s == nil && declared:
		return nil, fmt.Errorf("no client that declared the roots capability can be asked yet (over streamable HTTP a client is asked on its GET stream, and none has opened one): %w", ErrClientCannot)
	case s == nil && connected:
		return nil, fmt.Errorf("no connected client declared the roots capability: %w", ErrClientCannot)
	case s == nil:
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

// clientSession is a registered session and whether it can be sent a
// request of the server's own, outside any request of its client's: over
// stdio (or in process) once its client sent initialized, over streamable
// HTTP once its client opened the GET stream, where such a request goes
// ([MCPServer.becameAskable]). Type assertions take the embedded
// session: the struct itself has only ClientSession's methods.
type clientSession struct {
	server.ClientSession
	id      string // its SessionID, read once (not called under m.sessMu)
	askable bool
}

// sessionIndex is the index in m.sessions of the session id, or -1.
// Called with m.sessMu held.
func (m *MCPServer) sessionIndex(id string) int {
	return slices.IndexFunc(m.sessions, func(c clientSession) bool { return c.id == id })
}

// declaresRoots says whether the client of s declared the roots
// capability when it initialized.
func declaresRoots(s server.ClientSession) bool {
	ci, ok := s.(server.SessionWithClientInfo)
	return ok && ci.GetClientCapabilities().Roots != nil
}

// overHTTP says whether s is a session of the streamable HTTP transport.
func overHTTP(s server.ClientSession) bool {
	_, ok := s.(server.SessionWithStreamableHTTPConfig)
	return ok
}

// becameAskable notes that the registered session id can now be sent a
// request of the server's own (see [clientSession]) and, if its client declared
// roots, tells the catalog's followers that the roots to forward changed:
// it is now the client [MCPServer.ClientRoots] asks. An upstream that asked
// before any client could answer (at its own start, say) asks again.
func (m *MCPServer) becameAskable(id string) {
	m.sessMu.Lock()
	var s server.ClientSession
	if i := m.sessionIndex(id); i >= 0 && !m.sessions[i].askable {
		m.sessions[i].askable = true
		s = m.sessions[i].ClientSession
	}
	m.sessMu.Unlock()
	if s != nil && declaresRoots(s) {
		go m.opts.Catalog.RootsChanged()
	}
}

// Resync re-reads the catalog and the tools' metadata (ToolMeta, such as
// the policy's decisions) for changes the catalog does not announce (a
// reloaded policy or profile), and tells clients that their lists may
// have changed. The tools each caller lists follow its view and the
// policy's rules for it, which the served listing's digest does not cover
// (a profile that swaps one upstream's tools for another's leaves it the
// same), so clients are sent tools/list_changed whether or not the served
// listing changed; likewise prompts/list_changed and
// resources/list_changed for what they reach of the upstreams' prompts
// and resources ([MCPServer.tellReachChanged]). The announcement makes the
// sync tell clients, each list once: told here as well, every reload sent
// prompts/list_changed and resources/list_changed twice.
func (m *MCPServer) Resync() {
	m.tools.announce()
	m.scheduleSync()
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
// from what clients have or a toolset announced a change (listSync),
// which sends clients one tools/list_changed.
// Overlapping syncs (two debounce timers, say) install in the order they
// read the catalog: a sync older than the installed one is dropped.
func (m *MCPServer) syncTools() {
	gen := m.tools.begin(m.opts.Catalog.Announcements())
	entries := m.opts.Catalog.Entries()
	tools := make([]server.ServerTool, 0, len(entries))
	l := &toolListing{tools: make([]encodedTool, 0, len(entries))}
	h := sha256.New()
	unserved := map[string]string{}
	handler := m.handleCall // one method value, not one per tool
	for _, e := range entries {
		t := m.mcpTool(e.Tool)
		// mcp-go panics on a tool it refuses (SetTools, here on the
		// debounce timer's goroutine: the whole process would die); one
		// toolset's bad tool must not take the others down.
		if err := checkMCPTool(&t); err != nil {
			unserved[e.Tool.Name] = err.Error()
			continue
		}
		// Valid, compact JSON as it is (mcp-go patch item 9): no second
		// pass of encoding/json over it.
		b, err := t.MarshalJSON()
		if err != nil {
			m.log.Error("tool does not encode; not served", "tool", e.Tool.Name, "err", err)
			continue
		}
		h.Write(b)
		tools = append(tools, server.ServerTool{Tool: t, Handler: handler})
		l.tools = append(l.tools, encodedTool{name: t.Name, json: b})
		l.size += len(b) + 1
		if e.Tool.TaskSupport != "" {
			l.taskNames = append(l.taskNames, strconv.AppendQuote(nil, t.Name))
		}
	}
	slices.SortFunc(l.tools, func(a, b encodedTool) int { return strings.Compare(a.name, b.name) })
	var digest [32]byte
	copy(digest[:], h.Sum(nil))

	m.installMu.Lock()
	current, tell := m.tools.install(gen, digest)
	if current && tell {
		m.srv.SetTools(tools...)
		m.listing.Store(l)
	}
	// Published after the listing it goes with: whoever sees a tool
	// reported unserved (Unserved) sees the rest of its toolset listed.
	var prev map[string]string
	if current {
		if p := m.unserved.Swap(&unserved); p != nil {
			prev = *p
		}
	}
	m.installMu.Unlock()
	if current && tell {
		// What callers reach of the upstreams' prompts and resources
		// follows the tools ([reach]): a change of them may change it.
		m.tellReachChanged()
	}
	// Logged once per tool and reason, outside installMu.
	for name, why := range unserved {
		if current && prev[name] != why {
			m.log.Warn("tool not served over MCP", "tool", name, "reason", why)
		}
	}
}

// tellReachChanged tells clients that the prompts and resources lists may
// have changed: each caller's follow what it reaches ([reach]), which a
// reload or an upstream's tools change without the served listing
// changing. mcp-go sends them to every session (and 2026-07-28 listen
// stream) as it does for a listing it installs.
func (m *MCPServer) tellReachChanged() {
	m.srcMu.Lock()
	prompts, resources := len(m.promptSources) > 0, len(m.resourceSources) > 0
	m.srcMu.Unlock()
	if prompts {
		m.srv.SendNotificationToAllClients(mcp.MethodNotificationPromptsListChanged, nil)
	}
	if resources {
		m.srv.SendNotificationToAllClients(mcp.MethodNotificationResourcesListChanged, nil)
	}
}

// checkMCPTool says why mcp-go would refuse to serve t, or nil: an input
// schema whose x-mcp-header annotations break SEP-2243's rules (a name
// that is no header token, one on an object, a duplicate).
func checkMCPTool(t *mcp.Tool) error {
	if err := mcp.ValidateParamHeaderAnnotations(t); err != nil {
		return fmt.Errorf("invalid x-mcp-header annotation: %w", err)
	}
	return nil
}

// CheckMCPTool says why the MCP mirror cannot serve t (it leaves it out
// of tools/list, and a call of it is refused with the reason), or nil if
// it can; for listings such as `toolgate tools`.
func CheckMCPTool(t *Tool) error {
	return checkMCPTool(&mcp.Tool{Name: t.Name, RawInputSchema: t.InputSchema})
}

// Unserved returns the catalog's tools the MCP mirror leaves out because
// mcp-go cannot serve them ([CheckMCPTool]), by name, with why.
func (m *MCPServer) Unserved() map[string]string {
	if p := m.unserved.Load(); p != nil {
		return maps.Clone(*p)
	}
	return map[string]string{}
}

// whyUnserved is why the MCP mirror leaves the tool name out, or "".
func (m *MCPServer) whyUnserved(name string) string {
	if p := m.unserved.Load(); p != nil {
		return (*p)[name]
	}
	return ""
}

// intercept answers, before mcp-go's dispatch (the request interceptor
// of toolgate's mcp-go patch), the requests toolgate serves itself:
// tools/list from its encoded tools, and the tasks extension's.
func (m *MCPServer) intercept(ctx context.Context, id any, method mcp.MCPMethod, message json.RawMessage) (any, error, bool) {
	switch method {
	case mcp.MethodToolsList:
		return m.listTools(ctx, message)
	case mcp.MethodSubscriptionsListen:
		// Not answered here: subscribed before mcp-go acknowledges, in the
		// request's own context, which ends with the stream.
		if err := m.listen(ctx, id, message); err != nil {
			return nil, err, true
		}
		return nil, nil, false
	}
	return m.modernTasks.intercept(ctx, id, method, message)
}

// toolListing is the installed tools, encoded once, in the order mcp-go
// lists them (by name), for [MCPServer.listTools].
type toolListing struct {
	tools     []encodedTool
	size      int      // bytes of the encodings and their separators
	taskNames [][]byte // the JSON strings of the names of the tools that support tasks
}

// mayCallTaskTool reports whether a request could call a tool that
// supports tasks: whether it holds one of their names as a JSON string.
// A cheap test that spares the calls of every other tool the decoding of
// their name (mcp_taskext.go); with many such tools it just says yes.
func (l *toolListing) mayCallTaskTool(message []byte) bool {
	if len(l.taskNames) > 32 || bytes.Contains(message, []byte(`\u`)) || bytes.Contains(message, []byte(`\/`)) { // an escape may spell a name
		return true
	}
	for _, n := range l.taskNames {
		if bytes.Contains(message, n) {
			return true
		}
	}
	return false
}

type encodedTool struct {
	name string
	json []byte
}

// toolsListResult is a tools/list answer made of encoded tools; as mcp-go's
// own (mcp.ListToolsResult), it takes 2026-07-28's result decorations.
type toolsListResult struct {
	mcp.PaginatedResult
	Tools json.RawMessage `json:"tools"`
}

// AppendJSON implements mcp.PreEncoded (toolgate's mcp-go patch): the
// transports write the listing as it is, instead of encoding/json
// checking and copying its megabytes again. The bytes are those
// encoding/json makes of the struct: the result's other members (what
// mcp-go adds for 2026-07-28 callers among them), then tools, last.
func (r *toolsListResult) AppendJSON(dst []byte) ([]byte, error) {
	head, err := json.Marshal(&r.PaginatedResult)
	if err != nil {
		return nil, err
	}
	dst = slices.Grow(dst, len(head)+len(r.Tools)+10)
	dst = append(dst, head[:len(head)-1]...)
	if len(head) > 2 {
		dst = append(dst, ',')
	}
	dst = append(dst, `"tools":`...)
	dst = append(dst, r.Tools...)
	return append(dst, '}'), nil
}

// listTools answers tools/list from the encodings made when the tools were
// installed, instead of mcp-go encoding every tool of the caller's view on
// every request: the tools the caller's view lists, in mcp-go's order and
// form (the transcripts in testdata/transcripts compare the two). A page
// (a cursor) and lists whose tools' _meta depend on the session are left
// to mcp-go.
func (m *MCPServer) listTools(ctx context.Context, message json.RawMessage) (any, error, bool) {
	l := m.listing.Load()
	if l == nil || mayHold(message, `"cursor"`) {
		return nil, nil, false
	}
	f := m.listFilter(ctx)
	if f.perSession {
		return nil, nil, false
	}
	buf := make([]byte, 1, l.size+2)
	buf[0] = '['
	for _, t := range l.tools {
		if !f.lists(t.name) {
			continue
		}
		if len(buf) > 1 {
			buf = append(buf, ',')
		}
		buf = append(buf, t.json...)
	}
	buf = append(buf, ']')
	return &toolsListResult{Tools: buf}, nil, true
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
		Execution: mcpExecution(t),
	}
	if len(t.Annotations) > 0 {
		// An upstream's annotations go out as it sent them (the five
		// MCP-defined members; mcp-go's type has no room for others).
		a, err := DecodeToolAnnotations(t.Annotations)
		if err != nil {
			m.log.Warn("tool annotations do not decode; sent without them", "tool", t.Name, "err", err)
		}
		mt.Annotations = a
	}
	if len(t.Icons) > 0 {
		// Decoded apart: &mt.Icons would put every tool's mt on the heap.
		var icons []mcp.Icon
		if err := json.Unmarshal(t.Icons, &icons); err != nil {
			m.log.Warn("tool icons do not decode; sent without them", "tool", t.Name, "err", err)
		}
		mt.Icons = icons
	}
	var extra map[string]any
	if m.opts.ToolMeta != nil {
		extra = m.opts.ToolMeta(context.Background(), t)
	}
	var meta map[string]any
	if len(t.Meta) == 0 && len(t.Permissions.Capabilities) == 0 {
		meta = extra // ToolMeta's own map, only read: no copy per tool
	} else {
		meta = make(map[string]any, len(t.Meta)+1+len(extra))
		for k, v := range t.Meta {
			meta[k] = v
		}
		if len(t.Permissions.Capabilities) > 0 {
			meta["toolgate/capabilities"] = t.Permissions.Capabilities
		}
		for k, v := range extra {
			meta[k] = v
		}
	}
	if len(meta) > 0 {
		mt.Meta = &mcp.Meta{AdditionalFields: meta}
	}
	return mt
}

// DecisionMeta is a tool's _meta member for the policy's decision, as
// toolgate serve lists each tool ([MCPOptions.ToolMeta]):
// {"toolgate/decision": {"allow", "layer", "rule"}}. The map is shared by
// every tool of the same decision and must only be read: a catalog of
// 2,000 tools has a handful of decisions, and two new maps per tool were a
// sixth of the bytes the mirror allocated to install them at start-up,
// where fresh memory is paid in page faults (docs/benchmarks-journal.md).
func DecisionMeta(d Decision) map[string]any { return decisionMetas.get(d) }

// decisionMetas are DecisionMeta's maps. A decision's rule names a
// configured glob or capability, so the set is the configuration's; it
// starts over past maxDecisionMetas, should reloads bring many.
var decisionMetas decisionMetaCache

const maxDecisionMetas = 1024

type decisionMetaCache struct {
	mu sync.Mutex
	m  map[decisionMetaKey]map[string]any
}

type decisionMetaKey struct {
	allow       bool
	layer, rule string
}

func (c *decisionMetaCache) get(d Decision) map[string]any {
	k := decisionMetaKey{d.Allow, d.Layer, d.Rule}
	c.mu.Lock()
	defer c.mu.Unlock()
	if v, ok := c.m[k]; ok {
		return v
	}
	if c.m == nil || len(c.m) >= maxDecisionMetas {
		c.m = map[decisionMetaKey]map[string]any{}
	}
	v := map[string]any{"toolgate/decision": map[string]any{"allow": d.Allow, "layer": d.Layer, "rule": d.Rule}}
	c.m[k] = v
	return v
}

// annotationMembers are the JSON names of mcp.ToolAnnotation's fields.
var annotationMembers = []string{"title", "readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"}

// DecodeToolAnnotations decodes MCP tool annotations (JSON) as
// json.Unmarshal into an mcp.ToolAnnotation does. The common form, plain
// title and hints true, false or null, is read in one pass with jsonscan
// (an upstream's 2,000 tools are decoded twice at start-up: for the
// policy's hints and for the listing); any other is left to
// json.Unmarshal, which also words the error. On an error the
// annotations are empty.
func DecodeToolAnnotations(b []byte) (mcp.ToolAnnotation, error) {
	var a mcp.ToolAnnotation
	ok := jsonscan.Fields(b, annotationMembers, func(i, start, end int) bool {
		v := b[start:end]
		if i == 0 {
			if string(v) == "null" {
				return true
			}
			title, plain := jsonscan.PlainString(v)
			a.Title = title
			return plain
		}
		var hint *bool
		switch string(v) {
		case "true":
			hint = Bool(true)
		case "false":
			hint = Bool(false)
		case "null":
		default:
			return false
		}
		switch i {
		case 1:
			a.ReadOnlyHint = hint
		case 2:
			a.DestructiveHint = hint
		case 3:
			a.IdempotentHint = hint
		default:
			a.OpenWorldHint = hint
		}
		return true
	})
	if ok {
		return a, nil
	}
	a = mcp.ToolAnnotation{}
	if err := json.Unmarshal(b, &a); err != nil {
		return mcp.ToolAnnotation{}, err
	}
	return a, nil
}

// filterTools is tools/list's filter (and, through [MCPServer.admitsCall],
// mcp-go's check at call time): the request's view (what it admits, and
// for a [ListingView] what it lists), then the policy's ToolFilter. The
// filter and the tools' _meta are decided for the caller: the context they
// get carries a [Call] with the caller's session, so that session-scoped
// policy (skill grants) counts.
func (m *MCPServer) filterTools(ctx context.Context, tools []mcp.Tool) []mcp.Tool {
	f := m.listFilter(ctx)
	if f.all && !f.perSession {
		return tools
	}
	out := tools[:0:0]
	for _, mt := range tools {
		t, ok := f.keeps(mt.Name)
		if !ok {
			continue
		}
		if t != nil {
			mt = m.withSessionMeta(f.cctx, mt, t)
		}
		out = append(out, mt)
	}
	return out
}

// admitsCall is mcp-go's check at call time (WithToolCallFilter): whether
// filterTools would keep the tool of that name, asked without a copy of
// the tool in a slice. The caller it works out for the check (who, and
// through which view) is the call's: the context it returns carries them
// to [MCPServer.handleCall] (mcp-go copy item 39), which would otherwise
// work out the same again.
func (m *MCPServer) admitsCall(ctx context.Context, name string) (context.Context, bool) {
	a := &callContext{Context: ctx, call: m.caller(ctx)}
	_, ok := m.filterFor(ctx, a.call, a).keeps(name)
	return a, ok
}

// admitted is the Call admitsCall made for the tools/call of ctx: ctx is
// the context admitsCall returned (mcp-go hands it to the tool's handler
// as it is), and the Call has no name yet. It is taken once: its taker
// names it, so a handler run again in the same context (a round of
// mcp-go's own retries) gets nil, and a Call of its own.
func admitted(ctx context.Context) *Call {
	if a, ok := ctx.(*callContext); ok && a.call.Name == "" {
		return a.call
	}
	return nil
}

// listFilter is what the caller of ctx is listed ([toolFilter]).
func (m *MCPServer) listFilter(ctx context.Context) toolFilter {
	return m.filterFor(ctx, m.caller(ctx), nil)
}

// caller is a new Call of the caller of ctx: who, and through which view
// ([MCPServer.viewFor]).
func (m *MCPServer) caller(ctx context.Context) *Call {
	c := withCaller(ctx, &Call{})
	c.View = m.viewFor(ctx, c)
	return c
}

// filterFor is what who ([MCPServer.caller] of ctx) is listed. cctx, if
// not nil, is a context of ctx that carries who (made here when the
// filter needs one).
func (m *MCPServer) filterFor(ctx context.Context, who *Call, cctx context.Context) toolFilter {
	v := who.View
	f := toolFilter{all: v == nil && m.opts.ToolFilter == nil, m: m, v: v}
	f.lv, _ = v.(ListingView)
	f.perSession = m.opts.ToolMeta != nil && m.opts.SessionMeta != nil && who.Session != "" && m.opts.SessionMeta(who.Session)
	if !f.all || f.perSession {
		if cctx == nil {
			cctx = withCall(ctx, who)
		}
		f.cctx = cctx
	}
	return f
}

// toolFilter is what a caller is listed ([MCPServer.listFilter]): f.lists
// reports whether a tool is (f.all: every tool), and perSession whether
// the tools' _meta is computed for the caller's session (with cctx). A
// value: no closure to allocate on every tools/call, which mcp-go filters
// too.
type toolFilter struct {
	all        bool
	perSession bool
	m          *MCPServer
	v          View
	lv         ListingView
	cctx       context.Context // the caller's, for ToolFilter and session _meta
}

// keeps is filterTools' decision for the tool of that name: whether it is
// in the caller's listing, and, when its _meta is the session's, the
// catalog's tool to compute it from (a tool the catalog no longer has is
// left out).
func (f toolFilter) keeps(name string) (*Tool, bool) {
	if !f.lists(name) {
		return nil, false
	}
	if !f.perSession {
		return nil, true
	}
	t, _, ok := f.m.opts.Catalog.Resolve(name)
	return t, ok
}

func (f toolFilter) lists(name string) bool {
	if f.all {
		return true
	}
	if f.v != nil && !f.v.Admits(name) || f.lv != nil && !f.lv.Lists(name) {
		return false
	}
	if f.m.opts.ToolFilter != nil {
		t, _, ok := f.m.opts.Catalog.Resolve(name)
		return ok && f.m.opts.ToolFilter(f.cctx, t)
	}
	return true
}

// withSessionMeta returns the tool with its ToolMeta members computed for
// the caller of ctx (the list's copy; the installed tool is not changed).
func (m *MCPServer) withSessionMeta(ctx context.Context, mt mcp.Tool, t *Tool) mcp.Tool {
	meta := map[string]any{}
	if mt.Meta != nil {
		for k, v := range mt.Meta.AdditionalFields {
			meta[k] = v
		}
	}
	for k, v := range m.opts.ToolMeta(ctx, t) {
		meta[k] = v
	}
	mt.Meta = &mcp.Meta{AdditionalFields: meta}
	return mt
}

type viewKey struct{}

// withView marks a request as made through a profile's endpoint.
func withView(ctx context.Context, v View) context.Context {
	return context.WithValue(ctx, viewKey{}, v)
}

// viewOf is the view a request was made through: its endpoint's profile,
// else the server's default view (nil: the whole catalog).
func (m *MCPServer) viewOf(ctx context.Context) View {
	if v, ok := ctx.Value(viewKey{}).(View); ok {
		return v
	}
	return m.opts.View
}

// viewFor is the view of a request by caller: its endpoint's, narrowed
// by the caller's own (CallerView).
func (m *MCPServer) viewFor(ctx context.Context, caller *Call) View {
	v := m.viewOf(ctx)
	if m.opts.CallerView == nil {
		return v
	}
	return Narrow(v, m.opts.CallerView(caller))
}

// Narrow is the view that admits what both a and b admit (either may be
// nil: the whole catalog); it lists as a does when a is a [ListingView].
func Narrow(a, b View) View {
	switch {
	case b == nil:
		return a
	case a == nil:
		return b
	}
	return narrowed{a, b}
}

type narrowed struct{ a, b View }

func (n narrowed) Name() string {
	switch a, b := n.a.Name(), n.b.Name(); {
	case a == "":
		return b
	case b == "":
		return a
	default:
		return a + "+" + b
	}
}
func (n narrowed) Admits(tool string) bool { return n.a.Admits(tool) && n.b.Admits(tool) }
func (n narrowed) Lists(tool string) bool {
	if lv, ok := n.a.(ListingView); ok {
		return lv.Lists(tool)
	}
	return true
}

// handleCall is the handler of every tool: it runs the call through the
// pipeline and maps the result. Every outcome, failures included, reaches
// the model as a tool result, except a request the pipeline refuses as a
// JSON-RPC error ([KindRequestError]: a forged round state, an upstream's
// protocol refusal of a 2026-07-28 round), which the client gets as such.
func (m *MCPServer) handleCall(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	call := m.mcpCall(ctx, req)
	if req.Params.Task != nil { // 2025-11-25 only: taskTable.before
		// A call made as a task runs on past this request's answer.
		tctx, task, stop := m.tasks.start(ctx, req.Params.Task)
		if tctx != nil {
			defer stop()
			ctx, call.Task = tctx, task
		}
	}
	res := m.runCall(ctx, req, call, nil)
	if call.Task != nil && res.Kind == KindCancelled {
		// mcp-go marks a task cancelled when its handler says so; a
		// result would complete it (shutdown, a person's queue closed).
		return nil, context.Canceled
	}
	return m.mcpAnswer(call.ID, res, call.Task != nil)
}

// mcpAnswer is the answer to a tools/call that ended with res: the tool
// result, or the JSON-RPC error of a refused request. asTask is for
// 2025-11-25 tasks, whose result mcp-go keeps.
func (m *MCPServer) mcpAnswer(callID string, res *Result, asTask bool) (*mcp.CallToolResult, error) {
	if res.Kind == KindRequestError && res.Refusal != nil {
		return nil, res.Refusal
	}
	out := ToMCPResult(callID, res)
	if asTask && out.RawStructuredContent != nil {
		// tasks/result copies StructuredContent only (mcp-go); the raw
		// bytes as that value encode unchanged.
		out.StructuredContent = out.RawStructuredContent
	}
	return out, nil
}

// mcpCall is the call the tools/call request req asks for, with its
// caller and view: admitsCall's Call when ctx is the context it returned
// (they are worked out already), else a new one.
func (m *MCPServer) mcpCall(ctx context.Context, req mcp.CallToolRequest) *Call {
	call := admitted(ctx)
	if call == nil {
		call = m.caller(ctx)
	}
	call.Name, call.Arguments = req.Params.Name, rawArguments(req)
	call.RequestState, call.InputResponses = req.Params.RequestState, rawResponses(req.Params.InputResponses)
	return call
}

// runCall runs call ([MCPServer.mcpCall]), made by the request req,
// through the pipeline with the request's trace and client. Progress goes
// to the request's progress token, or to progress when that is set (a
// task's calls report to their task, which outlives the request).
func (m *MCPServer) runCall(ctx context.Context, req mcp.CallToolRequest, call *Call, progress ProgressSink) *Result {
	if req.Params.Meta != nil && m.opts.Pipeline.Tracing() {
		ctx = withMetaTrace(ctx, req.Params.Meta.AdditionalFields)
	}
	reqCtx := ctx
	ctx, client := m.withClient(ctx, call, "")
	switch {
	case progress != nil:
		var stop func()
		ctx, stop = WithProgress(ctx, progress)
		defer stop()
	case req.Params.Meta != nil && req.Params.Meta.ProgressToken != nil:
		var stop func()
		ctx, stop = WithProgress(ctx, &mcpProgress{ctx: reqCtx, srv: m.srv, token: req.Params.Meta.ProgressToken, sent: &client.lastSent})
		defer stop()
	}
	res := m.opts.Pipeline.Call(ctx, call)
	settle(reqCtx, client.lastSent.Load())
	return res
}

// The mirror answers a [RequestError] with its own code and data.
var _ server.CodedError = (*RequestError)(nil)

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
	var req *mcp.CallToolRequest
	switch r := message.(type) {
	case *mcp.CallToolRequest:
		req = r
	case mcp.CallToolRequest:
		req = &r
	default:
		return
	}
	call := &Call{Name: req.Params.Name, Arguments: rawArguments(*req)}
	if req.Params.Meta != nil && m.opts.Pipeline.Tracing() {
		ctx = withMetaTrace(ctx, req.Params.Meta.AdditionalFields)
	}
	call = withCaller(ctx, call)
	res := NotFoundResult(call.Name)
	if nf, ok := errors.AsType[*server.ToolNotFoundError](err); ok {
		res.Message += nf.Detail // suggestTool's, worked out once
	}
	m.opts.Pipeline.RecordOutside(ctx, call, res)
}

// suggestTool is what mcp-go adds to a tools/call's "tool 'x' not found"
// (server.WithToolNotFound): the tools of the caller's view nearest the
// name, as the pipeline suggests them ([suggestTools]).
func (m *MCPServer) suggestTool(ctx context.Context, name string) string {
	call := withCaller(ctx, &Call{Name: name})
	return suggestTools(m.opts.Catalog.Entries(), name, m.viewFor(ctx, call))
}

// requestHead is what the hooks that act before mcp-go handles a request
// (refuseUnoffered, interceptSubscription, checkTaskRequest) read of it.
type requestHead struct {
	Method string `json:"method"`
	Params struct {
		Name      string                     `json:"name"`
		Arguments json.RawMessage            `json:"arguments"`
		URI       string                     `json:"uri"`
		Task      json.RawMessage            `json:"task"`
		Meta      map[string]json.RawMessage `json:"_meta"`
	} `json:"params"`
}

// hookHead decodes the head of a request mcp-go is about to handle, if the
// message is raw JSON that may hold every one of markers (mayHold: a cheap
// test that spares most requests the decoding).
func hookHead(message any, markers ...string) (*requestHead, bool) {
	raw, ok := message.(json.RawMessage)
	if !ok {
		return nil, false
	}
	for _, mk := range markers {
		if !mayHold(raw, mk) {
			return nil, false
		}
	}
	var h requestHead
	if json.Unmarshal(raw, &h) != nil {
		return nil, false // mcp-go says what is wrong
	}
	return &h, true
}

// mayNameOneOf reports whether raw may hold one of the names (keys) of
// names ([mayHold]).
func mayNameOneOf(raw []byte, names map[string]string) bool {
	for name := range names {
		if mayHold(raw, name) {
			return true
		}
	}
	return false
}

// mayHold reports whether raw JSON may hold text where a decoder would
// find it, so that a message that cannot is spared the decoding. It says
// yes for text in any case (encoding/json matches a member to a struct
// field as bytes.EqualFold does, which also folds ſ to s and the Kelvin
// sign to k: with an s or a k in text, any non-ASCII byte says yes), and
// for a message with a \u escape, or a \/ when text has a slash. A
// message without text as it is, without those escapes and without any of
// text's letters in upper case (the common case) costs a few searches of
// single bytes.
func mayHold(raw []byte, text string) bool {
	if bytes.Contains(raw, []byte(text)) {
		return true
	}
	if bytes.IndexByte(raw, '\\') >= 0 && // most messages have no escape at all
		(bytes.Contains(raw, []byte(`\u`)) || strings.Contains(text, "/") && bytes.Contains(raw, []byte(`\/`))) {
		return true
	}
	if strings.ContainsAny(text, "sSkK") && hasNonASCII(raw) { // ſ and K fold to s and k
		return true
	}
	// Text in another case has one of its letters in upper case: without
	// any of those in the message (the common case) there is nothing to
	// compare.
	upper := false
	for i := 0; i < len(text) && !upper; i++ {
		if c := text[i] &^ 0x20; 'A' <= c && c <= 'Z' {
			upper = bytes.IndexByte(raw, c) >= 0
		}
	}
	if !upper {
		return false
	}
	// Only where the first byte matches in either case (a non-ASCII
	// letter folding to an ASCII one said yes above) is there something
	// to compare: a 2026-07-28 request's envelope has upper-case letters
	// in every message, and comparing at each of its bytes cost ~0.9 µs a
	// marker, against ~0.4 now.
	first := text[0] | 0x20
	for i := 0; i+len(text) <= len(raw); i++ {
		if raw[i]|0x20 == first && bytes.EqualFold(raw[i:i+len(text)], []byte(text)) {
			return true
		}
	}
	return false
}

// modern reports whether the request is of the 2026-07-28 revision, which
// names its protocol version in _meta.
func (h *requestHead) modern() bool {
	_, ok := h.Params.Meta[mcp.MetaKeyProtocolVersion]
	return ok
}

// asTask reports whether the request asks to run as a task.
func (h *requestHead) asTask() bool {
	return len(h.Params.Task) > 0 && string(h.Params.Task) != "null"
}

// refuseUnoffered answers a call to a tool a toolset deliberately does not
// offer, or one the mirror cannot serve (unserved), with an error that
// says why (mcp-go would only say "not found"), and records it.
func (m *MCPServer) refuseUnoffered(ctx context.Context, _ any, message any) error {
	snap, unserved := m.opts.Catalog.snap.Load(), *m.unserved.Load()
	unoffered, empty := snap.unoffered, snap.emptyPrefixes
	if len(unoffered) == 0 && len(unserved) == 0 && len(empty) == 0 {
		return nil
	}
	// Decoded only when it may name one of them: a few byte searches
	// spare every other call the decoding (a toolset that does not offer
	// a tool, a name refused, an upstream not connected leave their names
	// here for as long).
	if raw, ok := message.(json.RawMessage); !ok || !mayNameOneOf(raw, unoffered) && !mayNameOneOf(raw, unserved) &&
		!slices.ContainsFunc(empty, func(prefix string) bool { return mayHold(raw, prefix) }) {
		return nil
	}
	req, ok := hookHead(message, `"tools/call"`)
	if !ok || req.Method != string(mcp.MethodToolsCall) {
		return nil
	}
	why := m.opts.Catalog.WhyNotFound(req.Params.Name)
	if why == "" {
		why = m.whyUnserved(req.Params.Name)
	}
	if why == "" {
		return nil
	}
	call := withCaller(ctx, &Call{Name: req.Params.Name, Arguments: req.Params.Arguments})
	if v := m.viewFor(ctx, call); v != nil && !v.Admits(call.Name) {
		// Outside the caller's view: answered as a name no tool has
		// (mcp-go's not found), so the reason does not tell a confined
		// caller what lies beyond its profile.
		return nil
	}
	res := NotFoundResult(call.Name)
	res.Message += ": " + why
	if m.opts.Pipeline.Tracing() {
		ctx = withRawMetaTrace(ctx, req.Params.Meta)
	}
	m.opts.Pipeline.RecordOutside(ctx, call, res)
	// -32602, as for a name no tool has (the MCP spec's code for an
	// unknown tool), with the reason.
	return &RequestError{Code: mcp.INVALID_PARAMS, Message: fmt.Sprintf("tool %q is not offered: %s", req.Params.Name, why)}
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

// callerIdentity is the identity of the caller of ctx: its bearer token's
// or OAuth subject's, or "local" on stdio (the user's own client).
func callerIdentity(ctx context.Context) string {
	if id := identityFrom(ctx); id != "" {
		return id
	}
	return "local"
}

// withCaller sets call's caller from the request's context: its session,
// client (name/version), identity and OAuth principal, when known; it
// returns call.
func withCaller(ctx context.Context, call *Call) *Call {
	call.Identity = callerIdentity(ctx)
	call.Principal = principalFrom(ctx)
	var info *mcp.Implementation
	if s := server.ClientSessionFromContext(ctx); s != nil {
		call.Session = s.SessionID()
		if ci, ok := s.(server.SessionWithClientInfo); ok {
			i := ci.GetClientInfo()
			info = &i
		}
	}
	if pi := server.RequestProtocolInfoFromContext(ctx); pi != nil && pi.ClientInfo != nil {
		info = pi.ClientInfo
	}
	if info != nil && info.Name != "" {
		call.Client = clientName(info.Name, info.Version)
	}
	return call
}

// clientName is how records name a client: "name/version", or the name
// alone without a version.
func clientName(name, version string) string {
	if version == "" {
		return name
	}
	return name + "/" + version
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
// before the response can be written after it (on HTTP the request's own
// stream now writes what was queued first: the mcp-go patch's item 30 fixed
// v1.2.1 losing it). And the TypeScript SDK client dispatches
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
// request. A 2026-07-28 subscriptions/listen stream that names resources
// is held as a session of its own (listenKey) for as long as the stream
// is open, and its updates are written to the stream, tagged with its
// subscription ID.

// Completions.
