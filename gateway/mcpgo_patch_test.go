package gateway

// Tests of the speed items of the local mcp-go patch (third_party/README.md)
// that hold them to what mcp-go v1.2.1 did.
//
// Item 9 encodes tools/call results (mcp.CallToolResult.AppendJSON) and
// tools (mcp.Tool.MarshalJSON) by appending their members, and _meta
// objects without reflection: the bytes must be v1.2.1's, a map of the
// members encoded by encoding/json. Item 10 skips decoding a tool's schema for x-mcp-header
// annotations when its bytes cannot spell one: the bindings and the
// validation must be v1.2.1's.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"reflect"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"github.com/mark3labs/mcp-go/tracing"
)

// v121ResultJSON is how mcp-go v1.2.1 encoded a tools/call result.
func v121ResultJSON(r *mcp.CallToolResult) ([]byte, error) {
	m := map[string]any{}
	if r.Meta != nil {
		m["_meta"] = v121Meta(r.Meta)
	}
	if r.ResultType != "" {
		m["resultType"] = r.ResultType
	}
	content := make([]any, len(r.Content))
	for i, c := range r.Content {
		content[i] = c
	}
	m["content"] = content
	if len(r.RawStructuredContent) > 0 {
		m["structuredContent"] = json.RawMessage(r.RawStructuredContent)
	} else if r.StructuredContent != nil {
		m["structuredContent"] = r.StructuredContent
	}
	if r.IsError {
		m["isError"] = true
	}
	if len(r.InputRequests) > 0 {
		m["inputRequests"] = r.InputRequests
	}
	if r.RequestState != "" {
		m["requestState"] = r.RequestState
	}
	return json.Marshal(m)
}

// v121Meta is the map mcp-go v1.2.1 encoded for a _meta.
func v121Meta(meta *mcp.Meta) map[string]any {
	m := map[string]any{}
	if meta.ProgressToken != nil {
		m["progressToken"] = meta.ProgressToken
	}
	for k, v := range meta.AdditionalFields {
		m[k] = v
	}
	return m
}

// sameAsV121 checks an encoding and its error against v1.2.1's, and
// reports whether there are bytes to compare further (no error).
func sameAsV121(t *testing.T, name string, got []byte, err error, want []byte, wantErr error) bool {
	t.Helper()
	if (err != nil) != (wantErr != nil) {
		t.Fatalf("%s: error %v, v1.2.1 %v", name, err, wantErr)
	}
	if wantErr != nil {
		return false
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s: MarshalJSON\n%s\nv1.2.1\n%s", name, got, want)
	}
	return true
}

// checkResultEncoding compares every way a result is encoded with
// v1.2.1's bytes: its MarshalJSON, encoding/json by value and by pointer,
// and the transports' MarshalMessage of a response carrying it.
func checkResultEncoding(t *testing.T, name string, r *mcp.CallToolResult) {
	t.Helper()
	want, wantErr := v121ResultJSON(r)
	got, err := r.MarshalJSON()
	if !sameAsV121(t, name, got, err, want, wantErr) {
		return
	}
	for how, v := range map[string]any{"value": *r, "pointer": r} {
		if b, err := json.Marshal(v); err != nil || !bytes.Equal(b, want) {
			t.Fatalf("%s: json.Marshal by %s: %s (%v)", name, how, b, err)
		}
	}
	resp := mcp.JSONRPCResponse{JSONRPC: mcp.JSONRPC_VERSION, ID: mcp.NewRequestId(int64(7)), Result: r}
	msg, err := mcp.MarshalMessage(resp)
	if err != nil {
		t.Fatal(err)
	}
	wantMsg, _ := json.Marshal(mcp.JSONRPCResponse{JSONRPC: resp.JSONRPC, ID: resp.ID, Result: json.RawMessage(want)})
	if !bytes.Equal(msg, wantMsg) {
		t.Fatalf("%s: written\n%s\nv1.2.1\n%s", name, msg, wantMsg)
	}
}

func TestCallToolResultEncodesAsBefore(t *testing.T) {
	meta := func(fields map[string]any) *mcp.Meta { return &mcp.Meta{AdditionalFields: fields} }
	for _, c := range []struct {
		name string
		r    *mcp.CallToolResult
	}{
		{"empty", &mcp.CallToolResult{}},
		{"text", mcp.NewToolResultText("hello")},
		{"error", mcp.NewToolResultError("it broke <badly> & \"loudly\"")},
		{"image and text", &mcp.CallToolResult{Content: []mcp.Content{mcp.NewImageContent("aGk=", "image/png"), mcp.NewTextContent("x")}}},
		{"plain meta", &mcp.CallToolResult{Content: []mcp.Content{mcp.NewTextContent("x")},
			Result: mcp.Result{Meta: meta(map[string]any{"toolgate/brief": "Echoed 5 bytes", "toolgate/call_id": "0193-abc"})}}},
		{"meta needing escapes", &mcp.CallToolResult{Result: mcp.Result{Meta: meta(map[string]any{
			"a<b": "x>y", "q\"": "back\\slash", "ctl": "tab\there\nnew", "utf8": "é ü \u2028 \u2029", "bad": "\xff", "amp&": "&",
		})}}},
		{"meta values of every kind", &mcp.CallToolResult{Result: mcp.Result{Meta: meta(map[string]any{
			"t": true, "f": false, "n": nil, "i": 42, "fl": 1.5, "num": json.Number("12e3"), "raw": json.RawMessage(` { "a" : [1, 2] } `),
			"obj": map[string]any{"z": 1, "a": "<"}, "list": []any{"x", 1}, "empty": "",
		})}}},
		// Item 75: maps and []string members are encoded in place.
		{"meta maps and string lists", &mcp.CallToolResult{Result: mcp.Result{Meta: meta(map[string]any{
			"toolgate/decision":     map[string]any{"allow": true, "layer": "runtime", "rule": "runtime.no_capabilities"},
			"toolgate/capabilities": []string{"fs.read", "<a>&", "\u2028\xff"},
			"nested":                map[string]any{"b": map[string]any{"z": nil, "a": []string{}}, "a": map[string]any{}},
			"nil map":               map[string]any(nil), "nil list": []string(nil),
			"deep": map[string]any{"1": map[string]any{"2": map[string]any{"3": map[string]any{"4": map[string]any{"5": map[string]any{"6": "<deep>"}}}}}},
		})}}},
		{"meta map holding what json cannot encode", &mcp.CallToolResult{Result: mcp.Result{Meta: meta(map[string]any{
			"m": map[string]any{"ok": "x", "f": func() {}},
		})}}},
		{"many meta members", &mcp.CallToolResult{Result: mcp.Result{Meta: meta(map[string]any{
			"k1": "1", "k2": "2", "k3": "3", "k4": "4", "k5": "5", "k6": "6", "k7": "7", "k8": "8", "k9": "9", "k10": "10",
		})}}},
		{"empty meta", &mcp.CallToolResult{Result: mcp.Result{Meta: meta(map[string]any{})}}},
		{"nil meta fields", &mcp.CallToolResult{Result: mcp.Result{Meta: &mcp.Meta{}}}},
		{"progress token", &mcp.CallToolResult{Result: mcp.Result{Meta: &mcp.Meta{ProgressToken: "p1", AdditionalFields: map[string]any{"x": "y"}}}}},
		{"raw structured content with spaces", &mcp.CallToolResult{Content: []mcp.Content{mcp.NewTextContent("x")}, RawStructuredContent: json.RawMessage(" {\"a\": \"<b>\"} ")}},
		{"structured content", &mcp.CallToolResult{StructuredContent: map[string]any{"n": 1, "s": "&"}}},
		{"invalid raw structured content", &mcp.CallToolResult{RawStructuredContent: json.RawMessage(`{"a":`)}},
		{"input required", ToMCPResult("0193-call", InputRequiredResult(map[string]json.RawMessage{
			"name": json.RawMessage(`{"method":"elicitation/create","params":{"message":"name?","requestedSchema":{"type":"object"}}}`),
		}, "tgr1.abc<>", "asks"))},
		{"complete", &mcp.CallToolResult{Result: mcp.Result{ResultType: mcp.ResultTypeComplete}, Content: []mcp.Content{mcp.NewTextContent("done")}}},
		{"toolgate's result", ToMCPResult("0193-call", OkText("hello <there>").WithBrief("Echoed 13 bytes").
			WithDisplay(DiffBlock{Path: "a.txt", Unified: "@@ -1 +1 @@\n-a\n+b\n", Added: 1, Removed: 1}).
			WithExtra("k", map[string]any{"v": 1}))},
		{"toolgate's error", ToMCPResult("0193-call", Error("denied & logged", "refused"))},
		{"content blocks of every kind", &mcp.CallToolResult{Content: []mcp.Content{
			mcp.TextContent{Type: "text", Text: "annotated", Annotated: mcp.Annotated{Annotations: &mcp.Annotations{Audience: []mcp.Role{mcp.RoleUser}}}},
			mcp.TextContent{Type: "text", Text: "with meta", Meta: meta(map[string]any{"k": "v"})},
			&mcp.TextContent{Type: "text", Text: "a pointer"},
			mcp.TextContent{Text: "no type"},
			nil,
			mcp.NewEmbeddedResource(mcp.TextResourceContents{URI: "file:///a", Text: "<a>"}),
			mcp.NewTextContent("plain & <escaped>\u2028"),
		}}},
		{"no content, not nil", &mcp.CallToolResult{Content: []mcp.Content{}}},
	} {
		checkResultEncoding(t, c.name, c.r)
	}
	// A map that holds itself: json.Marshal refuses it, and so must the
	// encoding in place (not recurse until the stack runs out).
	cycle := map[string]any{"a": "x"}
	cycle["self"] = map[string]any{"again": cycle}
	if _, err := (&mcp.CallToolResult{Result: mcp.Result{Meta: meta(cycle)}}).MarshalJSON(); err == nil {
		t.Fatal("a _meta map that holds itself encoded")
	}
}

// FuzzCallToolResultEncoding: results with _meta members, text and
// structured content from the fuzzer encode as v1.2.1 encoded them.
func FuzzCallToolResultEncoding(f *testing.F) {
	f.Add("toolgate/brief", "Echoed 5 bytes", "hello", []byte(`{"a":1}`), false)
	f.Add("a<b", "\u2028\xff\"\\", "\x00\x1f", []byte(` [1, "x"] `), true)
	f.Add("", "", "", []byte(nil), false)
	f.Fuzz(func(t *testing.T, key, value, text string, structured []byte, isError bool) {
		r := &mcp.CallToolResult{
			Result:               mcp.Result{Meta: &mcp.Meta{AdditionalFields: map[string]any{key: value, "b" + key: true, "n" + key: nil, "s": text}}},
			Content:              []mcp.Content{mcp.NewTextContent(text)},
			RawStructuredContent: structured,
			IsError:              isError,
		}
		checkResultEncoding(t, "fuzzed", r)
	})
}

func TestParamHeaderAnnotationsFound(t *testing.T) {
	for _, c := range []struct {
		name, schema string
		want         []string // header of each binding
		invalid      bool
	}{
		{"none", `{"type":"object","properties":{"region":{"type":"string"}}}`, nil, false},
		{"annotated", `{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"}}}`, []string{"Region"}, false},
		{"annotated, nested", `{"type":"object","properties":{"o":{"type":"object","properties":{"r":{"type":"string","x-mcp-header":"Deep"}}}}}`, []string{"Deep"}, false},
		{"annotation spelled with an escape", `{"type":"object","properties":{"region":{"type":"string","x-mcp-head\u0065r":"Region"}}}`, []string{"Region"}, false},
		// encoding/json matches the member to mcp-go's field in any case.
		{"annotation in capitals", `{"type":"object","properties":{"region":{"type":"string","X-MCP-Header":"Region"}}}`, []string{"Region"}, false},
		{"invalid header name", `{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"bad name"}}}`, nil, true},
		{"unreadable schema", `{"type":"object","properties":[1]}`, nil, false},
	} {
		tool := &mcp.Tool{Name: "t", RawInputSchema: json.RawMessage(c.schema)}
		var got []string
		for _, b := range mcp.ExtractParamHeaderBindings(tool) {
			got = append(got, b.Header)
		}
		if c.invalid {
			got = nil
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("%s: bindings %v, want %v", c.name, got, c.want)
		}
		if err := mcp.ValidateParamHeaderAnnotations(tool); (err != nil) != c.invalid {
			t.Errorf("%s: validation says %v, want invalid=%v", c.name, err, c.invalid)
		}
	}
}

// v121ToolJSON is how mcp-go v1.2.1 encoded a tool.
func v121ToolJSON(t mcp.Tool) ([]byte, error) {
	m := map[string]any{"name": t.Name}
	if t.Title != "" {
		m["title"] = t.Title
	}
	if t.Description != "" {
		m["description"] = t.Description
	}
	if t.RawInputSchema != nil {
		if t.InputSchema.Type != "" {
			return nil, errors.New("both input schemas")
		}
		m["inputSchema"] = t.RawInputSchema
	} else {
		m["inputSchema"] = t.InputSchema
	}
	if t.RawOutputSchema != nil {
		if t.OutputSchema.Type != "" {
			return nil, errors.New("both output schemas")
		}
		m["outputSchema"] = t.RawOutputSchema
	} else if t.OutputSchema.Type != "" {
		m["outputSchema"] = t.OutputSchema
	}
	m["annotations"] = t.Annotations
	if t.DeferLoading {
		m["defer_loading"] = true
	}
	if t.Meta != nil {
		m["_meta"] = v121Meta(t.Meta)
	}
	if t.Icons != nil {
		m["icons"] = t.Icons
	}
	if t.Execution != nil {
		m["execution"] = t.Execution
	}
	return json.Marshal(m)
}

func checkToolEncoding(t *testing.T, name string, tool mcp.Tool) {
	t.Helper()
	want, wantErr := v121ToolJSON(tool)
	got, err := tool.MarshalJSON()
	if !sameAsV121(t, name, got, err, want, wantErr) {
		return
	}
	if b, err := json.Marshal(tool); err != nil || !bytes.Equal(b, want) {
		t.Fatalf("%s: json.Marshal: %s (%v)", name, b, err)
	}
	if b, err := json.Marshal([]mcp.Tool{tool}); err != nil || !bytes.Equal(b, []byte("["+string(want)+"]")) {
		t.Fatalf("%s: in a list: %s (%v)", name, b, err)
	}
}

func TestToolEncodesAsBefore(t *testing.T) {
	yes, no := true, false
	for _, c := range []struct {
		name string
		tool mcp.Tool
	}{
		{"bare", mcp.Tool{Name: "t"}},
		{"raw schema with spaces and HTML", mcp.NewToolWithRawSchema("search", "Find <things> & more", json.RawMessage(` { "type" : "object", "properties": {"q": {"type":"string", "pattern": "<a>"}} } `))},
		{"struct schema", mcp.NewTool("add", mcp.WithDescription("Adds"), mcp.WithNumber("a", mcp.Required()), mcp.WithNumber("b"))},
		{"every member", mcp.Tool{
			Meta: &mcp.Meta{AdditionalFields: map[string]any{"toolgate/toolset": "u01", "x<": json.RawMessage(` {"a": 1} `), "n": 1}},
			Name: "é\u2028name", Title: "A \"title\"", Description: "line\nbreak\ttab",
			RawInputSchema:  json.RawMessage(`{"type":"object"}`),
			RawOutputSchema: json.RawMessage(` {"type": "object", "properties": {}} `),
			Annotations:     mcp.ToolAnnotation{Title: "T", ReadOnlyHint: &yes, DestructiveHint: &no, OpenWorldHint: &yes},
			DeferLoading:    true,
			Icons:           []mcp.Icon{{Src: "data:image/png;base64,AAA=", MIMEType: "image/png", Sizes: []string{"48x48"}}},
			Execution:       &mcp.ToolExecution{TaskSupport: mcp.TaskSupportOptional},
		}},
		{"struct output schema", mcp.Tool{Name: "o", OutputSchema: mcp.ToolOutputSchema{Type: "object", Properties: map[string]any{"n": map[string]any{"type": "integer"}}}}},
		{"empty icons", mcp.Tool{Name: "i", Icons: []mcp.Icon{}}},
		{"progress token in meta", mcp.Tool{Name: "p", Meta: &mcp.Meta{ProgressToken: 3}}},
		{"both input schemas", mcp.Tool{Name: "c", InputSchema: mcp.ToolInputSchema{Type: "object"}, RawInputSchema: json.RawMessage(`{}`)}},
		{"both output schemas", mcp.Tool{Name: "c", OutputSchema: mcp.ToolOutputSchema{Type: "object"}, RawOutputSchema: json.RawMessage(`{}`)}},
		{"invalid raw schema", mcp.Tool{Name: "c", RawInputSchema: json.RawMessage(`{"type":`)}},
		// Item 70: compact schemas are written as they are; not those
		// with what json escapes, nor two values, nor an empty one.
		{"compact raw schemas", mcp.Tool{Name: "c", RawInputSchema: json.RawMessage(`{"type":"object","properties":{"q":{"type":"string","description":"a \"q\"\\"}}}`), RawOutputSchema: json.RawMessage(`{"type":"object"}`)}},
		{"compact raw schema with HTML", mcp.Tool{Name: "c", RawInputSchema: json.RawMessage(`{"description":"<b>&"}`)}},
		{"compact raw schema with U+2028", mcp.Tool{Name: "c", RawInputSchema: json.RawMessage("{\"description\":\"a\u2028b\"}")}},
		{"two raw values", mcp.Tool{Name: "c", RawInputSchema: json.RawMessage(`{}{}`)}},
		{"empty raw schema", mcp.Tool{Name: "c", RawInputSchema: json.RawMessage{}}},
	} {
		checkToolEncoding(t, c.name, c.tool)
	}
	// toolgate's own tools as the mirror lists them.
	p := newTestPipeline(t, newMemRecorder(), nil)
	m := NewMCPServer(&MCPOptions{Name: "toolgate-test", Version: "1", Catalog: p.opts.Tools.(*Catalog), Pipeline: p})
	for _, e := range p.opts.Tools.(*Catalog).Entries() {
		checkToolEncoding(t, "toolgate's "+e.Tool.Name, m.mcpTool(e.Tool))
	}
}

// FuzzToolEncoding: tools with names, descriptions, titles and schemas
// from the fuzzer encode as v1.2.1 encoded them.
func FuzzToolEncoding(f *testing.F) {
	f.Add("search", "Find <things>", "T", []byte(` {"type": "object"} `), true)
	f.Add("\u2028", "\xff\x00", "", []byte(`{"type":`), false)
	f.Add("q", "", "", []byte(`{"type":"object","properties":{"q":{"type":"string"}}}`), false)
	f.Fuzz(func(t *testing.T, name, description, title string, schema []byte, meta bool) {
		tool := mcp.Tool{Name: name, Description: description, Title: title, RawInputSchema: schema, Annotations: mcp.ToolAnnotation{Title: title}}
		if meta {
			tool.Meta = &mcp.Meta{AdditionalFields: map[string]any{name: description,
				"toolgate/decision": map[string]any{"allow": schema == nil, "rule": title, name: map[string]any{description: []string{title, name}}}}}
		}
		checkToolEncoding(t, "fuzzed", tool)
	})
}

// TestProtocolEraFound: item 11 answers "no envelope" without decoding a
// message that cannot spell "_meta"; the era mcp-go finds must be the
// same as when it decoded every message, including for a key spelled
// with an escape.
func TestProtocolEraFound(t *testing.T) {
	p := newTestPipeline(t, newMemRecorder(), nil)
	m := NewMCPServer(&MCPOptions{Name: "toolgate-test", Version: "1", Catalog: p.opts.Tools.(*Catalog), Pipeline: p})
	envelope := `{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`
	for _, c := range []struct {
		name, params string
		modern       bool
	}{
		{"no _meta", `{"name":"echo","arguments":{"path":"a"}}`, false},
		{"a 2025-11-25 _meta", `{"name":"echo","arguments":{"path":"a"},"_meta":{"progressToken":"p"}}`, false},
		{"the 2026-07-28 envelope", `{"name":"echo","arguments":{"path":"a"},"_meta":` + envelope + `}`, true},
		{"the envelope under an escaped key", `{"name":"echo","arguments":{"path":"a"},"\u005fmeta":` + envelope + `}`, true},
		{"_meta only in an argument", `{"name":"echo","arguments":{"path":"_meta"}}`, false},
		// encoding/json matches a member to a field case-insensitively.
		{"the envelope under _META", `{"name":"echo","arguments":{"path":"a"},"_META":` + envelope + `}`, true},
	} {
		msg := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":` + c.params + `}`
		out, err := mcp.MarshalMessage(m.MCPGoServer().HandleMessage(context.Background(), json.RawMessage(msg)))
		if err != nil {
			t.Fatal(err)
		}
		if modern := bytes.Contains(out, []byte(`"resultType":"complete"`)); modern != c.modern || !bytes.Contains(out, []byte(`"result"`)) {
			t.Errorf("%s: answered %s; want a result, of 2026-07-28: %v", c.name, out, c.modern)
		}
	}
}

// With WithRawToolArguments (item 13) mcp-go decodes a tools/call request
// as before but for the arguments' map: everything else, the raw
// arguments included, is what json.Unmarshal gives.
func TestRawToolArgumentsDecodeAsBefore(t *testing.T) {
	for _, msg := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi","n":9007199254740993}}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo"}}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":null}}`,
		`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"echo","arguments":[1,2],"_meta":{"progressToken":"p","k":"v"},"task":{"ttl":1000}}}`,
		`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"ask","arguments":{},"requestState":"s1","inputResponses":{"a":{"action":"accept"}}}}`,
	} {
		var want, got mcp.CallToolRequest
		if err := json.Unmarshal([]byte(msg), &want); err != nil {
			t.Fatal(err)
		}
		if err := mcp.UnmarshalCallToolRequest([]byte(msg), &got, true); err != nil {
			t.Fatalf("%s: %v", msg, err)
		}
		if got.Params.Arguments != nil {
			t.Errorf("%s: arguments decoded: %v", msg, got.Params.Arguments)
		}
		want.Params.Arguments = nil
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s:\n got %+v\nwant %+v", msg, got, want)
		}
	}
	for _, bad := range []string{`{"params":{"name":7}}`, `{"params":[]}`, `{"params":{"name":"x","arguments":{]}}`} {
		var want, got mcp.CallToolRequest
		errWant := json.Unmarshal([]byte(bad), &want)
		errGot := mcp.UnmarshalCallToolRequest([]byte(bad), &got, true)
		if (errWant == nil) != (errGot == nil) {
			t.Errorf("%s: error %v, json.Unmarshal says %v", bad, errGot, errWant)
		}
	}
}

// postToMirror serves a test pipeline's MCP mirror over streamable HTTP,
// in process, and returns it with a function that POSTs a body to it with
// the headers every client sends and the given ones (name, value pairs).
func postToMirror(t *testing.T) (*MCPServer, func(body string, header ...string) *httptest.ResponseRecorder) {
	t.Helper()
	p := newTestPipeline(t, newMemRecorder(), nil)
	m := NewMCPServer(&MCPOptions{Name: "toolgate-test", Version: "1", Catalog: p.opts.Tools.(*Catalog), Pipeline: p})
	h, closeHTTP := m.HTTPHandler(HTTPOptions{})
	t.Cleanup(func() { _ = closeHTTP(context.Background()) })
	return m, func(body string, header ...string) *httptest.ResponseRecorder {
		r := httptest.NewRequest(http.MethodPost, "http://127.0.0.1/mcp", strings.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Accept", "application/json, text/event-stream")
		for i := 0; i+1 < len(header); i += 2 {
			r.Header.Set(header[i], header[i+1])
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		return rec
	}
}

// TestRequestEraFoundOverHTTP: the streamable HTTP transport reads a
// POST's protocol version from its body's _meta as well as from its
// header; item 14 skips that read for a body that cannot spell the
// version's key, and the era found must be v1.2.1's. A 2026-07-28
// envelope under a 2025-11-25 header is refused as a mismatch however
// its key and _meta are spelled; a body without one is not.
func TestRequestEraFoundOverHTTP(t *testing.T) {
	_, post := postToMirror(t)
	for _, c := range []struct {
		name, meta string
		mismatch   bool
	}{
		{"no _meta", ``, false},
		{"the key in an argument", `,"arguments":{"path":"io.modelcontextprotocol/protocolVersion"}`, false},
		{"the envelope", `,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}`, true},
		{"the key with an escaped slash", `,"_meta":{"io.modelcontextprotocol\/protocolVersion":"2026-07-28"}`, true},
		{"the key with a \\u escape", `,"_meta":{"io.modelcontextprotocol\u002fprotocolVersion":"2026-07-28"}`, true},
		{"the envelope under _META", `,"_META":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}`, true},
	} {
		body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"` + c.meta + `}}`
		rec := post(body, "Mcp-Protocol-Version", "2025-11-25")
		refused := rec.Code == http.StatusBadRequest && strings.Contains(rec.Body.String(), "does not match")
		if refused != c.mismatch {
			t.Errorf("%s: answered %d %s; want a version mismatch: %v", c.name, rec.Code, rec.Body.String(), c.mismatch)
		}
	}
}

// TestStandardHeadersCheckedAsBefore: a 2026-07-28 POST's Mcp-Name header
// must match the name in its body as json.Unmarshal decodes it; item 26
// reads the name from the params the envelope kept, by a scan where it
// can. A name spelled with an escape or under another case still matches,
// and one that differs or does not decode is still refused.
func TestStandardHeadersCheckedAsBefore(t *testing.T) {
	_, post := postToMirror(t)
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`
	for _, c := range []struct {
		name, params, header string
		refused              bool
	}{
		{"the name", `{"name":"echo","arguments":{"path":"a"},` + meta + `}`, "echo", false},
		{"another name", `{"name":"echo","arguments":{"path":"a"},` + meta + `}`, "grep", true},
		{"the name escaped", `{"name":"ech\u006f","arguments":{"path":"a"},` + meta + `}`, "echo", false},
		{"the name under NAME", `{"NAME":"echo","arguments":{"path":"a"},` + meta + `}`, "echo", false},
		{"the name twice", `{"name":"grep","arguments":{"path":"a"},"name":"echo",` + meta + `}`, "echo", false},
		{"a name that is a number", `{"name":5,"arguments":{"path":"a"},` + meta + `}`, "5", true},
	} {
		body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":` + c.params + `}`
		rec := post(body, "Mcp-Protocol-Version", "2026-07-28", "Mcp-Method", "tools/call", "Mcp-Name", c.header)
		refused := strings.Contains(rec.Body.String(), "Mcp-Name")
		if refused != c.refused || !refused && !strings.Contains(rec.Body.String(), `"result"`) {
			t.Errorf("%s: answered %d %s; want the Mcp-Name header refused: %v", c.name, rec.Code, rec.Body.String(), c.refused)
		}
	}
}

// spanRecorder is a tracing.Tracer and tracing.MetaPropagator that notes
// what mcp-go asks of it.
type spanRecorder struct {
	spans []string
	metas []string
}

func (r *spanRecorder) Start(ctx context.Context, name string, _ tracing.SpanKind, _ ...tracing.Attribute) (context.Context, tracing.Span) {
	r.spans = append(r.spans, name)
	return tracing.NoopTracer().Start(ctx, name, tracing.SpanKindServer)
}

func (r *spanRecorder) InjectMeta(_ context.Context, meta *mcp.Meta) *mcp.Meta { return meta }

func (r *spanRecorder) ExtractMeta(ctx context.Context, meta *mcp.Meta) context.Context {
	if meta != nil {
		tp, _ := meta.AdditionalFields["traceparent"].(string)
		r.metas = append(r.metas, tp)
	}
	return ctx
}

// Item 15 skips mcp-go's per-message tracing work when nothing is
// installed to receive it; with a tracer and a _meta propagator installed,
// each message still opens its span and has its _meta read.
func TestMessageTracingWhenInstalled(t *testing.T) {
	rec := &spanRecorder{}
	s := server.NewMCPServer("traced", "1", server.WithToolCapabilities(true), server.WithTracer(rec), server.WithMetaPropagator(rec))
	s.AddTool(mcp.NewTool("echo"), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("ok"), nil
	})
	msg := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","_meta":{"traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}}}`
	if _, err := mcp.MarshalMessage(s.HandleMessage(context.Background(), json.RawMessage(msg))); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(rec.spans, "mcp.tools/call") {
		t.Errorf("spans %q; want mcp.tools/call", rec.spans)
	}
	if !slices.Equal(rec.metas, []string{"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}) {
		t.Errorf("_meta extracted: %q; want the message's traceparent once", rec.metas)
	}
}

// quietTracer is a tracer of its own kind that does nothing and allocates
// nothing: installed, it makes mcp-go open a span for every message.
type quietTracer struct{}

func (quietTracer) Start(ctx context.Context, name string, kind tracing.SpanKind, _ ...tracing.Attribute) (context.Context, tracing.Span) {
	return tracing.NoopTracer().Start(ctx, name, kind)
}

// Item 15, the other half: NewMCPServer installs no-op tracer and
// propagator values, and those count as none installed. A message then
// costs no span's set-up (its attributes, name and closure), which a
// tracer of another kind does get. (The first version of the item tested
// for nil, which NewMCPServer never leaves: the set-up ran anyway.)
func TestMessageTracingSkippedWhenNoop(t *testing.T) {
	ping := json.RawMessage(`{"jsonrpc":"2.0","id":1,"method":"ping"}`)
	allocs := func(s *server.MCPServer) float64 {
		return testing.AllocsPerRun(200, func() { s.HandleMessage(context.Background(), ping) })
	}
	plain := allocs(server.NewMCPServer("plain", "1"))
	noop := allocs(server.NewMCPServer("noop", "1", server.WithTracer(nil), server.WithPropagator(nil)))
	traced := allocs(server.NewMCPServer("traced", "1", server.WithTracer(quietTracer{})))
	if plain >= traced || noop >= traced {
		t.Errorf("allocations per ping: %v by default, %v with no-op tracing installed, %v with a tracer: the no-op ones still set up a span", plain, noop, traced)
	}
}

// envelopesAsBefore are the JSON-RPC envelopes the transports' own
// decoding (items 16 and 18) must have answered as HandleMessage answers
// them directly: a version of the wrong type, null, absent, escaped,
// repeated; members in another case; a result beside a method, a null one;
// string and huge IDs.
var envelopesAsBefore = []string{
	`{"jsonrpc":"2.0","id":1,"method":"ping"}`,
	`{"jsonrpc":2,"id":2,"method":"ping"}`,
	`{"jsonrpc":"1.0","id":3,"method":"ping"}`,
	`{"jsonrpc":null,"id":4,"method":"ping"}`,
	`{"id":5,"method":"ping"}`,
	`{"jsonrpc":"2\u002e0","id":6,"method":"ping"}`,
	`{"JSONRPC":"2.0","Id":7,"METHOD":"ping"}`,
	`{"jsonrpc":"2.0","id":8,"method":"ping","result":{}}`,
	`{"jsonrpc":"2.0","id":9,"method":"ping","result":null}`,
	`{"jsonrpc":"2.0","id":"ten","method":"tools/call","params":{"name":"echo","arguments":{"path":"a"}}}`,
	`{"jsonrpc":"2.0","id":1.5e300,"method":"tools/call","params":{"name":"nope"}}`,
	`{"jsonrpc":"2.0","id":12,"method":"ping","jsonrpc":"2.1"}`,
	`{"jsonrpc":"2.0","id":1e400,"method":"ping"}`, // an id json cannot decode: a parse error
}

// Item 16: mcp-go's HandleMessage takes the envelope the streamable HTTP
// transport decoded of a POST instead of decoding it again. What it
// answers over HTTP must be what it answers when it decodes the message
// itself (HandleMessage called directly), for envelopes of every kind it
// tells apart: a version of the wrong type, the wrong version, one
// spelled with an escape, members in other case, a result alongside a
// method (a response: no answer), a null result (a request).
func TestDecodedEnvelopeAnswersAsBefore(t *testing.T) {
	m, postTo := postToMirror(t)
	post := func(body, session string) *httptest.ResponseRecorder {
		return postTo(body, "Mcp-Session-Id", session, "Mcp-Protocol-Version", "2025-11-25")
	}
	init := postTo(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	session := init.Header().Get("Mcp-Session-Id")
	if session == "" {
		t.Fatalf("initialize: %d %s", init.Code, init.Body.String())
	}
	post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`, session)

	for _, msg := range envelopesAsBefore {
		want, err := mcp.MarshalMessage(m.MCPGoServer().HandleMessage(context.Background(), json.RawMessage(msg)))
		if err != nil {
			t.Fatal(err)
		}
		rec := post(msg, session)
		got := bytes.TrimSpace(rec.Body.Bytes())
		if string(want) == "null" {
			if rec.Code != http.StatusAccepted || len(got) != 0 {
				t.Errorf("%s: answered %d %s; want 202 and no body, as HandleMessage gives no answer", msg, rec.Code, got)
			}
			continue
		}
		// The call's ID differs from call to call; the rest must not.
		norm := func(b []byte) string {
			return string(regexp.MustCompile(`"toolgate/call_id":"[^"]*"`).ReplaceAll(b, nil))
		}
		if norm(got) != norm(want) {
			t.Errorf("%s:\n over HTTP %d %s\n directly %s", msg, rec.Code, got, want)
		}
	}
}

// FuzzCallToolRequestDecodedOnce: item 17 decodes a tools/call request
// from the "params" its envelope's decoding kept, not from the whole
// message once more. The request a server's handlers get must be the one
// mcp.UnmarshalCallToolRequest decodes from the message (v1.2.1's
// json.Unmarshal, less the arguments' map where the server keeps them raw),
// and a request that does not decode must be refused with that function's
// error, whether HandleMessage is called directly (stdio, in process) or
// through the streamable HTTP transport, which hands over its envelope.
func FuzzCallToolRequestDecodedOnce(f *testing.F) {
	for _, params := range []string{
		`{"name":"echo","arguments":{"text":"hi"}}`,
		`{"name":"echo"}`,
		`null`,
		`[]`,
		`7`,
		`{"name":7}`,
		`{"name":"echo","arguments":{"a":1},"_meta":{"progressToken":"p"},"task":{"ttl":1000}}`,
		`{"name":"ask","arguments":{},"requestState":"s1","inputResponses":{"a":{"action":"accept"}}}`,
		`{"name":"echo","arguments":{"a":1}},"params":{"name":"other"}`,
		`{"name":"echo","arguments":{"a":1}},"PARAMS":{"name":"other"}`,
		`{"name":"echo","arguments":{"a":1}},"par\u0061ms":7`,
		`{"name":"a"},"Params":null`,
		`{"NAME":"echo","Arguments":{"x":[1,2]}}`,
		`{"name":"echo","arguments":null}`,
	} {
		f.Add(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":` + params + `}`)
	}
	f.Add(`{"jsonrpc":"2.0","id":1,"method":"tools/call"}`)
	f.Add(`{"jsonrpc":"2.0","id":1,"METHOD":"tools/call","Params":{"name":"x"},"method":"tools/call"}`)

	type served struct {
		raw     bool
		mcp     *server.MCPServer
		http    http.Handler
		got     *mcp.CallToolRequest
		calls   int
		decoded func(msg []byte, r *mcp.CallToolRequest) error
	}
	var servers []*served
	for _, raw := range []bool{false, true} {
		s := &served{raw: raw}
		hooks := &server.Hooks{}
		hooks.AddBeforeCallTool(func(_ context.Context, _ any, r *mcp.CallToolRequest) {
			c := *r
			c.Header = nil
			s.got, s.calls = &c, s.calls+1
		})
		opts := []server.ServerOption{server.WithToolCapabilities(false), server.WithHooks(hooks)}
		if raw {
			opts = append(opts, server.WithRawToolArguments())
		}
		s.mcp = server.NewMCPServer("fuzz", "1", opts...)
		s.http = server.NewStreamableHTTPServer(s.mcp, server.WithStateLess(true))
		s.decoded = func(msg []byte, r *mcp.CallToolRequest) error { return mcp.UnmarshalCallToolRequest(msg, r, raw) }
		servers = append(servers, s)
	}

	f.Fuzz(func(t *testing.T, msg string) {
		var env struct {
			ID     any           `json:"id"`
			Method mcp.MCPMethod `json:"method"`
			Result any           `json:"result"`
		}
		if json.Unmarshal([]byte(msg), &env) != nil || env.Method != mcp.MethodToolsCall || env.ID == nil || env.Result != nil {
			return
		}
		for _, s := range servers {
			var want mcp.CallToolRequest
			wantErr := s.decoded([]byte(msg), &want)
			check := func(how string, answer []byte) {
				t.Helper()
				code, message := rpcError(answer)
				if s.calls == 0 && code != 0 && !strings.HasPrefix(message, "invalid params of tools/call: ") {
					return // refused before the request is decoded (the version, its era), as before
				}
				if wantErr == nil {
					if s.calls != 1 || !reflect.DeepEqual(*s.got, want) {
						t.Fatalf("%s, raw arguments %v: %s\nhandlers got %d requests, %+v\nwant %+v", how, s.raw, msg, s.calls, s.got, want)
					}
					return
				}
				if s.calls != 0 || code != mcp.INVALID_PARAMS || message != "invalid params of tools/call: "+server.ParamsProblem(wantErr) {
					t.Fatalf("%s, raw arguments %v: %s\nanswered %s, %d requests handled; want %d for %v", how, s.raw, msg, answer, s.calls, mcp.INVALID_PARAMS, wantErr)
				}
			}
			s.got, s.calls = nil, 0
			direct, err := mcp.MarshalMessage(s.mcp.HandleMessage(context.Background(), json.RawMessage(msg)))
			if err != nil {
				t.Fatal(err)
			}
			check("directly", direct)

			r := httptest.NewRequest(http.MethodPost, "http://127.0.0.1/mcp", strings.NewReader(msg))
			r.Header.Set("Content-Type", "application/json")
			r.Header.Set("Accept", "application/json, text/event-stream")
			r.Header.Set("Mcp-Protocol-Version", "2025-11-25")
			rec := httptest.NewRecorder()
			s.got, s.calls = nil, 0
			s.http.ServeHTTP(rec, r)
			overHTTP := bytes.TrimSpace(rec.Body.Bytes())
			check("over HTTP", overHTTP)
		}
	})
}

// stdioPeer serves s over mcp-go's stdio transport on pipes, and is its
// client: send writes a line, next reads the transport's next line (or
// fails the test when none comes within a while: a request the server
// waits on, never answered).
type stdioPeer struct {
	t     *testing.T
	in    *io.PipeWriter
	lines chan []byte
}

func serveStdioPipes(t *testing.T, s *server.MCPServer, opts ...server.StdioOption) *stdioPeer {
	t.Helper()
	return serveStdioFrom(t, s, func(r io.Reader) io.Reader { return r }, opts...)
}

// serveStdioFrom is serveStdioPipes with the transport reading its input
// through input(the pipe).
func serveStdioFrom(t *testing.T, s *server.MCPServer, input func(io.Reader) io.Reader, opts ...server.StdioOption) *stdioPeer {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan struct{})
	st := server.NewStdioServer(s)
	st.SetErrorLogger(log.New(io.Discard, "", 0))
	for _, o := range opts {
		o(st)
	}
	go func() {
		defer close(served)
		_ = st.Listen(ctx, input(inR), outW)
	}()
	p := &stdioPeer{t: t, in: inW, lines: make(chan []byte, 16)}
	go func() {
		defer close(p.lines)
		sc := bufio.NewScanner(outR)
		for sc.Scan() {
			p.lines <- bytes.Clone(sc.Bytes())
		}
	}()
	t.Cleanup(func() {
		cancel()
		_ = inW.Close()
		_ = outR.Close()
		<-served
	})
	return p
}

func (p *stdioPeer) send(line string) {
	p.t.Helper()
	if _, err := io.WriteString(p.in, line+"\n"); err != nil {
		p.t.Fatal(err)
	}
}

func (p *stdioPeer) next() []byte {
	p.t.Helper()
	select {
	case line, ok := <-p.lines:
		if !ok {
			p.t.Fatal("the stdio transport's output ended")
		}
		return line
	case <-time.After(10 * time.Second):
		p.t.Fatal("no line from the stdio transport within 10 s")
		return nil
	}
}

// TestStdioAnswersAsBefore: item 18 has mcp-go's stdio transport decode
// each line's envelope once, for its response probes, its routing and
// HandleMessage, where it decoded the line five times. Every request must
// be answered as HandleMessage answers it directly (the envelopes of
// envelopesAsBefore, a method of the wrong type, an array, a line
// with blanks about it), notifications not at all, a line that is not JSON
// with the transport's parse error; and the client's answers to the
// server's own requests (sampling, elicitation, roots: a result, a result
// member spelled in another case, an error) must still reach them.
func TestStdioAnswersAsBefore(t *testing.T) {
	s := server.NewMCPServer("stdio-test", "1", server.WithToolCapabilities(false))
	s.AddTool(mcp.NewTool("echo", mcp.WithString("text")), func(_ context.Context, r mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText(r.GetString("text", "")), nil
	})
	s.AddTool(mcp.NewTool("ask"), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var got []string
		//lint:ignore SA1019 the transport routes answers to sampling requests on the 2025 revisions, where it is current
		if res, err := s.RequestSampling(ctx, mcp.CreateMessageRequest{CreateMessageParams: mcp.CreateMessageParams{MaxTokens: 5}}); err != nil {
			got = append(got, "sampling: "+err.Error())
		} else {
			got = append(got, "sampling: "+mcp.GetTextFromContent(res.Content))
		}
		if res, err := s.RequestElicitation(ctx, mcp.ElicitationRequest{Params: mcp.ElicitationParams{Message: "name?", RequestedSchema: map[string]any{"type": "object"}}}); err != nil {
			got = append(got, "elicitation: "+err.Error())
		} else {
			got = append(got, "elicitation: "+string(res.Action))
		}
		if _, err := s.RequestRoots(ctx, mcp.ListRootsRequest{}); err != nil {
			got = append(got, "roots: "+err.Error())
		} else {
			got = append(got, "roots: listed")
		}
		return mcp.NewToolResultText(strings.Join(got, "; ")), nil
	})
	p := serveStdioPipes(t, s)
	p.send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"sampling":{},"elicitation":{},"roots":{}},"clientInfo":{"name":"t","version":"1"}}}`)
	if init := p.next(); !bytes.Contains(init, []byte(`"protocolVersion":"2025-11-25"`)) {
		t.Fatalf("initialize: %s", init)
	}
	p.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)

	for _, msg := range append(slices.Clone(envelopesAsBefore),
		`{"jsonrpc":"2.0","id":13,"method":7}`,
		`[{"jsonrpc":"2.0","id":14,"method":"ping"}]`,
		" \t{\"jsonrpc\":\"2.0\",\"id\":15,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\",\"arguments\":{\"text\":\"b\"}}}\t ",
		`{"jsonrpc":"2.0","id":16,"method":"tools/call","params":{"name":"echo"},"params":{"name":"echo","arguments":{"text":"c"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/roots/list_changed"}`,
		`{"jsonrpc":"2.0","id":17,"result":{}}`,
	) {
		want, err := mcp.MarshalMessage(s.HandleMessage(context.Background(), json.RawMessage(strings.TrimSpace(msg))))
		if err != nil {
			t.Fatal(err)
		}
		p.send(msg)
		if string(want) == "null" {
			continue // no answer; the next one read must be the next message's
		}
		if got := p.next(); !bytes.Equal(got, want) {
			t.Errorf("%s:\n over stdio %s\n directly   %s", msg, got, want)
		}
	}
	p.send(`not json`)
	if got, want := string(p.next()), `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}`; got != want {
		t.Errorf("a line that is not JSON:\n got %s\nwant %s", got, want)
	}

	// The server's own requests, answered by the client.
	p.send(`{"jsonrpc":"2.0","id":100,"method":"tools/call","params":{"name":"ask"}}`)
	for _, answer := range []struct{ method, reply string }{
		{"sampling/createMessage", `{"jsonrpc":"2.0","id":%s,"result":{"role":"assistant","content":{"type":"text","text":"hi"},"model":"m"}}`},
		{"elicitation/create", `{"jsonrpc":"2.0","id":%s,"Result":{"action":"decline"}}`},
		{"roots/list", `{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"no roots here"}}`},
	} {
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		line := p.next()
		if err := json.Unmarshal(line, &req); err != nil || req.Method != answer.method {
			t.Fatalf("want the server's %s request, read %s", answer.method, line)
		}
		p.send(fmt.Sprintf(answer.reply, req.ID))
	}
	res := p.next()
	for _, want := range []string{"sampling: hi;", "elicitation: decline;", "roots: list root request failed: no roots here"} {
		if !bytes.Contains(res, []byte(want)) {
			t.Errorf("the tool that asked answered %s; want %q in it", res, want)
		}
	}
	p.send(`{"jsonrpc":"2.0","id":"fence","method":"ping"}`)
	if got := p.next(); !bytes.Contains(got, []byte(`"id":"fence"`)) {
		t.Errorf("after the last request, read %s; want the fence's answer", got)
	}
}

// goroutineID is the running goroutine's number, as its stack's header
// gives it.
func goroutineID() string {
	var buf [64]byte
	n := runtime.Stack(buf[:], false)
	id, _, _ := strings.Cut(strings.TrimPrefix(string(buf[:n]), "goroutine "), " ")
	return id
}

// TestStdioToolCallsPool: item 19 hands the stdio transport's tool calls
// to its workers through a pool instead of a channel. The pool must keep
// what the channel gave: as many calls running at once as there are
// workers, then a queue of its capacity, then the call served on the read
// loop itself; and it must give what the channel did not: calls one after
// another run on the workers idle least long (two, as the last one may
// still be writing its answer when the next call comes; three are
// allowed, as under load a worker that has written its answer can take a
// while to be back in the pool, which the whole suite under -race once
// showed), where the channel went through every worker in turn (eight
// here).
//
// The workers start with the server, and on a loaded machine some may not
// have run yet when the first calls come (the pool then queues those
// calls, as the channel buffered them): each of the first calls is waited
// for before the next is sent, so that every worker has taken one, and
// the calls one after another are counted once all have run.
func TestStdioToolCallsPool(t *testing.T) {
	const workers, queue = 8, 2
	s := server.NewMCPServer("stdio-test", "1", server.WithToolCapabilities(false))
	var (
		mu      sync.Mutex
		ran     []string
		started = make(chan struct{}, 16)
		release = make(chan struct{})
	)
	s.AddTool(mcp.NewTool("where"), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		mu.Lock()
		ran = append(ran, goroutineID())
		mu.Unlock()
		return mcp.NewToolResultText("here"), nil
	})
	s.AddTool(mcp.NewTool("block"), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		started <- struct{}{}
		<-release
		return mcp.NewToolResultText("released"), nil
	})
	p := serveStdioPipes(t, s, server.WithWorkerPoolSize(workers), server.WithQueueSize(queue))
	var releaseOnce sync.Once
	releaseAll := func() { releaseOnce.Do(func() { close(release) }) }
	t.Cleanup(releaseAll) // before the server's cleanup, which waits for its workers
	p.send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	p.next()
	p.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)

	wait := func() {
		t.Helper()
		select {
		case <-started:
		case <-time.After(10 * time.Second):
			t.Fatal("a call that should have started did not")
		}
	}
	for i := range workers + queue + 1 {
		p.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":"b%d","method":"tools/call","params":{"name":"block"}}`, i))
		if i < workers {
			wait() // on a worker of its own: at most one call is ever queued meanwhile
		}
	}
	wait() // every worker busy, the queue full: the last one runs on the read loop
	select {
	case <-started:
		t.Fatal("a queued call started while every worker was busy")
	default:
	}
	releaseAll()
	for range workers + queue + 1 {
		if got := p.next(); !bytes.Contains(got, []byte(`"released"`)) {
			t.Errorf("a blocked call answered %s", got)
		}
	}

	for i := 1; i <= 20; i++ {
		p.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"where"}}`, i))
		if got := p.next(); !bytes.Contains(got, []byte(`"here"`)) {
			t.Fatalf("call %d answered %s", i, got)
		}
	}
	mu.Lock()
	last := ran[len(ran)-10:]
	if distinct := len(slices.Compact(slices.Sorted(slices.Values(last)))); distinct > 3 {
		t.Errorf("ten calls one after another ran on %d workers (%v); want the two (three under load) idle least long", distinct, last)
	}
	mu.Unlock()
}

// readerOn records the goroutines its Reads are called on.
type readerOn struct {
	r          io.Reader
	mu         sync.Mutex
	goroutines []string
}

func (r *readerOn) Read(p []byte) (int, error) {
	r.mu.Lock()
	r.goroutines = append(r.goroutines, goroutineID())
	r.mu.Unlock()
	return r.r.Read(p)
}

// TestStdioReadsOnOneGoroutine: item 20 has mcp-go's stdio transport read
// its input on one goroutine, where it started one for every line. Lines
// sent one after another, each answered before the next, are all read there.
func TestStdioReadsOnOneGoroutine(t *testing.T) {
	in := &readerOn{}
	p := serveStdioFrom(t, server.NewMCPServer("stdio-test", "1"), func(r io.Reader) io.Reader { in.r = r; return in })
	for i := range 5 {
		p.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"ping"}`, i))
		if got := p.next(); !bytes.Contains(got, []byte(fmt.Sprintf(`"id":%d`, i))) {
			t.Fatalf("ping %d answered %s", i, got)
		}
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	if distinct := len(slices.Compact(slices.Sorted(slices.Values(in.goroutines)))); distinct != 1 {
		t.Errorf("five lines read on %d goroutines (%v); want one", distinct, in.goroutines)
	}
}

// v121RequestIdValue is how mcp-go v1.2.1 decoded a request ID: as a
// string if the bytes decode into one, else as a number.
func v121RequestIdValue(data []byte) (any, error) {
	if string(data) == "null" {
		return nil, nil
	}
	var s string
	if err := json.Unmarshal(data, &s); err == nil {
		return s, nil
	}
	var f float64
	if err := json.Unmarshal(data, &f); err == nil {
		if f == float64(int64(f)) {
			return int64(f), nil
		}
		return f, nil
	}
	return nil, fmt.Errorf("invalid request id: %s", string(data))
}

// FuzzRequestIdDecode: item 21 decodes an ID that begins as a number does
// without first trying it as a string. Any bytes must decode to v1.2.1's
// value, or fail with its error.
func FuzzRequestIdDecode(f *testing.F) {
	for _, seed := range []string{`7`, `-7`, `1.5`, `1e3`, `"7"`, `"abc"`, `null`, ` 7`, `07`, `-`, `"\u0037"`, `true`, `{}`, `9007199254740993`, ``, `"`,
		`"tg-12"`, `"a b"`, `"\x01"`, `"é"`, `"a\\b"`, `""`, `"a"b"`, `-0`, `0`, `00`, `-01`, `999999999999999`, `-999999999999999`, `1000000000000000`, `12345678901234567890`, `1 `} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		want, wantErr := v121RequestIdValue(data)
		var id mcp.RequestId
		err := id.UnmarshalJSON(data)
		if (err == nil) != (wantErr == nil) || (err != nil && err.Error() != wantErr.Error()) {
			t.Fatalf("%q: error %v, v1.2.1's %v", data, err, wantErr)
		}
		if err == nil && !reflect.DeepEqual(id.Value(), want) {
			t.Fatalf("%q: %#v, v1.2.1's %#v", data, id.Value(), want)
		}
	})
}

// TestRequestIdNumberNotTriedAsString: item 21's fast path is taken: a
// numeric ID is decoded without first being tried as a string, which cost
// an error's allocations, so it allocates no more than a string ID does.
func TestRequestIdNumberNotTriedAsString(t *testing.T) {
	decode := func(data string) float64 {
		return testing.AllocsPerRun(100, func() {
			var id mcp.RequestId
			if err := id.UnmarshalJSON([]byte(data)); err != nil {
				t.Fatal(err)
			}
		})
	}
	if n, s := decode(`12345`), decode(`"12345"`); n > s {
		t.Errorf("a numeric ID allocates %v times, a string ID %v: the number was tried as a string first", n, s)
	}
}

// TestRequestIdPlain: item 37's fast path is taken: an ID that is a plain
// string or a short integer, as toolgate's upstream requests and most
// clients' are, is read without json.Unmarshal, which allocated the
// string's pointer besides the string.
func TestRequestIdPlain(t *testing.T) {
	for _, c := range []struct {
		data string
		max  float64 // the value: a string's bytes and its box, an int64's box
	}{{`"tg-12"`, 2}, {`12345`, 1}, {`-7`, 1}} {
		data := []byte(c.data)
		n := testing.AllocsPerRun(100, func() {
			var id mcp.RequestId
			if err := id.UnmarshalJSON(data); err != nil {
				t.Fatal(err)
			}
		})
		if n > c.max {
			t.Errorf("%s: %v allocations, want at most %v (the value): read by json.Unmarshal", c.data, n, c.max)
		}
	}
}

// v121StdioResponse is the response mcp-go v1.2.1's stdio client transport
// read from a line, if it read one: the line decoded for its kind, then
// (neither a notification nor a request that decodes) as a response.
func v121StdioResponse(line []byte) (*transport.JSONRPCResponse, bool) {
	var base struct {
		JSONRPC string         `json:"jsonrpc"`
		ID      *mcp.RequestId `json:"id,omitempty"`
		Method  string         `json:"method,omitempty"`
	}
	if json.Unmarshal(line, &base) != nil || (base.Method != "" && base.ID == nil) {
		return nil, false
	}
	if base.Method != "" {
		var req transport.JSONRPCRequest
		if json.Unmarshal(line, &req) == nil {
			return nil, false
		}
	}
	var resp transport.JSONRPCResponse
	if json.Unmarshal(line, &resp) != nil {
		return nil, false
	}
	return &resp, true
}

// FuzzStdioClientResponse: item 22 has mcp-go's stdio client transport
// decode a response line once, where it decoded it twice. For any line
// (ID standing for the pending request's ID), the request must get the
// response v1.2.1 read from it, or, where v1.2.1 read none for it, the
// next line's.
func FuzzStdioClientResponse(f *testing.F) {
	for _, seed := range []string{
		`{"jsonrpc":"2.0","id":ID,"result":{"content":[{"type":"text","text":"hi"}]}}`,
		`{"jsonrpc":"2.0","id":ID,"error":{"code":-32601,"message":"no"}}`,
		`{"jsonrpc":"2.0","id":"ID","result":{}}`,
		`{"jsonrpc":"2.0","id":null,"result":{}}`,
		`{"jsonrpc":"2.0","result":{}}`,
		`{"jsonrpc":"2.0","id":ID,"id":null,"result":{}}`,
		`{"jsonrpc":"2.0","id":null,"id":ID,"result":{}}`,
		`{"jsonrpc":"2.0","ID":ID,"Result":[1],"ERROR":null}`,
		`{"jsonrpc":"2.0","id":ID,"error":"a string"}`,
		`{"jsonrpc":"2.0","id":ID,"error":7}`,
		`{"jsonrpc":"2.0","method":"notifications/message","params":{},"error":7}`,
		`{"jsonrpc":"2.0","id":ID,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":ID,"method":7,"result":{}}`,
		`{"jsonrpc":"2.0","id":ID,"method":"","result":{}}`,
		`{"jsonrpc":"2.0","method":"notifications/message","params":{}}`,
		`{"jsonrpc":2,"id":ID,"result":{}}`,
		`not json`,
	} {
		f.Add(seed)
	}
	serverIn, clientOut := io.Pipe() // what the client writes, the server reads
	clientIn, serverOut := io.Pipe()
	c := transport.NewIO(clientIn, clientOut, io.NopCloser(strings.NewReader("")))
	if err := c.Start(context.Background()); err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() {
		_ = c.Close()
		_ = serverOut.Close()
		_ = serverIn.Close()
	})
	requests := make(chan []byte, 16) // the client's requests of method "x"
	go func() {
		sc := bufio.NewScanner(serverIn)
		for sc.Scan() {
			if bytes.Contains(sc.Bytes(), []byte(`"method":"x"`)) {
				requests <- bytes.Clone(sc.Bytes())
			}
		}
	}()
	var n int64
	f.Fuzz(func(t *testing.T, line string) {
		line = strings.NewReplacer("\n", "", "\r", "").Replace(line)
		n++
		id := strconv.FormatInt(n, 10)
		line = strings.ReplaceAll(line, "ID", id)
		next := `{"jsonrpc":"2.0","id":` + id + `,"result":{"next":true}}`

		type answer struct {
			resp *transport.JSONRPCResponse
			err  error
		}
		got := make(chan answer, 1)
		go func() {
			resp, err := c.SendRequest(context.Background(), transport.JSONRPCRequest{JSONRPC: "2.0", ID: mcp.NewRequestId(n), Method: "x"})
			got <- answer{resp, err}
		}()
		select {
		case <-requests:
		case <-time.After(10 * time.Second):
			t.Fatal("the client's request did not come")
		}
		if _, err := io.WriteString(serverOut, line+"\n"+next+"\n"); err != nil {
			t.Fatal(err)
		}
		var a answer
		select {
		case a = <-got:
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: no response", line)
		}
		if a.err != nil {
			t.Fatalf("%s: %v", line, a.err)
		}
		want, ok := v121StdioResponse([]byte(line))
		if !ok || want.ID.String() != mcp.NewRequestId(n).String() {
			want, _ = v121StdioResponse([]byte(next))
		}
		if !reflect.DeepEqual(a.resp, want) {
			t.Fatalf("%s:\n got %+v (%s)\nwant %+v (%s)", line, a.resp, a.resp.Result, want, want.Result)
		}
	})
}
