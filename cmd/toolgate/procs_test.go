package main

import (
	"context"
	"log/slog"
	"regexp"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

func TestProcControlStep(t *testing.T) {
	type sig = procTickSignals
	quiet := sig{busy: 0.5}
	inTurn := func(n int) []sig { return slices.Repeat([]sig{quiet}, n) }
	lowAfter := func(n int) []bool { return append(make([]bool, n-1), true) }
	for _, c := range []struct {
		name  string
		low   bool
		ticks []sig
		want  []bool // low after each tick
	}{
		{"a second of calls in turn: one processor", false, inTurn(procQuiet), lowAfter(procQuiet)},
		{"an overlap starts the second again", false,
			slices.Concat(inTurn(procQuiet-1), []sig{{overlapped: true, busy: 0.5}}, inTurn(procQuiet)),
			lowAfter(2 * procQuiet)},
		{"goroutines queueing start it again", false,
			slices.Concat(inTurn(procQuiet-1), []sig{{queued: 0.05, busy: 0.5}}, inTurn(procQuiet)),
			lowAfter(2 * procQuiet)},
		{"a busy process starts it again", false,
			slices.Concat(inTurn(procQuiet-1), []sig{{busy: 0.81}}, inTurn(procQuiet)),
			lowAfter(2 * procQuiet)},
		{"an idle one too: it keeps what it has", false,
			slices.Concat(inTurn(procQuiet-1), []sig{{busy: 0.01}}, inTurn(procQuiet)),
			lowAfter(2 * procQuiet)},
		{"at the lines: in turn", false,
			slices.Concat(slices.Repeat([]sig{{busy: 0.8, queued: 0.049}}, procQuiet-1), []sig{{busy: 0.02}}),
			lowAfter(procQuiet)},
		{"an overlap gives all back", true, []sig{quiet, {overlapped: true}}, []bool{true, false}},
		{"goroutines queueing two ticks in a row give all back", true,
			[]sig{{queued: 0.04}, {queued: 0.05}, {queued: 0.05}}, []bool{true, true, false}},
		{"one tick of it does not", true,
			[]sig{{queued: 0.05}, {}, {queued: 0.05}, {}}, []bool{true, true, true, true}},
		{"one processor busy gives all back", true,
			[]sig{{busy: 0.9}, {busy: 0.94}, {busy: 0.95}}, []bool{true, true, false}},
		{"idle, one processor stays", true, []sig{{}, {}, {}}, []bool{true, true, true}},
		{"and a second in turn takes one again", true,
			slices.Concat([]sig{{busy: 1.2}}, inTurn(procQuiet)), append([]bool{false}, lowAfter(procQuiet)...)},
	} {
		t.Run(c.name, func(t *testing.T) {
			pc := procControl{low: c.low}
			var got []bool
			for i, tk := range c.ticks {
				was := pc.low
				changed := pc.step(tk)
				if changed != (pc.low != was) {
					t.Fatalf("tick %d: changed %v, but low went %v -> %v", i, changed, was, pc.low)
				}
				got = append(got, pc.low)
			}
			if !slices.Equal(got, c.want) {
				t.Errorf("low after each tick %v, want %v", got, c.want)
			}
		})
	}
}

// What the debug log gives as the reason all processors are kept, after
// one tick from all of them (or from one).
func TestProcControlKept(t *testing.T) {
	type sig = procTickSignals
	for _, c := range []struct {
		name string
		low  bool
		tick sig
		want string
	}{
		{"calls overlap", false, sig{overlapped: true, busy: 0.5}, whyOverlap},
		{"goroutines queue", false, sig{queued: 0.05, busy: 0.5}, whyQueued},
		{"the process busy", false, sig{busy: 0.81}, whyAbove},
		{"idle: nothing to say", false, sig{busy: 0.01}, ""},
		{"calls in turn: nothing to say", false, sig{busy: 0.5}, ""},
		{"from one processor: it changes, nothing kept", true, sig{overlapped: true}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			pc := procControl{low: c.low}
			pc.step(c.tick)
			if pc.kept != c.want {
				t.Errorf("kept %q, want %q", pc.kept, c.want)
			}
		})
	}
}

// fakeProcs is a procRuntime whose counters the test advances and whose
// settings it records.
type fakeProcs struct {
	cpu, runs, waits atomic.Int64
	mu               sync.Mutex
	sets             []bool
}

func (f *fakeProcs) runtime() procRuntime {
	return procRuntime{
		sample: func() procSample {
			return procSample{cpu: time.Duration(f.cpu.Load()), runs: uint64(f.runs.Load()), waits: uint64(f.waits.Load())}
		},
		setLow: func(low bool) {
			f.mu.Lock()
			f.sets = append(f.sets, low)
			f.mu.Unlock()
		},
	}
}

func (f *fakeProcs) settings() []bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.sets)
}

// The loop on the clock: one processor after a second of calls in turn,
// all back at the moment calls overlap (not at the next tick), when
// goroutines queue and when one processor is busy through a tick; an
// idle process keeps one; Go's default is restored when the loop stops.
func TestRunProcControl(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeProcs{}
		ctx, cancel := context.WithCancel(context.Background())
		overlaps := make(chan struct{}, 1)
		tk := time.NewTicker(procTick)
		defer tk.Stop()
		done := make(chan struct{})
		var logged lockedBuffer
		go func() {
			log := slog.New(slog.NewTextHandler(&logged, &slog.HandlerOptions{Level: slog.LevelDebug}))
			runProcControl(ctx, overlaps, tk.C, f.runtime(), log)
			close(done)
		}()
		var want []bool
		expect := func(when string, change ...bool) {
			t.Helper()
			want = append(want, change...)
			synctest.Wait()
			if got := f.settings(); !slices.Equal(got, want) {
				t.Fatalf("%s: settings %v, want %v", when, got, want)
			}
		}
		// Everything below happens half-way between ticks. calls runs
		// the process at half a processor, calls in turn, for n ticks.
		calls := func(n int) {
			for range n {
				f.cpu.Add(int64(procTick / 2))
				f.runs.Add(100)
				time.Sleep(procTick)
			}
		}

		time.Sleep(3*time.Second + procTick/2)
		expect("idle: Go's default stays")
		calls(procQuiet - 1)
		expect("calls in turn for less than a second")
		calls(1)
		expect("a second of calls in turn", true)
		time.Sleep(3 * time.Second)
		expect("idle: one processor stays")

		overlaps <- struct{}{}
		expect("calls overlap, between ticks", false)
		time.Sleep(procTick) // the overlap's tick

		calls(procQuiet)
		expect("a second in turn again", true)

		f.runs.Add(100)
		f.waits.Add(5)
		time.Sleep(procTick)
		expect("goroutines wait to run, one tick")
		f.runs.Add(100)
		f.waits.Add(5)
		time.Sleep(procTick)
		expect("goroutines wait to run, two ticks", false)

		calls(procQuiet)
		expect("and in turn", true)

		f.cpu.Add(int64(procTick) * 96 / 100)
		time.Sleep(procTick)
		expect("one processor busy", false)

		for range procQuiet { // calls that overlap keep all processors
			overlaps <- struct{}{}
			calls(1)
		}
		expect("a second of overlapping calls")

		calls(procQuiet)
		expect("and in turn", true)
		// The only ticks that kept all processors with calls coming were
		// that second's: said at its first tick, and once more a second
		// later (the tick after it, the reason held until then).
		kept := regexp.MustCompile(`msg="processors for Go code: all kept" why="([^"]*)"`).FindAllStringSubmatch(logged.String(), -1)
		if len(kept) != 2 || kept[0][1] != whyOverlap || kept[1][1] != whyOverlap {
			t.Errorf("the log says all processors are kept %q, want twice because calls overlap", kept)
		}
		cancel()
		<-done
		expect("stopped", false)
	})
}

// With GOMAXPROCS in the environment toolgate leaves the runtime's
// processors alone.
func TestControlProcsOff(t *testing.T) {
	t.Setenv("GOMAXPROCS", "2")
	if why := procsLeftToGo(); why != "GOMAXPROCS is set" {
		t.Fatalf("with GOMAXPROCS set the control is off because %q, want because it is set", why)
	}
	before := runtime.GOMAXPROCS(0)
	controlProcs(context.Background(), make(chan struct{}), slog.New(slog.DiscardHandler))()
	if got := runtime.GOMAXPROCS(0); got != before {
		t.Errorf("GOMAXPROCS %d, was %d", got, before)
	}
}
