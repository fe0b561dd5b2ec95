package discovery

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/gateway"
)

// fixture: a catalog with n echo-like tools t0..t(n-1), the discovery
// toolset, and a pipeline bound to it.
func fixture(t *testing.T, n int, opts Options) (*Discovery, *gateway.Catalog, *gateway.Pipeline) {
	t.Helper()
	ctx := context.Background()
	cat := gateway.NewCatalog(nil)
	var tools []*gateway.Tool
	for i := range n {
		tl, err := gateway.NewDynamicTool(gateway.ToolDef{
			Name:        fmt.Sprintf("t%d", i),
			Description: fmt.Sprintf("Tool number %d; says its own name.", i),
			InputSchema: json.RawMessage(`{"type":"object","properties":{"word":{"type":"string","maxLength":5}}}`),
			Permissions: gateway.Permissions{Hints: gateway.ReadOnlyHints()},
		}, func(ctx context.Context, args map[string]any) (*gateway.Result, error) {
			return gateway.OkText(fmt.Sprintf("t%d %v", i, args["word"])), nil
		})
		if err != nil {
			t.Fatal(err)
		}
		tools = append(tools, tl)
	}
	ts, err := gateway.NewToolset("numbers", tools...)
	if err != nil {
		t.Fatal(err)
	}
	if err := cat.Add(ctx, ts); err != nil {
		t.Fatal(err)
	}
	d := addSearch(t, cat, opts)
	p := gateway.NewPipeline(&gateway.Options{Tools: cat})
	d.Bind(p)
	return d, cat, p
}

// catalogOf is a catalog of one toolset, named name, of tools.
func catalogOf(t *testing.T, name string, tools ...*gateway.Tool) *gateway.Catalog {
	t.Helper()
	ts, err := gateway.NewToolset(name, tools...)
	if err != nil {
		t.Fatal(err)
	}
	cat := gateway.NewCatalog(nil)
	if err := cat.Add(context.Background(), ts); err != nil {
		t.Fatal(err)
	}
	return cat
}

// addSearch adds tool search (opts, over cat) to cat, closed at the
// test's end; the caller binds it to its pipeline.
func addSearch(t *testing.T, cat *gateway.Catalog, opts Options) *Discovery {
	t.Helper()
	opts.Catalog = cat
	d, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	if err := cat.Add(context.Background(), d); err != nil {
		t.Fatal(err)
	}
	return d
}

type only map[string]bool

func (o only) Name() string            { return "only" }
func (o only) Admits(tool string) bool { return o[tool] }

func TestListingByMode(t *testing.T) {
	tests := []struct {
		name      string
		mode      string
		tools     int
		threshold int
		pinned    func(string) bool
		base      gateway.View
		listed    []string // of t0, t1, find_tools, call_tool
	}{
		{"all lists every tool", ModeAll, 5, 0, nil, nil, []string{"t0", "t1"}},
		{"search lists discovery and pinned", ModeSearch, 5, 0, func(s string) bool { return s == "t1" }, nil, []string{"t1", FindTools, CallTool}},
		{"auto below threshold lists all", ModeAuto, 5, 10, nil, nil, []string{"t0", "t1"}},
		{"auto above threshold searches", ModeAuto, 11, 10, nil, nil, []string{FindTools, CallTool}},
		{"auto counts the profile's tools only", ModeAuto, 11, 10, nil, only{"t0": true, "t1": true}, []string{"t0", "t1"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d, _, _ := fixture(t, tc.tools, Options{Mode: tc.mode, Threshold: tc.threshold, Pinned: tc.pinned})
			v := d.View(tc.base).(gateway.ListingView)
			var got []string
			for _, name := range []string{"t0", "t1", FindTools, CallTool} {
				if v.Admits(name) && v.Lists(name) {
					got = append(got, name)
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.listed) {
				t.Errorf("listed %v, want %v", got, tc.listed)
			}
		})
	}
}

// TestAutoFollowsTheCatalog: a catalog that grows past the threshold
// switches an auto view to search (the count is cached per catalog
// version, never stale).
func TestAutoFollowsTheCatalog(t *testing.T) {
	d, cat, _ := fixture(t, 3, Options{Mode: ModeAuto, Threshold: 4})
	v := d.View(nil).(gateway.ListingView)
	if !v.Lists("t0") {
		t.Fatal("3 tools, threshold 4: t0 not listed")
	}
	var more []*gateway.Tool
	for _, n := range []string{"x1", "x2"} {
		tl, _ := gateway.NewDynamicTool(gateway.ToolDef{Name: n}, func(context.Context, map[string]any) (*gateway.Result, error) { return gateway.OkText(""), nil })
		more = append(more, tl)
	}
	ts, _ := gateway.NewToolset("more", more...)
	if err := cat.Add(context.Background(), ts); err != nil {
		t.Fatal(err)
	}
	if v.Lists("t0") || !v.Lists(FindTools) {
		t.Error("5 tools, threshold 4: still listing everything")
	}
}

// TestCallToolIsTheRealCall: call_tool's inner call is validated against
// the real tool's schema, refused outside the caller's view, and refuses
// to nest discovery calls.
func TestCallToolIsTheRealCall(t *testing.T) {
	_, _, p := fixture(t, 3, Options{Mode: ModeSearch})
	ctx := context.Background()
	run := func(view gateway.View, args string) *gateway.Result {
		return p.Call(ctx, &gateway.Call{Name: CallTool, Arguments: json.RawMessage(args), View: view})
	}
	if res := run(nil, `{"name":"t2","arguments":{"word":"hi"}}`); res.IsError || res.OutputText() != "t2 hi" {
		t.Errorf("call_tool(t2) = %+v", res)
	}
	if res := run(nil, `{"name":"t2","arguments":{"word":"too long"}}`); res.Kind != gateway.KindInvalid {
		t.Errorf("call_tool(t2, word too long) kind %q, want %q: %s", res.Kind, gateway.KindInvalid, res.Message)
	}
	if res := run(nil, `{"name":"nope"}`); res.Kind != gateway.KindNotFound {
		t.Errorf("call_tool(nope) kind %q", res.Kind)
	}
	v := only{"t0": true, CallTool: true}
	if res := run(v, `{"name":"t1"}`); res.Kind != gateway.KindNotFound || !strings.Contains(res.Message, `profile "only"`) {
		t.Errorf("call_tool(t1) outside the view: kind %q, %s", res.Kind, res.Message)
	}
	if res := run(nil, `{"name":"call_tool","arguments":{"name":"t0"}}`); !res.IsError {
		t.Error("a nested call_tool was served")
	}
}

// TestCallToolKeepsTheCaller: call_tool's inner call is the outer call's
// caller (identity and OAuth principal), so that identity rules hold
// through it.
func TestCallToolKeepsTheCaller(t *testing.T) {
	d, cat, _ := fixture(t, 2, Options{Mode: ModeSearch})
	var seen []string
	p := gateway.NewPipeline(&gateway.Options{Tools: cat, Policy: gateway.PolicyFunc(func(ctx context.Context, tl *gateway.Tool) gateway.Decision {
		c := gateway.CallFrom(ctx)
		seen = append(seen, fmt.Sprintf("%s %s %v", tl.Name, c.Identity, c.Principal.HasScope("s")))
		return gateway.Decision{Allow: true}
	})})
	d.Bind(p)
	res := p.Call(context.Background(), &gateway.Call{Name: CallTool, Arguments: json.RawMessage(`{"name":"t1"}`),
		Identity: "sub:alice", Principal: &gateway.Principal{Scopes: []string{"s"}}})
	if res.IsError || len(seen) != 2 || seen[1] != "t1 sub:alice true" {
		t.Errorf("call_tool(t1): %s; the policy saw %q", res.OutputText(), seen)
	}
}

// roundApprover grants a call that answers its form, and asks otherwise,
// in a round of the call (as the client channel does a 2026-07-28 client).
type roundApprover struct{}

func (roundApprover) Approve(_ context.Context, call *gateway.Call) gateway.Approval {
	if _, ok := call.InputResponses[gateway.ApprovalInput]; ok && call.RequestState == "approval-state" {
		return gateway.Approval{Granted: true, Scope: "once", Channel: "client"}
	}
	return gateway.Approval{InputRequest: json.RawMessage(`{"message":"ok?"}`), RequestState: "approval-state"}
}

// TestCallToolAnswersRounds: a tool that needs approval in a round runs
// through call_tool as when called directly: the repeat's state and
// answers reach the inner call. The state stays bound to the tool and
// arguments it was minted for.
func TestCallToolAnswersRounds(t *testing.T) {
	d, cat, _ := fixture(t, 3, Options{Mode: ModeSearch})
	ask := gateway.PolicyFunc(func(_ context.Context, tl *gateway.Tool) gateway.Decision {
		if tl.Name == "t0" || tl.Name == "t1" {
			return gateway.Decision{Ask: true, Layer: "config", Rule: "ask"}
		}
		return gateway.Decision{Allow: true}
	})
	p := gateway.NewPipeline(&gateway.Options{Tools: cat, Policy: ask, Approver: roundApprover{}})
	d.Bind(p)
	ctx := context.Background()
	answer := map[string]json.RawMessage{gateway.ApprovalInput: json.RawMessage(`{"action":"accept"}`)}
	args := json.RawMessage(`{"name":"t0","arguments":{"word":"hi"}}`)
	r1 := p.Call(ctx, &gateway.Call{Name: CallTool, Arguments: args})
	if r1.Kind != gateway.KindInputRequired || r1.RequestState == "" {
		t.Fatalf("round 1: kind %q state %q; want input_required", r1.Kind, r1.RequestState)
	}
	if r2 := p.Call(ctx, &gateway.Call{Name: CallTool, Arguments: args, RequestState: r1.RequestState, InputResponses: answer}); r2.IsError || r2.OutputText() != "t0 hi" {
		t.Errorf("round 2 (approved): kind %q %q %s; want t0's answer", r2.Kind, r2.OutputText(), r2.Message)
	}
	// The state of t0's round does not approve t1.
	r3 := p.Call(ctx, &gateway.Call{Name: CallTool, Arguments: args})
	other := json.RawMessage(`{"name":"t1","arguments":{"word":"hi"}}`)
	if r4 := p.Call(ctx, &gateway.Call{Name: CallTool, Arguments: other, RequestState: r3.RequestState, InputResponses: answer}); r4.Kind != gateway.KindRequestError {
		t.Errorf("t0's round state with t1: kind %q %q; want a request error", r4.Kind, r4.Message)
	}
}

// TestFindToolsKeepsToTheView: find_tools never returns a tool the
// caller's view leaves out.
func TestFindToolsKeepsToTheView(t *testing.T) {
	_, _, p := fixture(t, 30, Options{Mode: ModeSearch})
	res := p.Call(context.Background(), &gateway.Call{Name: FindTools, Arguments: json.RawMessage(`{"query":"tool number says its own name","limit":20}`), View: only{"t3": true, "t7": true, FindTools: true}})
	if res.IsError {
		t.Fatal(res.Message)
	}
	var out struct{ Tools []foundTool }
	if err := json.Unmarshal([]byte(res.OutputText()), &out); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range out.Tools {
		names = append(names, f.Name)
	}
	if fmt.Sprint(names) != "[t3 t7]" && fmt.Sprint(names) != "[t7 t3]" {
		t.Errorf("found %v, want exactly t3 and t7", names)
	}
}

func TestMatchExpr(t *testing.T) {
	for in, want := range map[string]string{
		"Open a PR":                     `"open" OR "pr" OR "pull" OR "request"`,
		`read "x" AND NOT y*`:           `"read" OR "not"`,
		"the a of":                      ``,
		"getFileInfo for API-post-page": `"file" OR "info" OR "api" OR "post" OR "page"`,
	} {
		if got := matchExpr(in); got != want {
			t.Errorf("matchExpr(%q) = %s, want %s", in, got, want)
		}
	}
}

// TestFindToolsReachesASmallProfile: in a large catalog where the query
// matches hundreds of tools outside the caller's profile ahead of its
// own, find_tools still returns the profile's matching tools.
func TestFindToolsReachesASmallProfile(t *testing.T) {
	_, _, p := fixture(t, 600, Options{Mode: ModeSearch})
	res := p.Call(context.Background(), &gateway.Call{Name: FindTools, Arguments: json.RawMessage(`{"query":"tool number says its own name"}`), View: only{"t599": true, "t598": true, FindTools: true}})
	if res.IsError {
		t.Fatal(res.Message)
	}
	var out struct{ Tools []foundTool }
	json.Unmarshal([]byte(res.OutputText()), &out)
	var names []string
	for _, f := range out.Tools {
		names = append(names, f.Name)
	}
	if len(names) != 2 {
		t.Errorf("found %v (%s), want t598 and t599", names, res.OutputText())
	}
}

// TestCallToolOutsideTheViewLooksUnknown: a tool outside the caller's
// profile is answered exactly as a name no tool has, so call_tool cannot
// tell the caller which tools exist beyond its profile.
func TestCallToolOutsideTheViewLooksUnknown(t *testing.T) {
	_, _, p := fixture(t, 3, Options{Mode: ModeSearch})
	v := only{"t0": true, CallTool: true}
	call := func(name string) *gateway.Result {
		return p.Call(context.Background(), &gateway.Call{Name: CallTool, Arguments: json.RawMessage(`{"name":"` + name + `"}`), View: v})
	}
	hidden, unknown := call("t1"), call("t9")
	if hidden.Kind != gateway.KindNotFound || unknown.Kind != gateway.KindNotFound {
		t.Fatalf("kinds %q, %q; want not_found", hidden.Kind, unknown.Kind)
	}
	if got := strings.ReplaceAll(hidden.Message, "t1", "t9"); got != unknown.Message {
		t.Errorf("a tool outside the profile is told apart from an unknown one:\n hidden:  %s\n unknown: %s", hidden.Message, unknown.Message)
	}
}

// TestCallToolKeepsHiddenToolsUnknown: with tools hidden from the caller
// (policy.list_denied: hide, Options.Visible), call_tool answers a hidden
// tool as not found, as a direct tools/call does, and never suggests one.
func TestCallToolKeepsHiddenToolsUnknown(t *testing.T) {
	hidden := func(name string) bool { return name == "t1" }
	d, cat, _ := fixture(t, 3, Options{Mode: ModeSearch, Visible: func(_ context.Context, name string) bool { return !hidden(name) }})
	p := gateway.NewPipeline(&gateway.Options{Tools: cat, Policy: gateway.PolicyFunc(func(_ context.Context, tl *gateway.Tool) gateway.Decision {
		if hidden(tl.Name) {
			return gateway.Decision{Layer: "config", Rule: "policy.tools.deny:t1", Reason: "secret rule"}
		}
		return gateway.Decision{Allow: true}
	})})
	d.Bind(p)
	call := func(name string) *gateway.Result {
		return p.Call(context.Background(), &gateway.Call{Name: CallTool, Arguments: json.RawMessage(`{"name":"` + name + `"}`)})
	}
	if res := call("t1"); res.Kind != gateway.KindNotFound {
		t.Errorf("call_tool(t1), hidden: kind %q, %s; want not_found", res.Kind, res.Message)
	}
	if res := call("t8"); strings.Contains(res.Message, "t1") {
		t.Errorf("call_tool(t8) suggests the hidden t1: %s", res.Message)
	}
}

// slowApprover grants every call after a wait, as a person answering the
// operator's page would.
type slowApprover time.Duration

func (a slowApprover) Approve(ctx context.Context, _ *gateway.Call) gateway.Approval {
	select {
	case <-time.After(time.Duration(a)):
		return gateway.Approval{Granted: true, Scope: "once", Channel: "operator"}
	case <-ctx.Done():
		return gateway.Approval{Expired: true, Channel: "operator"}
	}
}

// TestCallToolKeepsTheToolsDeadline: a call through call_tool has the
// called tool's deadline, as a direct call has, not call_tool's own (the
// pipeline's limits.call_timeout): a tool with a longer timeout of its
// own (an upstream's call_timeout, a definition-only tool's wait) and
// the wait for a person's approval are not cut short by call_tool.
func TestCallToolKeepsTheToolsDeadline(t *testing.T) {
	const callTimeout = 100 * time.Millisecond
	slow, err := gateway.NewDynamicTool(gateway.ToolDef{
		Name:           "slow",
		Timeout:        5 * time.Second,
		HonoursContext: true,
		Permissions:    gateway.Permissions{Hints: gateway.ReadOnlyHints()},
	}, func(ctx context.Context, _ map[string]any) (*gateway.Result, error) {
		select {
		case <-time.After(3 * callTimeout):
			return gateway.OkText("done"), nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	quick, err := gateway.NewDynamicTool(gateway.ToolDef{Name: "asks", Permissions: gateway.Permissions{Hints: gateway.ReadOnlyHints()}},
		func(context.Context, map[string]any) (*gateway.Result, error) { return gateway.OkText("done"), nil })
	if err != nil {
		t.Fatal(err)
	}
	cat := catalogOf(t, "work", slow, quick)
	d := addSearch(t, cat, Options{Mode: ModeSearch})
	ask := gateway.PolicyFunc(func(_ context.Context, tl *gateway.Tool) gateway.Decision {
		if tl.Name == "asks" {
			return gateway.Decision{Ask: true, Layer: "config", Rule: "ask"}
		}
		return gateway.Decision{Allow: true}
	})
	p := gateway.NewPipeline(&gateway.Options{Tools: cat, Policy: ask, Approver: slowApprover(3 * callTimeout), CallTimeout: callTimeout})
	d.Bind(p)
	for _, name := range []string{"slow", "asks"} {
		t.Run(name, func(t *testing.T) {
			direct := p.Call(context.Background(), &gateway.Call{Name: name})
			if direct.IsError {
				t.Fatalf("direct call: %s %s", direct.Kind, direct.Message)
			}
			res := p.Call(context.Background(), &gateway.Call{Name: CallTool, Arguments: json.RawMessage(`{"name":"` + name + `"}`)})
			if res.IsError || res.OutputText() != "done" {
				t.Errorf("through call_tool: kind %q %q %s; want the tool's answer, as called directly", res.Kind, res.OutputText(), res.Message)
			}
		})
	}
}

// TestFindToolsNamesTheToolset: find_tools says which toolset serves each
// tool by the toolset's name as configured ("chrome-devtools", an
// upstream's), not by the words the index keeps of it.
func TestFindToolsNamesTheToolset(t *testing.T) {
	cat := gateway.NewCatalog(nil)
	for _, ts := range []struct{ toolset, tool string }{
		{"chrome-devtools", "chrome-devtools__navigate_page"},
		{"myServer", "myServer__navigate_map"},
	} {
		tl, err := gateway.NewDynamicTool(gateway.ToolDef{Name: ts.tool, Description: "Navigate somewhere."},
			func(context.Context, map[string]any) (*gateway.Result, error) { return gateway.OkText(""), nil })
		if err != nil {
			t.Fatal(err)
		}
		set, err := gateway.NewToolset(ts.toolset, tl)
		if err != nil {
			t.Fatal(err)
		}
		if err := cat.Add(context.Background(), set); err != nil {
			t.Fatal(err)
		}
	}
	d := addSearch(t, cat, Options{Mode: ModeSearch})
	p := gateway.NewPipeline(&gateway.Options{Tools: cat})
	d.Bind(p)
	for _, q := range []string{"navigate", "chrome-devtools__navigate_page"} {
		res := p.Call(context.Background(), &gateway.Call{Name: FindTools, Arguments: json.RawMessage(`{"query":"` + q + `"}`)})
		var out struct{ Tools []foundTool }
		if err := json.Unmarshal([]byte(res.OutputText()), &out); err != nil {
			t.Fatalf("%q: %v: %s", q, err, res.OutputText())
		}
		got := map[string]string{}
		for _, f := range out.Tools {
			got[f.Name] = f.Toolset
			if !strings.Contains(res.Message, f.Name+" ("+f.Toolset+"): ") {
				t.Errorf("%q: the message does not name %s's toolset %q: %s", q, f.Name, f.Toolset, res.Message)
			}
		}
		if got["chrome-devtools__navigate_page"] != "chrome-devtools" || q == "navigate" && got["myServer__navigate_map"] != "myServer" {
			t.Errorf("%q: toolsets %v, want chrome-devtools and myServer", q, got)
		}
	}
}

// TestFindToolsAnswersJSONWhenNothingMatches: find_tools' output is the
// JSON object docs/discovery.md promises whatever it finds, an empty
// list when nothing matches (the message says so), so that a client that
// reads the output as JSON does not fail on a query without matches.
func TestFindToolsAnswersJSONWhenNothingMatches(t *testing.T) {
	_, _, p := fixture(t, 3, Options{Mode: ModeSearch})
	for _, q := range []string{"quantum entanglement", "the a of", "t1"} {
		res := p.Call(context.Background(), &gateway.Call{Name: FindTools, Arguments: json.RawMessage(`{"query":"` + q + `"}`),
			View: only{"t0": true, FindTools: true}})
		if res.IsError {
			t.Fatalf("%q: %s", q, res.Message)
		}
		var out struct{ Tools []foundTool }
		if err := json.Unmarshal([]byte(res.OutputText()), &out); err != nil || out.Tools == nil || len(out.Tools) != 0 {
			t.Errorf("%q: output %q (%v), want {\"tools\":[]}", q, res.OutputText(), err)
		}
		if !strings.Contains(res.Message, "No tool matches") {
			t.Errorf("%q: message %q does not say nothing matched", q, res.Message)
		}
	}
}

// TestFindToolsBriefCounts: the brief counts in words that agree with the
// number found ("Found 1 tool", "Found 2 tools").
func TestFindToolsBriefCounts(t *testing.T) {
	_, _, p := fixture(t, 3, Options{Mode: ModeSearch})
	for _, c := range []struct {
		view gateway.View
		want string
	}{
		{only{"t0": true, FindTools: true}, "Found 1 tool for "},
		{only{"t0": true, "t1": true, FindTools: true}, "Found 2 tools for "},
	} {
		res := p.Call(context.Background(), &gateway.Call{Name: FindTools, Arguments: json.RawMessage(`{"query":"number"}`), View: c.view})
		if !strings.HasPrefix(res.Brief(), c.want) {
			t.Errorf("brief %q (%s), want it to start %q", res.Brief(), res.OutputText(), c.want)
		}
	}
}
