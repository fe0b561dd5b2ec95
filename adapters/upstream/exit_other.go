//go:build unix && !linux

package upstream

import (
	"errors"
	"syscall"
	"time"
)

// waitExit polls until the child pid is gone. A dead child that has not
// been reaped yet still exists, so this notices an exit only once the
// transport collected it; a dead child is noticed earlier through the end
// of its stdout or a failed ping.
func waitExit(pid int) string {
	for {
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			return "exited"
		}
		time.Sleep(250 * time.Millisecond)
	}
}
