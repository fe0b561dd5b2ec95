package skills

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/toolgate/toolgate/gateway"
)

// Defaults for [Options].
const (
	DefaultMaxSkills    = 500
	DefaultMaxBodyBytes = 256 << 10

	// MaxResources bounds the resources listed per skill.
	MaxResources = 200
	// MaxDescription is the longest description allowed, in characters.
	MaxDescription = 1024

	// rescanInterval is how often, at most, the directories are checked
	// for changes.
	rescanInterval = time.Second
	// maxWalk bounds the entries visited while listing one skill's
	// resources (hidden and skipped ones included), so a huge tree cannot
	// stall a scan.
	maxWalk = 20 * MaxResources
)

// Granter applies a loaded skill's capability requests through the
// permission policy. It is implemented by the effective policy (package
// policy) and adapted to this interface where the gateway is wired.
//
// Request returns the policy's answer for the capabilities the skill
// requests: ideally one [Grant] per capability. A skill can only request;
// the policy decides. Implementations must be safe for concurrent use.
type Granter interface {
	Request(ctx context.Context, skill string, caps []string) []Grant
}

// Grant is the policy's answer to one capability request. It has the same
// JSON form as the policy's own grant results.
type Grant struct {
	Capability string `json:"capability"`
	Granted    bool   `json:"granted"`
	Reason     string `json:"reason"`
}

// Problem is something wrong in the skill directories: Path is the file or
// folder concerned, Message says what is wrong.
type Problem struct {
	Path    string `json:"path"`
	Message string `json:"message"`
}

func (p Problem) String() string { return p.Path + ": " + p.Message }

// Options configure the toolset.
type Options struct {
	// Dirs are the skill directories, each holding skill folders, in
	// priority order: on a name clash the earlier directory wins.
	// Relative paths are made absolute when the toolset is built.
	Dirs []string
	// Granter applies loaded skills' capability requests. If nil, every
	// request is refused with the reason "no policy".
	Granter Granter
	// MaxSkills bounds the skills list_skills lists and the prompts
	// served. Default 500.
	MaxSkills int
	// MaxBodyBytes bounds the size of each SKILL.md. Default 256 KiB.
	MaxBodyBytes int
	// Logger receives the toolset's diagnostics (problems found, skills
	// loaded). Nil discards them.
	Logger *slog.Logger
}

// Toolset is the skills toolset, named "skills". It implements
// [gateway.Toolset], [gateway.StatusReporter], [gateway.PromptSource] and
// [gateway.PromptsChangeNotifier]. It is safe for concurrent use.
type Toolset struct {
	opts  Options
	dirs  []string
	log   *slog.Logger
	tools []*gateway.Tool

	cur       atomic.Pointer[state]
	scanMu    sync.Mutex   // serializes scans
	lastCheck atomic.Int64 // unix nanoseconds of the last change check

	mu        sync.Mutex
	listeners []func()
}

// state is the result of one scan. It is immutable once published.
type state struct {
	fingerprint uint64
	// skills are the loadable skills, sorted by name.
	skills []*skill
	// byName holds every skill that owns a name, loadable or not.
	byName map[string]*skill
	// broken maps the folder names (and invalid names) of skills that
	// have no valid name to their problems, for load_skill's errors.
	broken map[string][]Problem
	// problems are all problems, in scan order.
	problems []Problem
}

// skill is one skill folder.
type skill struct {
	name         string
	description  string
	capabilities []string
	allowedTools []string
	body         string
	folder       string // absolute path of the skill folder
	file         string // absolute path of SKILL.md
	resources    []Resource
	truncated    bool      // more than MaxResources resources
	problems     []Problem // this skill's own problems; loadable when empty
}

// Resource is one file of a skill folder other than SKILL.md.
type Resource struct {
	Path string `json:"path" jsonschema_description:"Relative to the skill folder."` // slash-separated
	Size int64  `json:"size" jsonschema:"minimum=0"`
}

// New returns the skills toolset over opts.Dirs and scans them once. It
// returns an error only for unusable options (no directories, an empty or
// repeated directory, negative limits); a directory that does not exist or
// cannot be read is reported by [Toolset.Problems]. opts is copied; nil is
// an error (Dirs is required).
func New(options *Options) (*Toolset, error) {
	var opts Options
	if options != nil {
		opts = *options
	}
	if len(opts.Dirs) == 0 {
		return nil, errors.New("skills: no skill directories")
	}
	if opts.MaxSkills < 0 {
		return nil, fmt.Errorf("skills: MaxSkills %d is negative", opts.MaxSkills)
	}
	if opts.MaxBodyBytes < 0 {
		return nil, fmt.Errorf("skills: MaxBodyBytes %d is negative", opts.MaxBodyBytes)
	}
	if opts.MaxSkills == 0 {
		opts.MaxSkills = DefaultMaxSkills
	}
	if opts.MaxBodyBytes == 0 {
		opts.MaxBodyBytes = DefaultMaxBodyBytes
	}
	t := &Toolset{opts: opts, log: opts.Logger}
	if t.log == nil {
		t.log = slog.New(slog.DiscardHandler)
	}
	for _, d := range opts.Dirs {
		if strings.TrimSpace(d) == "" {
			return nil, errors.New("skills: empty skill directory path")
		}
		abs, err := filepath.Abs(d)
		if err != nil {
			return nil, fmt.Errorf("skills: directory %q: %w", d, err)
		}
		if slices.Contains(t.dirs, abs) {
			return nil, fmt.Errorf("skills: directory %q listed twice", d)
		}
		t.dirs = append(t.dirs, abs)
	}
	list, err := t.listSkillsTool()
	if err != nil {
		return nil, err
	}
	load, err := t.loadSkillTool()
	if err != nil {
		return nil, err
	}
	t.tools = []*gateway.Tool{list, load}
	t.cur.Store(&state{byName: map[string]*skill{}, broken: map[string][]Problem{}})
	t.rescan(true)
	return t, nil
}

// Name implements [gateway.Toolset].
func (t *Toolset) Name() string { return "skills" }

// Tools implements [gateway.Toolset]. The tools are fixed; the skills they
// serve change.
func (t *Toolset) Tools(context.Context) ([]*gateway.Tool, error) {
	return slices.Clone(t.tools), nil
}

// Status implements [gateway.StatusReporter]: "ready", or "degraded" when
// there are problems.
func (t *Toolset) Status() gateway.ToolsetStatus {
	s := t.current()
	if len(s.problems) == 0 {
		return gateway.ToolsetStatus{State: "ready", Detail: gateway.Plural(len(s.skills), "skill", "skills")}
	}
	return gateway.ToolsetStatus{
		State:  "degraded",
		Detail: fmt.Sprintf("%s, %s (first: %s)", gateway.Plural(len(s.skills), "skill", "skills"), gateway.Plural(len(s.problems), "problem", "problems"), s.problems[0]),
	}
}

// Problems returns the problems found by the latest scan, in scan order
// (directory order, then folder name order).
func (t *Toolset) Problems() []Problem {
	return slices.Clone(t.current().problems)
}

// Reload rescans the directories now and calls the prompts-changed
// listeners if the set of skills changed. Problems are reported by
// [Toolset.Problems], not as an error; the error is currently always nil.
func (t *Toolset) Reload() error {
	t.rescan(true)
	return nil
}

// OnPromptsChanged implements [gateway.PromptsChangeNotifier]: f is called
// whenever a scan changes the set of skills (their names or descriptions).
func (t *Toolset) OnPromptsChanged(f func()) {
	t.mu.Lock()
	t.listeners = append(t.listeners, f)
	t.mu.Unlock()
}

// current returns the current state, after checking the directories for
// changes if the last check is more than a second old. It never waits for
// a scan another call is running: it returns the state that scan started
// from.
func (t *Toolset) current() *state {
	if time.Since(time.Unix(0, t.lastCheck.Load())) >= rescanInterval {
		t.rescan(false)
	}
	return t.cur.Load()
}

// rescan scans the directories if force is set or their fingerprint
// changed, publishes the new state, and calls the listeners if the set of
// skills changed. Without force it does nothing while another scan runs.
func (t *Toolset) rescan(force bool) {
	if force {
		t.scanMu.Lock()
	} else if !t.scanMu.TryLock() {
		return
	}
	old := t.cur.Load()
	fp := t.fingerprint()
	t.lastCheck.Store(time.Now().UnixNano())
	if !force && fp == old.fingerprint {
		t.scanMu.Unlock()
		return
	}
	s := t.scan()
	s.fingerprint = fp
	t.cur.Store(s)
	t.scanMu.Unlock()

	t.logChanges(old, s)
	if !sameSet(old, s) {
		t.mu.Lock()
		listeners := slices.Clone(t.listeners)
		t.mu.Unlock()
		for _, f := range listeners {
			f()
		}
	}
}

// sameSet reports whether two states serve the same skills: the same
// names and descriptions.
func sameSet(a, b *state) bool {
	return slices.EqualFunc(a.skills, b.skills, func(x, y *skill) bool {
		return x.name == y.name && x.description == y.description
	})
}

// logChanges logs the problems that are new in s and the skill count when
// it changed.
func (t *Toolset) logChanges(old, s *state) {
	seen := make(map[Problem]bool, len(old.problems))
	for _, p := range old.problems {
		seen[p] = true
	}
	for _, p := range s.problems {
		if !seen[p] {
			t.log.Warn("skill problem", "path", p.Path, "problem", p.Message)
		}
	}
	if !sameSet(old, s) {
		t.log.Info("skills loaded", "skills", len(s.skills), "problems", len(s.problems), "dirs", t.dirs)
	}
}

var (
	_ gateway.Toolset               = (*Toolset)(nil)
	_ gateway.StatusReporter        = (*Toolset)(nil)
	_ gateway.PromptSource          = (*Toolset)(nil)
	_ gateway.PromptsChangeNotifier = (*Toolset)(nil)
)
