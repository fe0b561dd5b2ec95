package upstream

import (
	"os/exec"
	"syscall"
)

// setDeathSignal asks the kernel to SIGKILL the child when the gateway
// dies, however it dies (kill -9 included). Linux delivers it when the
// thread that started the child exits; the Go runtime does not end its
// threads, so in practice that is when the process does. Grandchildren
// are covered by the watchdog ([watchdog]).
func setDeathSignal(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
}
