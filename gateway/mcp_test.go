package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// eventually waits up to 5s for cond, failing t, naming what it waited
// for, if it does not come.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func fullResult() *Result {
	size := int64(5)
	text := "embedded"
	return &Result{
		IsError: false,
		Output: []Part{
			Text("plain <text> & more"),
			ImagePart{Data: []byte{1, 2, 3}, MIMEType: "image/png"},
			AudioPart{Data: []byte{4, 5}, MIMEType: "audio/wav"},
			ResourceLinkPart{URI: "toolgate://artifacts/r/f.txt", Name: "f.txt", MIMEType: "text/plain", Size: &size},
			ResourcePart{Resource: ResourceContents{URI: "test://e", MIMEType: "text/plain", Text: &text}},
			RawPart{Type: "future", JSON: json.RawMessage(`{"type":"future","x":[1,2]}`)},
		},
		Message:    "Read 3 lines",
		Display:    []DisplayBlock{BriefBlock{Text: "3 lines"}, DiffBlock{Path: "a", Unified: "+x\n", Added: 1}, UnknownBlock{Type: "chart", JSON: json.RawMessage(`{"type":"chart","points":[1,2]}`)}},
		Extras:     map[string]any{"debug": "yes"},
		Structured: json.RawMessage(`{"lines":3}`),
		Meta:       map[string]json.RawMessage{"upstream/trace": json.RawMessage(`"abc"`)},
	}
}

// TestToMCPResultGolden pins the mapping of a Result onto an MCP result.
func TestToMCPResultGolden(t *testing.T) {
	for _, tc := range []struct {
		name string
		res  *Result
	}{
		{"mcp_result_full.json", fullResult()},
		{"mcp_result_denied.json", DeniedResult("delete_all", Decision{Layer: "runtime", Rule: "deny-destructive", Reason: "destructive tools are denied by default"})},
		// Nothing to show (an empty directory listed): no empty text
		// block, only the message; and with no message, content is [].
		{"mcp_result_nothing_to_show.json", OkText("").WithMessage("empty is empty.").WithBrief("Listed 0 entries in empty")},
		{"mcp_result_empty.json", OkText("")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := json.MarshalIndent(ToMCPResult("0193-call", tc.res), "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			golden(t, tc.name, append(b, '\n'))
		})
	}
}

// TestResultFromMCPRoundTrip maps a Result to MCP and back: nothing is lost,
// display blocks of unknown types included, so toolgate behind toolgate
// keeps everything.
func TestResultFromMCPRoundTrip(t *testing.T) {
	for _, res := range []*Result{fullResult(), DeniedResult("x", Decision{Layer: "runtime", Rule: "r"}), OkText("")} {
		wire, err := json.Marshal(ToMCPResult("id", res))
		if err != nil {
			t.Fatal(err)
		}
		back, err := ResultFromMCP(wire)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := json.Marshal(res)
		got, _ := json.Marshal(back)
		if !jsonEqual(want, got) {
			t.Errorf("round trip changed the result:\n got %s\nwant %s", got, want)
		}
		// And once more through MCP: the wire form is stable.
		wire2, _ := json.Marshal(ToMCPResult("id", back))
		if !jsonEqual(wire, wire2) {
			t.Errorf("second trip changed the wire form:\n%s\n%s", wire, wire2)
		}
	}
}

// The wire forms of tools/list and tools/call (schema bytes passed
// through, annotations, isError with the kind, -32602 for an unknown tool)
// are in the transcripts (transcript_test.go, testdata/transcripts).

func TestMCPUnknownToolIsRecorded(t *testing.T) {
	rec := newMemRecorder()
	p := newTestPipeline(t, rec, nil)
	m := NewMCPServer(&MCPOptions{Name: "t", Version: "1", Catalog: p.opts.Tools.(*Catalog), Pipeline: p})
	b := callOver(m, "no_such_tool", `{"token":"s3cret"}`)
	if !strings.Contains(string(b), `"code":-32602`) {
		t.Fatalf("unknown tool: %s (want a -32602 protocol error, as the MCP spec says)", b)
	}
	if len(rec.finished) != 1 {
		t.Fatalf("unknown-tool call recorded %d times, want 1", len(rec.finished))
	}
	for _, res := range rec.finished {
		if res.Kind != KindNotFound {
			t.Errorf("recorded as %q", res.Kind)
		}
	}
}

// --- The request's client: logs, sampling, elicitation, subscriptions,
// completions, through real mcp-go clients over streamable HTTP. ---

// eventRecorder is a memRecorder that also keeps events.
type eventRecorder struct {
	*memRecorder
	emu    sync.Mutex
	events []map[string]any
}

func (r *eventRecorder) Event(typ string, fields map[string]any) {
	r.emu.Lock()
	defer r.emu.Unlock()
	f := map[string]any{"type": typ}
	for k, v := range fields {
		f[k] = v
	}
	r.events = append(r.events, f)
}

func (r *eventRecorder) all() []map[string]any {
	r.emu.Lock()
	defer r.emu.Unlock()
	return slices.Clone(r.events)
}

// relayTools are tools that use the request's client as an upstream relay
// would.
func relayTools(t *testing.T) *SimpleToolset {
	t.Helper()
	obj := json.RawMessage(`{"type":"object"}`)
	relay := func(method string) ToolHandler {
		return func(ctx context.Context, call *Call) (*Result, error) {
			var args struct {
				Params json.RawMessage `json:"params"`
			}
			_ = json.Unmarshal(call.Arguments, &args)
			res, err := RequestFromClient(ctx, method, args.Params)
			if err != nil {
				var ce *ClientError
				if errors.As(err, &ce) {
					return Error(fmt.Sprintf("client error %d: %s", ce.Code, ce.Message), "client error"), nil
				}
				return Error(err.Error(), "relay failed"), nil
			}
			return OkText(string(res)), nil
		}
	}
	ts, err := NewToolset("relay",
		Must(NewTool(ToolDef{Name: "logs", InputSchema: obj}, func(ctx context.Context, call *Call) (*Result, error) {
			ReportLog(ctx, "debug", "lg", "below the level")
			ReportLog(ctx, "warning", "lg", map[string]any{"n": 1})
			return OkText(fmt.Sprint(ClientFrom(ctx) != nil)), nil
		})),
		// notify sends its client a notifications/elicitation/complete
		// after answering, from outside the call (as an upstream's comes).
		Must(NewTool(ToolDef{Name: "notify", InputSchema: obj}, func(ctx context.Context, call *Call) (*Result, error) {
			n, ok := ClientFrom(ctx).(Notifier)
			if ok {
				time.AfterFunc(50*time.Millisecond, func() {
					_ = n.Notify(string(mcp.MethodNotificationElicitationComplete), map[string]any{"elicitationId": "e-" + call.ID})
				})
			}
			return OkText(call.ID), nil
		})),
		Must(NewTool(ToolDef{Name: "sample", InputSchema: obj}, relay(MethodSampling))),
		Must(NewTool(ToolDef{Name: "elicit", InputSchema: obj}, relay(MethodElicitation))),
	)
	if err != nil {
		t.Fatal(err)
	}
	return ts
}

// relayServer serves the relay tools (and any sources) over streamable
// HTTP and returns the URL and the recorder.
func relayServer(t *testing.T, setup func(m *MCPServer)) (string, *eventRecorder) {
	t.Helper()
	cat := NewCatalog(nil)
	if err := cat.Add(context.Background(), relayTools(t)); err != nil {
		t.Fatal(err)
	}
	rec := &eventRecorder{memRecorder: newMemRecorder()}
	m := NewMCPServer(&MCPOptions{Name: "t", Version: "1", Catalog: cat, Pipeline: NewPipeline(&Options{Tools: cat, Recorder: rec, CallTimeout: 10 * time.Second})})
	if setup != nil {
		setup(m)
	}
	return serveMCP(t, m), rec
}

// serveMCP serves m over streamable HTTP on 127.0.0.1 for the test and
// returns its URL.
func serveMCP(t *testing.T, m *MCPServer) string {
	t.Helper()
	h, shutdown := m.HTTPHandler(HTTPOptions{})
	ts := httptest.NewServer(h)
	t.Cleanup(func() {
		_ = shutdown(context.Background())
		ts.CloseClientConnections()
		ts.Close()
	})
	return ts.URL + "/mcp"
}

// serveMCPStdio serves m over stdio on a pair of pipes for the test and
// returns the client's ends: what it writes to m, and m's output. At the
// test's cleanup the serve is stopped, both ends are closed (a serve
// blocked writing an answer nobody reads returns) and it is waited for.
// (BenchmarkStdioCall, in the external test package, sets up its pipes
// itself: it serves bare mcp-go too, and stops each serve at the end of
// its round, not at the benchmark's cleanup.)
func serveMCPStdio(t *testing.T, m *MCPServer) (*io.PipeWriter, *io.PipeReader) {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, stop := context.WithCancel(context.Background())
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = m.ServeStdio(ctx, inR, outW)
		_ = outW.Close()
	}()
	t.Cleanup(func() {
		stop()
		_ = inW.Close()
		_ = outR.Close()
		<-served
	})
	return inW, outR
}

type samplingFunc func(context.Context, mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error)

func (f samplingFunc) CreateMessage(ctx context.Context, r mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	return f(ctx, r)
}

type elicitFunc func(context.Context, mcp.ElicitationRequest) (*mcp.ElicitationResult, error)

func (f elicitFunc) Elicit(ctx context.Context, r mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	return f(ctx, r)
}

//lint:file-ignore SA1019 these tests are clients on the 2025 protocol revisions (GET stream, logging, subscriptions), which the mirror serves

// countNotified is how many of the notifications a client got so far
// (dialMCP's notes) are of method.
func countNotified(notes func() []mcp.JSONRPCNotification, method mcp.MCPMethod) int {
	n := 0
	for _, x := range notes() {
		if x.Method == string(method) {
			n++
		}
	}
	return n
}

// dialMCP connects a 2025-era mcp-go client (with the GET stream, which
// mcp-go's server uses for requests outside a call) and collects its
// notifications.
func dialMCP(t *testing.T, url string, opts ...client.ClientOption) (*client.Client, func() []mcp.JSONRPCNotification) {
	t.Helper()
	return dialMCPStream(t, url, true, opts...)
}

// dialMCPStream is dialMCP, with the GET stream only if listen (mcp-go's
// client opens none by default).
func dialMCPStream(t *testing.T, url string, listen bool, opts ...client.ClientOption) (*client.Client, func() []mcp.JSONRPCNotification) {
	t.Helper()
	topts := []transport.StreamableHTTPCOption{transport.WithHTTPLogger(slog.New(slog.DiscardHandler))}
	if listen {
		topts = append(topts, transport.WithContinuousListening())
	}
	tr, err := transport.NewStreamableHTTP(url, topts...)
	if err != nil {
		t.Fatal(err)
	}
	return startMCPClient(t, tr, opts...)
}

// startMCPClient starts a 2025-era mcp-go client on tr, initializes it and
// collects its notifications; it is closed at the test's cleanup.
func startMCPClient(t *testing.T, tr transport.Interface, opts ...client.ClientOption) (*client.Client, func() []mcp.JSONRPCNotification) {
	t.Helper()
	c := client.NewClient(tr, append([]client.ClientOption{client.WithProtocolVersion(mcp.LATEST_LEGACY_PROTOCOL_VERSION)}, opts...)...)
	var mu sync.Mutex
	var got []mcp.JSONRPCNotification
	c.OnNotification(func(n mcp.JSONRPCNotification) {
		mu.Lock()
		got = append(got, n)
		mu.Unlock()
	})
	// Start's context is the GET stream's.
	if err := c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := c.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{
		ProtocolVersion: mcp.LATEST_LEGACY_PROTOCOL_VERSION, ClientInfo: mcp.Implementation{Name: "test", Version: "1"},
	}}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c, func() []mcp.JSONRPCNotification {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(got)
	}
}

func callText(t *testing.T, c *client.Client, name, args string) (string, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: name, Arguments: json.RawMessage(args)}})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String(), res.IsError
}

func logsOf(ns []mcp.JSONRPCNotification) []map[string]any {
	var out []map[string]any
	for _, n := range ns {
		if n.Method == string(mcp.MethodNotificationMessage) {
			out = append(out, n.Params.AdditionalFields)
		}
	}
	return out
}

// TestClientNotify: a notification sent to a call's client after the call
// ended (an upstream's notifications/elicitation/complete) reaches that
// client's session, on its GET stream, and no other.
func TestClientNotify(t *testing.T) {
	url, _ := relayServer(t, nil)
	a, aNotes := dialMCP(t, url)
	_, bNotes := dialMCP(t, url)
	id, _ := callText(t, a, "notify", `{}`)
	var got map[string]any
	eventually(t, "a to get the completion", func() bool {
		for _, n := range aNotes() {
			if n.Method == string(mcp.MethodNotificationElicitationComplete) {
				got = n.Params.AdditionalFields
			}
		}
		return got != nil
	})
	if got["elicitationId"] != "e-"+id {
		t.Errorf("a got %v, want the completion of e-%s", got, id)
	}
	if n := countNotified(bNotes, mcp.MethodNotificationElicitationComplete); n != 0 {
		t.Errorf("b, another client, got %d completions", n)
	}
}

// TestClientLog: a log message reported for a call reaches that call's
// client, filtered by the client's level, before the call's result, and
// never another client.
func TestClientLog(t *testing.T) {
	url, _ := relayServer(t, nil)
	a, aGot := dialMCP(t, url)
	_, bGot := dialMCP(t, url)
	if err := a.SetLevel(context.Background(), mcp.SetLevelRequest{Params: mcp.SetLevelParams{Level: mcp.LoggingLevelInfo}}); err != nil {
		t.Fatal(err)
	}
	if out, isErr := callText(t, a, "logs", `{}`); isErr || out != "true" {
		t.Fatalf("logs: %q", out)
	}
	// Before the result: no wait needed.
	logs := logsOf(aGot())
	if len(logs) != 1 || logs[0]["level"] != "warning" || logs[0]["logger"] != "lg" || fmt.Sprint(logs[0]["data"]) != "map[n:1]" {
		t.Errorf("client a got %v", logs)
	}
	time.Sleep(100 * time.Millisecond)
	if logs := logsOf(bGot()); len(logs) != 0 {
		t.Errorf("client b got another client's log: %v", logs)
	}
}

// TestClientSamplingElicitation: requests reach the calling client with
// their params unchanged, answers come back, clients that did not declare
// the capability are not asked, and each relay is recorded.
func TestClientSamplingElicitation(t *testing.T) {
	url, rec := relayServer(t, nil)
	var gotSampling, gotElicit json.RawMessage
	capable, _ := dialMCP(t, url,
		client.WithSamplingHandler(samplingFunc(func(_ context.Context, r mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			gotSampling, _ = json.Marshal(r.CreateMessageParams)
			if r.SystemPrompt == "refuse" {
				return nil, errors.New("user rejected")
			}
			return &mcp.CreateMessageResult{SamplingMessage: mcp.SamplingMessage{Role: mcp.RoleAssistant, Content: mcp.NewTextContent("sampled!")}, Model: "m1", StopReason: "endTurn"}, nil
		})),
		client.WithElicitationHandler(elicitFunc(func(_ context.Context, r mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
			gotElicit, _ = json.Marshal(r.Params.RequestedSchema)
			return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{Action: mcp.ElicitationResponseActionAccept, Content: map[string]any{"name": "Ada", "age": 36}}}, nil
		})))
	plain, _ := dialMCP(t, url)

	out, isErr := callText(t, capable, "sample", `{"params":{"messages":[{"role":"user","content":{"type":"text","text":"hi"}}],"maxTokens":50,"metadata":{"k":[1,2]}}}`)
	if isErr || !strings.Contains(out, `"model":"m1"`) || !strings.Contains(out, `"text":"sampled!"`) {
		t.Errorf("sample: %s", out)
	}
	if !strings.Contains(string(gotSampling), `"metadata":{"k":[1,2]}`) || !strings.Contains(string(gotSampling), `"maxTokens":50`) {
		t.Errorf("the client got %s", gotSampling)
	}
	schema := `{"type":"object","properties":{"name":{"type":"string","default":"x"},"age":{"type":"integer","minimum":0}},"required":["name"]}`
	out, isErr = callText(t, capable, "elicit", `{"params":{"message":"Who?","requestedSchema":`+schema+`}}`)
	if isErr || !strings.Contains(out, `"action":"accept"`) || !strings.Contains(out, `"name":"Ada"`) {
		t.Errorf("elicit: %s", out)
	}
	if !jsonEqual(gotElicit, []byte(schema)) {
		t.Errorf("requestedSchema changed on the way: %s", gotElicit)
	}
	// A client error comes back as one.
	if out, isErr := callText(t, capable, "sample", `{"params":{"messages":[],"maxTokens":5,"systemPrompt":"refuse"}}`); !isErr || !strings.Contains(out, "user rejected") {
		t.Errorf("refused sampling: %s", out)
	}
	// A client without the capabilities is not asked.
	for _, tool := range []string{"sample", "elicit"} {
		if out, isErr := callText(t, plain, tool, `{"params":{"message":"m","requestedSchema":{"type":"object"},"messages":[],"maxTokens":5}}`); !isErr || !strings.Contains(out, ErrClientCannot.Error()) {
			t.Errorf("%s without the capability: %s", tool, out)
		}
	}

	var types []string
	for _, e := range rec.all() {
		types = append(types, fmt.Sprint(e["type"], " ", e["status"], " ", e["call_id"] != ""))
	}
	want := []string{"relay.sampling ok true", "relay.elicitation ok true", "relay.sampling error true"}
	if !slices.Equal(types, want) {
		t.Errorf("events %v, want %v", types, want)
	}
}

// fakeSource serves one resource and one template, and can be watched.
type fakeSource struct {
	mu       sync.Mutex
	subs     map[string]int // subscribe calls minus unsubscribe calls
	refuse   bool
	listener func(string, map[string]any)
	complete []string
}

func (s *fakeSource) Resources(context.Context) ([]Resource, []ResourceTemplate, error) {
	read := func(context.Context) ([]ResourceContents, error) { return nil, nil }
	return []Resource{{URI: "fake://watched", Name: "watched", Read: read}},
		[]ResourceTemplate{{URITemplate: "fake://item/{id}", Name: "item", Read: func(context.Context, string) ([]ResourceContents, error) { return nil, nil }}}, nil
}

func (s *fakeSource) SubscribeResource(_ context.Context, uri string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.refuse {
		return errors.New("no watching today")
	}
	s.subs[uri]++
	return nil
}

func (s *fakeSource) UnsubscribeResource(_ context.Context, uri string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.subs[uri]--
	return nil
}

func (s *fakeSource) OnResourceUpdated(f func(string, map[string]any)) { s.listener = f }

func (s *fakeSource) count(uri string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.subs[uri]
}

func (s *fakeSource) CompleteResource(_ context.Context, uri string, req CompletionRequest) (*Completion, error) {
	return &Completion{Values: []string{uri + ":" + req.Argument + "=" + req.Value}}, nil
}

func (s *fakeSource) Prompts(context.Context) ([]Prompt, error) {
	get := func(context.Context, map[string]string) (*PromptResult, error) { return &PromptResult{}, nil }
	return []Prompt{{Name: "greet", Arguments: []PromptArgument{{Name: "who"}}, Get: get}}, nil
}

func (s *fakeSource) CompletePrompt(_ context.Context, name string, req CompletionRequest) (*Completion, error) {
	var out []string
	for _, v := range s.complete {
		if strings.HasPrefix(v, req.Value) {
			out = append(out, v)
		}
	}
	return &Completion{Values: out, Total: len(out), HasMore: req.Context["lang"] == "more"}, nil
}

// plainPrompts is a prompt source that does not complete.
type plainPrompts struct{}

func (plainPrompts) Prompts(context.Context) ([]Prompt, error) {
	return []Prompt{{Name: "plain", Get: func(context.Context, map[string]string) (*PromptResult, error) { return &PromptResult{}, nil }}}, nil
}

func updatesOf(ns []mcp.JSONRPCNotification) []string {
	var out []string
	for _, n := range ns {
		if n.Method == string(mcp.MethodNotificationResourceUpdated) {
			out = append(out, fmt.Sprint(n.Params.AdditionalFields["uri"]))
		}
	}
	return out
}

// TestResourceSubscriptions: the source is subscribed once per URI
// whatever the number of sessions, unsubscribed when the last session
// unsubscribes or ends; updates reach the subscribed sessions only.
func TestResourceSubscriptions(t *testing.T) {
	src := &fakeSource{subs: map[string]int{}}
	url, _ := relayServer(t, func(m *MCPServer) { m.AddResourceSource(src) })
	a, aGot := dialMCP(t, url)
	b, bGot := dialMCP(t, url)
	c, cGot := dialMCP(t, url)
	ctx := context.Background()
	sub := func(cl *client.Client, uri string) error {
		return cl.Subscribe(ctx, mcp.SubscribeRequest{Params: mcp.SubscribeParams{URI: uri}})
	}
	unsub := func(cl *client.Client, uri string) error {
		return cl.Unsubscribe(ctx, mcp.UnsubscribeRequest{Params: mcp.UnsubscribeParams{URI: uri}})
	}
	for _, cl := range []*client.Client{a, b} {
		if err := sub(cl, "fake://watched"); err != nil {
			t.Fatal(err)
		}
	}
	if err := sub(a, "fake://watched"); err != nil { // again: no-op
		t.Fatal(err)
	}
	if err := sub(c, "fake://item/7"); err != nil { // through the template
		t.Fatal(err)
	}
	if n := src.count("fake://watched"); n != 1 {
		t.Errorf("source subscribed %d times to fake://watched, want 1", n)
	}
	if err := sub(a, "fake://nowhere"); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Errorf("unknown URI: %v", err)
	}

	src.listener("fake://watched", map[string]any{"uri": "fake://watched", "title": "W"})
	eventually(t, "updates for a and b", func() bool {
		return len(updatesOf(aGot())) == 1 && len(updatesOf(bGot())) == 1
	})
	time.Sleep(100 * time.Millisecond)
	if u := updatesOf(cGot()); len(u) != 0 {
		t.Errorf("c, not subscribed to fake://watched, got %v", u)
	}

	if err := unsub(a, "fake://watched"); err != nil {
		t.Fatal(err)
	}
	// Unsubscribing from what the session is not subscribed to, or what
	// no one is, is answered and changes nothing.
	for _, uri := range []string{"fake://watched", "fake://nowhere"} {
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err := a.Unsubscribe(ctx, mcp.UnsubscribeRequest{Params: mcp.UnsubscribeParams{URI: uri}})
		cancel()
		if err != nil {
			t.Fatalf("unsubscribing again from %s: %v", uri, err)
		}
	}
	if n := src.count("fake://watched"); n != 1 {
		t.Errorf("after one of two unsubscribed: source count %d, want 1", n)
	}
	src.listener("fake://watched", map[string]any{"uri": "fake://watched"})
	eventually(t, "b's second update", func() bool { return len(updatesOf(bGot())) == 2 })
	if u := updatesOf(aGot()); len(u) != 1 {
		t.Errorf("a got updates after unsubscribing: %v", u)
	}
	// The last session ends: the source is unsubscribed.
	_ = b.Close()
	eventually(t, "the source to be unsubscribed", func() bool { return src.count("fake://watched") == 0 })

	src.mu.Lock()
	src.refuse = true
	src.mu.Unlock()
	if err := sub(a, "fake://item/8"); err == nil || !strings.Contains(err.Error(), "no watching today") {
		t.Errorf("refused subscription: %v", err)
	}
}

// TestCompletions: completion/complete goes to the source that serves the
// prompt or template; others complete to nothing.
func TestCompletions(t *testing.T) {
	src := &fakeSource{subs: map[string]int{}, complete: []string{"alice", "albert", "bob"}}
	url, _ := relayServer(t, func(m *MCPServer) {
		m.AddPromptSource(src)
		m.AddPromptSource(plainPrompts{})
		m.AddResourceSource(src)
	})
	c, _ := dialMCP(t, url)
	if c.GetServerCapabilities().Completions == nil {
		t.Fatal("completions not declared")
	}
	complete := func(ref any, arg, value string, ctxArgs map[string]string) (*mcp.CompleteResult, error) {
		return c.Complete(context.Background(), mcp.CompleteRequest{Params: mcp.CompleteParams{
			Ref: ref, Argument: mcp.CompleteArgument{Name: arg, Value: value}, Context: mcp.CompleteContext{Arguments: ctxArgs}}})
	}
	res, err := complete(mcp.PromptReference{Type: "ref/prompt", Name: "greet"}, "who", "al", map[string]string{"lang": "more"})
	if err != nil || !slices.Equal(res.Completion.Values, []string{"alice", "albert"}) || res.Completion.Total != 2 || !res.Completion.HasMore {
		t.Errorf("greet: %+v %v", res, err)
	}
	res, err = complete(mcp.PromptReference{Type: "ref/prompt", Name: "plain"}, "x", "", nil)
	if err != nil || res.Completion.Values == nil || len(res.Completion.Values) != 0 {
		t.Errorf("plain: %+v %v", res, err)
	}
	if _, err := complete(mcp.PromptReference{Type: "ref/prompt", Name: "nope"}, "x", "", nil); err == nil {
		t.Error("unknown prompt completed")
	}
	res, err = complete(mcp.ResourceReference{Type: "ref/resource", URI: "fake://item/{id}"}, "id", "4", nil)
	if err != nil || !slices.Equal(res.Completion.Values, []string{"fake://item/{id}:id=4"}) {
		t.Errorf("template: %+v %v", res, err)
	}
}

// The listing toolgate writes past encoding/json (mcp.PreEncoded, a local
// patch of mcp-go) is byte for byte what encoding/json writes of the same
// response, for callers of both eras (mcp-go adds resultType and _meta to
// a 2026-07-28 caller's).
func TestPreEncodedListingEncodesAsEncodingJSON(t *testing.T) {
	p := newTestPipeline(t, newMemRecorder(), nil)
	m := NewMCPServer(&MCPOptions{Name: "toolgate-test", Version: "1", Catalog: p.opts.Tools.(*Catalog), Pipeline: p})
	for era, msg := range map[string]string{
		"2025-11-25": `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`,
		"2026-07-28": `{"jsonrpc":"2.0","id":"x","method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`,
	} {
		resp := m.MCPGoServer().HandleMessage(context.Background(), json.RawMessage(msg))
		r, ok := resp.(mcp.JSONRPCResponse)
		if !ok {
			t.Fatalf("%s: answered %#v", era, resp)
		}
		if _, ok := r.Result.(mcp.PreEncoded); !ok {
			t.Fatalf("%s: the listing is a %T, not pre-encoded", era, r.Result)
		}
		got, err := mcp.MarshalMessage(resp)
		if err != nil {
			t.Fatal(err)
		}
		want, err := json.Marshal(resp)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s: written\n%s\nencoding/json writes\n%s", era, got, want)
		}
		if era == "2026-07-28" && !bytes.Contains(got, []byte(`"resultType":"complete"`)) {
			t.Errorf("%s: no resultType in %s", era, got)
		}
	}
}

// ToolMeta may return one map for many tools (toolgate serve returns one
// per decision): each listed tool carries its members, a tool with
// members of its own (capabilities) gets them merged into a map of its
// own, and the shared map is never written.
func TestToolMetaSharedMapIsOnlyRead(t *testing.T) {
	p := newTestPipeline(t, newMemRecorder(), nil)
	shared := map[string]any{"x/decision": map[string]any{"allow": true}}
	calls := 0
	m := NewMCPServer(&MCPOptions{Name: "t", Version: "1", Catalog: p.opts.Tools.(*Catalog), Pipeline: p,
		ToolMeta: func(context.Context, *Tool) map[string]any { calls++; return shared }})
	b, _ := json.Marshal(m.srv.HandleMessage(context.Background(), json.RawMessage(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)))
	var list struct {
		Result mcp.ListToolsResult `json:"result"`
	}
	if err := json.Unmarshal(b, &list); err != nil {
		t.Fatal(err)
	}
	withCaps := 0
	for _, tool := range list.Result.Tools {
		entry, _, _ := p.opts.Tools.(*Catalog).Resolve(tool.Name)
		if tool.Meta == nil || !reflect.DeepEqual(tool.Meta.AdditionalFields["x/decision"], map[string]any{"allow": true}) {
			t.Errorf("%s: _meta %+v, want the shared decision", tool.Name, tool.Meta)
			continue
		}
		caps, _ := tool.Meta.AdditionalFields["toolgate/capabilities"].([]any)
		if len(caps) != len(entry.Permissions.Capabilities) {
			t.Errorf("%s: capabilities %v, want %v", tool.Name, caps, entry.Permissions.Capabilities)
		}
		if len(caps) > 0 {
			withCaps++
		}
	}
	if calls == 0 || withCaps == 0 || withCaps == len(list.Result.Tools) {
		t.Fatalf("ToolMeta called %d times, %d of %d tools with capabilities: the test needs both kinds", calls, withCaps, len(list.Result.Tools))
	}
	if len(shared) != 1 {
		t.Errorf("the shared map was written: %v", shared)
	}
}

// DecisionMeta's maps, shared by decision, start over past their bound
// and still answer each decision with its own members.
func TestDecisionMetaIsBounded(t *testing.T) {
	d := Decision{Allow: true, Layer: "runtime", Rule: "runtime.no_capabilities"}
	first := DecisionMeta(d)
	if reflect.ValueOf(first).Pointer() != reflect.ValueOf(DecisionMeta(d)).Pointer() {
		t.Error("one decision got two maps")
	}
	for i := range maxDecisionMetas + 1 {
		DecisionMeta(Decision{Rule: fmt.Sprintf("rule-%d", i)})
	}
	decisionMetas.mu.Lock()
	n := len(decisionMetas.m)
	decisionMetas.mu.Unlock()
	if n > maxDecisionMetas {
		t.Errorf("%d maps kept, more than %d", n, maxDecisionMetas)
	}
	want := map[string]any{"toolgate/decision": map[string]any{"allow": true, "layer": "runtime", "rule": "runtime.no_capabilities"}}
	if got := DecisionMeta(d); !reflect.DeepEqual(got, want) {
		t.Errorf("after starting over: %v, want %v", got, want)
	}
}

// namesView admits the tools it names.
type namesView map[string]bool

func (v namesView) Name() string            { return "named" }
func (v namesView) Admits(tool string) bool { return v[tool] }

// mcp-go asks toolgate at call time whether a tool is one the caller is
// listed (admitsCall, through the patch's WithToolCallFilter): a tool
// left out of tools/list by the view, the caller's own view or the
// policy's filter is "not found" when called, and every listed one is
// found.
func TestCallableExactlyWhenListed(t *testing.T) {
	for _, c := range []struct {
		name   string
		opts   func(o *MCPOptions)
		listed []string
	}{
		{"everything", func(*MCPOptions) {}, []string{"echo", "shell", "sleep"}},
		{"a view", func(o *MCPOptions) { o.View = namesView{"echo": true, "sleep": true} }, []string{"echo", "sleep"}},
		{"the caller's view", func(o *MCPOptions) { o.CallerView = func(*Call) View { return namesView{"shell": true} } }, []string{"shell"}},
		{"the policy's filter", func(o *MCPOptions) { o.ToolFilter = func(_ context.Context, t *Tool) bool { return t.Name != "echo" } }, []string{"shell", "sleep"}},
		{"all three", func(o *MCPOptions) {
			o.View = namesView{"echo": true, "sleep": true, "shell": true}
			o.CallerView = func(*Call) View { return namesView{"echo": true, "sleep": true} }
			o.ToolFilter = func(_ context.Context, t *Tool) bool { return t.Name != "sleep" }
		}, []string{"echo"}},
	} {
		p := newTestPipeline(t, newMemRecorder(), nil)
		o := &MCPOptions{Name: "t", Version: "1", Catalog: p.opts.Tools.(*Catalog), Pipeline: p}
		c.opts(o)
		m := NewMCPServer(o)
		b, _ := json.Marshal(m.srv.HandleMessage(context.Background(), json.RawMessage(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)))
		var list struct {
			Result mcp.ListToolsResult `json:"result"`
		}
		if err := json.Unmarshal(b, &list); err != nil {
			t.Fatal(err)
		}
		listed := map[string]bool{}
		for _, tool := range list.Result.Tools {
			listed[tool.Name] = true
		}
		for _, name := range []string{"echo", "shell", "sleep"} {
			if listed[name] != slices.Contains(c.listed, name) {
				t.Errorf("%s: %s listed %v, want %v", c.name, name, listed[name], !listed[name])
			}
			resp := callOver(m, name, `{"ms":1,"path":"a"}`)
			notFound := strings.Contains(string(resp), `"code":-32602`) && strings.Contains(string(resp), "not found")
			if notFound == listed[name] {
				t.Errorf("%s: calling %s (listed %v): %s", c.name, name, listed[name], resp)
			}
		}
	}
}

// callerRecorder keeps the caller of each call it records.
type callerRecorder struct {
	mu    sync.Mutex
	calls []seenCaller
}

type seenCaller struct {
	name, identity string
	view           View
}

func (r *callerRecorder) CallStarted(c *Call) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, seenCaller{c.Name, c.Identity, c.View})
	return nil
}

func (r *callerRecorder) CallFinished(*Call, *Result, time.Duration) {}

// The caller that mcp-go's call-time check works out (who, through which
// view) is the call's own (mcp-go copy item 39): the caller's view is
// asked once per tools/call, and the call runs as that caller through
// that view. A handler run again in the same context gets a Call of its
// own.
func TestCallerWorkedOutOncePerCall(t *testing.T) {
	rec := &callerRecorder{}
	p := newTestPipeline(t, rec, nil)
	var asked atomic.Int32
	view := namesView{"echo": true, "sleep": true}
	m := NewMCPServer(&MCPOptions{Name: "t", Version: "1", Catalog: p.opts.Tools.(*Catalog), Pipeline: p,
		View: namesView{"echo": true, "shell": true, "sleep": true},
		CallerView: func(c *Call) View {
			asked.Add(1)
			if c.Identity != "local" {
				t.Errorf("caller's view asked for identity %q", c.Identity)
			}
			return view
		}})
	for i := range 3 {
		resp := callOver(m, "echo", `{"path":"a"}`)
		if strings.Contains(string(resp), `"error"`) {
			t.Fatalf("call %d: %s", i, resp)
		}
		if got := asked.Load(); got != int32(i+1) {
			t.Fatalf("after %d calls the caller's view was asked %d times, want %d", i+1, got, i+1)
		}
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.calls) != 3 {
		t.Fatalf("%d calls recorded, want 3", len(rec.calls))
	}
	for _, c := range rec.calls {
		if c.name != "echo" || c.identity != "local" || c.view == nil || c.view.Name() != "named+named" || !c.view.Admits("sleep") || c.view.Admits("shell") {
			t.Errorf("recorded call %+v: want echo by local through both views", c)
		}
	}

	ctx, ok := m.admitsCall(context.Background(), "echo")
	if !ok {
		t.Fatal("echo not admitted")
	}
	first := admitted(ctx)
	if first == nil || first.Identity != "local" || first.View == nil {
		t.Fatalf("admitted call %+v: want local with a view", first)
	}
	req := mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "echo"}}
	if got := m.mcpCall(ctx, req); got != first || got.Name != "echo" {
		t.Errorf("the handler's call is not the admitted one named echo")
	}
	again := m.mcpCall(ctx, req)
	if again == first {
		t.Errorf("the admitted call was given out twice")
	}
	if again.Identity != "local" || again.View == nil || again.Name != "echo" {
		t.Errorf("a call made again in the same context %+v: want echo by local with a view", again)
	}
}

// Records name a client "name/version"; the joined names are kept, up to
// a bound (clients name themselves), and every name is right past it.
func TestClientName(t *testing.T) {
	if got := clientName("claude-code", "2.1.0"); got != "claude-code/2.1.0" {
		t.Errorf("clientName = %q", got)
	}
	if got := clientName("bare", ""); got != "bare" {
		t.Errorf("clientName without a version = %q", got)
	}
}

// A text block an upstream writes as mcp-go does is taken without
// decoding (plainTextBlock); what it gives must be what decoding gives,
// and anything else must still be decoded.
func TestResultFromMCPTextBlocks(t *testing.T) {
	for _, c := range []struct {
		block string
		want  Part
	}{
		{`{"type":"text","text":"hello"}`, TextPart{Text: "hello"}},
		{`{"type":"text","text":""}`, TextPart{}},
		{`{"type":"text","text":"tab\there \"quoted\" \u00e9"}`, TextPart{Text: "tab\there \"quoted\" é"}},
		{"{\"type\":\"text\",\"text\":\"bad \xff utf-8\"}", TextPart{Text: "bad \ufffd utf-8"}},
		{`{ "type": "text", "text": "spaced" }`, TextPart{Text: "spaced"}},
		{`{"text":"first","type":"text"}`, TextPart{Text: "first"}},
		{`{"type":"text","text":"a","annotations":{"priority":1}}`, TextPart{Text: "a", Annotations: json.RawMessage(`{"priority":1}`)}},
		{`{"type":"text","text":"a","x":"y"}`, RawPart{Type: "text", JSON: json.RawMessage(`{"type":"text","text":"a","x":"y"}`)}},
		{`{"type":"image","data":"aGk=","mimeType":"image/png"}`, RawPart{Type: "image", JSON: json.RawMessage(`{"type":"image","data":"aGk=","mimeType":"image/png"}`)}},
	} {
		res, err := ResultFromMCP([]byte(`{"content":[` + c.block + `]}`))
		if err != nil {
			t.Errorf("%s: %v", c.block, err)
			continue
		}
		if len(res.Output) != 1 || !reflect.DeepEqual(res.Output[0], c.want) {
			t.Errorf("%s: parts %#v, want %#v", c.block, res.Output, c.want)
		}
	}
}

// The content member as the result's one decoding takes it: absent or
// null is no output, an empty array an empty one, a repeated member the
// last, anything but an array an error that names it.
func TestResultFromMCPContentMember(t *testing.T) {
	hello := TextPart{Text: "hello"}
	for _, c := range []struct {
		result string
		want   []Part // nil: no output
	}{
		{`{}`, nil},
		{`{"content":null}`, nil},
		{`{"content":[]}`, []Part{}},
		{`{"content":[{"type":"text","text":"hello"},{"type":"text","text":"again"}]}`, []Part{hello, TextPart{Text: "again"}}},
		{`{"content":[{"type":"text","text":"first"}],"content":[{"type":"text","text":"hello"}]}`, []Part{hello}},
		{`{"content":[{"type":"text","text":"first"}],"content":null}`, nil},
		{`{"content":null,"content":[{"type":"text","text":"hello"}]}`, []Part{hello}},
	} {
		res, err := ResultFromMCP([]byte(c.result))
		if err != nil {
			t.Errorf("%s: %v", c.result, err)
			continue
		}
		if (res.Output == nil) != (c.want == nil) || !reflect.DeepEqual(res.Output, c.want) {
			t.Errorf("%s: output %#v, want %#v", c.result, res.Output, c.want)
		}
	}
	for _, bad := range []string{`{"content":"hello"}`, `{"content":{"type":"text","text":"hello"}}`, `{"content":[1]}`} {
		if _, err := ResultFromMCP([]byte(bad)); err == nil || !strings.Contains(err.Error(), "content") {
			t.Errorf("%s: error %v, want one about the content", bad, err)
		}
	}
}

// FuzzResultScan holds scanResult, the scan ResultFromMCP reads an
// upstream's result with, to json.Unmarshal: where it reads a result, it
// reads what json reads; where it leaves one to json, ResultFromMCP
// decodes it afresh; the result's bytes are never written to (the scan's
// content blocks are slices of them), and the Result keeps none of them.
func FuzzResultScan(f *testing.F) {
	for _, s := range []string{
		`{"content":[{"type":"text","text":"hello, toolgate"}]}`,
		` { "content" : [ {"type":"text","text":"a"} , {"type":"image","data":"AA==","mimeType":"image/png"} ] , "isError" : true } `,
		`{"content":[],"structuredContent":{"n":1},"isError":false,"_meta":{"toolgate/call_id":"x","k":null}}`,
		`{"content":null,"structuredContent":null,"isError":null,"_meta":null}`,
		`{"content":[{"type":"text","text":"a"}],"content":[{"type":"text","text":"bbbbbbbb"}]}`,
		`{"content":[{"type":"text","text":"a"}],"Content":[]}`,
		`{"content":[{"type":"text","text":"a"}],"isError":"yes"}`,
		`{"content":"hello"}`, `{"content":"]"}`,
		`{"_meta":{"a":1,"a":2,"toolgate/brief":"b"}}`,
		`{"_meta":{"\u0061":1}}`,
		`{"_meta":[]}`,
		`{"other":[[[[]]]],"content":[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}`,
		`null`, `[]`, `{}`, `{"content":[1,]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		orig := bytes.Clone(data)
		var got resultWire
		ok := scanResult(data, &got)
		var want resultWire
		err := json.Unmarshal(orig, &want)
		if ok {
			if err != nil {
				t.Fatalf("%s: scanned, where json fails: %v", orig, err)
			}
			if (got.Content == nil) != (want.Content == nil) || !slices.EqualFunc(got.Content, want.Content, func(a, b json.RawMessage) bool { return bytes.Equal(a, b) }) {
				t.Fatalf("%s: content %q, json %q", orig, got.Content, want.Content)
			}
			if (got.StructuredContent == nil) != (want.StructuredContent == nil) || !bytes.Equal(got.StructuredContent, want.StructuredContent) {
				t.Fatalf("%s: structuredContent %q, json %q", orig, got.StructuredContent, want.StructuredContent)
			}
			if got.IsError != want.IsError {
				t.Fatalf("%s: isError %v, json %v", orig, got.IsError, want.IsError)
			}
			if (got.Meta == nil) != (want.Meta == nil) || !reflect.DeepEqual(got.Meta, want.Meta) {
				t.Fatalf("%s: _meta %q, json %q", orig, got.Meta, want.Meta)
			}
		}
		res, rerr := ResultFromMCP(data)
		if !bytes.Equal(data, orig) {
			t.Fatalf("%s: ResultFromMCP wrote to the result's bytes: %s", orig, data)
		}
		var viaJSON *Result
		werr := err
		if werr == nil {
			viaJSON, werr = want.result()
		}
		if (werr == nil) != (rerr == nil) || werr == nil && !reflect.DeepEqual(res, viaJSON) {
			t.Fatalf("%s: ResultFromMCP %+v (%v), through json %+v (%v)", orig, res, rerr, viaJSON, werr)
		}
		for i := range data { // the Result keeps none of the bytes
			data[i] = 'x'
		}
		if werr == nil && !reflect.DeepEqual(res, viaJSON) {
			t.Fatalf("%s: the Result changed with the bytes it was read from: %+v", orig, res)
		}
	})
}

func FuzzPlainTextBlock(f *testing.F) {
	f.Add("hello")
	f.Add("<&> \u2028 \x01")
	f.Add("\xff\xfe")
	f.Fuzz(func(t *testing.T, text string) {
		for _, raw := range [][]byte{
			[]byte(`{"type":"text","text":"` + text + `"}`),
			func() []byte { b, _ := json.Marshal(map[string]string{"type": "text", "text": text}); return b }(),
		} {
			if !json.Valid(raw) {
				continue
			}
			got, ok := plainTextBlock(raw)
			var want struct{ Text string }
			if err := json.Unmarshal(raw, &want); err != nil {
				t.Fatal(err)
			}
			if ok && got != want.Text {
				t.Fatalf("%q: plainTextBlock %q, decoding %q", raw, got, want.Text)
			}
		}
	})
}

// mayHold is the prefilter that spares requests a decoding: it must say
// yes wherever encoding/json would find the text (a member's name in any
// case, with ſ or the Kelvin sign for s or k, or written with escapes),
// and may say no only where it cannot be.
func TestMayHold(t *testing.T) {
	for _, tc := range []struct {
		raw, text string
		want      bool
	}{
		{`{"params":{"task":{}}}`, `"task`, true},
		{`{"params":{"TaSk":{}}}`, `"task`, true},
		{`{"params":{"taſk":{}}}`, `"task`, true},
		{`{"params":{"tas` + "\u212a" + `":{}}}`, `"task`, true},
		{`{"params":{"t\u0061sk":{}}}`, `"task`, true},
		{`{"method":"tools\/call"}`, `"tools/call"`, true},
		{`{"method":"TOOLS/CALL"}`, `"tools/call"`, true}, // decoded, then left alone
		{`{"params":{"name":"echo"}}`, `"task`, false},
		{`{"params":{"name":"ému"}}`, `"cursor"`, true}, // non-ASCII, and cursor has an s
		{`{"params":{"name":"ému"}}`, `"_meta"`, false},
		{`{"method":"tools/list","params":{}}`, `"cursor"`, false},
		{`{"method":"tools/list","params":{"CURSOR":"x"}}`, `"cursor"`, true},
		{`"ta`, `"task`, false},
	} {
		if got := mayHold([]byte(tc.raw), tc.text); got != tc.want {
			t.Errorf("mayHold(%s, %s) = %v, want %v", tc.raw, tc.text, got, tc.want)
		}
	}
}

// FuzzMayHold: wherever encoding/json finds what a prefilter looks for (a
// member named task, cursor or x-mcp-header, in any spelling it accepts;
// a method "tools/call"), mayHold says the message may hold it.
func FuzzMayHold(f *testing.F) {
	for _, s := range []string{
		`{"task":{}}`, `{"TASK":1}`, `{"taſk":1}`, `{"t\u0061sk":1}`, `{"cursor":"c"}`, `{"CURSOR":"c"}`,
		`{"X-MCP-Header":"H"}`, `{"method":"tools\/call"}`, `{"method":"tools/call"}`, `{"name":"ému"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		var m struct {
			Task   json.RawMessage `json:"task"`
			Cursor json.RawMessage `json:"cursor"`
			Header json.RawMessage `json:"x-mcp-header"`
			Method string          `json:"method"`
		}
		if json.Unmarshal(raw, &m) != nil {
			return
		}
		for _, c := range []struct {
			found bool
			text  string
		}{
			{m.Task != nil, `"task`},
			{m.Cursor != nil, `"cursor"`},
			{m.Header != nil, `"x-mcp-header"`},
			{m.Method == "tools/call", `"tools/call"`},
		} {
			if c.found && !mayHold(raw, c.text) {
				t.Errorf("encoding/json finds %s in %q, mayHold says it cannot be there", c.text, raw)
			}
		}
	})
}

// TestToolMCPGoCannotServeIsLeftOut: a tool whose schema carries an
// x-mcp-header annotation mcp-go refuses (it panics in SetTools) is left
// out of tools/list, and a call of it says why; the toolset's other tools
// are listed and callable, whether the toolset is there at start or comes
// later (a list change, synced on the debounce timer).
func TestToolMCPGoCannotServeIsLeftOut(t *testing.T) {
	for _, tc := range []struct{ name, schema string }{
		{"not a header token", `{"type":"object","properties":{"a":{"type":"string","x-mcp-header":"bad header"}}}`},
		{"on an object", `{"type":"object","properties":{"a":{"type":"object","x-mcp-header":"A"}}}`},
	} {
		for _, late := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/late=%v", tc.name, late), func(t *testing.T) {
				p := newTestPipeline(t, newMemRecorder(), nil)
				cat := p.opts.Tools.(*Catalog)
				handler := func(ctx context.Context, c *Call) (*Result, error) { return OkText("ran " + c.Name), nil }
				bad := Must(NewTool(ToolDef{Name: "bad", InputSchema: json.RawMessage(tc.schema)}, handler))
				good := Must(NewTool(ToolDef{Name: "good"}, handler))
				ts, _ := NewToolset("hdr", bad, good)
				if !late {
					if err := cat.Add(context.Background(), ts); err != nil {
						t.Fatal(err)
					}
				}
				m := NewMCPServer(&MCPOptions{Name: "t", Version: "1", Catalog: cat, Pipeline: p, ListDebounce: time.Millisecond})
				if late {
					if err := cat.Add(context.Background(), ts); err != nil {
						t.Fatal(err)
					}
					// Reported only once the listing it goes with is in.
					eventually(t, "the bad tool reported unserved", func() bool { return m.Unserved()["bad"] != "" })
				}
				if why := m.Unserved()["bad"]; !strings.Contains(why, "x-mcp-header") {
					t.Errorf("reported reason %q, want one naming x-mcp-header", why)
				}
				do := func(msg string) string {
					b, _ := json.Marshal(m.srv.HandleMessage(context.Background(), json.RawMessage(msg)))
					return string(b)
				}
				list := do(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
				if !strings.Contains(list, `"name":"good"`) || strings.Contains(list, `"name":"bad"`) {
					t.Errorf("tools/list: %s (want good, not bad)", list)
				}
				if got := do(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"good","arguments":{}}}`); !strings.Contains(got, "ran good") {
					t.Errorf("call of good: %s", got)
				}
				if got := do(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"bad","arguments":{}}}`); strings.Contains(got, "ran bad") || !strings.Contains(got, "x-mcp-header") {
					t.Errorf("call of bad: %s (want a refusal that says why)", got)
				}
			})
		}
	}
}

// gatedSource is a fakeSource whose subscribe waits at a gate (an
// upstream slow to answer), saying when it got there.
type gatedSource struct {
	*fakeSource
	entered, gate chan struct{}
}

func (s *gatedSource) SubscribeResource(ctx context.Context, uri string) error {
	s.entered <- struct{}{}
	<-s.gate
	return s.fakeSource.SubscribeResource(ctx, uri)
}

// TestSubscribeUndoneWhenItsSessionEnds: a session that ends while its
// resources/subscribe is with the source leaves nothing behind, neither
// its entries nor the source's subscription.
func TestSubscribeUndoneWhenItsSessionEnds(t *testing.T) {
	p := newTestPipeline(t, newMemRecorder(), nil)
	m := NewMCPServer(&MCPOptions{Name: "t", Version: "1", Catalog: p.opts.Tools.(*Catalog), Pipeline: p})
	src := &gatedSource{fakeSource: &fakeSource{subs: map[string]int{}}, entered: make(chan struct{}, 1), gate: make(chan struct{})}
	m.AddResourceSource(src)
	const uri = "fake://watched"
	done := make(chan error, 1)
	go func() { done <- m.subscribe(context.Background(), "s1", uri) }()
	<-src.entered             // s1's subscribe is with the source
	m.dropSubscriptions("s1") // the session ends meanwhile
	close(src.gate)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	m.subMu.Lock()
	left, st, under := m.sessSubs["s1"], m.subs[uri], len(m.subscribing)
	m.subMu.Unlock()
	if left != nil || st != nil || under != 0 || src.count(uri) != 0 {
		t.Errorf("after the session ended: its entries %v, the resource's entry %v, subscribes under way %d, the source's subscriptions %d; want none",
			left, st != nil, under, src.count(uri))
	}
	// A session that stays keeps what it subscribed to.
	go func() { <-src.entered }()
	if err := m.subscribe(context.Background(), "s2", uri); err != nil || src.count(uri) != 1 {
		t.Errorf("a live session's subscribe: %v, source subscriptions %d", err, src.count(uri))
	}
}

// unofferingToolset does not offer "hidden", saying why.
type unofferingToolset struct{ *SimpleToolset }

func (unofferingToolset) Unoffered() map[string]string {
	return map[string]string{"hidden": "turned off in the secret toolset's config"}
}

// A tool a toolset does not offer is explained, when called, only to a
// caller whose view admits its name: outside the view (an endpoint's
// profile, the caller's own) it is answered as a name no tool has, so
// that a confined caller cannot learn what lies beyond its profile.
func TestUnofferedExplainedOnlyInsideTheView(t *testing.T) {
	for _, c := range []struct {
		name    string
		opts    func(o *MCPOptions)
		explain bool
	}{
		{"no view", func(*MCPOptions) {}, true},
		{"a view admitting it", func(o *MCPOptions) { o.View = namesView{"echo": true, "hidden": true} }, true},
		{"a view without it", func(o *MCPOptions) { o.View = namesView{"echo": true} }, false},
		{"the caller's view without it", func(o *MCPOptions) { o.CallerView = func(*Call) View { return namesView{"echo": true} } }, false},
	} {
		inner, _ := NewToolset("secret")
		p := newTestPipeline(t, newMemRecorder(), nil, unofferingToolset{inner})
		cat := p.opts.Tools.(*Catalog)
		o := &MCPOptions{Name: "t", Version: "1", Catalog: cat, Pipeline: p}
		c.opts(o)
		m := NewMCPServer(o)
		call := func(name string) string {
			resp := callOver(m, name, `{}`)
			return strings.ReplaceAll(string(resp), name, "NAME")
		}
		hidden, unknown := call("hidden"), call("nosuch")
		explained := strings.Contains(hidden, "secret toolset")
		if explained != c.explain {
			t.Errorf("%s: calling hidden: %s; explained %v, want %v", c.name, hidden, explained, c.explain)
		}
		if !c.explain && hidden != unknown {
			t.Errorf("%s: hidden answered %s, a name no tool has %s", c.name, hidden, unknown)
		}
	}
}

// TestSubscriptionFollowsItsResource: when the source serving a subscribed
// URI is removed and another one serves it (a reload that changed the
// upstream), the old one is unsubscribed, the new one subscribed, the
// subscribed session is told the resource may have changed and gets the
// new source's updates (never the old one's), and its unsubscribe reaches
// the new source.
func TestSubscriptionFollowsItsResource(t *testing.T) {
	var m *MCPServer
	before := &fakeSource{subs: map[string]int{}}
	url, _ := relayServer(t, func(mm *MCPServer) { m = mm; m.AddResourceSource(before) })
	a, aGot := dialMCP(t, url)
	ctx := context.Background()
	const uri = "fake://watched"
	if err := a.Subscribe(ctx, mcp.SubscribeRequest{Params: mcp.SubscribeParams{URI: uri}}); err != nil {
		t.Fatal(err)
	}
	// The reload: the old source goes; until its replacement serves the
	// URI (an upstream connecting), the subscription waits, holding no
	// reference to the source that left.
	m.RemoveResourceSource(before)
	eventually(t, "the old source to be unsubscribed", func() bool { return before.count(uri) == 0 })
	m.subMu.Lock()
	st := m.subs[uri]
	held, kept := st != nil && st.src != nil, st != nil && len(st.sessions) == 1
	m.subMu.Unlock()
	if held || !kept {
		t.Errorf("unserved URI: the entry holds the removed source %v, keeps its session %v", held, kept)
	}
	after := &fakeSource{subs: map[string]int{}}
	m.AddResourceSource(after)
	eventually(t, "the new source to be subscribed", func() bool { return after.count(uri) == 1 })
	eventually(t, "the client to be told the resource may have changed", func() bool { return len(updatesOf(aGot())) == 1 })

	before.listener(uri, map[string]any{"uri": uri}) // a retired source's late update
	after.listener(uri, map[string]any{"uri": uri})
	eventually(t, "the new source's update", func() bool { return len(updatesOf(aGot())) >= 2 })
	time.Sleep(100 * time.Millisecond)
	if u := updatesOf(aGot()); len(u) != 2 {
		t.Errorf("updates %v, want the rebinding's and the new source's only", u)
	}
	if err := a.Unsubscribe(ctx, mcp.UnsubscribeRequest{Params: mcp.UnsubscribeParams{URI: uri}}); err != nil {
		t.Fatal(err)
	}
	if n := after.count(uri); n != 0 {
		t.Errorf("the new source still subscribed (%d) after the last client unsubscribed", n)
	}
	m.subMu.Lock()
	left := len(m.subs)
	m.subMu.Unlock()
	if left != 0 {
		t.Errorf("%d subscription entries left", left)
	}
}

// With a tool not offered (memory writes disabled, a name refused), a
// call of any other tool is not decoded to learn that it is not that one:
// refuseUnoffered costs it no allocation.
func TestUnofferedSparesOtherCalls(t *testing.T) {
	inner, _ := NewToolset("secret")
	p := newTestPipeline(t, newMemRecorder(), nil, unofferingToolset{inner})
	cat := p.opts.Tools.(*Catalog)
	m := NewMCPServer(&MCPOptions{Name: "t", Version: "1", Catalog: cat, Pipeline: p})
	msg := json.RawMessage(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}`)
	if n := testing.AllocsPerRun(100, func() { _ = m.refuseUnoffered(context.Background(), nil, msg) }); n != 0 {
		t.Errorf("a call of echo, with hidden not offered: %v allocations in refuseUnoffered, want 0", n)
	}
	hidden := json.RawMessage(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"hidden","arguments":{}}}`)
	if err := m.refuseUnoffered(context.Background(), nil, hidden); err == nil {
		t.Error("a call of hidden was not refused")
	}
}

// emptyUpstream is a toolset with a namespace and no tools, whose status
// says why: an upstream that never connected.
type emptyUpstream struct{ *SimpleToolset }

func (emptyUpstream) Namespace() string { return "ev" }
func (emptyUpstream) Status() ToolsetStatus {
	return ToolsetStatus{State: "failed", Detail: "connect: connection refused"}
}

// TestEmptyNamespaceExplained: a call of a tool in the namespace of a
// toolset that serves no tools now (an upstream not connected) is told
// why, by MCP's tools/call (-32602, as for any unknown tool) and by the
// pipeline (call_tool, toolgate call); it was "not found", as if no such
// server were configured. A name in no such namespace, or outside the
// caller's view, is not found as before, and a call of another tool is
// not decoded to learn it is not one of them.
func TestEmptyNamespaceExplained(t *testing.T) {
	inner, _ := NewToolset("ev")
	p := newTestPipeline(t, newMemRecorder(), nil, emptyUpstream{inner})
	cat := p.opts.Tools.(*Catalog)
	const why = `toolset "ev" serves no tools now (failed: connect: connection refused)`
	for _, c := range []struct {
		name, tool string
		view       View
		explained  bool
	}{
		{"its namespace", "ev__get-sum", nil, true},
		{"another namespace", "other__get-sum", nil, false},
		{"a name that only starts alike", "evx__get-sum", nil, false},
		{"outside the view", "ev__get-sum", namesView{"echo": true}, false},
	} {
		m := NewMCPServer(&MCPOptions{Name: "t", Version: "1", Catalog: cat, Pipeline: p, View: c.view})
		resp := callOver(m, c.tool, `{}`)
		if got := strings.Contains(string(resp), strings.ReplaceAll(why, `"`, `\"`)); got != c.explained || !strings.Contains(string(resp), `"code":-32602`) {
			t.Errorf("%s: tools/call answered %s; explained %v, want %v, with -32602", c.name, resp, got, c.explained)
		}
		res := p.Call(context.Background(), &Call{Name: c.tool, View: c.view})
		if got := strings.Contains(res.Message, why); got != c.explained || res.Status() != "not_found" {
			t.Errorf("%s: the pipeline answered %s %q; explained %v, want %v", c.name, res.Status(), res.Message, got, c.explained)
		}
	}
	m := NewMCPServer(&MCPOptions{Name: "t", Version: "1", Catalog: cat, Pipeline: p})
	msg := json.RawMessage(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}`)
	if n := testing.AllocsPerRun(100, func() { _ = m.refuseUnoffered(context.Background(), nil, msg) }); n != 0 {
		t.Errorf("a call of echo, with an empty namespace: %v allocations in refuseUnoffered, want 0", n)
	}
}

// TestToolNotFoundSuggests: a tools/call of a name no tool has is told the
// nearest tools the caller may call, by the JSON-RPC error and in its
// record, as call_tool's not-found result is; never a tool outside the
// caller's view.
func TestToolNotFoundSuggests(t *testing.T) {
	for _, c := range []struct {
		name, tool string
		view       View
		want       string
	}{
		{"near a tool", "echp", nil, "tool 'echp' not found; did you mean echo?"},
		{"near a tool outside the view", "shel", namesView{"echo": true}, "tool 'shel' not found"},
		{"near a tool inside the view", "shel", nil, "tool 'shel' not found; did you mean shell?"},
		{"near nothing", "zzzzzz", nil, "tool 'zzzzzz' not found"},
	} {
		rec := newMemRecorder()
		p := newTestPipeline(t, rec, nil)
		m := NewMCPServer(&MCPOptions{Name: "t", Version: "1", Catalog: p.opts.Tools.(*Catalog), Pipeline: p, View: c.view})
		resp := callOver(m, c.tool, `{}`)
		if code, msg := rpcError(resp); code != -32602 || msg != c.want {
			t.Errorf("%s: %s, want -32602 %q", c.name, resp, c.want)
		}
		rec.mu.Lock()
		var recorded []string
		for _, r := range rec.finished {
			recorded = append(recorded, r.Message)
		}
		rec.mu.Unlock()
		suffix := strings.TrimPrefix(c.want, "tool '"+c.tool+"' not found")
		if len(recorded) != 1 || recorded[0] != "Tool `"+c.tool+"` not found"+suffix {
			t.Errorf("%s: recorded %q, want the same suggestion", c.name, recorded)
		}
	}
}

// callOver answers a tools/call of name with args (a JSON object) through
// m's mcp-go server, and returns the answer as JSON.
func callOver(m *MCPServer, name, args string) []byte {
	resp, _ := json.Marshal(m.srv.HandleMessage(context.Background(),
		json.RawMessage(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"`+name+`","arguments":`+args+`}}`)))
	return resp
}

// rpcError is the code and message of a JSON-RPC answer's error (0 and ""
// for none).
func rpcError(resp []byte) (code int, message string) {
	var got struct {
		Error struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	_ = json.Unmarshal(resp, &got)
	return got.Error.Code, got.Error.Message
}
