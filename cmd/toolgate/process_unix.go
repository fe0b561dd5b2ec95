//go:build unix

package main

import (
	"syscall"
	"time"
)

// What the operating system says of this process.

// openFileLimit is the process's soft limit on open file descriptors.
func openFileLimit() (uint64, bool) {
	var l syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l); err != nil {
		return 0, false
	}
	return uint64(l.Cur), true
}

// processCPUTime is the CPU time the process has used, user and system,
// all threads; negative if it cannot be read.
func processCPUTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return -1
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
