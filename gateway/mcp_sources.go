package gateway

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// The mirror of prompt and resource sources onto MCP: prompts/list and
// prompts/get, resources/list, resources/templates/list and
// resources/read (the run archive's artifacts included), resources/subscribe
// (tracked per session, forwarded to the serving source once per URI), and
// completion/complete (routed to the serving source).

// templateOwner is a served resource template and the source that serves
// it (nil for the artifact template).
type templateOwner struct {
	template *mcp.URITemplate
	src      ResourceSource
}

// AddPromptSource serves the source's prompts (and keeps them in step with
// it if it is a [PromptsChangeNotifier]) until [MCPServer.RemovePromptSource].
func (m *MCPServer) AddPromptSource(src PromptSource) {
	m.srcMu.Lock()
	m.promptSources = append(m.promptSources, src)
	m.srcMu.Unlock()
	if n, ok := src.(PromptsChangeNotifier); ok {
		n.OnPromptsChanged(func() {
			m.srcMu.Lock()
			served := slices.ContainsFunc(m.promptSources, func(s PromptSource) bool { return sameSource(s, src) })
			m.srcMu.Unlock()
			if !served {
				return // removed: its changes are no one's
			}
			m.prompts.announce()
			m.syncPrompts()
		})
	}
	m.syncPrompts()
}

// RemovePromptSource stops serving the prompts of src, added with
// [MCPServer.AddPromptSource] (an upstream a reload retired): they leave
// prompts/list (clients are told when it changes), the server keeps no
// reference to src, and src's later change callbacks do nothing. A
// prompts/get under way finishes. A source not served is ignored.
func (m *MCPServer) RemovePromptSource(src PromptSource) {
	if removeSource(m, &m.promptSources, src) {
		m.syncPrompts() // also drops it from the owners of the prompts
	}
}

// RemoveResourceSource stops serving the resources and templates of src,
// added with [MCPServer.AddResourceSource], as [MCPServer.RemovePromptSource]
// does for prompts. A resources/read under way finishes. A subscribed URI
// of src is unsubscribed from it and moves to the source that serves it
// next (now, or once one does): its sessions stay subscribed.
func (m *MCPServer) RemoveResourceSource(src ResourceSource) {
	if removeSource(m, &m.resourceSources, src) {
		m.syncResources()
	}
}

// removeSource deletes src from *list, a list of m's sources, under
// m.srcMu, and reports whether it was there.
func removeSource[S any](m *MCPServer, list *[]S, src S) bool {
	m.srcMu.Lock()
	defer m.srcMu.Unlock()
	n := len(*list)
	*list = slices.DeleteFunc(*list, func(s S) bool { return sameSource(s, src) })
	return len(*list) < n
}

// sameSource reports whether a and b are the same source (== on values
// that may not be comparable would panic).
func sameSource(a, b any) bool {
	ta := reflect.TypeOf(a)
	return ta != nil && ta == reflect.TypeOf(b) && ta.Comparable() && a == b
}

// AddResourceSource serves the source's resources and templates (and keeps
// them in step with it if it is a [ResourcesChangeNotifier]) until
// [MCPServer.RemoveResourceSource].
func (m *MCPServer) AddResourceSource(src ResourceSource) {
	m.srcMu.Lock()
	m.resourceSources = append(m.resourceSources, src)
	m.srcMu.Unlock()
	if n, ok := src.(ResourcesChangeNotifier); ok {
		n.OnResourcesChanged(func() {
			m.srcMu.Lock()
			served := slices.ContainsFunc(m.resourceSources, func(s ResourceSource) bool { return sameSource(s, src) })
			m.srcMu.Unlock()
			if !served {
				return
			}
			m.resources.announce()
			m.syncResources()
		})
	}
	if rs, ok := src.(ResourceSubscriber); ok {
		rs.OnResourceUpdated(func(uri string, params map[string]any) { m.resourceUpdated(src, uri, params) })
	}
	m.syncResources()
}

// syncPrompts replaces the served prompts with the sources' current ones.
// A prompt name offered twice is served once, by the first source, and
// the conflict is logged; a prompt named in the namespace of another
// source (a [Namespacer]: an upstream with a prefix) is not served, as
// the catalog does with tools.
//
// The sources are asked with no lock of the mirror's held: a source may
// call its change listeners (this method among them) while it answers.
// The install is one step under installMu, and a sync that started before
// the last one installed is dropped, so an older listing never replaces a
// newer one.
func (m *MCPServer) syncPrompts() {
	gen := m.prompts.begin(0)
	m.srcMu.Lock()
	sources := slices.Clone(m.promptSources)
	m.srcMu.Unlock()

	var out []server.ServerPrompt
	seen := map[string]bool{}
	owner := map[string]PromptSource{}
	follows := map[string]string{}      // prompt name -> Prompt.Tool
	namespaces := map[string]int{}      // namespace -> index of its source
	own := make([]string, len(sources)) // each source's namespace
	for i, src := range sources {
		if n, ok := src.(Namespacer); ok && n.Namespace() != "" {
			own[i] = n.Namespace()
			namespaces[own[i]] = i
		}
	}
	h := sha256.New()
	for i, src := range sources {
		prompts, err := src.Prompts(context.Background())
		if err != nil {
			m.log.Warn("listing prompts", "err", err)
			continue
		}
		for _, p := range prompts {
			if o, ns, ok := namespaceOfName(namespaces, p.Name); ok && o != i && ns != own[i] {
				m.log.Warn("prompt not served: its name is in another source's namespace", "prompt", p.Name, "namespace", ns+"__")
				continue
			}
			if seen[p.Name] {
				m.log.Warn("prompt name conflict; first source kept", "prompt", p.Name)
				continue
			}
			seen[p.Name] = true
			owner[p.Name] = src
			if p.Tool != "" {
				follows[p.Name] = p.Tool
			}
			mp := mcp.Prompt{Name: p.Name, Title: p.Title, Description: p.Description, Meta: metaOf(p.Meta)}
			for _, a := range p.Arguments {
				mp.Arguments = append(mp.Arguments, mcp.PromptArgument{Name: a.Name, Title: a.Title, Description: a.Description, Required: a.Required})
			}
			b, _ := json.Marshal(mp)
			h.Write(b)
			out = append(out, server.ServerPrompt{Prompt: mp, Handler: m.promptHandler(p)})
		}
	}
	var digest [32]byte
	copy(digest[:], h.Sum(nil))

	m.installMu.Lock()
	defer m.installMu.Unlock()
	current, tell := m.prompts.install(gen, digest)
	if !current {
		return // a later sync has installed a newer listing
	}
	m.srcMu.Lock()
	moved := ownersMoved(m.promptOwner, owner)
	m.promptOwner, m.promptTool = owner, follows
	m.srcMu.Unlock()
	if !tell && !moved {
		return
	}
	m.srv.SetPrompts(out...) // mcp-go's state and notification; it calls nothing of ours
}

// ownersMoved reports whether a name served before (old) is served by
// another source now: mcp-go's handler for it, which calls the source
// that served it, must then be replaced even though the listing is the
// same (the source that served it removed, another offering the same).
func ownersMoved[S any](old, now map[string]S) bool {
	for name, o := range old {
		if n, ok := now[name]; ok && !sameSource(o, n) {
			return true
		}
	}
	return false
}

// templatesMoved is [ownersMoved] for resource templates.
func templatesMoved(old, now []templateOwner) bool {
	src := make(map[string]ResourceSource, len(now))
	for _, t := range now {
		src[t.template.Raw()] = t.src
	}
	for _, t := range old {
		if n, ok := src[t.template.Raw()]; ok && !sameSource(t.src, n) {
			return true
		}
	}
	return false
}

// filterPrompts keeps the prompts the caller of ctx may reach (mcp-go's
// prompt filter, asked at prompts/list and prompts/get): a prompt that
// follows a tool ([Prompt.Tool]) only when the caller's view admits that
// tool and the policy allows it, as a call of it would be; an upstream's
// prompt only when the caller's view admits its name and the caller
// reaches the upstream ([reach]).
func (m *MCPServer) filterPrompts(ctx context.Context, prompts []mcp.Prompt) []mcp.Prompt {
	m.srcMu.Lock()
	follows, owners := m.promptTool, m.promptOwner
	m.srcMu.Unlock()
	r := m.reachOf(ctx)
	if len(follows) == 0 && !r.narrowed {
		return prompts
	}
	who := r.who
	calls := map[string]bool{} // by tool
	out := prompts[:0:0]
	for _, p := range prompts {
		tool := follows[p.Name]
		if tool == "" {
			if src, ok := owners[p.Name]; !ok || r.prompt(src, p.Name) {
				out = append(out, p)
			}
			continue
		}
		ok, known := calls[tool]
		if !known {
			ok = m.mayCall(withCall(ctx, who), who, tool)
			calls[tool] = ok
		}
		if ok {
			out = append(out, p)
		}
	}
	return out
}

// servesPrompt reports whether the caller of ctx is served the prompt of
// that name ([MCPServer.filterPrompts]).
func (m *MCPServer) servesPrompt(ctx context.Context, name string) bool {
	return len(m.filterPrompts(ctx, []mcp.Prompt{{Name: name}})) == 1
}

// mayCall reports whether who (the caller of ctx) may call the tool: its
// view admits it, and the policy allows it without asking anyone.
func (m *MCPServer) mayCall(ctx context.Context, who *Call, tool string) bool {
	t, _, ok := m.opts.Catalog.Resolve(tool)
	return ok && m.allows(ctx, who, t, false)
}

// allows reports whether who (the caller of ctx) reaches t: its view
// admits it and the policy allows it, or, with orAsk, asks a person for
// it.
func (m *MCPServer) allows(ctx context.Context, who *Call, t *Tool, orAsk bool) bool {
	if who.View != nil && !who.View.Admits(t.Name) {
		return false
	}
	pol := m.opts.Pipeline.opts.Policy
	if pol == nil {
		return true
	}
	d := pol.Decide(ctx, t)
	return d.Allow || orAsk && d.Ask
}

func (m *MCPServer) promptHandler(p Prompt) server.PromptHandlerFunc {
	return func(ctx context.Context, req mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		cctx, client := m.withClient(ctx, nil, "prompt "+p.Name)
		bind, round, err := m.promptRound(ctx, p.Name, req)
		if err != nil {
			return nil, err
		}
		if round != nil {
			cctx = context.WithValue(cctx, promptRoundKey{}, round)
		}
		res, err := p.Get(cctx, req.Params.Arguments)
		settle(ctx, client.lastSent.Load())
		if err != nil {
			return nil, err
		}
		if len(res.InputRequests) > 0 {
			return m.promptInputRequired(cctx, bind, res)
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
//
// Like [MCPServer.syncPrompts], it asks the sources with no lock held and
// installs in one step, dropping a listing older than the installed one.
func (m *MCPServer) syncResources() {
	gen := m.resources.begin(0)
	m.srcMu.Lock()
	sources := slices.Clone(m.resourceSources)
	m.srcMu.Unlock()

	var resources []server.ServerResource
	var templates []server.ServerResourceTemplate
	resourceOwner := map[string]ResourceSource{}
	var templateOwners []templateOwner
	h := sha256.New()
	// A URI two sources serve is served by the first (in the order they
	// were added): a resource's, or a template's of the same string, is
	// kept and the conflict logged; among templates that match a URI,
	// mcp-go reads through the first added (its copy's item 69), as
	// sourceFor finds its source for subscriptions.
	seen := map[string]bool{}
	seenTemplates := map[string]bool{}
	if m.opts.Artifacts != nil {
		at := mcp.NewResourceTemplate(ArtifactURIPrefix+"{run}/{file}", "artifact",
			mcp.WithTemplateDescription("A tool output too large to return, saved whole in the run archive"))
		templates = append(templates, server.ServerResourceTemplate{Template: at, Handler: m.readArtifact})
		templateOwners = append(templateOwners, templateOwner{template: at.URITemplate})
		seenTemplates[at.URITemplate.Raw()] = true
	}
	for _, src := range sources {
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
			resources = append(resources, server.ServerResource{Resource: mr, Handler: m.readHandler(func(ctx context.Context, _ string) ([]ResourceContents, error) { return read(ctx) })})
		}
		for _, t := range ts {
			mt, err := newResourceTemplate(t.URITemplate, t.Name)
			if err != nil {
				m.log.Warn("resource template not served: its URI template does not parse", "template", t.URITemplate, "err", err)
				continue
			}
			raw := mt.URITemplate.Raw()
			if seenTemplates[raw] {
				m.log.Warn("resource template conflict; first source kept", "template", raw)
				continue
			}
			seenTemplates[raw] = true
			mt.Description, mt.MIMEType = t.Description, t.MIMEType
			mt.Title, mt.Meta = t.Title, metaOf(t.Meta)
			b, _ := json.Marshal(mt)
			h.Write(b)
			templateOwners = append(templateOwners, templateOwner{template: mt.URITemplate, src: src})
			templates = append(templates, server.ServerResourceTemplate{Template: mt, Handler: server.ResourceTemplateHandlerFunc(m.readHandler(t.Read))})
		}
	}
	var digest [32]byte
	copy(digest[:], h.Sum(nil))

	if m.installResources(gen, digest, resourceOwner, templateOwners, resources, templates) {
		// Subscribed URIs follow their owners, even when the listing is
		// the same (an upstream a reload replaced lists what the old one
		// did).
		m.rebindSubscriptions()
	}
}

// installResources installs a listing of syncResources unless a newer one
// was; it reports whether it did.
func (m *MCPServer) installResources(gen syncGen, digest [32]byte, resourceOwner map[string]ResourceSource, templateOwners []templateOwner,
	resources []server.ServerResource, templates []server.ServerResourceTemplate) bool {
	m.installMu.Lock()
	defer m.installMu.Unlock()
	current, tell := m.resources.install(gen, digest)
	if !current {
		return false // a later sync has installed a newer listing
	}
	m.srcMu.Lock()
	moved := ownersMoved(m.resourceOwner, resourceOwner) || templatesMoved(m.templateOwners, templateOwners)
	m.resourceOwner, m.templateOwners = resourceOwner, templateOwners
	m.srcMu.Unlock()
	if tell || moved {
		m.srv.SetResources(resources...)
		m.srv.SetResourceTemplates(templates...)
	}
	return true
}

// readHandler is resources/read for a source's resource or template: the
// read runs with the requesting client in its context (so a source can
// relay to it), and the response waits for what it relayed.
func (m *MCPServer) readHandler(read func(ctx context.Context, uri string) ([]ResourceContents, error)) server.ResourceHandlerFunc {
	return func(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
		cctx, client := m.withClient(ctx, nil, "resource "+req.Params.URI)
		c, err := read(cctx, req.Params.URI)
		settle(ctx, client.lastSent.Load())
		if err != nil {
			return nil, err
		}
		return mcpContents(c), nil
	}
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

func (m *MCPServer) readArtifact(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
	uri := req.Params.URI
	if err := m.mayReadArtifact(ctx, uri); err != nil {
		return nil, err
	}
	data, mime, err := m.opts.Artifacts.ReadArtifact(uri)
	if errors.Is(err, ErrNoArtifact) {
		// Matching the template does not make it a resource: "not found",
		// as for a URI nothing serves (mcp-go's answer to that).
		return nil, resourceNotFound(ctx, uri, err)
	}
	if err != nil {
		return nil, fmt.Errorf("reading artifact %s: %w", uri, err)
	}
	// Text only when it is text: bytes that are not UTF-8 (a blob an
	// upstream labelled application/json, say) would reach the client
	// with U+FFFD in the place of every invalid byte.
	if isTextMIME(mime) && utf8.Valid(data) {
		return []mcp.ResourceContents{mcp.TextResourceContents{URI: uri, MIMEType: mime, Text: string(data)}}, nil
	}
	return []mcp.ResourceContents{mcp.BlobResourceContents{URI: uri, MIMEType: mime, Blob: base64.StdEncoding.EncodeToString(data)}}, nil
}

// mayReadArtifact refuses the caller of ctx an artifact another identity's
// call made ([ArtifactOwners]), with the answer to an artifact that does
// not exist.
func (m *MCPServer) mayReadArtifact(ctx context.Context, uri string) error {
	owners, ok := m.opts.Artifacts.(ArtifactOwners)
	if !ok {
		return nil
	}
	owner, err := owners.ArtifactOwner(uri)
	if errors.Is(err, ErrNoArtifact) {
		return resourceNotFound(ctx, uri, err)
	}
	if err != nil {
		return fmt.Errorf("reading artifact %s: %w", uri, err)
	}
	if owner != "" && owner != callerIdentity(ctx) {
		return resourceNotFound(ctx, uri, fmt.Errorf("%w: %q", ErrNoArtifact, uri))
	}
	return nil
}

// resourceNotFound is the error resources/read answers for a URI that
// names nothing: -32002 with data.uri (2025-11-25), -32602 on 2026-07-28,
// as mcp-go answers a URI no resource or template matches.
func resourceNotFound(ctx context.Context, uri string, err error) error {
	code := mcp.RESOURCE_NOT_FOUND
	if mcp.IsModernProtocol(server.RequestProtocolVersion(ctx)) {
		code = mcp.INVALID_PARAMS
	}
	data, _ := json.Marshal(map[string]string{"uri": uri})
	return &RequestError{Code: code, Message: fmt.Sprintf("resource %s not found: %v", uri, err), Data: data}
}

func isTextMIME(mime string) bool {
	return strings.HasPrefix(mime, "text/") || strings.HasPrefix(mime, "application/json")
}

// subscription is the state of one subscribed URI. sessions and pending
// are guarded by MCPServer.subMu; io serializes the source's subscribe and
// unsubscribe calls for the URI and guards active. subMu is never held
// while waiting for io or for a source, so updates are never delayed by a
// subscription in progress.
//
// src is the source that serves the URI; it changes (under both subMu and
// io) when another source comes to serve it ([MCPServer.rebind]), and only
// its updates are passed on.
//
// Each session is held with its subscriber: the context of the request
// that subscribed, without its cancellation, which says who the caller is
// and which endpoint it came through. An update goes to the sessions whose
// caller reaches src at that moment ([MCPServer.reaching]): a reload that
// takes an upstream out of a caller's reach (its profile, the policy's
// rules for it) stops its updates, and one that gives it back resumes
// them, as for the caller's next resources/read.
type subscription struct {
	src      ResourceSource // nil: the artifact template (never changes), or orphan
	orphan   bool           // no source serves the URI now; its sessions wait for one
	sessions map[string]context.Context
	pending  int // subscribe/unsubscribe/rebind calls under way; the entry stays while > 0
	io       sync.Mutex
	active   bool // the source is subscribed
}

// subscriptionTimeout bounds a source's unsubscribe when no request bounds
// it (a session that ended).
const subscriptionTimeout = 10 * time.Second

// interceptSubscription handles resources/subscribe and
// resources/unsubscribe of 2025-era clients before mcp-go acknowledges
// them (2026-07-28 removed both; mcp-go refuses them itself: its
// subscriptions/listen is [MCPServer.listen]).
func (m *MCPServer) interceptSubscription(ctx context.Context, _ any, message any) error {
	req, ok := hookHead(message, `"resources/`, `subscribe"`)
	if !ok || req.Params.URI == "" || req.modern() {
		return nil // mcp-go says what is wrong, or refuses it (2026-07-28)
	}
	s := server.ClientSessionFromContext(ctx)
	if s == nil {
		return nil
	}
	switch req.Method {
	case string(mcp.MethodResourcesSubscribe):
		err := m.subscribe(ctx, s.SessionID(), req.Params.URI)
		if errors.Is(err, errNotServed) {
			// As resources/read answers it (MCP 2025-11-25, resources:
			// "Resource not found: -32002"), not -32600.
			data, _ := json.Marshal(map[string]string{"uri": req.Params.URI})
			return &RequestError{Code: mcp.RESOURCE_NOT_FOUND, Message: err.Error(), Data: data}
		}
		return err
	case string(mcp.MethodResourcesUnsubscribe):
		m.unsubscribe(ctx, s.SessionID(), req.Params.URI)
	}
	return nil
}

// listenStream is a subscriptions/listen stream: the session mcp-go
// serves it with and the ID of its request (its subscription ID).
type listenStream struct {
	session server.ClientSession
	id      any
}

// listenKey is the key a listen stream's subscriptions are held under in
// subs, beside session IDs (which have no NUL).
func listenKey(n uint64) string { return fmt.Sprintf("\x00listen/%d", n) }

// listen subscribes a 2026-07-28 subscriptions/listen stream to the URIs
// of its filter (resourceSubscriptions) as resources/subscribe does a
// session, before mcp-go acknowledges them: a URI no source serves, or a
// source's refusal, fails the request. The subscriptions end with the
// stream: with ctx, the request's own (cancelled when its handling ends).
func (m *MCPServer) listen(ctx context.Context, id any, message json.RawMessage) error {
	var req struct {
		Params struct {
			Notifications struct {
				ResourceSubscriptions []string `json:"resourceSubscriptions"`
			} `json:"notifications"`
		} `json:"params"`
	}
	s := server.ClientSessionFromContext(ctx)
	if s == nil || id == nil || !mcp.IsModernProtocol(server.RequestProtocolVersion(ctx)) || json.Unmarshal(message, &req) != nil {
		return nil // mcp-go says what is wrong
	}
	uris := req.Params.Notifications.ResourceSubscriptions
	if len(uris) == 0 {
		return nil
	}
	key := listenKey(m.listenSeq.Add(1))
	m.subMu.Lock()
	m.listens[key] = listenStream{session: s, id: id}
	m.subMu.Unlock()
	end := func() {
		m.subMu.Lock()
		delete(m.listens, key)
		m.subMu.Unlock()
		m.dropSubscriptions(key)
	}
	for _, uri := range uris {
		if err := m.subscribe(ctx, key, uri); err != nil {
			end()
			return &RequestError{Code: mcp.INVALID_PARAMS, Message: err.Error()}
		}
	}
	context.AfterFunc(ctx, end)
	return nil
}

// resourceSourceFor returns the source that serves uri (a resource's URI
// or one matching a template); ok is false when nothing serves it.
func (m *MCPServer) resourceSourceFor(uri string) (src ResourceSource, ok bool) {
	return m.sourceFor(uri, nil)
}

// reachedSourceFor is [MCPServer.resourceSourceFor] for the caller of
// ctx: the source that serves uri among those it reaches ([reach]); ok
// is false when none does, as for a URI nothing serves.
func (m *MCPServer) reachedSourceFor(ctx context.Context, uri string) (src ResourceSource, ok bool) {
	r := m.reachOf(ctx)
	if !r.narrowed {
		return m.sourceFor(uri, nil)
	}
	return m.sourceFor(uri, r.source)
}

// sourceFor returns the first source, in the order they serve it, that
// serves uri (its resource's owner, then the templates' in order) and
// that keep keeps (nil: any). keep is asked with no lock held: it may
// ask the policy.
func (m *MCPServer) sourceFor(uri string, keep func(any) bool) (src ResourceSource, ok bool) {
	var candidates []ResourceSource
	m.srcMu.Lock()
	if src, ok := m.resourceOwner[uri]; ok {
		candidates = append(candidates, src)
	}
	for _, t := range m.templateOwners {
		if keep == nil && len(candidates) > 0 {
			break // the first is the one
		}
		if t.template.Raw() == uri || t.template.Regexp().MatchString(uri) {
			candidates = append(candidates, t.src)
		}
	}
	m.srcMu.Unlock()
	for _, src := range candidates {
		if keep == nil || keep(src) {
			return src, true
		}
	}
	return nil, false
}

// errNotServed is why a subscription names a URI nothing serves.
var errNotServed = errors.New("no resource or template served by toolgate matches it")

func (m *MCPServer) subscribe(ctx context.Context, session, uri string) error {
	src, ok := m.reachedSourceFor(ctx, uri)
	if !ok {
		return fmt.Errorf("resource %s not found: %w", uri, errNotServed)
	}
	m.subMu.Lock()
	st := m.subs[uri]
	if st == nil {
		st = &subscription{src: src, sessions: map[string]context.Context{}}
		m.subs[uri] = st
	}
	if _, ok := st.sessions[session]; ok {
		m.subMu.Unlock()
		return nil
	}
	st.pending++
	sub := m.subscribing[session]
	if sub == nil {
		sub = &subscribing{}
		m.subscribing[session] = sub
	}
	sub.n++
	m.subMu.Unlock()

	st.io.Lock()
	var err error
	if !st.active {
		// The owner now, with the entry in place: a sync from here on
		// rebinds it (rebind waits for io).
		src, ok := m.resourceSourceFor(uri)
		if ok {
			m.subMu.Lock()
			st.src, st.orphan = src, false
			m.subMu.Unlock()
			if rs, ok := src.(ResourceSubscriber); ok {
				err = rs.SubscribeResource(ctx, uri)
			}
		} else {
			err = errors.New("no resource or template served by toolgate matches it any more")
		}
		st.active = err == nil
	}
	m.subMu.Lock()
	st.pending--
	if sub.n--; sub.n == 0 {
		delete(m.subscribing, session)
	}
	switch {
	case err != nil:
		m.forgetIfIdle(uri, st)
		err = fmt.Errorf("subscribing to %s: %w", uri, err)
	case sub.ended:
		// The session ended while the source was asked: its
		// subscriptions were dropped before this one was registered, so
		// it is undone here (the source too, when no one else holds it).
		st.pending++ // release's
		m.subMu.Unlock()
		st.io.Unlock()
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), subscriptionTimeout)
		defer cancel()
		m.release(ctx, uri, st)
		return nil
	default:
		st.sessions[session] = context.WithoutCancel(ctx)
		if m.sessSubs[session] == nil {
			m.sessSubs[session] = map[string]bool{}
		}
		m.sessSubs[session][uri] = true
	}
	m.subMu.Unlock()
	st.io.Unlock()
	return err
}

// subscribing is a session's subscribes under way with their sources.
type subscribing struct {
	n     int
	ended bool // the session ended meanwhile
}

// unsubscribe removes session's subscription to uri, if any, and
// unsubscribes the source when it was the last.
func (m *MCPServer) unsubscribe(ctx context.Context, session, uri string) {
	m.subMu.Lock()
	st := m.subs[uri]
	if st == nil || st.sessions[session] == nil {
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
	if sub := m.subscribing[session]; sub != nil {
		sub.ended = true // subscribe undoes what it was asking for
	}
	type drop struct {
		uri string
		st  *subscription
	}
	var drops []drop
	for uri := range set {
		if st := m.subs[uri]; st != nil && st.sessions[session] != nil {
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

// rebindSubscriptions moves each subscribed URI whose owner changed with
// the last installed resource listing to its new owner, in the
// background (see rebind). A URI no source serves any more keeps its
// sessions, and no reference to the source that left.
func (m *MCPServer) rebindSubscriptions() {
	m.subMu.Lock()
	if len(m.subs) == 0 {
		m.subMu.Unlock()
		return
	}
	type entry struct {
		uri string
		st  *subscription
	}
	entries := make([]entry, 0, len(m.subs))
	for uri, st := range m.subs {
		entries = append(entries, entry{uri, st})
	}
	m.subMu.Unlock()
	for _, e := range entries {
		src, served := m.resourceSourceFor(e.uri)
		m.subMu.Lock()
		moved := m.subs[e.uri] == e.st && movedFrom(e.st, src, served)
		if moved {
			e.st.pending++ // rebind's
		}
		m.subMu.Unlock()
		if moved {
			go m.rebind(e.uri, e.st)
		}
	}
}

// movedFrom reports whether the owner of a subscribed URI (src, or none
// if !served) is no longer the one st is bound to. Callers hold subMu.
func movedFrom(st *subscription, src ResourceSource, served bool) bool {
	if !served {
		return !st.orphan
	}
	return st.orphan || !(src == nil && st.src == nil || sameSource(src, st.src))
}

// rebind binds a subscribed URI to the source that serves it now: the
// one it was bound to is unsubscribed, the new one subscribed if sessions
// are, and they are told the resource may have changed (it is another
// source's). A URI no source serves is left unbound until one does. The
// caller counted rebind in st.pending.
func (m *MCPServer) rebind(uri string, st *subscription) {
	ctx, cancel := context.WithTimeout(context.Background(), subscriptionTimeout)
	defer cancel()
	st.io.Lock()
	src, served := m.resourceSourceFor(uri) // the newest owner, whatever the order rebinds run in
	m.subMu.Lock()
	old := st.src
	moved := movedFrom(st, src, served)
	if moved {
		st.src, st.orphan = src, !served // updates from here on are src's only
	}
	wanted := len(st.sessions) > 0
	m.subMu.Unlock()
	var tell bool
	if moved {
		if st.active {
			if rs, ok := old.(ResourceSubscriber); ok {
				if err := rs.UnsubscribeResource(ctx, uri); err != nil {
					m.log.Debug("unsubscribing a resource's former source failed", "uri", uri, "err", err)
				}
			}
			st.active = false
		}
		if served && wanted {
			var err error
			if rs, ok := src.(ResourceSubscriber); ok {
				err = rs.SubscribeResource(ctx, uri)
			}
			if st.active = err == nil; err != nil {
				m.log.Warn("subscribing to a resource's new source failed; its subscribed clients get no updates", "uri", uri, "err", err)
			}
			tell = true
		}
	}
	m.subMu.Lock()
	st.pending--
	var sessions map[string]context.Context
	if tell {
		sessions = maps.Clone(st.sessions)
	}
	m.forgetIfIdle(uri, st)
	m.subMu.Unlock()
	st.io.Unlock()
	m.sendUpdated(uri, map[string]any{"uri": uri}, m.reaching(src, sessions))
}

// resourceUpdated passes an update of uri by src to the sessions
// subscribed to it, if src is the source that serves it (not one a
// reload retired). It never blocks (sources call it from their read
// loops).
func (m *MCPServer) resourceUpdated(src ResourceSource, uri string, params map[string]any) {
	m.subMu.Lock()
	var sessions map[string]context.Context
	if st := m.subs[uri]; st != nil && !st.orphan && sameSource(st.src, src) && len(st.sessions) > 0 {
		sessions = maps.Clone(st.sessions)
	}
	m.subMu.Unlock()
	m.sendUpdated(uri, params, m.reaching(src, sessions))
}

// reaching returns the sessions (subscribers by session, as held in a
// [subscription]) whose caller reaches src now: what a reload changed of
// a caller's view or of the policy's rules for it applies to the updates
// it is sent. It asks the policy, so it runs with no lock held.
func (m *MCPServer) reaching(src ResourceSource, sessions map[string]context.Context) []string {
	out := make([]string, 0, len(sessions))
	for s, ctx := range sessions {
		if m.reachOf(ctx).source(src) {
			out = append(out, s)
		}
	}
	return out
}

// sendUpdated sends notifications/resources/updated of uri to sessions.
func (m *MCPServer) sendUpdated(uri string, params map[string]any, sessions []string) {
	if len(sessions) == 0 {
		return
	}
	out := make(map[string]any, len(params)+1)
	for k, v := range params {
		out[k] = v
	}
	out["uri"] = uri
	for _, s := range sessions {
		if strings.HasPrefix(s, "\x00") {
			m.sendListenUpdate(s, out)
			continue
		}
		err := m.srv.SendNotificationToSpecificClient(s, string(mcp.MethodNotificationResourceUpdated), out)
		if errors.Is(err, server.ErrSessionNotFound) {
			m.dropSubscriptions(s) // it ended without our hook seeing it
		} else if err != nil {
			m.log.Debug("resource update not delivered", "uri", uri, "session", SessionRef(s), "err", err)
		}
	}
}

// sendListenUpdate writes notifications/resources/updated with params
// to the listen stream of key, tagged with its subscription ID, if it is
// still open. It never blocks: a stream too slow to take it misses it.
func (m *MCPServer) sendListenUpdate(key string, params map[string]any) {
	m.subMu.Lock()
	l, ok := m.listens[key]
	m.subMu.Unlock()
	if !ok {
		return
	}
	meta := map[string]any{}
	if m, ok := params["_meta"].(map[string]any); ok { // the source's, kept beside the tag
		maps.Copy(meta, m)
		params = maps.Clone(params)
		delete(params, "_meta")
	}
	meta[mcp.MetaKeySubscriptionID] = l.id
	n := mcp.JSONRPCNotification{JSONRPC: mcp.JSONRPC_VERSION, Notification: mcp.Notification{
		Method: string(mcp.MethodNotificationResourceUpdated),
		Params: mcp.NotificationParams{Meta: meta, AdditionalFields: params},
	}}
	select {
	case l.session.NotificationChannel() <- n:
	default:
		m.log.Debug("resource update not delivered: the listen stream is not keeping up", "uri", params["uri"])
	}
}

// suggestPrompt is "; did you mean …?" with the prompts nearest name that
// the caller of ctx may get, or "": what prompts/get (mcp-go copy item 92,
// server.WithPromptNotFound) and completion/complete add to a "prompt not
// found", as suggestTool does for tools.
func (m *MCPServer) suggestPrompt(ctx context.Context, name string) string {
	m.srcMu.Lock()
	prompts := make([]mcp.Prompt, 0, len(m.promptOwner))
	for n := range m.promptOwner {
		prompts = append(prompts, mcp.Prompt{Name: n})
	}
	m.srcMu.Unlock()
	var names []string
	for _, p := range m.filterPrompts(ctx, prompts) {
		names = append(names, p.Name)
	}
	return DidYouMean(name, names)
}

// completer routes completion/complete to the source that serves the
// prompt or resource template; sources that do not complete answer with
// no values.
type completer struct{ m *MCPServer }

func (c completer) CompletePromptArgument(ctx context.Context, name string, arg mcp.CompleteArgument, cc mcp.CompleteContext) (*mcp.Completion, error) {
	c.m.srcMu.Lock()
	src, ok := c.m.promptOwner[name]
	c.m.srcMu.Unlock()
	if !ok || !c.m.servesPrompt(ctx, name) {
		return nil, &RequestError{Code: mcp.INVALID_PARAMS, Message: fmt.Sprintf("prompt %q not found", name) + c.m.suggestPrompt(ctx, name)}
	}
	pc, ok := src.(PromptCompleter)
	if !ok {
		return &mcp.Completion{Values: []string{}}, nil
	}
	res, err := pc.CompletePrompt(ctx, name, CompletionRequest{Argument: arg.Name, Value: arg.Value, Context: cc.Arguments})
	return mcpCompletion(res), err
}

func (c completer) CompleteResourceArgument(ctx context.Context, uri string, arg mcp.CompleteArgument, cc mcp.CompleteContext) (*mcp.Completion, error) {
	src, ok := c.m.reachedSourceFor(ctx, uri)
	if !ok {
		return nil, &RequestError{Code: mcp.INVALID_PARAMS, Message: fmt.Sprintf("resource template %q not found", uri)}
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
