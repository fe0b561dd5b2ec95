package gateway

import (
	"encoding/json"
	"testing"
)

// TestDecodeFlatTakes: the arguments of most calls (a flat object of plain
// strings, numbers, booleans and nulls) are decoded by decodeFlat, in one
// pass; anything it cannot read exactly as json.Decoder does goes to the
// decoder. What each path decodes is FuzzToolArguments' to check; this
// checks that the fast path is the one taken where it should be, and
// never where it should not.
func TestDecodeFlatTakes(t *testing.T) {
	for _, raw := range []string{
		`{"text":"hello, toolgate"}`,
		` { "path" : "src/main.go" , "limit":100,"offset":0,"recursive":true,"glob":null } `,
		`{"n":-0.5e+10,"m":0,"k":1E3}`,
		`{}`,
		`{"a":"1","a":"2"}`,
	} {
		got, ok := decodeFlat([]byte(raw))
		if !ok {
			t.Errorf("%s: not taken", raw)
			continue
		}
		want, err := decodeFresh([]byte(raw))
		if err != nil || len(got) != len(want) {
			t.Errorf("%s: %v; the decoder gives %v, %v", raw, got, want, err)
		}
	}
	if got, _ := decodeFlat([]byte(`{"n":12.50}`)); got["n"] != json.Number("12.50") {
		t.Errorf("a number is %#v; want the literal as written, json.Number(\"12.50\")", got["n"])
	}
	for _, raw := range []string{
		`{"text":"a\"b"}`,     // an escape
		`{"text":"é"}`,        // not ASCII
		"{\"text\":\"a\tb\"}", // a control character
		`{"list":[1]}`,        // nesting
		`{"obj":{}}`,
		`{"n":01}`, `{"n":1.}`, `{"n":-}`, `{"n":1e}`, // not numbers
		`{"b":tru}`, `{"b":truex}`,
		`{"a":1,}`, `{"a" 1}`, `{"a":1`, `{"a":1} x`, `{a:1}`,
		`[]`, `"x"`,
	} {
		if _, ok := decodeFlat([]byte(raw)); ok {
			t.Errorf("%s: taken; it is the decoder's to read", raw)
		}
	}
}
