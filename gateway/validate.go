package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
)

// validateStage decodes the arguments and checks them against the tool's
// compiled input schema. Failures come back as error results (not protocol
// errors) so that the model can read them and correct itself: a parse error
// when the arguments are not a JSON object, an invalid-arguments error that
// lists each problem with where it is (`at '/limit': maximum 1000, got 5000`).
func (p *Pipeline) validateStage(next Handler) Handler {
	return func(ctx context.Context, call *Call) *Result {
		args, err := DecodeArguments(call.Arguments)
		if err != nil {
			return ParseErrorResult(err)
		}
		call.Args = args
		if !p.opts.SkipValidation {
			if msg := call.Tool.Validate(args); msg != "" {
				return InvalidArgumentsResult(call.Name, msg)
			}
		}
		p.stageEvent(ctx, "validated")
		return next(ctx, call)
	}
}

// DecodeArguments decodes raw call arguments: a JSON object, with numbers
// kept as json.Number. Empty or null arguments are an empty object.
func DecodeArguments(raw json.RawMessage) (map[string]any, error) {
	// Only JSON's own whitespace (RFC 8259): bytes.TrimSpace also drops a
	// form feed, which every later decoder of the same bytes refuses.
	raw = bytes.Trim(raw, " \t\r\n")
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return map[string]any{}, nil
	}
	if obj, ok := decodeFlat(raw); ok {
		return obj, nil
	}
	if len(raw) <= argDecoderMax && raw[0] == '{' {
		return decodePooled(raw)
	}
	return decodeFresh(raw)
}

// decodeFresh decodes arguments with a decoder of their own.
func decodeFresh(raw []byte) (map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("arguments are not valid JSON: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("arguments have trailing data after the JSON value")
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("arguments must be a JSON object, got %s", jsonTypeName(v))
	}
	return obj, nil
}

// decodeFlat decodes arguments that are a flat object of plain values in
// one pass, or says no: members whose names and string values are printable
// ASCII without escapes, and whose values are such strings, numbers
// (json.Number, the literal as written), true, false or null. That is most
// calls' arguments, and for them the result is the json.Decoder's (last of
// a repeated name included: FuzzToolArguments holds every input's decoding
// to a fresh decoder's), without its reader, buffer, scanner and
// reflection: 650 → 280 ns and 7 → 5 allocations for an echo call's
// arguments. Anything else (nesting, escapes, other bytes, any syntax
// error) goes to the decoder, which also says what is wrong. Nesting,
// escapes and bytes outside ASCII, the common reasons to say no, are
// looked for first, so that arguments the decoder must read cost no
// member decoded for nothing.
func decodeFlat(raw []byte) (map[string]any, bool) {
	i := skipJSONSpace(raw, 0)
	if i == len(raw) || raw[i] != '{' {
		return nil, false
	}
	for _, c := range raw[i+1:] {
		if c == '{' || c == '[' || c == '\\' || c >= 0x80 {
			return nil, false
		}
	}
	obj := make(map[string]any)
	i = skipJSONSpace(raw, i+1)
	if i < len(raw) && raw[i] == '}' {
		return obj, skipJSONSpace(raw, i+1) == len(raw)
	}
	for {
		key, j, ok := plainJSONString(raw, i)
		if !ok {
			return nil, false
		}
		if i = skipJSONSpace(raw, j); i == len(raw) || raw[i] != ':' {
			return nil, false
		}
		i = skipJSONSpace(raw, i+1)
		var v any
		switch {
		case i == len(raw):
			return nil, false
		case raw[i] == '"':
			v, j, ok = plainJSONString(raw, i)
		case raw[i] == '-' || raw[i] >= '0' && raw[i] <= '9':
			if j, ok = jsonNumberEnd(raw, i); ok {
				v = json.Number(raw[i:j])
			}
		case bytes.HasPrefix(raw[i:], []byte("true")):
			v, j, ok = true, i+4, true
		case bytes.HasPrefix(raw[i:], []byte("false")):
			v, j, ok = false, i+5, true
		case bytes.HasPrefix(raw[i:], []byte("null")):
			v, j, ok = nil, i+4, true
		default:
			return nil, false
		}
		if !ok {
			return nil, false
		}
		obj[key] = v
		if i = skipJSONSpace(raw, j); i == len(raw) {
			return nil, false
		}
		switch raw[i] {
		case ',':
			i = skipJSONSpace(raw, i+1)
		case '}':
			return obj, skipJSONSpace(raw, i+1) == len(raw)
		default:
			return nil, false
		}
	}
}

// skipJSONSpace is the index of the first byte at or after i that is not
// JSON's whitespace.
func skipJSONSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// plainJSONString reads the string that begins at b[i] if it is printable
// ASCII without escapes: its value, and the index past its closing quote.
func plainJSONString(b []byte, i int) (string, int, bool) {
	if i == len(b) || b[i] != '"' {
		return "", 0, false
	}
	for j := i + 1; j < len(b); j++ {
		switch c := b[j]; {
		case c == '"':
			return string(b[i+1 : j]), j + 1, true
		case c < 0x20 || c > 0x7e || c == '\\':
			return "", 0, false
		}
	}
	return "", 0, false
}

// jsonNumberEnd is the index past the JSON number that begins at b[i],
// by RFC 8259's grammar, or false if none does.
func jsonNumberEnd(b []byte, i int) (int, bool) {
	digits := func(i int) int {
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		return i
	}
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		i = digits(i)
	default:
		return 0, false
	}
	if i < len(b) && b[i] == '.' {
		j := digits(i + 1)
		if j == i+1 {
			return 0, false
		}
		i = j
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
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

// Pooled decoders: a json.Decoder cannot be given new input, but one that
// has decoded an object that ended exactly at the end of its input has
// read nothing past it, holds no buffered bytes and no error, and decodes
// the next input handed to its reader as if new. Arguments are such an
// object almost always, so decoding them reuses a decoder (its reader and
// buffer: three allocations a call). Any other outcome (an error, trailing
// data, an input too large to keep its buffer for) drops the decoder, and
// the fresh path says what is wrong. FuzzToolArguments checks that the
// two paths agree, input after input.
const argDecoderMax = 64 << 10

type argDecoder struct {
	in  sliceReader
	dec *json.Decoder
	obj map[string]any // decoded into here: a local's address would escape
}

// sliceReader reads the slice it is given, then io.EOF.
type sliceReader struct{ b []byte }

func (r *sliceReader) Read(p []byte) (int, error) {
	if len(r.b) == 0 {
		return 0, io.EOF
	}
	n := copy(p, r.b)
	r.b = r.b[n:]
	return n, nil
}

var argDecoders = sync.Pool{New: func() any {
	d := &argDecoder{}
	d.dec = json.NewDecoder(&d.in)
	d.dec.UseNumber()
	return d
}}

func decodePooled(raw []byte) (map[string]any, error) {
	d := argDecoders.Get().(*argDecoder)
	start := d.dec.InputOffset()
	d.in.b = raw
	err := d.dec.Decode(&d.obj)
	obj := d.obj
	d.obj = nil
	clean := err == nil && obj != nil && d.dec.InputOffset()-start == int64(len(raw)) && len(d.in.b) == 0
	d.in.b = nil
	if !clean {
		return decodeFresh(raw) // the decoder is dropped; this one says why
	}
	argDecoders.Put(d)
	return obj, nil
}
