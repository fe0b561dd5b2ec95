//go:build unix

package runs

import (
	"errors"
	"io"
	"os"
	"syscall"
)

// A live run holds an exclusive flock(2) on its directory, taken by Open
// and released by Close or, however the process ends (SIGKILL, a crash,
// the OOM killer), by the kernel. A reader asks for a shared lock without
// waiting: refused, the run is live. Unlike a PID, the lock cannot outlive
// its process or be mistaken for another's.

// lockRun locks dir for the run's life; nil where it cannot (the run is
// then told by its PID, as before).
func lockRun(dir string) io.Closer {
	f, err := os.Open(dir)
	if err != nil {
		return nil
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil
	}
	return f
}

// runLocked reports whether a live run holds dir's lock.
func runLocked(dir string) bool {
	f, err := os.Open(dir)
	if err != nil {
		return false
	}
	defer f.Close()
	err = syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB)
	return errors.Is(err, syscall.EWOULDBLOCK)
}

// runtimeHasFlock: tests of the lock run here.
const runtimeHasFlock = true
