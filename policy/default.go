package policy

// Default is the safe default policy, [New] with the zero [Config]: tools
// that need shell.exec are denied, destructive tools (including tools
// without hints) are denied, tools whose capabilities are all runtime safe
// defaults (fs.read, fs.write within the sandbox, memory.read,
// memory.write, skills.read) are allowed, and anything else, such as net
// for an open-world tool, is denied until configuration enables it.
func Default() *Effective {
	e, err := New(Config{}, nil)
	if err != nil {
		panic("policy: the zero Config is invalid: " + err.Error()) // cannot happen
	}
	return e
}
