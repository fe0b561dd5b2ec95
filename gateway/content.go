package gateway

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"unicode/utf8"
)

// Part is one piece of a tool's output for the model: text, an image, audio,
// a link to a resource, or an embedded resource (the seeds' ContentPart).
//
// The JSON form of every Part is exactly the MCP content block of the same
// type, so the MCP mirror passes parts through without re-shaping them, and a
// part received from an upstream server re-encodes to the bytes it came with.
type Part interface {
	// PartType is the MCP content type: "text", "image", "audio",
	// "resource_link", "resource", or another type carried by [RawPart].
	PartType() string
}

// Content types known to the contract.
const (
	PartText         = "text"
	PartImage        = "image"
	PartAudio        = "audio"
	PartResourceLink = "resource_link"
	PartResource     = "resource"
)

// TextPart is plain text for the model.
type TextPart struct {
	Text        string          `json:"text"`
	Annotations json.RawMessage `json:"annotations,omitempty"`
	Meta        json.RawMessage `json:"_meta,omitempty"`
}

// ImagePart is an image. Data holds the raw bytes; JSON carries them base64.
type ImagePart struct {
	Data        []byte          `json:"data"`
	MIMEType    string          `json:"mimeType"`
	Annotations json.RawMessage `json:"annotations,omitempty"`
	Meta        json.RawMessage `json:"_meta,omitempty"`
}

// AudioPart is audio. Data holds the raw bytes; JSON carries them base64.
type AudioPart struct {
	Data        []byte          `json:"data"`
	MIMEType    string          `json:"mimeType"`
	Annotations json.RawMessage `json:"annotations,omitempty"`
	Meta        json.RawMessage `json:"_meta,omitempty"`
}

// ResourceLinkPart points at a resource the client can read with
// resources/read (the gateway uses it for artifacts).
type ResourceLinkPart struct {
	URI         string          `json:"uri"`
	Name        string          `json:"name"`
	Title       string          `json:"title,omitempty"`
	Description string          `json:"description,omitempty"`
	MIMEType    string          `json:"mimeType,omitempty"`
	Size        *int64          `json:"size,omitempty"`
	Annotations json.RawMessage `json:"annotations,omitempty"`
	Meta        json.RawMessage `json:"_meta,omitempty"`
}

// ResourcePart embeds the contents of a resource: Text for text resources,
// Blob for binary ones (exactly one of them is set).
type ResourcePart struct {
	Resource    ResourceContents `json:"resource"`
	Annotations json.RawMessage  `json:"annotations,omitempty"`
	Meta        json.RawMessage  `json:"_meta,omitempty"`
}

// ResourceContents is the body of an embedded resource.
type ResourceContents struct {
	URI      string          `json:"uri"`
	MIMEType string          `json:"mimeType,omitempty"`
	Text     *string         `json:"text,omitempty"`
	Blob     []byte          `json:"blob,omitempty"`
	Meta     json.RawMessage `json:"_meta,omitempty"`
}

// RawPart carries a content block the contract has no type for (a newer MCP
// content type, say). It keeps the block's JSON exactly and re-encodes it
// unchanged.
type RawPart struct {
	Type string
	JSON json.RawMessage
}

// PartType implements [Part].
func (TextPart) PartType() string { return PartText }

// PartType implements [Part].
func (ImagePart) PartType() string { return PartImage }

// PartType implements [Part].
func (AudioPart) PartType() string { return PartAudio }

// PartType implements [Part].
func (ResourceLinkPart) PartType() string { return PartResourceLink }

// PartType implements [Part].
func (ResourcePart) PartType() string { return PartResource }

// PartType implements [Part].
func (p RawPart) PartType() string { return p.Type }

// Text returns a [TextPart] holding s.
func Text(s string) Part { return TextPart{Text: s} }

// MarshalJSON encodes the part as its MCP content block.
func (p TextPart) MarshalJSON() ([]byte, error) {
	type plain TextPart
	return marshalTyped(PartText, plain(p))
}

// MarshalJSON encodes the part as its MCP content block.
func (p ImagePart) MarshalJSON() ([]byte, error) {
	type plain ImagePart
	return marshalTyped(PartImage, plain(p))
}

// MarshalJSON encodes the part as its MCP content block.
func (p AudioPart) MarshalJSON() ([]byte, error) {
	type plain AudioPart
	return marshalTyped(PartAudio, plain(p))
}

// MarshalJSON encodes the part as its MCP content block.
func (p ResourceLinkPart) MarshalJSON() ([]byte, error) {
	type plain ResourceLinkPart
	return marshalTyped(PartResourceLink, plain(p))
}

// MarshalJSON encodes the part as its MCP content block.
func (p ResourcePart) MarshalJSON() ([]byte, error) {
	type plain ResourcePart
	return marshalTyped(PartResource, plain(p))
}

// MarshalJSON returns the block's original JSON.
func (p RawPart) MarshalJSON() ([]byte, error) {
	if len(p.JSON) == 0 {
		return nil, fmt.Errorf("raw content part %q has no JSON", p.Type)
	}
	return p.JSON, nil
}

// marshalTyped encodes v with a leading "type" member.
func marshalTyped(typ string, v any) ([]byte, error) {
	body, err := marshalNoEscape(v)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	buf.Grow(len(body) + len(typ) + 12)
	buf.WriteString(`{"type":`)
	t, _ := json.Marshal(typ)
	buf.Write(t)
	if len(body) > 2 { // not "{}"
		buf.WriteByte(',')
		buf.Write(body[1:])
	} else {
		buf.WriteByte('}')
	}
	return buf.Bytes(), nil
}

// marshalNoEscape is json.Marshal without HTML escaping and without the
// trailing newline an Encoder adds.
func marshalNoEscape(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// UnmarshalPart decodes one MCP content block. Known types decode to their
// Part type; any other type decodes to a [RawPart] that keeps the bytes. A
// known type whose decoded form would not re-encode to the same members (an
// unexpected extra field, say) is also kept as a [RawPart], so nothing sent
// by an upstream server is ever lost on the way through.
func UnmarshalPart(data []byte) (Part, error) {
	var head struct {
		Type string `json:"type"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return nil, fmt.Errorf("decoding content block: %w", err)
	}
	if head.Type == "" {
		return nil, fmt.Errorf("decoding content block: missing \"type\"")
	}
	var p Part
	var err error
	switch head.Type {
	case PartText:
		var v TextPart
		err = json.Unmarshal(data, &v)
		p = v
	case PartImage:
		var v ImagePart
		err = json.Unmarshal(data, &v)
		p = v
	case PartAudio:
		var v AudioPart
		err = json.Unmarshal(data, &v)
		p = v
	case PartResourceLink:
		var v ResourceLinkPart
		err = json.Unmarshal(data, &v)
		p = v
	case PartResource:
		var v ResourcePart
		err = json.Unmarshal(data, &v)
		p = v
	default:
		return RawPart{Type: head.Type, JSON: bytes.Clone(data)}, nil
	}
	if err != nil {
		// A block that is valid JSON but does not fit our struct (a number
		// where a string belongs, say) is still passed through unchanged.
		return RawPart{Type: head.Type, JSON: bytes.Clone(data)}, nil
	}
	if !sameMembers(data, p) {
		return RawPart{Type: head.Type, JSON: bytes.Clone(data)}, nil
	}
	return p, nil
}

// sameMembers reports whether p re-encodes to JSON equal in meaning to data
// (same members, same values, any order), i.e. whether decoding lost nothing.
func sameMembers(data []byte, p Part) bool {
	out, err := json.Marshal(p)
	if err != nil {
		return false
	}
	return jsonEqual(data, out)
}

// jsonEqual reports whether a and b hold the same JSON value.
func jsonEqual(a, b []byte) bool {
	var va, vb any
	da := json.NewDecoder(bytes.NewReader(a))
	da.UseNumber()
	db := json.NewDecoder(bytes.NewReader(b))
	db.UseNumber()
	if da.Decode(&va) != nil || db.Decode(&vb) != nil {
		return false
	}
	return reflect.DeepEqual(va, vb)
}

// Typed returns p as its typed Part when p is a [RawPart] of a known type
// that decodes without loss; otherwise p itself. Results passed through
// from upstream servers keep their non-text blocks raw (decoding them all
// would cost every proxied call); code that needs the fields of such a
// block (the data of an image, say) asks for them with Typed.
func Typed(p Part) Part {
	r, ok := p.(RawPart)
	if !ok {
		return p
	}
	t, err := UnmarshalPart(r.JSON)
	if err != nil {
		return p
	}
	return t
}

// partsPassthrough decodes a content array's blocks for passing on: text
// blocks with no other members than text, annotations and _meta become
// [TextPart]s (the pipeline reads text: to summarize it, to tell the
// message apart); every other block is kept as a [RawPart], byte for byte.
// The blocks come as the result's decoding split them ([ResultFromMCP]);
// a text block written as mcp-go and most servers write it needs no
// decoding of its own ([plainTextBlock]), any other about two passes,
// where [UnmarshalPart] costs five.
func partsPassthrough(raws []json.RawMessage) ([]Part, error) {
	parts := make([]Part, 0, len(raws))
	for i, raw := range raws {
		if text, ok := plainTextBlock(raw); ok {
			parts = append(parts, TextPart{Text: text})
			continue
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(raw, &m); err != nil {
			return nil, fmt.Errorf("content[%d]: %w", i, err)
		}
		var typ string
		if err := json.Unmarshal(m["type"], &typ); err != nil || typ == "" {
			return nil, fmt.Errorf("content[%d]: missing \"type\"", i)
		}
		if typ == PartText {
			if t, ok := textFromMembers(m); ok {
				parts = append(parts, t)
				continue
			}
		}
		parts = append(parts, RawPart{Type: typ, JSON: bytes.Clone(raw)})
	}
	return parts, nil
}

// plainTextBlock returns the text of a block that is, byte for byte,
// {"type":"text","text":"..."} with a text needing no decoding (no escape,
// valid UTF-8): the same text decoding it would give. raw must be valid
// JSON (a member of a document json.Unmarshal has accepted).
func plainTextBlock(raw []byte) (string, bool) {
	const head, tail = `{"type":"text","text":"`, `"}`
	if len(raw) < len(head)+len(tail) || !bytes.HasPrefix(raw, []byte(head)) || !bytes.HasSuffix(raw, []byte(tail)) {
		return "", false
	}
	s := raw[len(head) : len(raw)-len(tail)]
	if bytes.IndexByte(s, '\\') >= 0 || bytes.IndexByte(s, '"') >= 0 || !utf8.Valid(s) {
		return "", false
	}
	return string(s), true
}

// textFromMembers builds a TextPart from a text block's members when it has
// no member the TextPart cannot carry.
func textFromMembers(m map[string]json.RawMessage) (TextPart, bool) {
	var t TextPart
	for k, v := range m {
		switch k {
		case "type":
		case "text":
			if json.Unmarshal(v, &t.Text) != nil {
				return TextPart{}, false
			}
		case "annotations":
			t.Annotations = bytes.Clone(v)
		case "_meta":
			t.Meta = bytes.Clone(v)
		default:
			return TextPart{}, false
		}
	}
	if _, ok := m["text"]; !ok {
		return TextPart{}, false
	}
	return t, true
}

// partsJSON is the JSON array of parts.
func partsJSON(parts []Part) ([]byte, error) {
	if len(parts) == 0 {
		return []byte("[]"), nil
	}
	return marshalNoEscape(parts)
}

// unmarshalParts decodes a JSON array of content blocks.
func unmarshalParts(data []byte) ([]Part, error) {
	var raws []json.RawMessage
	if err := json.Unmarshal(data, &raws); err != nil {
		return nil, fmt.Errorf("decoding content: %w", err)
	}
	parts := make([]Part, 0, len(raws))
	for i, r := range raws {
		p, err := UnmarshalPart(r)
		if err != nil {
			return nil, fmt.Errorf("content[%d]: %w", i, err)
		}
		parts = append(parts, p)
	}
	return parts, nil
}

// partSize is the number of bytes a part contributes to a result's size, as
// counted by the summarize stage: text length, or binary data length.
func partSize(p Part) int {
	switch v := p.(type) {
	case TextPart:
		return len(v.Text)
	case ImagePart:
		return len(v.Data)
	case AudioPart:
		return len(v.Data)
	case ResourcePart:
		if v.Resource.Text != nil {
			return len(*v.Resource.Text)
		}
		return len(v.Resource.Blob)
	case RawPart:
		return len(v.JSON)
	default:
		return 0
	}
}
