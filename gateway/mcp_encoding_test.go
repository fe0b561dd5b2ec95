package gateway

// The local mcp-go patch encodes tools/call results by appending their
// members (mcp.CallToolResult.AppendJSON, third_party/README.md item 9)
// and _meta objects without reflection. These tests hold it to the bytes
// mcp-go v1.2.1 wrote: a map of the members encoded by encoding/json.

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
)

// v121ResultJSON is how mcp-go v1.2.1 encoded a tools/call result.
func v121ResultJSON(r *mcp.CallToolResult) ([]byte, error) {
	m := map[string]any{}
	if r.Meta != nil {
		meta := map[string]any{}
		if r.Meta.ProgressToken != nil {
			meta["progressToken"] = r.Meta.ProgressToken
		}
		for k, v := range r.Meta.AdditionalFields {
			meta[k] = v
		}
		m["_meta"] = meta
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

// checkResultEncoding compares every way a result is encoded with
// v1.2.1's bytes: its MarshalJSON, encoding/json by value and by pointer,
// and the transports' MarshalMessage of a response carrying it.
func checkResultEncoding(t *testing.T, name string, r *mcp.CallToolResult) {
	t.Helper()
	want, wantErr := v121ResultJSON(r)
	got, err := r.MarshalJSON()
	if (err != nil) != (wantErr != nil) {
		t.Fatalf("%s: error %v, v1.2.1 %v", name, err, wantErr)
	}
	if wantErr != nil {
		return
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s: MarshalJSON\n%s\nv1.2.1\n%s", name, got, want)
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
	} {
		checkResultEncoding(t, c.name, c.r)
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
