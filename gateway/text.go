package gateway

import "strconv"

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
