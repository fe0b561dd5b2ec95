package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
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
