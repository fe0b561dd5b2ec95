//go:build !unix

package upstream

import (
	"os"
	"os/exec"
)

// strictPathLookup is off where lookPathIn cannot tell an executable
// (Windows: no mode bits, extensions from PATHEXT): a command it does not
// find is left to exec's own lookup.
const strictPathLookup = false

// setProcessGroup does nothing where process groups do not exist; only
// the child itself is ended then.
func setProcessGroup(*exec.Cmd) {}

func killGroup(pid int, _ bool) error {
	p, err := os.FindProcess(pid)
	if err != nil {
		return nil
	}
	return p.Kill()
}
