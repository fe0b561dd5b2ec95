package server

import (
	"bytes"
	"encoding/json"
	"strconv"
	"unicode/utf8"

	"github.com/mark3labs/mcp-go/mcp"
)

// toolgate patch, for speed (item 23): a message's JSON-RPC envelope read
// in one pass of its own, where json.Unmarshal into the envelope's struct
// validated the whole message, then decoded it by reflection (about 1.7 µs
// and 14 allocations for a tools/call over HTTP, with its id). Every
// transport decodes one envelope per message (the HTTP transport's
// postEnvelope, the stdio transport's stdioEnvelope, HandleMessage's own
// when no transport handed one over); each now asks scanEnvelope first.
//
// scanEnvelope takes only what it can read exactly as json.Unmarshal
// would, and says no to anything else, which is then decoded by
// json.Unmarshal as before, errors included: a member name that matches
// one of the envelope's only in another case or through an escape or a
// byte outside ASCII (json matches those too), a method or version that is
// not a plain string (escapes, invalid UTF-8, another type), nesting
// deeper than maxScanDepth, and any input that is not valid JSON. What it
// takes it reads as json.Unmarshal: the last of a repeated member, every
// "params" counted (paramsMember), raw values byte for byte. FuzzToolgateEnvelope
// holds each envelope it fills to json.Unmarshal's.

// maxScanDepth bounds the nesting scanEnvelope follows; deeper input is
// json.Unmarshal's (whose own bound is 10,000).
const maxScanDepth = 64

// envelopeScan is what scanEnvelope read of a message: each member's value
// as a span of the message (the last one met), and how many of each it
// met. A member decoded into a typed field (a string, an interface) is
// taken only when met once: json.Unmarshal decodes every one it meets, and
// fails for a value of the wrong type even when a later one replaces it.
type envelopeScan struct {
	jsonrpc, id, method, params, result, error span
	jsonrpcN, idN, methodN, paramsN            int
}

// span is a value's bytes in the message; absent when end is 0.
type span struct{ start, end int }

func (s span) present() bool { return s.end > 0 }

// envelope member names, exactly as the structs' tags spell them.
var envelopeNames = [...]string{"jsonrpc", "id", "method", "params", "result", "error"}

// scanEnvelope reads data's top-level members, validating the whole of it.
func scanEnvelope(data []byte) (envelopeScan, bool) {
	var e envelopeScan
	i := skipSpace(data, 0)
	if i >= len(data) || data[i] != '{' {
		return e, false
	}
	i = skipSpace(data, i+1)
	if i < len(data) && data[i] == '}' {
		return e, skipSpace(data, i+1) == len(data)
	}
	for {
		// A member name: plain ASCII, no escape, so that it names what it
		// spells and json would match it to the same field.
		if i >= len(data) || data[i] != '"' {
			return e, false
		}
		j := i + 1
		for j < len(data) && data[j] != '"' {
			if c := data[j]; c == '\\' || c < 0x20 || c >= utf8.RuneSelf {
				return e, false
			}
			j++
		}
		if j >= len(data) {
			return e, false
		}
		name := data[i+1 : j]
		i = skipSpace(data, j+1)
		if i >= len(data) || data[i] != ':' {
			return e, false
		}
		i = skipSpace(data, i+1)
		end, ok := skipValue(data, i, 0)
		if !ok {
			return e, false
		}
		v := span{i, end}
		switch string(name) {
		case "jsonrpc":
			e.jsonrpc = v
			e.jsonrpcN++
		case "id":
			e.id = v
			e.idN++
		case "method":
			e.method = v
			e.methodN++
		case "params":
			e.params = v
			e.paramsN++
		case "result":
			e.result = v
		case "error":
			e.error = v
		default:
			for _, n := range envelopeNames {
				if bytes.EqualFold(name, []byte(n)) {
					return e, false // json matches it to n
				}
			}
		}
		i = skipSpace(data, end)
		if i >= len(data) {
			return e, false
		}
		switch data[i] {
		case ',':
			i = skipSpace(data, i+1)
		case '}':
			return e, skipSpace(data, i+1) == len(data)
		default:
			return e, false
		}
	}
}

func skipSpace(data []byte, i int) int {
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

// skipValue returns the end of the JSON value at data[i:], or false when
// there is none there (or it nests deeper than maxScanDepth).
func skipValue(data []byte, i, depth int) (int, bool) {
	if i >= len(data) {
		return 0, false
	}
	switch c := data[i]; {
	case c == '"':
		return skipString(data, i)
	case c == '-' || c >= '0' && c <= '9':
		return skipNumber(data, i)
	case c == 't':
		return skipLiteral(data, i, "true")
	case c == 'f':
		return skipLiteral(data, i, "false")
	case c == 'n':
		return skipLiteral(data, i, "null")
	case c == '[':
		if depth >= maxScanDepth {
			return 0, false
		}
		i = skipSpace(data, i+1)
		if i < len(data) && data[i] == ']' {
			return i + 1, true
		}
		for {
			end, ok := skipValue(data, i, depth+1)
			if !ok {
				return 0, false
			}
			i = skipSpace(data, end)
			if i >= len(data) {
				return 0, false
			}
			switch data[i] {
			case ',':
				i = skipSpace(data, i+1)
			case ']':
				return i + 1, true
			default:
				return 0, false
			}
		}
	case c == '{':
		if depth >= maxScanDepth {
			return 0, false
		}
		i = skipSpace(data, i+1)
		if i < len(data) && data[i] == '}' {
			return i + 1, true
		}
		for {
			if i >= len(data) || data[i] != '"' {
				return 0, false
			}
			end, ok := skipString(data, i)
			if !ok {
				return 0, false
			}
			i = skipSpace(data, end)
			if i >= len(data) || data[i] != ':' {
				return 0, false
			}
			end, ok = skipValue(data, skipSpace(data, i+1), depth+1)
			if !ok {
				return 0, false
			}
			i = skipSpace(data, end)
			if i >= len(data) {
				return 0, false
			}
			switch data[i] {
			case ',':
				i = skipSpace(data, i+1)
			case '}':
				return i + 1, true
			default:
				return 0, false
			}
		}
	}
	return 0, false
}

// skipString returns the end of the string at data[i] (a quote): any byte
// but a control character, and escapes as JSON has them.
func skipString(data []byte, i int) (int, bool) {
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

// plainString is the value of a JSON string that decodes to its own bytes
// (no escape, valid UTF-8), and whether it is one.
func (s span) plainString(data []byte) (string, bool) {
	v := data[s.start:s.end]
	if len(v) < 2 || v[0] != '"' || v[len(v)-1] != '"' {
		return "", false
	}
	v = v[1 : len(v)-1]
	if bytes.IndexByte(v, '\\') >= 0 || !utf8.Valid(v) {
		return "", false
	}
	return string(v), true
}

// anyValue is the value json.Unmarshal gives an interface for the span
// when it is null, a plain string or a number; false for anything else.
func (s span) anyValue(data []byte) (any, bool) {
	v := data[s.start:s.end]
	switch c := v[0]; {
	case c == 'n':
		return nil, true
	case c == '"':
		return s.plainString(data)
	case c == '-' || c >= '0' && c <= '9':
		f, err := strconv.ParseFloat(string(v), 64)
		return f, err == nil
	}
	return nil, false
}

// rawCopies copies the spans' bytes into one allocation, each
// json.RawMessage capped to its own bytes (nil for an absent span), as
// json.RawMessage's UnmarshalJSON copies each.
func rawCopies(data []byte, spans ...span) []json.RawMessage {
	n := 0
	for _, s := range spans {
		n += s.end - s.start
	}
	buf := make([]byte, 0, n)
	out := make([]json.RawMessage, len(spans))
	for k, s := range spans {
		if !s.present() {
			continue
		}
		at := len(buf)
		buf = append(buf, data[s.start:s.end]...)
		out[k] = json.RawMessage(buf[at:len(buf):len(buf)])
	}
	return out
}

// envelopeStrings reads the version and method as strings (absent: ""),
// when both are plain strings.
func (e *envelopeScan) envelopeStrings(data []byte) (jsonrpc, method string, ok bool) {
	if e.jsonrpcN > 1 {
		return "", "", false
	}
	ok = true
	if e.jsonrpc.present() {
		jsonrpc, ok = e.jsonrpc.plainString(data)
	}
	if ok {
		method, ok = e.methodString(data)
	}
	return jsonrpc, method, ok
}

// methodString reads the method as a string (absent: ""), when it is a
// plain one.
func (e *envelopeScan) methodString(data []byte) (string, bool) {
	switch e.methodN {
	case 0:
		return "", true
	case 1:
		return e.method.plainString(data)
	}
	return "", false
}

// anyID reads the id as json.Unmarshal into an interface would (absent:
// nil).
func (e *envelopeScan) anyID(data []byte) (any, bool) {
	switch e.idN {
	case 0:
		return nil, true
	case 1:
		return e.id.anyValue(data)
	}
	return nil, false
}

// decodePostEnvelope decodes a POST's envelope as json.Unmarshal into
// env does (item 23).
func decodePostEnvelope(data []byte, env *postEnvelope) error {
	if e, ok := scanEnvelope(data); ok {
		if method, ok := e.methodString(data); ok {
			raw := rawCopies(data, e.jsonrpc, e.id, e.result, e.error, e.params)
			*env = postEnvelope{JSONRPC: raw[0], ID: raw[1], Result: raw[2], Error: raw[3], Method: mcp.MCPMethod(method),
				Params: paramsMember{raw: raw[4], n: e.paramsN}}
			return nil
		}
	}
	*env = postEnvelope{}
	return json.Unmarshal(data, env)
}

// decodeStdioEnvelope decodes a line's envelope as json.Unmarshal into env
// does (item 23), its error included.
func decodeStdioEnvelope(data []byte, env *stdioEnvelope) error {
	if e, ok := scanEnvelope(data); ok {
		method, ok := e.methodString(data)
		id, idOK := e.anyID(data)
		if ok && idOK {
			raw := rawCopies(data, e.jsonrpc, e.result, e.error, e.params)
			*env = stdioEnvelope{JSONRPC: raw[0], ID: id, Method: mcp.MCPMethod(method), Result: raw[1], Error: raw[2],
				Params: paramsMember{raw: raw[3], n: e.paramsN}}
			return nil
		}
	}
	*env = stdioEnvelope{}
	return json.Unmarshal(data, env)
}

// scanBaseMessage reads HandleMessage's view of a message's envelope as
// json.Unmarshal into its struct would (item 23), and false, having set
// nothing, when it cannot: the version and method as strings, the id as
// an interface, the params. A message with a result (a response, which
// HandleMessage decodes into an interface) is left to json.Unmarshal.
func scanBaseMessage(data []byte, jsonrpc *string, method *mcp.MCPMethod, id *any, params *paramsMember) bool {
	e, ok := scanEnvelope(data)
	if !ok || e.result.present() {
		return false
	}
	v, m, ok := e.envelopeStrings(data)
	if !ok {
		return false
	}
	i, ok := e.anyID(data)
	if !ok {
		return false
	}
	raw := rawCopies(data, e.params)
	*jsonrpc, *method, *id = v, mcp.MCPMethod(m), i
	*params = paramsMember{raw: raw[0], n: e.paramsN}
	return true
}

// decodeID decodes a POST's raw id into an interface as json.Unmarshal
// does (item 23), errors ignored as its caller ignored them.
func decodeID(raw json.RawMessage) (id any) {
	if len(raw) == 0 {
		return nil
	}
	if v, ok := (span{0, len(raw)}).anyValue(raw); ok {
		return v
	}
	_ = json.Unmarshal(raw, &id)
	return id
}
