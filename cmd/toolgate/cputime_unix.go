//go:build unix

package main

import (
	"syscall"
	"time"
)

// processCPUTime is the CPU time the process has used, user and system,
// all threads; negative if it cannot be read.
func processCPUTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return -1
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
