package main

import (
	"errors"
	"fmt"
	iofs "io/fs"
	"os"
	"path/filepath"
	"regexp"

	"github.com/spf13/pflag"
	"github.com/toolgate/toolgate/toolsets/memory"
	"github.com/toolgate/toolgate/toolsets/memory/sqlitestore"
)

func init() {
	commands = append(commands, &command{
		name:  "memory",
		args:  "promote RUN-ID [--dry-run] [--json]",
		short: "promote a run's candidate memories into the store, after review",
		flags: func(fs *pflag.FlagSet) {
			configFlags(fs)
			fs.Bool("dry-run", false, "say what would be promoted, write nothing")
			fs.Bool("json", false, "print the report as JSON")
		},
		run: runMemory,
	})
}

var runIDPattern = regexp.MustCompile(`^[0-9]{8}T[0-9]{6}Z-[0-9a-f]{6}$`)

func runMemory(e *env, fs *pflag.FlagSet, args []string) error {
	if len(args) != 2 || args[0] != "promote" {
		return usagef("usage: toolgate memory promote RUN-ID [--dry-run] [--json]")
	}
	runID := args[1]
	if !runIDPattern.MatchString(runID) {
		return usagef("%q is not a run ID (like 20261121T201530Z-4f2a9c; see the runs directory)", runID)
	}
	cfg, err := loadConfig(fs, configFlagKeys)
	if err != nil {
		return err
	}
	candidates := memory.CandidatesPath(filepath.Join(cfg.ResolvedRunsDir(), runID, "archive"))
	if _, err := os.Stat(filepath.Join(cfg.ResolvedRunsDir(), runID)); err != nil {
		return fmt.Errorf("run %s: %w", runID, err)
	}
	store, err := sqlitestore.Open(cfg.ResolvedMemoryPath())
	if err != nil {
		return fmt.Errorf("memory store: %w", err)
	}
	defer store.Close()
	dryRun, _ := fs.GetBool("dry-run")
	report, err := memory.Promote(e.ctx, store, candidates, runID, dryRun)
	asJSON, _ := fs.GetBool("json")
	if errors.Is(err, iofs.ErrNotExist) {
		// Nothing was written in candidate mode: nothing to do, not a
		// failure. With --json, the (empty) report: stdout stays JSON.
		if asJSON {
			return writeJSON(e.stdout, report)
		}
		fmt.Fprintf(e.stdout, "Run %s has no memory candidates: nothing to promote.\n", runID)
		return nil
	}
	if asJSON {
		if jerr := writeJSON(e.stdout, report); jerr != nil {
			return jerr
		}
	} else if werr := report.WriteText(e.stdout); werr != nil {
		return werr
	}
	return err
}
