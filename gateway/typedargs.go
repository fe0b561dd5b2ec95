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
type flatArgs struct {
	byName map[string]int // member name -> fields index
	fields []flatField
}

type flatField struct {
	name  string
	index int // in the struct
	kind  reflect.Kind
}

var (
	jsonUnmarshalerType = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
	jsonNumberType      = reflect.TypeFor[json.Number]() // a string that encoding/json fills from a number
)

// newFlatArgs is t's flatArgs, or nil if t is not a struct of that kind:
// a field of another kind, one embedded, one whose type decodes itself
// (UnmarshalJSON, UnmarshalText) or that encoding/json treats apart
// (json.Number), one with the ",string" option, a name
// that is not a plain identifier, or two names that differ only in case.
func newFlatArgs(t reflect.Type) *flatArgs {
	if t.Kind() != reflect.Struct {
		return nil
	}
	fa := &flatArgs{byName: map[string]int{}}
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
		if !plainName(name) || f.Type == jsonNumberType || f.Type.Implements(jsonUnmarshalerType) || reflect.PointerTo(f.Type).Implements(jsonUnmarshalerType) ||
			f.Type.Implements(textUnmarshalerType) || reflect.PointerTo(f.Type).Implements(textUnmarshalerType) {
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
		for _, other := range fa.fields {
			if strings.EqualFold(other.name, name) {
				return nil
			}
		}
		fa.byName[name] = len(fa.fields)
		fa.fields = append(fa.fields, flatField{name: name, index: i, kind: f.Type.Kind()})
	}
	return fa
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
func (fa *flatArgs) fill(args any, dst reflect.Value) bool {
	m, ok := args.(map[string]any)
	if !ok {
		return false
	}
	for k, v := range m {
		i, ok := fa.byName[k]
		if !ok {
			for _, f := range fa.fields {
				if strings.EqualFold(f.name, k) {
					return false // json.Unmarshal would give it to f
				}
			}
			continue
		}
		if v == nil {
			continue
		}
		fv := dst.Field(fa.fields[i].index)
		switch fa.fields[i].kind {
		case reflect.String:
			s, ok := v.(string)
			if !ok {
				return false
			}
			fv.SetString(s)
		case reflect.Bool:
			b, ok := v.(bool)
			if !ok {
				return false
			}
			fv.SetBool(b)
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
			n, ok := v.(json.Number)
			if !ok {
				return false
			}
			x, err := strconv.ParseInt(string(n), 10, 64)
			if err != nil || fv.OverflowInt(x) {
				return false
			}
			fv.SetInt(x)
		case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
			n, ok := v.(json.Number)
			if !ok {
				return false
			}
			x, err := strconv.ParseUint(string(n), 10, 64)
			if err != nil || fv.OverflowUint(x) {
				return false
			}
			fv.SetUint(x)
		case reflect.Float32, reflect.Float64:
			n, ok := v.(json.Number)
			if !ok {
				return false
			}
			x, err := strconv.ParseFloat(string(n), fv.Type().Bits())
			if err != nil || fv.OverflowFloat(x) {
				return false
			}
			fv.SetFloat(x)
		}
	}
	return true
}
