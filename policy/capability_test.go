package policy

import (
	"slices"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/gateway"
)

func TestNeededCapabilities(t *testing.T) {
	tests := []struct {
		name  string
		caps  []string
		hints gateway.Hints
		want  []string
	}{
		{"closed world keeps declared", []string{FSRead}, gateway.ReadOnlyHints(), []string{FSRead}},
		{"duplicates dropped", []string{FSRead, FSWrite, FSRead}, gateway.ReadOnlyHints(), []string{FSRead, FSWrite}},
		{"open world adds net", []string{FSRead}, gateway.Hints{OpenWorld: gateway.Bool(true)}, []string{FSRead, Net}},
		{"absent hints mean open world: net", nil, gateway.Hints{}, []string{Net}},
		{"net declared once", []string{Net}, gateway.Hints{}, []string{Net}},
		{"nothing", nil, gateway.ReadOnlyHints(), nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := NeededCapabilities(testTool(t, "x", tc.caps, tc.hints))
			if !slices.Equal(got, tc.want) {
				t.Fatalf("NeededCapabilities = %v, want %v", got, tc.want)
			}
		})
	}
	if NeededCapabilities(nil) != nil {
		t.Fatal("NeededCapabilities(nil) is not nil")
	}
}

// TestMatchesEveryName backs merge rule 5: destructive.allow refuses a glob
// that enables every tool, however it is spelled.
func TestMatchesEveryName(t *testing.T) {
	tests := []struct {
		glob string
		want bool
	}{
		{"*", true},
		{"**", true},
		{"?*", true},
		{"*?", true},
		{"*?*", true},
		{`[A-Za-z0-9_\-]*`, true},
		{"*[^.]*", true}, // no tool name has a dot
		{"?", false},
		{"??*", false}, // misses one-character names
		{"a*", false},  // literal
		{"*a*", false}, // literal
		{"[a-z]*", false},
		{"fs_*", false},
		{"delete_file", false},
		{`\**`, false},
	}
	for _, tc := range tests {
		if got := matchesEveryName(tc.glob); got != tc.want {
			t.Errorf("matchesEveryName(%q) = %v, want %v", tc.glob, got, tc.want)
		}
	}
}

func TestCheckGlob(t *testing.T) {
	tests := []struct {
		glob    string
		wantErr string
	}{
		{"fs_*", ""},
		{"github__*", ""},
		{"[a-c]?_x", ""},
		{"", "empty"},
		{"[", "bad tool-name glob"},
		{"a[b", "bad tool-name glob"},
		{`a\`, "bad tool-name glob"},
		{"fs.*", "can never match"},
		{"up/*", "can never match"},
		{"a b", "can never match"},
	}
	for _, tc := range tests {
		err := checkGlob(tc.glob)
		if tc.wantErr == "" {
			if err != nil {
				t.Errorf("checkGlob(%q) = %v", tc.glob, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("checkGlob(%q) = %v, want error containing %q", tc.glob, err, tc.wantErr)
		}
	}
}
