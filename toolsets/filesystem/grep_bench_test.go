package filesystem_test

// BenchmarkGrepVsGrepRN compares grep_files with `grep -rn` over the same
// generated tree (10,000 files, about 50 MB, deterministic content), pattern
// by pattern, both measured in the same run; the x-grep metric is
// grep_files' time as a multiple of grep's. Run:
//
//	go test -run='^$' -bench='^BenchmarkGrepVsGrepRN$' -benchtime=5x ./toolsets/filesystem
//
// Every pattern matches fewer lines than max_matches, so both search the
// whole tree; the setup checks that both find the same number of lines.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/gateway"
	"github.com/toolgate/toolgate/policy"
	"github.com/toolgate/toolgate/toolsets/filesystem"
)

const (
	grepBenchFiles = 10_000
	grepBenchDirs  = 100
	// grepBenchLines lines of about 70 bytes make files of about 5 KB.
	grepBenchLines = 72
)

var grepBenchWords = strings.Fields(`the of and to in is that for it as with was on be by at this from
	are or an not have but which they has had one you all were their there been more when will
	would can if no out so what up its about into than them only other new some could time these
	two may first then do any like my now over such our man me even most made after also did
	func return err nil string int struct package import var const type range map chan select
	case default break continue defer go goto switch interface error context value config
	server client request response handler message tool call result output input schema
	value index buffer reader writer stream record event session token policy sandbox root`)

// writeGrepTree writes the benchmark tree under dir and returns its size.
// Planted lines: "frobnicate_widget" (literal), "zephyr quokka" in mixed
// case (ignore-case), "order_id=NNNNNN-XX" among near misses (regexp), and
// "omegaNNNNN" (a regexp with no required literal).
func writeGrepTree(tb testing.TB, dir string) int64 {
	tb.Helper()
	rng := rand.New(rand.NewPCG(1, 2))
	var total int64
	var b bytes.Buffer
	cases := []string{"zephyr quokka", "Zephyr Quokka", "ZEPHYR QUOKKA", "zePHyr qUOkka"}
	for i := range grepBenchFiles {
		b.Reset()
		for l := range grepBenchLines {
			n := 8 + rng.IntN(7)
			for w := range n {
				if w > 0 {
					b.WriteByte(' ')
				}
				b.WriteString(grepBenchWords[rng.IntN(len(grepBenchWords))])
			}
			switch {
			case l == 10 && i%50 == 0:
				b.WriteString(" frobnicate_widget()")
			case l == 20 && i%40 == 0:
				b.WriteString(" " + cases[(i/40)%len(cases)])
			case l == 30 && i%30 == 0:
				fmt.Fprintf(&b, " order_id=%06d-%c%c", rng.IntN(1e6), 'A'+rng.IntN(26), 'A'+rng.IntN(26))
			case l == 30 && i%3 == 0:
				fmt.Fprintf(&b, " order_id=%05d-%c", rng.IntN(1e5), 'A'+rng.IntN(26)) // near miss
			case l == 40 && i%70 == 0:
				fmt.Fprintf(&b, " omega%05d", rng.IntN(1e5))
			case l == 40 && i%7 == 0:
				fmt.Fprintf(&b, " omega%03d", rng.IntN(1e3)) // near miss
			}
			b.WriteByte('\n')
		}
		p := filepath.Join(dir, fmt.Sprintf("d%02d", i%10), fmt.Sprintf("s%02d", (i/10)%(grepBenchDirs/10)), fmt.Sprintf("f%05d.txt", i))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(p, b.Bytes(), 0o644); err != nil {
			tb.Fatal(err)
		}
		total += int64(b.Len())
	}
	return total
}

type grepBenchCase struct {
	name       string
	pattern    string
	fixed      bool
	ignoreCase bool
	grepArgs   []string
}

var grepBenchCases = []grepBenchCase{
	{"literal", "frobnicate_widget", true, false, []string{"-F"}},
	{"ignore-case", "zephyr quokka", true, true, []string{"-F", "-i"}},
	{"regexp", `order_id=[0-9]{6}-[A-Z]{2}`, false, false, []string{"-E"}},
	{"regexp-no-literal", `(alpha|omega)[0-9]{5}`, false, false, []string{"-E"}},
}

func runGrep(dir string, c grepBenchCase, out io.Writer) error {
	args := append([]string{"-rn"}, c.grepArgs...)
	args = append(args, "-e", c.pattern, dir)
	cmd := exec.Command("grep", args...)
	cmd.Stdout = out
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok && ee.ExitCode() == 1 {
		return nil // no match
	}
	return err
}

func BenchmarkGrepVsGrepRN(b *testing.B) {
	if _, err := exec.LookPath("grep"); err != nil {
		b.Skip("grep not installed")
	}
	dir, err := filepath.EvalSymlinks(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	size := writeGrepTree(b, dir)
	b.Logf("tree: %d files, %.1f MB", grepBenchFiles, float64(size)/1e6)

	sb, err := policy.NewSandbox([]string{dir})
	if err != nil {
		b.Fatal(err)
	}
	defer sb.Close()
	ts, err := filesystem.New(sb, nil)
	if err != nil {
		b.Fatal(err)
	}
	tools, _ := ts.Tools(context.Background())
	var grep *gateway.Tool
	for _, t := range tools {
		if t.Name == "grep_files" {
			grep = t
		}
	}
	if grep == nil {
		b.Fatal("no grep_files tool")
	}
	h := grep.Handler()
	ctx := context.Background()

	for _, c := range grepBenchCases {
		args, _ := json.Marshal(map[string]any{"pattern": c.pattern, "fixed_string": c.fixed, "ignore_case": c.ignoreCase, "max_matches": 1000})
		call := func() *gateway.Result {
			res, err := h(ctx, &gateway.Call{Name: "grep_files", Arguments: args})
			if err != nil || res.IsError {
				b.Fatalf("grep_files %s: %v %+v", c.name, err, res)
			}
			return res
		}

		// Both must find the same lines, and fewer than max_matches.
		res := call()
		got := res.Extras["matches"].(int)
		if res.Extras["truncated"].(bool) || got == 0 {
			b.Fatalf("%s: %d matches, truncated %v: the pattern must match some lines, fewer than max_matches", c.name, got, res.Extras["truncated"])
		}
		var out bytes.Buffer
		if err := runGrep(dir, c, &out); err != nil {
			b.Fatalf("grep %s: %v", c.name, err)
		}
		want := 0
		for sc := bufio.NewScanner(&out); sc.Scan(); {
			want++
		}
		if got != want {
			b.Fatalf("%s: grep_files found %d lines, grep -rn %d", c.name, got, want)
		}

		var grepNs float64
		b.Run(c.name+"/grep-rn", func(b *testing.B) {
			b.SetBytes(size)
			for i := 0; i < b.N; i++ {
				if err := runGrep(dir, c, io.Discard); err != nil {
					b.Fatal(err)
				}
			}
			grepNs = float64(b.Elapsed().Nanoseconds()) / float64(b.N)
		})
		b.Run(c.name+"/grep_files", func(b *testing.B) {
			b.SetBytes(size)
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				call()
			}
			if grepNs > 0 {
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/grepNs, "x-grep")
			}
			b.ReportMetric(float64(got), "matches")
		})
	}
}
