package server

// toolgate patch (item 94): a request's params of the wrong shape are
// said in JSON's terms (UnparsableMessageError).

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
)

// ParamsProblem is a params decoding error in JSON's terms, as an
// UnparsableMessageError says it.
func ParamsProblem(err error) string {
	var te *json.UnmarshalTypeError
	if !errors.As(err, &te) {
		return err.Error()
	}
	// The path from the message's root; an embedded struct's name may
	// lead it ("PaginatedRequest.params.cursor"), and a map's value is
	// named by the map ("params.arguments").
	where := "params"
	if i := strings.Index(te.Field, "params"); i >= 0 {
		where = te.Field[i:]
	}
	return fmt.Sprintf("at %s, %s is expected, not %s", where, jsonKindOf(te.Type), articled(te.Value))
}

// jsonKindOf is the JSON value a Go type is decoded from.
func jsonKindOf(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Map, reflect.Struct, reflect.Pointer:
		return "an object"
	}
	return "of another type"
}

// articled is a JSON value's kind as json names it ("array", "number"),
// with its article.
func articled(kind string) string {
	switch {
	case kind == "":
		return "that"
	case kind == "bool":
		return "a boolean"
	case strings.HasPrefix(kind, "number"): // "number 1.5"
		return "a " + kind
	case strings.ContainsAny(kind[:1], "aeiou"):
		return "an " + kind
	}
	return "a " + kind
}
