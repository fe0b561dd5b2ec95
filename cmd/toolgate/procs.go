package main

import (
	"context"
	"log/slog"
	"os"
	"runtime"
	"runtime/metrics"
	"time"
)

// The processors toolgate serve lets the Go runtime use: one while calls
// come one at a time and one processor keeps up with them, all of them
// (Go's default, GOMAXPROCS) as soon as it does not.
//
// Why: a gateway serving one client (an agent's calls come in turn)
// hands each call from goroutine to goroutine several times (the
// connection's, net/http's background read, an upstream's reader). With
// a second processor idle, every hand-off wakes a thread for it, which
// spins looking for work and sleeps again; on two cores that is a
// quarter to a third of the CPU of a call, and the hand-offs' latency
// (docs/benchmarks-journal.md, "One processor while calls come in turn"). With
// one processor the hand-offs stay on it.
//
// The signals, read every tick:
//   - calls overlap: a call started while another ran (the pipeline's
//     [gateway.Pipeline.Overlaps]); this one is acted on at once;
//   - goroutines queue: of the goroutines made runnable in the tick, a
//     share waited long to run (the runtime's /sched/latencies), as when
//     calls that never block share one processor; two ticks in a row, as
//     one can be a collection's;
//   - the process is busy: its CPU time in the tick, as a fraction of
//     one processor.
//
// Any of them gives all processors back. One is taken again only after a
// second of ticks with calls coming (the process not idle), none of the
// signals, and the process under 80% of one processor: an idle gateway
// keeps what it has. The debug log says each change and why, and at most
// once a second what keeps all processors while calls come: on cores
// other processes keep busy, goroutines wait to run whatever toolgate
// does, and the control leaves Go its default.
//
// GOMAXPROCS in the environment turns this off (whoever sets it has
// chosen), as does a machine or container with one processor, or a
// platform where the process's CPU time cannot be read.
const (
	procTick    = 100 * time.Millisecond
	procQuiet   = 10   // ticks in a row (a second) before one processor
	procIdle    = 0.02 // the process under this (of one processor) is idle
	procLowest  = 0.8  // all are kept while the process uses more than this
	procRaise   = 0.95 // one processor this busy gets all back
	procQueued  = 0.05 // this share of goroutines waiting long, two ticks in a row, gets all back
	procLongRun = 200 * time.Microsecond
)

// procTickSignals is what one tick saw.
type procTickSignals struct {
	overlapped bool    // calls overlapped
	busy       float64 // the process's CPU time, as a fraction of one processor
	queued     float64 // the share of goroutines that waited procLongRun or more to run
}

// procControl decides, tick by tick, whether the runtime gets one
// processor or all of them. It holds no lock: only its loop uses it.
type procControl struct {
	low       bool // one processor now
	quiet     int  // ticks in a row with calls in turn and nothing else
	wasQueued bool // goroutines queued in the tick before
	// kept is why a tick with calls coming last kept all processors,
	// until the loop says so in the debug log (at most once a second,
	// [procKeptEvery]) or one processor is taken.
	kept string
}

// raise gives all processors back (the caller sets them).
func (c *procControl) raise() { c.low, c.quiet, c.wasQueued = false, 0, false }

// step is the decision of one tick. It reports whether the processors
// change.
func (c *procControl) step(s procTickSignals) (changed bool) {
	queued := s.queued >= procQueued
	queuedTwice := queued && c.wasQueued
	c.wasQueued = queued
	if c.low {
		if s.overlapped || queuedTwice || s.busy >= procRaise {
			c.raise()
			return true
		}
		return false
	}
	switch {
	case s.overlapped:
		c.kept = whyOverlap
	case queued:
		c.kept = whyQueued
	case s.busy > procLowest:
		c.kept = whyAbove
	case s.busy < procIdle: // idle: nothing to say
	default:
		c.quiet++
		if c.quiet < procQuiet {
			return false
		}
		c.low, c.quiet, c.kept = true, 0, ""
		return true
	}
	c.quiet = 0
	return false
}

// The reasons the debug log gives for all processors.
const (
	whyOverlap = "calls overlap"
	whyQueued  = "goroutines wait to run"
	whyBusy    = "one processor busy"                    // all back: at procRaise
	whyAbove   = "the process over 80% of one processor" // all kept: above procLowest
)

// procKeptEvery is how often at most the debug log says why all
// processors are kept, so that whoever wonders why a gateway with one
// client does not take one (machine noise makes goroutines wait, say)
// can read it.
const procKeptEvery = time.Second

// procSample is what the loop reads of the process at a tick: counters
// since it started.
type procSample struct {
	cpu         time.Duration // CPU time, user and system, all threads
	runs, waits uint64        // goroutines made to run, and of them those that waited procLongRun or more
}

// procRuntime is what the loop acts on: the runtime's processors and the
// process's counters. Tests give their own.
type procRuntime struct {
	sample func() procSample
	setLow func(low bool) // one processor, or Go's default
}

var realProcs = procRuntime{
	sample: readProcSample,
	setLow: func(low bool) {
		if low {
			runtime.GOMAXPROCS(1)
		} else {
			runtime.SetDefaultGOMAXPROCS()
		}
	},
}

func readProcSample() procSample {
	s := procSample{cpu: processCPUTime()}
	m := [1]metrics.Sample{{Name: "/sched/latencies:seconds"}}
	metrics.Read(m[:])
	if m[0].Value.Kind() != metrics.KindFloat64Histogram {
		return s
	}
	h := m[0].Value.Float64Histogram()
	for i, n := range h.Counts {
		s.runs += n
		if h.Buckets[i] >= procLongRun.Seconds() { // the bucket's lower bound
			s.waits += n
		}
	}
	return s
}

// controlProcs starts the control; stop ends it, giving the runtime its
// default back before it returns. overlaps is the pipeline's
// [gateway.Pipeline.Overlaps]. Where the control is off (above, and
// [procsLeftToGo]) it says why in the debug log and stop does nothing.
func controlProcs(ctx context.Context, overlaps <-chan struct{}, log *slog.Logger) (stop func()) {
	if why := procsLeftToGo(); why != "" {
		log.Debug("processors for Go code: left to Go", "why", why)
		return func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(procTick)
		defer t.Stop()
		runProcControl(ctx, overlaps, t.C, realProcs, log)
	}()
	return func() { cancel(); <-done }
}

// procsLeftToGo says why the control is off, or "" when it is on.
func procsLeftToGo() (why string) {
	switch {
	case os.Getenv("GOMAXPROCS") != "":
		return "GOMAXPROCS is set"
	case runtime.GOMAXPROCS(0) < 2:
		return "one processor"
	case processCPUTime() < 0:
		return "the process's CPU time cannot be read"
	}
	return ""
}

// runProcControl is controlProcs' loop: each tick decides with
// [procControl.step], taking the overlap signal if one waits; with one
// processor the loop also waits on the signal, to give all back at once.
func runProcControl(ctx context.Context, overlaps <-chan struct{}, tick <-chan time.Time, rt procRuntime, log *slog.Logger) {
	var c procControl
	set := func(why string) {
		rt.setLow(c.low)
		log.Debug("processors for Go code", "one", c.low, "why", why)
	}
	lastTime, last := time.Now(), rt.sample()
	var keptSaid time.Time
	for {
		var whenLow <-chan struct{}
		if c.low {
			whenLow = overlaps
		}
		select {
		case <-ctx.Done():
			if c.low {
				c.raise()
				set("stopping")
			}
			return
		case <-whenLow:
			c.raise()
			set(whyOverlap)
		case now := <-tick:
			cur := rt.sample()
			var s procTickSignals
			select {
			case <-overlaps:
				s.overlapped = true
			default:
			}
			if d := now.Sub(lastTime); d > 0 {
				s.busy = float64(cur.cpu-last.cpu) / float64(d)
			}
			if runs := cur.runs - last.runs; runs > 0 {
				s.queued = float64(cur.waits-last.waits) / float64(runs)
			}
			lastTime, last = now, cur
			if c.step(s) {
				switch {
				case c.low:
					set("calls in turn")
				case s.queued >= procQueued:
					set(whyQueued)
				default:
					set(whyBusy)
				}
			}
			if c.kept != "" && now.Sub(keptSaid) >= procKeptEvery {
				log.Debug("processors for Go code: all kept", "why", c.kept)
				c.kept, keptSaid = "", now
			}
		}
	}
}
