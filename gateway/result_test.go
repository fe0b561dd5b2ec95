package gateway

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestTruncate(t *testing.T) {
	for _, tc := range []struct {
		in   string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"exactly10!", 10, "exactly10!"},
		{"abcdefghij", 4, "abcd…"},
		{"héllo", 2, "h…"}, // é is 2 bytes: never split it
		{"日本語", 4, "日…"},   // 3-byte runes
		{"😀x", 3, "…"},     // a 4-byte rune cut at its start
		{"", 0, ""},
	} {
		if got := Truncate(tc.in, tc.n); got != tc.want {
			t.Errorf("Truncate(%q, %d) = %q, want %q", tc.in, tc.n, got, tc.want)
		}
	}
}

// TestRedactArgumentsCutsRunes: arguments that are not JSON are kept as a
// bounded string cut between runes, so the record stays valid UTF-8.
func TestRedactArgumentsCutsRunes(t *testing.T) {
	raw := json.RawMessage("{bad " + strings.Repeat("é", 300)) // 5 ASCII bytes, then 2-byte runes: byte 256 is mid-rune
	got := RedactArguments(raw)
	var s string
	if err := json.Unmarshal(got, &s); err != nil {
		t.Fatalf("not a JSON string: %s", got)
	}
	if !utf8.ValidString(s) || strings.ContainsRune(s, utf8.RuneError) {
		t.Errorf("the cut split a rune: %q", s)
	}
	if len(s) > 256+len("…") {
		t.Errorf("kept %d bytes, want at most 256 and an ellipsis", len(s))
	}
}

// TestWithBrief: the brief is the first display block, replaced rather
// than repeated, whether the result came with room for it (OkText) or not,
// and two results never share their display.
func TestWithBrief(t *testing.T) {
	briefs := func(r *Result) []string {
		var out []string
		for _, b := range r.Display {
			switch b := b.(type) {
			case BriefBlock:
				out = append(out, "brief:"+b.Text)
			case DiffBlock:
				out = append(out, "diff:"+b.Path)
			}
		}
		return out
	}
	for _, c := range []struct {
		name string
		res  *Result
		want []string
	}{
		{"OkText", OkText("x").WithBrief("one"), []string{"brief:one"}},
		{"OkText, empty brief", OkText("x").WithBrief(""), nil},
		{"OkText, replaced", OkText("x").WithBrief("one").WithBrief("two"), []string{"brief:two"}},
		{"OkText, display after", OkText("x").WithBrief("one").WithDisplay(DiffBlock{Path: "m"}), []string{"brief:one", "diff:m"}},
		{"OkText, brief after display", OkText("x").WithDisplay(DiffBlock{Path: "m"}).WithBrief("one"), []string{"brief:one", "diff:m"}},
		{"Result", (&Result{Display: []DisplayBlock{DiffBlock{Path: "m"}}}).WithBrief("one"), []string{"brief:one", "diff:m"}},
	} {
		if got := briefs(c.res); !slices.Equal(got, c.want) {
			t.Errorf("%s: display %v, want %v", c.name, got, c.want)
		}
	}
	a := OkText("a").WithBrief("a")
	b := OkText("b").WithBrief("b")
	a.WithDisplay(DiffBlock{Path: "only a"})
	if got := briefs(b); !slices.Equal(got, []string{"brief:b"}) {
		t.Errorf("a second result's display changed with the first's: %v", got)
	}
}
