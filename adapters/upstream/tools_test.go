package upstream

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
)

// TestCallParamsAsMembers holds a tools/call request's params, encoded
// from the struct, to what the map of the same members (what they were
// before, and what a 2026-07-28 request still gets) encodes to: the same
// JSON object, the task present when set even if empty, _meta only when
// it has members.
func TestCallParamsAsMembers(t *testing.T) {
	args := json.RawMessage(`{"text":"hi","n":12345678901234567890}`)
	for _, p := range []callParams{
		{Name: "echo", Arguments: args},
		{Name: "echo", Arguments: json.RawMessage(`{}`), Meta: map[string]any{}},
		{Name: "echo", Arguments: args, Meta: map[string]any{"progressToken": "tg-progress-1"}},
		{Name: "echo", Arguments: args, Task: map[string]any{}},
		{Name: "echo", Arguments: args, Meta: map[string]any{"traceparent": "00-x"}, Task: map[string]any{"ttl": int64(5000)}},
	} {
		got, err := json.Marshal(&p)
		if err != nil {
			t.Fatal(err)
		}
		want, err := json.Marshal(p.members())
		if err != nil {
			t.Fatal(err)
		}
		g, w := decodeNumbers(t, got), decodeNumbers(t, want)
		if !reflect.DeepEqual(g, w) {
			t.Errorf("params %s, as a map %s", got, want)
		}
		if _, ok := g.(map[string]any)["task"]; ok != (p.Task != nil) {
			t.Errorf("%s: task sent %v, set %v", got, ok, p.Task != nil)
		}
	}
}

// decodeNumbers decodes JSON with its numbers kept as written.
func decodeNumbers(t *testing.T, b []byte) any {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		t.Fatal(err)
	}
	return v
}
