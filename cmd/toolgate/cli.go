package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"syscall"

	"github.com/spf13/pflag"
)

// Exit codes.
const (
	exitOK        = 0
	exitFailure   = 1 // the command failed, or a called tool returned an error
	exitUsage     = 2 // bad command line or configuration
	exitInterrupt = 130
)

// env is what a command gets: its streams and context.
type env struct {
	ctx    context.Context
	args   []string // the command line after the program name
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
}

// command is one subcommand, in its own file.
type command struct {
	name  string
	args  string // usage after the name
	short string
	// flags adds the command's flags.
	flags func(fs *pflag.FlagSet)
	run   func(e *env, fs *pflag.FlagSet, args []string) error
}

// commands are registered by each command's file; usage lists them in
// commandOrder.
var commands []*command

var commandOrder = []string{"serve", "tools", "call", "runs", "policy", "import", "pending", "submit", "approvals", "approve", "deny", "memory", "config", "version"}

// usageError is a command-line mistake: exit code 2.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return usageError{fmt.Sprintf(format, args...)} }

// exitError carries an exit code without a message (the command already
// said what happened).
type exitError struct{ code int }

func (e exitError) Error() string { return fmt.Sprintf("exit %d", e.code) }

// Main runs the toolgate command line and returns the exit code.
func Main(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	// Help asked for goes to stdout (toolgate --help | less); usage
	// printed because of a mistake goes to stderr, with exit code 2.
	if len(args) == 0 {
		printUsage(stderr)
		return exitUsage
	}
	if args[0] == "help" && len(args) > 1 {
		args = []string{args[1], "--help"} // toolgate help serve
	}
	if args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		printUsage(stdout)
		return exitOK
	}
	if moved, rest := leadingConfigFlags(args); len(moved) > 0 {
		if len(rest) == 0 {
			fmt.Fprintf(stderr, "toolgate: %s is given, but no command\n\n", strings.Join(moved, " "))
			printUsage(stderr)
			return exitUsage
		}
		args = slices.Concat(rest[:1], moved, rest[1:])
	}
	if args[0] == "--version" || args[0] == "-v" {
		args = append([]string{"version"}, args[1:]...) // as other tools spell it
	}
	var cmd *command
	for _, c := range commands {
		if c.name == args[0] {
			cmd = c
		}
	}
	if cmd == nil {
		fmt.Fprintf(stderr, "toolgate: unknown command %q\n\n", args[0])
		printUsage(stderr)
		return exitUsage
	}
	fs := pflag.NewFlagSet("toolgate "+cmd.name, pflag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.SetInterspersed(true)
	fs.Usage = func() { // only for -h and --help: errors are said without it
		fmt.Fprintf(stdout, "Usage: toolgate %s %s\n\n%s\n\nFlags:\n%s", cmd.name, cmd.args, cmd.short, fs.FlagUsages())
	}
	if cmd.flags != nil {
		cmd.flags(fs)
	}
	if err := fs.Parse(args[1:]); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return exitOK
		}
		fmt.Fprintf(stderr, "toolgate %s: %v\n", cmd.name, err)
		return exitUsage
	}
	err := cmd.run(&env{ctx: ctx, args: args, stdin: stdin, stdout: stdout, stderr: stderr}, fs, fs.Args())
	var ue usageError
	var ee exitError
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &ee):
		return ee.code
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "toolgate %s: %v\n", cmd.name, err)
		return exitUsage
	case errors.Is(err, syscall.EPIPE):
		// The reader of stdout went away (toolgate runs list | head):
		// nothing to tell it, nor anyone else.
		return exitOK
	default:
		fmt.Fprintf(stderr, "toolgate %s: %v\n", cmd.name, err)
		if ctx.Err() != nil {
			return exitInterrupt
		}
		return exitFailure
	}
}

func printUsage(w io.Writer) {
	fmt.Fprintln(w, "toolgate: an MCP tool gateway\n\nUsage:")
	sort.SliceStable(commands, func(i, j int) bool {
		return orderOf(commands[i].name) < orderOf(commands[j].name)
	})
	// Each command's synopsis on a line and what it does indented below,
	// as go help does: one column for both would be 200 characters wide.
	for _, c := range commands {
		fmt.Fprintf(w, "  toolgate %s\n        %s\n", strings.TrimSpace(c.name+" "+c.args), c.short)
	}
	fmt.Fprintln(w, "\nRun 'toolgate COMMAND --help' for a command's flags.")
}

func orderOf(name string) int {
	if i := slices.Index(commandOrder, name); i >= 0 {
		return i
	}
	return len(commandOrder)
}

// configFlags are the flags every command that loads config takes.
func configFlags(fs *pflag.FlagSet) {
	fs.String("config", "", "config file (default: ./toolgate.yaml if present)")
	fs.String("log-level", "", "log level: debug, info, warn, error (config log.level)")
	fs.String("log-file", "", "write logs to this file instead of stderr (config log.file)")
	fs.String("runs-dir", "", "where run archives go (config runs_dir)")
}

// leadingConfigFlags splits off the config flags written before the
// command (`toolgate --config f.yaml call read_file`, as git and kubectl
// take their global flags): each command takes them after its name, where
// Main moves them. rest starts at the first argument that is not one.
func leadingConfigFlags(args []string) (moved, rest []string) {
	fs := pflag.NewFlagSet("", pflag.ContinueOnError)
	configFlags(fs)
	for len(args) > 0 && strings.HasPrefix(args[0], "--") {
		name, _, inline := strings.Cut(strings.TrimPrefix(args[0], "--"), "=")
		if fs.Lookup(name) == nil {
			break
		}
		n := 2 // --config FILE
		if inline || len(args) == 1 {
			n = 1 // --config=FILE, or a value missing (the command's parser says so)
		}
		moved, args = append(moved, args[:n]...), args[n:]
	}
	return moved, args
}

var configFlagKeys = map[string]string{
	"log-level": "log.level",
	"log-file":  "log.file",
	"runs-dir":  "runs_dir",
}

func withKeys(extra map[string]string) map[string]string {
	m := map[string]string{}
	for k, v := range configFlagKeys {
		m[k] = v
	}
	for k, v := range extra {
		m[k] = v
	}
	return m
}

// writeJSON prints v as indented JSON, as every --json output is.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}
