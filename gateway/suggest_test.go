package gateway

import (
	"slices"
	"testing"
)

func TestNearest(t *testing.T) {
	names := []string{"read_file", "write_file", "list_files", "grep_files", "echo", "fs__read_text_file"}
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"read_flie", []string{"read_file"}},
		{"writefile", []string{"write_file"}},
		{"ecoh", []string{"echo"}},
		{"READ_FILE", []string{"read_file"}},
		{"list_file", []string{"list_files"}},
		{"delete_everything", nil},
		{"x", nil},
		{"read_file", nil}, // itself is not a suggestion
	} {
		if got := Nearest(tc.in, names, 3); !slices.Equal(got, tc.want) {
			t.Errorf("Nearest(%q) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

func FuzzEditDistance(f *testing.F) {
	f.Add("read_flie", "read_file")
	f.Fuzz(func(t *testing.T, a, b string) {
		d := editDistance(a, b, 3)
		if d < 0 || d > 4 {
			t.Fatalf("distance %d out of range", d)
		}
		if a == b && d != 0 {
			t.Fatalf("distance of a string to itself %d", d)
		}
	})
}
