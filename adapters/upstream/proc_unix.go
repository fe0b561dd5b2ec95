//go:build unix

package upstream

import (
	"errors"
	"os/exec"
	"syscall"
)

// strictPathLookup: a command not found in the child's PATH by lookPathIn
// fails to start, rather than being looked up again in the gateway's.
const strictPathLookup = true

// setProcessGroup makes the child the leader of a new process group, so
// that it and every descendant that stays in the group can be signalled
// at once.
func setProcessGroup(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
}

// killGroup sends SIGTERM (or SIGKILL if hard) to the process group led
// by pid.
func killGroup(pid int, hard bool) error {
	if pid <= 0 {
		return nil
	}
	sig := syscall.SIGTERM
	if hard {
		sig = syscall.SIGKILL
	}
	err := syscall.Kill(-pid, sig)
	if errors.Is(err, syscall.ESRCH) {
		return nil
	}
	return err
}
