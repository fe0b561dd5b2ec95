package gateway

import "testing"

func TestPlural(t *testing.T) {
	for _, tc := range []struct {
		n    int
		want string
	}{{0, "0 matches"}, {1, "1 match"}, {2, "2 matches"}, {-1, "-1 matches"}, {1000, "1000 matches"}} {
		if got := Plural(tc.n, "match", "matches"); got != tc.want {
			t.Errorf("Plural(%d) = %q, want %q", tc.n, got, tc.want)
		}
	}
}
