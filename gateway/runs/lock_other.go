//go:build !unix

package runs

import "io"

// Without flock(2), runs are told by their PID (browse_other.go).
func lockRun(string) io.Closer { return nil }

func runLocked(string) bool { return false }

const runtimeHasFlock = false
