package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"

	"github.com/mark3labs/mcp-go/jsonscan"
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
			if rep := (*RepeatedMemberError)(nil); errors.As(err, &rep) {
				return InvalidArgumentsResult(call.Name, rep.Error())
			}
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
		if flatMembers(raw) != len(obj) { // a name given twice
			return nil, repeatedMember(raw)
		}
		return obj, nil
	}
	var obj map[string]any
	var err error
	if len(raw) <= argDecoderMax && raw[0] == '{' {
		obj, err = decodePooled(raw)
	} else {
		obj, err = decodeFresh(raw)
	}
	if err == nil {
		err = repeatedMember(raw)
	}
	if err != nil {
		return nil, err
	}
	return obj, nil
}

// RepeatedMemberError is arguments that give one name twice in an object.
// They are refused: the decoded arguments, which are validated, keep the
// last (as encoding/json does), while a typed handler's decoding into a
// struct merges nested objects of both, and an upstream handed the same
// bytes may read the first, so what runs would not be what was checked.
type RepeatedMemberError struct {
	At, Name string // the object's JSON pointer, the name
}

func (e *RepeatedMemberError) Error() string {
	return fmt.Sprintf("at '%s': the member %q appears more than once; give each name once", e.At, e.Name)
}

// flatMembers counts the members of a flat object (decodeFlat's: no
// nesting, no escapes): the colons outside its strings.
func flatMembers(raw []byte) int {
	n, in := 0, false
	for _, c := range raw {
		switch {
		case c == '"':
			in = !in
		case c == ':' && !in:
			n++
		}
	}
	return n
}

// repeatedMember returns a *RepeatedMemberError for the first name given
// twice in one object of raw (valid JSON), or nil. It reads raw again,
// token by token: only arguments with nesting, or a repeat, come here.
func repeatedMember(raw []byte) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if e := scanRepeated(dec, nil); e != nil {
		return e
	}
	return nil
}

func scanRepeated(dec *json.Decoder, loc []string) *RepeatedMemberError {
	tok, err := dec.Token()
	if err != nil {
		return nil
	}
	switch tok {
	case json.Delim('{'):
		seen := map[string]bool{}
		for dec.More() {
			kt, err := dec.Token()
			k, ok := kt.(string)
			if err != nil || !ok {
				return nil
			}
			if seen[k] {
				return &RepeatedMemberError{At: pointer(loc), Name: k}
			}
			seen[k] = true
			if e := scanRepeated(dec, append(loc, k)); e != nil {
				return e
			}
		}
		_, _ = dec.Token()
	case json.Delim('['):
		for i := 0; dec.More(); i++ {
			if e := scanRepeated(dec, append(loc, strconv.Itoa(i))); e != nil {
				return e
			}
		}
		_, _ = dec.Token()
	}
	return nil
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
// one pass, or says no: an object without nesting, escapes or bytes
// outside ASCII, whose values are therefore strings that decode to their
// own bytes, numbers (json.Number, the literal as written), true, false or
// null. That is most calls' arguments, and for them the result is the
// json.Decoder's (last of a repeated name included: FuzzToolArguments holds
// every input's decoding to a fresh decoder's), without its reader, buffer,
// scanner and reflection: 650 → 280 ns and 7 → 5 allocations for an echo
// call's arguments. Anything else (nesting, escapes, other bytes, any
// syntax error) goes to the decoder, which also says what is wrong.
// Nesting, escapes and bytes outside ASCII, the common reasons to say no,
// are looked for first, so that arguments the decoder must read cost no
// member decoded for nothing. The object is read, validated and decoded by
// jsonscan (the patched mcp-go's JSON scanner, third_party/README.md).
func decodeFlat(raw []byte) (map[string]any, bool) {
	i := jsonscan.SkipSpace(raw, 0)
	if i == len(raw) || raw[i] != '{' {
		return nil, false
	}
	for _, c := range raw[i+1:] {
		if c == '{' || c == '[' || c == '\\' || c >= 0x80 {
			return nil, false
		}
	}
	return jsonscan.DecodeObject(raw, true) // numbers as json.Number: the decoder's UseNumber
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
