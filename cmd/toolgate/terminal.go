package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/toolgate/toolgate/gateway"
	"golang.org/x/term"
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

// formField is a property of an elicitation form's schema: MCP forms are
// flat, of strings, numbers, integers and booleans, a string maybe an
// enum.
type formField struct {
	Type        string   `json:"type"`
	Title       string   `json:"title"`
	Description string   `json:"description"`
	Enum        []string `json:"enum"`
	EnumNames   []string `json:"enumNames"`
	Default     any      `json:"default"`
}

// Request shows the form and asks each field in turn. An end of input
// (Ctrl-D) declines the form, as dismissing it does in a window.
func (c *terminalClient) Request(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	if method != gateway.MethodElicitation {
		return nil, fmt.Errorf("%s: %w", method, gateway.ErrClientCannot)
	}
	var form struct {
		Message string `json:"message"`
		Schema  struct {
			Properties json.RawMessage `json:"properties"` // kept for its order
			Required   []string        `json:"required"`
		} `json:"requestedSchema"`
	}
	var fields map[string]formField
	if err := json.Unmarshal(params, &form); err != nil {
		return nil, fmt.Errorf("the form does not decode: %w", err)
	}
	if len(form.Schema.Properties) > 0 {
		if err := json.Unmarshal(form.Schema.Properties, &fields); err != nil {
			return nil, fmt.Errorf("the form's fields do not decode: %w", err)
		}
	}
	fmt.Fprintf(c.out, "\n%s\n", strings.TrimSpace(form.Message))
	content := map[string]any{}
	for _, name := range memberNames(form.Schema.Properties) {
		v, err := c.ask(ctx, name, fields[name], slices.Contains(form.Schema.Required, name))
		if errors.Is(err, io.EOF) {
			fmt.Fprintln(c.out, "(declined)")
			return json.RawMessage(`{"action":"decline"}`), nil
		}
		if err != nil {
			return nil, err
		}
		if v != nil {
			content[name] = v
		}
	}
	return json.Marshal(map[string]any{"action": "accept", "content": content})
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
// field that is not required.
func (c *terminalClient) ask(ctx context.Context, name string, f formField, required bool) (any, error) {
	label := f.Title
	if label == "" {
		label = name
	}
	if f.Description != "" {
		label += " (" + f.Description + ")"
	}
	for {
		switch {
		case len(f.Enum) > 0:
			fmt.Fprintf(c.out, "%s:\n", label)
			for i, v := range f.Enum {
				shown := v
				if i < len(f.EnumNames) {
					shown = f.EnumNames[i]
				}
				fmt.Fprintf(c.out, "  %d) %s\n", i+1, shown)
			}
			fmt.Fprint(c.out, "choose a number: ")
		case f.Type == "boolean":
			fmt.Fprintf(c.out, "%s [y/n]: ", label)
		default:
			fmt.Fprintf(c.out, "%s: ", label)
		}
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
		if v, ok := f.parse(line); ok {
			return v, nil
		}
		fmt.Fprintf(c.out, "%q is not an answer to this field\n", line)
	}
}

// parse takes a typed answer as the field's value.
func (f formField) parse(s string) (any, bool) {
	switch {
	case len(f.Enum) > 0:
		if i, err := strconv.Atoi(s); err == nil && i >= 1 && i <= len(f.Enum) {
			return f.Enum[i-1], true
		}
		if slices.Contains(f.Enum, s) {
			return s, true
		}
		return nil, false
	case f.Type == "boolean":
		switch strings.ToLower(s) {
		case "y", "yes", "true":
			return true, true
		case "n", "no", "false":
			return false, true
		}
		return nil, false
	case f.Type == "integer":
		n, err := strconv.ParseInt(s, 10, 64)
		return n, err == nil
	case f.Type == "number":
		n, err := strconv.ParseFloat(s, 64)
		return n, err == nil
	}
	return s, true
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
