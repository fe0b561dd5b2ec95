package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// answerError is the error of a JSON-RPC answer.
type answerError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data"`
}

// rpcAnswer sends one 2025-11-25 message to m in process and decodes the
// answer's error (nil when it succeeded).
func rpcAnswer(t *testing.T, m *MCPServer, msg string) (errObj *answerError, raw string) {
	t.Helper()
	b, _ := json.Marshal(m.srv.HandleMessage(context.Background(), json.RawMessage(msg)))
	var resp struct {
		Error *answerError `json:"error"`
	}
	if err := json.Unmarshal(b, &resp); err != nil {
		t.Fatal(err)
	}
	return resp.Error, string(b)
}

// refusingCompleter completes by refusing with a JSON-RPC error of its own.
type refusingCompleter struct{ fakeSource }

func (*refusingCompleter) CompletePrompt(context.Context, string, CompletionRequest) (*Completion, error) {
	return nil, fmt.Errorf("upstream %q: %w", "u", &RequestError{Code: mcp.INVALID_PARAMS, Message: "no such argument", Data: json.RawMessage(`{"argument":"zzz"}`)})
}

// TestCompletionErrorCodes: completion/complete of a prompt or template
// nothing serves is -32602 (MCP 2025-11-25, completion: "Invalid prompt
// name: -32602"), and a source's refusal reaches the client with its own
// code and data (docs/upstreams.md), not as -32603.
func TestCompletionErrorCodes(t *testing.T) {
	p := newTestPipeline(t, newMemRecorder(), nil)
	m := NewMCPServer(&MCPOptions{Name: "t", Version: "1", Catalog: p.opts.Tools.(*Catalog), Pipeline: p})
	m.AddPromptSource(&refusingCompleter{fakeSource{subs: map[string]int{}}})
	m.AddResourceSource(&fakeSource{subs: map[string]int{}})
	for _, c := range []struct {
		name, ref string
		code      int
		data      string
	}{
		{"unknown prompt", `{"type":"ref/prompt","name":"nope"}`, mcp.INVALID_PARAMS, ""},
		{"unknown template", `{"type":"ref/resource","uri":"other://{x}"}`, mcp.INVALID_PARAMS, ""},
		{"source's refusal", `{"type":"ref/prompt","name":"greet"}`, mcp.INVALID_PARAMS, `{"argument":"zzz"}`},
	} {
		e, raw := rpcAnswer(t, m, `{"jsonrpc":"2.0","id":1,"method":"completion/complete","params":{"ref":`+c.ref+`,"argument":{"name":"who","value":"a"}}}`)
		if e == nil || e.Code != c.code || (c.data != "" && !jsonEqual(e.Data, []byte(c.data))) {
			t.Errorf("%s: %s, want code %d data %s", c.name, raw, c.code, c.data)
		}
	}
	// It still completes.
	if e, raw := rpcAnswer(t, m, `{"jsonrpc":"2.0","id":2,"method":"completion/complete","params":{"ref":{"type":"ref/resource","uri":"fake://item/{id}"},"argument":{"name":"id","value":"4"}}}`); e != nil {
		t.Errorf("template completion: %s", raw)
	}
}

// missingArtifacts is an artifact store that has no artifact.
type missingArtifacts struct{}

func (missingArtifacts) SaveArtifact(*Call, string, string, []byte) (Artifact, error) {
	return Artifact{}, fmt.Errorf("read-only")
}

func (missingArtifacts) ReadArtifact(uri string) ([]byte, string, error) {
	return nil, "", fmt.Errorf("%w: %q", ErrNoArtifact, uri)
}

// TestReadMissingArtifactNotFound: resources/read of an artifact URI that
// names no artifact (another run's, a file never written) is "resource not
// found", -32002 with data.uri (MCP 2025-11-25, resources: "Resource not
// found: -32002"), like any URI nothing serves, not -32603.
func TestReadMissingArtifactNotFound(t *testing.T) {
	p := newTestPipeline(t, newMemRecorder(), nil)
	m := NewMCPServer(&MCPOptions{Name: "t", Version: "1", Catalog: p.opts.Tools.(*Catalog), Pipeline: p, Artifacts: missingArtifacts{}})
	for _, uri := range []string{"toolgate://artifacts/20990101-000000-other/out.txt", "nothing://here"} {
		e, raw := rpcAnswer(t, m, `{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"`+uri+`"}}`)
		if e == nil || e.Code != mcp.RESOURCE_NOT_FOUND || !jsonEqual(e.Data, []byte(`{"uri":"`+uri+`"}`)) {
			t.Errorf("%s: %s, want -32002 with data.uri", uri, raw)
		}
	}
}

// TestSubscribeMissingResourceNotFound: resources/subscribe of a URI
// nothing serves is "resource not found", -32002 with data.uri, as
// resources/read of it is (it was -32600 Invalid Request).
func TestSubscribeMissingResourceNotFound(t *testing.T) {
	p := newTestPipeline(t, newMemRecorder(), nil)
	m := NewMCPServer(&MCPOptions{Name: "t", Version: "1", Catalog: p.opts.Tools.(*Catalog), Pipeline: p})
	sess := server.NewInProcessSession("s1", nil)
	if err := m.srv.RegisterSession(context.Background(), sess); err != nil {
		t.Fatal(err)
	}
	sess.Initialize()
	b, _ := json.Marshal(m.srv.HandleMessage(m.srv.WithContext(context.Background(), sess),
		json.RawMessage(`{"jsonrpc":"2.0","id":1,"method":"resources/subscribe","params":{"uri":"nothing://here"}}`)))
	var resp struct {
		Error *answerError `json:"error"`
	}
	if err := json.Unmarshal(b, &resp); err != nil || resp.Error == nil || resp.Error.Code != mcp.RESOURCE_NOT_FOUND ||
		!jsonEqual(resp.Error.Data, []byte(`{"uri":"nothing://here"}`)) || resp.Error.Message != "resource nothing://here not found: "+errNotServed.Error() {
		t.Errorf("resources/subscribe: %s, want -32002 with data.uri", b)
	}
}

// binaryArtifacts holds one artifact: bytes that are not UTF-8, saved
// under a text MIME type (an upstream's blob that said application/json).
type binaryArtifacts struct{ missingArtifacts }

var binaryArtifactData = []byte{0x89, 'P', 'N', 'G', 0xff, 0xfe, 0x00, 0x01}

func (binaryArtifacts) ReadArtifact(uri string) ([]byte, string, error) {
	return binaryArtifactData, "application/json", nil
}

// TestReadBinaryArtifactWithTextMIMEIsWhole: an artifact whose bytes are
// not UTF-8 is served as a blob whatever its MIME type says, so that
// resources/read gives back the bytes that were saved, not text with
// U+FFFD in the place of every invalid byte.
func TestReadBinaryArtifactWithTextMIMEIsWhole(t *testing.T) {
	p := newTestPipeline(t, newMemRecorder(), nil)
	m := NewMCPServer(&MCPOptions{Name: "t", Version: "1", Catalog: p.opts.Tools.(*Catalog), Pipeline: p, Artifacts: binaryArtifacts{}})
	e, raw := rpcAnswer(t, m, `{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"toolgate://artifacts/20260101T000000Z-abcdef/c-part-1.json"}}`)
	if e != nil {
		t.Fatal(raw)
	}
	var resp struct {
		Result struct {
			Contents []struct {
				Text     *string `json:"text"`
				Blob     []byte  `json:"blob"`
				MIMEType string  `json:"mimeType"`
			} `json:"contents"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(raw), &resp); err != nil || len(resp.Result.Contents) != 1 {
		t.Fatalf("%s: %v", raw, err)
	}
	c := resp.Result.Contents[0]
	if c.Text != nil || string(c.Blob) != string(binaryArtifactData) {
		t.Errorf("binary artifact read back as %s, want its bytes as a blob", raw)
	}
}

// rootsFollower is a toolset that counts the times it is told the
// client's roots changed.
type rootsFollower struct {
	Toolset
	told chan struct{}
}

func (f rootsFollower) RootsChanged() { f.told <- struct{}{} }

// TestRootsListChangedReachesFollowers: a client's
// notifications/roots/list_changed reaches the toolsets that pass its
// roots on (upstreams with forward_roots), which tell theirs.
func TestRootsListChangedReachesFollowers(t *testing.T) {
	m, f, _ := rootsServer(t)
	m.srv.HandleMessage(context.Background(), json.RawMessage(`{"jsonrpc":"2.0","method":"notifications/roots/list_changed"}`))
	f.waitTold(t, "a client's notifications/roots/list_changed")
}
