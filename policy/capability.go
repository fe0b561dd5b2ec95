package policy

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/toolgate/toolgate/gateway"
)

// Capability names known to the gateway. A tool declares the capabilities
// it needs in [gateway.Permissions]; configuration may add names of its own
// with custom_capabilities.
const (
	FSRead      = "fs.read"
	FSWrite     = "fs.write"
	MemoryRead  = "memory.read"
	MemoryWrite = "memory.write"
	SkillsRead  = "skills.read"
	ShellExec   = "shell.exec"
	Net         = "net"
)

// knownCapabilities are the built-in capability names, in display order.
var knownCapabilities = []string{FSRead, FSWrite, MemoryRead, MemoryWrite, SkillsRead, ShellExec, Net}

// safeCapabilities are enabled for every tool by the runtime: reads, and
// writes that the gateway itself confines (the sandbox path guards, the
// memory write modes).
var safeCapabilities = []string{FSRead, FSWrite, MemoryRead, MemoryWrite, SkillsRead}

// runtimeDenied are the capabilities the runtime denies to every tool;
// neither configuration nor a skill can enable them (merge rule 1).
var runtimeDenied = []string{ShellExec}

// KnownCapabilities returns the built-in capability names.
func KnownCapabilities() []string { return slices.Clone(knownCapabilities) }

// SafeDefaults returns the capabilities the runtime enables for every tool.
func SafeDefaults() []string { return slices.Clone(safeCapabilities) }

// RuntimeDenied returns the capabilities the runtime denies to every tool.
func RuntimeDenied() []string { return slices.Clone(runtimeDenied) }

// NeededCapabilities returns the capabilities a tool needs: the ones it
// declares (each once, in declared order), plus [Net] when the tool is
// open-world. A tool without an openWorld hint is open-world (the MCP
// default), so an upstream tool without annotations needs net.
func NeededCapabilities(t *gateway.Tool) []string {
	if t == nil {
		return nil
	}
	var caps []string
	for _, c := range t.Permissions.Capabilities {
		if !slices.Contains(caps, c) {
			caps = append(caps, c)
		}
	}
	if t.Permissions.Resolved().OpenWorld && !slices.Contains(caps, Net) {
		caps = append(caps, Net)
	}
	return caps
}

// isFSCapability reports whether c is confined by the sandbox roots.
func isFSCapability(c string) bool { return c == FSRead || c == FSWrite }

// capabilityNameRE is the syntax of custom capability names: dot-separated
// lowercase words, like the built-in names.
var capabilityNameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]*(\.[a-z0-9][a-z0-9_-]*)*$`)

// checkGlob checks a tool-name glob: the one glob syntax of
// [gateway.CheckGlob], and only
// characters that can appear in a tool name besides the glob operators, so
// that a typo such as "fs.*" is an error instead of a rule that never
// matches.
func checkGlob(g string) error {
	if err := gateway.CheckGlob(g); err != nil {
		return err
	}
	for _, r := range g {
		if !strings.ContainsRune(globChars, r) {
			return fmt.Errorf("tool-name glob %q can never match: tool names are 1-64 characters of [A-Za-z0-9_-], not %q", g, r)
		}
	}
	return nil
}

const (
	nameChars = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-"
	globChars = nameChars + `*?[]^!\`
)

// matchGlob reports whether a tool name matches a glob checked by checkGlob.
func matchGlob(g, name string) bool { return gateway.MatchGlob(g, name) }

// matchesEveryName reports whether glob g matches every valid tool name
// ("*", "**", "?*", "[A-Za-z0-9_-]*", ...).
//
// Probing a few names decides it exactly. A glob matches every name only if
// each of its non-star parts matches any name character: a literal or a
// class that misses some character c fails on the names "c" and "ccc…"
// (every character of which is c). With every part universal, the glob
// matches exactly the names at least as long as its count k of single-
// character parts if it has a star, or of length exactly k if not; it
// matches every length from 1 to 64 only with a star and k <= 1. The names
// "c" and c repeated 64 times, for every name character c, test all of
// that.
func matchesEveryName(g string) bool {
	return matchesAll(g, nil)
}

// Tool names of the shapes toolgate serves: built-in names, and upstream
// tools as <prefix>__<name>, with short, long, lower- and mixed-case
// parts. A glob that matches all of one set enables, in effect, every
// tool of that kind, whatever the catalog holds today.
var (
	typicalNames = []string{
		"read_file", "write_file", "list_files", "grep_files", "remember", "recall_memory",
		"run", "x", "delete", "drop_table", "deleteFile", "rm-rf", "a1",
	}
	typicalUpstreamNames = []string{
		"fs__delete_file", "github__create_issue", "db__drop_table", "a__b", "x__y",
		"notes__Delete", "k8s__delete-pod", "z9__run",
		strings.Repeat("p", 28) + "__" + strings.Repeat("t", 28),
	}
)

// matchesTooMuch says what a glob enables when it enables, in effect,
// everything of a kind: every tool name ("*", "?*", "[a-z]*" over the
// names tools have), or every upstream tool ("*__*"). It is "" for a
// glob that names tools, even with wildcards ("fs__delete_*").
func matchesTooMuch(g string) string {
	switch {
	case matchesEveryName(g):
		return "every tool"
	case matchesAll(g, append(slices.Clone(typicalNames), typicalUpstreamNames...)):
		return "every tool (it matches names of every shape)"
	case matchesAll(g, typicalUpstreamNames):
		return "every upstream tool (<prefix>__<name>)"
	}
	return ""
}

// matchesAll reports whether g matches every name of names, or, for nil,
// every valid tool name (see matchesEveryName).
func matchesAll(g string, names []string) bool {
	if names != nil {
		for _, n := range names {
			if !matchGlob(g, n) {
				return false
			}
		}
		return true
	}
	for _, c := range nameChars {
		one := string(c)
		if !matchGlob(g, one) || !matchGlob(g, strings.Repeat(one, 64)) {
			return false
		}
	}
	return true
}
