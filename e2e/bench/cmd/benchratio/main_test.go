package main

import (
	"strings"
	"testing"
)

// input is two interleaved runs each of a benchmark and its baseline, as
// make bench feeds the published comparison.
const input = `BenchmarkMCPCall/toolgate-2    100   18000 ns/op   3696 B/op   48 allocs/op
BenchmarkMCPCall/published-mcp-go-2   100   10000 ns/op   3593 B/op   76 allocs/op
BenchmarkMCPCall/toolgate-2    100   20000 ns/op   3696 B/op   48 allocs/op
BenchmarkMCPCall/published-mcp-go-2   100   16000 ns/op   3593 B/op   76 allocs/op
BenchmarkMCPCall/toolgate-2    100   19000 ns/op   3696 B/op   48 allocs/op
BenchmarkMCPCall/published-mcp-go-2   100   12000 ns/op   3593 B/op   76 allocs/op
`

func TestCheck(t *testing.T) {
	byName, _ := read(strings.NewReader(input), nil)
	base := []string{"published-mcp-go"}
	for _, tc := range []struct{ spec, want string }{
		// Run by run: 1.8, 1.25, 1.583; the ratio of the medians is 1.58.
		{"MCPCall/toolgate ratio<=1.5", "MISSED  in process: MCPCall/toolgate ns/op against published-mcp-go 1.583 (median of 3 rounds, 1.25–1.80; whole run 1.58) (target <= 1.5): 5.6% over"},
		{"MCPCall/toolgate ratio<=1.6", "MET     in process: MCPCall/toolgate ns/op against published-mcp-go 1.583 (median of 3 rounds, 1.25–1.80; whole run 1.58) (target <= 1.6)"},
		{"MCPCall/toolgate us<=8", "MISSED  in process: MCPCall/toolgate µs per op 19.000 (median of 3 rounds, 18.00–20.00; whole run n/a) (target <= 8): 137.5% over"},
		{"MCPCall/toolgate allocs<=30", "MISSED  in process: MCPCall/toolgate allocations per op 48.000 (median of 3 rounds, 48.00–48.00; whole run n/a) (target <= 30): 60.0% over"},
		{"MCPCall/published-mcp-go allocs>=50", "MET     in process: MCPCall/published-mcp-go allocations per op 76.000 (median of 3 rounds, 76.00–76.00; whole run n/a) (target >= 50)"},
	} {
		got, err := check(tc.spec, byName, base)
		if err != nil || got != tc.want {
			t.Errorf("check(%q)\ngot  %q (%v)\nwant %q", tc.spec, got, err, tc.want)
		}
	}
	for _, spec := range []string{
		"MCPCall/toolgate",                  // no target
		"MCPCall/toolgate p99<=1",           // no such quantity
		"Nope/x us<=1",                      // not in the input
		"MCPCall/published-mcp-go ratio<=1", // a baseline has no ratio
	} {
		if _, err := check(spec, byName, base); err == nil {
			t.Errorf("check(%q): no error", spec)
		}
	}
}
