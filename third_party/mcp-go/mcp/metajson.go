package mcp

import (
	"encoding/json"
	"slices"

	"github.com/mark3labs/mcp-go/jsonscan"
)

// toolgate patch: a _meta object encoded without reflection.
//
// json.Marshal of a map[string]any sorts the keys through reflection and
// encodes each value through an interface encoder; for the few string
// members a result's _meta usually has, that is most of the cost of
// encoding the result. appendMetaMembers writes the same bytes as
// json.Marshal(fields): keys in sorted order, and each value as
// encoding/json writes it. A key or string value made only of printable
// ASCII that JSON need not escape (encoding/json escapes <, > and & too)
// is written as it is, true, false and null as themselves, a
// map[string]any (item 75: toolgate's tools/list _meta carries the
// policy's decision as one) and a []string member by the same rules, a
// few levels deep; any other value is encoded by json.Marshal. toolgate's
// gateway/mcpgo_patch_test.go compares the results and tools encoded with
// it to mcp-go v1.2.1's encodings (TestCallToolResultEncodesAsBefore,
// TestToolEncodesAsBefore and their fuzz targets).
func appendMetaMembers(b []byte, fields map[string]any) ([]byte, error) {
	return appendMetaObject(b, fields, 0)
}

// metaDepth is how deep appendMetaObject encodes maps itself; a deeper one
// goes to json.Marshal, which also refuses a map that holds itself.
const metaDepth = 4

func appendMetaObject(b []byte, fields map[string]any, depth int) ([]byte, error) {
	var room [8]string
	keys := room[:0]
	for k := range fields {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	b = append(b, '{')
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = AppendJSONString(b, k)
		b = append(b, ':')
		switch v := fields[k].(type) {
		case string:
			b = AppendJSONString(b, v)
			continue
		case bool:
			if v {
				b = append(b, "true"...)
			} else {
				b = append(b, "false"...)
			}
			continue
		case nil:
			b = append(b, "null"...)
			continue
		case map[string]any:
			if v == nil {
				b = append(b, "null"...)
				continue
			}
			if depth < metaDepth {
				var err error
				if b, err = appendMetaObject(b, v, depth+1); err != nil {
					return nil, err
				}
				continue
			}
		case []string:
			if v == nil {
				b = append(b, "null"...)
				continue
			}
			b = append(b, '[')
			for i, s := range v {
				if i > 0 {
					b = append(b, ',')
				}
				b = AppendJSONString(b, s)
			}
			b = append(b, ']')
			continue
		}
		enc, err := json.Marshal(fields[k])
		if err != nil {
			return nil, err
		}
		b = append(b, enc...)
	}
	return append(b, '}'), nil
}

// appendMeta appends m as Meta.MarshalJSON encodes it, in place when it
// has no progress token (the members alone).
func appendMeta(b []byte, m *Meta) ([]byte, error) {
	if m.ProgressToken == nil && m.AdditionalFields != nil {
		return appendMetaMembers(b, m.AdditionalFields)
	}
	enc, err := m.MarshalJSON()
	if err != nil {
		return nil, err
	}
	return append(b, enc...), nil
}

// appendContent appends the encoding of one content block as
// json.Marshal writes it: a text block with no annotations and no _meta
// (the common case) directly, any other by json.Marshal.
func appendContent(b []byte, c Content) ([]byte, error) {
	if t, ok := c.(TextContent); ok && t.Annotations == nil && t.Meta == nil {
		b = append(b, `{"type":`...)
		b = AppendJSONString(b, t.Type)
		b = append(b, `,"text":`...)
		b = AppendJSONString(b, t.Text)
		return append(b, '}'), nil
	}
	enc, err := json.Marshal(c)
	if err != nil {
		return nil, err
	}
	return append(b, enc...), nil
}

// AppendJSONString appends s as encoding/json writes it (HTML escaping
// on): as it is between quotes when it is plain, else by json.Marshal.
// toolgate's own encoders use it too (adapters/upstream's callParams).
func AppendJSONString(b []byte, s string) []byte {
	if plainJSONString(s) {
		b = append(b, '"')
		b = append(b, s...)
		return append(b, '"')
	}
	enc, _ := json.Marshal(s) // a string always encodes
	return append(b, enc...)
}

// appendJSONMember appends ,"name": and v's encoding by json.Marshal.
func appendJSONMember(b []byte, name string, v any) ([]byte, error) {
	enc, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	b = append(b, ',', '"')
	b = append(b, name...)
	b = append(b, '"', ':')
	return append(b, enc...), nil
}

// appendRawMember is appendJSONMember of a json.RawMessage, by
// AppendJSONRaw (toolgate patch, item 70).
func appendRawMember(b []byte, name string, raw json.RawMessage) ([]byte, error) {
	b = append(b, ',', '"')
	b = append(b, name...)
	b = append(b, '"', ':')
	return AppendJSONRaw(b, raw)
}

// AppendJSONRaw appends raw as encoding/json writes a json.RawMessage
// (HTML escaping on): as it is when it is one valid value with no
// whitespace outside its strings and nothing json escapes (writtenAsIs),
// else by json.Marshal, which checks, compacts and escapes it, and fails
// where it is not JSON. toolgate patch, for speed (item 36): a tool's
// arguments sent upstream and a result's structured content are such
// values nearly always.
func AppendJSONRaw(b []byte, raw json.RawMessage) ([]byte, error) {
	if raw == nil {
		return append(b, "null"...), nil // as RawMessage.MarshalJSON
	}
	if writtenAsIs(raw) {
		return append(b, raw...), nil
	}
	enc, err := json.Marshal(raw)
	if err != nil {
		return nil, err
	}
	return append(b, enc...), nil
}

// writtenAsIs tells JSON that encoding/json writes unchanged: one valid
// value (read as its scanner reads it) with no whitespace outside its
// strings to compact away and nothing it escapes (the HTML characters,
// U+2028 and U+2029: any byte outside ASCII is left to json, which covers
// the two).
func writtenAsIs(raw []byte) bool {
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

// plainJSONString reports whether s is written in JSON as it is, between
// quotes, by encoding/json (HTML escaping on).
func plainJSONString(s string) bool {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c < 0x20, c >= 0x7f, c == '"', c == '\\', c == '<', c == '>', c == '&':
			return false
		}
	}
	return true
}

// maxScannedMeta bounds the _meta objects decodeMetaObject reads: a
// request's envelope is a few hundred bytes, and each nested object is
// scanned again when it is decoded.
const maxScannedMeta = 4096

// decodeMetaObject decodes a _meta object into a map of interface values
// as json.Unmarshal into a map[string]any does (toolgate patch, for speed,
// item 27), by jsonscan.DecodeObject: false, leaving the object to
// json.Unmarshal, for anything it cannot decode exactly so, and for an
// object larger than maxScannedMeta. FuzzToolgateMetaUnmarshal holds it to
// json.Unmarshal.
func decodeMetaObject(data []byte) (map[string]any, bool) {
	if len(data) > maxScannedMeta {
		return nil, false
	}
	return jsonscan.DecodeObject(data, false)
}
