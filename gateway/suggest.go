package gateway

import (
	"slices"
	"strings"
)

// Nearest returns up to max names of candidates closest to name, for "did
// you mean" hints: those within an edit distance of about a quarter of
// name's length (at least 1, at most 3), where swapping two adjacent
// characters counts as one edit ("read_flie" is one edit from
// "read_file"), nearest first. Case is ignored.
func Nearest(name string, candidates []string, n int) []string {
	limit := max(1, min(3, len(name)/4))
	type scored struct {
		name string
		d    int
	}
	var found []scored
	lower := strings.ToLower(name)
	for _, c := range candidates {
		if c == name {
			continue
		}
		if d := editDistance(lower, strings.ToLower(c), limit); d <= limit {
			found = append(found, scored{c, d})
		}
	}
	slices.SortStableFunc(found, func(a, b scored) int {
		if a.d != b.d {
			return a.d - b.d
		}
		return strings.Compare(a.name, b.name)
	})
	var out []string
	for _, f := range found {
		if len(out) == n {
			break
		}
		if !slices.Contains(out, f.name) {
			out = append(out, f.name)
		}
	}
	return out
}

// editDistance is the optimal string alignment distance between a and b
// (insertions, deletions, substitutions and adjacent transpositions), or
// limit+1 when it is certainly over limit.
func editDistance(a, b string, limit int) int {
	if d := len(a) - len(b); d > limit || -d > limit {
		return limit + 1
	}
	ra, rb := []rune(a), []rune(b)
	prev2 := make([]int, len(rb)+1)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		rowMin := cur[0]
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
			rowMin = min(rowMin, cur[j])
		}
		if rowMin > limit {
			return limit + 1
		}
		prev2, prev, cur = prev, cur, prev2
	}
	// A row within the limit can still end past it (the fuzz test's
	// "rea000" and "re001111": 5 with a limit of 3).
	return min(prev[len(rb)], limit+1)
}

// DidYouMean is " (did you mean a or b?)" for the nearest of candidates to
// name, or "" when none is near.
func DidYouMean(name string, candidates []string) string {
	near := Nearest(name, candidates, 3)
	if len(near) == 0 {
		return ""
	}
	return "; did you mean " + strings.Join(near, " or ") + "?"
}
