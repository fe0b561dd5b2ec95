package benchkit

import (
	"flag"
	"fmt"
	"slices"
	"time"
)

// Round is what one target measured in one round of a run. The programs
// cut a run into rounds, and each round gives every target one time slice
// in turn, so the targets of a round ran in the same conditions and their
// ratio is one measurement: a run of N rounds has N ratios of each kind,
// whose median is the run's verdict ("ratios in one run, medians of ≥ 3").
type Round struct {
	Calls   int64         `json:"calls"`
	Elapsed time.Duration `json:"elapsed_ns"`
	// CPU is the CPU time per call, in µs, of the process the ratio is
	// about (the server, or the proxy; 0 for a target with none).
	CPU float64       `json:"cpu_us_per_call"`
	P50 time.Duration `json:"p50_ns"`
	P99 time.Duration `json:"p99_ns"`
}

// NewRound is the round of a slice: calls answered in elapsed, with the
// process's CPU time over the slice, and the latencies of the slice
// (sorted here).
func NewRound(calls int64, elapsed, cpu time.Duration, lat []time.Duration) Round {
	r := Round{Calls: calls, Elapsed: elapsed}
	r.CPU = PerCall(cpu, calls)
	slices.Sort(lat)
	r.P50, r.P99 = Percentile(lat, 0.50), Percentile(lat, 0.99)
	return r
}

// PerCall is cpu per call, in µs; 0 without calls.
func PerCall(cpu time.Duration, calls int64) float64 {
	if calls <= 0 {
		return 0
	}
	return float64(cpu) / 1e3 / float64(calls)
}

// Throughput is the round's calls per second.
func (r Round) Throughput() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Calls) / r.Elapsed.Seconds()
}

// Ratios are one ratio per round of a run.
type Ratios []float64

// CPUOf, P50Of and P99Of are the quantities of a round, besides its
// Throughput, that RoundRatios takes ratios of.
func CPUOf(r Round) float64 { return r.CPU }
func P50Of(r Round) float64 { return float64(r.P50) }
func P99Of(r Round) float64 { return float64(r.P99) }

// RoundRatios is q(a[i]) / q(b[i]) for every round both targets measured
// where q(b[i]) is positive: the per-round ratios of two targets in the
// quantity q (Round.Throughput, CPUOf, P99Of; for runs given as plain
// numbers, the number itself).
func RoundRatios[R any](a, b []R, q func(R) float64) Ratios {
	var out Ratios
	for i := range min(len(a), len(b)) {
		if qb := q(b[i]); qb > 0 {
			out = append(out, q(a[i])/qb)
		}
	}
	return out
}

// Median of the ratios (the mean of the middle two for an even count); 0
// when there are none.
func (r Ratios) Median() float64 {
	if len(r) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(r))
	m := len(s) / 2
	if len(s)%2 == 1 {
		return s[m]
	}
	return (s[m-1] + s[m]) / 2
}

// String is the median with the range of the rounds, "1.16 [1.12–1.19]",
// or "n/a" when there are no ratios.
func (r Ratios) String() string {
	if len(r) == 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.2f [%.2f–%.2f]", r.Median(), slices.Min(r), slices.Max(r))
}

// note says what a verdict's ratio is, the median: "median of 4 rounds,
// 1.12–1.19" (the lowest and highest round).
func (r Ratios) note() string {
	if len(r) == 0 {
		return "no rounds"
	}
	return fmt.Sprintf("median of %d rounds, %.2f–%.2f", len(r), slices.Min(r), slices.Max(r))
}

// AtMost is the verdict that the median of r is at most goal; AtLeast,
// at least goal. what names the ratio, whole is the whole run's as the
// report prints it ("n/a" where it has none). The median is given to
// three places, so that 1.1504 reads as missed, not as 1.15; without
// rounds the verdict is n/a.
func (r Ratios) AtMost(what string, goal float64, whole string) string {
	return r.verdict(what, goal, whole, true)
}

// AtLeast: see AtMost.
func (r Ratios) AtLeast(what string, goal float64, whole string) string {
	return r.verdict(what, goal, whole, false)
}

func (r Ratios) verdict(what string, goal float64, whole string, atMost bool) string {
	if len(r) == 0 {
		return "n/a     " + what + ": no round gave a ratio"
	}
	m := r.Median()
	if atMost {
		return Verdict(fmt.Sprintf("%s %.3f (%s; whole run %s) (target <= %g)", what, m, r.note(), whole, goal),
			m <= goal, fmt.Sprintf("%.1f%% over", (m-goal)/goal*100))
	}
	return Verdict(fmt.Sprintf("%s %.3f (%s; whole run %s) (target >= %g)", what, m, r.note(), whole, goal),
		m >= goal, fmt.Sprintf("%.1f%% short", (goal-m)/goal*100))
}

// Schedule is how a run is cut into rounds: each client count is measured
// for Duration in rounds of Slice, and one client for OneClient instead
// when that is longer. One client in a closed loop spreads wider from
// round to round than many do (each call waits on the wake-ups of the
// last, and a neighbour's burst falls on fewer calls), wider than the
// targets' margins, so a run can give its median more rounds there.
type Schedule struct {
	Duration, OneClient, Slice time.Duration
}

// Flags registers the schedule's flags on fs, -duration, -one-client-duration
// and -slice, with their defaults; each names what one measured time is of
// ("server and client count"), between what the slices rotate ("servers").
func (s *Schedule) Flags(fs *flag.FlagSet, each, between string, duration, slice time.Duration) {
	fs.DurationVar(&s.Duration, "duration", duration, "measured time per "+each)
	fs.DurationVar(&s.OneClient, "one-client-duration", 0, "measured time with one client, when longer than -duration: one client spreads wider from round to round, and more rounds steady its median")
	fs.DurationVar(&s.Slice, "slice", slice, "measured time is cut into slices of this length, rotating between the "+between)
}

// Check says what is wrong with the schedule's lengths (in the words of
// its flags), or nil.
func (s Schedule) Check() error {
	if s.Slice <= 0 || s.Duration < s.Slice {
		return fmt.Errorf("-duration must be at least -slice")
	}
	return nil
}

// Rounds is how many rounds the client count n is measured in.
func (s Schedule) Rounds(n int) int {
	d := s.Duration
	if n == 1 {
		d = max(d, s.OneClient)
	}
	return int(d / s.Slice)
}
