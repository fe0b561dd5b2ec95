package config

import (
	"errors"
	"fmt"
	"maps"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/go-viper/mapstructure/v2"
	"github.com/toolgate/toolgate/gateway"
)

// The decoder's errors are written for Go programmers: "'limits.call_timeout'
// time: invalid duration", "cannot parse value as 'int': strconv.ParseInt:
// invalid syntax", "has invalid keys: call_timout". describeDecodeError
// rewrites each for the person who edits the configuration: the key, the
// value given and what the key takes, the nearest known key for an
// unknown one, and the environment variable the value came from when it
// did not come from the file (a TOOLGATE_ variable's key is nowhere in
// the file, where a person looks first).

// describeDecodeError is err, from decoding the merged configuration, as
// one line per problem (sorted, after a count, when there are several).
// environ is the process's environment.
func describeDecodeError(err error, environ []string) string {
	var problems []*mapstructure.DecodeError
	var walk func(error)
	walk = func(e error) {
		switch e := e.(type) {
		case *mapstructure.DecodeError:
			problems = append(problems, e)
		case interface{ Unwrap() []error }:
			for _, e := range e.Unwrap() {
				walk(e)
			}
		default:
			if u := errors.Unwrap(e); u != nil {
				walk(u)
			}
		}
	}
	walk(err)
	if len(problems) == 0 {
		return strings.ReplaceAll(err.Error(), "decoding failed due to the following error(s):\n\n", "")
	}
	var lines []string
	for _, de := range problems {
		lines = append(lines, describeProblem(de.Name(), de.Unwrap(), environ)...)
	}
	slices.Sort(lines) // the decoder meets a map's keys in no set order
	return listProblems(lines)
}

// listProblems says one problem on its line, or several as "N problems:"
// with each on a line of its own: what decoding and checking a
// configuration report alike.
func listProblems(lines []string) string {
	if len(lines) == 1 {
		return lines[0]
	}
	return fmt.Sprintf("%d problems:\n  %s", len(lines), strings.Join(lines, "\n  "))
}

// problemLines are the problems of an error that may join others (and
// joined errors join others too: an upstream's own problems), one entry
// each, in order. A problem's text of several lines stays one entry, its
// later lines indented under it.
func problemLines(err error) []string {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var lines []string
		for _, e := range j.Unwrap() {
			lines = append(lines, problemLines(e)...)
		}
		return lines
	}
	return []string{strings.ReplaceAll(err.Error(), "\n", "\n    ")}
}

// describeProblem is the line (or, for unknown keys, lines) of one error
// at key.
func describeProblem(key string, err error, environ []string) []string {
	if keys, ok := strings.CutPrefix(err.Error(), "has invalid keys: "); ok {
		var known []string
		for _, k := range keysAt(reflect.TypeFor[Config](), key) {
			known = append(known, joinKey(key, k))
		}
		var out []string
		for _, k := range strings.Split(keys, ", ") {
			full := joinKey(key, k)
			hint := gateway.DidYouMean(full, known)
			if hint == "" {
				hint = partOf(k, key, known)
			}
			out = append(out, "unknown key "+full+fromEnv(full, environ)+hint)
		}
		return out
	}
	what := describeValueError(err)
	if strings.HasPrefix(what, "is ") { // a hook's "is a list, not a map"
		return []string{key + fromEnv(key, environ) + " " + what}
	}
	return []string{key + fromEnv(key, environ) + ": " + what}
}

// partOf is " did you mean" for the known keys that have k as one or
// more of their words ("timeout" is part of call_timeout and
// startup_timeout), which no spelling is near; "" when none or more than
// three do.
func partOf(k, prefix string, known []string) string {
	var near []string
	for _, full := range known {
		if name := strings.TrimPrefix(full, joinKey(prefix, "")); strings.Contains("_"+name+"_", "_"+k+"_") {
			near = append(near, full)
		}
	}
	if len(near) == 0 || len(near) > 3 {
		return ""
	}
	return "; did you mean " + strings.Join(near, " or ") + "?"
}

// describeValueError says what is wrong with a value in words.
func describeValueError(err error) string {
	var pe *mapstructure.ParseError
	var ue *mapstructure.UnconvertibleTypeError
	switch {
	case errors.As(err, &pe):
		return fmt.Sprintf("%s is not %s", shown(pe.Value), takes(pe.Expected.Type()))
	case errors.As(err, &ue):
		return fmt.Sprintf("takes %s, got %s", takes(ue.Expected.Type()), got(ue.Value))
	}
	return err.Error()
}

// shown is a value as the error quotes it: text quoted, the rest as YAML
// would write it.
func shown(v any) string {
	if s, ok := v.(string); ok {
		return fmt.Sprintf("%q", s)
	}
	return fmt.Sprint(v)
}

// takes names what a value of type t is, in the configuration's words.
func takes(t reflect.Type) string {
	switch {
	case t == reflect.TypeFor[time.Duration]():
		return "a duration (with a unit, as in 30s, 2m or 1h30m)"
	case t.Kind() == reflect.Bool:
		return "true or false"
	case t.Kind() >= reflect.Int && t.Kind() <= reflect.Uint64:
		return "a whole number"
	case t.Kind() == reflect.Float32 || t.Kind() == reflect.Float64:
		return "a number"
	case t.Kind() == reflect.String:
		return "text"
	case t.Kind() == reflect.Slice:
		return "a list"
	case t.Kind() == reflect.Map || t.Kind() == reflect.Struct:
		return "a map (keys on the lines below it)"
	}
	return t.String()
}

// got names what was given, by its kind.
func got(v any) string {
	if v == nil {
		return "nothing"
	}
	switch reflect.TypeOf(v).Kind() {
	case reflect.Map:
		return "a map"
	case reflect.Slice:
		return "a list"
	}
	return shown(v)
}

// indexRE is a list index in a key: upstreams[0].
var indexRE = regexp.MustCompile(`\[\d+\]`)

// keysAt lists the keys the configuration takes under key ("" for the
// top level, "upstreams[0]" for an upstream's), nil when key is not a map
// of known keys.
func keysAt(t reflect.Type, key string) []string {
	if key != "" {
		for _, seg := range strings.Split(indexRE.ReplaceAllString(key, ".[]"), ".") {
			for t.Kind() == reflect.Pointer {
				t = t.Elem()
			}
			switch {
			case seg == "":
			case seg == "[]" && t.Kind() == reflect.Slice:
				t = t.Elem()
			case t.Kind() == reflect.Map:
				t = t.Elem()
			case t.Kind() == reflect.Struct:
				f, ok := fieldByKey(t, seg)
				if !ok {
					return nil
				}
				t = f.Type
			default:
				return nil
			}
		}
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return slices.Sorted(maps.Keys(entryKeys(t)))
}

// fieldByKey is t's field whose koanf key is key.
func fieldByKey(t reflect.Type, key string) (reflect.StructField, bool) {
	for f := range t.Fields() {
		if f.Tag.Get("koanf") == key {
			return f, true
		}
	}
	return reflect.StructField{}, false
}

func joinKey(prefix, key string) string {
	if prefix == "" {
		return key
	}
	return prefix + "." + key
}

// fromEnv is " (from the environment variable NAME)" when the value of
// key came from there (a variable that sets it is set), else "". Flags
// set only keys the configuration knows, with values of their type.
func fromEnv(key string, environ []string) string {
	if strings.Contains(key, "[") {
		return "" // the environment sets no list entry
	}
	name := EnvPrefix + strings.ToUpper(strings.ReplaceAll(key, ".", "__"))
	for _, kv := range environ {
		if n, _, _ := strings.Cut(kv, "="); n == name {
			return " (from the environment variable " + name + ")"
		}
	}
	return ""
}
