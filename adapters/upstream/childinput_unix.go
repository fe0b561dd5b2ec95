//go:build unix

package upstream

import "syscall"

// writeFD is write(2) on the descriptor fd.
func writeFD(fd uintptr, b []byte) (int, error) { return syscall.Write(int(fd), b) }
