package server

import (
	"bytes"
	"context"
	"encoding/json"

	"github.com/mark3labs/mcp-go/jsonscan"
	"github.com/mark3labs/mcp-go/mcp"
)

// baseMessageFields is the envelope HandleMessage reads of every message
// (a named type since item 42, so that its fallback decodes into a copy).
type baseMessageFields struct {
	JSONRPC string        `json:"jsonrpc"`
	Method  mcp.MCPMethod `json:"method"`
	ID      any           `json:"id,omitempty"`
	Result  any           `json:"result,omitempty"`
	Params  paramsMember  `json:"params"` // toolgate patch, item 17
}

// toolgate patch, for speed: the streamable HTTP transport decodes each
// POST's JSON-RPC envelope to route it, and HandleMessage decoded the same
// members of the same bytes again (a pass over the whole message and
// several allocations). The transport now hands over what it decoded, in the
// context, and HandleMessage takes it for exactly that message.

// decodedEnvelope is what a transport decoded of a message: the members
// HandleMessage's own decoding reads, each decoded as it decodes them.
type decodedEnvelope struct {
	message []byte          // the bytes decoded
	jsonrpc json.RawMessage // "jsonrpc", not yet decoded (absent: nil)
	method  mcp.MCPMethod
	id      any             // "id" decoded into an interface value
	result  json.RawMessage // "result" (absent: nil)
	params  paramsMember    // "params", as met (item 17)
}

// paramsMember is a message's "params" kept raw while the envelope is
// decoded, counting each member json.Unmarshal matched to it (the name in
// another case or escaped included). toolgate patch, for speed (item 17):
// a tools/call request is then decoded from these bytes alone, not from
// the whole message once more, when there was at most one.
type paramsMember struct {
	raw json.RawMessage
	n   int

	// Where the message's 2026-07-28 envelope can be, as envelopeMeta
	// found it (item 26), kept so that the transport's look for the era
	// and HandleMessage's for the envelope pass over the message once.
	looked, mayHold, metaOK bool
	meta                    []byte
}

func (p *paramsMember) UnmarshalJSON(b []byte) error {
	p.raw = append(p.raw[:0], b...)
	p.n++
	p.looked, p.mayHold, p.metaOK, p.meta = false, false, false, nil
	return nil
}

type decodedEnvelopeKey struct{}

func withDecodedEnvelope(ctx context.Context, env *decodedEnvelope) context.Context {
	return context.WithValue(ctx, decodedEnvelopeKey{}, env)
}

// decodedEnvelopeOf returns the envelope in ctx if it was decoded from
// message itself (the same bytes in memory), or nil.
func decodedEnvelopeOf(ctx context.Context, message []byte) *decodedEnvelope {
	env, _ := ctx.Value(decodedEnvelopeKey{}).(*decodedEnvelope)
	if env == nil || len(message) == 0 || len(env.message) != len(message) || &env.message[0] != &message[0] {
		return nil
	}
	return env
}

// base fills HandleMessage's view of the envelope as json.Unmarshal into
// it would: the version decoded into a string (a type error is the same
// parse error), the result present unless absent or null.
func (env *decodedEnvelope) base(jsonrpc *string, method *mcp.MCPMethod, id *any, hasResult *bool) error {
	if len(env.jsonrpc) > 0 {
		if v, ok := jsonscan.PlainString(env.jsonrpc); ok { // item 23
			*jsonrpc = v
		} else {
			var v string // not jsonrpc itself, which would then escape (item 42)
			if err := json.Unmarshal(env.jsonrpc, &v); err != nil {
				return err
			}
			*jsonrpc = v
		}
	}
	*method, *id = env.method, env.id
	*hasResult = len(env.result) > 0 && !bytes.Equal(bytes.TrimSpace(env.result), []byte("null"))
	return nil
}

// decodeCallToolRequest decodes a tools/call request as
// mcp.UnmarshalCallToolRequest decodes message, from the method and params
// its envelope's decoding met: of the members that decoding fills, a
// request has only those two, and message is known to be valid JSON. With
// params met more than once, or bytes that do not decode (whose error
// json.Unmarshal words with the outer member's path), it decodes message
// itself, as before.
func decodeCallToolRequest(message []byte, method mcp.MCPMethod, params paramsMember, r *mcp.CallToolRequest, rawArgumentsOnly bool) error {
	if params.n <= 1 {
		var req mcp.CallToolRequest
		req.Method = string(method)
		if params.n == 0 || mcp.UnmarshalCallToolParams(params.raw, &req.Params, rawArgumentsOnly) == nil {
			*r = req
			return nil
		}
	}
	return mcp.UnmarshalCallToolRequest(message, r, rawArgumentsOnly)
}
