package gateway

import (
	"encoding"
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
)

// flatArgs fills a typed tool's parameter struct from the arguments the
// validation stage has already decoded (call.Args, numbers as
// json.Number), for a struct whose fields are all strings, booleans and
// numbers: most of the built-in tools' parameters. json.Unmarshal would
// decode the argument bytes a second time (~0.45 µs of an echo call's
// ~6 µs through the full pipeline).
//
// It fills only what it can fill exactly as json.Unmarshal fills it from
// the same bytes, and says no to everything else: a member that names a
// field in another case (encoding/json matches names as bytes.EqualFold
// does, preferring an exact match), a value of another JSON type than
// the field's, a number that is out of the field's range or, for an
// integer field, not written as an integer. Then the call decodes its
// argument bytes with json.Unmarshal (decodeTyped), whose errors say what
// is wrong. Members that name no field are ignored and null leaves a
// field alone, as in json.Unmarshal. FuzzFlatArgs holds the two to the
// same result. One difference is kept on purpose: of a member named twice
// the struct gets the last value, which is what the validation checked
// (json.Unmarshal applies each in turn, failing on an earlier one of the
// wrong type).
type flatArgs map[string]int // member name -> struct field index

var (
	jsonUnmarshalerType = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
	jsonNumberType      = reflect.TypeFor[json.Number]() // a string that encoding/json fills from a number
)

// newFlatArgs is t's flatArgs, or nil if t is not a struct of that kind:
// a field of another kind, one embedded, one whose type decodes itself
// (UnmarshalJSON, UnmarshalText) or that encoding/json treats apart
// (json.Number), one with the ",string" option, a name that is not a
// plain identifier, or two names that differ only in case.
func newFlatArgs(t reflect.Type) flatArgs {
	if t.Kind() != reflect.Struct {
		return nil
	}
	fa := flatArgs{}
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Anonymous {
			return nil
		}
		if !f.IsExported() {
			continue
		}
		name := f.Name
		if tag, ok := f.Tag.Lookup("json"); ok {
			if tag == "-" {
				continue
			}
			n, opts, _ := strings.Cut(tag, ",")
			if strings.Contains(","+opts+",", ",string,") {
				return nil
			}
			if n != "" {
				name = n
			}
		}
		ptr := reflect.PointerTo(f.Type) // its method set holds the value's too
		if !plainName(name) || f.Type == jsonNumberType || ptr.Implements(jsonUnmarshalerType) || ptr.Implements(textUnmarshalerType) {
			return nil
		}
		switch f.Type.Kind() {
		case reflect.String, reflect.Bool,
			reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
			reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
			reflect.Float32, reflect.Float64:
		default:
			return nil
		}
		if fa.foldsTo(name) {
			return nil
		}
		fa[name] = i
	}
	return fa
}

// foldsTo reports whether a member named k names one of fa's fields in
// another case (where encoding/json, failing an exact match, would put
// it).
func (fa flatArgs) foldsTo(k string) bool {
	for name := range fa {
		if strings.EqualFold(name, k) {
			return true
		}
	}
	return false
}

// plainName reports whether name is an ASCII identifier (letters, digits,
// underscores, not starting with a digit).
func plainName(name string) bool {
	for i, c := range []byte(name) {
		if c != '_' && (c < 'a' || c > 'z') && (c < 'A' || c > 'Z') && (i == 0 || c < '0' || c > '9') {
			return false
		}
	}
	return name != ""
}

// fill sets dst (an addressable struct of fa's type) from args, the
// decoded arguments, and reports whether it could; when it could not,
// dst may be partly set.
func (fa flatArgs) fill(args any, dst reflect.Value) bool {
	m, ok := args.(map[string]any)
	if !ok {
		return false
	}
	for k, v := range m {
		i, ok := fa[k]
		if !ok {
			if fa.foldsTo(k) {
				return false
			}
			continue
		}
		fv := dst.Field(i)
		switch x := v.(type) {
		case nil:
			// null leaves the field alone
		case string:
			if fv.Kind() != reflect.String {
				return false
			}
			fv.SetString(x)
		case bool:
			if fv.Kind() != reflect.Bool {
				return false
			}
			fv.SetBool(x)
		case json.Number:
			if !setNumber(fv, string(x)) {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// setNumber sets the number field fv from the JSON number s as
// json.Unmarshal does, and reports whether it could: an integer field
// takes an integer written as one and within its range, a float field a
// number within its range.
func setNumber(fv reflect.Value, s string) bool {
	switch fv.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		x, err := strconv.ParseInt(s, 10, 64)
		if err != nil || fv.OverflowInt(x) {
			return false
		}
		fv.SetInt(x)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		x, err := strconv.ParseUint(s, 10, 64)
		if err != nil || fv.OverflowUint(x) {
			return false
		}
		fv.SetUint(x)
	case reflect.Float32, reflect.Float64:
		x, err := strconv.ParseFloat(s, fv.Type().Bits())
		if err != nil || fv.OverflowFloat(x) {
			return false
		}
		fv.SetFloat(x)
	default:
		return false
	}
	return true
}
