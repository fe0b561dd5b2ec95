package mcp

// toolgate patch: white-box tests of the patch's fast paths in this package
// (third_party/README.md); see server/toolgate_patch_test.go.

import (
	"bytes"
	"encoding/json"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// callToolParamsSeeds are params of every shape a tools/call carries, and
// those item 24's scan must leave to json.Unmarshal.
var callToolParamsSeeds = []string{
	`{"name":"echo","arguments":{"text":"hello"}}`,
	`{"arguments":{"n":12345678901234567890},"name":"echo"}`,
	` { "name" : "echo" } `,
	`{"name":"echo","arguments":null}`,
	`{"name":"echo","arguments":[1,"a",{"b":true}]}`,
	`{"name":"a","name":"b"}`,                     // the last, as json
	`{"name":"echo","arguments":1,"arguments":2}`, // the last, as json
	`{"name":"echo","arguments":{},"_meta":{"progressToken":1}}`,
	`{"name":"echo","arguments":{"path":"a"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",` +
		`"io.modelcontextprotocol/clientInfo":{"name":"c","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}}`,
	`{"_meta":null,"name":"echo"}`,
	`{}`, // the last one scanned
	`{"name":"echo","_meta":{"a":1},"_meta":{"b":2}}`, // json decodes the second into the first
	`{"name":"echo","_meta":5,"_meta":{}}`,            // json fails on the first
	`{"name":"echo","_meta":5}`,
	`{"name":"echo","_meta":{"n":1e400}}`, // Meta's map of any values cannot hold it
	`{"name":"echo","_META":{}}`,
	`{"name":"echo","task":{"ttl":5}}`,
	`{"name":"echo","inputResponses":{"a":{}},"requestState":"s"}`,
	`{"Name":"echo"}`,
	`{"name":"ech\u006f"}`,
	`{"name":null}`,
	`{"name":5}`,
	`{"name":5,"name":"echo"}`, // json fails on the first though the last is plain
	"{\"name\":\"\xff\"}",
	`{"name":"echo","arguments":{"a":01}}`,
	`{"name":"echo"} x`,
	`[]`, `null`, ``,
}

// FuzzToolgateCallToolParams: item 24's scan reads params as json.Unmarshal
// reads them (unmarshalJSON), into params already holding values too, with
// and without decoding the arguments, errors word for word.
func FuzzToolgateCallToolParams(f *testing.F) {
	for _, s := range callToolParamsSeeds {
		f.Add([]byte(s), false)
		f.Add([]byte(s), true)
	}
	f.Fuzz(func(t *testing.T, data []byte, decodeArguments bool) {
		held := func() CallToolParams {
			return CallToolParams{Name: "held", Arguments: "held", RawArguments: json.RawMessage(`"held"`),
				Meta: &Meta{ProgressToken: "held"}, Task: &TaskParams{}}
		}
		got, want := held(), held()
		errGot, errWant := got.unmarshal(data, decodeArguments), want.unmarshalJSON(data, decodeArguments)
		if (errGot == nil) != (errWant == nil) || errGot != nil && errGot.Error() != errWant.Error() {
			t.Fatalf("%q: error %v; json.Unmarshal: %v", data, errGot, errWant)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%q: %#v; json.Unmarshal: %#v", data, got, want)
		}
	})
}

// TestToolgateCallToolParamsScanned: items 24 and 26's scan takes the
// params it is for (the seeds up to {}) and leaves the rest to
// json.Unmarshal.
func TestToolgateCallToolParamsScanned(t *testing.T) {
	last := slices.Index(callToolParamsSeeds, `{}`)
	for i, s := range callToolParamsSeeds {
		_, _, _, ok := scanCallToolParams([]byte(s))
		if want := i <= last; ok != want {
			t.Errorf("%s: scanned %v, want %v", s, ok, want)
		}
	}
}

// FuzzToolgateHeaderName: item 26 reads the name, URI or task ID a
// 2026-07-28 request's Mcp-Name header must match (ExtractHeaderName) as
// json.Unmarshal into a struct of that member does.
func FuzzToolgateHeaderName(f *testing.F) {
	for _, s := range callToolParamsSeeds {
		f.Add([]byte(s))
	}
	for _, s := range []string{
		`{"uri":"file:///a","_meta":{}}`, `{"taskId":"t-1","inputResponses":{}}`,
		`{"NAME":"a"}`, `{"name":"a","Name":"b"}`, `{"uri":5,"uri":"a"}`, `{"taskID":"t"}`,
		`{"name":"é"}`, `{"name":"a"}`, `{"x":{"name":1},"name":"a"}`,
	} {
		f.Add([]byte(s))
	}
	members := map[MCPMethod]string{MethodToolsCall: "name", MethodResourcesRead: "uri", MethodTasksGet: "taskId"}
	byJSON := func(method MCPMethod, params []byte) (string, bool) { // a struct of the one member
		p := reflect.New(reflect.StructOf([]reflect.StructField{{
			Name: "V", Type: reflect.TypeFor[string](), Tag: reflect.StructTag(`json:"` + members[method] + `"`),
		}}))
		if json.Unmarshal(params, p.Interface()) != nil {
			return "", false
		}
		return p.Elem().Field(0).String(), true
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for m := range members {
			got, okGot := ExtractHeaderName(m, data)
			want, okWant := byJSON(m, data)
			if got != want || okGot != okWant {
				t.Fatalf("%s %q: %q, %v; json.Unmarshal: %q, %v", m, data, got, okGot, want, okWant)
			}
		}
	})
}

// FuzzToolgateMetaUnmarshal: item 27 decodes a _meta object as
// json.Unmarshal into v1.2.1's map[string]any does, errors word for word,
// into a Meta that already holds values.
func FuzzToolgateMetaUnmarshal(f *testing.F) {
	for _, s := range []string{
		`{"progressToken":"p-1","traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}`,
		`{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"c","version":"1"},` +
			`"io.modelcontextprotocol/clientCapabilities":{"sampling":{},"roots":{"listChanged":true}}}`,
		`{"progressToken":7,"a":[1,-2.5e3,"x",null,true,false,[],{},[[{"b":[]}]]],"a":{"c":"d"}}`,
		` { "k" : "caf\u00e9\n" , "l" : "é" } `, "{\"k\":\"\xff\"}",
		`{"n":1e400}`, `{"n":-0}`, `{"e":[],"o":{}}`, `{"n":12345678901234567890123}`, `{"\u006b":1}`, `{"é":1}`,
		`null`, `[]`, `"s"`, `{"a":}`, `{"a":[1,]}`, `{"a":1} x`, `{}`,
		`{"a":` + strings.Repeat("[", 70) + strings.Repeat("]", 70) + `}`,
		`{"a":"` + strings.Repeat("x", 5000) + `"}`,
	} {
		f.Add([]byte(s))
	}
	byJSON := func(m *Meta, data []byte) error { // v1.2.1's Meta.UnmarshalJSON
		raw := make(map[string]any)
		if err := json.Unmarshal(data, &raw); err != nil {
			return err
		}
		m.ProgressToken = raw["progressToken"]
		delete(raw, "progressToken")
		m.AdditionalFields = raw
		return nil
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		held := func() Meta { return Meta{ProgressToken: "held", AdditionalFields: map[string]any{"held": true}} }
		got, want := held(), held()
		errGot, errWant := got.UnmarshalJSON(data), byJSON(&want, data)
		if (errGot == nil) != (errWant == nil) || errGot != nil && errGot.Error() != errWant.Error() {
			t.Fatalf("%q: error %v; json.Unmarshal: %v", data, errGot, errWant)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%q: %#v; json.Unmarshal: %#v", data, got, want)
		}
	})
}

// TestToolgateMetaScanned: item 27 reads the _meta objects requests carry
// and leaves to json.Unmarshal those it cannot read as json would.
func TestToolgateMetaScanned(t *testing.T) {
	for _, c := range []struct {
		data    string
		scanned bool
	}{
		{`{"progressToken":"p-1","traceparent":"00-0af7-01"}`, true},
		{`{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"roots":{"listChanged":true}}}`, true},
		{`{"a":[1,-2.5e3,"x",null,true,false,[],{}],"b":"caf\u00e9","c":"é"}`, true},
		{`{"n":1e400}`, false},  // json's error
		{`{"\u006b":1}`, false}, // an escaped name
		{`{"é":1}`, false},      // a name json might fold
		{`null`, false},         // json leaves the map empty
		{`{"a":` + strings.Repeat("[", 70) + strings.Repeat("]", 70) + `}`, false},
		{`{"a":"` + strings.Repeat("x", maxScannedMeta) + `"}`, false},
	} {
		if _, ok := decodeMetaObject([]byte(c.data)); ok != c.scanned {
			t.Errorf("%.80s: scanned %v, want %v", c.data, ok, c.scanned)
		}
	}
}

// FuzzToolgateAppendPlain: item 25 writes a response's version and ID as
// json.Marshal does, or leaves them to it.
func FuzzToolgateAppendPlain(f *testing.F) {
	for _, s := range []string{"2.0", "tg-1", "", "a\"b", "<x>", "é", "\x7f", "a\\b"} {
		f.Add(s, int64(7), 7.0)
	}
	f.Add("x", int64(-1<<63), math.Copysign(0, -1)) // -0, which json.Marshal writes "-0"
	f.Add("x", int64(1<<62), 1e15)
	f.Add("x", int64(0), 999999999999999.0)
	f.Add("x", int64(0), 1.5)
	f.Add("x", int64(0), -1e-7)
	f.Fuzz(func(t *testing.T, s string, n int64, x float64) {
		for _, v := range []any{s, n, int(n), x, nil} {
			got, ok := appendPlain([]byte("prefix "), v)
			if !ok {
				continue
			}
			want, err := json.Marshal(v)
			if err != nil || string(got) != "prefix "+string(want) {
				t.Fatalf("%#v: %s; json.Marshal: %s, %v", v, got, want, err)
			}
		}
		if _, ok := appendPlain(nil, "2.0"); !ok {
			t.Fatal(`"2.0" left to json.Marshal`)
		}
		if _, ok := appendPlain(nil, int64(12)); !ok {
			t.Fatal("an integer ID left to json.Marshal")
		}
	})
}

// FuzzToolgateContainsFold: containsFold (item 70) finds a word where a
// comparison at every offset does, for words with and without a byte
// that has no case.
func FuzzToolgateContainsFold(f *testing.F) {
	for _, s := range []string{`{"X-MCP-Header":"a"}`, `x-mcp-heade`, `-x-mcp-header`, `--x-mcp-header-`, `x-mcp-headeR`, `date-time`, ``, `-`, `Xx-Mcp-HEADER`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, word := range []string{"x-mcp-header", "header", "-a-"} {
			want := false
			for i := 0; i+len(word) <= len(b); i++ {
				if bytes.EqualFold(b[i:i+len(word)], []byte(word)) {
					want = true
					break
				}
			}
			if got := containsFold(b, word); got != want {
				t.Fatalf("containsFold(%q, %q) = %v, want %v", b, word, got, want)
			}
		}
	})
}
