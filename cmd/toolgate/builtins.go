package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/toolgate/toolgate/cmd/toolgate/internal/config"
	"github.com/toolgate/toolgate/gateway"
	"github.com/toolgate/toolgate/policy"
	"github.com/toolgate/toolgate/toolsets/diagnostics"
	"github.com/toolgate/toolgate/toolsets/filesystem"
	"github.com/toolgate/toolgate/toolsets/memory"
	"github.com/toolgate/toolgate/toolsets/memory/sqlitestore"
	"github.com/toolgate/toolgate/toolsets/skills"
)

// The built-in toolsets, each built from the configuration by one
// function, at start and again by a reload that changes its keys (the new
// toolset then takes the old one's place in the catalog in one step).

// builtin is a built-in toolset: its name, the configuration keys it is
// built from, and how. build returns nil when the toolset is off.
type builtin struct {
	name  string
	keys  []string
	build func(a *app, cfg *config.Config) (gateway.Toolset, error)
}

var builtins = []builtin{
	{"filesystem", []string{"sandbox", "filesystem"}, (*app).newFilesystem},
	{diagnostics.Name, []string{"diagnostics"}, (*app).newDiagnostics},
	{"memory", []string{"memory"}, (*app).newMemory},
	{"skills", []string{"skills"}, (*app).newSkills},
}

// newSandbox opens the sandbox roots (the run's workspace when none are
// configured), out of which no tool can reach the paths in protected, and
// returns the roots the policy shows.
func (a *app) newSandbox(cfg *config.Config, protected []string) (*policy.Sandbox, []string, error) {
	roots := cfg.SandboxRoots()
	if len(roots) == 0 {
		ws := config.DefaultWorkspace()
		if err := os.MkdirAll(ws, 0o700); err != nil {
			return nil, nil, fmt.Errorf("the default workspace (sandbox.roots is empty): %w", err)
		}
		roots = []string{ws}
		if a.recordRun {
			a.log.Info("no sandbox.roots configured: the filesystem tools use the persistent workspace; set sandbox.roots to choose directories", "workspace", ws)
		}
	}
	sb, err := policy.NewSandboxWith(roots, &policy.SandboxOptions{Protected: protected})
	if err != nil {
		return nil, nil, usageError{fmt.Sprintf("sandbox.roots: %v", err)} // bad configuration: exit 2
	}
	if p := sb.Protected(); len(p) > 0 {
		a.log.Info("toolgate's own state lies under the sandbox roots: no tool can read or write it", "protected", p)
	}
	return sb, sb.Roots(), nil
}

// ownState is what the sandbox protects wherever the roots are: the run
// archive, the memory database and its journal files, the log file. A
// reload that changes any of them rebuilds the sandbox (reloader.protected).
func ownState(cfg *config.Config) []string {
	db := cfg.ResolvedMemoryPath()
	return []string{cfg.ResolvedRunsDir(), db, db + "-wal", db + "-shm", db + "-journal", cfg.Log.File}
}

func (a *app) newFilesystem(cfg *config.Config) (gateway.Toolset, error) {
	if !cfg.Filesystem.Enabled {
		return nil, nil
	}
	ts, err := filesystem.New(a.sandbox, &filesystem.Options{
		MaxReadBytes:     cfg.Filesystem.MaxReadBytes,
		MaxReadLines:     cfg.Filesystem.MaxReadLines,
		MaxListEntries:   cfg.Filesystem.MaxListEntries,
		MaxGrepMatches:   cfg.Filesystem.MaxGrepMatches,
		MaxGrepFileSize:  cfg.Filesystem.MaxGrepFileBytes,
		MaxOverwriteSize: cfg.Filesystem.MaxOverwriteBytes,
		Backups:          a.artifacts,
		Logger:           a.log.With("toolset", "filesystem"),
	})
	if err != nil {
		return nil, fmt.Errorf("filesystem toolset: %w", err)
	}
	return ts, nil
}

func (a *app) newDiagnostics(cfg *config.Config) (gateway.Toolset, error) {
	if !cfg.Diagnostics.Enabled {
		return nil, nil
	}
	return diagnostics.New()
}

func (a *app) newMemory(cfg *config.Config) (gateway.Toolset, error) {
	if !cfg.Memory.Enabled {
		return nil, nil
	}
	mode, _ := memory.ParseMode(cfg.Memory.WriteMode) // checked with the config
	store, err := sqlitestore.Open(cfg.ResolvedMemoryPath())
	if err != nil {
		return nil, fmt.Errorf("memory store: %w", err)
	}
	archive := filepath.Join(a.tempDir, "archive") // no run: nothing is written
	if a.run != nil {
		archive = a.run.ArchiveDir()
	}
	mem, err := memory.New(&memory.Options{Mode: mode, Store: store, CandidatesPath: memory.CandidatesPath(archive),
		Logger: a.log.With("toolset", "memory")})
	if err != nil {
		store.Close()
		return nil, fmt.Errorf("memory toolset: %w", err)
	}
	return mem, nil
}

func (a *app) newSkills(cfg *config.Config) (gateway.Toolset, error) {
	if a.skills == nil {
		// The prompt source exists from the start, skills on or off: the
		// server takes its sources once, and a reload that turns the
		// skills on or off must be followed.
		a.skills = &livePrompts{}
		a.promptSources = append(a.promptSources, a.skills)
	}
	dirs := cfg.SkillDirs()
	if len(dirs) == 0 {
		a.skills.set(nil) // off (a reload may turn them off): no prompts
		return nil, nil
	}
	sk, err := skills.New(&skills.Options{Dirs: dirs, Granter: skillGranter{a.policy}, Logger: a.log.With("toolset", "skills")})
	if err != nil {
		return nil, fmt.Errorf("skills: %w", err)
	}
	a.skills.set(sk) // the toolset logs its problems itself, each once
	return sk, nil
}

// livePrompts is the skills' prompt source as the MCP server sees it: the
// skills toolset in force, which a reload may replace (its listeners are
// then told).
type livePrompts struct {
	cur atomic.Pointer[skills.Toolset]

	mu        sync.Mutex
	listeners []func()
}

var (
	_ gateway.PromptSource          = (*livePrompts)(nil)
	_ gateway.PromptsChangeNotifier = (*livePrompts)(nil)
)

// set serves sk's prompts, or none when sk is nil (the skills were turned
// off), and tells the listeners when they differ from the ones served
// before (clients are told of every call of them).
func (l *livePrompts) set(sk *skills.Toolset) {
	var before, after []gateway.Prompt
	if old := l.cur.Load(); old != nil {
		before, _ = old.Prompts(context.Background())
	}
	l.cur.Store(sk)
	if sk != nil {
		sk.OnPromptsChanged(l.changed)
		after, _ = sk.Prompts(context.Background())
	}
	if !samePrompts(before, after) {
		l.changed()
	}
}

// samePrompts reports whether two listings describe the same prompts (all
// a client is listed of them, _meta included).
func samePrompts(a, b []gateway.Prompt) bool {
	return slices.EqualFunc(a, b, func(x, y gateway.Prompt) bool {
		return x.Name == y.Name && x.Title == y.Title && x.Description == y.Description &&
			slices.Equal(x.Arguments, y.Arguments) && maps.EqualFunc(x.Meta, y.Meta, func(a, b json.RawMessage) bool { return bytes.Equal(a, b) })
	})
}

func (l *livePrompts) changed() {
	l.mu.Lock()
	ls := append([]func(){}, l.listeners...)
	l.mu.Unlock()
	for _, f := range ls { // outside the lock
		f()
	}
}

// Prompts implements [gateway.PromptSource]. Each prompt renders from the
// skills toolset in force when it is got, not from the one that listed it:
// the MCP mirror keeps the prompts it installed until the listing changes,
// and a reload that keeps the skills' names and descriptions (set tells no
// one) must still serve the new bodies.
func (l *livePrompts) Prompts(ctx context.Context) ([]gateway.Prompt, error) {
	sk := l.cur.Load()
	if sk == nil {
		return nil, nil
	}
	ps, err := sk.Prompts(ctx)
	for i := range ps {
		name := ps[i].Name
		ps[i].Get = func(context.Context, map[string]string) (*gateway.PromptResult, error) {
			sk := l.cur.Load()
			if sk == nil {
				return nil, fmt.Errorf("skill %q no longer exists: the skills are turned off (skills.dirs is empty)", name)
			}
			return sk.GetPrompt(name)
		}
	}
	return ps, err
}

// OnPromptsChanged implements [gateway.PromptsChangeNotifier].
func (l *livePrompts) OnPromptsChanged(f func()) {
	l.mu.Lock()
	l.listeners = append(l.listeners, f)
	l.mu.Unlock()
}
