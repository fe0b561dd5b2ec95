package server

import (
	"encoding/json"
	"errors"
	"reflect"

	"github.com/mark3labs/mcp-go/mcp"
)

// toolgate patch, for correctness (item 51): JSON-RPC 2.0 tells bytes that
// are not JSON (-32700 Parse error) from JSON that is not a request object
// (-32600 Invalid Request: a number, an array, a method that is not a
// string). v1.2.1 answered both as a parse error, over HTTP with "request
// body is not valid json" for a body that is; a client, or the person
// reading its log, was sent looking for a syntax error that was not there.

// malformedMessage is the JSON-RPC error for a message whose envelope did
// not decode with err: its code, and a message saying what was wrong. parse
// is the message a syntax error keeps (each transport has its own wording,
// unchanged); member names the envelope's member that was being decoded
// when err does not (a member decoded on its own).
func malformedMessage(err error, parse, member string) (int, string) {
	var te *json.UnmarshalTypeError
	if !errors.As(err, &te) {
		return mcp.PARSE_ERROR, parse
	}
	field := te.Field
	if field == "" {
		field = member
	}
	if field == "" {
		return mcp.INVALID_REQUEST, "Invalid Request: a JSON-RPC message is a JSON object, not " + jsonKind(te.Value)
	}
	return mcp.INVALID_REQUEST, "Invalid Request: member \"" + field + "\" must be " + goKind(te.Type) + ", not " + jsonKind(te.Value)
}

// readableID is the id to answer a malformed message with: the id that
// decoded from it, when it is JSON (its other members decode past a type
// error), and null when it is not (JSON-RPC 2.0: null when the id could
// not be read).
func readableID(code int, id any) any {
	switch id.(type) {
	case string, float64, int64, json.Number:
		if code == mcp.INVALID_REQUEST {
			return id
		}
	}
	return nil
}

// jsonKind is the kind encoding/json names in an UnmarshalTypeError
// ("number", "array", …) with its article.
func jsonKind(value string) string {
	switch value {
	case "array", "object":
		return "an " + value
	case "bool":
		return "a boolean"
	case "":
		return "this value"
	}
	return "a " + value
}

// goKind is what a JSON value must be to decode into t.
func goKind(t reflect.Type) string {
	if t == nil {
		return "another kind of value"
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Struct, reflect.Map:
		return "an object"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64:
		return "a number"
	}
	return "another kind of value"
}
