package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
)

// rpcAnswer sends one 2025-11-25 message to m in process and decodes the
// answer's error (nil when it succeeded).
func rpcAnswer(t *testing.T, m *MCPServer, msg string) (errObj *struct {
	Code int             `json:"code"`
	Data json.RawMessage `json:"data"`
}, raw string) {
	t.Helper()
	b, _ := json.Marshal(m.srv.HandleMessage(context.Background(), json.RawMessage(msg)))
	var resp struct {
		Error *struct {
			Code int             `json:"code"`
			Data json.RawMessage `json:"data"`
		} `json:"error"`
	}
	if err := json.Unmarshal(b, &resp); err != nil {
		t.Fatal(err)
	}
	return resp.Error, string(b)
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
