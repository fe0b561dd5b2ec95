package gateway_test

// Benchmarks of the call path in process: what the pipeline and the MCP
// mirror cost on top of the tool's own handler. Every figure that matters is
// a ratio to a baseline measured in the same run (the x-bare metric), never
// an absolute time asserted in a test. Run:
//
//	go test -run='^$' -bench='^Benchmark(Pipeline|MCPCall)' -benchmem ./gateway
//
// bench/run.sh runs them with the other benchmarks and prints the ratios.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"github.com/toolgate/toolgate/e2e/bench/bare"
	"github.com/toolgate/toolgate/gateway"
	"github.com/toolgate/toolgate/gateway/runs"
	"github.com/toolgate/toolgate/gateway/telemetry"
	"github.com/toolgate/toolgate/policy"
	"github.com/toolgate/toolgate/toolsets/diagnostics"
)

// benchArgs are the arguments of every benchmarked echo call (those of
// bare.EchoCall).
var benchArgs = json.RawMessage(`{"text":"` + bare.EchoText + `"}`)

// benchCatalog is a catalog holding the diagnostics toolset (echo, the
// trivial tool).
func benchCatalog(tb testing.TB) *gateway.Catalog {
	tb.Helper()
	ts, err := diagnostics.New()
	if err != nil {
		tb.Fatal(err)
	}
	cat := gateway.NewCatalog(nil)
	if err := cat.Add(context.Background(), ts); err != nil {
		tb.Fatal(err)
	}
	return cat
}

// benchRun opens a real run archive in a temporary directory.
func benchRun(tb testing.TB) *runs.Run {
	tb.Helper()
	r, err := runs.Open(tb.TempDir(), nil)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { r.Close() })
	return r
}

// benchPolicy is the default effective policy (runtime safe defaults).
func benchPolicy(tb testing.TB) *policy.Effective {
	tb.Helper()
	p, err := policy.New(policy.Config{}, nil)
	if err != nil {
		tb.Fatal(err)
	}
	return p
}

// baselines holds the ns/op of each benchmark's baseline sub-benchmark from
// the latest run, so that the others can report their ratio to it.
var baselines sync.Map // string -> float64

func nsPerOp(b *testing.B) float64 { return float64(b.Elapsed().Nanoseconds()) / float64(b.N) }

// reportBaseline records b's ns/op as the baseline of group.
func reportBaseline(b *testing.B, group string) {
	baselines.Store(group, nsPerOp(b))
	b.ReportMetric(1, "x-bare")
}

// reportRatio reports b's ns/op as a multiple of group's baseline.
func reportRatio(b *testing.B, group string) {
	if v, ok := baselines.Load(group); ok && v.(float64) > 0 {
		b.ReportMetric(nsPerOp(b)/v.(float64), "x-bare")
	}
}

// BenchmarkPipeline measures one echo call: the handler alone, then through
// the pipeline with each stage switched on one at a time, then with all of
// them (validation, the default policy, a real run archive, artifacts).
func BenchmarkPipeline(b *testing.B) {
	cat := benchCatalog(b)
	echo, _, ok := cat.Resolve("echo")
	if !ok {
		b.Fatal("no echo tool")
	}
	ctx := context.Background()

	b.Run("bare-handler", func(b *testing.B) {
		h := echo.Handler()
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			res, err := h(ctx, &gateway.Call{Name: "echo", Arguments: benchArgs})
			if err != nil || res.IsError {
				b.Fatal(err, res)
			}
		}
		reportBaseline(b, "pipeline")
	})

	// records-floor is the three appends a recorded call makes (its
	// tool.started and tool.completed events, its tools.jsonl line), with
	// lines of the same sizes, and nothing else: the part of +recording and
	// full that is the kernel's, which no code of ours can take away while a
	// call's records are in their files before it runs and before its answer.
	// records-floor-syscalls makes the same three writes to /dev/null: the
	// system calls alone, without a file system's work.
	recordsFloor := func(b *testing.B, events, tools *os.File) {
		lines := recordedLines(b, cat)
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			for _, w := range []struct {
				f    *os.File
				line []byte
			}{{events, lines.started}, {events, lines.completed}, {tools, lines.tool}} {
				if _, err := w.f.Write(w.line); err != nil {
					b.Fatal(err)
				}
			}
		}
		b.StopTimer()
		reportRatio(b, "pipeline")
	}
	open := func(b *testing.B, path string, flag int) *os.File {
		f, err := os.OpenFile(path, flag, 0o644)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { f.Close() })
		return f
	}
	b.Run("records-floor", func(b *testing.B) {
		dir := b.TempDir()
		flag := os.O_RDWR | os.O_CREATE | os.O_APPEND
		recordsFloor(b, open(b, filepath.Join(dir, "events.jsonl"), flag), open(b, filepath.Join(dir, "tools.jsonl"), flag))
	})
	b.Run("records-floor-syscalls", func(b *testing.B) {
		recordsFloor(b, open(b, os.DevNull, os.O_WRONLY), open(b, os.DevNull, os.O_WRONLY))
	})

	variants := []struct {
		name string
		opts func(b *testing.B) gateway.Options
	}{
		{"pipeline-minimal", func(b *testing.B) gateway.Options {
			return gateway.Options{Tools: cat, SkipValidation: true}
		}},
		{"+validation", func(b *testing.B) gateway.Options {
			return gateway.Options{Tools: cat}
		}},
		{"+policy", func(b *testing.B) gateway.Options {
			return gateway.Options{Tools: cat, SkipValidation: true, Policy: benchPolicy(b)}
		}},
		{"+recording", func(b *testing.B) gateway.Options {
			return gateway.Options{Tools: cat, SkipValidation: true, Recorder: benchRun(b)}
		}},
		{"full", func(b *testing.B) gateway.Options {
			r := benchRun(b)
			return gateway.Options{Tools: cat, Policy: benchPolicy(b), Recorder: r, Artifacts: r}
		}},
		// Traces on: the OTel SDK with a batching exporter that drops what
		// it is sent, so that the span's cost is measured, not an export.
		{"full+traces", func(b *testing.B) gateway.Options {
			r := benchRun(b)
			tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(tracetest.NewNoopExporter()))
			b.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
			return gateway.Options{Tools: cat, Policy: benchPolicy(b), Recorder: r, Artifacts: r, Tracer: tp.Tracer("bench")}
		}},
		// Metrics on: the Prometheus observer beside the run archive, as
		// serve wires it (metrics.enabled).
		{"full+metrics", func(b *testing.B) gateway.Options {
			r := benchRun(b)
			m := telemetry.New(telemetry.Sources{Toolsets: cat.Toolsets})
			return gateway.Options{Tools: cat, Policy: benchPolicy(b), Recorder: telemetry.Recorders(r, m), Artifacts: r}
		}},
	}
	for _, v := range variants {
		b.Run(v.name, func(b *testing.B) {
			opts := v.opts(b)
			p := gateway.NewPipeline(&opts)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				res := p.Call(ctx, &gateway.Call{Name: "echo", Arguments: benchArgs})
				if res.IsError {
					b.Fatal(res.Message)
				}
			}
			b.StopTimer()
			reportRatio(b, "pipeline")
		})
	}
}

// callLines are the record lines of one call, as a run archive writes them.
type callLines struct{ started, completed, tool []byte }

// recordedLines makes one echo call through a recording pipeline and returns
// its three record lines, read back from the run's files.
func recordedLines(tb testing.TB, cat *gateway.Catalog) callLines {
	tb.Helper()
	r := benchRun(tb)
	p := gateway.NewPipeline(&gateway.Options{Tools: cat, Recorder: r})
	if res := p.Call(context.Background(), &gateway.Call{Name: "echo", Arguments: benchArgs}); res.IsError {
		tb.Fatal(res.Message)
	}
	read := func(name string) [][]byte { // its lines, each with its '\n'
		data, err := os.ReadFile(filepath.Join(r.Dir(), name))
		if err != nil {
			tb.Fatal(err)
		}
		lines := bytes.SplitAfter(data, []byte("\n"))
		return lines[:len(lines)-1] // after the last '\n', nothing
	}
	var lines callLines
	for _, l := range read("events.jsonl") {
		switch {
		case bytes.Contains(l, []byte(`"type":"tool.started"`)):
			lines.started = l
		case bytes.Contains(l, []byte(`"type":"tool.completed"`)):
			lines.completed = l
		}
	}
	if tl := read(filepath.Join("logs", "tools.jsonl")); len(tl) == 1 {
		lines.tool = tl[0]
	}
	if lines.started == nil || lines.completed == nil || lines.tool == nil {
		tb.Fatalf("the call's record lines were not found in %s", r.Dir())
	}
	return lines
}

// BenchmarkPipelineParallel is the bare handler and the full pipeline with
// GOMAXPROCS goroutines calling at once: the cost of contention on the run
// archive's locks and files.
func BenchmarkPipelineParallel(b *testing.B) {
	cat := benchCatalog(b)
	echo, _, _ := cat.Resolve("echo")
	ctx := context.Background()
	b.Run("bare-handler", func(b *testing.B) {
		h := echo.Handler()
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if res, err := h(ctx, &gateway.Call{Name: "echo", Arguments: benchArgs}); err != nil || res.IsError {
					b.Error(err)
					return
				}
			}
		})
		reportBaseline(b, "parallel")
	})
	b.Run("full", func(b *testing.B) {
		r := benchRun(b)
		p := gateway.NewPipeline(&gateway.Options{Tools: cat, Policy: benchPolicy(b), Recorder: r, Artifacts: r})
		b.ReportAllocs()
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if res := p.Call(ctx, &gateway.Call{Name: "echo", Arguments: benchArgs}); res.IsError {
					b.Error(res.Message)
					return
				}
			}
		})
		b.StopTimer()
		reportRatio(b, "parallel")
	})
}

// toolgateMCPServer is toolgate's MCP mirror over the diagnostics toolset,
// with the pipeline configured as `toolgate serve` configures it (default
// policy, run archive as recorder and artifact store) unless minimal.
func toolgateMCPServer(b *testing.B, minimal bool) *server.MCPServer {
	return toolgateMirror(b, minimal).MCPGoServer()
}

// toolgateMirror is toolgate's MCP mirror over the bench catalog: with a
// minimal pipeline (no validation, policy, records or artifacts), or as
// served.
func toolgateMirror(tb testing.TB, minimal bool) *gateway.MCPServer {
	cat := benchCatalog(tb)
	opts := gateway.Options{Tools: cat, SkipValidation: minimal}
	mo := &gateway.MCPOptions{Name: "toolgate", Version: "bench", Catalog: cat}
	if !minimal {
		r := benchRun(tb)
		pol := benchPolicy(tb)
		opts.Policy, opts.Recorder, opts.Artifacts = pol, r, r
		mo.Artifacts = r
		// As toolgate serve has them: the default profile's view, and
		// the policy's view of each caller (none without identities).
		mo.View, mo.CallerView = everyTool{}, pol.IdentityView
	}
	mo.Pipeline = gateway.NewPipeline(&opts)
	return gateway.NewMCPServer(mo)
}

// everyTool is a view that admits every tool, as the default profile of
// a configuration without profiles does.
type everyTool struct{}

func (everyTool) Name() string       { return "default" }
func (everyTool) Admits(string) bool { return true }

// BenchmarkMCPCall measures a tools/call JSON-RPC message handled and its
// response encoded, as a transport does: by a bare mcp-go server and by
// toolgate's mirror (with a minimal pipeline, and as served).
func BenchmarkMCPCall(b *testing.B) {
	benchMCPCall(b, bare.EchoCall, "mcp")
}

// BenchmarkMCPCall2026 is BenchmarkMCPCall for a caller of 2026-07-28:
// the request carries the revision's _meta envelope, the result gets its
// resultType and serverInfo.
func BenchmarkMCPCall2026(b *testing.B) {
	benchMCPCall(b, json.RawMessage(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":`+string(benchArgs)+
		`,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"bench","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}}}`), "mcp2026")
}

func benchMCPCall(b *testing.B, msg json.RawMessage, ratio string) {
	run := func(b *testing.B, s *server.MCPServer) {
		benchMessage(b, s, msg, func(out []byte) error {
			var resp struct {
				Result *struct {
					IsError bool `json:"isError"`
					Content []struct {
						Text string `json:"text"`
					} `json:"content"`
				} `json:"result"`
			}
			if err := json.Unmarshal(out, &resp); err != nil || resp.Result == nil || resp.Result.IsError ||
				len(resp.Result.Content) == 0 || resp.Result.Content[0].Text != bare.EchoText {
				return fmt.Errorf("unexpected response %s (%v)", out, err)
			}
			return nil
		})
	}
	b.Run("bare-mcp-go", func(b *testing.B) {
		run(b, bare.NewServer())
		reportBaseline(b, ratio)
	})
	b.Run("toolgate-minimal", func(b *testing.B) {
		run(b, toolgateMCPServer(b, true))
		reportRatio(b, ratio)
	})
	b.Run("toolgate", func(b *testing.B) {
		run(b, toolgateMCPServer(b, false))
		reportRatio(b, ratio)
	})
}

// BenchmarkHTTPCall measures one tools/call over mcp-go's streamable HTTP
// transport in process: the request a client of each protocol version
// sends (bare.HTTPCall) handed to the transport's handler, the response
// recorded. Over 2026-07-28 every request carries its envelope and gets a
// session of its own, which the in-process tools/call of BenchmarkMCPCall2026
// leaves out; end to end it is hidden among the sockets' and the
// scheduler's costs.
func BenchmarkHTTPCall(b *testing.B) {
	for _, proto := range []string{"2025-11-25", "2026-07-28"} {
		group := "http" + proto
		b.Run(proto+"/bare-mcp-go", func(b *testing.B) {
			bare.BenchHTTPCall(b, server.NewStreamableHTTPServer(bare.NewServer()), proto)
			reportBaseline(b, group)
		})
		b.Run(proto+"/toolgate", func(b *testing.B) {
			h, stop := toolgateMirror(b, false).HTTPHandler(gateway.HTTPOptions{})
			b.Cleanup(func() { _ = stop(context.Background()) })
			bare.BenchHTTPCall(b, h, proto)
			reportRatio(b, group)
		})
	}
}

// BenchmarkStdioCall measures one tools/call over mcp-go's stdio transport,
// on pipes, from the line written to its answer read: the bare server
// served by the transport as its author would, and toolgate as served
// (MCPServer.ServeStdio), whose clients are mostly of this kind.
func BenchmarkStdioCall(b *testing.B) {
	run := func(b *testing.B, serve func(ctx context.Context, in io.Reader, out io.Writer) error) {
		inR, inW := io.Pipe()
		outR, outW := io.Pipe()
		ctx, cancel := context.WithCancel(context.Background())
		served := make(chan struct{})
		go func() {
			defer close(served)
			_ = serve(ctx, inR, outW)
		}()
		defer func() {
			cancel()
			_ = inW.Close()
			_ = outR.Close()
			<-served
		}()
		out := bufio.NewReader(outR)
		roundTrip := func(line []byte) []byte {
			if _, err := inW.Write(line); err != nil {
				b.Fatal(err)
			}
			answer, err := out.ReadBytes('\n')
			if err != nil {
				b.Fatal(err)
			}
			return answer
		}
		roundTrip([]byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}` + "\n"))
		if _, err := io.WriteString(inW, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n"); err != nil {
			b.Fatal(err)
		}
		call := append(bytes.Clone(bare.EchoCall), '\n')
		if answer := roundTrip(call); !bytes.Contains(answer, []byte(`"text":"`+bare.EchoText+`"`)) {
			b.Fatalf("unexpected answer %s", answer)
		}
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			roundTrip(call)
		}
		b.StopTimer()
	}
	b.Run("bare-mcp-go", func(b *testing.B) {
		run(b, server.NewStdioServer(bare.NewServer()).Listen)
		reportBaseline(b, "stdio")
	})
	b.Run("toolgate", func(b *testing.B) {
		run(b, toolgateMirror(b, false).ServeStdio)
		reportRatio(b, "stdio")
	})
}

// benchMessage measures one JSON-RPC message handled by s and its response
// encoded, as a transport does (mcp.MarshalMessage), after checking the response once outside
// the timer. b.SetBytes is the response's size.
func benchMessage(b *testing.B, s *server.MCPServer, msg json.RawMessage, check func(out []byte) error) {
	ctx := context.Background()
	out, err := mcp.MarshalMessage(s.HandleMessage(ctx, msg))
	if err != nil {
		b.Fatal(err)
	}
	if err := check(out); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.SetBytes(int64(len(out)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := mcp.MarshalMessage(s.HandleMessage(ctx, msg)); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
}

// The benchmarks' tools must keep working as the product changes: one
// quick check that runs with the unit tests.
func TestBenchSetup(t *testing.T) {
	cat := benchCatalog(t)
	r, err := runs.Open(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	p := gateway.NewPipeline(&gateway.Options{Tools: cat, Policy: benchPolicy(t), Recorder: r, Artifacts: r, CallTimeout: 5 * time.Second})
	res := p.Call(context.Background(), &gateway.Call{Name: "echo", Arguments: benchArgs})
	if res.IsError || res.OutputText() != bare.EchoText {
		t.Fatalf("echo through the full pipeline: %+v", res)
	}
	// BenchmarkHTTPCall's recorded requests, answered again and again.
	for _, proto := range []string{"2025-11-25", "2026-07-28"} {
		h, stop := toolgateMirror(t, false).HTTPHandler(gateway.HTTPOptions{})
		call, err := bare.NewHTTPCall(context.Background(), h, proto)
		if err != nil {
			t.Fatalf("%s: %v", proto, err)
		}
		for range 2 {
			if err := call.Do(); err != nil {
				t.Errorf("%s: %v", proto, err)
			}
		}
		_ = call.Close()
		_ = stop(context.Background())
	}
}

// listSchema is the input schema of every tool of BenchmarkToolsList: the
// size and shape of a real server's tool.
const listSchema = `{"type":"object","properties":{"query":{"type":"string","minLength":1,"maxLength":256,"description":"Free-text query; supports label:NAME and author:LOGIN"},"state":{"type":"string","enum":["open","closed","all"],"default":"open","description":"Issue state filter"},"limit":{"type":"integer","minimum":1,"maximum":100,"default":20,"description":"Maximum number of issues to return"}},"required":["query"],"additionalProperties":false}`

// BenchmarkToolsList measures tools/list of 2,000 tools (20 upstreams of
// 100, as the scale benchmark has them) handled and encoded: by a bare
// mcp-go server and by toolgate's mirror as served.
func BenchmarkToolsList(b *testing.B) {
	const n = 2000
	msg := json.RawMessage(`{"jsonrpc":"2.0","id":3,"method":"tools/list"}`)
	run := func(b *testing.B, s *server.MCPServer) {
		benchMessage(b, s, msg, func(out []byte) error {
			var resp struct {
				Result struct {
					Tools []json.RawMessage `json:"tools"`
				} `json:"result"`
			}
			if err := json.Unmarshal(out, &resp); err != nil || len(resp.Result.Tools) < n {
				return fmt.Errorf("tools/list listed %d tools (%v)", len(resp.Result.Tools), err)
			}
			return nil
		})
	}
	b.Run("bare-mcp-go", func(b *testing.B) {
		s := server.NewMCPServer("bare", "1.0.0", server.WithToolCapabilities(true))
		s.AddTools(bareListTools(n)...)
		run(b, s)
		reportBaseline(b, "list")
	})
	b.Run("toolgate", func(b *testing.B) {
		run(b, gateway.NewMCPServer(listMCPOptions(b, n)).MCPGoServer())
		reportRatio(b, "list")
	})
}

const listDesc = "Search the issue tracker for issues matching a query. Returns at most limit issues, newest first, with their number, title and state."

// bareListTools is n tools of BenchmarkToolsList as mcp-go's own.
func bareListTools(n int) []server.ServerTool {
	var tools []server.ServerTool
	for i := range n {
		tools = append(tools, server.ServerTool{Tool: mcp.NewToolWithRawSchema(fmt.Sprintf("u%02d__search_%03d", i/100, i%100), listDesc, json.RawMessage(listSchema)),
			Handler: func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) { return nil, nil }})
	}
	return tools
}

// listMCPOptions is toolgate's MCP mirror of a catalog of n tools in
// toolsets of 100 (as n/100 upstreams would give), as served.
func listMCPOptions(b *testing.B, n int) *gateway.MCPOptions {
	cat := benchCatalog(b)
	for u := range n / 100 {
		var tools []*gateway.Tool
		for i := range 100 {
			t, err := gateway.NewTool(gateway.ToolDef{Name: fmt.Sprintf("u%02d__search_%03d", u, i), Description: listDesc, InputSchema: json.RawMessage(listSchema)},
				func(context.Context, *gateway.Call) (*gateway.Result, error) { return gateway.OkText(""), nil })
			if err != nil {
				b.Fatal(err)
			}
			tools = append(tools, t)
		}
		ts, err := gateway.NewToolset(fmt.Sprintf("u%02d", u), tools...)
		if err != nil {
			b.Fatal(err)
		}
		if err := cat.Add(context.Background(), ts); err != nil {
			b.Fatal(err)
		}
	}
	r := benchRun(b)
	pol := benchPolicy(b)
	return &gateway.MCPOptions{
		Name: "toolgate", Version: "bench", Catalog: cat,
		Pipeline: gateway.NewPipeline(&gateway.Options{Tools: cat, Policy: pol, Recorder: r, Artifacts: r}), Artifacts: r,
		ToolFilter: func(ctx context.Context, t *gateway.Tool) bool { return true },
		// As toolgate serve's (cmd/toolgate, app.toolMeta): every tool
		// listed with the policy's decision.
		ToolMeta: func(ctx context.Context, t *gateway.Tool) map[string]any {
			return gateway.DecisionMeta(pol.Decide(ctx, t))
		},
	}
}

// BenchmarkInstallTools measures the work between the last upstream's
// listing and serving, at start-up: the MCP mirror taking a catalog of
// 2,000 tools (encoding each once for tools/list, installing them in
// mcp-go). The baseline is mcp-go installing the same tools itself.
func BenchmarkInstallTools(b *testing.B) {
	const n = 2000
	b.Run("bare-mcp-go", func(b *testing.B) {
		tools := bareListTools(n)
		b.ReportAllocs()
		for b.Loop() {
			server.NewMCPServer("bare", "1.0.0", server.WithToolCapabilities(true)).AddTools(tools...)
		}
		reportBaseline(b, "install")
	})
	b.Run("toolgate", func(b *testing.B) {
		opts := listMCPOptions(b, n)
		b.ReportAllocs()
		for b.Loop() {
			gateway.NewMCPServer(opts)
		}
		reportRatio(b, "install")
	})
}
