package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/pflag"
	"github.com/toolgate/toolgate/cmd/toolgate/internal/config"
	"github.com/toolgate/toolgate/gateway"
	"github.com/toolgate/toolgate/gateway/operator"
)

// `toolgate pending` and `toolgate submit`: the operator's commands, over
// the admin API of a running serve (config admin.addr).

func init() {
	commands = append(commands,
		&command{
			name:  "pending",
			args:  "[--json] [--config FILE]",
			short: "list the calls waiting for an operator (definition-only tools)",
			flags: func(fs *pflag.FlagSet) {
				configFlags(fs)
				fs.Bool("json", false, "print JSON")
			},
			run: runPending,
		},
		&command{
			name:  "approvals",
			args:  "[--json] [--config FILE]",
			short: "list the calls waiting for approval",
			flags: func(fs *pflag.FlagSet) {
				configFlags(fs)
				fs.Bool("json", false, "print JSON")
			},
			run: runPending,
		},
		&command{
			name:  "approve",
			args:  "CALL-ID [--session] [--config FILE]",
			short: "approve a waiting call (with --session: the tool, for the rest of its session)",
			flags: func(fs *pflag.FlagSet) {
				configFlags(fs)
				fs.Bool("session", false, "allow this tool for the rest of the caller's session")
			},
			run: runDecide,
		},
		&command{
			name:  "deny",
			args:  "CALL-ID [--config FILE]",
			short: "deny a call waiting for approval",
			flags: configFlags,
			run:   runDecide,
		},
		&command{
			name:  "submit",
			args:  "CALL-ID JSON [--config FILE]",
			short: "answer a waiting call with its output (a JSON value; a string is the output text)",
			flags: configFlags,
			run:   runSubmit,
		})
}

// adminClient calls the admin API of the serve the configuration names.
type adminClient struct {
	base  string
	token string
}

func newAdminClient(cfg *config.Config) (*adminClient, error) {
	if cfg.Admin.Addr == "" {
		return nil, usagef("admin.addr is not set: the operator commands talk to a running serve's admin API (set admin.addr, e.g. 127.0.0.1:8766, for both)")
	}
	tokens, err := cfg.AdminTokens()
	if err != nil {
		return nil, usageError{err.Error()}
	}
	c := &adminClient{base: "http://" + cfg.Admin.Addr}
	if len(tokens) > 0 {
		c.token = tokens[0]
	}
	return c, nil
}

func (c *adminClient) do(method, path string, body []byte) (int, []byte, error) {
	req, err := http.NewRequest(method, c.base+path, bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		return 0, nil, fmt.Errorf("the admin API at %s does not answer (is toolgate serve running with this admin.addr?): %w", c.base, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err == nil && resp.StatusCode == http.StatusUnauthorized {
		// The serve wants a token this command did not send, or another:
		// said in terms of the configuration the command read.
		if c.token == "" {
			return 0, nil, fmt.Errorf("the admin API at %s wants a token, and this command's configuration gives none: set admin.tokens or admin.token_env as the serve's configuration does (or pass its --config)", c.base)
		}
		return 0, nil, fmt.Errorf("the admin API at %s refused the admin token of this command's configuration (the first of admin.tokens, or admin.token_env's): is it the serve's? (pass its --config)", c.base)
	}
	return resp.StatusCode, b, err
}

// pending lists the waiting calls, oldest first.
func (c *adminClient) pending() ([]operator.Item, error) {
	code, body, err := c.do(http.MethodGet, "/v1/pending", nil)
	if err != nil {
		return nil, err
	}
	if code != http.StatusOK {
		return nil, apiError(code, body)
	}
	var list struct {
		Pending []operator.Item `json:"pending"`
	}
	if err := json.Unmarshal(body, &list); err != nil {
		return nil, fmt.Errorf("the admin API's answer does not decode: %w", err)
	}
	return list.Pending, nil
}

// waiting finds the call an operator's answer names, which must wait for
// that kind of answer. ref is the call's ID or enough of its start or of
// its end to name one waiting call: IDs are UUIDv7s, whose start is their
// time (calls of the same second share it) and whose end is random, so
// `toolgate approve 903d96e53695` is enough. A call that waits for the
// other kind of answer is refused with the command that answers it, before
// anything is sent. The admin API decides again when the answer arrives: a
// call that stopped waiting in between is refused there.
func (c *adminClient) waiting(ref string, kind operator.Kind) (operator.Item, error) {
	pending, err := c.pending()
	if err != nil {
		return operator.Item{}, err
	}
	var match []operator.Item
	for _, by := range []func(id string) bool{
		func(id string) bool { return id == ref },
		func(id string) bool { return ref != "" && strings.HasPrefix(id, ref) },
		func(id string) bool { return ref != "" && strings.HasSuffix(id, ref) },
	} {
		for _, it := range pending {
			if by(it.ID) {
				match = append(match, it)
			}
		}
		if len(match) > 0 {
			break
		}
	}
	switch {
	case len(match) == 0:
		return operator.Item{}, fmt.Errorf("%w: %q (toolgate pending lists the calls that wait)", operator.ErrUnknown, ref)
	case len(match) > 1:
		ids := make([]string, len(match))
		for i, it := range match {
			ids[i] = it.ID
		}
		return operator.Item{}, fmt.Errorf("%q names %d waiting calls (%s): give more of the ID", ref, len(match), strings.Join(ids, ", "))
	}
	it := match[0]
	switch {
	case it.Kind == kind:
		return it, nil
	case it.Kind == operator.KindOutput:
		return it, fmt.Errorf("call %s of %s waits for its output, not for an approval: answer it with toolgate submit %s JSON", it.ID, it.Tool, it.ID)
	default:
		return it, fmt.Errorf("call %s of %s waits for approval, not for an output: answer it with toolgate approve %s [--session], or toolgate deny %s", it.ID, it.Tool, it.ID, it.ID)
	}
}

func apiError(code int, body []byte) error {
	var e struct {
		Error string `json:"error"`
	}
	if json.Unmarshal(body, &e) == nil && e.Error != "" {
		return fmt.Errorf("%s (HTTP %d)", e.Error, code)
	}
	return fmt.Errorf("HTTP %d: %s", code, strings.TrimSpace(string(body)))
}

func runPending(e *env, fs *pflag.FlagSet, args []string) error {
	if len(args) > 0 {
		return usagef("%s takes no arguments", commandName(fs))
	}
	cfg, err := loadConfig(fs, configFlagKeys)
	if err != nil {
		return err
	}
	c, err := newAdminClient(cfg)
	if err != nil {
		return err
	}
	pending, err := c.pending()
	if err != nil {
		return err
	}
	list := struct {
		Pending []operator.Item `json:"pending"`
	}{pending}
	if commandName(fs) == "approvals" { // only what waits for approval
		var only []operator.Item
		for _, it := range list.Pending {
			if it.Kind == operator.KindApproval {
				only = append(only, it)
			}
		}
		list.Pending = only
	}
	if list.Pending == nil {
		list.Pending = []operator.Item{}
	}
	if asJSON, _ := fs.GetBool("json"); asJSON {
		return writeJSON(e.stdout, list)
	}
	if len(list.Pending) == 0 {
		fmt.Fprintln(e.stdout, "No calls are waiting.")
		return nil
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "CALL ID\tWAITS FOR\tTOOL\tWAITING\tDEADLINE IN\tWHY\tARGUMENTS")
	now := time.Now()
	for _, it := range list.Pending {
		why := it.Reason // an approval's: the policy's rule that asks
		if why == "" {
			why = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", it.ID, it.Kind, it.Tool, now.Sub(it.Created).Round(time.Second),
			it.Deadline.Sub(now).Round(time.Second), gateway.Truncate(why, 70), gateway.Truncate(string(it.Arguments), 80))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	how := "toolgate approve CALL-ID [--session], toolgate deny CALL-ID"
	if commandName(fs) != "approvals" {
		how = "toolgate submit CALL-ID JSON (output), " + how
	}
	fmt.Fprintf(e.stdout, "\nAnswer with: %s (CALL-ID: the ID, or its start or end)\n", how)
	return nil
}

// runDecide answers a call waiting for approval (approve, deny).
func runDecide(e *env, fs *pflag.FlagSet, args []string) error {
	if len(args) != 1 {
		return usagef("usage: toolgate %s CALL-ID", commandName(fs))
	}
	decision := operator.Deny
	if commandName(fs) == "approve" {
		decision = operator.AllowOnce
		if s, _ := fs.GetBool("session"); s {
			decision = operator.AllowSession
		}
	}
	cfg, err := loadConfig(fs, configFlagKeys)
	if err != nil {
		return err
	}
	c, err := newAdminClient(cfg)
	if err != nil {
		return err
	}
	it, err := c.waiting(args[0], operator.KindApproval)
	if err != nil {
		return err
	}
	body, _ := json.Marshal(operator.Answer{Decision: decision, By: "cli"})
	if err := c.answer(it.ID, body); err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "Answered call %s of %s: %s.\n", it.ID, it.Tool, decision)
	return nil
}

func runSubmit(e *env, fs *pflag.FlagSet, args []string) error {
	if len(args) != 2 {
		return usagef(`usage: toolgate submit CALL-ID JSON (for example: toolgate submit 01a2... '{"verdict":"approve"}', or '"plain text"')`)
	}
	if !json.Valid([]byte(args[1])) {
		return usagef("the output %q is not JSON: quote text as a JSON string, e.g. '\"looks good\"'", gateway.Truncate(args[1], 80))
	}
	cfg, err := loadConfig(fs, configFlagKeys)
	if err != nil {
		return err
	}
	c, err := newAdminClient(cfg)
	if err != nil {
		return err
	}
	it, err := c.waiting(args[0], operator.KindOutput)
	if err != nil {
		return err
	}
	body, _ := json.Marshal(operator.Answer{Output: json.RawMessage(args[1]), By: "cli"})
	if err := c.answer(it.ID, body); err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "Submitted the output of call %s of %s.\n", it.ID, it.Tool)
	return nil
}

// answer sends an answer to the waiting call id.
func (c *adminClient) answer(id string, body []byte) error {
	code, resp, err := c.do(http.MethodPost, "/v1/pending/"+url.PathEscape(id)+"/submit", body)
	if err != nil {
		return err
	}
	if code != http.StatusOK {
		return apiError(code, resp)
	}
	return nil
}

// commandName is the subcommand a flag set belongs to ("toolgate NAME").
func commandName(fs *pflag.FlagSet) string { return strings.TrimPrefix(fs.Name(), "toolgate ") }
