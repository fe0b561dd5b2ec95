package upstream

import (
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/gateway"
)

func TestMapName(t *testing.T) {
	long := strings.Repeat("x", 70)
	tests := []struct {
		prefix, name, want string
	}{
		{"fs", "read_file", "fs__read_file"},
		{"", "read_file", "read_file"},
		{"fs", "get-env", "fs__get-env"},
		{"fs", "a.b/c:d", "fs__a_b_c_d"},
		{"fs", "café", "fs__caf_"}, // one "_" per character, not per byte
		{"fs", "sp ace", "fs__sp_ace"},
		{"up", long, "up__" + strings.Repeat("x", 64-4-9) + "_" + hashHex(long, 8)},
		{"", strings.Repeat("y", 64), strings.Repeat("y", 64)},
		{"", strings.Repeat("y", 65), strings.Repeat("y", 64-9) + "_" + hashHex(strings.Repeat("y", 65), 8)},
	}
	valid := regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)
	for _, tt := range tests {
		got := mapName(tt.prefix, tt.name)
		if got != tt.want {
			t.Errorf("mapName(%q, %q) = %q, want %q", tt.prefix, tt.name, got, tt.want)
		}
		if !valid.MatchString(got) || !gateway.ValidToolName(got) {
			t.Errorf("mapName(%q, %q) = %q: not a valid tool name", tt.prefix, tt.name, got)
		}
	}
	// Long names sharing a beginning stay apart.
	a, b := mapName("p", long+"a"), mapName("p", long+"b")
	if a == b || len(a) != 64 || len(b) != 64 {
		t.Errorf("long names: %q, %q", a, b)
	}
}

func TestAssignNames(t *testing.T) {
	t.Run("exact name keeps it", func(t *testing.T) {
		got, cols := assignNames("up", []string{"weird.name", "weird_name", "weird/name", "other"})
		if got["weird_name"] != "up__weird_name" || got["other"] != "up__other" {
			t.Fatalf("got %v", got)
		}
		for _, n := range []string{"weird.name", "weird/name"} {
			if !regexp.MustCompile(`^up__weird_name_[0-9a-f]{6}$`).MatchString(got[n]) {
				t.Errorf("%s -> %q", n, got[n])
			}
		}
		if got["weird.name"] == got["weird/name"] {
			t.Error("renamed tools collide")
		}
		if len(cols) != 1 || cols[0].Kept != "weird_name" || len(cols[0].Renamed) != 2 {
			t.Fatalf("collisions: %+v", cols)
		}
		if s := cols[0].String(); !strings.Contains(s, "up__weird_name") || !strings.Contains(s, `"weird.name" as up__weird_name_`) {
			t.Errorf("report: %s", s)
		}
	})
	t.Run("no exact name: smallest keeps it", func(t *testing.T) {
		got, _ := assignNames("", []string{"a:b", "a.b"})
		if got["a.b"] != "a_b" || got["a:b"] == "a_b" {
			t.Fatalf("got %v", got)
		}
	})
	t.Run("independent of order", func(t *testing.T) {
		names := []string{"x.y", "x_y", "x y", "x-y", strings.Repeat("z", 80) + "1", strings.Repeat("z", 80) + "2", "plain"}
		want, _ := assignNames("p", names)
		for i := 0; i < 20; i++ {
			shuffled := append([]string(nil), names...)
			rand.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
			got, _ := assignNames("p", shuffled)
			for k, v := range want {
				if got[k] != v {
					t.Fatalf("order %v: %s -> %s, want %s", shuffled, k, got[k], v)
				}
			}
		}
		seen := map[string]bool{}
		for _, v := range want {
			if seen[v] || !gateway.ValidToolName(v) {
				t.Fatalf("bad or repeated name %q in %v", v, want)
			}
			seen[v] = true
		}
	})
	t.Run("a suffix never takes another tool's name", func(t *testing.T) {
		taken := "a_b_" + hashHex("a.b", 6)
		got, _ := assignNames("", []string{"a_b", "a.b", taken})
		if got[taken] != taken || got["a.b"] == taken || got["a_b"] != "a_b" {
			t.Fatalf("got %v", got)
		}
	})
}
