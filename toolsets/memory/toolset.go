package memory

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"path/filepath"
	"sync"

	"github.com/toolgate/toolgate/gateway"
)

// DefaultMaxContentBytes bounds one memory's content.
const DefaultMaxContentBytes = 16 << 10

// Options configure [New].
type Options struct {
	// Mode is the write mode. Empty is [DefaultMode] (candidate).
	Mode Mode
	// Store is required: recall reads it in every mode, and external
	// writes go to it. The toolset owns it: [Toolset.Close] closes it.
	Store Store
	// CandidatesPath is the file candidate memories are appended to in
	// candidate mode, normally runs/<run-id>/archive/memory-candidates.jsonl
	// (see [CandidatesPath]). Required in candidate mode.
	CandidatesPath string
	// RunID names the run in the promotion hint write_memory gives. If
	// empty, it is taken from CandidatesPath when that has the run archive
	// layout (runs/<run-id>/archive/<file>).
	RunID string
	// MaxContentBytes bounds one memory's content. Default 16 KiB.
	MaxContentBytes int
	// Logger receives the toolset's diagnostics. Nil discards them.
	Logger *slog.Logger
}

// Toolset is the memory toolset, named "memory". It implements
// [gateway.Toolset] and [gateway.Closer].
type Toolset struct {
	opts      Options
	log       *slog.Logger
	tools     []*gateway.Tool
	unoffered map[string]string

	candMu sync.Mutex // serializes appends to the candidate file
	// candIDs are this run's candidates, by scope NUL content, to the
	// candidate's ID: read from the file at the first write, then kept
	// with each append (under candMu), so that a write does not read the
	// whole file to find whether it holds the same memory.
	candIDs   map[string]string
	closeOnce sync.Once
	closeErr  error
}

// Tool names.
const (
	RecallTool = "recall_memory"
	WriteTool  = "write_memory"
)

// New returns the memory toolset. options is copied; nil is an error
// (Store is required).
func New(options *Options) (*Toolset, error) {
	var opts Options
	if options != nil {
		opts = *options
	}
	if opts.Mode == "" {
		opts.Mode = DefaultMode
	}
	mode, err := ParseMode(string(opts.Mode))
	if err != nil {
		return nil, fmt.Errorf("memory: %w", err)
	}
	opts.Mode = mode
	if opts.Store == nil {
		return nil, errors.New("memory: no store (Options.Store is required: recall reads it in every write mode)")
	}
	if opts.Mode == ModeCandidate && opts.CandidatesPath == "" {
		return nil, errors.New("memory: write mode candidate needs Options.CandidatesPath (runs/<run-id>/archive/" + CandidatesFile + ")")
	}
	if opts.MaxContentBytes <= 0 {
		opts.MaxContentBytes = DefaultMaxContentBytes
	}
	if opts.RunID == "" && opts.CandidatesPath != "" {
		opts.RunID = runIDFromPath(opts.CandidatesPath)
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	t := &Toolset{opts: opts, log: log, unoffered: map[string]string{}}

	recall, err := t.recallTool()
	if err != nil {
		return nil, err
	}
	t.tools = append(t.tools, recall)
	if opts.Mode == ModeDisabled {
		t.unoffered[WriteTool] = "memory writes are disabled (memory.write_mode: disabled)"
	} else {
		write, err := t.writeTool()
		if err != nil {
			return nil, err
		}
		t.tools = append(t.tools, write)
	}
	return t, nil
}

// runIDFromPath returns <run-id> from runs/<run-id>/archive/<file>, or "".
func runIDFromPath(path string) string {
	archive := filepath.Dir(path)
	if filepath.Base(archive) != "archive" {
		return ""
	}
	id := filepath.Base(filepath.Dir(archive))
	if id == "." || id == string(filepath.Separator) {
		return ""
	}
	return id
}

// Name implements [gateway.Toolset].
func (t *Toolset) Name() string { return "memory" }

// Tools implements [gateway.Toolset]: recall_memory, and write_memory
// unless writes are disabled.
func (t *Toolset) Tools(context.Context) ([]*gateway.Tool, error) {
	return append([]*gateway.Tool(nil), t.tools...), nil
}

// Mode is the toolset's write mode.
func (t *Toolset) Mode() Mode { return t.opts.Mode }

// Unoffered returns the tools deliberately not offered and why: in
// disabled mode {"write_memory": "memory writes are disabled
// (memory.write_mode: disabled)"}, otherwise an empty map. The gateway uses
// it to make calling them a clear error rather than "not found".
func (t *Toolset) Unoffered() map[string]string { return maps.Clone(t.unoffered) }

// Close implements [gateway.Closer]: it closes the store. It is safe to call
// more than once.
func (t *Toolset) Close() error {
	t.closeOnce.Do(func() { t.closeErr = t.opts.Store.Close() })
	return t.closeErr
}

var (
	_ gateway.Toolset = (*Toolset)(nil)
	_ gateway.Closer  = (*Toolset)(nil)
)
