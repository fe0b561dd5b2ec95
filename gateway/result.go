package gateway

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// Result is what every call returns, success or failure (the seeds'
// ToolReturnValue). Failures are values, never panics or Go errors: a
// missing tool, bad arguments, a denied permission, a timeout and a crashing
// handler all come back as a Result with IsError set and Kind saying which.
//
// The model sees Output and Message; humans see Display (and Brief); Extras
// carry data for debugging and tests. Structured is the typed output
// (MCP structuredContent) for tools that declare an output schema.
type Result struct {
	IsError bool
	// Output is the content for the model. A plain string output is one
	// [TextPart].
	Output []Part
	// Message explains the output (or the error) to the model.
	Message string
	// Display holds blocks for humans; the first [BriefBlock] is the brief.
	Display []DisplayBlock
	// Extras holds debug or test data; it must encode as JSON.
	Extras map[string]any
	// Structured is the JSON of the structured output, if any.
	Structured json.RawMessage
	// Meta holds _meta members that are not toolgate's own, as received
	// from an upstream server, so they pass through unchanged.
	Meta map[string]json.RawMessage
	// Kind classifies the result; see the Kind constants. It is empty for
	// a success.
	Kind Kind
	// InputRequests, for a result of kind [KindInputRequired], are the
	// requests a 2026-07-28 client answers before it repeats the call
	// (SEP-2322 multi round-trip): each a raw {"method", "params"} by id.
	// RequestState is the opaque state the client echoes back with them.
	InputRequests map[string]json.RawMessage
	RequestState  string
	// Refusal is the JSON-RPC error of a result of kind
	// [KindRequestError].
	Refusal *RequestError
	// Cause, on a tool error, is the protocol-level error it stands for:
	// an upstream's JSON-RPC error answering the call. The model sees
	// the tool error; a task of the 2026-07-28 tasks extension, which
	// tells the two apart, fails with the cause (mcp_taskext.go).
	Cause *RequestError

	// withdrawn, on a round of an exchange (exchange.go), is closed once
	// its question no longer stands: a task waiting for the answer goes on
	// without it.
	withdrawn <-chan struct{}
}

// Kind says how a call ended. Success has the empty Kind.
type Kind string

// Result kinds. Every error Result has one of these.
const (
	KindToolError   Kind = "tool_error"        // the tool ran and reported a failure
	KindNotFound    Kind = "not_found"         // no tool by that name
	KindParse       Kind = "parse_error"       // arguments are not a JSON object
	KindInvalid     Kind = "invalid_arguments" // arguments break the input schema
	KindDenied      Kind = "permission_denied" // the policy refused the call
	KindTimeout     Kind = "timeout"           // the call ran past its deadline
	KindCancelled   Kind = "cancelled"         // the caller cancelled or went away
	KindRuntime     Kind = "runtime_error"     // the handler panicked or returned nothing usable
	KindUnavailable Kind = "unavailable"       // the toolset cannot serve now (shutdown, upstream down)
	// KindInputRequired is not an error: this round of the call needs the
	// client's answers ([Result.InputRequests]) before it can go on.
	KindInputRequired Kind = "input_required"
	// KindRequestError refuses the request itself: the client gets a
	// JSON-RPC error, not a tool result (a round's request state that is
	// forged or stale, an upstream's protocol error in a round).
	KindRequestError Kind = "request_error"
)

// Status is the record form of the kind: "ok" for success.
func (r *Result) Status() string {
	if r == nil {
		return string(KindRuntime)
	}
	if r.Kind == KindInputRequired {
		return string(KindInputRequired)
	}
	if !r.IsError {
		return "ok"
	}
	if r.Kind == "" {
		return string(KindToolError)
	}
	return string(r.Kind)
}

// Ok returns a successful result with the given output parts.
func Ok(parts ...Part) *Result { return &Result{Output: parts} }

// OkText returns a successful result whose output is text; an empty text
// is no output at all (an empty directory listed, an empty file read:
// the message says so), as an empty text block says nothing and some
// model APIs refuse one in a tool's result.
func OkText(text string) *Result {
	// The result, its one part and room for one display block (the brief
	// most tools add) in one allocation. Output and Display have capacity
	// 1: an append moves them out.
	r := &struct {
		Result
		out     [1]Part
		display [1]DisplayBlock
	}{}
	if text != "" {
		r.out[0] = Text(text)
		r.Output = r.out[:]
	}
	r.Display = r.display[:0]
	return &r.Result
}

// Error returns a tool error: the tool ran and failed. message is for the
// model, brief for humans (it becomes a [BriefBlock] when not empty).
func Error(message, brief string) *Result {
	r := &Result{IsError: true, Kind: KindToolError, Message: message}
	return r.WithBrief(brief)
}

// Errorf returns a tool error whose message and brief are the formatted text.
func Errorf(format string, args ...any) *Result {
	msg := fmt.Sprintf(format, args...)
	return Error(msg, msg)
}

func kindError(kind Kind, message, brief string) *Result {
	r := &Result{IsError: true, Kind: kind, Message: message}
	return r.WithBrief(brief)
}

// NotFoundResult reports that no tool is called name.
func NotFoundResult(name string) *Result {
	return kindError(KindNotFound, fmt.Sprintf("Tool `%s` not found", name), fmt.Sprintf("Tool `%s` not found", name))
}

// ParseErrorResult reports arguments that could not be decoded.
func ParseErrorResult(err error) *Result {
	return kindError(KindParse, "Error parsing JSON arguments: "+err.Error(), "Invalid arguments")
}

// InvalidArgumentsResult reports arguments that break the tool's schema.
// detail lists each problem with where it is, e.g. `at '/limit': maximum 1000, got 5000`.
func InvalidArgumentsResult(tool, detail string) *Result {
	return kindError(KindInvalid,
		fmt.Sprintf("Invalid arguments for tool `%s`: %s", tool, detail),
		"Invalid arguments")
}

// DeniedResult reports a call the policy refused, naming the tool, the
// capabilities involved and the deciding layer and rule.
func DeniedResult(tool string, d Decision) *Result {
	var b strings.Builder
	fmt.Fprintf(&b, "Permission denied: tool `%s`", tool)
	if len(d.Missing) > 0 {
		fmt.Fprintf(&b, " needs %s", strings.Join(d.Missing, ", "))
	}
	if d.Layer != "" || d.Rule != "" {
		fmt.Fprintf(&b, " (denied by %s rule %q)", orDash(d.Layer), d.Rule)
	}
	if d.Reason != "" {
		fmt.Fprintf(&b, ": %s", d.Reason)
	}
	r := kindError(KindDenied, b.String(), fmt.Sprintf("Permission denied: %s", tool))
	r.Extras = map[string]any{"decision": d}
	return r
}

// TimeoutResult reports a call that ran past its deadline, which the
// setting named gives ("" when unknown).
func TimeoutResult(tool string, after time.Duration, setting string) *Result {
	msg := fmt.Sprintf("Tool `%s` timed out after %s", tool, after.Round(time.Millisecond))
	if setting != "" {
		msg += fmt.Sprintf(" (the deadline %s gives its calls)", setting)
	}
	return kindError(KindTimeout, msg, fmt.Sprintf("Timed out after %s", after.Round(time.Millisecond)))
}

// CancelledResult reports a call the caller cancelled.
func CancelledResult(tool string) *Result {
	return kindError(KindCancelled, fmt.Sprintf("Tool `%s` was cancelled", tool), "Cancelled")
}

// RuntimeErrorResult reports a handler failure: a panic, a Go error, or no
// usable result.
func RuntimeErrorResult(tool string, err error) *Result {
	return kindError(KindRuntime, fmt.Sprintf("Tool `%s` failed: %v", tool, err), "Tool failed")
}

// UnavailableResult reports a tool that cannot be served right now.
func UnavailableResult(tool, why string) *Result {
	return kindError(KindUnavailable, fmt.Sprintf("Tool `%s` is unavailable: %s", tool, why), "Unavailable")
}

// WithMessage sets the message for the model and returns r.
func (r *Result) WithMessage(m string) *Result { r.Message = m; return r }

// WithBrief puts a [BriefBlock] first in the display (replacing an existing
// first brief) and returns r. An empty brief changes nothing.
func (r *Result) WithBrief(brief string) *Result {
	if brief == "" {
		return r
	}
	for i, b := range r.Display {
		if _, ok := b.(BriefBlock); ok {
			r.Display[i] = BriefBlock{Text: brief}
			return r
		}
	}
	r.Display = slices.Insert(r.Display, 0, DisplayBlock(BriefBlock{Text: brief}))
	return r
}

// WithDisplay appends display blocks and returns r.
func (r *Result) WithDisplay(blocks ...DisplayBlock) *Result {
	r.Display = append(r.Display, blocks...)
	return r
}

// WithExtra sets one extras entry and returns r.
func (r *Result) WithExtra(key string, value any) *Result {
	if r.Extras == nil {
		r.Extras = map[string]any{}
	}
	r.Extras[key] = value
	return r
}

// Brief is the text of the first [BriefBlock], or "".
func (r *Result) Brief() string {
	if r == nil {
		return ""
	}
	for _, b := range r.Display {
		if bb, ok := b.(BriefBlock); ok {
			return bb.Text
		}
	}
	return ""
}

// OutputText joins the text of all text parts of the output.
func (r *Result) OutputText() string {
	var b strings.Builder
	for _, p := range r.Output {
		if t, ok := p.(TextPart); ok {
			if b.Len() > 0 {
				b.WriteByte('\n')
			}
			b.WriteString(t.Text)
		}
	}
	return b.String()
}

// resultJSON is the contract's JSON form of a Result (snake_case as in the
// seeds), used by `toolgate call` and in tests.
type resultJSON struct {
	IsError    bool                       `json:"is_error"`
	Kind       Kind                       `json:"kind,omitempty"`
	Output     json.RawMessage            `json:"output"`
	Message    string                     `json:"message"`
	Display    json.RawMessage            `json:"display"`
	Extras     map[string]any             `json:"extras,omitempty"`
	Brief      string                     `json:"brief"`
	Structured json.RawMessage            `json:"structured,omitempty"`
	Meta       map[string]json.RawMessage `json:"_meta,omitempty"`
}

// MarshalJSON encodes the result in the contract's form.
func (r Result) MarshalJSON() ([]byte, error) {
	out, err := partsJSON(r.Output)
	if err != nil {
		return nil, err
	}
	disp := []byte("[]")
	if len(r.Display) > 0 {
		if disp, err = marshalNoEscape(r.Display); err != nil {
			return nil, err
		}
	}
	return marshalNoEscape(resultJSON{
		IsError: r.IsError, Kind: r.Kind, Output: out, Message: r.Message,
		Display: disp, Extras: r.Extras, Brief: r.Brief(), Structured: r.Structured, Meta: r.Meta,
	})
}

// UnmarshalJSON decodes the contract's form (the brief is derived, so it is
// ignored on input).
func (r *Result) UnmarshalJSON(data []byte) error {
	var v resultJSON
	if err := json.Unmarshal(data, &v); err != nil {
		return err
	}
	*r = Result{IsError: v.IsError, Kind: v.Kind, Message: v.Message, Extras: v.Extras, Structured: v.Structured, Meta: v.Meta}
	if len(v.Output) > 0 && string(v.Output) != "null" {
		if v.Output[0] == '"' {
			var s string
			if err := json.Unmarshal(v.Output, &s); err != nil {
				return err
			}
			r.Output = []Part{Text(s)}
		} else {
			parts, err := unmarshalParts(v.Output)
			if err != nil {
				return err
			}
			r.Output = parts
		}
	}
	if len(v.Display) > 0 && string(v.Display) != "null" {
		blocks, err := unmarshalDisplay(v.Display)
		if err != nil {
			return err
		}
		r.Display = blocks
	}
	return nil
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// HumanSize formats a byte count compactly for briefs and messages:
// "812 B", "1.2 KiB", "3.4 MiB".
func HumanSize(n int64) string {
	switch {
	case n < 1<<10:
		return fmt.Sprintf("%d B", n)
	case n < 1<<20:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	case n < 1<<30:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	default:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	}
}

// Truncate shortens s to at most n bytes for a message, a log line or a
// record, cutting on a UTF-8 boundary and ending with "…" when it cut.
func Truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// RequestError refuses a request with a JSON-RPC error: the code, the
// message and the data (raw JSON, or nil for none) the client gets. The MCP
// mirror answers with it as is (it implements mcp-go's server.CodedError,
// a local patch; see third_party/README.md). Its JSON is the JSON-RPC
// error object, as a failed task of the tasks extension carries it.
type RequestError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

func (e *RequestError) Error() string    { return e.Message }
func (e *RequestError) JSONRPCCode() int { return e.Code }
func (e *RequestError) JSONRPCData() any {
	if len(e.Data) == 0 {
		return nil
	}
	return e.Data
}

// RequestErrorResult refuses the request with e (a JSON-RPC error to an
// MCP client).
func RequestErrorResult(e *RequestError) *Result {
	return &Result{IsError: true, Kind: KindRequestError, Message: e.Message, Refusal: e}
}

// InputRequiredResult is a round of a call that needs the client's answers
// to requests (for example an elicitation/create asking for approval)
// before it can go on: requests by id, each a raw {"method", "params"}.
func InputRequiredResult(requests map[string]json.RawMessage, state, message string) *Result {
	return &Result{Kind: KindInputRequired, InputRequests: requests, RequestState: state, Message: message}
}
