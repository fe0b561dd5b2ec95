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
	return resp.StatusCode, b, err
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
	code, body, err := c.do(http.MethodGet, "/v1/pending", nil)
	if err != nil {
		return err
	}
	if code != http.StatusOK {
		return apiError(code, body)
	}
	var list struct {
		Pending []operator.Item `json:"pending"`
	}
	if err := json.Unmarshal(body, &list); err != nil {
		return fmt.Errorf("the admin API's answer does not decode: %w", err)
	}
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
	fmt.Fprintln(tw, "CALL ID\tWAITS FOR\tTOOL\tWAITING\tDEADLINE IN\tARGUMENTS")
	now := time.Now()
	for _, it := range list.Pending {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", it.ID, it.Kind, it.Tool, now.Sub(it.Created).Round(time.Second),
			it.Deadline.Sub(now).Round(time.Second), gateway.Truncate(string(it.Arguments), 80))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(e.stdout, "\nAnswer with: toolgate submit CALL-ID JSON (output), toolgate approve CALL-ID [--session], toolgate deny CALL-ID")
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
	body, _ := json.Marshal(operator.Answer{Decision: decision, By: "cli"})
	code, resp, err := c.do(http.MethodPost, "/v1/pending/"+url.PathEscape(args[0])+"/submit", body)
	if err != nil {
		return err
	}
	if code != http.StatusOK {
		return apiError(code, resp)
	}
	fmt.Fprintf(e.stdout, "Answered call %s: %s.\n", args[0], decision)
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
	body, _ := json.Marshal(operator.Answer{Output: json.RawMessage(args[1]), By: "cli"})
	code, resp, err := c.do(http.MethodPost, "/v1/pending/"+url.PathEscape(args[0])+"/submit", body)
	if err != nil {
		return err
	}
	if code != http.StatusOK {
		return apiError(code, resp)
	}
	fmt.Fprintf(e.stdout, "Submitted the output of call %s.\n", args[0])
	return nil
}

// commandName is the subcommand a flag set belongs to ("toolgate NAME").
func commandName(fs *pflag.FlagSet) string { return strings.TrimPrefix(fs.Name(), "toolgate ") }
