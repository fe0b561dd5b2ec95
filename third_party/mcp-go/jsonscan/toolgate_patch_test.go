package jsonscan

// toolgate patch: white-box tests of the package (third_party/README.md);
// its other functions are held to encoding/json by the fuzz tests of their
// callers (mcp/toolgate_patch_test.go, server/toolgate_patch_test.go).

import (
	"bytes"
	"encoding/json"
	"testing"
)

// FuzzToolgateElements holds Elements to encoding/json: an array it splits
// is one json decodes into the same elements, and what json refuses it
// refuses too (it may refuse more: nesting deeper than MaxDepth).
func FuzzToolgateElements(f *testing.F) {
	for _, s := range []string{
		`[]`, ` [ ] `, `[1,"a",{"b":[2]},[],null,true,false]`, ` [ 1 , [ 2 ] ] `,
		`x1]`, `x]`, `{}`, `null`, `"]"`, `[1,]`, `[1 2]`, `[`, `[1`, `[]x`, `[1]]`, `[,1]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var got []json.RawMessage
		ok := Elements(data, func(start, end int) bool {
			got = append(got, data[start:end])
			return true
		})
		var want []json.RawMessage
		err := json.Unmarshal(data, &want)
		switch {
		case ok && err != nil:
			t.Fatalf("%q: split, where json fails: %v", data, err)
		case ok && (want == nil || len(got) != len(want)):
			t.Fatalf("%q: %d elements, json %d (%q)", data, len(got), len(want), want)
		case ok:
			for i := range got {
				if !bytes.Equal(got[i], want[i]) {
					t.Fatalf("%q: element %d %q, json %q", data, i, got[i], want[i])
				}
			}
		}
	})
}
