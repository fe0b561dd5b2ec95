package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"reflect"
	"regexp"
	"strings"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Tool is a tool the gateway serves: its name, description, input JSON
// Schema, permission metadata and handler. Build one with [NewTool] (the
// low-level form: the handler sees the whole [Call]), [NewDynamicTool]
// (hand-written schema, decoded arguments), [NewTypedTool] (schema from a
// Go struct, decoded struct) or [NewTypedToolOut] (the same, plus an output
// schema from a Go struct and structured output checked against it). The schema is checked against its metaschema
// and compiled when the tool is built, never at call time.
//
// A Tool is immutable once built and safe for concurrent use.
type Tool struct {
	// Name is unique within the gateway: 1 to 64 of [A-Za-z0-9_-].
	Name string
	// Title is an optional human-readable name.
	Title string
	// Description tells the model what the tool does.
	Description string
	// InputSchema is the JSON Schema of the arguments, kept byte for byte
	// as given: tools/list sends exactly these bytes.
	InputSchema json.RawMessage
	// OutputSchema is the optional JSON Schema of the structured output.
	OutputSchema json.RawMessage
	// Permissions are what the tool needs and how it behaves; the policy
	// decides from them.
	Permissions Permissions
	// Timeout overrides the pipeline's per-call deadline when not zero.
	// [NoDeadline] gives the call no deadline of its own: for a tool that
	// relays one call through the pipeline (tool search's call_tool), whose
	// own deadline and approval wait then hold, as when called directly.
	Timeout time.Duration
	// TimeoutSetting names the setting that gives Timeout, for the message
	// of a call that runs out of it ("upstreams[].call_timeout of \"ev\"");
	// empty with no Timeout of its own, whose deadline is the pipeline's
	// (limits.call_timeout).
	TimeoutSetting string
	// Meta holds the tool's _meta members, passed through to tools/list.
	Meta map[string]json.RawMessage
	// Annotations, when set, are the MCP annotations advertised as given
	// (an upstream's own), instead of ones derived from Permissions and
	// Title; the policy still decides from Permissions.
	Annotations json.RawMessage
	// Icons, when set, are the tool's MCP icons, as given.
	Icons json.RawMessage
	// HonoursContext says the handler returns promptly once its context
	// ends (the call's deadline, cancellation, shutdown). The pipeline
	// then runs it on the calling goroutine; any other handler runs on a
	// goroutine of its own that the pipeline stops waiting for at the
	// deadline, which costs a goroutine, a channel and that goroutine's
	// stack growth per call.
	HonoursContext bool
	// TaskSupport says whether the tool may be called as an MCP task
	// (2025-11-25 tasks: the client gets a task at once and polls it):
	// "" (no), "optional" or "required". The MCP mirror runs such a call
	// in the background through the whole pipeline, so the call's record
	// spans the task; see docs/tasks.md.
	TaskSupport string
	// TaskDirected says that the tool itself decides whether a call of a
	// 2026-07-28 caller of the tasks extension becomes a task (an
	// upstream that serves the extension: it answers a call with a task
	// or not), by calling [BecomeTask]; the mirror then waits for the
	// call to end or to become a task. Otherwise a call of such a caller
	// to a tool with TaskSupport is a task from the start.
	TaskDirected bool

	handler ToolHandler
	schema  *jsonschema.Schema
}

// Permissions is a tool's permission metadata: the capabilities it needs
// (named strings such as "fs.read", "fs.write", "shell.exec", "net") and
// its behaviour hints, as in MCP tool annotations.
type Permissions struct {
	Capabilities []string `json:"capabilities,omitempty"`
	Hints
}

// Hints describe a tool's behaviour, as MCP annotations do. A nil hint is
// unspecified; [Hints.Resolved] applies the MCP defaults (not read-only,
// destructive, not idempotent, open-world), so a tool that says nothing is
// treated as the most dangerous kind.
type Hints struct {
	ReadOnly    *bool `json:"readOnly,omitempty"`
	Destructive *bool `json:"destructive,omitempty"`
	Idempotent  *bool `json:"idempotent,omitempty"`
	OpenWorld   *bool `json:"openWorld,omitempty"`
}

// ResolvedHints are hints with the MCP defaults applied.
type ResolvedHints struct {
	ReadOnly    bool `json:"read_only"`
	Destructive bool `json:"destructive"`
	Idempotent  bool `json:"idempotent"`
	OpenWorld   bool `json:"open_world"`
}

// Names lists the hints that hold, for display: "read-only",
// "destructive", "idempotent", "open-world".
func (h ResolvedHints) Names() []string {
	var out []string
	for _, x := range []struct {
		on   bool
		name string
	}{{h.ReadOnly, "read-only"}, {h.Destructive, "destructive"}, {h.Idempotent, "idempotent"}, {h.OpenWorld, "open-world"}} {
		if x.on {
			out = append(out, x.name)
		}
	}
	return out
}

// Resolved applies the MCP defaults to unspecified hints. A read-only tool
// is never destructive, whatever its destructive hint says (the MCP spec
// gives destructiveHint meaning only when readOnlyHint is false).
func (h Hints) Resolved() ResolvedHints {
	r := ResolvedHints{
		ReadOnly:    deref(h.ReadOnly, false),
		Destructive: deref(h.Destructive, true),
		Idempotent:  deref(h.Idempotent, false),
		OpenWorld:   deref(h.OpenWorld, true),
	}
	if r.ReadOnly {
		r.Destructive = false
	}
	return r
}

func deref(b *bool, def bool) bool {
	if b == nil {
		return def
	}
	return *b
}

// Bool returns a pointer to b, for filling [Hints].
func Bool(b bool) *bool { return &b }

// ReadOnlyHints are the hints of a tool that only reads its local
// environment: read-only, idempotent, closed-world.
func ReadOnlyHints() Hints {
	return Hints{ReadOnly: Bool(true), Destructive: Bool(false), Idempotent: Bool(true), OpenWorld: Bool(false)}
}

// ToolHandler runs a tool. It receives the call with its arguments already
// validated (call.Args holds them decoded). It returns a Result, or a Go
// error that the pipeline turns into a runtime-error Result. It should
// return promptly when ctx is done; the pipeline does not wait for it past
// the deadline.
type ToolHandler func(ctx context.Context, call *Call) (*Result, error)

// ToolDef is the declarative part of a tool, given to the constructors.
type ToolDef struct {
	Name         string
	Title        string
	Description  string
	InputSchema  json.RawMessage // ignored by NewTypedTool
	OutputSchema json.RawMessage
	Permissions  Permissions
	Timeout      time.Duration
	// TimeoutSetting: see [Tool.TimeoutSetting].
	TimeoutSetting string
	Meta           map[string]json.RawMessage
	Annotations    json.RawMessage
	Icons          json.RawMessage
	// HonoursContext: see [Tool.HonoursContext].
	HonoursContext bool
	// TaskSupport: see [Tool.TaskSupport].
	TaskSupport string
	// TaskDirected: see [Tool.TaskDirected].
	TaskDirected bool
}

// The values of [Tool.TaskSupport] that allow task calls.
const (
	TaskOptional = "optional"
	TaskRequired = "required"
)

// toolNameRE leaves the length to [ValidToolName]: a counted repetition
// ({1,64}) compiles to a copy of its class per count, which cost every
// process a millisecond of start-up for nothing a length check does not do.
var toolNameRE = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// ValidToolName reports whether name fits the gateway's tool names:
// 1 to 64 characters of [A-Za-z0-9_-], which every MCP client and model API
// accepts.
func ValidToolName(name string) bool { return len(name) <= 64 && toolNameRE.MatchString(name) }

// NewTool builds a tool whose handler receives the whole [Call]: the raw
// argument bytes (call.Arguments) and their decoded form (call.Args). This
// is the form adapters use to pass calls on unchanged.
func NewTool(def ToolDef, h ToolHandler) (*Tool, error) {
	if !ValidToolName(def.Name) {
		return nil, fmt.Errorf("tool name %q: must be 1-64 characters of [A-Za-z0-9_-]", def.Name)
	}
	if h == nil {
		return nil, fmt.Errorf("tool %q: nil handler", def.Name)
	}
	if len(bytes.TrimSpace(def.InputSchema)) == 0 {
		def.InputSchema = json.RawMessage(`{"type":"object"}`)
	}
	sch, err := compileSchema("input", def.InputSchema)
	if err != nil {
		return nil, fmt.Errorf("tool %q: %w", def.Name, err)
	}
	if len(def.OutputSchema) > 0 {
		if _, err := compileSchema("output", def.OutputSchema); err != nil {
			return nil, fmt.Errorf("tool %q: %w", def.Name, err)
		}
	}
	switch def.TaskSupport {
	case "", TaskOptional, TaskRequired:
	default:
		return nil, fmt.Errorf("tool %q: task support %q: must be empty, %q or %q", def.Name, def.TaskSupport, TaskOptional, TaskRequired)
	}
	return &Tool{
		Name:           def.Name,
		Title:          def.Title,
		Description:    def.Description,
		InputSchema:    bytes.Clone(def.InputSchema),
		OutputSchema:   bytes.Clone(def.OutputSchema),
		Permissions:    def.Permissions,
		Timeout:        def.Timeout,
		TimeoutSetting: def.TimeoutSetting,
		Meta:           def.Meta,
		Annotations:    bytes.Clone(def.Annotations),
		Icons:          bytes.Clone(def.Icons),
		HonoursContext: def.HonoursContext,
		TaskSupport:    def.TaskSupport,
		TaskDirected:   def.TaskDirected,
		handler:        h,
		schema:         sch,
	}, nil
}

// NewDynamicTool builds a tool with a hand-written input schema whose handler
// gets the validated arguments decoded as a JSON object (numbers are
// json.Number, so large integers keep their precision). This is the seeds'
// CallableTool.
func NewDynamicTool(def ToolDef, h func(ctx context.Context, args map[string]any) (*Result, error)) (*Tool, error) {
	if h == nil {
		return nil, fmt.Errorf("tool %q: nil handler", def.Name)
	}
	return NewTool(def, func(ctx context.Context, call *Call) (*Result, error) {
		args, _ := call.Args.(map[string]any)
		if args == nil {
			args = map[string]any{}
		}
		return h(ctx, args)
	})
}

// NewTypedTool builds a tool whose input schema comes from the parameter
// struct In and whose handler gets the arguments decoded into an In. This is
// the seeds' CallableTool2. Tags: `json:"name,omitempty"` names a field (a
// field without omitempty is required); `jsonschema:"description=...,enum=a,enum=b,minimum=1,maximum=1000,default=10"`
// adds keywords (see invopop/jsonschema). def.InputSchema must be empty.
//
// The arguments reach an In as json.Unmarshal would put them there. When
// In's fields are all strings, booleans and numbers, the In is filled
// from the arguments the validation stage decoded rather than by decoding
// their bytes again (flatArgs); a member named twice then counts once,
// the last, as it did for the validation.
func NewTypedTool[In any](def ToolDef, h func(ctx context.Context, in In) (*Result, error)) (*Tool, error) {
	if h == nil {
		return nil, fmt.Errorf("tool %q: nil handler", def.Name)
	}
	if len(def.InputSchema) > 0 {
		return nil, fmt.Errorf("tool %q: a typed tool's schema comes from its parameter type; InputSchema must be empty", def.Name)
	}
	schema, err := schemaFor(reflect.TypeFor[In]())
	if err != nil {
		return nil, fmt.Errorf("tool %q: %w", def.Name, err)
	}
	def.InputSchema = schema
	name := def.Name
	flat := newFlatArgs(reflect.TypeFor[In]())
	return NewTool(def, func(ctx context.Context, call *Call) (*Result, error) {
		var in In
		if len(call.Arguments) > 0 && (flat == nil || !flat.fill(call.Args, reflect.ValueOf(&in).Elem())) {
			var zero In
			in = zero // what fill may have set
			if err := decodeTyped(call, &in); err != nil {
				return InvalidArgumentsResult(name, err.Error()), nil
			}
		}
		return h(ctx, in)
	})
}

// NewTypedToolOut builds a typed tool ([NewTypedTool]) with typed output:
// its output schema comes from the struct Out, generated as the input
// schema is (flat: no $ref, no titles; a field without omitempty is
// required), and its handler returns an Out beside its [Result]. The Out
// is encoded as the result's structured content (MCP structuredContent,
// advertised with outputSchema) and checked against the output schema,
// compiled when the tool is built: an Out that does not match it (a nil
// slice where the schema wants an array, a value outside a bound) makes
// the call a runtime error that says where, so a client never receives
// structured content that breaks the schema the tool advertises.
//
// If the handler returns a nil Result, the result's text is the Out's
// JSON. If it returns an error Result (IsError) or a Go error, the Out is
// ignored. def.InputSchema and def.OutputSchema must be empty.
//
// It is a function of its own rather than a second type parameter of
// [NewTypedTool] (Go has no default type arguments), so that tools without
// structured output keep the one-parameter form NewTypedTool[In].
func NewTypedToolOut[In, Out any](def ToolDef, h func(ctx context.Context, in In) (*Result, Out, error)) (*Tool, error) {
	if h == nil {
		return nil, fmt.Errorf("tool %q: nil handler", def.Name)
	}
	if len(def.OutputSchema) > 0 {
		return nil, fmt.Errorf("tool %q: a typed output's schema comes from its output type; OutputSchema must be empty", def.Name)
	}
	raw, err := schemaFor(reflect.TypeFor[Out]())
	if err != nil {
		return nil, fmt.Errorf("tool %q: output: %w", def.Name, err)
	}
	outSchema, err := compileSchema("output", raw)
	if err != nil {
		return nil, fmt.Errorf("tool %q: %w", def.Name, err)
	}
	def.OutputSchema = raw
	name := def.Name
	return NewTypedTool(def, func(ctx context.Context, in In) (*Result, error) {
		res, out, err := h(ctx, in)
		if err != nil || (res != nil && res.IsError) {
			return res, err
		}
		structured, err := json.Marshal(out)
		if err != nil {
			return RuntimeErrorResult(name, fmt.Errorf("encoding structured output: %w", err)), nil
		}
		if msg := checkStructured(outSchema, structured); msg != "" {
			return RuntimeErrorResult(name, fmt.Errorf("structured output does not match the tool's output schema: %s", msg)), nil
		}
		if res == nil {
			res = OkText(string(structured))
		}
		res.Structured = structured
		return res, nil
	})
}

// checkStructured validates structured output (JSON) against a compiled
// output schema and returns what is wrong with it, or "".
func checkStructured(sch *jsonschema.Schema, structured []byte) string {
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(structured))
	if err != nil {
		return err.Error()
	}
	if err := sch.Validate(inst); err != nil {
		return describeValidation(sch, err)
	}
	return ""
}

// decodeTyped decodes validated arguments into a typed tool's struct.
// JSON Schema's "integer" admits 5.0 and 1e2, which encoding/json will not
// put in a Go integer; such numbers are rewritten as plain integers and
// decoding is tried again. What still does not fit (an integer beyond the
// field's range, say) is an invalid-arguments error that says where.
func decodeTyped(call *Call, in any) error {
	err := json.Unmarshal(call.Arguments, in)
	if err == nil {
		return nil
	}
	var te *json.UnmarshalTypeError
	if !errors.As(err, &te) {
		return err
	}
	if args, ok := call.Args.(map[string]any); ok {
		if b, changed := integralNumbers(args); changed {
			if err2 := json.Unmarshal(b, in); err2 == nil {
				return nil
			} else if errors.As(err2, &te) {
				err = err2
			}
		}
	}
	field := "/" + strings.ReplaceAll(te.Field, ".", "/")
	return fmt.Errorf("at '%s': %s does not fit the parameter's type (%s)", field, te.Value, te.Type)
}

// integralNumbers re-encodes decoded arguments with every json.Number that
// holds an integral value (5.0, 1e2) written as an integer, and reports
// whether anything changed.
func integralNumbers(args map[string]any) ([]byte, bool) {
	changed := false
	var walk func(v any) any
	walk = func(v any) any {
		switch x := v.(type) {
		case json.Number:
			s := string(x)
			if !strings.ContainsAny(s, ".eE") {
				return x
			}
			r, ok := new(big.Rat).SetString(s)
			if !ok || !r.IsInt() {
				return x
			}
			changed = true
			return json.Number(r.Num().String())
		case map[string]any:
			out := make(map[string]any, len(x))
			for k, e := range x {
				out[k] = walk(e)
			}
			return out
		case []any:
			out := make([]any, len(x))
			for i, e := range x {
				out[i] = walk(e)
			}
			return out
		}
		return v
	}
	norm := walk(args)
	if !changed {
		return nil, false
	}
	b, err := json.Marshal(norm)
	if err != nil {
		return nil, false
	}
	return b, true
}

// Must returns t, and panics if err is not nil. It is for tools built from
// constants in the program, where a bad schema is a programming error.
func Must(t *Tool, err error) *Tool {
	if err != nil {
		panic(err)
	}
	return t
}

// Renamed returns a copy of t served under another name (the handler and
// compiled schema are shared).
func (t *Tool) Renamed(name string) (*Tool, error) {
	if !ValidToolName(name) {
		return nil, fmt.Errorf("tool name %q: must be 1-64 characters of [A-Za-z0-9_-]", name)
	}
	c := *t
	c.Name = name
	return &c, nil
}

// Handler returns the tool's handler, for a pipeline's execute stage.
func (t *Tool) Handler() ToolHandler { return t.handler }

// Validate checks decoded arguments against the compiled input schema and
// returns a message listing each problem with its location, or "".
func (t *Tool) Validate(args any) string {
	if t.schema == nil {
		return ""
	}
	if err := t.schema.Validate(args); err != nil {
		return describeValidation(t.schema, err)
	}
	return ""
}
