//go:build !unix

package upstream

import "syscall"

// writeFD writes b to the handle fd.
func writeFD(fd uintptr, b []byte) (int, error) { return syscall.Write(syscall.Handle(fd), b) }
