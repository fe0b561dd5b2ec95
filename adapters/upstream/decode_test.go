package upstream

import (
	"encoding/json"
	"reflect"
	"testing"
	"unsafe"
)

// decodeToolAsJSON is what decodeTool replaces: json.Unmarshal into a
// rawTool, then its annotations.
func decodeToolAsJSON(b []byte) (rawTool, error) {
	var rt rawTool
	err := json.Unmarshal(b, &rt)
	if err == nil && !isNull(rt.RawAnnots) {
		err = json.Unmarshal(rt.RawAnnots, &rt.Annotations)
	}
	return rt, err
}

// appendPageAsJSON is what appendPage replaces: the page decoded into a
// map, its items into a slice, its cursor into a string.
func appendPageAsJSON(raw []byte, key string) ([]json.RawMessage, string, error) {
	var res map[string]json.RawMessage
	if err := json.Unmarshal(raw, &res); err != nil {
		return nil, "", err
	}
	var items []json.RawMessage
	if b := res[key]; len(b) > 0 && string(b) != "null" {
		if err := json.Unmarshal(b, &items); err != nil {
			return nil, "", err
		}
	}
	cursor := ""
	if b := res["nextCursor"]; len(b) > 0 && string(b) != "null" {
		if err := json.Unmarshal(b, &cursor); err != nil {
			return nil, "", err
		}
	}
	return items, cursor, nil
}

var toolEntries = []string{
	`{"name":"echo","description":"Echoes.","inputSchema":{"type":"object","properties":{"text":{"type":"string"}}}}`,
	`{"name":"a","title":"A tool","description":"line one\nline \"two\"","inputSchema":{"type":"object"},"outputSchema":{"type":"object"},"annotations":{"readOnlyHint":true,"title":"T"},"icons":[{"src":"x.png"}],"_meta":{"k":1},"execution":{"taskSupport":"optional"}}`,
	` { "name" : "spaced" , "inputSchema" : null , "annotations" : null , "_meta" : null , "execution" : null } `,
	`{"name":null,"title":null,"description":null}`,
	`{"Name":"folded"}`,                 // matches only in another case: json takes it
	`{"name":"one","name":"two"}`,       // repeated: json keeps the last
	`{"na\u006de":"escaped name"}`,      // an escaped member name
	`{"name":"caf\u00e9 \ud83d\ude00"}`, // escapes in a value
	"{\"name\":\"bad utf8 \xff\"}",      // replaced by U+FFFD
	`{"name":7}`,                        // the wrong type: an error
	`{"name":"x","annotations":{"readOnlyHint":"yes"}}`,
	`{"name":"x","annotations":{"title":"T","readOnlyHint":false,"destructiveHint":true,"idempotentHint":null,"openWorldHint":true,"other":[1]}}`,
	`{"name":"x","annotations":{"title":"tab\there","readOnlyHint":true}}`,
	`{"name":"x","annotations":{"title":null,"ReadOnlyHint":true}}`,
	`{"name":"x","annotations":{"readOnlyHint":true,"readOnlyHint":false}}`,
	`{"name":"x","annotations":{"title":3}}`,
	`{"name":"x","annotations":[]}`,
	`{"name":"x","_meta":[1]}`,
	`{"name":"x","execution":{"taskSupport":5}}`,
	`{"name":"x","unknown":{"deep":[1,2,{"a":null}]},"inputSchema":{"type":"object"}}`,
	`{"name":"x",}`,
	`[1,2]`,
	`null`,
	``,
}

func TestDecodeToolAsJSONDoes(t *testing.T) {
	for _, e := range toolEntries {
		checkDecodeTool(t, []byte(e))
	}
	// The fast path is taken: the schema is the entry's own bytes.
	b := []byte(toolEntries[1])
	rt, err := decodeTool(b)
	if err != nil || len(rt.InputSchema) == 0 || !aliases(b, rt.InputSchema) {
		t.Fatalf("decodeTool(%s): the input schema %s (err %v) is not the entry's own bytes", b, rt.InputSchema, err)
	}
}

// aliases reports whether part lies within whole's memory.
func aliases(whole, part []byte) bool {
	return len(part) > 0 && len(whole) > 0 &&
		uintptr(unsafe.Pointer(&part[0])) >= uintptr(unsafe.Pointer(&whole[0])) &&
		uintptr(unsafe.Pointer(&part[0])) < uintptr(unsafe.Pointer(&whole[0]))+uintptr(len(whole))
}

func checkDecodeTool(t *testing.T, b []byte) {
	t.Helper()
	got, gotErr := decodeTool(b)
	want, wantErr := decodeToolAsJSON(b)
	if (gotErr == nil) != (wantErr == nil) || gotErr != nil && gotErr.Error() != wantErr.Error() {
		t.Fatalf("decodeTool(%q): error %v, json.Unmarshal's %v", b, gotErr, wantErr)
	}
	if gotErr == nil && !reflect.DeepEqual(got, want) {
		t.Fatalf("decodeTool(%q) = %+v, json.Unmarshal's %+v", b, got, want)
	}
}

var pages = []string{
	`{"tools":[{"name":"a"},{"name":"b","inputSchema":{"type":"object"}}]}`,
	`{"tools":[],"nextCursor":"c2"}`,
	`{"nextCursor":"page 2","tools":[1,"x",null,{}]}`,
	`{"tools":null,"nextCursor":null}`,
	`{}`,
	`null`,
	`{"tools":[{"name":"a"}],"tools":[{"name":"b"}]}`, // repeated: json keeps the last
	`{"Tools":[{"name":"a"}]}`,                        // a map matches names exactly
	`{"tools":[{"name":"a"}],"nextCursor":"caf\u00e9"}`,
	`{"tools":[{"name":"a"}],"nextCursor":3}`,
	`{"tools":{"name":"a"}}`,
	`{"tools":[{"name":"a"},]}`,
	`{"tools":[1] "nextCursor":"x"}`,
	`[]`,
}

func TestAppendPageAsJSONDoes(t *testing.T) {
	for _, p := range pages {
		checkAppendPage(t, []byte(p))
	}
	// The fast path is taken: the items are the page's own bytes.
	raw := []byte(pages[0])
	items, _, err := appendPage(nil, raw, "tools/list", "tools")
	if err != nil || len(items) != 2 || !aliases(raw, items[0]) || !aliases(raw, items[1]) {
		t.Fatalf("appendPage(%s) = %q (err %v): the items are not the page's own bytes", raw, items, err)
	}
}

func checkAppendPage(t *testing.T, raw []byte) {
	t.Helper()
	prior := []json.RawMessage{json.RawMessage(`{"name":"before"}`)}
	got, gotCursor, gotErr := appendPage(prior[:1:1], raw, "tools/list", "tools")
	want, wantCursor, wantErr := appendPageAsJSON(raw, "tools")
	if (gotErr == nil) != (wantErr == nil) {
		t.Fatalf("appendPage(%q): error %v, json.Unmarshal's %v", raw, gotErr, wantErr)
	}
	if gotErr != nil {
		return
	}
	if gotCursor != wantCursor {
		t.Fatalf("appendPage(%q): cursor %q, json.Unmarshal's %q", raw, gotCursor, wantCursor)
	}
	if len(got) != len(want)+1 || string(got[0]) != `{"name":"before"}` {
		t.Fatalf("appendPage(%q) = %q, want the earlier item and %q", raw, got, want)
	}
	for i := range want {
		if string(got[i+1]) != string(want[i]) {
			t.Fatalf("appendPage(%q) item %d = %s, json.Unmarshal's %s", raw, i, got[i+1], want[i])
		}
	}
}

func FuzzDecodeTool(f *testing.F) {
	for _, e := range toolEntries {
		f.Add([]byte(e))
	}
	f.Fuzz(func(t *testing.T, b []byte) { checkDecodeTool(t, b) })
}

func FuzzAppendPage(f *testing.F) {
	for _, p := range pages {
		f.Add([]byte(p))
	}
	f.Fuzz(func(t *testing.T, b []byte) { checkAppendPage(t, b) })
}
