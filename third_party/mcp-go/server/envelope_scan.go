package server

import (
	"bytes"
	"encoding/json"
	"strconv"

	"github.com/mark3labs/mcp-go/jsonscan"
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
// one of the envelope's only in another case, through an escape or a byte
// outside ASCII (json matches those too); a method, version or id that is
// escaped, of another type or met twice; a result, for HandleMessage;
// nesting deeper than jsonscan.MaxDepth; any input that is not valid JSON.
// What it takes it reads as json.Unmarshal: the last of a repeated raw
// member, every "params" counted (paramsMember), raw values byte for
// byte. FuzzToolgateEnvelope holds each envelope it fills to
// json.Unmarshal's.

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
	ok := jsonscan.Object(data, func(name []byte, start, end int) bool {
		v := span{start, end}
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
					return false // json matches it to n
				}
			}
		}
		return true
	})
	return e, ok
}

// of is the span's bytes in data.
func (s span) of(data []byte) []byte { return data[s.start:s.end] }

// anyValue is the value json.Unmarshal gives an interface for the JSON
// value v when it is null, a plain string (jsonscan.PlainString) or a
// number; false for anything else.
func anyValue(v []byte) (any, bool) {
	switch c := v[0]; {
	case c == 'n':
		return nil, true
	case c == '"':
		return jsonscan.PlainString(v)
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
		jsonrpc, ok = jsonscan.PlainString(e.jsonrpc.of(data))
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
		return jsonscan.PlainString(e.method.of(data))
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
		return anyValue(e.id.of(data))
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

// decodeID decodes a message's raw id (absent: nil) into an interface as
// json.Unmarshal does, and whether json.Unmarshal would decode it without
// an error (item 23).
func decodeID(raw json.RawMessage) (any, bool) {
	if len(raw) == 0 {
		return nil, true
	}
	if v, ok := anyValue(raw); ok {
		return v, true
	}
	var id any // on the heap (json's pointer to it) only on this path
	err := json.Unmarshal(raw, &id)
	return id, err == nil
}

// decoded is the envelope as HandleMessage takes it from a transport, the
// id decoded (decodeID).
func (env *postEnvelope) decoded(message []byte, id any) *decodedEnvelope {
	return &decodedEnvelope{message: message, jsonrpc: env.JSONRPC, method: env.Method,
		id: id, result: env.Result, params: env.Params}
}
