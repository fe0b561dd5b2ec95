package upstream

import (
	"encoding/json"

	"github.com/mark3labs/mcp-go/mcp"
)

// callParams are the params of a tools/call request to an upstream: a
// struct rather than a map[string]any, so that a call's request is
// encoded without a map's reflection and sorted keys (1.26 → 0.78 µs and
// 11 → 4 allocations for an echo call's request, encoding/json; measured
// in the commit that made it). Only the members set are sent.
//
// They encode themselves ([callParams.AppendJSON]), which the client
// transports of the patched mcp-go use to write the request without
// encoding/json (third_party/README.md, item 36).
type callParams struct {
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
	Meta      map[string]any  `json:"_meta,omitempty"`
	// Task is set (to an object, maybe empty) when the call runs as a
	// task; an interface so that an empty object is still sent.
	Task any `json:"task,omitempty"`
}

// members returns the params as a map, for a 2026-07-28 request, whose
// envelope and round are added to them (modern.go).
func (p *callParams) members() map[string]any {
	m := map[string]any{"name": p.Name, "arguments": p.Arguments}
	if len(p.Meta) > 0 {
		m["_meta"] = p.Meta
	}
	if p.Task != nil {
		m["task"] = p.Task
	}
	return m
}

// AppendJSON implements mcp.PreEncoded: it appends the params as
// json.Marshal encodes them. The common call, a name and arguments, is
// written member by member with the patched mcp-go's encoders (each as
// json.Marshal writes it, the arguments as they are where json would
// leave them so); one with a _meta or a task is json.Marshal's.
// FuzzCallParamsAppendJSON holds the two to the same bytes, and the same
// failure.
func (p *callParams) AppendJSON(b []byte) ([]byte, error) {
	if len(p.Meta) > 0 || p.Task != nil {
		enc, err := json.Marshal(p)
		if err != nil {
			return nil, err
		}
		return append(b, enc...), nil
	}
	b = append(b, `{"name":`...)
	b = mcp.AppendJSONString(b, p.Name)
	b = append(b, `,"arguments":`...)
	b, err := mcp.AppendJSONRaw(b, p.Arguments)
	if err != nil {
		return nil, err
	}
	return append(b, '}'), nil
}
