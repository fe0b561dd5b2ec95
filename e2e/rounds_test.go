//lint:file-ignore SA1019 sampling is deprecated in 2026-07-28 (SEP-2577) but still in it, and relaying it is what these tests check

package e2e

import (
	"context"
	"encoding/json"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Multi round-trip (SEP-2322) through toolgate: the Go SDK's conformance
// everything-server behind toolgate asks for elicitation and sampling in
// its tools' results (input_required). A 2026-07-28 client answers through
// the rounds of its own call (toolgate's connection of that era to the
// upstream passes the rounds through, its state sealed); a 2025-11-25
// client answers the same tools through elicitation/create and
// sampling/createMessage (the upstream asks those over toolgate's
// 2025-11-25 connection, and toolgate relays them). The clients are real:
// the Go SDK's of both eras, the TypeScript SDK 2.x (2026-07-28) and 1.x
// (2025-11-25), whose handlers answer; every round is in the run archive. The
// server runs twice: as a stdio child ("go") and over streamable HTTP
// ("goh"), where the 2026-07-28 connection is stateless requests with the
// standard headers.
func TestMultiRoundTripRelay(t *testing.T) {
	t.Parallel()
	everything := confBuild(t, confEverythingServer)
	up := func(name string, where map[string]any) map[string]any {
		where["name"], where["startup_timeout"] = name, "20s"
		where["relay_sampling"], where["relay_elicitation"] = true, true
		return where
	}
	env := newEnv(t,
		set("upstreams", []any{
			up("go", map[string]any{"command": everything}),
			up("goh", map[string]any{"url": startGoEverythingHTTP(t, everything)}),
		}),
		set("policy.grants", []any{map[string]any{"tools": []string{"go__test_*", "goh__test_*"}, "capabilities": []string{"net"}}}),
		set("policy.destructive.allow", []string{"go__test_*", "goh__test_*"}),
		set("discovery.mode", "all"), // two upstreams' tools are over the search threshold
	)
	srv := env.StartHTTP(t)
	confWaitUpstreamReady(t, srv, "go", 20*time.Second)
	confWaitUpstreamReady(t, srv, "goh", 20*time.Second)
	// The mirror lists an upstream's tools moments after it is ready.
	probe := srv.Connect(t, era2025, nil)
	if !waitFor(10*time.Second, func() bool {
		res, err := probe.ListTools(callCtx(t), nil)
		if err != nil {
			return false
		}
		n := 0
		for _, tl := range res.Tools {
			if strings.HasSuffix(tl.Name, "__test_input_required_result_sampling") {
				n++
			}
		}
		return n == 2
	}) {
		res, _ := probe.ListTools(callCtx(t), nil)
		var names []string
		for _, tl := range res.Tools {
			names = append(names, tl.Name)
		}
		t.Fatalf("the tools of both upstreams are not listed: %v", names)
	}

	for _, era := range []string{era2026, era2025} {
		t.Run(era, func(t *testing.T) {
			var elicited, sampled atomic.Int32
			cs := srv.Connect(t, era, &ConnectOptions{Client: &mcp.ClientOptions{
				ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					elicited.Add(1)
					return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada " + era}}, nil
				},
				CreateMessageHandler: func(_ context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
					sampled.Add(1)
					return &mcp.CreateMessageResult{Role: "assistant", Model: "e2e", Content: &mcp.TextContent{Text: "Paris, says " + era}}, nil
				},
			}})
			for _, c := range []struct {
				tool, want string
				asked      *atomic.Int32
			}{
				{"go__test_input_required_result_elicitation", "Hello, Ada " + era + "!", &elicited},
				{"go__test_input_required_result_sampling", "Sampling response: Paris, says " + era, &sampled},
				{"goh__test_input_required_result_elicitation", "Hello, Ada " + era + "!", &elicited},
				{"goh__test_input_required_result_sampling", "Sampling response: Paris, says " + era, &sampled},
			} {
				before := c.asked.Load()
				r := call(t, cs, c.tool, map[string]any{})
				if r.IsError || textOf(r) != c.want {
					t.Errorf("%s: %q (error %v); want %q", c.tool, textOf(r), r.IsError, c.want)
				}
				if c.asked.Load() != before+1 {
					t.Errorf("%s: the client's handler was asked %d times; want once", c.tool, c.asked.Load()-before)
				}
			}
		})
	}

	// The TypeScript SDK 2.x client's multi round-trip driver, likewise.
	runRoundsClient(t, srv, "Ada ts", "go__test_input_required_result_elicitation", "Hello, Ada ts!",
		"go__test_input_required_result_sampling", "Sampling response: sampled for Ada ts")

	// The TypeScript SDK 1.x client (2025-11-25) answers the same tools
	// through the elicitation/create toolgate relays.
	for _, tool := range []string{"go__test_input_required_result_elicitation", "goh__test_input_required_result_elicitation"} {
		out := runElicitClient(t, srv.URL, tool, nil, map[string]any{"name": "Ada ts1"})
		if out.Result.IsError || out.Text() != "Hello, Ada ts1!" || len(out.Asked) != 1 {
			t.Errorf("TypeScript 1.x client, %s: %+v", tool, out)
		}
	}

	srv.Stop(t)
	a := env.Archive(t)
	relayed2025, byID := 0, a.toolsByCallID(t)
	for _, ev := range a.Events {
		if typ, _ := ev["type"].(string); typ == "relay.elicitation" || typ == "relay.sampling" {
			relayed2025++
			if id, _ := ev["call_id"].(string); byID[id].CallID == "" || ev["status"] != "ok" {
				t.Errorf("%s %v: not ok or without its call", typ, ev)
			}
		}
	}
	if asked := checkRounds(t, a); asked != 6 || relayed2025 != 6 {
		t.Errorf("events: %v; want 6 rounds asked and answered (2026-07-28: Go and TypeScript clients) and 6 requests relayed (2025-11-25: Go and TypeScript clients)", a.eventTypes())
	}
}

// checkRounds checks the rounds in a run archive: each relay.input_required
// is the event of a call recorded as input_required, round 1; each
// relay.round of the ok call that answered it, recorded as round 2 of it.
// It returns how many rounds were asked, after checking that each was
// answered.
func checkRounds(t *testing.T, a *Archive) int {
	t.Helper()
	byID := a.toolsByCallID(t)
	asked, answered := 0, 0
	for _, ev := range a.Events {
		typ, _ := ev["type"].(string)
		id, _ := ev["call_id"].(string)
		rec, ok := byID[id]
		switch typ {
		case "relay.input_required":
			asked++
			if !ok || rec.Status != "input_required" || ev["round"] != float64(1) {
				t.Errorf("relay.input_required %v: its call is recorded as %+v; want a call ending input_required, round 1", ev, rec)
			}
		case "relay.round":
			answered++
			of, _ := ev["of"].(string)
			if !ok || rec.Status != "ok" || rec.Round != 2 || rec.RoundOf != of || byID[of].Status != "input_required" {
				t.Errorf("relay.round %v: its call is recorded as %+v; want round 2 of the call that asked, ok", ev, rec)
			}
		}
	}
	if answered != asked {
		t.Errorf("%d rounds asked, %d answered", asked, answered)
	}
	return asked
}

// roundsClientOut is what e2e/js/rounds-client.mjs prints.
type roundsClientOut struct {
	ProtocolVersion string `json:"protocolVersion"`
	Calls           map[string]struct {
		IsError bool            `json:"isError"`
		Text    string          `json:"text"`
		Thrown  json.RawMessage `json:"thrown"`
	} `json:"calls"`
	Asked struct {
		Elicitation int `json:"elicitation"`
		Sampling    int `json:"sampling"`
	} `json:"asked"`
	URLs  []string        `json:"urls"`
	Error json.RawMessage `json:"error"`
}

// runRoundsClient runs the TypeScript SDK 2.x client of 2026-07-28
// against srv, calling an elicitation tool and a sampling tool, whose
// results must contain the given texts: its handlers answer with name,
// each once.
func runRoundsClient(t *testing.T, srv *Server, name, elicitTool, elicitWant, sampleTool, sampleWant string) {
	t.Helper()
	var out roundsClientOut
	runNode(t, "rounds-client.mjs", map[string]any{"url": srv.URL, "tools": []string{elicitTool, sampleTool}, "name": name,
		"arguments": map[string]any{sampleTool: map[string]any{"prompt": "capital of France?"}}}, &out)
	if out.Error != nil || out.ProtocolVersion != era2026 {
		t.Fatalf("the TypeScript client (2026-07-28): %s, protocol %q", out.Error, out.ProtocolVersion)
	}
	for tool, want := range map[string]string{elicitTool: elicitWant, sampleTool: sampleWant} {
		if c := out.Calls[tool]; c.IsError || !strings.Contains(c.Text, want) {
			t.Errorf("TypeScript client, %s: %+v; want a result with %q", tool, c, want)
		}
	}
	if out.Asked.Elicitation != 1 || out.Asked.Sampling != 1 {
		t.Errorf("TypeScript client's handlers asked %+v; want once each", out.Asked)
	}
}

// The other bridge: an upstream that speaks only 2025-11-25 (the
// reference server-everything) asks its caller with server-to-client
// requests; a 2026-07-28 client, which cannot be sent requests, is asked
// in the rounds of its call instead (toolgate keeps the call waiting
// between them), by the Go SDK and the TypeScript SDK clients alike.
func TestRoundsBridgeServerToClientRequests(t *testing.T) {
	t.Parallel()
	up := everythingStdio(t, "ev")
	up["relay_sampling"], up["relay_elicitation"] = true, true
	env := newEnv(t, set("upstreams", []any{up}))
	srv := env.StartHTTP(t)
	confWaitUpstreamReady(t, srv, "ev", 20*time.Second)

	var elicited, sampled atomic.Int32
	cs := srv.Connect(t, era2026, &ConnectOptions{Client: &mcp.ClientOptions{
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			elicited.Add(1)
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada go"}}, nil
		},
		CreateMessageHandler: func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			sampled.Add(1)
			return &mcp.CreateMessageResult{Role: "assistant", Model: "e2e", Content: &mcp.TextContent{Text: "sampled for Ada go"}}, nil
		},
	}})
	if r := call(t, cs, "ev__trigger-elicitation-request", map[string]any{}); r.IsError || !strings.Contains(textOf(r), "Ada go") || elicited.Load() != 1 {
		t.Errorf("Go SDK client, elicitation: %q (error %v), asked %d times; want the answer in the result, asked once", textOf(r), r.IsError, elicited.Load())
	}
	if r := call(t, cs, "ev__trigger-sampling-request", map[string]any{"prompt": "capital of France?"}); r.IsError || !strings.Contains(textOf(r), "sampled for Ada go") || sampled.Load() != 1 {
		t.Errorf("Go SDK client, sampling: %q (error %v), asked %d times; want the answer in the result, asked once", textOf(r), r.IsError, sampled.Load())
	}

	runRoundsClient(t, srv, "Ada ts", "ev__trigger-elicitation-request", "Ada ts", "ev__trigger-sampling-request", "sampled for Ada ts")

	srv.Stop(t)
	if asked := checkRounds(t, env.Archive(t)); asked != 4 {
		t.Errorf("%d rounds asked; want 4 (Go and TypeScript clients, elicitation and sampling)", asked)
	}
}

// startGoEverythingHTTP runs the Go SDK's conformance server (bin) on
// streamable HTTP with sessions and returns its URL (see startHTTPPeer).
func startGoEverythingHTTP(t *testing.T, bin string) string {
	t.Helper()
	return startHTTPPeer(t, "the Go SDK conformance server", func(port int) *exec.Cmd {
		return exec.Command(bin, "-http", "127.0.0.1:"+strconv.Itoa(port), "-stateless=false")
	}) + "/"
}
