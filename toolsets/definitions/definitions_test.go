package definitions

import (
	"encoding/json"
	"strings"
	"testing"

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
