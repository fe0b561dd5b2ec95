// Command benchratio reads `go test -bench` output on stdin and prints, for
// each benchmark, the median ns/op over its runs (-count), B/op and
// allocs/op, and its ratio to the baseline of its group: the sibling
// sub-benchmark whose last name element is one of -baselines
// (bare-handler, bare-mcp-go, grep-rn by default).
//
//	go test -run='^$' -bench=. -benchmem -count=5 ./gateway | benchratio
//
// Each -check adds a verdict line (MET or MISSED, as the end-to-end
// programs print them) for one benchmark against a target:
//
//	-check 'Pipeline/full us<=8'            median µs per op
//	-check 'Pipeline/full allocs<=30'       allocations per op
//	-check 'MCPCall/toolgate ratio<=1.5'    ns/op against its group's baseline
//
// A ratio is taken run by run: the i-th run of the benchmark against the
// i-th run of its baseline, and the verdict is the median of those ratios.
// Runs of the two interleaved in the input (each -count=1, one after the
// other) are therefore measured in the same conditions, as the rounds of
// the end-to-end programs are.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/toolgate/toolgate/e2e/bench/internal/benchkit"
)

type bench struct {
	name   string
	ns     []float64
	bytes  float64
	allocs []float64
}

// checks are the -check flags.
type checks []string

func (c *checks) String() string     { return strings.Join(*c, ", ") }
func (c *checks) Set(v string) error { *c = append(*c, v); return nil }

var procSuffix = regexp.MustCompile(`-\d+$`)

func main() {
	baselines := flag.String("baselines", "bare-handler,bare-mcp-go,grep-rn", "comma-separated last name elements of baseline sub-benchmarks")
	echo := flag.Bool("echo", false, "copy the input to stderr as it is read")
	var targets checks
	flag.Var(&targets, "check", "a target: 'NAME us<=N', 'NAME allocs<=N' or 'NAME ratio<=N' (>= too; NAME without the Benchmark prefix); repeatable")
	flag.Parse()
	base := strings.Split(*baselines, ",")

	var copyTo io.Writer
	if *echo {
		copyTo = os.Stderr
	}
	byName, order := read(os.Stdin, copyTo)
	print(os.Stdout, order, byName, base)
	if len(targets) > 0 {
		fmt.Println()
	}
	failed := false
	for _, c := range targets {
		line, err := check(c, byName, base)
		if err != nil {
			fmt.Fprintln(os.Stderr, "benchratio:", err)
			failed = true
			continue
		}
		fmt.Println(line)
	}
	if failed {
		os.Exit(2)
	}
}

var checkSyntax = regexp.MustCompile(`^(\S+)\s+(us|allocs|ratio)\s*(<=|>=)\s*([0-9.]+)$`)

// check is the verdict line of one -check: the benchmark's median over its
// runs (µs or allocations per op), or the median of its run-by-run ratios
// to its group's baseline.
func check(spec string, byName map[string]*bench, base []string) (string, error) {
	m := checkSyntax.FindStringSubmatch(strings.TrimSpace(spec))
	if m == nil {
		return "", fmt.Errorf("check %q: want 'NAME us|allocs|ratio <=|>= NUMBER'", spec)
	}
	name, quantity, op := "Benchmark"+m[1], m[2], m[3]
	goal, err := strconv.ParseFloat(m[4], 64)
	if err != nil {
		return "", fmt.Errorf("check %q: %w", spec, err)
	}
	b := byName[name]
	if b == nil || len(b.ns) == 0 {
		return "", fmt.Errorf("check %q: no runs of %s in the input", spec, name)
	}
	var r benchkit.Ratios
	label, whole := "", "n/a" // whole: the ratio of the medians, as the table gives it
	switch quantity {
	case "us":
		for _, ns := range b.ns {
			r = append(r, ns/1e3)
		}
		label = "µs per op"
	case "allocs":
		r = append(r, b.allocs...)
		label = "allocations per op"
	case "ratio":
		bl := baselineOf(name, byName, base)
		if bl == nil {
			return "", fmt.Errorf("check %q: %s has no baseline among %v", spec, name, base)
		}
		r = benchkit.RoundRatios(b.ns, bl.ns, func(ns float64) float64 { return ns })
		label = "ns/op against " + last(bl.name)
		whole = fmt.Sprintf("%.2f", median(b.ns)/median(bl.ns))
	}
	what := "in process: " + strings.TrimPrefix(name, "Benchmark") + " " + label
	if op == "<=" {
		return r.AtMost(what, goal, whole), nil
	}
	return r.AtLeast(what, goal, whole), nil
}

// baselineOf is the baseline of name's group: its sibling whose last name
// element is one of base; nil if there is none, or name is it.
func baselineOf(name string, byName map[string]*bench, base []string) *bench {
	for _, l := range base {
		if bl := byName[parent(name)+"/"+l]; bl != nil && bl.name != name {
			return bl
		}
	}
	return nil
}

// read reads `go test -bench` output: every benchmark by name (without
// its -GOMAXPROCS suffix), and the names in the order first seen. Each
// line is copied to echo, if not nil, as it is read.
func read(in io.Reader, echo io.Writer) (map[string]*bench, []string) {
	var order []string
	byName := map[string]*bench{}
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if echo != nil {
			fmt.Fprintln(echo, line)
		}
		f := strings.Fields(line)
		if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") {
			continue
		}
		name := procSuffix.ReplaceAllString(f[0], "")
		b := byName[name]
		if b == nil {
			b = &bench{name: name}
			byName[name] = b
			order = append(order, name)
		}
		for i := 2; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				continue
			}
			switch f[i+1] {
			case "ns/op":
				b.ns = append(b.ns, v)
			case "B/op":
				b.bytes = v
			case "allocs/op":
				b.allocs = append(b.allocs, v)
			}
		}
	}
	return byName, order
}

// median is the median of v (0 when empty), as the end-to-end programs
// take it of their rounds.
func median(v []float64) float64 { return benchkit.Ratios(v).Median() }

func parent(name string) string {
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		return name[:i]
	}
	return ""
}

func last(name string) string { return name[strings.LastIndexByte(name, '/')+1:] }

func print(w io.Writer, order []string, byName map[string]*bench, base []string) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "benchmark\truns\tns/op (median)\tB/op\tallocs/op\tvs baseline\t+ns/op\t")
	for _, n := range order {
		b := byName[n]
		ns := median(b.ns)
		ratio, delta := "", ""
		if bl := baselineOf(n, byName, base); bl != nil {
			if bns := median(bl.ns); bns > 0 {
				ratio = fmt.Sprintf("%.2fx", ns/bns)
				delta = fmt.Sprintf("%+.0f", ns-bns)
			}
		} else if slices.Contains(base, last(n)) {
			ratio = "baseline"
		}
		fmt.Fprintf(tw, "%s\t%d\t%.0f\t%.0f\t%.0f\t%s\t%s\t\n", n, len(b.ns), ns, b.bytes, median(b.allocs), ratio, delta)
	}
	tw.Flush()
}
