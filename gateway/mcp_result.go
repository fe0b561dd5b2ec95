package gateway

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/mark3labs/mcp-go/jsonscan"
	"github.com/mark3labs/mcp-go/mcp"
)

// The mapping of a [Result] onto an MCP tools/call result and back:
//
//	Result.Output                   -> content blocks
//	Result.Message                  -> one more text block, after the output
//	Result.IsError                  -> isError
//	Result.Structured               -> structuredContent (with the tool's outputSchema)
//	display, brief, extras, kind    -> _meta["toolgate/display"|"toolgate/brief"|"toolgate/extras"|"toolgate/kind"]
//
// [ResultFromMCP] is the reverse, so a toolgate behind a toolgate loses
// nothing.

// Keys of toolgate's members in a result's _meta.
const (
	MetaDisplay = "toolgate/display"
	MetaBrief   = "toolgate/brief"
	MetaExtras  = "toolgate/extras"
	MetaKind    = "toolgate/kind"
	MetaMessage = "toolgate/message"
	MetaCallID  = "toolgate/call_id"
)

// rawContent is an MCP content block given as JSON. Embedding TextContent
// makes it an mcp.Content; MarshalJSON sends the bytes unchanged.
type rawContent struct {
	mcp.TextContent
	raw json.RawMessage
}

func (c rawContent) MarshalJSON() ([]byte, error) { return c.raw, nil }

// ToMCPResult maps a Result onto an MCP tools/call result. callID, when
// not empty, is sent in _meta so that a client can find the call's record.
func ToMCPResult(callID string, res *Result) *mcp.CallToolResult {
	if res.Kind == KindInputRequired {
		return inputRequiredResult(callID, res)
	}
	// The result, its _meta and room for two content blocks (the common
	// case: one output part and the message) in one allocation.
	room := &struct {
		out     mcp.CallToolResult
		meta    mcp.Meta
		content [2]mcp.Content
	}{}
	out := &room.out
	out.IsError = res.IsError
	if n := len(res.Output) + 1; n <= len(room.content) {
		out.Content = room.content[:0:n]
	} else {
		out.Content = make([]mcp.Content, 0, n)
	}
	for _, p := range res.Output {
		if t, ok := p.(TextPart); ok && len(t.Annotations) == 0 && len(t.Meta) == 0 {
			out.Content = append(out.Content, mcp.NewTextContent(t.Text))
			continue
		}
		b, err := marshalNoEscape(p)
		if err != nil {
			b, _ = json.Marshal(map[string]string{"type": "text", "text": fmt.Sprintf("[content block could not be encoded: %v]", err)})
		}
		out.Content = append(out.Content, rawContent{raw: b})
	}
	if res.Message != "" {
		out.Content = append(out.Content, mcp.NewTextContent(res.Message))
	}
	if len(res.Structured) > 0 {
		out.RawStructuredContent = res.Structured
	}
	meta := make(map[string]any, len(res.Meta)+6)
	for k, v := range res.Meta {
		meta[k] = v
	}
	// A display that is only the brief travels as toolgate/brief alone.
	if len(res.Display) > 1 || (len(res.Display) == 1 && res.Display[0].BlockType() != BlockBrief) {
		if b, err := marshalNoEscape(res.Display); err == nil {
			meta[MetaDisplay] = json.RawMessage(b)
		}
	}
	if brief := res.Brief(); brief != "" {
		meta[MetaBrief] = brief
	}
	if len(res.Extras) > 0 {
		if b, err := marshalNoEscape(res.Extras); err == nil {
			meta[MetaExtras] = json.RawMessage(b)
		}
	}
	if res.Kind != "" {
		meta[MetaKind] = string(res.Kind)
	}
	if res.Message != "" {
		meta[MetaMessage] = res.Message
	}
	if callID != "" {
		meta[MetaCallID] = callID
	}
	if len(meta) > 0 {
		room.meta.AdditionalFields = meta
		out.Meta = &room.meta
	}
	return out
}

// ResultFromMCP maps the JSON of an MCP tools/call result back onto a
// Result: the reverse of [ToMCPResult]. Content blocks of every type and
// _meta members that are not toolgate's pass through unchanged; toolgate's
// own _meta members become display blocks (unknown types kept), brief,
// extras and kind again, and the message block is separated from the
// output.
func ResultFromMCP(data []byte) (*Result, error) {
	// One pass reads the result and splits its content into blocks: a
	// scan where it can (scanResult), else json.
	var wire resultWire
	if !scanResult(data, &wire) {
		// Afresh: json would append to the content the scan left, whose
		// blocks are slices of data.
		wire = resultWire{}
		if err := json.Unmarshal(data, &wire); err != nil {
			return nil, fmt.Errorf("decoding tool result: %w", err)
		}
	}
	return wire.result()
}

// result is the Result of a decoded tools/call result ([ResultFromMCP]).
func (wire *resultWire) result() (*Result, error) {
	res := &Result{IsError: wire.IsError}
	var brief string
	if wire.Content != nil { // absent or null: nil
		parts, err := partsPassthrough(wire.Content)
		if err != nil {
			return nil, err
		}
		res.Output = parts
	}
	if len(wire.StructuredContent) > 0 && !bytes.Equal(wire.StructuredContent, []byte("null")) {
		res.Structured = wire.StructuredContent
	}
	for k, v := range wire.Meta {
		switch k {
		case MetaDisplay:
			blocks, err := unmarshalDisplay(v)
			if err != nil {
				return nil, err
			}
			res.Display = blocks
		case MetaExtras:
			if err := json.Unmarshal(v, &res.Extras); err != nil {
				return nil, fmt.Errorf("decoding %s: %w", MetaExtras, err)
			}
		case MetaKind:
			var s string
			_ = json.Unmarshal(v, &s)
			res.Kind = Kind(s)
		case MetaMessage:
			_ = json.Unmarshal(v, &res.Message)
		case MetaBrief:
			_ = json.Unmarshal(v, &brief)
		case MetaCallID:
			// the upstream's own call ID
		default:
			if res.Meta == nil {
				res.Meta = map[string]json.RawMessage{}
			}
			res.Meta[k] = v
		}
	}
	if brief != "" && len(res.Display) == 0 {
		res.Display = []DisplayBlock{BriefBlock{Text: brief}}
	}
	// The message travels as the last text block; take it back out.
	if res.Message != "" && len(res.Output) > 0 {
		if t, ok := res.Output[len(res.Output)-1].(TextPart); ok && t.Text == res.Message {
			res.Output = res.Output[:len(res.Output)-1]
		}
	}
	if res.IsError && !upstreamKinds[res.Kind] {
		// No kind, or one toolgate does not know (a newer toolgate's, or
		// made up): a tool error. Kinds are a fixed set, and a status of
		// records and a label of metrics: an upstream must not add to it.
		res.Kind = KindToolError
	}
	if !res.IsError {
		res.Kind = ""
	}
	return res, nil
}

// upstreamKinds are the kinds an error result of tools/call may name in its
// _meta (what [ToMCPResult] writes of an error).
var upstreamKinds = map[Kind]bool{
	KindToolError: true, KindNotFound: true, KindParse: true, KindInvalid: true, KindDenied: true,
	KindTimeout: true, KindCancelled: true, KindRuntime: true, KindUnavailable: true,
}

// resultWire is what [ResultFromMCP] reads of a tools/call result.
type resultWire struct {
	Content           []json.RawMessage          `json:"content"`
	StructuredContent json.RawMessage            `json:"structuredContent"`
	IsError           bool                       `json:"isError"`
	Meta              map[string]json.RawMessage `json:"_meta"`
}

// resultMembers are resultWire's JSON names, in jsonscan.Fields' order.
var resultMembers = []string{"content", "structuredContent", "isError", "_meta"}

// scanResult fills w from data as json.Unmarshal would, without
// reflection: every upstream call's result passes here, and json spent a
// microsecond and fourteen allocations on the smallest one. It is false,
// leaving data to json.Unmarshal, wherever it could differ: what
// jsonscan.Fields refuses (a name in another case or repeated, an escaped
// or non-ASCII name, deep nesting), and a member of another type than its
// field's, whose error json reports. The content blocks are slices of
// data (partsPassthrough copies what it keeps); structuredContent and the
// _meta values are copied, as json's RawMessage does, since the Result
// keeps them. FuzzResultScan holds it to json.Unmarshal.
func scanResult(data []byte, w *resultWire) bool {
	return jsonscan.Fields(data, resultMembers, func(i, start, end int) bool {
		v := data[start:end]
		null := string(v) == "null"
		switch i {
		case 0: // content
			if null {
				return true
			}
			w.Content = []json.RawMessage{}
			return jsonscan.Elements(v, func(s, e int) bool {
				w.Content = append(w.Content, v[s:e])
				return true
			})
		case 1: // structuredContent
			w.StructuredContent = bytes.Clone(v)
		case 2: // isError
			switch string(v) {
			case "true", "false":
				w.IsError = v[0] == 't'
			default:
				return null
			}
		case 3: // _meta
			if null {
				return true
			}
			w.Meta = map[string]json.RawMessage{}
			return jsonscan.Object(v, func(name []byte, s, e int) bool {
				w.Meta[string(name)] = bytes.Clone(v[s:e])
				return true
			})
		}
		return true
	})
}

// inputRequiredResult is a round that needs the client's answers: a
// tools/call result of resultType input_required with the requests and the
// state, and no content (a result may not carry both).
func inputRequiredResult(callID string, res *Result) *mcp.CallToolResult {
	reqs, err := inputRequests(res.InputRequests)
	if err != nil {
		return ToMCPResult(callID, RuntimeErrorResult("", err))
	}
	out := &mcp.CallToolResult{
		Result:               mcp.Result{ResultType: mcp.ResultTypeInputRequired},
		MultiRoundTripResult: mcp.MultiRoundTripResult{InputRequests: reqs, RequestState: res.RequestState},
	}
	out.Meta = mcp.NewMetaFromMap(map[string]any{MetaCallID: callID, MetaKind: string(KindInputRequired)})
	return out
}
