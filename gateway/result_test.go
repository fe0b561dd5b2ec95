package gateway

import "testing"

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
