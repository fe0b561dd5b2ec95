package gateway

import (
	"encoding/json"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
)

// TestRelayedMeta: a request passed on to the client keeps the asker's
// _meta members but its progress token and related-task, which name
// things of the asker's; a request asked for a task of toolgate's names
// that task.
func TestRelayedMeta(t *testing.T) {
	for _, c := range []struct {
		name, meta, task, want string
	}{
		{name: "none", want: `null`},
		{name: "none, for a task", task: "t1", want: `{"io.modelcontextprotocol/related-task":{"taskId":"t1"}}`},
		{name: "the asker's progress token", meta: `{"progressToken":7}`, want: `null`},
		{name: "the asker's task, outside one of toolgate's", meta: `{"io.modelcontextprotocol/related-task":{"taskId":"up"}}`, want: `null`},
		{name: "the asker's task, in one of toolgate's", meta: `{"io.modelcontextprotocol/related-task":{"taskId":"up"}}`, task: "t1", want: `{"io.modelcontextprotocol/related-task":{"taskId":"t1"}}`},
		{name: "the asker's members", meta: `{"progressToken":"p","example.com/ui":{"width":3}}`, want: `{"example.com/ui":{"width":3}}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			var meta *mcp.Meta
			if c.meta != "" {
				meta = &mcp.Meta{}
				if err := json.Unmarshal([]byte(c.meta), meta); err != nil {
					t.Fatal(err)
				}
			}
			got, _ := json.Marshal(relayedMeta(meta, c.task))
			if string(got) != c.want {
				t.Errorf("relayed _meta %s; want %s", got, c.want)
			}
		})
	}
}
