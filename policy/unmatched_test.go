package policy

import (
	"strings"
	"testing"
)

// TestUnmatched (issue 10): a glob that matches no tool is reported with
// the nearest names; globs that match, and an upstream's own grant glob,
// are not.
func TestUnmatched(t *testing.T) {
	var cfg Config
	cfg.Tools.Deny = []string{"writefile", "grep_*"}
	cfg.Destructive.Allow = []string{"fs__delete_file"}
	cfg.Grants = []Grant{{Tools: []string{"fetch"}, Capabilities: []string{Net}}, {Tools: []string{"gone__*"}, Capabilities: []string{Net}, Key: "upstreams[0].grant"}}
	e, err := New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := e.Unmatched([]string{"write_file", "read_file", "grep_files", "fs__delete_files", "fetch"})
	var lines []string
	for _, u := range got {
		lines = append(lines, u.String())
	}
	want := []string{
		`policy.tools.deny[0] "writefile" matches no tool; did you mean write_file?`,
		`policy.destructive.allow[0] "fs__delete_file" matches no tool; did you mean fs__delete_files?`,
	}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
}
