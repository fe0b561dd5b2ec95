package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/toolgate/toolgate/gateway"
)

// An upstream that speaks only 2026-07-28 (it refuses initialize) gets a
// 2026-07-28 main connection: listed, called with the envelope, asking in
// rounds that pass through sealed, and replaced when its child dies (no
// ping: the listen stream and the process tell).
func TestModernOnlyUpstream(t *testing.T) {
	u := start(t, stdio2026Config(t, "m"), nil, true)
	g := newGW(t, u)
	if st := u.Status(); !strings.Contains(st.Detail, "protocol 2026-07-28") {
		t.Fatalf("status %q; want the 2026-07-28 protocol", st.Detail)
	}
	ctx := context.Background()
	if got := mustOK(t, g.call(ctx, "m__echo", `{"text":"one"}`)); got != `{"text":"one"}` {
		t.Errorf("m__echo said %q", got)
	}

	// A round: the upstream's state is sealed; the repeat with the answer
	// reaches the upstream with its own state.
	call := &gateway.Call{Name: "m__ask_name", Arguments: json.RawMessage(`{}`), Identity: "local"}
	r1 := g.pipe.Call(ctx, call)
	if r1.Kind != gateway.KindInputRequired || !gateway.IsRoundState(r1.RequestState) || r1.InputRequests["name"] == nil {
		t.Fatalf("round 1: kind %q state %q requests %s", r1.Kind, r1.RequestState, r1.InputRequests)
	}
	r2 := g.pipe.Call(ctx, &gateway.Call{Name: "m__ask_name", Arguments: json.RawMessage(`{}`), Identity: "local",
		RequestState: r1.RequestState, InputResponses: map[string]json.RawMessage{"name": json.RawMessage(`{"action":"accept","content":{"name":"Ada"}}`)}})
	if got := mustOK(t, r2); got != "hello map[name:Ada]" {
		t.Errorf("round 2 said %q", got)
	}

	// The child dies: the supervisor notices without a ping and restarts it.
	c, _ := u.liveConn()
	_ = syscall.Kill(c.proc.cmd.Process.Pid, syscall.SIGKILL)
	eventually(t, 10*time.Second, "a new connection", func() bool { nc, _ := u.liveConn(); return nc != nil && nc != c })
	if got := mustOK(t, g.call(ctx, "m__echo", `{"text":"two"}`)); got != `{"text":"two"}` {
		t.Errorf("after the restart m__echo said %q", got)
	}
	if n := u.Restarts(); n != 1 {
		t.Errorf("%d restarts, want 1", n)
	}
}

// serveHTTP serves m over streamable HTTP until the test ends, and gives
// a client's transport to it.
func serveHTTP(t *testing.T, m *gateway.MCPServer) *transport.StreamableHTTP {
	t.Helper()
	h, shutdown := m.HTTPHandler(gateway.HTTPOptions{})
	ts := httptest.NewServer(h)
	t.Cleanup(func() {
		_ = shutdown(context.Background())
		ts.CloseClientConnections()
		ts.Close()
	})
	tr, err := transport.NewStreamableHTTP(ts.URL+"/mcp", transport.WithHTTPLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

type elicitAnswer string

func (a elicitAnswer) Elicit(context.Context, mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{Action: mcp.ElicitationResponseActionAccept, Content: map[string]any{"name": string(a)}}}, nil
}

// A 2025-11-25 client calling a tool of an upstream that asks in rounds
// answers through elicitation/create: the MCP mirror (mcp-go) asks it and
// repeats the call with the answer and the sealed state.
func TestModernOnlyUpstreamBridgedTo2025Client(t *testing.T) {
	u := start(t, stdio2026Config(t, "m"), nil, true)
	g := newGW(t, u)
	m := gateway.NewMCPServer(&gateway.MCPOptions{Name: "toolgate", Version: "test", Catalog: g.cat, Pipeline: g.pipe})
	c := client.NewClient(serveHTTP(t, m), client.WithProtocolVersion(mcp.LATEST_LEGACY_PROTOCOL_VERSION), client.WithElicitationHandler(elicitAnswer("Ada")))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	if _, err := c.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{
		ProtocolVersion: mcp.LATEST_LEGACY_PROTOCOL_VERSION, ClientInfo: mcp.Implementation{Name: "t", Version: "1"},
		Capabilities: mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapability{}},
	}}); err != nil {
		t.Fatal(err)
	}
	res, err := c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "m__ask_name", Arguments: map[string]any{}}})
	if err != nil {
		t.Fatal(err)
	}
	if res.IsError || len(res.Content) != 1 || res.Content[0].(mcp.TextContent).Text != "hello map[name:Ada]" {
		t.Errorf("m__ask_name answered %+v; want the greeting with the elicited name", res)
	}
}

// modernClient is a 2026-07-28 caller that declared nothing.
type modernClient struct{}

func (modernClient) SessionID() string             { return "" }
func (modernClient) Log(string, string, any) error { return nil }
func (modernClient) CanRequest(string) bool        { return false }
func (modernClient) Request(context.Context, string, json.RawMessage) (json.RawMessage, error) {
	return nil, gateway.ErrClientCannot
}
func (modernClient) CanAskInRounds(string) bool    { return false }
func (modernClient) Modern() bool                  { return true }
func (modernClient) Capabilities() json.RawMessage { return json.RawMessage(`{}`) }

// A legacy upstream that ignores server/discover (older SDKs drop
// methods they do not know) costs a 2026-07-28 caller at most the probe's
// bound, once: the call is served over the 2025-11-25 connection, the
// verdict holds for later callers while the main connection lasts, and
// Close ends a probe under way at once.
func TestModernProbeBounded(t *testing.T) {
	ctx := gateway.WithClient(context.Background(), modernClient{})
	cfg := serialConfig(t, "leg")
	cfg.StartupTimeout = time.Minute
	u := startTuned(t, cfg, nil, true, func(tu *tuning) { tu.modernProbe = 500 * time.Millisecond })
	g := newGW(t, u)
	t0 := time.Now()
	if got := mustOK(t, g.call(ctx, "leg__echo", `{}`)); got != "echo done" {
		t.Errorf("leg__echo said %q", got)
	}
	if d := time.Since(t0); d > 5*time.Second {
		t.Errorf("the 2026-07-28 caller waited %s for a probe bounded by 500ms", d.Round(time.Millisecond))
	}
	u.modernMu.Lock()
	s := u.modern
	s.failedAt = time.Now().Add(-time.Hour) // long past modernRetry
	u.modernMu.Unlock()
	if s == nil || !errors.Is(s.err, errModernUnsupported) {
		t.Fatalf("probe outcome %+v; want the upstream taken as not speaking 2026-07-28", s)
	}
	mustOK(t, g.call(ctx, "leg__echo", `{}`))
	u.modernMu.Lock()
	again := u.modern != s
	u.modernMu.Unlock()
	if again {
		t.Error("the next 2026-07-28 caller probed again")
	}

	// A probe under way when the upstream is closed.
	cfg.Name = "leg2"
	u2 := startTuned(t, cfg, nil, true, func(tu *tuning) { tu.modernProbe = time.Minute })
	g2 := newGW(t, u2)
	called := make(chan *gateway.Result, 1)
	go func() { called <- g2.call(ctx, "leg2__echo", `{}`) }()
	eventually(t, 10*time.Second, "the probe to be under way", func() bool {
		u2.modernMu.Lock()
		defer u2.modernMu.Unlock()
		return u2.modern != nil
	})
	closed := make(chan struct{})
	go func() { u2.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("Close waited for the server/discover probe")
	}
	select {
	case <-called:
	case <-time.After(10 * time.Second):
		t.Fatal("the call waiting on the probe did not end with Close")
	}
}

// protocol pins an upstream's connections to one era.
func TestProtocolPinned(t *testing.T) {
	ctx := gateway.WithClient(context.Background(), modernClient{})

	legacy := stdioConfig(t, "l")
	legacy.Protocol = ProtocolLegacy
	ul := start(t, legacy, nil, true)
	g := newGW(t, ul)
	if got := mustOK(t, g.call(ctx, "l__echo", `{"text":"x"}`)); got != `{"text":"x"}` {
		t.Errorf("l__echo said %q", got)
	}
	ul.modernMu.Lock()
	opened := ul.modern != nil
	ul.modernMu.Unlock()
	if opened {
		t.Error("a 2026-07-28 caller opened a second connection to an upstream pinned to 2025-11-25")
	}

	modern := stdioConfig(t, "n") // speaks both; pinned to 2026-07-28
	modern.Protocol = ProtocolModern
	un := start(t, modern, nil, true)
	if st := un.Status(); !strings.Contains(st.Detail, "protocol 2026-07-28") {
		t.Errorf("status %q; want the 2026-07-28 protocol", st.Detail)
	}
	g = newGW(t, un)
	if got := mustOK(t, g.call(context.Background(), "n__echo", `{"text":"y"}`)); got != `{"text":"y"}` {
		t.Errorf("n__echo said %q", got)
	}

	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{Name: "a", Command: "x", Protocol: "2024"}, `protocol "2024": must be auto, 2025-11-25 or 2026-07-28`},
		{Config{Name: "b", Transport: TransportSSE, URL: "http://127.0.0.1:1/sse", Protocol: ProtocolModern}, "the legacy SSE transport cannot carry it"},
	} {
		if err := c.cfg.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v; want %q", c.cfg, err, c.want)
		}
	}
}

// A failed task of the extension carries a JSON-RPC error, which becomes
// the call's protocol error with its code and data.
func TestModernTaskWire(t *testing.T) {
	var task modernTask
	if err := json.Unmarshal([]byte(`{"resultType":"complete","taskId":"t1","status":"failed","error":{"code":-32001,"message":"job crashed","data":{"why":"oom"}}}`), &task); err != nil {
		t.Fatal(err)
	}
	if task.Error == nil || task.Error.Code != -32001 || task.Error.Message != "job crashed" || string(task.Error.Data) != `{"why":"oom"}` {
		t.Errorf("decoded %+v, want the upstream's error", task.Error)
	}
}
