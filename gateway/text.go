package gateway

import (
	"encoding/binary"
	"strconv"
	"unicode/utf8"
)

// Plural returns n and the noun that fits it: "1 file", "0 files",
// "3 matches". one and many are the singular and plural forms, since
// English plurals are not regular enough to derive ("match", "matches";
// "memory", "memories").
func Plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}

// hasNonASCII reports whether b holds a byte outside ASCII, eight bytes
// at a time.
func hasNonASCII(b []byte) bool {
	for ; len(b) >= 8; b = b[8:] {
		if binary.LittleEndian.Uint64(b)&0x8080808080808080 != 0 {
			return true
		}
	}
	for _, c := range b {
		if c >= utf8.RuneSelf {
			return true
		}
	}
	return false
}
