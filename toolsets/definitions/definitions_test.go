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
