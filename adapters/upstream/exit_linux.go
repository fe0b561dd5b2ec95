package upstream

import (
	"fmt"
	"syscall"
	"unsafe"
)

// waitExit blocks until the child pid has exited, without reaping it
// (waitid with WNOWAIT), so that the transport's own cmd.Wait still
// collects it. It sees the exit even when grandchildren keep the child's
// stdout open, which hides the end of the stream from the transport.
func waitExit(pid int) string {
	const pPID = 1 // P_PID
	var info [128]byte
	for {
		_, _, errno := syscall.Syscall6(syscall.SYS_WAITID, pPID, uintptr(pid),
			uintptr(unsafe.Pointer(&info[0])), syscall.WEXITED|syscall.WNOWAIT, 0, 0)
		switch errno {
		case 0:
			return describeSiginfo(info[:])
		case syscall.EINTR:
			continue
		default:
			return fmt.Sprintf("exited (%v)", errno)
		}
	}
}

// describeSiginfo reads si_code and si_status of a SIGCHLD siginfo_t.
func describeSiginfo(info []byte) string {
	code := *(*int32)(unsafe.Pointer(&info[8]))
	off := 12 + 8 // si_code, then the union (after padding on 64-bit): si_pid, si_uid, si_status
	if unsafe.Sizeof(uintptr(0)) == 8 {
		off = 16 + 8
	}
	status := *(*int32)(unsafe.Pointer(&info[off]))
	switch code {
	case 1: // CLD_EXITED
		return fmt.Sprintf("exited with status %d", status)
	case 2, 3: // CLD_KILLED, CLD_DUMPED
		return fmt.Sprintf("killed by signal %d (%s)", status, syscall.Signal(status))
	default:
		return "exited"
	}
}
