package policy

import (
	"context"
	"slices"

	"github.com/toolgate/toolgate/gateway"
)

// Capability names known to the gateway.
const (
	FSRead      = "fs.read"
	FSWrite     = "fs.write"
	MemoryRead  = "memory.read"
	MemoryWrite = "memory.write"
	SkillsRead  = "skills.read"
	ShellExec   = "shell.exec"
	Net         = "net"
)

// safeCapabilities are allowed by the default policy: reads, and writes
// that the gateway itself confines (the sandbox, the memory modes).
var safeCapabilities = []string{FSRead, FSWrite, MemoryRead, MemoryWrite, SkillsRead}

// Default is the safe default policy: tools that need shell.exec are
// denied, destructive tools are denied, tools whose capabilities are all
// safe (fs.read, fs.write within the sandbox, memory.read, memory.write,
// skills.read) or that are read-only are allowed, and anything else is
// denied until configuration enables it.
func Default() gateway.Policy {
	return gateway.PolicyFunc(func(_ context.Context, t *gateway.Tool) gateway.Decision {
		caps := t.Permissions.Capabilities
		hints := t.Permissions.Resolved()
		d := gateway.Decision{Capabilities: caps}
		switch {
		case slices.Contains(caps, ShellExec):
			d.Layer, d.Rule, d.Missing = "runtime", "deny-shell", []string{ShellExec}
			d.Reason = "shell execution is denied by default"
		case hints.Destructive:
			d.Layer, d.Rule = "runtime", "deny-destructive"
			d.Reason = "destructive tools are denied by default"
		default:
			var missing []string
			for _, c := range caps {
				if !slices.Contains(safeCapabilities, c) {
					missing = append(missing, c)
				}
			}
			if len(missing) == 0 {
				d.Allow, d.Layer, d.Rule = true, "default", "safe-capabilities"
				d.Reason = "the tool needs only safe capabilities"
			} else {
				d.Layer, d.Rule, d.Missing = "default", "capability-not-enabled", missing
				d.Reason = "the capability is not enabled by default"
			}
		}
		return d
	})
}
