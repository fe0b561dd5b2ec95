// Package jsonscan finds the extent of JSON values in bytes, validating
// them as encoding/json's scanner does, finds an object's members as
// encoding/json matches them, and decodes objects into interface values as
// encoding/json does. It is not mcp-go's: toolgate's patch adds it
// (third_party/README.md, items 23, 24, 26 and 27), for the fast paths that
// read a message's envelope, a tools/call's params and a request's _meta,
// and toolgate's own one-pass decoding of flat arguments
// (gateway/validate.go) decodes with it too. Each of its users leaves to
// encoding/json whatever it cannot read exactly as encoding/json would.
package jsonscan

import (
	"bytes"
	"encoding/json"
	"strconv"
	"unicode/utf8"
)

// MaxDepth bounds the nesting SkipValue follows; deeper input is
// encoding/json's to decode (whose own bound is 10,000).
const MaxDepth = 64

// SkipSpace returns the index of the first byte at or after i that is not
// JSON whitespace.
func SkipSpace(data []byte, i int) int {
	for i < len(data) {
		switch data[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// SkipValue returns the end of the JSON value at data[i:], or false when
// there is none there (or it nests deeper than MaxDepth).
func SkipValue(data []byte, i, depth int) (int, bool) {
	if i >= len(data) {
		return 0, false
	}
	switch c := data[i]; {
	case c == '"':
		return SkipString(data, i)
	case c == '-' || c >= '0' && c <= '9':
		return skipNumber(data, i)
	case c == 't':
		return skipLiteral(data, i, "true")
	case c == 'f':
		return skipLiteral(data, i, "false")
	case c == 'n':
		return skipLiteral(data, i, "null")
	case c == '[':
		if depth >= MaxDepth {
			return 0, false
		}
		i = SkipSpace(data, i+1)
		if i < len(data) && data[i] == ']' {
			return i + 1, true
		}
		for {
			end, ok := SkipValue(data, i, depth+1)
			if !ok {
				return 0, false
			}
			i = SkipSpace(data, end)
			if i >= len(data) {
				return 0, false
			}
			switch data[i] {
			case ',':
				i = SkipSpace(data, i+1)
			case ']':
				return i + 1, true
			default:
				return 0, false
			}
		}
	case c == '{':
		if depth >= MaxDepth {
			return 0, false
		}
		i = SkipSpace(data, i+1)
		if i < len(data) && data[i] == '}' {
			return i + 1, true
		}
		for {
			if i >= len(data) || data[i] != '"' {
				return 0, false
			}
			end, ok := SkipString(data, i)
			if !ok {
				return 0, false
			}
			i = SkipSpace(data, end)
			if i >= len(data) || data[i] != ':' {
				return 0, false
			}
			end, ok = SkipValue(data, SkipSpace(data, i+1), depth+1)
			if !ok {
				return 0, false
			}
			i = SkipSpace(data, end)
			if i >= len(data) {
				return 0, false
			}
			switch data[i] {
			case ',':
				i = SkipSpace(data, i+1)
			case '}':
				return i + 1, true
			default:
				return 0, false
			}
		}
	}
	return 0, false
}

// SkipString returns the end of the string at data[i] (a quote): any byte
// but a control character, and escapes as JSON has them.
func SkipString(data []byte, i int) (int, bool) {
	for i++; i < len(data); i++ {
		switch c := data[i]; {
		case c == '"':
			return i + 1, true
		case c < 0x20:
			return 0, false
		case c == '\\':
			i++
			if i >= len(data) {
				return 0, false
			}
			switch data[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if i+4 >= len(data) {
					return 0, false
				}
				for _, h := range data[i+1 : i+5] {
					if !(h >= '0' && h <= '9' || h >= 'a' && h <= 'f' || h >= 'A' && h <= 'F') {
						return 0, false
					}
				}
				i += 4
			default:
				return 0, false
			}
		}
	}
	return 0, false
}

// skipNumber returns the end of the number at data[i]:
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func skipNumber(data []byte, i int) (int, bool) {
	digits := func(i int) int {
		for i < len(data) && data[i] >= '0' && data[i] <= '9' {
			i++
		}
		return i
	}
	if data[i] == '-' {
		i++
	}
	switch {
	case i < len(data) && data[i] == '0':
		i++
	case i < len(data) && data[i] >= '1' && data[i] <= '9':
		i = digits(i + 1)
	default:
		return 0, false
	}
	if i < len(data) && data[i] == '.' {
		j := digits(i + 1)
		if j == i+1 {
			return 0, false
		}
		i = j
	}
	if i < len(data) && (data[i] == 'e' || data[i] == 'E') {
		i++
		if i < len(data) && (data[i] == '+' || data[i] == '-') {
			i++
		}
		j := digits(i)
		if j == i {
			return 0, false
		}
		i = j
	}
	return i, true
}

func skipLiteral(data []byte, i int, lit string) (int, bool) {
	if len(data)-i < len(lit) || string(data[i:i+len(lit)]) != lit {
		return 0, false
	}
	return i + len(lit), true
}

// Object calls member for each member of the JSON object that is the whole
// of data (whitespace aside), in order, with the member's name and its
// value's extent, the whole of data validated. It returns false, and
// stops, when data is not such an object, when a name is not plain ASCII
// without escapes (encoding/json would match it to a field in ways the
// caller does not see: escaped, or folded from a non-ASCII letter), or when
// member returns false.
func Object(data []byte, member func(name []byte, start, end int) bool) bool {
	i := SkipSpace(data, 0)
	if i >= len(data) || data[i] != '{' {
		return false
	}
	i = SkipSpace(data, i+1)
	if i < len(data) && data[i] == '}' {
		return SkipSpace(data, i+1) == len(data)
	}
	for {
		if i >= len(data) || data[i] != '"' {
			return false
		}
		j := i + 1
		for j < len(data) && data[j] != '"' {
			if c := data[j]; c == '\\' || c < 0x20 || c >= utf8.RuneSelf {
				return false
			}
			j++
		}
		if j >= len(data) {
			return false
		}
		name := data[i+1 : j]
		i = SkipSpace(data, j+1)
		if i >= len(data) || data[i] != ':' {
			return false
		}
		i = SkipSpace(data, i+1)
		end, ok := SkipValue(data, i, 0)
		if !ok || !member(name, i, end) {
			return false
		}
		i = SkipSpace(data, end)
		if i >= len(data) {
			return false
		}
		switch data[i] {
		case ',':
			i = SkipSpace(data, i+1)
		case '}':
			return SkipSpace(data, i+1) == len(data)
		default:
			return false
		}
	}
}

// Elements calls elem for each element of the JSON array that is the whole
// of data (whitespace aside), in order, with the element's extent, the
// whole of data validated. It returns false, and stops, when data is not
// such an array or when elem returns false.
func Elements(data []byte, elem func(start, end int) bool) bool {
	i := SkipSpace(data, 0)
	if i >= len(data) || data[i] != '[' {
		return false
	}
	i = SkipSpace(data, i+1)
	if i < len(data) && data[i] == ']' {
		return SkipSpace(data, i+1) == len(data)
	}
	for {
		end, ok := SkipValue(data, i, 1)
		if !ok || !elem(i, end) {
			return false
		}
		i = SkipSpace(data, end)
		if i >= len(data) {
			return false
		}
		switch data[i] {
		case ',':
			i = SkipSpace(data, i+1)
		case ']':
			return SkipSpace(data, i+1) == len(data)
		default:
			return false
		}
	}
}

// PlainString is the value of the JSON string v (a whole, valid one) when
// it decodes to its own bytes: no escape, valid UTF-8.
func PlainString(v []byte) (string, bool) {
	if len(v) < 2 || v[0] != '"' || v[len(v)-1] != '"' {
		return "", false
	}
	v = v[1 : len(v)-1]
	if bytes.IndexByte(v, '\\') >= 0 || !utf8.Valid(v) {
		return "", false
	}
	return string(v), true
}

// Member finds the member name of the JSON object data as encoding/json
// matches a member to a struct field of that name: the extent of the last
// such member's value (json decodes each one into the field) and how many
// there are. It is false, as [Object] is, when data is not an object
// Object reads, and when a member's name matches name only in another case
// (json matches that one too).
func Member(data []byte, name string) (start, end, n int, ok bool) {
	names := [1]string{name}
	ok = Object(data, func(m []byte, s, e int) bool {
		i, ok := match(m, names[:])
		if i == 0 {
			start, end, n = s, e, n+1
		}
		return ok
	})
	return start, end, n, ok
}

// Fields reads the JSON object data as json.Unmarshal reads it into a
// struct whose fields are names (by their JSON names; at most 64): it calls
// field for each member named exactly one of them, with the name's index
// and the value's extent, and skips every other member, as json ignores
// it. It is false, as [Object] is, when field returns false, when a
// member's name matches one of names only in another case (json matches
// that one too), and when one of names comes twice (json decodes both into
// the same field, merging objects and maps, where a caller reading each
// member on its own would not).
func Fields(data []byte, names []string, field func(i, start, end int) bool) bool {
	var seen uint64
	return Object(data, func(m []byte, start, end int) bool {
		i, ok := match(m, names)
		switch {
		case !ok:
			return false
		case i < 0:
			return true
		case seen&(1<<i) != 0:
			return false
		}
		seen |= 1 << i
		return field(i, start, end)
	})
}

// match is the index of the member name m among names as json matches a
// member to a struct field: exactly, or -1 for none. It is false when m is
// one of names only in another case.
func match(m []byte, names []string) (int, bool) {
	folded := false
	for i, n := range names {
		if string(m) == n {
			return i, true
		}
		folded = folded || bytes.EqualFold(m, []byte(n))
	}
	return -1, !folded
}

// DecodeObject decodes the JSON object data into a map of interface values
// as json.Unmarshal into a map[string]any does: objects into
// map[string]any (the last of a repeated name), arrays into []any (an
// empty one not nil), strings, numbers into float64s (into json.Numbers
// with useNumber, as a json.Decoder after UseNumber), booleans and nil. It
// is false, for its caller to leave data to encoding/json, when it cannot
// decode data exactly so: not an object, a member name at any level that
// Object refuses, a number that does not fit a float64. Each nested object
// is scanned again when it is decoded: callers bound the size of what they
// hand over when it may nest.
func DecodeObject(data []byte, useNumber bool) (map[string]any, bool) {
	m := make(map[string]any)
	ok := Object(data, func(name []byte, start, end int) bool {
		v, ok := decodeValue(data[start:end], useNumber)
		m[string(name)] = v
		return ok
	})
	return m, ok
}

// decodeValue decodes v, a valid JSON value (Object validated it before
// handing it over), as encoding/json decodes a value into an interface.
func decodeValue(v []byte, useNumber bool) (any, bool) {
	switch v[0] {
	case '{':
		return DecodeObject(v, useNumber)
	case '[':
		a := make([]any, 0) // json's too: an empty array is not nil
		ok := Elements(v, func(start, end int) bool {
			e, ok := decodeValue(v[start:end], useNumber)
			a = append(a, e)
			return ok
		})
		return a, ok
	case '"':
		if s, ok := PlainString(v); ok {
			return s, true
		}
		var s string // escapes, or invalid UTF-8 json replaces
		return s, json.Unmarshal(v, &s) == nil
	case 't':
		return true, true
	case 'f':
		return false, true
	case 'n':
		return nil, true
	}
	if useNumber {
		return json.Number(v), true
	}
	f, err := strconv.ParseFloat(string(v), 64) // as json decodes a number into an interface
	return f, err == nil
}
