package gateway

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
)

// flatMode is a named string type, as tools declare their enums.
type flatMode string

// flatParams has a field of every kind flatArgs fills, named by tag and
// by Go name, and fields it must leave alone.
type flatParams struct {
	Text    string   `json:"text"`
	Mode    flatMode `json:"mode,omitempty"`
	Tiny    uint8    `json:"tiny"`
	Flag    bool     `json:"flag,omitempty"`
	Small   int8     `json:"small"`
	Big     int64    // named "Big"
	Count   uint16   `json:"count"`
	Ratio   float32  `json:"ratio"`
	Value   float64  `json:"value"`
	Skipped string   `json:"-"`
	//lint:ignore U1000 an unexported field, which both must leave alone
	hidden string
}

// topLevelNames is the member names of a JSON object in order, repeats
// included.
func topLevelNames(raw []byte) ([]string, bool) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, false
	}
	var names []string
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, false
		}
		names = append(names, t.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return nil, false
		}
	}
	return names, true
}

// Wherever flatArgs fills the parameters, json.Unmarshal of the same bytes
// succeeds and fills them alike; wherever json.Unmarshal fails, flatArgs
// says no (and the call goes to json.Unmarshal). Objects naming a member
// twice are left out: there flatArgs takes the last, as the validation
// does, where json.Unmarshal applies each in turn.
func FuzzFlatArgs(f *testing.F) {
	for _, s := range []string{
		`{"text":"hello","flag":true,"small":-128,"Big":9007199254740993,"count":65535,"ratio":1.5,"value":-2e-3}`,
		`{"text":null,"small":127,"unknown":[1,2],"Skipped":"x","hidden":"y","-":1}`,
		`{"TEXT":"other case"}`, `{"big":1}`, `{"ſmall":1}`, `{"small":128}`, `{"small":1.0}`, `{"small":1e2}`,
		`{"count":-1}`, `{"count":-0}`, `{"ratio":3.5e38}`, `{"ratio":1e39}`, `{"value":1e309}`, `{"flag":"true"}`,
		`{"text":1}`, `{"text":"\ud800 \u00e9 \\"}`, `{}`, `{"text":"a","text":null}`,
		`{"mode":"fast","tiny":255}`, `{"tiny":256}`, `{"mode":7}`,
	} {
		f.Add([]byte(s))
	}
	fa := newFlatArgs(reflect.TypeFor[flatParams]())
	if fa == nil {
		f.Fatal("flatParams is not flat")
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		args, err := DecodeArguments(raw)
		if err != nil {
			return
		}
		if names, ok := topLevelNames(raw); !ok || len(names) != len(args) {
			return
		}
		var want flatParams
		werr := json.Unmarshal(raw, &want)
		var got flatParams
		if !fa.fill(args, reflect.ValueOf(&got).Elem()) {
			return
		}
		if werr != nil {
			t.Fatalf("%s: filled %+v where json.Unmarshal fails: %v", raw, got, werr)
		}
		if got != want {
			t.Fatalf("%s: filled %+v, json.Unmarshal %+v", raw, got, want)
		}
	})
}

// Types flatArgs does not take, so that their calls decode with
// json.Unmarshal.
func TestFlatArgsRefusesOtherTypes(t *testing.T) {
	type embedded struct{ A string }
	cases := map[string]reflect.Type{
		"not a struct":      reflect.TypeFor[map[string]any](),
		"a slice field":     reflect.TypeFor[struct{ Paths []string }](),
		"a pointer field":   reflect.TypeFor[struct{ N *int }](),
		"an embedded field": reflect.TypeFor[struct{ embedded }](),
		"the string option": reflect.TypeFor[struct {
			N int `json:"n,string"`
		}](),
		"a name to escape": reflect.TypeFor[struct {
			N int `json:"a-b"`
		}](),
		"names differing in case": reflect.TypeFor[struct {
			A string `json:"name"`
			B string `json:"Name"`
		}](),
		"a type that decodes itself":                                    reflect.TypeFor[struct{ D json.RawMessage }](),
		"json.Number (a string kind encoding/json fills from a number)": reflect.TypeFor[struct{ N json.Number }](),
	}
	for what, typ := range cases {
		if newFlatArgs(typ) != nil {
			t.Errorf("%s (%s): taken", what, typ)
		}
	}
}
