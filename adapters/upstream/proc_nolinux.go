//go:build !linux

package upstream

import "os/exec"

// setDeathSignal has no equivalent outside Linux; the watchdog (on unix)
// ends the child's process group when the gateway dies.
func setDeathSignal(*exec.Cmd) {}
