package gateway

import (
	"encoding/json"
	"testing"
)

func TestAddProtocolVersionToNotification(t *testing.T) {
	const v = "2026-07-28"
	tests := []struct {
		name, body string
		changed    bool
		want       string // the _meta version after the change
	}{
		{"no params", `{"jsonrpc":"2.0","method":"notifications/cancelled"}`, true, v},
		{"null params", `{"jsonrpc":"2.0","method":"notifications/cancelled","params":null}`, true, v},
		{"params without _meta", `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3}}`, true, v},
		{"null _meta", `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"_meta":null}}`, true, v},
		{"already there", `{"jsonrpc":"2.0","method":"x","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`, false, ""},
		{"already there, the key with an escape", `{"jsonrpc":"2.0","method":"x","params":{"_meta":{"io.modelcontextprotocol\/protocolVersion":"2025-11-25"}}}`, false, ""},
		{"a request is left to the spec", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, false, ""},
		{"a response", `{"jsonrpc":"2.0","id":1,"result":{}}`, false, ""},
		{"params not an object", `{"jsonrpc":"2.0","method":"x","params":[1]}`, false, ""},
		{"_meta not an object", `{"jsonrpc":"2.0","method":"x","params":{"_meta":7}}`, false, ""},
		{"not JSON", `{"jsonrpc":`, false, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, changed := addProtocolVersionToNotification([]byte(tc.body), v)
			if changed != tc.changed {
				t.Fatalf("changed=%v, want %v (%s)", changed, tc.changed, out)
			}
			if !changed {
				return
			}
			var msg struct {
				Params struct {
					Meta map[string]any `json:"_meta"`
				} `json:"params"`
			}
			if err := json.Unmarshal(out, &msg); err != nil || msg.Params.Meta["io.modelcontextprotocol/protocolVersion"] != tc.want {
				t.Fatalf("got %s (%v)", out, err)
			}
		})
	}
}
