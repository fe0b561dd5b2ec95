package runs

import (
	"bytes"
	"encoding/json"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/toolgate/toolgate/gateway"
)

// Record lines are built by hand rather than with encoding/json's
// reflection: a call writes two to three of them on its way back to the
// client, and appending known fields to a buffer costs a fraction of
// encoding a struct (which also re-validates and re-compacts the raw
// arguments). The output is ordinary compact JSON, one object per line.

// line is one JSON object being built.
type line struct {
	b     []byte
	empty bool
}

var linePool = sync.Pool{New: func() any { return &line{b: make([]byte, 0, 512)} }}

func newLine() *line {
	l := linePool.Get().(*line)
	l.b = append(l.b[:0], '{')
	l.empty = true
	return l
}

// newLineOf is a line that begins with parts, whole members copied from
// other lines (the first part opens the object).
func newLineOf(parts ...[]byte) *line {
	l := linePool.Get().(*line)
	l.b = l.b[:0]
	for _, p := range parts {
		l.b = append(l.b, p...)
	}
	l.empty = false
	return l
}

// done ends the object and the line and returns the bytes, which stay
// valid until release.
func (l *line) done() []byte {
	l.b = append(l.b, '}', '\n')
	return l.b
}

func (l *line) release() {
	if cap(l.b) <= 64<<10 {
		linePool.Put(l)
	}
}

// key starts member k. Every k is a constant of this package made of
// letters and underscores, which JSON needs no escape for.
func (l *line) key(k string) {
	if !l.empty {
		l.b = append(l.b, ',')
	}
	l.empty = false
	l.b = append(l.b, '"')
	l.b = append(l.b, k...)
	l.b = append(l.b, '"', ':')
}

func (l *line) str(k, v string) {
	l.key(k)
	l.b = appendString(l.b, v)
}

// time adds t as the records' timestamps are (RFC 3339, UTC, with
// nanoseconds), formatted into the line with no string of its own.
func (l *line) time(k string, t time.Time) {
	l.key(k)
	l.b = append(l.b, '"')
	l.b = t.UTC().AppendFormat(l.b, time.RFC3339Nano)
	l.b = append(l.b, '"')
}

// strOmit adds k only when v is not empty (omitempty).
func (l *line) strOmit(k, v string) {
	if v != "" {
		l.str(k, v)
	}
}

func (l *line) boolean(k string, v bool) {
	l.key(k)
	l.b = strconv.AppendBool(l.b, v)
}

func (l *line) num(k string, v float64) {
	l.key(k)
	l.b = strconv.AppendFloat(l.b, v, 'f', -1, 64)
}

func (l *line) strings(k string, vs []string) {
	l.key(k)
	l.b = append(l.b, '[')
	for i, v := range vs {
		if i > 0 {
			l.b = append(l.b, ',')
		}
		l.b = appendString(l.b, v)
	}
	l.b = append(l.b, ']')
}

// raw adds JSON that is known to be valid; it is compacted if it holds
// line breaks, so the record stays one line.
func (l *line) raw(k string, v []byte) {
	l.key(k)
	if bytes.IndexByte(v, '\n') < 0 && bytes.IndexByte(v, '\r') < 0 {
		l.b = append(l.b, v...)
		return
	}
	var buf bytes.Buffer
	if json.Compact(&buf, v) != nil {
		l.b = appendString(l.b, string(v)) // cannot happen for valid JSON
		return
	}
	l.b = append(l.b, buf.Bytes()...)
}

// value adds v encoded with encoding/json, for the rarely present fields.
func (l *line) value(k string, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		b, _ = json.Marshal("[unencodable: " + err.Error() + "]")
	}
	l.key(k)
	l.b = append(l.b, b...)
}

// caller writes who made the call: session (as its ref), client,
// identity, and what records keep of an OAuth caller's principal; and
// the task (its id) when it was called as one; the round, when it
// repeats an earlier one.
func (l *line) caller(call *gateway.Call) {
	l.strOmit("session", call.SessionRef())
	l.strOmit("client", gateway.Truncate(call.Client, recordNameMax))
	l.strOmit("identity", gateway.Truncate(call.Identity, recordNameMax))
	if call.Principal != nil {
		l.value("principal", call.Principal.Record())
	}
	if t := call.CurrentTask(); t != nil {
		l.value("task", t) // how it was called, or what it became: a task
	}
	if call.Round != nil { // a repeat answering an earlier round (2026-07-28)
		l.num("round", float64(call.Round.N))
		l.str("round_of", call.Round.Of)
	}
}

func (l *line) decision(d *gateway.Decision) {
	if d == nil {
		return
	}
	l.key("decision")
	sub := line{b: l.b}
	sub.b = append(sub.b, '{')
	sub.empty = true
	sub.boolean("allow", d.Allow)
	sub.str("layer", d.Layer)
	sub.str("rule", d.Rule)
	sub.strOmit("reason", d.Reason)
	if len(d.Capabilities) > 0 {
		sub.strings("capabilities", d.Capabilities)
	}
	if len(d.Missing) > 0 {
		sub.strings("missing", d.Missing)
	}
	l.b = append(sub.b, '}')
}

const hexDigits = "0123456789abcdef"

// plainASCII tells the bytes appendString writes as they are: printable
// ASCII but for the quote and the backslash. One lookup per byte instead
// of four comparisons; it is most of what a record line costs to build.
var plainASCII = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// appendString appends s as a JSON string, escaped as encoding/json does
// without HTML escaping: quotes, backslashes and control characters, with
// invalid UTF-8 replaced by U+FFFD, and U+2028/U+2029 escaped.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if plainASCII[c] {
			i++
			continue
		}
		if c < utf8.RuneSelf {
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
