package benchkit

import (
	"flag"
	"testing"
	"time"
)

func TestRatiosMedian(t *testing.T) {
	for _, tc := range []struct {
		r    Ratios
		want float64
		str  string
	}{
		{nil, 0, "n/a"},
		{Ratios{1.2}, 1.2, "1.20 [1.20–1.20]"},
		{Ratios{1.3, 1.1}, 1.2, "1.20 [1.10–1.30]"},
		{Ratios{1.19, 1.12, 1.16}, 1.16, "1.16 [1.12–1.19]"},
		{Ratios{0.9, 1.4, 1.0, 1.1}, 1.05, "1.05 [0.90–1.40]"},
	} {
		if got := tc.r.Median(); got < tc.want-1e-9 || got > tc.want+1e-9 {
			t.Errorf("%v.Median() = %v, want %v", tc.r, got, tc.want)
		}
		if got := tc.r.String(); got != tc.str {
			t.Errorf("%v.String() = %q, want %q", tc.r, got, tc.str)
		}
	}
}

func TestRoundRatios(t *testing.T) {
	ms := time.Millisecond
	a := []Round{NewRound(200, time.Second, 300*ms, []time.Duration{3, 1, 2}), NewRound(100, time.Second, 200*ms, nil), NewRound(50, time.Second, 100*ms, nil)}
	b := []Round{NewRound(100, time.Second, 100*ms, []time.Duration{2, 2, 2}), NewRound(0, time.Second, 0, nil)}
	if a[0].CPU != 1500 || a[0].P50 != 2 || a[0].P99 != 3 || a[0].Throughput() != 200 {
		t.Fatalf("round = %+v, throughput %v", a[0], a[0].Throughput())
	}
	// Rounds beyond the shorter list, and rounds where b answered nothing,
	// have no ratio.
	for _, tc := range []struct {
		q    func(Round) float64
		want float64
	}{{CPUOf, 1.5}, {Round.Throughput, 2}, {P99Of, 1.5}} {
		if got := RoundRatios(a, b, tc.q); len(got) != 1 || got[0] != tc.want {
			t.Errorf("RoundRatios = %v, want [%v]", got, tc.want)
		}
	}
}

func TestRatiosVerdict(t *testing.T) {
	r := Ratios{1.19, 1.12, 1.16, 1.17}
	for _, tc := range []struct{ got, want string }{
		{r.AtMost("cpu", 1.2, "1.18"), "MET     cpu 1.165 (median of 4 rounds, 1.12–1.19; whole run 1.18) (target <= 1.2)"},
		{r.AtMost("cpu", 1.15, "n/a"), "MISSED  cpu 1.165 (median of 4 rounds, 1.12–1.19; whole run n/a) (target <= 1.15): 1.3% over"},
		{r.AtLeast("throughput", 1.2, "1.18"), "MISSED  throughput 1.165 (median of 4 rounds, 1.12–1.19; whole run 1.18) (target >= 1.2): 2.9% short"},
		{r.AtLeast("throughput", 0.85, "1.18"), "MET     throughput 1.165 (median of 4 rounds, 1.12–1.19; whole run 1.18) (target >= 0.85)"},
		{Ratios(nil).AtMost("p50", 1.2, "n/a"), "n/a     p50: no round gave a ratio"},
	} {
		if tc.got != tc.want {
			t.Errorf("got  %q\nwant %q", tc.got, tc.want)
		}
	}
}

func TestSchedule(t *testing.T) {
	s := time.Second
	for _, tc := range []struct {
		sched     Schedule
		ok        bool
		one, many int
	}{
		{Schedule{Duration: 8 * s, Slice: s}, true, 8, 8},
		{Schedule{Duration: 8 * s, OneClient: 16 * s, Slice: s}, true, 16, 8},
		{Schedule{Duration: 10 * s, OneClient: 5 * s, Slice: 2 * s}, true, 5, 5}, // shorter: -duration's
		{Schedule{Duration: 10 * s, OneClient: 21 * s, Slice: 2 * s}, true, 10, 5},
		{Schedule{Duration: s, Slice: 2 * s}, false, 0, 0},
		{Schedule{Duration: 8 * s, Slice: 0}, false, 0, 0},
	} {
		err := tc.sched.Check()
		if (err == nil) != tc.ok {
			t.Errorf("%+v.Check() = %v, want ok %v", tc.sched, err, tc.ok)
			continue
		}
		if !tc.ok {
			continue
		}
		if got := tc.sched.Rounds(1); got != tc.one {
			t.Errorf("%+v.Rounds(1) = %d, want %d", tc.sched, got, tc.one)
		}
		if got := tc.sched.Rounds(16); got != tc.many {
			t.Errorf("%+v.Rounds(16) = %d, want %d", tc.sched, got, tc.many)
		}
	}
}

// The schedule's flags set what Check and Rounds read, with their
// defaults where not given.
func TestScheduleFlags(t *testing.T) {
	var s Schedule
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	s.Flags(fs, "server and client count", "servers", 10*time.Second, 2*time.Second)
	if err := fs.Parse([]string{"-one-client-duration", "20s"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Check(); err != nil || s.Rounds(1) != 10 || s.Rounds(16) != 5 {
		t.Errorf("%+v: check %v, rounds %d with one client and %d with 16; want 10 and 5", s, err, s.Rounds(1), s.Rounds(16))
	}
}
