package main

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

// serveHeapFloor is the heap goal toolgate serve keeps at the least: see
// keepHeapFloor.
const serveHeapFloor = 16 << 20

// keepHeapFloor keeps the garbage collector's heap goal at floor bytes or
// more, and returns a function that stops doing so (restoring Go's
// default, the percentage it had: it acts only without GOGC set).
//
// Go's default (GOGC=100) sets the goal at twice the live heap, and at
// least 4 MiB. A gateway's live heap is a few MiB, so under load it
// collects every 2 or 3 MiB allocated: 30 cycles a second at 13,000
// calls a second, each marking the whole live heap again, about a quarter
// of its CPU (docs/benchmarks-journal.md). After each collection (a finalizer
// runs once per cycle) the percentage is set so that the goal is the
// larger of twice the live heap and floor: the heap may grow to floor
// (16 MiB for serve) before it is collected, and a live heap over half of
// it is collected as Go does by default. The cost is memory: up to floor
// of heap, where the default would keep about 4 MiB.
//
// With GOGC or GOMEMLIMIT in the environment the collector is left as
// they set it: who sets them has chosen.
func keepHeapFloor(floor uint64) (stop func()) {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		return func() {}
	}
	f := &heapFloor{floor: floor, percent: 100}
	f.sample[0].Name = "/gc/heap/live:bytes"
	f.sample[1].Name = "/gc/scan/stack:bytes"
	f.sample[2].Name = "/gc/scan/globals:bytes"
	f.arm()
	f.adjust()
	return f.stop
}

type heapFloor struct {
	floor  uint64
	sample [3]metrics.Sample // the live heap, the stacks and globals the collector scans

	mu      sync.Mutex
	percent int // as set last
	stopped bool
}

// gcSentinel is garbage from birth; its finalizer runs after the cycle
// that finds it, and arms the next one.
type gcSentinel struct{ f *heapFloor }

func (f *heapFloor) arm() {
	runtime.SetFinalizer(&gcSentinel{f: f}, func(s *gcSentinel) {
		if s.f.adjust() {
			s.f.arm()
		}
	})
}

// adjust sets the percentage for the live heap now, and reports whether
// the floor is still kept.
func (f *heapFloor) adjust() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.stopped {
		return false
	}
	metrics.Read(f.sample[:])
	for _, s := range f.sample {
		if s.Value.Kind() != metrics.KindUint64 {
			return false // a runtime without the metrics: leave GOGC alone
		}
	}
	roots := f.sample[1].Value.Uint64() + f.sample[2].Value.Uint64()
	p := floorPercent(f.sample[0].Value.Uint64(), roots, f.floor)
	// Only a real change: setting it recomputes the pacer's goal.
	if d := p - f.percent; d > f.percent/8 || -d > f.percent/8 {
		debug.SetGCPercent(p)
		f.percent = p
	}
	return true
}

func (f *heapFloor) stop() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.stopped {
		f.stopped = true
		debug.SetGCPercent(100)
	}
}

// floorPercent is the GOGC that makes the goal for a live heap the
// larger of twice it and floor, where roots are the bytes of stacks and
// globals the collector scans.
//
// The runtime's goal is live + (live + roots) × GOGC/100 (its pacer counts
// the roots it scans along with the heap), so the roots divide too. Left
// out, they raised the goal by their size times the percentage: at 16
// clients, with a live heap of 1–2 MiB and under a MiB of roots, the goal
// read 24 MB where the floor is 16 MiB, and the peak RSS followed; the
// smaller the live heap, the larger the error (a live heap 1 MB smaller at
// start, once jsonschema's metaschemas stopped being compiled at init, put
// 8-10 MB on the peak RSS).
func floorPercent(live, roots, floor uint64) int {
	const most = 100_000 // a live heap of a few KiB (at start)
	if live == 0 || 2*live >= floor {
		return 100
	}
	p := (floor - live) * 100 / (live + roots)
	if p > most {
		return most
	}
	return int(p)
}
