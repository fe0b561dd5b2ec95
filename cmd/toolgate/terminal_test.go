package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/gateway"
)

// TestTerminalForm: the terminal client shows an elicitation form, asks
// its fields in the order the server wrote them, and takes each answer as
// its field's type, asking again until it fits; an end of input declines
// the form, and the end of the request's context ends the wait.
func TestTerminalForm(t *testing.T) {
	form := json.RawMessage(`{"mode": "form", "message": "Allow the tool send (toolset mail) to run?",
		"requestedSchema": {"type": "object", "required": ["decision", "count"], "properties": {
			"decision": {"type": "string", "enum": ["allow_once", "allow_session", "deny"], "enumNames": ["Allow once", "Allow this tool for this session", "Deny"]},
			"count": {"type": "integer", "title": "How many"},
			"urgent": {"type": "boolean"},
			"note": {"type": "string", "default": "none"}}}}`)
	for _, c := range []struct {
		name, input, want string
	}{
		{"by number", "3\n7\ny\n\n", `{"action":"accept","content":{"count":7,"decision":"deny","note":"none","urgent":true}}`},
		{"by value, after answers that do not fit", "x\n5\nallow_session\nlots\n\n2\nmaybe\nno\n\n", `{"action":"accept","content":{"count":2,"decision":"allow_session","note":"none","urgent":false}}`},
		{"a required field left empty", "\n\n", `{"action":"decline"}`},
		{"end of input", "", `{"action":"decline"}`},
		{"the last line without its newline", "2\n1\nn\nhello", `{"action":"accept","content":{"count":1,"decision":"allow_session","note":"hello","urgent":false}}`},
	} {
		var out bytes.Buffer
		c2 := &terminalClient{in: bufio.NewReader(strings.NewReader(c.input)), out: &out}
		got, err := c2.Request(context.Background(), gateway.MethodElicitation, form)
		if err != nil || string(got) != c.want {
			t.Errorf("%s: %s (%v), want %s\n%s", c.name, got, err, c.want, out.String())
		}
		if !strings.Contains(out.String(), "Allow the tool send") || !strings.Contains(out.String(), "2) Allow this tool for this session") {
			t.Errorf("%s: the form is not shown:\n%s", c.name, out.String())
		}
	}

	// Nobody answers: the request's context ends the wait.
	r, w := io.Pipe()
	defer w.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	c2 := &terminalClient{in: bufio.NewReader(r), out: io.Discard}
	if _, err := c2.Request(ctx, gateway.MethodElicitation, form); err == nil {
		t.Error("no answer and the context ended: no error")
	}
	if c2.CanRequest(gateway.MethodSampling) {
		t.Error("the terminal claims to sample")
	}
}

// TestTerminalFormKinds: every kind of field an MCP form has (2025-11-25)
// is asked as such, with its default shown and taken on Enter, and an
// answer out of its bounds asked again saying why; the form of
// server-everything's trigger-elicitation-request, cut down.
func TestTerminalFormKinds(t *testing.T) {
	form := json.RawMessage(`{"message": "Please provide inputs", "requestedSchema": {"type": "object", "required": ["name"], "properties": {
		"name": {"type": "string", "minLength": 2, "maxLength": 5},
		"email": {"type": "string", "format": "email"},
		"birthdate": {"type": "string", "format": "date"},
		"integer": {"type": "integer", "minimum": 1, "maximum": 100, "default": 42},
		"hero": {"type": "string", "oneOf": [{"const": "hero-1", "title": "Superman"}, {"const": "hero-2", "title": "Wonder Woman"}], "default": "hero-1"},
		"fish": {"type": "array", "minItems": 1, "maxItems": 2, "items": {"anyOf": [{"const": "fish-1", "title": "Tuna"}, {"const": "fish-2", "title": "Salmon"}, {"const": "fish-3", "title": "Trout"}]}, "default": ["fish-1"]},
		"instruments": {"type": "array", "items": {"type": "string", "enum": ["Guitar", "Piano", "Violin"]}},
		"agree": {"type": "boolean", "default": true}}}}`)
	input := strings.Join([]string{
		"A", "Annabel", "Ann", // name: too short, too long, fits
		"bad", "ann@example.com", // email
		"2000-13-01", "2000-01-02", // date
		"500", "7", // integer
		"",                   // hero: the default
		"1,2,3", "9", "3, 2", // fish: too many, none of them, two
		"3 1", // instruments
		"",    // agree: the default
	}, "\n") + "\n"
	var out bytes.Buffer
	c := &terminalClient{in: bufio.NewReader(strings.NewReader(input)), out: &out}
	got, err := c.Request(context.Background(), gateway.MethodElicitation, form)
	want := `{"action":"accept","content":{"agree":true,"birthdate":"2000-01-02","email":"ann@example.com","fish":["fish-3","fish-2"],"hero":"hero-1","instruments":["Violin","Guitar"],"integer":7,"name":"Ann"}}`
	if err != nil || string(got) != want {
		t.Errorf("answered %s (%v), want %s\n%s", got, err, want, out.String())
	}
	for _, shown := range []string{
		"at least 2 characters are asked", "at most 5 characters are asked",
		"an email address is asked", "a date is asked", "it must be at most 100",
		"[default: 42]", "2) Wonder Woman", "choose a number [default: Superman]",
		"choose numbers, separated by commas [default: Tuna]", `"1,2,3" is not an answer to this field: choose at most 2`,
		`"9" is none of the choices`, "[y/n] [default: y]",
	} {
		if !strings.Contains(out.String(), shown) {
			t.Errorf("the form does not show %q:\n%s", shown, out.String())
		}
	}
}

// TestTerminalURLElicitation: a URL-mode elicitation shows its URL, and
// Enter accepts it (the page was done), Ctrl-D declines.
func TestTerminalURLElicitation(t *testing.T) {
	params := json.RawMessage(`{"mode": "url", "message": "Sign in to the tracker", "url": "https://auth.example/start?x=1", "elicitationId": "e-1"}`)
	for input, want := range map[string]string{"\n": `{"action":"accept"}`, "": `{"action":"decline"}`} {
		var out bytes.Buffer
		c := &terminalClient{in: bufio.NewReader(strings.NewReader(input)), out: &out}
		got, err := c.Request(context.Background(), gateway.MethodElicitation, params)
		if err != nil || string(got) != want || !strings.Contains(out.String(), "Sign in to the tracker\nOpen https://auth.example/start?x=1\n") {
			t.Errorf("input %q: %s (%v), want %s\n%s", input, got, err, want, out.String())
		}
	}
}

// TestTerminalURLsFirst: a call answered -32042 (URL elicitation
// required) shows the pages to open, and Enter calls again; Ctrl-D gives
// up, and any other answer is not asked about.
func TestTerminalURLsFirst(t *testing.T) {
	required := gateway.RequestErrorResult(&gateway.RequestError{Code: -32042, Message: "upstream \"u\" needs a URL elicitation",
		Data: json.RawMessage(`{"elicitations":[{"mode":"url","message":"Sign in first","url":"https://auth.example/start","elicitationId":"e-1"}]}`)})
	for _, c := range []struct {
		res   *gateway.Result
		input string
		again bool
	}{
		{required, "\n", true},
		{required, "", false},
		{gateway.RequestErrorResult(&gateway.RequestError{Code: -32602, Message: "bad"}), "\n", false},
		{gateway.OkText("done"), "\n", false},
	} {
		var out bytes.Buffer
		tc := &terminalClient{in: bufio.NewReader(strings.NewReader(c.input)), out: &out}
		again := tc.urlsFirst(context.Background(), c.res)
		shown := strings.Contains(out.String(), "Sign in first\nOpen https://auth.example/start\n")
		if again != c.again || shown != (c.res == required) {
			t.Errorf("%s, input %q: again %v, shown %v\n%s", c.res.Message, c.input, again, shown, out.String())
		}
	}
}

// TestCallAsksAtTheTerminal: toolgate call run at a terminal asks there for
// a call's approval (policy.approval, channel client) and for a person's
// answer to a definition-only tool; not with channel operator, nor when
// stdin is no terminal; and what would wait for an operator is refused at
// once, as toolgate call serves no admin API.
func TestCallAsksAtTheTerminal(t *testing.T) {
	defer func(f func(io.Reader) bool) { isTerminal = f }(isTerminal)
	terminal := true
	isTerminal = func(io.Reader) bool { return terminal }
	dir := t.TempDir()
	t.Chdir(dir)
	t.Setenv("XDG_STATE_HOME", filepath.Join(dir, "state"))
	root := filepath.Join(dir, "root")
	if err := os.Mkdir(root, 0o755); err != nil {
		t.Fatal(err)
	}
	config := func(channel string) {
		t.Helper()
		cfg := "sandbox: {roots: [" + root + "]}\npolicy:\n  approval: {tools: [write_file], channel: " + channel + ", timeout: 20s}\n" +
			"definitions:\n  - name: verdict\n    description: Ask for a verdict.\n    answer: person\n" +
			"    output_schema: {type: object, properties: {verdict: {type: string, enum: [approve, reject]}}, required: [verdict]}\n" +
			"  - name: ask_operator\n    description: Ask the operator.\n    timeout: 20s\n"
		if err := os.WriteFile("toolgate.yaml", []byte(cfg), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	call := func(input string, args ...string) (int, string, string) {
		var stdout, stderr bytes.Buffer
		code := Main(context.Background(), append([]string{"call"}, args...), strings.NewReader(input), &stdout, &stderr)
		return code, stdout.String(), stderr.String()
	}
	config("client")
	code, out, errOut := call("1\n", "write_file", `{"path":"a.txt","content":"yes"}`)
	if b, _ := os.ReadFile(filepath.Join(root, "a.txt")); code != exitOK || string(b) != "yes" || !strings.Contains(errOut, "Allow the tool write_file") {
		t.Errorf("allowed at the terminal: exit %d, file %q\n%s\n%s", code, b, out, errOut)
	}
	code, out, errOut = call("3\n", "write_file", `{"path":"b.txt","content":"no"}`)
	if _, err := os.Stat(filepath.Join(root, "b.txt")); code != exitFailure || err == nil || !strings.Contains(out, "denied") {
		t.Errorf("denied at the terminal: exit %d (file written: %v)\n%s\n%s", code, err == nil, out, errOut)
	}
	code, out, errOut = call("2\n", "verdict", `{}`)
	if code != exitOK || !strings.Contains(out, `"verdict":"reject"`) {
		t.Errorf("a person's answer at the terminal: exit %d\n%s\n%s", code, out, errOut)
	}
	// The form is in the run archive, as the MCP mirror records a relay.
	if i := strings.Index(errOut, "recorded in "); i < 0 {
		t.Errorf("no run named:\n%s", errOut)
	} else {
		events, _ := os.ReadFile(filepath.Join(strings.TrimSpace(errOut[i+len("recorded in "):]), "events.jsonl"))
		var relay map[string]any
		for _, line := range strings.Split(string(events), "\n") {
			if strings.Contains(line, `"type":"relay.elicitation"`) {
				_ = json.Unmarshal([]byte(line), &relay)
			}
		}
		if relay["action"] != "accept" || relay["tool"] != "verdict" || relay["client"] != "toolgate-cli" || relay["status"] != "ok" || relay["call_id"] == nil {
			t.Errorf("the form's event %v; events:\n%s", relay, events)
		}
	}
	// Not asked: stdin is no terminal, or the operator must decide. Either
	// is denied at once, saying that nobody can be asked: toolgate call
	// serves no admin API. (It waited out policy.approval.timeout in the
	// queue of the definition-only tools, and was denied as expired.)
	const nobody = "no admin API is configured"
	terminal = false
	if code, out, errOut := call("1\n", "write_file", `{"path":"c.txt","content":"x"}`); code != exitFailure || strings.Contains(errOut, "Allow the tool") || !strings.Contains(out, nobody) {
		t.Errorf("stdin no terminal: exit %d\n%s\n%s", code, out, errOut)
	}
	// Nor is an operator's answer, or a person's where nobody is at the
	// terminal: refused at once (they waited out their timeout, 10
	// minutes by default, for nobody).
	const noOperator = "an operator answers this tool, and none can here"
	for _, tool := range []string{"ask_operator", "verdict"} {
		if code, out, errOut := call("", tool, `{}`); code != exitFailure || !strings.Contains(out, noOperator) {
			t.Errorf("%s with nobody to answer: exit %d\n%s\n%s", tool, code, out, errOut)
		}
	}
	terminal = true
	config("operator")
	if code, out, errOut := call("1\n", "write_file", `{"path":"d.txt","content":"x"}`); code != exitFailure || strings.Contains(errOut, "Allow the tool") || !strings.Contains(out, nobody) {
		t.Errorf("channel operator: exit %d\n%s\n%s", code, out, errOut)
	}
}
