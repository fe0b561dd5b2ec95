// Package definitions serves definition-only tools (seed 003): tools
// declared in configuration with a name, a description and schemas but no
// handler. toolgate does not execute them. A call is resolved, validated,
// authorized and recorded like any other, then waits ("requires action")
// until its output is submitted: by an operator (`toolgate submit`, the
// admin HTTP API), or, with answer: person, by the person at the calling
// client through an elicitation form derived from the output schema. A
// submitted output is validated against the output schema when there is
// one; the call's deadline ends the wait with a timeout result.
package definitions

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/toolgate/toolgate/gateway"
	"github.com/toolgate/toolgate/gateway/operator"
)

// Name is the toolset's name.
const Name = "definitions"

// Answer modes of a definition.
const (
	AnswerOperator = "operator"
	AnswerPerson   = "person"
)

// DefaultTimeout is how long a call waits when its definition sets none.
const DefaultTimeout = 10 * time.Minute

// Definition is one tool declared in configuration.
type Definition struct {
	Name         string
	Description  string
	InputSchema  json.RawMessage
	OutputSchema json.RawMessage
	// Answer is operator (the default) or person.
	Answer  string
	Timeout time.Duration
}

// Waiter is where calls wait for an operator ([operator.Queue]).
type Waiter interface {
	Wait(ctx context.Context, it operator.Item, check func(operator.Answer) error) (operator.Answer, error)
}

// Options configure [New].
type Options struct {
	Definitions []Definition
	// Waiter is where calls wait for an operator; nil where none can
	// answer (no admin API serves the gateway): a call that would wait is
	// then answered unavailable at once ([operator.ErrNoOperator]), as an
	// approval is denied without a queue, rather than waiting out its
	// timeout for nobody.
	Waiter Waiter
	// Events, if set, records requires_action and its answer
	// (tool.requires_action, tool.action_submitted).
	Events gateway.EventRecorder
}

type def struct {
	Definition
	output *gateway.Tool // the output schema compiled, as a validator
}

// New builds the toolset. Schemas are checked (metaschema, compilation)
// here, so a broken definition fails at start with its name.
func New(opts Options) (*gateway.SimpleToolset, error) {
	var tools []*gateway.Tool
	for i, d := range opts.Definitions {
		key := fmt.Sprintf("definitions[%d] (%s)", i, d.Name)
		switch d.Answer {
		case "":
			d.Answer = AnswerOperator
		case AnswerOperator, AnswerPerson:
		default:
			return nil, fmt.Errorf("%s: answer %q is not one of operator, person", key, d.Answer)
		}
		if d.Timeout <= 0 {
			d.Timeout = DefaultTimeout
		}
		dd := &def{Definition: d}
		if len(bytes.TrimSpace(d.OutputSchema)) > 0 {
			v, err := newValidator(d.OutputSchema)
			if err != nil {
				return nil, fmt.Errorf("%s: output_schema: %w", key, err)
			}
			dd.output = v
		}
		t, err := gateway.NewTool(gateway.ToolDef{
			Name:           d.Name,
			Description:    d.Description,
			InputSchema:    d.InputSchema,
			OutputSchema:   d.OutputSchema,
			Timeout:        d.Timeout,
			TimeoutSetting: fmt.Sprintf("definitions[].timeout of %q", d.Name),
			// Answered by a person: nothing runs here. What the answer
			// does is the answerer's business, so the tool declares no
			// capability and is not destructive by itself.
			Permissions: gateway.Permissions{Hints: gateway.Hints{ReadOnly: gateway.Bool(false), Destructive: gateway.Bool(false), OpenWorld: gateway.Bool(false)}},
			// A person may take minutes: a client may call it as a task
			// and come back for the answer.
			TaskSupport: gateway.TaskOptional,
		}, func(ctx context.Context, call *gateway.Call) (*gateway.Result, error) {
			return handle(ctx, opts, dd, call)
		})
		if err != nil {
			return nil, fmt.Errorf("%s: %w", key, err)
		}
		tools = append(tools, t)
	}
	return gateway.NewToolset(Name, tools...)
}

// newValidator compiles an output schema, reusing a tool of its own: the
// same metaschema checks and validation as input schemas get.
func newValidator(schema json.RawMessage) (*gateway.Tool, error) {
	return gateway.NewTool(gateway.ToolDef{Name: "output", InputSchema: schema},
		func(context.Context, *gateway.Call) (*gateway.Result, error) { return nil, nil })
}

// check vets a submitted output against the output schema.
func (d *def) check(a operator.Answer) error {
	raw := bytes.TrimSpace(a.Output)
	if len(raw) == 0 && a.Decision != "" {
		return fmt.Errorf(`this call of %s waits for its output, not for an approval: answer {"output": <JSON value>} (toolgate submit CALL-ID JSON)`, d.Name)
	}
	if len(raw) == 0 {
		return errors.New("no output: submit a JSON value (a string is the output text)")
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return fmt.Errorf("the output is not JSON: %v", err)
	}
	if d.output != nil {
		if msg := d.output.Validate(v); msg != "" {
			return fmt.Errorf("the output does not match %s's output schema: %s", d.Name, msg)
		}
	}
	return nil
}

func handle(ctx context.Context, opts Options, d *def, call *gateway.Call) (*gateway.Result, error) {
	deadline, _ := ctx.Deadline()
	item := operator.Item{
		ID: call.ID, Kind: operator.KindOutput, Tool: call.Name, Toolset: call.Toolset,
		Session: call.SessionRef(), Client: call.Client, Created: time.Now(), Deadline: deadline,
		Arguments: gateway.RecordArguments(call), Description: d.Description, OutputSchema: d.OutputSchema,
	}
	event := func(typ string, fields map[string]any) {
		if opts.Events != nil {
			fields["call_id"], fields["tool"] = call.ID, call.Name
			opts.Events.Event(typ, fields)
		}
	}

	if d.Answer == AnswerPerson {
		out, err := askPerson(ctx, d, call)
		switch {
		case err == nil:
			event("tool.action_submitted", map[string]any{"by": "elicitation"})
			return result(d, out), nil
		case errors.Is(err, errDeclined):
			event("tool.action_submitted", map[string]any{"by": "elicitation", "declined": true})
			return gateway.Error("The person declined to answer.", "Declined by the person"), nil
		case !errors.Is(err, gateway.ErrClientCannot) && !errors.Is(err, gateway.ErrNoClient):
			return nil, err
		}
		// The client cannot ask its user: the operator answers instead.
	}

	if opts.Waiter == nil {
		return gateway.UnavailableResult(call.Name, operator.ErrNoOperator.Error()), nil
	}
	event("tool.requires_action", map[string]any{"deadline": deadline})
	a, err := opts.Waiter.Wait(ctx, item, d.check)
	if err != nil {
		if errors.Is(err, operator.ErrClosed) {
			return gateway.CancelledResult(call.Name), nil
		}
		return nil, err // the deadline or a cancellation: the execute stage says which
	}
	event("tool.action_submitted", map[string]any{"by": orDefault(a.By, "operator")})
	return result(d, a.Output), nil
}

// result turns a submitted output into the call's result: a JSON string is
// the output text; any other value is the output as JSON text and, with an
// output schema, the structured output too.
func result(d *def, out json.RawMessage) *gateway.Result {
	out = bytes.TrimSpace(out)
	var s string
	if json.Unmarshal(out, &s) == nil {
		return gateway.OkText(s).WithBrief("Answered")
	}
	res := gateway.OkText(string(out)).WithBrief("Answered")
	if d.output != nil {
		res.Structured = out
	}
	return res
}

var errDeclined = errors.New("declined")

// askPerson asks the calling client's user with elicitation/create (form
// mode): the form is the output schema when it is a flat object of
// primitive fields (what MCP elicitation forms allow), else one text field.
func askPerson(ctx context.Context, d *def, call *gateway.Call) (json.RawMessage, error) {
	schema, wrapped := formSchema(d.OutputSchema)
	var args string
	if b := gateway.RecordArguments(call); len(b) > 0 {
		args = gateway.Truncate(string(b), 2000)
	}
	params, _ := json.Marshal(map[string]any{
		"mode":            "form",
		"message":         fmt.Sprintf("The assistant called %s and waits for your answer.\n\n%s\n\nArguments: %s", d.Name, d.Description, args),
		"requestedSchema": schema,
	})
	raw, err := gateway.RequestFromClient(ctx, gateway.MethodElicitation, params)
	if err != nil {
		return nil, err
	}
	var res struct {
		Action  string          `json:"action"`
		Content json.RawMessage `json:"content"`
	}
	if err := json.Unmarshal(raw, &res); err != nil {
		return nil, fmt.Errorf("the client's elicitation answer does not decode: %w", err)
	}
	if res.Action != "accept" {
		return nil, errDeclined
	}
	out := res.Content
	if wrapped {
		var c struct {
			Answer string `json:"answer"`
		}
		_ = json.Unmarshal(res.Content, &c)
		out, _ = json.Marshal(c.Answer)
		if text := strings.TrimSpace(c.Answer); d.output != nil && json.Valid([]byte(text)) {
			// An output schema the form cannot show: the person types
			// the output as JSON, as on the operator page.
			out = json.RawMessage(text)
		}
	}
	if err := d.check(operator.Answer{Output: out}); err != nil {
		return nil, err
	}
	return out, nil
}

// formSchema is the elicitation form for an output schema, and whether the
// answer is wrapped in one text field.
func formSchema(output json.RawMessage) (any, bool) {
	var s struct {
		Type       string                     `json:"type"`
		Properties map[string]json.RawMessage `json:"properties"`
		Required   []string                   `json:"required"`
	}
	if json.Unmarshal(output, &s) == nil && s.Type == "object" && len(s.Properties) > 0 {
		flat := true
		for _, p := range s.Properties {
			var ps struct {
				Type string `json:"type"`
			}
			if json.Unmarshal(p, &ps) != nil || !strings.Contains(" string number integer boolean ", " "+ps.Type+" ") {
				flat = false
			}
		}
		if flat {
			return json.RawMessage(output), false
		}
	}
	return map[string]any{
		"type":       "object",
		"properties": map[string]any{"answer": map[string]any{"type": "string", "title": "Answer", "description": "The tool's output"}},
		"required":   []string{"answer"},
	}, true
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}
