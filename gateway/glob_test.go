package gateway

import "testing"

func TestGlobs(t *testing.T) {
	for _, c := range []struct {
		glob, name string
		want       bool
	}{
		{"*", "anything", true},
		{"fs__*", "fs__read", true},
		{"fs__*", "gh__read", false},
		{"read_?ile", "read_file", true},
		{"read_?ile", "read_fiile", false},
		{"[a-c]*", "b_tool", true},
		{"[a-c]*", "d_tool", false},
		{"[!a]*", "b_tool", true},
		{"[!a]*", "a_tool", false},
		{"[^a]*", "a_tool", false},
		{`x\*`, "x*", true},
		{`x\*`, "xy", false},
		{`\[!a]`, "[!a]", true},
		{"write_file", "write_file", true},
		{"write_file", "write_file2", false},
		{"*", "a/b", true},
		{"a/*", "a/b", true},
	} {
		if err := CheckGlob(c.glob); err != nil {
			t.Errorf("CheckGlob(%q): %v", c.glob, err)
		}
		if got := MatchGlob(c.glob, c.name); got != c.want {
			t.Errorf("MatchGlob(%q, %q) = %v, want %v", c.glob, c.name, got, c.want)
		}
	}
	for _, bad := range []string{"", "[a-", `x\`, "[!"} {
		if CheckGlob(bad) == nil {
			t.Errorf("CheckGlob(%q) accepted", bad)
		}
		if MatchGlob(bad, "x") {
			t.Errorf("a malformed glob %q matched", bad)
		}
	}
}
