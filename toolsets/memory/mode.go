package memory

import (
	"fmt"
	"strings"
)

// Mode is the memory write mode (config key memory.write_mode).
type Mode string

// Write modes. The default is [ModeCandidate] (seed 002: "Phase 1 默认
// candidate").
const (
	// ModeDisabled: write_memory is not offered; calling it is an error.
	ModeDisabled Mode = "disabled"
	// ModeCandidate: writes go to the run archive as candidate memories
	// awaiting review, not into the store.
	ModeCandidate Mode = "candidate"
	// ModeExternal: writes go to the store.
	ModeExternal Mode = "external"
)

// DefaultMode is the write mode when none is configured.
const DefaultMode = ModeCandidate

// Modes lists the valid write modes.
func Modes() []Mode { return []Mode{ModeDisabled, ModeCandidate, ModeExternal} }

// ParseMode parses a write mode. The empty string is [DefaultMode]; case and
// surrounding spaces are ignored; anything else is an error that lists the
// valid modes.
func ParseMode(s string) (Mode, error) {
	v := strings.ToLower(strings.TrimSpace(s))
	if v == "" {
		return DefaultMode, nil
	}
	for _, m := range Modes() {
		if v == string(m) {
			return m, nil
		}
	}
	return "", fmt.Errorf("invalid memory write mode %q: must be one of disabled, candidate (the default), external", s)
}

// String returns the mode's name.
func (m Mode) String() string { return string(m) }
