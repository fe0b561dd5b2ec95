package upstream

import (
	"encoding/json"
	"testing"
)

// FuzzCallParamsAppendJSON: the params of a tools/call request encode
// themselves (for the patched mcp-go's transports, item 36) as
// json.Marshal encodes them, byte for byte, or fail where it fails:
// arguments with spaces, escapes, HTML characters or bytes outside ASCII,
// invalid ones, with or without a _meta and a task.
func FuzzCallParamsAppendJSON(f *testing.F) {
	for _, seed := range []struct {
		name, args string
	}{
		{"echo", `{"text":"hello, toolgate"}`},
		{"echo", `{"text": "spaced"}`},
		{"echo", "{\"a\":1,\n\"b\":[true,null]}"},
		{"echo", `{"q":"a\"b\\c","u":"\u2028"}`},
		{"echo", `{"q":"a\"", "b":1}`},
		{"echo", `{"html":"<a>&"}`},
		{"echo", `{"é":"\u00e9 é"}`},
		{"echo", `{"a":1}x`},
		{"echo", `{"a":`},
		{"echo", ` {"a":1} `},
		{"echo", ``},
		{"a\"b<", `{}`},
		{"x\u2028", `[]`},
		{"echo", `"\\"`},
	} {
		f.Add(seed.name, []byte(seed.args), false, false)
	}
	f.Add("echo", []byte(`{"a":1}`), true, true)
	f.Fuzz(func(t *testing.T, name string, args []byte, meta, task bool) {
		p := &callParams{Name: name, Arguments: args}
		if meta {
			p.Meta = map[string]any{"progressToken": "tg-progress-1"}
		}
		if task {
			p.Task = map[string]any{}
		}
		got, err := p.AppendJSON([]byte("prefix "))
		want, wantErr := json.Marshal(p)
		if (err == nil) != (wantErr == nil) {
			t.Fatalf("%q %q: error %v, json.Marshal's %v", name, args, err, wantErr)
		}
		if err == nil && string(got) != "prefix "+string(want) {
			t.Fatalf("%q %q:\n%s\njson.Marshal:\n%s", name, args, got, want)
		}
	})
}

// TestCallParamsAppendJSONDirect: the common call, a plain name and
// compact arguments (spaces inside their strings included), is written
// without encoding/json: no allocation into a buffer with room.
func TestCallParamsAppendJSONDirect(t *testing.T) {
	for _, args := range []string{`{"text":"hello, toolgate"}`, `{"path":"a b.txt","limit":10,"deep":[1,{"x":null}]}`, `{"q":"say \"hi\""}`} {
		p := &callParams{Name: "echo", Arguments: json.RawMessage(args)}
		buf := make([]byte, 0, 256)
		n := testing.AllocsPerRun(100, func() {
			if _, err := p.AppendJSON(buf); err != nil {
				t.Fatal(err)
			}
		})
		if n != 0 {
			t.Errorf("%s: %v allocations: encoded by json.Marshal", args, n)
		}
	}
}
