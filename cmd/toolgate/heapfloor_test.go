package main

import (
	"runtime"
	"runtime/metrics"
	"testing"
	"time"
)

func TestFloorPercent(t *testing.T) {
	const mib = 1 << 20
	for _, c := range []struct {
		live, roots, floor uint64
		want               int
	}{
		{0, 0, 16 * mib, 100},
		{2 * mib, 0, 16 * mib, 700},
		{8 * mib, 0, 16 * mib, 100},
		{100 * mib, 0, 16 * mib, 100},
		{4 * mib, 0, 16 * mib, 300},
		{10 << 10, 0, 16 * mib, 100_000},
		// The roots count as the runtime counts them: the goal,
		// live + (live + roots) × p/100, is the floor.
		{1 * mib, 1 * mib, 16 * mib, 750},
		{2 * mib, mib / 2, 16 * mib, 560},
		{8 * mib, 1 * mib, 16 * mib, 100},
	} {
		if got := floorPercent(c.live, c.roots, c.floor); got != c.want {
			t.Errorf("floorPercent(%d, %d, %d) = %d, want %d", c.live, c.roots, c.floor, got, c.want)
		}
		if c.want != 100 && c.want != 100_000 {
			goal := c.live + (c.live+c.roots)*uint64(c.want)/100
			if goal > c.floor || c.floor-goal > c.floor/100 {
				t.Errorf("live %d, roots %d: the goal at %d%% is %d, want the floor %d", c.live, c.roots, c.want, goal, c.floor)
			}
		}
	}
}

// gogc is the collector's percentage in force.
func gogc() uint64 {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// serve's heap floor raises GOGC for a small live heap after each
// collection, leaves it to GOGC or GOMEMLIMIT when the environment sets
// them, and stopping restores the default.
func TestKeepHeapFloor(t *testing.T) {
	t.Run("environment decides", func(t *testing.T) {
		t.Setenv("GOGC", "100")
		stop := keepHeapFloor(1 << 30)
		runtime.GC()
		runtime.GC()
		if p := gogc(); p != 100 {
			t.Errorf("GOGC set: percentage %d, want 100", p)
		}
		stop()
	})
	t.Setenv("GOGC", "")
	t.Setenv("GOMEMLIMIT", "")
	stop := keepHeapFloor(1 << 30) // far above this test's live heap
	deadline := time.Now().Add(10 * time.Second)
	for gogc() <= 100 {
		if time.Now().After(deadline) {
			t.Fatalf("percentage still %d after collections", gogc())
		}
		runtime.GC() // the finalizer runs after a cycle; a few may be needed
		runtime.Gosched()
	}
	stop()
	if p := gogc(); p != 100 {
		t.Errorf("after stop: percentage %d, want 100", p)
	}
	runtime.GC()
	runtime.GC()
	if p := gogc(); p != 100 {
		t.Errorf("a collection after stop: percentage %d, want 100", p)
	}
}
