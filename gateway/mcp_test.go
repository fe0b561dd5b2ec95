package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
)

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

func TestMCPToolMapping(t *testing.T) {
	tool := Must(NewTool(ToolDef{
		Name: "grep", Title: "Grep", Description: "search",
		InputSchema: json.RawMessage(`{"anyOf":[{"required":["a"]}],"type":"object","description":"kept"}`),
		Permissions: Permissions{Capabilities: []string{"fs.read"}, Hints: ReadOnlyHints()},
	}, func(context.Context, *Call) (*Result, error) { return OkText(""), nil }))
	ts, _ := NewToolset("fs", tool)
	cat := NewCatalog(nil)
	_ = cat.Add(context.Background(), ts)
	m := NewMCPServer(MCPOptions{Name: "t", Version: "1", Catalog: cat, Pipeline: NewPipeline(Options{Tools: cat})})
	resp := m.Server().HandleMessage(context.Background(), json.RawMessage(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	b, _ := json.Marshal(resp)
	var out struct {
		Result struct {
			Tools []json.RawMessage `json:"tools"`
		} `json:"result"`
	}
	if err := json.Unmarshal(b, &out); err != nil || len(out.Result.Tools) != 1 {
		t.Fatalf("tools/list: %s", b)
	}
	var got struct {
		InputSchema json.RawMessage `json:"inputSchema"`
		Annotations map[string]any  `json:"annotations"`
		Meta        map[string]any  `json:"_meta"`
	}
	_ = json.Unmarshal(out.Result.Tools[0], &got)
	if !bytes.Equal(got.InputSchema, tool.InputSchema) {
		t.Errorf("inputSchema %s, want the bytes given %s", got.InputSchema, tool.InputSchema)
	}
	want := map[string]any{"title": "Grep", "readOnlyHint": true, "destructiveHint": false, "idempotentHint": true, "openWorldHint": false}
	for k, v := range want {
		if got.Annotations[k] != v {
			t.Errorf("annotation %s = %v, want %v", k, got.Annotations[k], v)
		}
	}
	if caps, _ := got.Meta["toolgate/capabilities"].([]any); len(caps) != 1 || caps[0] != "fs.read" {
		t.Errorf("_meta %v", got.Meta)
	}
}

func TestMCPCallMapsValidationToIsError(t *testing.T) {
	p := newTestPipeline(t, newMemRecorder(), nil)
	cat := p.opts.Tools.(*Catalog)
	m := NewMCPServer(MCPOptions{Name: "t", Version: "1", Catalog: cat, Pipeline: p})
	resp := m.Server().HandleMessage(context.Background(), json.RawMessage(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"path":"a","limit":5000}}}`))
	b, _ := json.Marshal(resp)
	var out struct {
		Result *mcp.CallToolResult `json:"result"`
	}
	if err := json.Unmarshal(b, &out); err != nil || out.Result == nil {
		t.Fatalf("response %s", b)
	}
	if !out.Result.IsError || !strings.Contains(string(b), `at '/limit': maximum 1000, got 5000`) || !strings.Contains(string(b), `"toolgate/kind":"invalid_arguments"`) {
		t.Fatalf("response %s", b)
	}
}

func TestMCPUnknownToolIsRecorded(t *testing.T) {
	rec := newMemRecorder()
	p := newTestPipeline(t, rec, nil)
	m := NewMCPServer(MCPOptions{Name: "t", Version: "1", Catalog: p.opts.Tools.(*Catalog), Pipeline: p})
	resp := m.Server().HandleMessage(context.Background(), json.RawMessage(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"no_such_tool","arguments":{"token":"s3cret"}}}`))
	b, _ := json.Marshal(resp)
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
