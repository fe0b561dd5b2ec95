package mcp

import "encoding/json"

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
	version, err := json.Marshal(resp.JSONRPC)
	if err != nil {
		return nil, err
	}
	id, err := json.Marshal(resp.ID)
	if err != nil {
		return nil, err
	}
	// The members in JSONRPCResponse's order.
	size := 64
	if h, ok := pe.(interface{ sizeHint() int }); ok {
		size += h.sizeHint()
	}
	b := make([]byte, 0, size+len(id))
	b = append(b, `{"jsonrpc":`...)
	b = append(b, version...)
	b = append(b, `,"id":`...)
	b = append(b, id...)
	b = append(b, `,"result":`...)
	if b, err = pe.AppendJSON(b); err != nil {
		return nil, err
	}
	return append(b, '}'), nil
}
