package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/mail"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/mark3labs/mcp-go/mcp"
	"golang.org/x/term"

	"github.com/toolgate/toolgate/gateway"
)

// terminalClient is what `toolgate call` is to the pipeline when a person
// runs it at a terminal: a client that shows elicitation forms, on stderr,
// and reads the answers from stdin. So a call that needs approval
// (policy.approval, channel client) is asked there, as an MCP client's user
// is asked in its window, and so is a definition-only tool answered by a
// person. As for any client, its answer is its user's word; with
// policy.approval.channel operator the operator is asked instead.
type terminalClient struct {
	in  *bufio.Reader
	out io.Writer
	// rec records each form in the run archive (relay.elicitation), as
	// the MCP mirror records what it relays; nil records nothing.
	rec gateway.EventRecorder
}

// isTerminal says whether r is a terminal a person types into (not a pipe,
// a file or /dev/null). A variable, so that tests can pretend.
var isTerminal = func(r io.Reader) bool {
	f, ok := r.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

func (*terminalClient) SessionID() string { return "" }

func (*terminalClient) Log(string, string, any) error {
	return errors.New("toolgate call shows no log messages")
}

func (*terminalClient) CanRequest(method string) bool { return method == gateway.MethodElicitation }

// The terminal is a 2025-11-25 client of both elicitation modes: an
// upstream's -32042 (URL elicitation required) comes back as that error,
// for urlsFirst to show.
func (*terminalClient) Modern() bool               { return false }
func (*terminalClient) CanAskInRounds(string) bool { return false }
func (*terminalClient) Capabilities() json.RawMessage {
	return json.RawMessage(`{"elicitation":{"form":{},"url":{}}}`)
}

// urlsFirst shows the pages a -32042 answer asks the person to open
// first, and reports whether to call again: Enter once they are done,
// Ctrl-D (or the end of ctx) to give up.
func (c *terminalClient) urlsFirst(ctx context.Context, res *gateway.Result) bool {
	if res.Refusal == nil || res.Refusal.Code != mcp.URL_ELICITATION_REQUIRED {
		return false
	}
	var data struct {
		Elicitations []struct {
			Message string `json:"message"`
			URL     string `json:"url"`
		} `json:"elicitations"`
	}
	if json.Unmarshal(res.Refusal.Data, &data) != nil || len(data.Elicitations) == 0 {
		return false
	}
	fmt.Fprintf(c.out, "\n%s\n", res.Message)
	for _, e := range data.Elicitations {
		fmt.Fprintf(c.out, "%s\nOpen %s\n", strings.TrimSpace(e.Message), e.URL)
	}
	fmt.Fprint(c.out, "in a browser; press Enter once it is done there, to call again (Ctrl-D gives up): ")
	_, err := c.readLine(ctx)
	return err == nil
}

// formField is a property of an elicitation form's schema. MCP forms are
// flat (2025-11-25, PrimitiveSchemaDefinition): a string (with a length
// and a format: email, uri, date, date-time), a number or integer (with a
// range), a boolean, or a choice: one of an enum (its names in enumNames,
// or titled with oneOf), or several (an array whose items are an enum, or
// titled with anyOf, with minItems and maxItems).
type formField struct {
	Type        string   `json:"type"`
	Title       string   `json:"title"`
	Description string   `json:"description"`
	Default     any      `json:"default"`
	Enum        []string `json:"enum"`
	EnumNames   []string `json:"enumNames"`
	OneOf       []choice `json:"oneOf"`
	Items       *struct {
		Enum  []string `json:"enum"`
		AnyOf []choice `json:"anyOf"`
	} `json:"items"`
	MinItems  *int     `json:"minItems"`
	MaxItems  *int     `json:"maxItems"`
	MinLength *int     `json:"minLength"`
	MaxLength *int     `json:"maxLength"`
	Minimum   *float64 `json:"minimum"`
	Maximum   *float64 `json:"maximum"`
	Format    string   `json:"format"`
}

// choice is one value a choice field offers, with its label.
type choice struct {
	Const string `json:"const"`
	Title string `json:"title"`
}

// choices are what the field offers to choose from, in order (none: the
// answer is typed).
func (f formField) choices() []choice {
	titled, plain, names := f.OneOf, f.Enum, f.EnumNames
	if f.Items != nil {
		titled, plain, names = f.Items.AnyOf, f.Items.Enum, nil
	}
	if len(titled) > 0 {
		return titled
	}
	cs := make([]choice, len(plain))
	for i, v := range plain {
		cs[i] = choice{Const: v, Title: v}
		if i < len(names) && names[i] != "" {
			cs[i].Title = names[i]
		}
	}
	return cs
}

// multiple says whether the field takes several choices.
func (f formField) multiple() bool { return f.Type == "array" }

// Request shows the form and asks each field in turn, and records it. An
// end of input (Ctrl-D) declines the form, as dismissing it does in a
// window.
func (c *terminalClient) Request(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	if method != gateway.MethodElicitation {
		return nil, fmt.Errorf("%s: %w", method, gateway.ErrClientCannot)
	}
	start := time.Now()
	answer, err := c.form(ctx, params)
	var out json.RawMessage
	if err == nil {
		out, err = json.Marshal(answer)
	}
	if c.rec != nil {
		fields := map[string]any{}
		if err == nil {
			fields["action"] = answer.Action
		}
		c.rec.Event(gateway.RelayEvent(method, gateway.CallFrom(ctx), fields, time.Since(start), err), fields)
	}
	return out, err
}

// formAnswer is the result of an elicitation/create.
type formAnswer struct {
	Action  string         `json:"action"`
	Content map[string]any `json:"content,omitempty"`
}

// declined is the answer of a form dismissed (Ctrl-D).
func (c *terminalClient) declined() formAnswer {
	fmt.Fprintln(c.out, "(declined)")
	return formAnswer{Action: "decline"}
}

// form shows the form of an elicitation/create and returns the answer.
func (c *terminalClient) form(ctx context.Context, params json.RawMessage) (formAnswer, error) {
	var form struct {
		Mode    string `json:"mode"`
		URL     string `json:"url"`
		Message string `json:"message"`
		Schema  struct {
			Properties json.RawMessage `json:"properties"` // kept for its order
			Required   []string        `json:"required"`
		} `json:"requestedSchema"`
	}
	var fields map[string]formField
	if err := json.Unmarshal(params, &form); err != nil {
		return formAnswer{}, fmt.Errorf("the form does not decode: %w", err)
	}
	if len(form.Schema.Properties) > 0 {
		if err := json.Unmarshal(form.Schema.Properties, &fields); err != nil {
			return formAnswer{}, fmt.Errorf("the form's fields do not decode: %w", err)
		}
	}
	fmt.Fprintf(c.out, "\n%s\n", strings.TrimSpace(form.Message))
	if form.Mode == mcp.ElicitationModeURL {
		// The server asks the person to open a page (a sign-in, a
		// payment): shown, never opened for them.
		fmt.Fprintf(c.out, "Open %s\nin a browser; press Enter once it is done there (Ctrl-D declines): ", form.URL)
		if _, err := c.readLine(ctx); errors.Is(err, io.EOF) {
			return c.declined(), nil
		} else if err != nil {
			return formAnswer{}, err
		}
		return formAnswer{Action: "accept"}, nil
	}
	content := map[string]any{}
	for _, name := range memberNames(form.Schema.Properties) {
		v, err := c.ask(ctx, name, fields[name], slices.Contains(form.Schema.Required, name))
		if errors.Is(err, io.EOF) {
			return c.declined(), nil
		}
		if err != nil {
			return formAnswer{}, err
		}
		if v != nil {
			content[name] = v
		}
	}
	return formAnswer{Action: "accept", Content: content}, nil
}

// memberNames are the names of a JSON object's members in the order they
// are written (a form's fields are asked in the order the server wrote
// them), each once.
func memberNames(obj json.RawMessage) []string {
	dec := json.NewDecoder(bytes.NewReader(obj))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil
	}
	var names []string
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return names
		}
		if name, ok := t.(string); ok && !slices.Contains(names, name) {
			names = append(names, name)
		}
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return names
		}
	}
	return names
}

// ask reads one field until the answer fits it; nil is no answer to a
// field that is not required. An empty line takes the default, which the
// prompt shows.
func (c *terminalClient) ask(ctx context.Context, name string, f formField, required bool) (any, error) {
	label := f.Title
	if label == "" {
		label = name
	}
	if f.Description != "" {
		label += " (" + f.Description + ")"
	}
	choices := f.choices()
	for {
		prompt := label
		if len(choices) > 0 {
			fmt.Fprintf(c.out, "%s:\n", label)
			for i, ch := range choices {
				fmt.Fprintf(c.out, "  %d) %s\n", i+1, ch.Title)
			}
			prompt = "choose a number"
			if f.multiple() {
				prompt = "choose numbers, separated by commas"
			}
		} else if f.Type == "boolean" {
			prompt += " [y/n]"
		}
		if d := f.shownDefault(choices); d != "" {
			prompt += " [default: " + d + "]"
		}
		fmt.Fprint(c.out, prompt+": ")
		line, err := c.readLine(ctx)
		if err != nil {
			return nil, err
		}
		if line == "" {
			if f.Default != nil {
				return f.Default, nil
			}
			if !required {
				return nil, nil
			}
			fmt.Fprintln(c.out, "an answer is required (Ctrl-D declines)")
			continue
		}
		v, why := f.parse(line, choices)
		if why == "" {
			return v, nil
		}
		fmt.Fprintf(c.out, "%q is not an answer to this field: %s\n", line, why)
	}
}

// shownDefault is the default as the prompt shows it: a choice by its
// label.
func (f formField) shownDefault(choices []choice) string {
	label := func(v any) string {
		s := fmt.Sprint(v)
		for _, ch := range choices {
			if ch.Const == s {
				return ch.Title
			}
		}
		return s
	}
	switch d := f.Default.(type) {
	case nil:
		return ""
	case bool:
		if d {
			return "y"
		}
		return "n"
	case []any:
		labels := make([]string, len(d))
		for i, v := range d {
			labels[i] = label(v)
		}
		return strings.Join(labels, ", ")
	default:
		return label(d)
	}
}

// parse takes a typed answer as the field's value, or says why it does
// not fit.
func (f formField) parse(s string, choices []choice) (any, string) {
	pick := func(s string) (string, bool) {
		if i, err := strconv.Atoi(s); err == nil && i >= 1 && i <= len(choices) {
			return choices[i-1].Const, true
		}
		for _, ch := range choices {
			if s == ch.Const {
				return s, true
			}
		}
		return "", false
	}
	between := func(n float64) string {
		switch {
		case f.Minimum != nil && n < *f.Minimum:
			return fmt.Sprintf("it must be at least %v", *f.Minimum)
		case f.Maximum != nil && n > *f.Maximum:
			return fmt.Sprintf("it must be at most %v", *f.Maximum)
		}
		return ""
	}
	switch {
	case f.multiple():
		var vs []string
		for _, part := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' }) {
			v, ok := pick(part)
			if !ok {
				return nil, fmt.Sprintf("%q is none of the choices", part)
			}
			if !slices.Contains(vs, v) {
				vs = append(vs, v)
			}
		}
		if f.MinItems != nil && len(vs) < *f.MinItems {
			return nil, fmt.Sprintf("choose at least %d", *f.MinItems)
		}
		if f.MaxItems != nil && len(vs) > *f.MaxItems {
			return nil, fmt.Sprintf("choose at most %d", *f.MaxItems)
		}
		return vs, ""
	case len(choices) > 0:
		if v, ok := pick(s); ok {
			return v, ""
		}
		return nil, "choose one of the numbers"
	case f.Type == "boolean":
		switch strings.ToLower(s) {
		case "y", "yes", "true":
			return true, ""
		case "n", "no", "false":
			return false, ""
		}
		return nil, "answer y or n"
	case f.Type == "integer":
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return nil, "a whole number is asked"
		}
		return n, between(float64(n))
	case f.Type == "number":
		n, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return nil, "a number is asked"
		}
		return n, between(n)
	}
	n := utf8.RuneCountInString(s)
	switch {
	case f.MinLength != nil && n < *f.MinLength:
		return nil, fmt.Sprintf("at least %d characters are asked", *f.MinLength)
	case f.MaxLength != nil && n > *f.MaxLength:
		return nil, fmt.Sprintf("at most %d characters are asked", *f.MaxLength)
	}
	return s, formatProblem(f.Format, s)
}

// formatProblem says why s is not of the string format a form asks for
// (none: it is, or the format is not one MCP forms name).
func formatProblem(format, s string) string {
	switch format {
	case "email":
		if a, err := mail.ParseAddress(s); err != nil || a.Address != s {
			return "an email address is asked (name@example.com)"
		}
	case "uri":
		if u, err := url.Parse(s); err != nil || u.Scheme == "" {
			return "a URI is asked (https://example.com/)"
		}
	case "date":
		if _, err := time.Parse(time.DateOnly, s); err != nil {
			return "a date is asked (2006-01-02)"
		}
	case "date-time":
		if _, err := time.Parse(time.RFC3339, s); err != nil {
			return "a date and time is asked (2006-01-02T15:04:05Z)"
		}
	}
	return ""
}

// readLine reads a line, or gives up when ctx ends (the approval's
// timeout, Ctrl-C): the read itself cannot be interrupted, so it goes on in
// its goroutine, and the form is over.
func (c *terminalClient) readLine(ctx context.Context) (string, error) {
	type read struct {
		line string
		err  error
	}
	ch := make(chan read, 1)
	go func() {
		line, err := c.in.ReadString('\n')
		ch <- read{line, err}
	}()
	select {
	case r := <-ch:
		if r.err != nil && (r.line == "" || !errors.Is(r.err, io.EOF)) {
			return "", r.err
		}
		return strings.TrimSpace(r.line), nil
	case <-ctx.Done():
		fmt.Fprintln(c.out)
		return "", ctx.Err()
	}
}
