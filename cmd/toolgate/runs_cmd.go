package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/pflag"
	"github.com/toolgate/toolgate/cmd/toolgate/internal/config"
	"github.com/toolgate/toolgate/gateway"
	"github.com/toolgate/toolgate/gateway/runs"
)

func init() {
	commands = append(commands, &command{
		name:  "runs",
		args:  "list | show [RUN] | tail [RUN] | open RUN CALL | prune (--keep N | --older-than DURATION) [--yes]",
		short: "browse the run archive: runs, their calls, a call's full record; prune old runs",
		flags: func(fs *pflag.FlagSet) {
			configFlags(fs)
			fs.Bool("json", false, "print JSON (list, show, open)")
			fs.Int("keep", 0, "prune: keep the N newest runs")
			fs.String("older-than", "", "prune: remove runs started longer ago than this (e.g. 30d or 12h)")
			fs.Bool("yes", false, "prune: remove them (without it, only say what would go)")
		},
		run: runRuns,
	})
}

// runsTailPoll is how often `runs tail` looks for new calls.
const runsTailPoll = 250 * time.Millisecond

func runRuns(e *env, fs *pflag.FlagSet, args []string) error {
	if len(args) == 0 {
		return usagef("usage: toolgate runs list | show [RUN] | tail [RUN] | open RUN CALL | prune --keep N | --older-than DURATION [--yes]")
	}
	cfg, err := loadConfig(fs, configFlagKeys)
	if err != nil {
		return err
	}
	dir := cfg.ResolvedRunsDir()
	asJSON, _ := fs.GetBool("json")
	switch sub, rest := args[0], args[1:]; sub {
	case "list":
		return runsList(e, dir, asJSON)
	case "show":
		if len(rest) > 1 {
			return usagef("usage: toolgate runs show [RUN] (an id, a unique prefix, its last part, or latest, the default)")
		}
		return runsShow(e, dir, strings.Join(rest, ""), asJSON)
	case "tail":
		if len(rest) > 1 {
			return usagef("usage: toolgate runs tail [RUN]")
		}
		return runsTail(e, dir, strings.Join(rest, ""))
	case "open":
		if len(rest) != 2 {
			return usagef("usage: toolgate runs open RUN CALL (a call id or a unique prefix)")
		}
		return runsOpen(e, dir, rest[0], rest[1], asJSON)
	case "prune":
		return runsPrune(e, fs, dir)
	default:
		return usagef("unknown runs command %q: list, show, tail, open or prune", sub)
	}
}

func runsList(e *env, dir string, asJSON bool) error {
	list, err := runs.List(dir)
	if err != nil {
		return err
	}
	if asJSON {
		if list == nil {
			list = []runs.Summary{}
		}
		return writeJSON(e.stdout, list)
	}
	if len(list) == 0 {
		fmt.Fprintf(e.stdout, "No runs in %s yet.\n", dir)
		return nil
	}
	now := time.Now()
	tw := tabwriter.NewWriter(e.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "RUN\tCOMMAND\tCLIENT\tSTARTED\tDURATION\tCALLS\tERRORS\tARTIFACTS\tCANDIDATES")
	for _, s := range list {
		dur := "unfinished"
		switch {
		case s.Live:
			dur = "live " + s.Duration(now).Round(time.Second).String()
		case s.Stopped != "":
			dur = s.Duration(now).Round(time.Millisecond).String()
		}
		started := s.Started
		if t, err := time.Parse(time.RFC3339Nano, s.Started); err == nil {
			started = t.Local().Format("2006-01-02 15:04:05")
		}
		cmd := strings.Join(s.Command[min(1, len(s.Command)):], " ")
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%d\t%d\t%d\n", s.ID, orNone(gateway.Truncate(cmd, 40)), orNone(s.Client), started, dur, s.Calls, s.Errors, s.Artifacts, s.Candidates)
	}
	return tw.Flush()
}

func runsShow(e *env, dir, ref string, asJSON bool) error {
	run, err := runs.Resolve(dir, ref)
	if err != nil {
		return err
	}
	calls, err := runs.Records(filepath.Join(run, "logs", "tools.jsonl"))
	if err != nil {
		return err
	}
	s := runs.Summarize(run)
	if asJSON {
		if calls == nil {
			calls = []runs.Record{}
		}
		return writeJSON(e.stdout, map[string]any{"run": s, "calls": calls})
	}
	fmt.Fprintf(e.stdout, "run %s (%s)  %s, %s", s.ID, orNone(strings.Join(s.Command, " ")),
		gateway.Plural(s.Calls, "call", "calls"), gateway.Plural(s.Errors, "error", "errors"))
	if s.Skipped > 0 {
		fmt.Fprintf(e.stdout, " (%s skipped: not whole JSON records)", gateway.Plural(s.Skipped, "unreadable line", "unreadable lines"))
	}
	fmt.Fprint(e.stdout, "\n\n")
	// A failed call shows why (its errors.jsonl message) where the
	// others show their brief: a refusal's brief only names its kind.
	failures, err := runs.Records(filepath.Join(run, "logs", "errors.jsonl"))
	if err != nil {
		return err
	}
	why := make(map[string]string, len(failures))
	for _, f := range failures {
		why[f.String("call_id")] = f.String("message")
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TIME\tCALL\tTOOL\tSTATUS\tMS\tBRIEF / ERROR")
	for _, c := range calls {
		printCall(tw, c, why[c.String("call_id")])
	}
	return tw.Flush()
}

// printCall prints a call's row: its brief, or message when it has one.
func printCall(w io.Writer, c runs.Record, message string) {
	t := c.String("time")
	if tm, err := time.Parse(time.RFC3339Nano, t); err == nil {
		t = tm.Local().Format("15:04:05.000")
	}
	ms, _ := c.Fields["duration_ms"].(float64)
	brief, width := c.String("brief"), 80
	if message != "" {
		brief, width = message, 120
	}
	fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%.1f\t%s\n", t, c.String("call_id"), c.String("tool"), c.String("status"), ms, gateway.Truncate(strings.ReplaceAll(brief, "\n", " "), width))
}

// runsTail follows a run's calls as they finish, until the run stops or
// the user interrupts.
func runsTail(e *env, dir, ref string) error {
	run, err := runs.Resolve(dir, ref)
	if err != nil {
		return err
	}
	path := filepath.Join(run, "logs", "tools.jsonl")
	fmt.Fprintf(e.stderr, "following %s (Ctrl-C stops)\n", filepath.Base(run))
	// Each poll reads what the file gained since the last (a long run's
	// file is not read again), and only run.json for the run's state.
	follow := runs.NewFollower(path)
	show := func(final bool) error {
		calls, restarted, err := follow.Next(final)
		if err != nil {
			return err
		}
		if restarted {
			// The file was cut short (truncated in place, replaced):
			// follow it from what it holds now.
			fmt.Fprintf(e.stderr, "%s was cut short: following it from its start\n", path)
		}
		for _, c := range calls {
			printCall(e.stdout, c, "")
		}
		return nil
	}
	tick := time.NewTicker(runsTailPoll)
	defer tick.Stop()
	for {
		if err := show(false); err != nil {
			return err
		}
		if m, live := runs.Live(run); !live {
			// The run's last calls are recorded as it stops: read once
			// more, now that nothing more will come.
			if err := show(true); err != nil {
				return err
			}
			fmt.Fprintf(e.stderr, "run %s is not running (%s)\n", filepath.Base(run), orNone(m.Status))
			return nil
		}
		select {
		case <-e.ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

// runsOpen prints a call's records as they were written (runs.Record):
// its tools.jsonl line, its errors.jsonl line's message when it failed,
// its events, and its artifact files.
func runsOpen(e *env, dir, ref, callRef string, asJSON bool) error {
	run, err := runs.Resolve(dir, ref)
	if err != nil {
		return err
	}
	calls, err := runs.Records(filepath.Join(run, "logs", "tools.jsonl"))
	if err != nil {
		return err
	}
	var rec runs.Record
	var matches []string
	for _, c := range calls {
		id := c.String("call_id")
		if id == callRef {
			rec, matches = c, []string{id}
			break
		}
		if strings.HasPrefix(id, callRef) {
			rec = c
			matches = append(matches, id)
		}
	}
	switch len(matches) {
	case 0:
		return fmt.Errorf("no call %q in run %s (toolgate runs show %s lists them)", callRef, filepath.Base(run), filepath.Base(run))
	case 1:
	default:
		return fmt.Errorf("%q matches %d calls: give more of the id", callRef, len(matches))
	}
	id := matches[0]
	mine, err := recordsOf(filepath.Join(run, "events.jsonl"), id)
	if err != nil {
		return err
	}
	var failure *runs.Record
	if errs, err := recordsOf(filepath.Join(run, "logs", "errors.jsonl"), id); err != nil {
		return err
	} else if len(errs) > 0 {
		failure = &errs[len(errs)-1]
	}
	var files []string
	if arts, ok := rec.Fields["artifacts"].([]any); ok {
		for _, a := range arts {
			if m, ok := a.(map[string]any); ok {
				if name, ok := m["name"].(string); ok {
					files = append(files, filepath.Join(run, "archive", filepath.Base(name)))
				}
			}
		}
	}
	if asJSON {
		if mine == nil {
			mine = []runs.Record{}
		}
		if files == nil {
			files = []string{}
		}
		out := map[string]any{"record": rec, "events": mine, "artifact_files": files}
		if failure != nil {
			out["error"] = failure
		}
		return writeJSON(e.stdout, out)
	}
	var b bytes.Buffer
	_ = json.Indent(&b, rec.Line, "  ", "  ")
	fmt.Fprintf(e.stdout, "call %s in run %s\n\nrecord:\n  %s\n", id, filepath.Base(run), b.Bytes())
	if failure != nil {
		fmt.Fprintf(e.stdout, "\nerror (errors.jsonl):\n  %s\n", strings.ReplaceAll(failure.String("message"), "\n", "\n  "))
	}
	fmt.Fprintln(e.stdout, "\nevents:")
	for _, ev := range mine {
		fmt.Fprintf(e.stdout, "  %s\n", ev.Line)
	}
	if len(files) > 0 {
		fmt.Fprintln(e.stdout, "\nartifact files:")
		for _, f := range files {
			fmt.Fprintf(e.stdout, "  %s\n", f)
		}
	}
	return nil
}

// recordsOf is the records of a JSON lines file that belong to call id.
func recordsOf(path, id string) ([]runs.Record, error) {
	all, err := runs.Records(path)
	var mine []runs.Record
	for _, r := range all {
		if r.String("call_id") == id {
			mine = append(mine, r)
		}
	}
	return mine, err
}

func runsPrune(e *env, fs *pflag.FlagSet, dir string) error {
	keep, _ := fs.GetInt("keep")
	olderThan, _ := fs.GetString("older-than")
	yes, _ := fs.GetBool("yes")
	var age time.Duration
	if olderThan != "" {
		var err error
		if age, err = config.ParseDuration(olderThan); err != nil || age <= 0 {
			return usagef("--older-than: %q is not a positive duration (like 30d, 12h or 1d12h)", olderThan)
		}
	}
	if keep <= 0 && age == 0 {
		return usagef("runs prune needs --keep N (N > 0) or --older-than DURATION")
	}
	if keep <= 0 {
		keep = -1 // not asked
	}
	gone, err := runs.Prunable(dir, keep, age, time.Now())
	if err != nil {
		return err
	}
	if len(gone) == 0 {
		fmt.Fprintln(e.stdout, "Nothing to prune.")
		return nil
	}
	for _, s := range gone {
		s.Calls = runs.Summarize(s.Dir).Calls // Prunable does not count them
		if !yes {
			fmt.Fprintf(e.stdout, "would remove %s (%s)\n", s.ID, gateway.Plural(s.Calls, "call", "calls"))
			continue
		}
		if err := runs.Remove(dir, s); err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "removed %s (%s)\n", s.ID, gateway.Plural(s.Calls, "call", "calls"))
	}
	if !yes {
		fmt.Fprintf(e.stdout, "%s would be removed; run again with --yes to remove them.\n", gateway.Plural(len(gone), "run", "runs"))
	}
	return nil
}

// applyRetention removes the runs runs.keep and runs.max_age leave out,
// before a new run starts (never a live run). Failures are logged, not
// fatal: retention must not stop the gateway from serving.
func (a *app) applyRetention(cfg *config.Config) {
	if cfg.Runs.Keep <= 0 && cfg.Runs.MaxAge <= 0 {
		return
	}
	dir := cfg.ResolvedRunsDir()
	keep := cfg.Runs.Keep - 1 // room for the run about to start
	if cfg.Runs.Keep == 0 {
		keep = -1 // off
	}
	gone, err := runs.Prunable(dir, keep, cfg.Runs.MaxAge, time.Now())
	if err != nil {
		a.log.Warn("run retention", "err", err)
		return
	}
	for _, s := range gone {
		if err := runs.Remove(dir, s); err != nil {
			a.log.Warn("run retention: cannot remove a run", "run", s.ID, "err", err)
			continue
		}
		a.log.Debug("run retention: removed a run", "run", s.ID, "keep", cfg.Runs.Keep, "max_age", cfg.Runs.MaxAge)
	}
	if len(gone) > 0 {
		a.log.Info("run retention: removed old runs (runs.keep, runs.max_age)", "removed", len(gone))
	}
}
