//go:build unix

package upstream

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// TestWatchdogScript: when its input ends (the gateway is gone), the
// watchdog kills every group still listed, and none that was taken off.
func TestWatchdogScript(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	dogCmd := exec.Command("/bin/sh", "-c", watchdogScript)
	dogCmd.Stdin = r
	if err := dogCmd.Start(); err != nil {
		t.Fatal(err)
	}
	r.Close()
	group := func() *exec.Cmd {
		// A leader and a grandchild in one group, as an upstream has.
		c := exec.Command("/bin/sh", "-c", "sleep 300 & wait")
		c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = syscall.Kill(-c.Process.Pid, syscall.SIGKILL) })
		return c
	}
	listed, removed := group(), group()
	fmt.Fprintf(w, "+%d\n+%d\n-%d\n", listed.Process.Pid, removed.Process.Pid, removed.Process.Pid)
	w.Close() // the gateway dies
	done := make(chan error, 1)
	go func() { done <- listed.Wait() }()
	select {
	case err := <-done:
		if ws, ok := err.(*exec.ExitError); !ok || ws.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
			t.Errorf("the listed group ended with %v, want SIGKILL", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the listed group is still running 10s after the watchdog's input ended")
	}
	if err := dogCmd.Wait(); err != nil {
		t.Errorf("watchdog: %v", err)
	}
	if err := syscall.Kill(-removed.Process.Pid, 0); err != nil {
		t.Errorf("a group taken off the list was killed: %v", err)
	}
	_ = syscall.Kill(-removed.Process.Pid, syscall.SIGKILL)
	_ = removed.Wait()
}
