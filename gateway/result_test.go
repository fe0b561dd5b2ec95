package gateway

import (
	"encoding/json"
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
