// Command benchratio reads `go test -bench` output on stdin and prints, for
// each benchmark, the median ns/op over its runs (-count), B/op and
// allocs/op, and its ratio to the baseline of its group: the sibling
// sub-benchmark whose last name element is one of -baselines
// (bare-handler, bare-mcp-go, grep-rn by default).
//
//	go test -run='^$' -bench=. -benchmem -count=5 ./gateway | benchratio
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
)

type bench struct {
	name   string
	ns     []float64
	bytes  float64
	allocs float64
}

var procSuffix = regexp.MustCompile(`-\d+$`)

func main() {
	baselines := flag.String("baselines", "bare-handler,bare-mcp-go,grep-rn", "comma-separated last name elements of baseline sub-benchmarks")
	echo := flag.Bool("echo", false, "copy the input to stderr as it is read")
	flag.Parse()
	base := strings.Split(*baselines, ",")

	var order []string
	byName := map[string]*bench{}
	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if *echo {
			fmt.Fprintln(os.Stderr, line)
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
				b.allocs = v
			}
		}
	}
	print(os.Stdout, order, byName, base)
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func parent(name string) string {
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		return name[:i]
	}
	return ""
}

func last(name string) string { return name[strings.LastIndexByte(name, '/')+1:] }

func print(w io.Writer, order []string, byName map[string]*bench, base []string) {
	baseOf := map[string]*bench{} // parent -> baseline
	for _, n := range order {
		if slices.Contains(base, last(n)) {
			baseOf[parent(n)] = byName[n]
		}
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "benchmark\truns\tns/op (median)\tB/op\tallocs/op\tvs baseline\t+ns/op\t")
	for _, n := range order {
		b := byName[n]
		ns := median(b.ns)
		ratio, delta := "", ""
		if bl := baseOf[parent(n)]; bl != nil && bl != b {
			if bns := median(bl.ns); bns > 0 {
				ratio = fmt.Sprintf("%.2fx", ns/bns)
				delta = fmt.Sprintf("%+.0f", ns-bns)
			}
		} else if bl == b {
			ratio = "baseline"
		}
		fmt.Fprintf(tw, "%s\t%d\t%.0f\t%.0f\t%.0f\t%s\t%s\t\n", n, len(b.ns), ns, b.bytes, b.allocs, ratio, delta)
	}
	tw.Flush()
}
