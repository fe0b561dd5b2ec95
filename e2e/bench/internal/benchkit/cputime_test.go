package benchkit

import (
	"os"
	"os/exec"
	"testing"
	"time"
)

// TestCPUTime holds CPUTime to /proc's ticks: this process's and a child's
// CPU time, read both ways around the same work, agree to within the
// ticks' rounding, and the clock's reading is finer than a tick.
func TestCPUTime(t *testing.T) {
	// Spin until /proc has counted 200 ms more of this process's CPU
	// (whatever else the machine runs), reading the clock on both sides.
	for _, pid := range []int{0, os.Getpid()} {
		c0, t0 := CPUTime(pid), cpuTicks(pid)
		t1 := t0
		for end := time.Now().Add(20 * time.Second); t1-t0 < 20 && time.Now().Before(end); t1 = cpuTicks(pid) {
			for i := 0; i < 1e6; i++ {
				spin++
			}
		}
		c1 := CPUTime(pid)
		byClock, byTicks := c1-c0, time.Duration(t1-t0)*time.Second/clkTck
		if byTicks < 200*time.Millisecond {
			t.Fatalf("pid %d: /proc counted %v of CPU in 20 s of spinning", pid, byTicks)
		}
		if diff := (byClock - byTicks).Abs(); diff > 40*time.Millisecond {
			t.Errorf("pid %d: the clock says %v, /proc %v", pid, byClock, byTicks)
		}
	}
	if a, b := CPUTime(0), CPUTime(0); a%(10*time.Millisecond) == 0 && b%(10*time.Millisecond) == 0 {
		t.Errorf("CPUTime comes in whole ticks (%v, %v): it is not the CPU-time clock", a, b)
	}

	// Another process: the clock reads it too, and a process that is gone
	// has none.
	cmd := exec.Command("sh", "-c", "i=0; while [ $i -lt 100000 ]; do i=$((i+1)); done; read x")
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Skipf("no sh: %v", err)
	}
	pid := cmd.Process.Pid
	var c time.Duration
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); {
		if c = CPUTime(pid); c >= 20*time.Millisecond {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	if c < 20*time.Millisecond {
		t.Errorf("the child's CPU time by the clock: %v", c)
	}
	if d := (c - time.Duration(cpuTicks(pid))*time.Second/clkTck).Abs(); d > 40*time.Millisecond {
		t.Errorf("the child: the clock says %v, /proc %d ticks", c, cpuTicks(pid))
	}
	in.Close()
	_ = cmd.Wait()
	if c := CPUTime(pid); c != 0 {
		t.Errorf("a reaped process has %v of CPU time", c)
	}
}

// spin is what TestCPUTime's busy loop writes, so that it is not removed.
var spin int
