package main

import (
	"errors"
	"fmt"
	iofs "io/fs"
	"path/filepath"
	"strings"

	"github.com/spf13/pflag"
	"github.com/toolgate/toolgate/gateway/runs"
	"github.com/toolgate/toolgate/toolsets/memory"
	"github.com/toolgate/toolgate/toolsets/memory/sqlitestore"
)

func init() {
	commands = append(commands, &command{
		name:  "memory",
		args:  "promote RUN [--dry-run] [--json]",
		short: "promote a run's candidate memories into the store, after review",
		flags: func(fs *pflag.FlagSet) {
			configFlags(fs)
			fs.Bool("dry-run", false, "say what would be promoted, write nothing")
			fs.Bool("json", false, "print the report as JSON")
		},
		run: runMemory,
	})
}

func runMemory(e *env, fs *pflag.FlagSet, args []string) error {
	if len(args) != 2 || args[0] != "promote" {
		return usagef("usage: toolgate memory promote RUN [--dry-run] [--json]")
	}
	ref := args[1]
	if strings.ContainsAny(ref, `/\`) || ref == "." || ref == ".." {
		return usagef("%q is not a run ID (like 20261121T201530Z-4f2a9c, or its last part 4f2a9c; toolgate runs list shows them)", ref)
	}
	cfg, err := loadConfig(fs, configFlagKeys)
	if err != nil {
		return err
	}
	// A run as runs show takes it: its ID, the start of it, or the start
	// of its random part.
	dir, err := runs.Resolve(cfg.ResolvedRunsDir(), ref)
	if err != nil {
		return err
	}
	runID := filepath.Base(dir) // Resolve finds run directories only
	candidates := memory.CandidatesPath(filepath.Join(dir, "archive"))
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
