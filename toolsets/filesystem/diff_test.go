package filesystem

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// lcsLen is the textbook LCS length, for checking.
func lcsLen(a, b []string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for i := range a {
		for j := range b {
			if a[i] == b[j] {
				cur[j+1] = prev[j] + 1
			} else {
				cur[j+1] = max(prev[j+1], cur[j])
			}
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

func randomText(r *rand.Rand, n int, alphabet string) string {
	var b strings.Builder
	for range n {
		b.WriteByte(alphabet[r.IntN(len(alphabet))])
		b.WriteByte('\n')
	}
	s := b.String()
	if n > 0 && r.IntN(4) == 0 {
		s = strings.TrimSuffix(s, "\n") // no final newline
	}
	return s
}

func TestDiffRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	for i := range 2000 {
		old := randomText(r, r.IntN(30), "abcde")
		new := randomText(r, r.IntN(30), "abcde")
		if r.IntN(3) == 0 { // a small edit of old
			lines := splitLines(old)
			if len(lines) > 0 {
				k := r.IntN(len(lines))
				lines[k] = "z\n"
			}
			new = strings.Join(lines, "")
		}
		d := diffBlock("f.txt", old, new, false)
		a, b := splitLines(old), splitLines(new)
		l := lcsLen(a, b)
		if d.Removed != len(a)-l || d.Added != len(b)-l {
			t.Fatalf("case %d: +%d -%d, want +%d -%d\nold %q\nnew %q", i, d.Added, d.Removed, len(b)-l, len(a)-l, old, new)
		}
		if got := applyUnified(t, old, d.Unified); got != new {
			t.Fatalf("case %d: applying\n%s\nto %q gives %q, want %q", i, d.Unified, old, got, new)
		}
		if old == new && d.Unified != "" {
			t.Fatalf("case %d: diff of equal texts: %q", i, d.Unified)
		}
		// The distance-only counts agree with the LCS.
		ids := map[string]int{}
		intern := func(ls []string) []int {
			out := make([]int, len(ls))
			for i, s := range ls {
				if _, ok := ids[s]; !ok {
					ids[s] = len(ids)
				}
				out[i] = ids[s]
			}
			return out
		}
		if dist, ok := editDistance(intern(a), intern(b), len(a)+len(b)); !ok || dist != len(a)+len(b)-2*l {
			t.Fatalf("case %d: editDistance = %d %v, want %d", i, dist, ok, len(a)+len(b)-2*l)
		}
		added, removed := changeCounts(a, b)
		if added != d.Added || removed != d.Removed {
			t.Fatalf("case %d: changeCounts = +%d -%d, want +%d -%d", i, added, removed, d.Added, d.Removed)
		}
	}
}

// TestDiffMatchesGNU compares hunks with GNU diff -u where the edit is
// unambiguous (distinct lines).
func TestDiffMatchesGNU(t *testing.T) {
	if _, err := exec.LookPath("diff"); err != nil {
		t.Skip("no diff(1)")
	}
	dir := t.TempDir()
	r := rand.New(rand.NewPCG(3, 4))
	for i := range 50 {
		var a, b []string
		for j := range 60 {
			line := fmt.Sprintf("line %d\n", j)
			switch r.IntN(12) {
			case 0:
				a = append(a, line) // removed
			case 1:
				b = append(b, "new "+line) // added
			case 2:
				a = append(a, line)
				b = append(b, "changed "+line)
			default:
				a = append(a, line)
				b = append(b, line)
			}
		}
		old, new := strings.Join(a, ""), strings.Join(b, "")
		pa, pb := filepath.Join(dir, "a"), filepath.Join(dir, "b")
		os.WriteFile(pa, []byte(old), 0o644)
		os.WriteFile(pb, []byte(new), 0o644)
		out, _ := exec.Command("diff", "-u", pa, pb).Output()
		gnu := string(out)
		if k := strings.Index(gnu, "@@"); k >= 0 {
			gnu = gnu[k:]
		}
		d := diffBlock("x", old, new, false)
		ours := strings.TrimPrefix(d.Unified, "--- a/x\n+++ b/x\n")
		if ours != gnu {
			t.Fatalf("case %d differs from GNU diff:\n--- ours ---\n%s\n--- gnu ---\n%s", i, ours, gnu)
		}
	}
}

func TestDiffBounds(t *testing.T) {
	big := linesOf(100000, "line %d")
	// A small change in a big file is still shown, with context.
	changed := strings.Replace(big, "line 50000\n", "line fifty thousand\n", 1)
	d := diffBlock("big.txt", big, changed, false)
	want := "--- a/big.txt\n+++ b/big.txt\n@@ -49997,7 +49997,7 @@\n line 49997\n line 49998\n line 49999\n-line 50000\n+line fifty thousand\n line 50001\n line 50002\n line 50003\n"
	if d.Unified != want || d.Added != 1 || d.Removed != 1 || d.Truncated {
		t.Errorf("small change in a big file:\n%+v", d)
	}

	// Scattered changes over a wide region: counts only, exact.
	var b strings.Builder
	for i := 1; i <= 100000; i++ {
		if i%1000 == 0 {
			fmt.Fprintf(&b, "changed %d\n", i)
			continue
		}
		fmt.Fprintf(&b, "line %d\n", i)
	}
	d = diffBlock("big.txt", big, b.String(), false)
	if !d.Truncated || d.Unified != "" || d.Added != 100 || d.Removed != 100 {
		t.Errorf("wide change: %+v", d)
	}

	// Completely different big files: counts from the line multisets.
	other := linesOf(5000, "other %d")
	d = diffBlock("big.txt", linesOf(5000, "line %d"), other, false)
	if !d.Truncated || d.Added != 5000 || d.Removed != 5000 {
		t.Errorf("rewrite: %+v", d)
	}

	// The unified text is capped at 64 KiB, on a hunk boundary.
	var x, y strings.Builder
	for i := range 1900 {
		fmt.Fprintf(&x, "%s %d\n", strings.Repeat("a", 40), i)
		if i%10 == 0 {
			fmt.Fprintf(&y, "%s %d\n", strings.Repeat("b", 40), i)
		} else {
			fmt.Fprintf(&y, "%s %d\n", strings.Repeat("a", 40), i)
		}
	}
	d = diffBlock("f", x.String(), y.String(), false)
	if !d.Truncated || len(d.Unified) > maxUnifiedBytes || d.Added != 190 || d.Removed != 190 || !strings.HasSuffix(d.Unified, "\n") {
		t.Errorf("cap: truncated=%v len=%d +%d -%d", d.Truncated, len(d.Unified), d.Added, d.Removed)
	}
	if strings.Count(d.Unified, "@@ -") < 10 {
		t.Errorf("too few hunks kept: %d", strings.Count(d.Unified, "@@ -"))
	}
}

func TestDiffHunkMerging(t *testing.T) {
	base := linesOf(30, "%d")
	lines := splitLines(base)
	// Changes at lines 5 and 12: 6 kept lines between, one hunk.
	one := append([]string(nil), lines...)
	one[4], one[11] = "x\n", "y\n"
	d := diffBlock("f", base, strings.Join(one, ""), false)
	if n := strings.Count(d.Unified, "@@ -"); n != 1 {
		t.Errorf("6 lines apart: %d hunks\n%s", n, d.Unified)
	}
	// Changes at lines 5 and 13: 7 kept lines between, two hunks.
	two := append([]string(nil), lines...)
	two[4], two[12] = "x\n", "y\n"
	d = diffBlock("f", base, strings.Join(two, ""), false)
	if n := strings.Count(d.Unified, "@@ -"); n != 2 {
		t.Errorf("7 lines apart: %d hunks\n%s", n, d.Unified)
	}
	// Deleting everything.
	d = diffBlock("f", "a\nb\n", "", false)
	if d.Unified != "--- a/f\n+++ b/f\n@@ -1,2 +0,0 @@\n-a\n-b\n" {
		t.Errorf("delete all: %q", d.Unified)
	}
	// Adding a final newline.
	d = diffBlock("f", "a\nb", "a\nb\n", false)
	if d.Unified != "--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+b\n" {
		t.Errorf("final newline: %q", d.Unified)
	}
	// Absolute paths (other roots) get no a/ b/ prefixes.
	d = diffBlock("/srv/x", "a\n", "b\n", false)
	if !strings.HasPrefix(d.Unified, "--- /srv/x\n+++ /srv/x\n@@ -1 +1 @@\n") {
		t.Errorf("absolute: %q", d.Unified)
	}
}
