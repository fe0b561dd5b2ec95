package policy

import "testing"

func TestProfileAdmits(t *testing.T) {
	p, err := NewProfile("coding", []string{"read_file", "gh__*"}, []string{"gh__delete_*"})
	if err != nil {
		t.Fatal(err)
	}
	for tool, want := range map[string]bool{
		"read_file": true, "gh__create_issue": true, "gh__delete_repo": false, "write_file": false,
	} {
		if got := p.Admits(tool); got != want {
			t.Errorf("Admits(%s) = %v, want %v", tool, got, want)
		}
	}
	all, _ := NewProfile("all", nil, []string{"sleep"})
	if !all.Admits("anything") || all.Admits("sleep") {
		t.Error("a profile without tools admits everything but its deny list")
	}
	for _, bad := range []struct {
		name  string
		globs []string
	}{{"a/b", nil}, {"", nil}, {"ok", []string{"fs.*"}}, {"ok", []string{"[a-"}}} {
		if _, err := NewProfile(bad.name, bad.globs, nil); err == nil {
			t.Errorf("NewProfile(%q, %q) accepted", bad.name, bad.globs)
		}
	}
}
