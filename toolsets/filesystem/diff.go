package filesystem

import (
	"fmt"
	"strings"

	"github.com/toolgate/toolgate/gateway"
)

// Bounds of the diff write_file shows.
const (
	diffContext = 3 // lines of context around each change
	// maxDiffLines bounds the changed region (what is left once the common
	// head and tail are set aside) on either side. Over it, the block has
	// counts only and is marked truncated.
	maxDiffLines = 2000
	// maxUnifiedBytes caps the unified text; the rest is cut (truncated).
	maxUnifiedBytes = 64 << 10
	// maxDistanceWork bounds the work (lines times edits) spent counting the
	// changes of a region too large to diff; past it the counts come from
	// comparing the two sides' lines as multisets.
	maxDistanceWork = 50_000_000
)

// diffBlock compares old and new line by line and returns the display block
// for a write of name: a unified diff with 3 lines of context (file headers
// only when the file existed), and the number of lines added and removed.
func diffBlock(name string, old, new string, created bool) gateway.DiffBlock {
	a, b := splitLines(old), splitLines(new)
	block := gateway.DiffBlock{Path: name, Created: created}

	// Set the common head and tail aside: most writes change a small part.
	pre := 0
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		pre++
	}
	suf := 0
	for suf < len(a)-pre && suf < len(b)-pre && a[len(a)-1-suf] == b[len(b)-1-suf] {
		suf++
	}
	am, bm := a[pre:len(a)-suf], b[pre:len(b)-suf]
	if len(am) == 0 && len(bm) == 0 {
		return block // no change
	}
	if len(am) > maxDiffLines || len(bm) > maxDiffLines {
		block.Added, block.Removed = changeCounts(am, bm)
		block.Truncated = true
		return block
	}

	// The edit script, with up to diffContext lines of the common head and
	// tail around it for context.
	ctxHead := min(pre, diffContext)
	ctxTail := min(suf, diffContext)
	var ops []diffOp
	ai, bi := pre-ctxHead, pre-ctxHead
	for range ctxHead {
		ops = append(ops, diffOp{kind: ' ', a: ai, b: bi, text: a[ai]})
		ai++
		bi++
	}
	for _, op := range lcsScript(am, bm) {
		op.a += pre
		op.b += pre
		switch op.kind {
		case '-':
			op.text = a[op.a]
			block.Removed++
		case '+':
			op.text = b[op.b]
			block.Added++
		default:
			op.text = a[op.a]
		}
		ops = append(ops, op)
	}
	ai, bi = len(a)-suf, len(b)-suf
	for range ctxTail {
		ops = append(ops, diffOp{kind: ' ', a: ai, b: bi, text: a[ai]})
		ai++
		bi++
	}

	var u strings.Builder
	if !created {
		if strings.HasPrefix(name, "/") {
			fmt.Fprintf(&u, "--- %s\n+++ %s\n", name, name)
		} else {
			fmt.Fprintf(&u, "--- a/%s\n+++ b/%s\n", name, name)
		}
	}
	block.Truncated = !writeHunks(&u, ops)
	block.Unified = u.String()
	return block
}

// diffOp is one line of an edit script: kind ' ' (kept), '-' (removed) or
// '+' (added); a and b are the 0-based positions in the old and new lines
// before this op (for a kept or removed line, a is its index; for a kept or
// added line, b is its index).
type diffOp struct {
	kind byte
	a, b int
	text string
}

// splitLines splits s into lines, each keeping its "\n" (the last may have
// none).
func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	lines := strings.SplitAfter(s, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	return lines
}

// lcsScript returns a shortest edit script from a to b, computed from a
// longest common subsequence table (len(a), len(b) <= maxDiffLines, so the
// table has at most about 4M uint16 cells). Within a change, removals come
// before additions.
func lcsScript(a, b []string) []diffOp {
	n, m := len(a), len(b)
	// l[i*(m+1)+j] is the LCS length of a[i:] and b[j:].
	l := make([]uint16, (n+1)*(m+1))
	w := m + 1
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if a[i] == b[j] {
				l[i*w+j] = l[(i+1)*w+j+1] + 1
			} else {
				l[i*w+j] = max(l[(i+1)*w+j], l[i*w+j+1])
			}
		}
	}
	ops := make([]diffOp, 0, n+m)
	i, j := 0, 0
	for i < n || j < m {
		switch {
		case i < n && j < m && a[i] == b[j]:
			ops = append(ops, diffOp{kind: ' ', a: i, b: j})
			i++
			j++
		case j == m || (i < n && l[(i+1)*w+j] >= l[i*w+j+1]):
			ops = append(ops, diffOp{kind: '-', a: i, b: j})
			i++
		default:
			ops = append(ops, diffOp{kind: '+', a: i, b: j})
			j++
		}
	}
	return ops
}

// writeHunks writes ops as unified diff hunks with diffContext lines of
// context, merging changes whose contexts touch. It stops before the text
// would pass maxUnifiedBytes and then returns false.
func writeHunks(u *strings.Builder, ops []diffOp) bool {
	i := 0
	for i < len(ops) {
		// Find the next change.
		for i < len(ops) && ops[i].kind == ' ' {
			i++
		}
		if i == len(ops) {
			break
		}
		start := max(0, i-diffContext)
		for start < i && ops[start].kind != ' ' {
			start++
		}
		// Extend over changes separated by at most 2*diffContext kept lines.
		end := i // exclusive end of the last change seen
		for j := i; j < len(ops); {
			if ops[j].kind != ' ' {
				j++
				end = j
				continue
			}
			k := j
			for k < len(ops) && ops[k].kind == ' ' {
				k++
			}
			if k == len(ops) || k-j > 2*diffContext {
				break
			}
			j = k
		}
		stop := min(len(ops), end+diffContext)
		if !writeHunk(u, ops[start:stop]) {
			return false
		}
		i = stop
	}
	return true
}

// writeHunk writes one hunk, or nothing and false if it would pass
// maxUnifiedBytes.
func writeHunk(u *strings.Builder, ops []diffOp) bool {
	var oldN, newN int
	for _, op := range ops {
		if op.kind != '+' {
			oldN++
		}
		if op.kind != '-' {
			newN++
		}
	}
	var h strings.Builder
	fmt.Fprintf(&h, "@@ -%s +%s @@\n", hunkRange(ops[0].a, oldN), hunkRange(ops[0].b, newN))
	for _, op := range ops {
		h.WriteByte(op.kind)
		h.WriteString(op.text)
		if !strings.HasSuffix(op.text, "\n") {
			h.WriteString("\n\\ No newline at end of file\n")
		}
	}
	if u.Len()+h.Len() > maxUnifiedBytes {
		return false
	}
	u.WriteString(h.String())
	return true
}

// hunkRange formats a hunk's line range as GNU diff does: "start,count",
// just "start" for one line, and for no lines the line before, ",0".
// first is the 0-based index of the hunk's first line.
func hunkRange(first, n int) string {
	switch n {
	case 0:
		return fmt.Sprintf("%d,0", first)
	case 1:
		return fmt.Sprintf("%d", first+1)
	default:
		return fmt.Sprintf("%d,%d", first+1, n)
	}
}

// changeCounts returns the lines added and removed between a and b without
// an edit script: exactly (from the edit distance, with Myers' algorithm)
// when that costs at most maxDistanceWork, else from comparing the lines as
// multisets (a lower bound).
func changeCounts(a, b []string) (added, removed int) {
	ids := map[string]int{}
	intern := func(lines []string) []int {
		out := make([]int, len(lines))
		for i, s := range lines {
			id, ok := ids[s]
			if !ok {
				id = len(ids)
				ids[s] = id
			}
			out[i] = id
		}
		return out
	}
	x, y := intern(a), intern(b)
	n, m := len(x), len(y)
	if d, ok := editDistance(x, y, maxDistanceWork/(n+m+1)); ok {
		// d = added + removed and removed - added = n - m.
		return (d - n + m) / 2, (d + n - m) / 2
	}
	count := make([]int, len(ids))
	for _, id := range x {
		count[id]++
	}
	for _, id := range y {
		count[id]--
	}
	for _, c := range count {
		if c > 0 {
			removed += c
		} else {
			added -= c
		}
	}
	return added, removed
}

// editDistance is the number of insertions plus deletions turning a into b
// (Myers' O((N+M)D) algorithm, linear space), or false if it is over maxD.
func editDistance(a, b []int, maxD int) (int, bool) {
	n, m := len(a), len(b)
	maxD = min(maxD, n+m)
	off := maxD + 1
	// v[off+k] is the furthest x reached on diagonal k = x-y (-1: none).
	v := make([]int, 2*maxD+3)
	for i := range v {
		v[i] = -1
	}
	for d := 0; d <= maxD; d++ {
		for k := -d; k <= d; k += 2 {
			if k < -m || k > n {
				continue // diagonal outside the grid
			}
			x := -1
			if d == 0 {
				x = 0
			}
			// Down from diagonal k+1 (an insertion), if it stays in the grid.
			if k < d {
				if c := v[off+k+1]; c >= 0 && c-k <= m {
					x = c
				}
			}
			// Right from diagonal k-1 (a deletion), if it stays in the grid.
			if k > -d {
				if c := v[off+k-1]; c >= 0 && c+1 <= n && c+1 > x {
					x = c + 1
				}
			}
			if x < 0 {
				continue
			}
			y := x - k
			for x < n && y < m && a[x] == b[y] {
				x++
				y++
			}
			v[off+k] = x
			if x >= n && y >= m {
				return d, true
			}
		}
	}
	return 0, false
}
