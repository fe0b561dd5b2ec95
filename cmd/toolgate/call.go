package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/pflag"
	"github.com/toolgate/toolgate/gateway"
)

func init() {
	commands = append(commands, &command{
		name:  "call",
		args:  "TOOL [JSON-ARGS | -] [--json]",
		short: "run one call through the full pipeline, without a model (exit 1 if the tool fails)",
		flags: func(fs *pflag.FlagSet) {
			configFlags(fs)
			fs.Bool("json", false, "print the MCP tools/call result as JSON")
		},
		run: runCall,
	})
}

func runCall(e *env, fs *pflag.FlagSet, args []string) error {
	if len(args) < 1 || len(args) > 2 {
		return usagef("usage: toolgate call TOOL [JSON-ARGS | -] (- reads them from stdin)")
	}
	name := args[0]
	var raw json.RawMessage
	if len(args) == 2 {
		var err error
		if raw, err = callArgs(e.stdin, args[1]); err != nil {
			return err
		}
	}
	cfg, err := loadConfig(fs, configFlagKeys)
	if err != nil {
		return err
	}
	// A built-in tool starts no upstream; an upstream's tool waits for
	// that upstream only.
	a, err := newApp(e.ctx, cfg, e.stderr, appOptions{record: true, upstreams: upstreamStart{forTool: name},
		command: e.args, configFile: configPathOf(configFiles(fs))})
	if err != nil {
		return err
	}
	ctx := e.ctx
	var term *terminalClient
	if (len(args) < 2 || args[1] != "-") && isTerminal(e.stdin) {
		// A person at a terminal: an approval, or a person's answer to a
		// definition-only tool, is asked there (stdin that held the
		// arguments holds no answers).
		term = &terminalClient{in: bufio.NewReader(e.stdin), out: e.stderr, rec: a.run}
		ctx = gateway.WithClient(ctx, term)
	}
	var call *gateway.Call
	var res *gateway.Result
	for {
		call = &gateway.Call{Name: name, Arguments: raw, Client: "toolgate-cli", Identity: "local"}
		res = a.pipeline.Call(ctx, call)
		// An upstream that needs a page opened first (-32042) is called
		// again once the person says it is done, as an MCP client does.
		if term == nil || !term.urlsFirst(ctx, res) {
			break
		}
	}
	if err := a.close(); err != nil {
		fmt.Fprintf(e.stderr, "toolgate call: closing: %v\n", err)
	}

	if asJSON, _ := fs.GetBool("json"); asJSON {
		if err := writeJSON(e.stdout, gateway.ToMCPResult(call.ID, res)); err != nil {
			return err
		}
	} else {
		printResult(e, res)
		for _, art := range call.Artifacts { // where the summarized output is, whole
			fmt.Fprintf(e.stderr, "artifact %s (%s) saved at %s\n", art.URI, gateway.HumanSize(art.Size), art.Path)
		}
		fmt.Fprintf(e.stderr, "call %s recorded in %s\n", call.ID, a.run.Dir())
	}
	if res.IsError {
		if e.ctx.Err() != nil {
			// Interrupted (SIGINT, SIGTERM): the call was cancelled and
			// recorded so; exit as an interrupted command does.
			return exitError{exitInterrupt}
		}
		return exitError{exitFailure}
	}
	return nil
}

// printResult prints a result for a human: brief, display blocks, output.
func printResult(e *env, res *gateway.Result) {
	status := "ok"
	if res.IsError {
		status = "error (" + res.Status() + ")"
	}
	if b := res.Brief(); b != "" {
		fmt.Fprintf(e.stdout, "%s: %s\n", status, b)
	} else {
		fmt.Fprintln(e.stdout, status)
	}
	for _, d := range res.Display {
		switch b := d.(type) {
		case gateway.BriefBlock:
			// already printed
		case gateway.DiffBlock:
			fmt.Fprintf(e.stdout, "--- diff %s (+%d -%d)\n%s", b.Path, b.Added, b.Removed, b.Unified)
			if !strings.HasSuffix(b.Unified, "\n") {
				fmt.Fprintln(e.stdout)
			}
		default:
			j, _ := json.Marshal(d)
			fmt.Fprintf(e.stdout, "--- %s\n%s\n", d.BlockType(), j)
		}
	}
	if len(res.Output) > 0 {
		fmt.Fprintln(e.stdout, "--- output")
		for _, p := range res.Output {
			switch v := gateway.Typed(p).(type) {
			case gateway.TextPart:
				fmt.Fprintln(e.stdout, v.Text)
			case gateway.ImagePart:
				fmt.Fprintf(e.stdout, "[image %s, %d bytes]\n", v.MIMEType, len(v.Data))
			case gateway.AudioPart:
				fmt.Fprintf(e.stdout, "[audio %s, %d bytes]\n", v.MIMEType, len(v.Data))
			case gateway.ResourceLinkPart:
				fmt.Fprintf(e.stdout, "[resource link %s]\n", bracketed(v.URI, v.MIMEType, v.Size))
			case gateway.ResourcePart:
				r := v.Resource
				if r.Text != nil {
					fmt.Fprintf(e.stdout, "[resource %s]\n%s\n", bracketed(r.URI, r.MIMEType, nil), *r.Text)
				} else {
					n := int64(len(r.Blob))
					fmt.Fprintf(e.stdout, "[resource %s]\n", bracketed(r.URI, r.MIMEType, &n))
				}
			default:
				j, _ := json.Marshal(p)
				fmt.Fprintf(e.stdout, "%s\n", j)
			}
		}
	}
	if res.Message != "" {
		fmt.Fprintf(e.stdout, "--- message\n%s\n", res.Message)
	}
}

// bracketed is a resource's URI with its MIME type and size when known, as
// printResult shows one: "demo://x, text/plain, 120 bytes".
func bracketed(uri, mimeType string, size *int64) string {
	s := uri
	if mimeType != "" {
		s += ", " + mimeType
	}
	if size != nil {
		s += fmt.Sprintf(", %d bytes", *size)
	}
	return s
}

// maxStdinArgs bounds JSON-ARGS read from stdin: write_file's content
// may be a whole file (filesystem.max_overwrite_bytes is 64 MiB).
const maxStdinArgs = 64 << 20

// callArgs is JSON-ARGS: the text given, or with "-" what stdin holds
// (a file's content as write_file's argument needs no shell quoting:
// jq -n --rawfile c notes.md '{path: "notes.md", content: $c}' | toolgate
// call write_file -). Text that is not JSON is a usage error that says
// where it breaks.
func callArgs(stdin io.Reader, arg string) (json.RawMessage, error) {
	text := []byte(arg)
	if arg == "-" {
		b, err := io.ReadAll(io.LimitReader(stdin, maxStdinArgs+1))
		if err != nil {
			return nil, fmt.Errorf("reading JSON-ARGS from stdin: %w", err)
		}
		if len(b) > maxStdinArgs {
			return nil, usagef("JSON-ARGS on stdin is over %s", gateway.HumanSize(maxStdinArgs))
		}
		text = bytes.TrimSpace(b)
		if len(text) == 0 {
			return nil, usagef("JSON-ARGS: - reads them from stdin, which is empty")
		}
	}
	if json.Valid(text) {
		return json.RawMessage(text), nil
	}
	err := json.Unmarshal(text, new(any)) // only for what is wrong, and where
	var se *json.SyntaxError
	where := ""
	if errors.As(err, &se) {
		where = fmt.Sprintf(" at byte %d", se.Offset)
	}
	return nil, usagef("JSON-ARGS is not valid JSON (%v%s): %s", err, where, gateway.Truncate(string(text), 200))
}
