package filesystem

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
)

// FuzzMatcher checks the matcher against the plain definition (a line
// matches if the regexp matches within it), for any pattern, text, case
// folding and span size: the spans, needle windows and long-line reader
// must never change what matches.
func FuzzMatcher(f *testing.F) {
	for _, s := range []struct {
		pat, text string
		fold      bool
		span      uint8
	}{
		{"a", "a\nb\na", false, 1},
		{"^b$", "a\nb\nbb\n", false, 2},
		{`\Aa`, "ab\nba\n", false, 3},
		{"kb", "\u212aB\nkb\n", true, 1},
		{"x*", "\n\n", false, 1},
		{"a\nb", "a\nb", false, 4},
		{"(?i)ſ", "S\ns\n", false, 2},
		{"ab|ba", strings.Repeat("xab", 20) + "\n" + strings.Repeat("y", 40), false, 5},
	} {
		f.Add(s.pat, s.text, s.fold, s.span)
	}
	f.Fuzz(func(t *testing.T, pat, text string, fold bool, span uint8) {
		if len(pat) > 64 || len(text) > 4096 {
			return
		}
		m, err := newMatcher(pat, false, fold)
		if err != nil {
			return
		}
		m.span = 1 + int(span%32)
		got, err := m.find(context.Background(), []byte(text), 1000)
		if err != nil {
			t.Fatal(err)
		}
		src := pat
		if fold {
			src = "(?i)" + src
		}
		ref, err := regexp.Compile(src)
		if err != nil {
			t.Fatalf("the matcher compiled %q, regexp did not: %v", pat, err)
		}
		var want []lineMatch
		lines := strings.Split(text, "\n")
		if strings.HasSuffix(text, "\n") || text == "" {
			lines = lines[:len(lines)-1]
		}
		for n, l := range lines {
			if ref.MatchString(l) {
				want = append(want, lineMatch{line: n + 1, text: matchText([]byte(l))})
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("pattern %q fold=%v span=%d text %q:\ngot  %v\nwant %v", pat, fold, m.span, text, got, want)
		}
	})
}
