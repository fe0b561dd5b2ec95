//go:build unix

package runs

import (
	"errors"
	"syscall"
)

// processRunning reports whether a process with this pid exists.
func processRunning(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
