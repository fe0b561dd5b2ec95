package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

// reachUpstream stands for an upstream: a toolset with a namespace whose
// prompts and resources it serves too (as adapters/upstream.Upstream).
type reachUpstream struct {
	ns    string
	tools []string // tool names without the prefix
}

func (u *reachUpstream) Name() string      { return u.ns }
func (u *reachUpstream) Namespace() string { return u.ns }

func (u *reachUpstream) Tools(context.Context) ([]*Tool, error) {
	var out []*Tool
	for _, n := range u.tools {
		t, err := NewDynamicTool(ToolDef{Name: u.ns + "__" + n}, func(context.Context, map[string]any) (*Result, error) { return OkText(""), nil })
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}

func (u *reachUpstream) Prompts(context.Context) ([]Prompt, error) {
	get := func(context.Context, map[string]string) (*PromptResult, error) {
		return &PromptResult{Messages: []PromptMessage{{Role: "user", Content: Text(u.ns + " prompt text")}}}, nil
	}
	return []Prompt{{Name: u.ns + "__brief", Arguments: []PromptArgument{{Name: "topic"}}, Get: get}}, nil
}

func (u *reachUpstream) Resources(context.Context) ([]Resource, []ResourceTemplate, error) {
	text := u.ns + " resource text"
	read := func(context.Context) ([]ResourceContents, error) {
		return []ResourceContents{{URI: u.ns + "://doc", Text: &text}}, nil
	}
	readT := func(_ context.Context, uri string) ([]ResourceContents, error) {
		return []ResourceContents{{URI: uri, Text: &text}}, nil
	}
	return []Resource{{URI: u.ns + "://doc", Name: u.ns + "-doc", Read: read}},
		[]ResourceTemplate{{URITemplate: u.ns + "://item/{id}", Name: u.ns + "-item", Read: readT}}, nil
}

func (u *reachUpstream) CompletePrompt(context.Context, string, CompletionRequest) (*Completion, error) {
	return &Completion{Values: []string{u.ns + "-completed"}}, nil
}

func (u *reachUpstream) CompleteResource(context.Context, string, CompletionRequest) (*Completion, error) {
	return &Completion{Values: []string{u.ns + "-completed"}}, nil
}

// globView admits the tools matching one of its globs (a profile's tools).
type globView []string

func (v globView) Name() string { return "globs" }
func (v globView) Admits(tool string) bool {
	return slices.ContainsFunc(v, func(g string) bool { return MatchGlob(g, tool) })
}

// reachPolicy denies the tools matching deny; callerRules says whether it
// has rules of the caller's own (as policy.identities).
type reachPolicy struct {
	deny        []string
	callerRules bool
}

func (p reachPolicy) Decide(_ context.Context, t *Tool) Decision {
	for _, g := range p.deny {
		if MatchGlob(g, t.Name) {
			return Decision{Layer: "config", Rule: "test.deny:" + g}
		}
	}
	return Decision{Allow: true}
}

func (p reachPolicy) HasCallerRules(*Call) bool { return p.callerRules }

// newReachServer serves three upstreams: github and notion with a tool
// each, docs with none.
func newReachServer(t *testing.T, view View, pol Policy) *MCPServer {
	t.Helper()
	cat := NewCatalog(nil)
	ups := []*reachUpstream{{ns: "github", tools: []string{"search"}}, {ns: "notion", tools: []string{"search"}}, {ns: "docs"}}
	for _, u := range ups {
		if err := cat.Add(context.Background(), u); err != nil {
			t.Fatal(err)
		}
	}
	m := NewMCPServer(&MCPOptions{Name: "t", Version: "1", Catalog: cat, View: view, Pipeline: NewPipeline(&Options{Tools: cat, Policy: pol})})
	for _, u := range ups {
		m.AddPromptSource(u)
		m.AddResourceSource(u)
	}
	return m
}

// rpcAs is rpcAnswer with the request made by identity.
func rpcAs(t *testing.T, m *MCPServer, identity, msg string) (errObj *struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data"`
}, raw string) {
	t.Helper()
	ctx := context.WithValue(context.Background(), identityKey{}, identity)
	b, _ := json.Marshal(m.srv.HandleMessage(ctx, json.RawMessage(msg)))
	var resp struct {
		Error *struct {
			Code    int             `json:"code"`
			Message string          `json:"message"`
			Data    json.RawMessage `json:"data"`
		} `json:"error"`
	}
	if err := json.Unmarshal(b, &resp); err != nil {
		t.Fatal(err)
	}
	return resp.Error, string(b)
}

// listed returns the values of key in the result's list member.
func listed(t *testing.T, raw, list, key string) []string {
	t.Helper()
	var resp struct {
		Result map[string][]map[string]any `json:"result"`
	}
	if err := json.Unmarshal([]byte(raw), &resp); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range resp.Result[list] {
		out = append(out, fmt.Sprint(e[key]))
	}
	slices.Sort(out)
	return out
}

// TestUpstreamPromptsAndResourcesFollowReach: an upstream's prompts are
// served (prompts/list, prompts/get) only to a caller whose view admits
// the prompt's name and who reaches the upstream: its view admits one of
// the upstream's tools and the policy lets it call that tool (an upstream
// with no tools: the view alone decides, by its namespace). Its resources
// and templates are served (list, read, subscribe, completion) only to a
// caller who reaches it, and a read of one out of reach is answered as a
// URI nothing serves. The plain endpoint, with no view and no rules for
// its caller, serves everything, whatever the policy denies to everyone.
func TestUpstreamPromptsAndResourcesFollowReach(t *testing.T) {
	all := []string{"docs", "github", "notion"}
	tests := []struct {
		name      string
		view      View
		pol       reachPolicy
		prompts   []string // upstreams whose prompt is served
		resources []string // upstreams whose resources are served
	}{
		{"plain endpoint", nil, reachPolicy{}, all, all},
		{"plain endpoint, the policy denies notion's tools to everyone", nil, reachPolicy{deny: []string{"notion__*"}}, all, all},
		{"a profile of github", globView{"read_file", "github__*"}, reachPolicy{}, []string{"github"}, []string{"github"}},
		{"a profile of notion and docs", globView{"notion__*", "docs__*"}, reachPolicy{}, []string{"docs", "notion"}, []string{"docs", "notion"}},
		{"a profile admitting notion's prompt but none of its tools", globView{"github__search", "notion__brief"}, reachPolicy{}, nil, []string{"github"}},
		{"a profile whose notion tools the policy denies", globView{"github__*", "notion__*"}, reachPolicy{deny: []string{"notion__search"}}, []string{"github"}, []string{"github"}},
		{"an identity denied notion's tools", nil, reachPolicy{deny: []string{"notion__*"}, callerRules: true}, []string{"docs", "github"}, []string{"docs", "github"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := newReachServer(t, tc.view, tc.pol)
			const who = "token:ci"
			for i, l := range []struct {
				method, key, field, suffix string
				upstreams                  []string
			}{
				{"prompts/list", "prompts", "name", "__brief", tc.prompts},
				{"resources/list", "resources", "uri", "://doc", tc.resources},
				{"resources/templates/list", "resourceTemplates", "uriTemplate", "://item/{id}", tc.resources},
			} {
				var want []string
				for _, u := range l.upstreams {
					want = append(want, u+l.suffix)
				}
				_, raw := rpcAs(t, m, who, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q}`, i+1, l.method))
				if got := listed(t, raw, l.key, l.field); !slices.Equal(got, want) {
					t.Errorf("%s: %v, want %v", l.method, got, want)
				}
			}
			// A URI nothing serves, for the answer a URI out of reach must get.
			unknown, _ := rpcAs(t, m, who, `{"jsonrpc":"2.0","id":4,"method":"resources/read","params":{"uri":"nothing://here"}}`)
			if unknown == nil {
				t.Fatal("resources/read of a URI nothing serves succeeded")
			}
			for _, u := range all {
				served := slices.Contains(tc.prompts, u)
				errObj, raw := rpcAs(t, m, who, `{"jsonrpc":"2.0","id":5,"method":"prompts/get","params":{"name":"`+u+`__brief"}}`)
				if got := errObj == nil && strings.Contains(raw, u+" prompt text"); got != served {
					t.Errorf("prompts/get %s__brief: %s; want it got: %v", u, raw, served)
				}
				errObj, raw = rpcAs(t, m, who, `{"jsonrpc":"2.0","id":6,"method":"completion/complete","params":{"ref":{"type":"ref/prompt","name":"`+u+`__brief"},"argument":{"name":"topic","value":"x"}}}`)
				if got := errObj == nil && strings.Contains(raw, u+"-completed"); got != served {
					t.Errorf("completion/complete of prompt %s__brief: %s; want it completed: %v", u, raw, served)
				}

				reached := slices.Contains(tc.resources, u)
				for _, uri := range []string{u + "://doc", u + "://item/7"} {
					errObj, raw := rpcAs(t, m, who, `{"jsonrpc":"2.0","id":7,"method":"resources/read","params":{"uri":"`+uri+`"}}`)
					if got := errObj == nil && strings.Contains(raw, u+" resource text"); got != reached {
						t.Errorf("resources/read %s: %s; want it read: %v", uri, raw, reached)
					}
					if !reached && errObj != nil {
						if errObj.Code != unknown.Code || strings.ReplaceAll(errObj.Message, uri, "nothing://here") != unknown.Message ||
							strings.ReplaceAll(string(errObj.Data), uri, "nothing://here") != string(unknown.Data) {
							t.Errorf("resources/read %s out of reach: %+v; want the answer of a URI nothing serves, %+v", uri, errObj, unknown)
						}
					}
				}
				errObj, raw = rpcAs(t, m, who, `{"jsonrpc":"2.0","id":8,"method":"completion/complete","params":{"ref":{"type":"ref/resource","uri":"`+u+`://item/{id}"},"argument":{"name":"id","value":"x"}}}`)
				if got := errObj == nil && strings.Contains(raw, u+"-completed"); got != reached {
					t.Errorf("completion/complete of template %s://item/{id}: %s; want it completed: %v", u, raw, reached)
				}
				ctx := context.WithValue(context.Background(), identityKey{}, who)
				if err := m.subscribe(ctx, "s-"+u, u+"://doc"); (err == nil) != reached {
					t.Errorf("subscribing to %s://doc: %v; want it subscribed: %v", u, err, reached)
				}
			}
		})
	}
}

// swapView is a view a test replaces, as a reload replaces a profile.
type swapView struct{ v atomic.Pointer[globView] }

func (s *swapView) Name() string            { return "swapped" }
func (s *swapView) Admits(tool string) bool { return s.v.Load().Admits(tool) }

// TestReachChangesTellClients: what a caller reaches of the upstreams'
// prompts and resources changes with its view (a reload that changes a
// profile or the policy, then Resync) and with the tools of the
// upstreams (one that comes to list tools): clients are told with
// prompts/list_changed and resources/list_changed, as the per-caller
// lists they read may differ although the served listing did not change,
// and then list what the new view reaches. The tools they list follow
// their view too: a Resync tells them with tools/list_changed, though the
// served listing is the same.
func TestReachChangesTellClients(t *testing.T) {
	view := &swapView{}
	view.v.Store(&globView{"github__*"})
	cat := NewCatalog(nil)
	github := &reachUpstream{ns: "github", tools: []string{"search"}}
	notion := &reachUpstream{ns: "notion"} // no tools yet
	for _, u := range []*reachUpstream{github, notion} {
		if err := cat.Add(context.Background(), u); err != nil {
			t.Fatal(err)
		}
	}
	m := NewMCPServer(&MCPOptions{Name: "t", Version: "1", Catalog: cat, View: view, ListDebounce: time.Millisecond,
		Pipeline: NewPipeline(&Options{Tools: cat, Policy: reachPolicy{deny: []string{"notion__search"}}})})
	for _, u := range []*reachUpstream{github, notion} {
		m.AddPromptSource(u)
		m.AddResourceSource(u)
	}
	c, notes := dialMCP(t, serveMCP(t, m))
	ctx := context.Background()
	count := func(method mcp.MCPMethod) int { return countNotified(notes, method) }
	told := func(what string, prompts, resources int) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for (count(mcp.MethodNotificationPromptsListChanged) <= prompts || count(mcp.MethodNotificationResourcesListChanged) <= resources) && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		if count(mcp.MethodNotificationPromptsListChanged) <= prompts || count(mcp.MethodNotificationResourcesListChanged) <= resources {
			t.Fatalf("%s: clients were not told that prompts and resources changed", what)
		}
	}
	uris := func() []string {
		t.Helper()
		lr, err := c.ListResources(ctx, mcp.ListResourcesRequest{})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, r := range lr.Resources {
			out = append(out, r.URI)
		}
		slices.Sort(out)
		return out
	}
	if got := uris(); !slices.Equal(got, []string{"github://doc"}) {
		t.Fatalf("resources before: %v", got)
	}

	p, r := count(mcp.MethodNotificationPromptsListChanged), count(mcp.MethodNotificationResourcesListChanged)
	tl := count(mcp.MethodNotificationToolsListChanged)
	view.v.Store(&globView{"notion__*"}) // the profile is reloaded...
	m.Resync()                           // ...and the server told
	told("a reloaded profile", p, r)
	eventually(t, "tools/list_changed after the profile changed", func() bool { return count(mcp.MethodNotificationToolsListChanged) > tl })
	if got := uris(); !slices.Equal(got, []string{"notion://doc"}) {
		t.Errorf("resources after the profile changed: %v, want notion's (no tools: its namespace is admitted)", got)
	}
	if dp, dr, dt := count(mcp.MethodNotificationPromptsListChanged)-p, count(mcp.MethodNotificationResourcesListChanged)-r, count(mcp.MethodNotificationToolsListChanged)-tl; dp != 1 || dr != 1 || dt != 1 {
		t.Errorf("one reload sent prompts/list_changed %d times, resources/list_changed %d, tools/list_changed %d; want each once", dp, dr, dt)
	}

	// notion comes to list a tool, which the policy denies: it is out of
	// reach now.
	p, r = count(mcp.MethodNotificationPromptsListChanged), count(mcp.MethodNotificationResourcesListChanged)
	notion.tools = []string{"search"}
	if err := cat.Refresh(ctx, "notion"); err != nil {
		t.Fatal(err)
	}
	told("an upstream's new tools", p, r)
	if got := uris(); len(got) != 0 {
		t.Errorf("resources once notion's only tool is denied: %v, want none", got)
	}
}

// watchedUpstream is a reachUpstream whose resources can be watched: the
// test reports an update with its listener.
type watchedUpstream struct {
	*reachUpstream
	mu       sync.Mutex
	listener func(uri string, params map[string]any)
}

func (u *watchedUpstream) SubscribeResource(context.Context, string) error   { return nil }
func (u *watchedUpstream) UnsubscribeResource(context.Context, string) error { return nil }
func (u *watchedUpstream) OnResourceUpdated(f func(string, map[string]any)) {
	u.mu.Lock()
	u.listener = f
	u.mu.Unlock()
}

func (u *watchedUpstream) updated(uri string) {
	u.mu.Lock()
	f := u.listener
	u.mu.Unlock()
	f(uri, map[string]any{"uri": uri})
}

// TestSubscriptionFollowsReach: a session subscribed to an upstream's
// resource is sent its updates while its caller reaches the upstream. A
// reload that takes the upstream out of its reach (its profile edited,
// then Resync) stops them, though the subscription stays; one that gives
// it back resumes them.
func TestSubscriptionFollowsReach(t *testing.T) {
	view := &swapView{}
	view.v.Store(&globView{"github__*", "docs__*"})
	cat := NewCatalog(nil)
	github := &watchedUpstream{reachUpstream: &reachUpstream{ns: "github", tools: []string{"search"}}}
	docs := &watchedUpstream{reachUpstream: &reachUpstream{ns: "docs"}}
	for _, u := range []*watchedUpstream{github, docs} {
		if err := cat.Add(context.Background(), u); err != nil {
			t.Fatal(err)
		}
	}
	m := NewMCPServer(&MCPOptions{Name: "t", Version: "1", Catalog: cat, View: view, ListDebounce: time.Millisecond,
		Pipeline: NewPipeline(&Options{Tools: cat})})
	for _, u := range []*watchedUpstream{github, docs} {
		m.AddPromptSource(u)
		m.AddResourceSource(u)
	}
	c, notes := dialMCP(t, serveMCP(t, m))
	ctx := context.Background()
	for _, uri := range []string{"github://doc", "docs://doc"} {
		//lint:ignore SA1019 resources/subscribe of the 2025 revisions, where it is current
		if err := c.Subscribe(ctx, mcp.SubscribeRequest{Params: mcp.SubscribeParams{URI: uri}}); err != nil {
			t.Fatalf("subscribing to %s: %v", uri, err)
		}
	}
	countOf := func(got []string, uri string) int {
		return len(slices.DeleteFunc(slices.Clone(got), func(u string) bool { return u != uri }))
	}
	// updates sends github's update and then docs' (in reach throughout),
	// waits for docs' n-th, and returns the updates the client was sent
	// by then: the session's notifications arrive in the order sent.
	updates := func(n int) []string {
		t.Helper()
		github.updated("github://doc")
		docs.updated("docs://doc")
		var got []string
		eventually(t, "docs' update", func() bool {
			got = updatesOf(notes())
			return countOf(got, "docs://doc") == n
		})
		return got
	}
	if got := updates(1); countOf(got, "github://doc") != 1 {
		t.Fatalf("updates in reach: %v, want github's", got)
	}
	view.v.Store(&globView{"docs__*"}) // a reload takes github out of the profile...
	m.Resync()
	if got := updates(2); countOf(got, "github://doc") != 1 {
		t.Errorf("updates after github left the caller's reach: %v, want no new one of github's", got)
	}
	view.v.Store(&globView{"github__*", "docs__*"}) // ...and the next gives it back
	m.Resync()
	if got := updates(3); countOf(got, "github://doc") != 2 {
		t.Errorf("updates after github came back in reach: %v, want github's again", got)
	}
}

// templateSource serves resource templates whose reads answer with its
// name, and counts the URIs it is asked to watch.
type templateSource struct {
	name      string
	templates []string
	mu        sync.Mutex
	watched   []string
}

func (s *templateSource) Resources(context.Context) ([]Resource, []ResourceTemplate, error) {
	var ts []ResourceTemplate
	for _, tpl := range s.templates {
		ts = append(ts, ResourceTemplate{URITemplate: tpl, Name: s.name + " " + tpl, Read: func(_ context.Context, uri string) ([]ResourceContents, error) {
			text := s.name
			return []ResourceContents{{URI: uri, Text: &text}}, nil
		}})
	}
	return nil, ts, nil
}

func (s *templateSource) SubscribeResource(_ context.Context, uri string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.watched = append(s.watched, uri)
	return nil
}
func (s *templateSource) UnsubscribeResource(context.Context, string) error { return nil }
func (s *templateSource) OnResourceUpdated(func(string, map[string]any))    {}

func (s *templateSource) watching() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.watched)
}

// TestTemplatesServeInOrder: a URI that templates of two sources match,
// or that the same template of both does, is read through the first
// source added, every time, and subscribed to at that source: mcp-go
// picked among matching templates in its map's order (at random), and
// kept the last of two equal ones, where subscriptions went to the first.
func TestTemplatesServeInOrder(t *testing.T) {
	first := &templateSource{name: "first", templates: []string{"x://item/{id}", "y://{id}"}}
	second := &templateSource{name: "second", templates: []string{"x://{+path}", "y://{id}"}}
	cat := NewCatalog(nil)
	m := NewMCPServer(&MCPOptions{Name: "t", Version: "1", Catalog: cat, Pipeline: NewPipeline(&Options{Tools: cat})})
	m.AddResourceSource(first)
	m.AddResourceSource(second)
	_, raw := rpcAs(t, m, "local", `{"jsonrpc":"2.0","id":1,"method":"resources/templates/list"}`)
	if got := listed(t, raw, "resourceTemplates", "name"); !slices.Equal(got, []string{"first x://item/{id}", "first y://{id}", "second x://{+path}"}) {
		t.Errorf("templates listed: %v; want y://{id} once, first's", got)
	}
	for _, uri := range []string{"x://item/7", "y://7"} {
		for i := range 40 {
			errObj, raw := rpcAs(t, m, "local", fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"resources/read","params":{"uri":%q}}`, i+2, uri))
			if errObj != nil || !strings.Contains(raw, `"text":"first"`) {
				t.Fatalf("read %d of %s: %s; want it read through the first source's template", i+1, uri, raw)
			}
		}
		if err := m.subscribe(context.Background(), "s", uri); err != nil {
			t.Fatal(err)
		}
	}
	if got := first.watching(); !slices.Equal(got, []string{"x://item/7", "y://7"}) {
		t.Errorf("first source watching %v, second %v; want the first both", got, second.watching())
	}
	// What only the second's template matches is still its own.
	if _, raw := rpcAs(t, m, "local", `{"jsonrpc":"2.0","id":99,"method":"resources/read","params":{"uri":"x://docs/a"}}`); !strings.Contains(raw, `"text":"second"`) {
		t.Errorf("read of x://docs/a: %s; want the second source's", raw)
	}
}
