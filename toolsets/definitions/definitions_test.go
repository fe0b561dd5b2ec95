package definitions

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/gateway"
	"github.com/toolgate/toolgate/gateway/operator"
)

func TestBrokenDefinitionsFailAtStart(t *testing.T) {
	q := operator.NewQueue()
	for _, c := range []struct {
		def  Definition
		want string
	}{
		{Definition{Name: "bad name!"}, "tool name"},
		{Definition{Name: "x", Answer: "robot"}, "not one of operator, person"},
		{Definition{Name: "x", InputSchema: json.RawMessage(`{"type":"objekt"}`)}, "definitions[0] (x)"},
		{Definition{Name: "x", OutputSchema: json.RawMessage(`{"type":"object","properties":{"a":{"type":"strng"}}}`)}, "output_schema"},
	} {
		_, err := New(Options{Definitions: []Definition{c.def}, Waiter: q})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want an error with %q", c.def, err, c.want)
		}
	}
}

func TestOutputCheck(t *testing.T) {
	v, err := newValidator(json.RawMessage(`{"type":"object","properties":{"verdict":{"enum":["approve","reject"]}},"required":["verdict"]}`))
	if err != nil {
		t.Fatal(err)
	}
	d := &def{Definition: Definition{Name: "v"}, output: v}
	for out, ok := range map[string]bool{`{"verdict":"approve"}`: true, `{"verdict":"maybe"}`: false, `{}`: false, `not json`: false, ``: false} {
		err := d.check(operator.Answer{Output: json.RawMessage(out)})
		if (err == nil) != ok {
			t.Errorf("check(%s) = %v, want ok=%v", out, err, ok)
		}
	}
}

// TestApprovalAnswerToAnOutputCall: a decision sent to a call that waits
// for its output is refused saying what the call waits for and how to
// answer it, not as an empty output.
func TestApprovalAnswerToAnOutputCall(t *testing.T) {
	d := &def{Definition: Definition{Name: "ask_reviewer"}}
	err := d.check(operator.Answer{Decision: operator.AllowOnce})
	if err == nil || !strings.Contains(err.Error(), "ask_reviewer waits for its output, not for an approval") || !strings.Contains(err.Error(), "toolgate submit") {
		t.Fatalf("got %v", err)
	}
}

func TestFormSchema(t *testing.T) {
	flat := json.RawMessage(`{"type":"object","properties":{"color":{"type":"string"},"n":{"type":"integer"}}}`)
	if s, wrapped := formSchema(flat); wrapped || string(s.(json.RawMessage)) != string(flat) {
		t.Errorf("a flat object schema is the form itself: %v %v", s, wrapped)
	}
	for _, nested := range []string{`{"type":"object","properties":{"a":{"type":"object"}}}`, `{"type":"array"}`, ``} {
		if _, wrapped := formSchema(json.RawMessage(nested)); !wrapped {
			t.Errorf("%s: want one text field", nested)
		}
	}
}

// TestWaitingCallShowsTheSessionDigest: a call waiting for the operator is
// listed (toolgate pending, the admin API, the page) with its session's
// digest, as every record and log shows it, never the MCP session id,
// which is a bearer credential for the session.
func TestWaitingCallShowsTheSessionDigest(t *testing.T) {
	q := operator.NewQueue()
	d := &def{Definition: Definition{Name: "ask", Answer: AnswerOperator}}
	const sid = "mcp-session-7f3a9c0e"
	call := &gateway.Call{ID: "c1", Name: "ask", Toolset: Name, Session: sid, Arguments: json.RawMessage(`{}`)}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _, _ = handle(ctx, Options{Waiter: q}, d, call) }()
	defer func() { cancel(); <-done }()
	var items []operator.Item
	for deadline := time.Now().Add(10 * time.Second); len(items) == 0 && time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		items = q.List()
	}
	if len(items) != 1 || items[0].Session != gateway.SessionRef(sid) {
		t.Fatalf("waiting calls %+v; want one, with session %q", items, gateway.SessionRef(sid))
	}
}

// TestNoOperatorIsUnavailable: where no operator can answer, a call that
// would wait for one is answered at once as unavailable, saying why.
func TestNoOperatorIsUnavailable(t *testing.T) {
	d := &def{Definition: Definition{Name: "ask", Answer: AnswerOperator}}
	res, err := handle(context.Background(), Options{}, d, &gateway.Call{ID: "c1", Name: "ask", Arguments: json.RawMessage(`{}`)})
	if err != nil || res == nil || !res.IsError || res.Kind != gateway.KindUnavailable || !strings.Contains(res.Message, "none can here") {
		t.Fatalf("got %+v, %v; want an unavailable result that says why", res, err)
	}
}

// personClient answers every elicitation with its text in the one field.
type personClient struct{ text string }

func (personClient) SessionID() string             { return "s" }
func (personClient) Log(string, string, any) error { return nil }
func (personClient) CanRequest(string) bool        { return true }
func (personClient) CanAskInRounds(string) bool    { return false }
func (personClient) Modern() bool                  { return false }
func (personClient) Capabilities() json.RawMessage { return json.RawMessage(`{"elicitation":{}}`) }
func (c personClient) Request(context.Context, string, json.RawMessage) (json.RawMessage, error) {
	b, _ := json.Marshal(map[string]any{"action": "accept", "content": map[string]any{"answer": c.text}})
	return b, nil
}

// TestPersonAnswersANestedOutput: with answer: person and an output schema
// the form cannot show (not a flat object), the person types the output
// in the one text field as JSON, as on the operator page; it is taken as
// that JSON value, not as a string that never matches the schema.
func TestPersonAnswersANestedOutput(t *testing.T) {
	schema := json.RawMessage(`{"type":"object","properties":{"items":{"type":"array","items":{"type":"string"}}},"required":["items"]}`)
	v, err := newValidator(schema)
	if err != nil {
		t.Fatal(err)
	}
	d := &def{Definition: Definition{Name: "ask", Answer: AnswerPerson, OutputSchema: schema}, output: v}
	ctx := gateway.WithClient(context.Background(), personClient{text: `{"items": ["a", "b"]}`})
	res, err := handle(ctx, Options{Waiter: operator.NewQueue()}, d, &gateway.Call{ID: "c1", Name: "ask", Arguments: json.RawMessage(`{}`)})
	if err != nil || res.IsError || string(res.Structured) != `{"items": ["a", "b"]}` {
		t.Fatalf("result %+v, err %v; want the structured output", res, err)
	}
}
