package upstream

import (
	"encoding/json"

	"github.com/mark3labs/mcp-go/jsonscan"
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
// json.Marshal encodes them. The common call, a name and arguments that
// json.Marshal would leave as they are (sentAsIs), is written directly;
// any other (a _meta, a task, a name or arguments json would escape or
// compact) is json.Marshal's. FuzzCallParamsAppendJSON holds the two to
// the same bytes, and the same failure.
func (p *callParams) AppendJSON(b []byte) ([]byte, error) {
	if p == nil {
		return append(b, "null"...), nil
	}
	if len(p.Meta) == 0 && p.Task == nil && plainName(p.Name) && sentAsIs(p.Arguments) {
		b = append(b, `{"name":"`...)
		b = append(b, p.Name...)
		b = append(b, `","arguments":`...)
		b = append(b, p.Arguments...)
		return append(b, '}'), nil
	}
	enc, err := json.Marshal(p)
	if err != nil {
		return nil, err
	}
	return append(b, enc...), nil
}

// plainName tells a name json.Marshal writes as its own bytes in quotes:
// printable ASCII without the quote, the backslash and the characters it
// escapes for HTML.
func plainName(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return false
		}
	}
	return true
}

// sentAsIs tells arguments json.Marshal writes unchanged: one valid JSON
// value (read as encoding/json's scanner reads it) with no whitespace
// outside its strings to compact away and nothing json escapes when it
// writes a json.RawMessage (the HTML characters, U+2028 and U+2029; any
// byte outside ASCII is left to json, which covers the two).
func sentAsIs(raw []byte) bool {
	if end, ok := jsonscan.SkipValue(raw, 0, 0); !ok || end != len(raw) {
		return false
	}
	in := false // in a string
	for i := 0; i < len(raw); i++ {
		switch c := raw[i]; {
		case c >= 0x80 || c == '<' || c == '>' || c == '&':
			return false
		case in && c == '\\':
			i++ // the escaped byte: it neither ends the string nor is space
		case c == '"':
			in = !in
		case !in && (c == ' ' || c == '\t' || c == '\n' || c == '\r'):
			return false
		}
	}
	return true
}
