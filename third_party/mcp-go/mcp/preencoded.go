package mcp

import (
	"encoding/json"
	"math"
	"strconv"
)

// toolgate patch: results that arrive encoded.
//
// encoding/json checks and copies again the output of every
// json.Marshaler it calls, at every level. For a result that is mostly
// bytes encoded once and kept (a listing of thousands of tools, say),
// that check costs more than making the result. A result that
// implements PreEncoded is written by the transports as it encodes
// itself (MarshalMessage), without that second pass.

// PreEncoded is a result that appends its own encoding to dst: valid,
// compact JSON, with HTML characters escaped, as encoding/json would
// write the same value. It should also implement json.Marshaler (or
// encode the same through encoding/json), for any other path.
type PreEncoded interface {
	AppendJSON(dst []byte) ([]byte, error)
}

// MarshalMessage encodes a JSON-RPC message as json.Marshal does, except
// that a response's PreEncoded result is written as it encodes itself.
// The transports write every message they send through it.
func MarshalMessage(msg any) ([]byte, error) {
	var resp JSONRPCResponse
	switch m := msg.(type) {
	case JSONRPCResponse:
		resp = m
	case *JSONRPCResponse:
		if m == nil {
			return json.Marshal(msg)
		}
		resp = *m
	default:
		return json.Marshal(msg)
	}
	pe, ok := resp.Result.(PreEncoded)
	if !ok {
		return json.Marshal(msg)
	}
	// The members in JSONRPCResponse's order.
	size := 96
	if h, ok := pe.(interface{ sizeHint() int }); ok {
		size += h.sizeHint()
	}
	b := make([]byte, 0, size)
	b = append(b, `{"jsonrpc":`...)
	b, err := appendPlainOr(b, resp.JSONRPC)
	if err != nil {
		return nil, err
	}
	b = append(b, `,"id":`...)
	if b, err = appendPlainOr(b, resp.ID.value); err != nil {
		return nil, err
	}
	b = append(b, `,"result":`...)
	if b, err = pe.AppendJSON(b); err != nil {
		return nil, err
	}
	return append(b, '}'), nil
}

// appendPlainOr appends v as json.Marshal encodes it: by appendPlain when
// it can, else by json.Marshal. toolgate patch, for speed (item 25): a
// response's version and ID, each encoded by json.Marshal (reflection, an
// allocation each), are a plain string or an integer nearly always.
func appendPlainOr(b []byte, v any) ([]byte, error) {
	if out, ok := appendPlain(b, v); ok {
		return out, nil
	}
	enc, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return append(b, enc...), nil
}

// appendPlain appends v's encoding as json.Marshal writes it, for null, a
// string of printable ASCII that json.Marshal leaves unescaped (no quote,
// backslash or HTML character), an integer, and a float64 holding an
// integer below 1e15 in magnitude (not -0, which json.Marshal writes
// "-0"); false for anything else. FuzzToolgateAppendPlain holds it to
// json.Marshal.
func appendPlain(b []byte, v any) ([]byte, bool) {
	switch x := v.(type) {
	case nil:
		return append(b, "null"...), true
	case string:
		if !plainJSONString(x) {
			return b, false
		}
		b = append(b, '"')
		b = append(b, x...)
		return append(b, '"'), true
	case int64:
		return strconv.AppendInt(b, x, 10), true
	case int:
		return strconv.AppendInt(b, int64(x), 10), true
	case float64:
		if x == math.Trunc(x) && math.Abs(x) < 1e15 && (x != 0 || !math.Signbit(x)) {
			return strconv.AppendInt(b, int64(x), 10), true
		}
	}
	return b, false
}

// AppendRequest appends the JSON-RPC request of version jsonrpc, id,
// method and params as json.Marshal encodes the client transports'
// request (transport.JSONRPCRequest: its members in that order), with the
// params written as they encode themselves. toolgate patch, for speed
// (item 36): a client's request was encoded by reflection, its params'
// own json.RawMessage members checked and compacted again, and its ID by
// a json.Marshal of its own.
func AppendRequest(b []byte, jsonrpc string, id RequestId, method string, params PreEncoded) ([]byte, error) {
	b = append(b, `{"jsonrpc":`...)
	b = AppendJSONString(b, jsonrpc)
	b = append(b, `,"id":`...)
	b, err := appendPlainOr(b, id.value)
	if err != nil {
		return nil, err
	}
	b = append(b, `,"method":`...)
	b = AppendJSONString(b, method)
	b = append(b, `,"params":`...)
	if b, err = params.AppendJSON(b); err != nil {
		return nil, err
	}
	return append(b, '}'), nil
}
