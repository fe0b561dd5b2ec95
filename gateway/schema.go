package gateway

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/big"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"

	invopop "github.com/invopop/jsonschema"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// Schemas are checked and compiled once, when a tool is built, with
// santhosh-tekuri/jsonschema/v6: compiling validates the schema against its
// metaschema (Draft 2020-12 unless the schema's $schema names another
// draft), so a bad schema is an error at registration, never at call time.
// Compiling reads nothing from disk or network: $ref may only point inside
// the schema (or at the embedded metaschemas); any other reference is an
// error.

// refuseLoader is the compiler's URL loader: it loads nothing, so a schema
// cannot make the gateway read a file or fetch a URL.
type refuseLoader struct{}

func (refuseLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("remote $ref %q refused: schemas may only reference themselves", url)
}

// compiled caches compiled schemas by the SHA-256 of their bytes: tools
// with the same schema (common among an upstream's tools) share one
// compiled schema, which is safe for concurrent use, and it is compiled
// once. Errors are not cached. The cache is bounded; past the bound,
// schemas are compiled without being kept.
var compiled struct {
	sync.Mutex
	m map[[32]byte]*jsonschema.Schema
}

const maxCachedSchemas = 10000

// compileSchema checks raw against its metaschema and compiles it. which
// ("input", "output") is used in errors.
func compileSchema(which string, raw json.RawMessage) (*jsonschema.Schema, error) {
	key := sha256.Sum256(raw)
	compiled.Lock()
	sch := compiled.m[key]
	compiled.Unlock()
	if sch != nil {
		return sch, nil
	}
	sch, err := compileSchemaBytes(which, raw, key)
	if err != nil {
		return nil, err
	}
	compiled.Lock()
	if compiled.m == nil {
		compiled.m = map[[32]byte]*jsonschema.Schema{}
	}
	if len(compiled.m) < maxCachedSchemas {
		compiled.m[key] = sch
	}
	compiled.Unlock()
	return sch, nil
}

func compileSchemaBytes(which string, raw json.RawMessage, key [32]byte) (*jsonschema.Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("%s schema is not JSON: %w", which, err)
	}
	if _, ok := doc.(map[string]any); !ok {
		return nil, fmt.Errorf("%s schema must be a JSON object, got %s", which, jsonTypeName(doc))
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.UseLoader(refuseLoader{})
	c.UseRegexpEngine(ecmaRegexp)
	url := "mem:///toolgate/schemas/" + hex.EncodeToString(key[:]) + ".json"
	if err := c.AddResource(url, doc); err != nil {
		return nil, fmt.Errorf("%s schema: %w", which, err)
	}
	sch, err := c.Compile(url)
	if err != nil {
		var sve *jsonschema.SchemaValidationError
		if errors.As(err, &sve) {
			return nil, fmt.Errorf("%s schema is not a valid JSON Schema: %s", which, describeValidation(nil, sve.Err))
		}
		return nil, fmt.Errorf("%s schema: %w", which, err)
	}
	return sch, nil
}

// ecmaRegexp compiles a schema's "pattern" with Go's regexp (RE2), after
// rewriting the ECMA-262 escapes RE2 spells differently: \uXXXX becomes
// \x{XXXX}. JSON Schema patterns are ECMA-262 regular expressions, and
// upstream schemas use such escapes; features RE2 lacks (lookaround,
// backreferences) still fail, and the tool is then reported as not
// offered, with the reason.
func ecmaRegexp(pattern string) (jsonschema.Regexp, error) {
	re, err := regexp.Compile(pattern)
	if err == nil {
		return re, nil
	}
	if translated, changed := rewriteUnicodeEscapes(pattern); changed {
		if re2, err2 := regexp.Compile(translated); err2 == nil {
			return re2, nil
		}
	}
	return nil, err
}

// rewriteUnicodeEscapes turns \uXXXX into \x{XXXX}, leaving escaped
// backslashes alone.
func rewriteUnicodeEscapes(p string) (string, bool) {
	var b strings.Builder
	changed := false
	for i := 0; i < len(p); i++ {
		if p[i] != '\\' || i+1 >= len(p) {
			b.WriteByte(p[i])
			continue
		}
		if p[i+1] == 'u' && i+6 <= len(p) && isHex(p[i+2:i+6]) {
			b.WriteString(`\x{` + p[i+2:i+6] + `}`)
			i += 5
			changed = true
			continue
		}
		b.WriteByte(p[i])
		b.WriteByte(p[i+1])
		i++
	}
	return b.String(), changed
}

func isHex(s string) bool {
	for _, c := range s {
		if !strings.ContainsRune("0123456789abcdefABCDEF", c) {
			return false
		}
	}
	return true
}

func jsonTypeName(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case string:
		return "string"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	default:
		return "number"
	}
}

var printer = message.NewPrinter(language.English)

// describeValidation renders a validation error for a model: one clause per
// failing location, `at '/limit': maximum 1000, got 5000`, joined by "; ".
// root is the schema validated against, or nil: with it, an unknown
// property's clause names the properties that object takes.
func describeValidation(root *jsonschema.Schema, err error) string {
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return err.Error()
	}
	var clauses []string
	seen := map[string]bool{}
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) > 0 {
			// Composite keywords (allOf, anyOf, oneOf, $ref...) say which
			// branch failed in their causes; report the leaves, plus the
			// composite itself when it is a choice the model must make.
			switch e.ErrorKind.(type) {
			case *kind.OneOf, *kind.AnyOf:
				clauses = appendClause(clauses, seen, e.InstanceLocation, kindText(e.ErrorKind, secretLocation(e.InstanceLocation)))
			}
			for _, c := range e.Causes {
				walk(c)
			}
			return
		}
		text := kindText(e.ErrorKind, secretLocation(e.InstanceLocation))
		switch k := e.ErrorKind.(type) {
		case *kind.AdditionalProperties:
			text += takesText(schemaAt(root, e.SchemaURL))
		case *kind.Required:
			text += wantsText(schemaAt(root, e.SchemaURL), k.Missing)
		}
		clauses = appendClause(clauses, seen, e.InstanceLocation, text)
	}
	walk(ve)
	if len(clauses) == 0 {
		return "arguments do not match the schema"
	}
	return Truncate(strings.Join(clauses, "; "), 4096)
}

// takesText names the properties an object of schema sch takes, for the
// clause of an unknown property: " (takes 'content', 'scope')". A model
// that guessed a name learns the right one without reading the schema
// again. Empty when sch is unknown or declares none.
func takesText(sch *jsonschema.Schema) string {
	if sch == nil || len(sch.Properties) == 0 {
		return ""
	}
	names := slices.Sorted(maps.Keys(sch.Properties))
	more := ""
	if len(sch.PatternProperties) > 0 {
		more = " and names that match its patternProperties"
	}
	return fmt.Sprintf(" (takes '%s'%s)", strings.Join(names, "', '"), more)
}

// wantsText says what each missing required property of an object of
// schema sch is, for the clause that names them: " ('scope': a string,
// \"Scope to search (e.g. a project or user name)...\")": its values when
// it has an enum, else its type, and the first sentence of its
// description. A person running toolgate call, or a model that left a
// property out, learns what to give without reading the schema again.
// Empty when sch is unknown or says nothing of them.
func wantsText(sch *jsonschema.Schema, missing []string) string {
	if sch == nil {
		return ""
	}
	var parts []string
	for _, name := range missing {
		p := sch.Properties[name]
		if p == nil {
			continue
		}
		var what []string
		switch {
		case p.Enum != nil:
			vals := make([]string, 0, len(p.Enum.Values))
			for _, v := range p.Enum.Values {
				b, _ := json.Marshal(v)
				vals = append(vals, string(b))
			}
			what = append(what, "one of "+strings.Join(vals, ", "))
		case p.Types != nil && !p.Types.IsEmpty():
			what = append(what, article(strings.Join(p.Types.ToStrings(), " or ")))
		}
		if d := firstSentence(p.Description, 160); d != "" {
			what = append(what, `"`+strings.ReplaceAll(d, `"`, "'")+`"`)
		}
		if len(what) == 0 {
			continue
		}
		if len(missing) == 1 { // the clause named it
			return " (" + strings.Join(what, ", ") + ")"
		}
		parts = append(parts, fmt.Sprintf("'%s': %s", name, strings.Join(what, ", ")))
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, "; ") + ")"
}

// article is a JSON type name with its article: "a string", "an integer".
func article(t string) string {
	if t != "" && strings.ContainsRune("aeiou", rune(t[0])) {
		return "an " + t
	}
	return "a " + t
}

// firstSentence is s up to the end of its first sentence (a ". " before
// a capital letter, not after "e.g" or "i.e"), at most max bytes.
func firstSentence(s string, max int) string {
	s = strings.Join(strings.Fields(s), " ")
	for i := 0; i+2 < len(s); i++ {
		if s[i] != '.' || s[i+1] != ' ' || s[i+2] < 'A' || s[i+2] > 'Z' {
			continue
		}
		if head := strings.ToLower(s[:i]); strings.HasSuffix(head, "e.g") || strings.HasSuffix(head, "i.e") {
			continue
		}
		s = s[:i+1]
		break
	}
	return Truncate(s, max)
}

// schemaAt finds the subschema of root at the (absolute) location loc, as
// a validation error names it, or nil. Error path only: it walks the
// schema's keywords breadth-first, each subschema once.
func schemaAt(root *jsonschema.Schema, loc string) *jsonschema.Schema {
	if root == nil {
		return nil
	}
	seen := map[*jsonschema.Schema]bool{root: true}
	queue := []*jsonschema.Schema{root}
	add := func(subs ...*jsonschema.Schema) {
		for _, s := range subs {
			if s != nil && !seen[s] {
				seen[s] = true
				queue = append(queue, s)
			}
		}
	}
	for len(queue) > 0 {
		s := queue[0]
		queue = queue[1:]
		if s.Location == loc {
			return s
		}
		add(s.Ref, s.RecursiveRef, s.Not, s.If, s.Then, s.Else, s.PropertyNames, s.UnevaluatedProperties,
			s.Contains, s.Items2020, s.UnevaluatedItems, s.ContentSchema)
		add(s.AllOf...)
		add(s.AnyOf...)
		add(s.OneOf...)
		add(s.PrefixItems...)
		add(slices.Collect(maps.Values(s.Properties))...)
		add(slices.Collect(maps.Values(s.PatternProperties))...)
		add(slices.Collect(maps.Values(s.DependentSchemas))...)
		for _, v := range []any{s.AdditionalProperties, s.Items, s.AdditionalItems} {
			switch v := v.(type) {
			case *jsonschema.Schema:
				add(v)
			case []*jsonschema.Schema:
				add(v...)
			}
		}
	}
	return nil
}

func appendClause(clauses []string, seen map[string]bool, loc []string, text string) []string {
	// A clause may quote the value (a pattern or enum mismatch): cut it,
	// so that a huge argument is never echoed back whole.
	c := fmt.Sprintf("at '%s': %s", Truncate(pointer(loc), 200), Truncate(text, 300))
	if seen[c] {
		return clauses
	}
	seen[c] = true
	return append(clauses, c)
}

// pointer renders an instance location as a JSON pointer ("/" for the root).
func pointer(loc []string) string {
	if len(loc) == 0 {
		return "/"
	}
	var b strings.Builder
	for _, tok := range loc {
		b.WriteByte('/')
		tok = strings.ReplaceAll(tok, "~", "~0")
		b.WriteString(strings.ReplaceAll(tok, "/", "~1"))
	}
	return b.String()
}

// secretLocation reports whether an instance location is, or is inside, the
// value of a key that looks like a secret's ([IsSecretKey]): records redact
// that value in the arguments, and the message goes in the same line.
func secretLocation(loc []string) bool {
	for _, tok := range loc {
		if IsSecretKey(tok) {
			return true
		}
	}
	return false
}

// kindText says what a keyword wanted and what it got, wanted first:
// "maximum 1000, got 5000". At a secret location (secret true) the value
// got is never quoted, only what the schema wanted: the message is
// recorded beside the redacted arguments, and logged.
func kindText(k jsonschema.ErrorKind, secret bool) string {
	got := func(s string) string {
		if secret {
			return Redacted
		}
		return s
	}
	switch k := k.(type) {
	case *kind.Maximum:
		return fmt.Sprintf("maximum %s, got %s", rat(k.Want), got(rat(k.Got)))
	case *kind.Minimum:
		return fmt.Sprintf("minimum %s, got %s", rat(k.Want), got(rat(k.Got)))
	case *kind.ExclusiveMaximum:
		return fmt.Sprintf("must be less than %s, got %s", rat(k.Want), got(rat(k.Got)))
	case *kind.ExclusiveMinimum:
		return fmt.Sprintf("must be greater than %s, got %s", rat(k.Want), got(rat(k.Got)))
	case *kind.MultipleOf:
		return fmt.Sprintf("must be a multiple of %s, got %s", rat(k.Want), got(rat(k.Got)))
	case *kind.MinLength:
		return fmt.Sprintf("minimum length %d, got %d", k.Want, k.Got)
	case *kind.MaxLength:
		return fmt.Sprintf("maximum length %d, got %d", k.Want, k.Got)
	case *kind.MinItems:
		return fmt.Sprintf("minimum %d items, got %d", k.Want, k.Got)
	case *kind.MaxItems:
		return fmt.Sprintf("maximum %d items, got %d", k.Want, k.Got)
	case *kind.Type:
		return fmt.Sprintf("type %s, got %s", strings.Join(k.Want, " or "), k.Got)
	case *kind.Required:
		if len(k.Missing) == 1 {
			return fmt.Sprintf("missing required property '%s'", k.Missing[0])
		}
		return fmt.Sprintf("missing required properties '%s'", strings.Join(k.Missing, "', '"))
	case *kind.AdditionalProperties:
		props := append([]string(nil), k.Properties...)
		sort.Strings(props)
		return fmt.Sprintf("unknown properties not allowed: '%s'", strings.Join(props, "', '"))
	case *kind.Enum:
		want, _ := json.Marshal(k.Want)
		return fmt.Sprintf("one of %s, got %s", want, got(quoteValue(k.Got)))
	case *kind.Const:
		want, _ := json.Marshal(k.Want)
		return fmt.Sprintf("value %s, got %s", want, got(quoteValue(k.Got)))
	case *kind.FalseSchema:
		return "no value allowed here"
	}
	if secret {
		// The library's own texts quote the value (pattern, format) or a
		// part of it (a decoding error of contentMediaType): say what was
		// wanted in our words.
		switch k := k.(type) {
		case *kind.Pattern:
			return fmt.Sprintf("%s does not match pattern '%s'", Redacted, k.Want)
		case *kind.Format:
			return fmt.Sprintf("%s is not valid %s", Redacted, k.Want)
		case *kind.ContentEncoding:
			return fmt.Sprintf("%s is not %s encoded", Redacted, k.Want)
		case *kind.ContentMediaType:
			return fmt.Sprintf("%s is not of media type %s", Redacted, k.Want)
		}
	}
	return k.LocalizedString(printer)
}

// quoteValue is a value an enum or const failure got, as JSON, redacted
// as records redact the arguments ([RedactArguments]): an object or array
// may hold a member named like a secret's ({"password": ...}) at a
// location that is not itself a secret's.
func quoteValue(v any) string {
	b, _ := json.Marshal(v)
	return string(RedactArguments(b))
}

func rat(r *big.Rat) string {
	if r == nil {
		return "?"
	}
	if r.IsInt() {
		return r.Num().String()
	}
	f, _ := r.Float64()
	return fmt.Sprint(f)
}

// schemaFor builds the input schema of a typed tool from its parameter
// struct, with invopop/jsonschema: descriptions, enums, numeric and string
// bounds and defaults come from `jsonschema:"..."` tags, a field without
// `omitempty` is required, and unknown properties are refused. As in the
// seeds' CallableTool2, the result is flat: nested types are inlined (no
// $ref, no $defs) and no titles are emitted (they only cost tokens).
// Properties keep the order of the struct's fields. A recursive type cannot
// be flattened and is an error.
func schemaFor(t reflect.Type) (json.RawMessage, error) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return nil, fmt.Errorf("typed tool parameters must be a struct, got %s", t)
	}
	if err := checkFinite(t, nil); err != nil {
		return nil, err
	}
	r := invopop.Reflector{DoNotReference: true, ExpandedStruct: true, Anonymous: true}
	s := r.ReflectFromType(t)
	s.Version, s.ID = "", ""
	dropTitles(s)
	if s.Type == "object" && s.Properties == nil {
		s.Properties = invopop.NewProperties()
	}
	raw, err := marshalNoEscape(s)
	if err != nil {
		return nil, fmt.Errorf("encoding generated schema: %w", err)
	}
	return raw, nil
}

// checkFinite refuses a type that contains itself, which would need a
// recursive schema ($ref to itself) that typed tools do not emit.
func checkFinite(t reflect.Type, stack []reflect.Type) error {
	switch t.Kind() {
	case reflect.Pointer, reflect.Slice, reflect.Array, reflect.Map:
		return checkFinite(t.Elem(), stack)
	case reflect.Struct:
		for _, s := range stack {
			if s == t {
				return fmt.Errorf("typed tool parameters: type %s is recursive; use a dynamic tool with a hand-written schema", t)
			}
		}
		stack = append(stack, t)
		for i := range t.NumField() {
			if f := t.Field(i); f.IsExported() {
				if err := checkFinite(f.Type, stack); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// dropTitles removes every title from a generated schema tree.
func dropTitles(s *invopop.Schema) {
	if s == nil {
		return
	}
	s.Title = ""
	for _, list := range [][]*invopop.Schema{s.AllOf, s.AnyOf, s.OneOf, s.PrefixItems} {
		for _, x := range list {
			dropTitles(x)
		}
	}
	for _, x := range []*invopop.Schema{s.Not, s.If, s.Then, s.Else, s.Items, s.Contains, s.AdditionalProperties, s.PropertyNames, s.ContentSchema} {
		dropTitles(x)
	}
	for _, x := range s.DependentSchemas {
		dropTitles(x)
	}
	for _, x := range s.PatternProperties {
		dropTitles(x)
	}
	if s.Properties != nil {
		for pair := s.Properties.Oldest(); pair != nil; pair = pair.Next() {
			dropTitles(pair.Value)
		}
	}
}
