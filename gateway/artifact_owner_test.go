package gateway

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestArtifactReadOnlyByItsCaller: an artifact (a large output saved in
// the run archive) is read back only by the identity whose call made it:
// another caller that learns its URI is answered as for an artifact that
// does not exist, so it learns nothing of it either.
func TestArtifactReadOnlyByItsCaller(t *testing.T) {
	arts := &memArtifacts{}
	p := newTestPipeline(t, newMemRecorder(), arts)
	m := NewMCPServer(&MCPOptions{Name: "t", Version: "1", Catalog: p.opts.Tools.(*Catalog), Pipeline: p, Artifacts: arts})

	_, raw := rpcAs(t, m, "token:alice", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"big","arguments":{}}}`)
	var res struct {
		Result struct {
			Content []struct {
				Type string `json:"type"`
				URI  string `json:"uri"`
			} `json:"content"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(raw), &res); err != nil {
		t.Fatal(err)
	}
	var uri string
	for _, c := range res.Result.Content {
		if c.Type == "resource_link" {
			uri = c.URI
		}
	}
	if uri == "" {
		t.Fatalf("no artifact link in the result: %.300s", raw)
	}
	missing := ArtifactURIPrefix + "test/nothing-output.txt"
	absent, _ := rpcAs(t, m, "token:bob", `{"jsonrpc":"2.0","id":2,"method":"resources/read","params":{"uri":"`+missing+`"}}`)
	if absent == nil {
		t.Fatal("reading an artifact that does not exist succeeded")
	}
	for _, tc := range []struct {
		who  string
		read bool
	}{{"token:alice", true}, {"token:bob", false}, {"local", false}} {
		errObj, raw := rpcAs(t, m, tc.who, `{"jsonrpc":"2.0","id":3,"method":"resources/read","params":{"uri":"`+uri+`"}}`)
		if got := errObj == nil && strings.Contains(raw, "line 1"); got != tc.read {
			t.Errorf("%s reading alice's artifact: %.300s; want it read: %v", tc.who, raw, tc.read)
		}
		if !tc.read && errObj != nil && (errObj.Code != absent.Code || strings.ReplaceAll(errObj.Message, uri, missing) != absent.Message ||
			strings.ReplaceAll(string(errObj.Data), uri, missing) != string(absent.Data)) {
			t.Errorf("%s reading alice's artifact: %+v; want the answer of an artifact that does not exist, %+v", tc.who, errObj, absent)
		}
	}
}
