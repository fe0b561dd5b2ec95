// Package runs is the run archive: one directory per gateway process (a
// run) that holds the complete record of its calls and their artifacts.
//
//	runs/<run-id>/run.json            the run's manifest (id, start, pid, version, command,
//	                                  config, client; stop time and status once stopped)
//	runs/<run-id>/events.jsonl        run.started, tool.started, tool.completed, tool.failed, run.stopped ...
//	runs/<run-id>/logs/tools.jsonl    one line per finished call
//	runs/<run-id>/logs/errors.jsonl   one line per failed call
//	runs/<run-id>/archive/            artifacts (large outputs, previous versions) and
//	                                  memory candidates; created when first used
//
// Run IDs sort by start time. Every line is written with a single write
// to a file opened for appending, under a lock, so lines are whole even
// under heavy concurrency, and nothing is buffered in the process: a line
// that was written survives a crash of the gateway (kill -9 included).
// A [Run] is a [gateway.Recorder] and a [gateway.ArtifactStore].
package runs

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/toolgate/toolgate/gateway"
)

// Run is one run's archive. It is safe for concurrent use.
type Run struct {
	id      string
	dir     string
	runsDir string
	log     *slog.Logger

	events, tools, errs *lineFile
	lock                io.Closer // the run directory's lock (lock_unix.go), or nil

	writeErrors atomic.Int64
	// lastFailure is the error of the last write while writes fail, nil
	// once one succeeds; loggedAt is when a failure was last logged.
	lastFailure atomic.Pointer[error]
	loggedAt    atomic.Int64
	probedAt    atomic.Int64 // when Writable last tried a write
	replaced    atomic.Int64 // record files found replaced (guard.go)
	stopGuard   chan struct{}
	closeOnce   sync.Once

	replica string

	manifestMu sync.Mutex
	manifest   Manifest
	sawClient  atomic.Bool
}

// Manifest is a run's run.json.
type Manifest struct {
	ID      string   `json:"id"`
	Started string   `json:"started"`
	PID     int      `json:"pid"`
	Version string   `json:"version"`
	Command []string `json:"command,omitempty"`
	Config  string   `json:"config,omitempty"`
	Replica string   `json:"replica,omitempty"`
	// Locked says the run holds a lock on its directory while it runs
	// (lock_unix.go): whether it is live is whether the lock is held, not
	// whether a process has its PID (PIDs are reused, and in a container
	// the gateway is often PID 1, which always exists).
	Locked bool `json:"locked,omitempty"`
	// Client is the first client that called a tool ("name version").
	Client string `json:"client,omitempty"`
	// Stopped and Status are set when the run closes: a run without them
	// is live, or ended without closing (killed).
	Stopped string `json:"stopped,omitempty"`
	Status  string `json:"status,omitempty"`
	// Counted, set when the run closes, counts the records of its files;
	// nil for a run that did not close (killed), or closed by a version
	// without it.
	Counted *Counted `json:"counted,omitempty"`
}

// Counted is how many records a run's logs/tools.jsonl and
// logs/errors.jsonl held when the run closed, with each file's size and
// modification time then: [Summarize] takes a count from here while the
// file is still that size with that modification time, instead of reading
// it (a file not known to hold only the lines written is left out).
type Counted struct {
	Tools  *FileRecords `json:"tools,omitempty"`
	Errors *FileRecords `json:"errors,omitempty"`
}

// FileRecords is how many records a closed run's JSON lines file holds,
// and the file's size and modification time (ns since the epoch) then.
type FileRecords struct {
	Records  int   `json:"records"`
	Size     int64 `json:"size"`
	Modified int64 `json:"modified_ns"`
}

// matches says whether the file at path is still the one counted.
func (c *FileRecords) matches(path string) bool {
	if c == nil {
		return false
	}
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Size() == c.Size && fi.ModTime().UnixNano() == c.Modified
}

// Options configure [Open].
type Options struct {
	// Version, Command (the command line) and Config (the config file
	// read) are written to the manifest.
	Version string
	Command []string
	Config  string
	// Replica, if set, names this gateway among replicas behind a load
	// balancer: it is in the manifest and in every record and event.
	Replica string
	// Logger receives write failures. If nil, they are discarded (but
	// still counted, see [Run.WriteErrors]).
	Logger *slog.Logger
	// CheckEvery is how often the record files are checked for
	// replacement (guard.go); default 2s.
	CheckEvery time.Duration
}

var runIDRE = regexp.MustCompile(`^[0-9]{8}T[0-9]{6}Z-[0-9a-f]{6}$`)

// NewID returns a new run ID: the UTC start time and 6 random hex digits,
// e.g. 20261121T201530Z-4f2a9c. IDs sort by start time.
func NewID(now time.Time) string {
	var b [3]byte
	_, _ = rand.Read(b[:])
	return now.UTC().Format("20060102T150405Z") + "-" + hex.EncodeToString(b[:])
}

// Open creates a new run under runsDir (created if needed) and checks that
// it can be written, so that an unwritable directory or a full disk is a
// clear error at start-up rather than lost records later.
func Open(runsDir string, opts *Options) (*Run, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	abs, err := filepath.Abs(runsDir)
	if err != nil {
		return nil, fmt.Errorf("run archive %q: %w", runsDir, err)
	}
	now := time.Now()
	id := NewID(now)
	dir := filepath.Join(abs, id)
	// Only logs/ now: archive/ is created by its first artifact, so runs
	// that save none leave no empty folders behind.
	if err := os.MkdirAll(filepath.Join(dir, "logs"), 0o755); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("run archive: cannot create %s: %w", filepath.Join(dir, "logs"), err)
	}
	r := &Run{id: id, dir: dir, runsDir: abs, log: o.Logger, replica: o.Replica}
	// Locked before anything is in it: from here until the process ends
	// (or Close), the run is live to every reader, run.json or not.
	r.lock = lockRun(dir)
	r.manifest = Manifest{ID: id, Started: now.UTC().Format(time.RFC3339Nano), PID: os.Getpid(), Version: o.Version,
		Command: redactArgs(o.Command), Config: o.Config, Replica: o.Replica, Locked: r.lock != nil}
	manifest, _ := json.MarshalIndent(r.manifest, "", "  ")
	if err := writeFileSync(filepath.Join(dir, "run.json"), append(manifest, '\n')); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("run archive: cannot write to %s (unwritable directory or full disk?): %w", dir, err)
	}
	if r.events, err = openLineFile(filepath.Join(dir, "events.jsonl")); err == nil {
		if r.tools, err = openLineFile(filepath.Join(dir, "logs", "tools.jsonl")); err == nil {
			r.errs, err = openLineFile(filepath.Join(dir, "logs", "errors.jsonl"))
		}
	}
	if err != nil {
		r.closeFiles()
		os.RemoveAll(dir)
		return nil, fmt.Errorf("run archive: %w", err)
	}
	started := map[string]any{"time": stamp(now), "type": "run.started", "run_id": id, "pid": os.Getpid(), "version": o.Version}
	if o.Replica != "" {
		started["replica"] = o.Replica
	}
	if err := r.events.writeLine(started); err != nil {
		r.closeFiles()
		os.RemoveAll(dir)
		return nil, fmt.Errorf("run archive: cannot write to %s (unwritable directory or full disk?): %w", dir, err)
	}
	if o.CheckEvery <= 0 {
		o.CheckEvery = defaultCheckEvery
	}
	r.stopGuard = make(chan struct{})
	go r.guard(o.CheckEvery, r.stopGuard)
	return r, nil
}

func writeFileSync(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// ID is the run's ID.
func (r *Run) ID() string { return r.id }

// Dir is the run's directory.
func (r *Run) Dir() string { return r.dir }

// ArchiveDir is where artifacts and memory candidates go.
func (r *Run) ArchiveDir() string { return filepath.Join(r.dir, "archive") }

// WriteErrors is how many record lines could not be written (a full disk,
// say). Each failure is also logged.
func (r *Run) WriteErrors() int64 { return r.writeErrors.Load() }

// Event writes a line to events.jsonl with the given type and fields.
func (r *Run) Event(typ string, fields map[string]any) { _ = r.event(typ, fields) }

func (r *Run) event(typ string, fields map[string]any) error {
	line := make(map[string]any, len(fields)+3)
	for k, v := range fields {
		line[k] = v
	}
	line["time"] = stamp(time.Now())
	line["type"] = typ
	line["run_id"] = r.id
	if r.replica != "" {
		line["replica"] = r.replica
	}
	return r.write(r.events, line)
}

func (r *Run) write(f *lineFile, v any) error {
	err := f.writeLine(v)
	if err != nil || r.lastFailure.Load() != nil {
		r.wrote(f, err)
	}
	return err
}

// writeBuilt writes a hand-built line and returns the builder to its pool.
func (r *Run) writeBuilt(f *lineFile, l *line, yield bool) error {
	err := f.write(l.done(), yield)
	if err != nil || r.lastFailure.Load() != nil {
		r.wrote(f, err)
	}
	l.release()
	return err
}

// failureLogEvery is how often a write failure is logged while writes
// fail: a full disk fails each call's lines, and a client that retries
// would fill the log (wherever it is) with the same line.
const failureLogEvery = 10 * time.Second

// wrote notes the outcome of a write that failed, or that succeeded while
// writes were failing (the callers test both inline: a success is one
// atomic load): a failure is counted, kept for [Run.Writable] and logged
// (once per failureLogEvery, with the count); a success ends the spell.
func (r *Run) wrote(f *lineFile, err error) {
	if err == nil {
		r.lastFailure.Store(nil)
		return
	}
	n := r.writeErrors.Add(1)
	r.lastFailure.Store(&err)
	now, last := time.Now().UnixNano(), r.loggedAt.Load()
	if now-last >= int64(failureLogEvery) && r.loggedAt.CompareAndSwap(last, now) {
		r.log.Error("run archive write failed; calls are refused until their records can be written",
			"file", f.path, "err", err, "write_errors", n)
	}
}

// Writable says whether the run's records can be written: nil while the
// last write succeeded. While writes fail it tries one more, a
// records.resumed event, which says so in events.jsonl when it succeeds:
// a replica that refuses every call is taken out of rotation by its
// health check ([gateway.HTTPOptions].Ready), and then no call would
// write to find that the disk has room again.
// It tries at most once a second (a health check anyone may send must not
// turn into a stream of writes); in between it gives the last failure.
func (r *Run) Writable() error {
	failed := r.lastFailure.Load()
	if failed == nil {
		return nil
	}
	now, last := time.Now().UnixNano(), r.probedAt.Load()
	if now-last < int64(time.Second) || !r.probedAt.CompareAndSwap(last, now) {
		return *failed
	}
	return r.event("records.resumed", map[string]any{"write_errors": r.writeErrors.Load()})
}

// CallStarted implements [gateway.Recorder]: a tool.started event. It
// returns the write error, if any, so that a call is not run unrecorded.
func (r *Run) CallStarted(call *gateway.Call) error {
	l := newLine()
	l.time("time", call.Started)
	l.str("type", "tool.started")
	l.str("run_id", r.id)
	l.strOmit("replica", r.replica)
	l.str("call_id", call.ID)
	l.str("tool", gateway.Truncate(call.Name, recordNameMax))
	l.caller(call)
	if call.Client != "" && !r.sawClient.Load() && r.sawClient.CompareAndSwap(false, true) {
		r.updateManifest(func(m *Manifest) { m.Client = call.Client })
	}
	return r.writeBuilt(r.events, l, call.CallsOverlap(call.Started))
}

// CallFinished implements [gateway.Recorder]: a tool.completed or
// tool.failed event; the call's line in tools.jsonl: time, run_id, call_id,
// tool, toolset, session, client, arguments (secret values redacted),
// status, is_error, duration_ms, brief, decision, artifacts; and for a
// failure a line in errors.jsonl with the message.
func (r *Run) CallFinished(call *gateway.Call, res *gateway.Result, elapsed time.Duration) {
	now := time.Now()
	ms := float64(elapsed.Microseconds()) / 1000
	status := res.Status()

	// The event, the tools.jsonl line and an errors.jsonl line share most
	// of their members, in the same order: the lines copy them from the
	// event's bytes ({"time":…, then run_id through the caller; and for
	// tools.jsonl the decision with the artifacts) instead of encoding
	// them again.
	ev := newLine()
	ev.time("time", now)
	head := len(ev.b)
	if res.IsError {
		ev.str("type", "tool.failed")
	} else {
		ev.str("type", "tool.completed")
	}
	who := len(ev.b)
	ev.str("run_id", r.id)
	ev.strOmit("replica", r.replica)
	ev.str("call_id", call.ID)
	ev.str("tool", gateway.Truncate(call.Name, recordNameMax))
	ev.strOmit("toolset", call.Toolset)
	ev.caller(call)
	whoEnd := len(ev.b)
	ev.str("status", status)
	ev.num("duration_ms", ms)
	tail := len(ev.b)
	ev.decision(call.Decision)
	if len(call.Artifacts) > 0 {
		ev.value("artifacts", call.Artifacts)
	}
	if len(call.ArtifactErrors) > 0 { // output cut and not kept: say so
		ev.strings("artifact_errors", call.ArtifactErrors)
	}

	args := gateway.RecordArguments(call)
	tl := newLineOf(ev.b[:head], ev.b[who:whoEnd])
	tl.raw("arguments", args)
	tl.str("status", status)
	tl.boolean("is_error", res.IsError)
	tl.num("duration_ms", ms)
	tl.strOmit("brief", gateway.Truncate(res.Brief(), recordTextMax))
	tl.b = append(tl.b, ev.b[tail:]...)

	var el *line
	if res.IsError {
		msg := res.Message
		if msg == "" {
			msg = res.OutputText()
		}
		el = newLineOf(ev.b[:head], ev.b[who:whoEnd])
		el.raw("arguments", args)
		el.str("status", status)
		// Redacted before the cut, so that a secret across it is seen
		// whole by the patterns (a URL's password needs its "@"); the
		// redaction reads at most twice what is kept.
		el.str("message", gateway.Truncate(gateway.RedactText(gateway.Truncate(msg, 2*recordTextMax)), recordTextMax))
		el.num("duration_ms", ms)
	}

	yield := call.CallsOverlap(now)
	_ = r.writeBuilt(r.events, ev, yield)
	_ = r.writeBuilt(r.tools, tl, yield)
	if el != nil {
		_ = r.writeBuilt(r.errs, el, yield)
	}
}

// recordNameMax bounds the names a record keeps that a client gives (the
// tool it called, which may name nothing, and its own name): either may
// be as long as a request, and every line of the record stays small.
const recordNameMax = 512

// recordTextMax bounds the message and the brief a record keeps (cut
// with "…"): either comes from a tool or an upstream and may be megabytes,
// and a record line stays small enough to read back whole (see [Records]).
const recordTextMax = 4096

// artifactNameRE is the syntax of an artifact's file name, up to
// artifactNameMax bytes (checked apart: a counted repetition compiles to a
// copy of its class per count, milliseconds of every start-up).
var artifactNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

const artifactNameMax = 201

func validArtifactName(file string) bool {
	return len(file) <= artifactNameMax && artifactNameRE.MatchString(file) && !strings.Contains(file, "..")
}

// SaveArtifact implements [gateway.ArtifactStore]: the artifact is written
// (and synced) to archive/<call-id>-<name>.
func (r *Run) SaveArtifact(call *gateway.Call, name, mimeType string, data []byte) (gateway.Artifact, error) {
	name = filepath.Base(name)
	if ext := filepath.Ext(name); ext != ".txt" && ext != ".json" && mimeType != "" {
		if exts, _ := mime.ExtensionsByType(mimeType); len(exts) > 0 {
			name = strings.TrimSuffix(name, ext) + exts[0]
		}
	}
	file := call.ID + "-" + name
	if !validArtifactName(file) {
		return gateway.Artifact{}, fmt.Errorf("artifact name %q is not allowed", file)
	}
	path := filepath.Join(r.ArchiveDir(), file)
	owners := filepath.Join(r.ArchiveDir(), ownersDir)
	if err := os.MkdirAll(owners, 0o755); err != nil { // and the archive directory with it
		return gateway.Artifact{}, fmt.Errorf("saving artifact: %w", err)
	}
	if call.Identity != "" {
		// The owner first: an artifact is never there without it.
		if err := writeFileSync(filepath.Join(owners, file), []byte(call.Identity)); err != nil {
			return gateway.Artifact{}, fmt.Errorf("saving artifact: %w", err)
		}
	}
	if err := writeFileSync(path, data); err != nil {
		return gateway.Artifact{}, fmt.Errorf("saving artifact: %w", err)
	}
	return gateway.Artifact{
		URI: gateway.ArtifactURIPrefix + r.id + "/" + file, Name: file, MIMEType: mimeType,
		Size: int64(len(data)), Path: path,
	}, nil
}

// ErrNoArtifact is returned for an artifact URI that names nothing.
// It is [gateway.ErrNoArtifact], which the MCP mirror answers as "resource
// not found".
var ErrNoArtifact = gateway.ErrNoArtifact

// ReadArtifact implements [gateway.ArtifactStore]. It serves artifacts of
// any run under the same runs directory, so that links stay readable after
// a restart; the URI's run ID and file name are checked against strict
// patterns, so a URI cannot name a path outside an archive directory, and
// the file is read following no symbolic link (see [readArtifactFile]), so
// a link planted in an archive cannot serve a file outside it either.
func (r *Run) ReadArtifact(uri string) ([]byte, string, error) {
	run, file, err := artifactOf(uri)
	if err != nil {
		return nil, "", err
	}
	data, err := readArtifactFile(r.runsDir, run, file)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, "", fmt.Errorf("%w: %q", ErrNoArtifact, uri)
		}
		if errors.Is(err, errNotArtifact) {
			return nil, "", fmt.Errorf("%w: %q: %w", ErrNoArtifact, uri, err)
		}
		return nil, "", err
	}
	mt := "application/octet-stream"
	switch ext := filepath.Ext(file); ext {
	case ".txt":
		mt = "text/plain; charset=utf-8"
	case ".json":
		mt = "application/json"
	default:
		if t := mime.TypeByExtension(ext); t != "" {
			mt = t
		}
	}
	return data, mt, nil
}

// artifactOf is the run ID and file name of an artifact URI, checked
// against strict patterns ([Run.ReadArtifact]).
func artifactOf(uri string) (run, file string, err error) {
	rest, ok := strings.CutPrefix(uri, gateway.ArtifactURIPrefix)
	if !ok {
		return "", "", fmt.Errorf("%w: %q is not an artifact URI", ErrNoArtifact, uri)
	}
	run, file, ok = strings.Cut(rest, "/")
	if !ok || !runIDRE.MatchString(run) || !validArtifactName(file) {
		return "", "", fmt.Errorf("%w: %q", ErrNoArtifact, uri)
	}
	return run, file, nil
}

// ownersDir, in a run's archive directory, holds the owner of each
// artifact (the identity of the call it was saved for) in a file of the
// artifact's name. No artifact URI names it: an artifact's name starts
// with a letter or digit, and holds no '/'.
const ownersDir = ".owners"

// ArtifactOwner implements [gateway.ArtifactOwners]: the identity of the
// call the artifact at uri was saved for, "" for an artifact saved before
// owners were recorded (or for a call of no identity). A URI that names
// no artifact is [ErrNoArtifact].
func (r *Run) ArtifactOwner(uri string) (string, error) {
	run, file, err := artifactOf(uri)
	if err != nil {
		return "", err
	}
	b, err := readArtifactFile(r.runsDir, run, ownersDir+"/"+file)
	if errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("reading the owner of artifact %q: %w", uri, err)
	}
	return string(b), nil
}

// errNotArtifact: a path to an artifact holds something toolgate never
// writes there (a symbolic link, a directory, a device).
var errNotArtifact = errors.New("not a regular file of the run's archive (a symbolic link?)")

// readArtifactFile reads runsDir/run/archive/file, refusing a symbolic link
// at the run's directory, its archive directory or the file: none is one
// toolgate writes, and one (planted by whoever can write the runs
// directory) would serve a file outside the run's archive. Each step is
// opened beneath the last (os.Root, which never leaves it) and checked to
// be the very directory or file that Lstat saw there, so a link swapped in
// between the check and the open is refused too.
func readArtifactFile(runsDir, run, file string) ([]byte, error) {
	dir, err := os.OpenRoot(runsDir)
	if err != nil {
		return nil, err
	}
	defer func() { dir.Close() }()
	for _, name := range []string{run, "archive"} {
		fi, err := dir.Lstat(name)
		if err != nil {
			return nil, err
		}
		if !fi.IsDir() {
			return nil, fmt.Errorf("%s: %w", name, errNotArtifact)
		}
		sub, err := dir.OpenRoot(name)
		if err != nil {
			return nil, err
		}
		dir.Close()
		dir = sub
		if got, err := dir.Stat("."); err != nil || !os.SameFile(fi, got) {
			return nil, fmt.Errorf("%s: %w", name, errNotArtifact)
		}
	}
	fi, err := dir.Lstat(file)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: %w", file, errNotArtifact)
	}
	f, err := dir.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if got, err := f.Stat(); err != nil || !os.SameFile(fi, got) {
		return nil, fmt.Errorf("%s: %w", file, errNotArtifact)
	}
	return io.ReadAll(f)
}

// Close writes the run.stopped event, syncs and closes the record files,
// and puts the stop time and status ("stopped", or what [Run.SetStatus]
// said) in the manifest. Calls must have finished (see
// [gateway.Pipeline.Shutdown]).
func (r *Run) Close() error {
	var err error
	r.closeOnce.Do(func() {
		close(r.stopGuard)
		r.checkFiles() // a replacement since the last check is restored before the end
		r.Event("run.stopped", map[string]any{"write_errors": r.writeErrors.Load()})
		err = r.closeFiles()
		r.updateManifest(func(m *Manifest) {
			if r.tools.final != nil || r.errs.final != nil {
				m.Counted = &Counted{Tools: r.tools.final, Errors: r.errs.final}
			}
			m.Stopped = stamp(time.Now())
			if m.Status == "" {
				m.Status = "stopped"
			}
		})
		if r.lock != nil {
			r.lock.Close()
		}
	})
	return err
}

// SetStatus says how the run ends ("signal", "error: ..."), for the
// manifest written by Close.
func (r *Run) SetStatus(status string) {
	r.manifestMu.Lock()
	r.manifest.Status = status
	r.manifestMu.Unlock()
}

// updateManifest changes the manifest and rewrites run.json atomically
// (a new file renamed over the old one).
func (r *Run) updateManifest(f func(*Manifest)) {
	if err := r.writeManifest(f); err != nil {
		r.log.Warn("run archive: cannot update run.json", "err", err)
	}
}

// writeManifest is updateManifest under its lock, which orders the
// rewrites (the last change is the file's).
func (r *Run) writeManifest(f func(*Manifest)) error {
	r.manifestMu.Lock()
	defer r.manifestMu.Unlock()
	f(&r.manifest)
	b, _ := json.MarshalIndent(r.manifest, "", "  ")
	path := filepath.Join(r.dir, "run.json")
	tmp := path + ".tmp"
	_ = os.Remove(tmp)
	if err := writeFileSync(tmp, append(b, '\n')); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// redactArgs is a command line as the manifest keeps it: the value of a
// flag that looks like a secret (--token=x, --token x) is replaced.
func redactArgs(args []string) []string {
	out := slices.Clone(args)
	for i, a := range out {
		name, _, hasValue := strings.Cut(a, "=")
		if !looksSecret(name) {
			continue
		}
		if hasValue {
			out[i] = name + "=[REDACTED]"
		} else if i+1 < len(out) {
			out[i+1] = "[REDACTED]"
		}
	}
	return out
}

func looksSecret(flag string) bool {
	f := strings.ToLower(strings.TrimLeft(flag, "-"))
	for _, w := range []string{"token", "secret", "password", "key", "auth"} {
		if strings.Contains(f, w) && strings.HasPrefix(flag, "-") {
			return true
		}
	}
	return false
}

func (r *Run) closeFiles() error {
	var errs []error
	for _, f := range []*lineFile{r.events, r.tools, r.errs} {
		if f != nil {
			errs = append(errs, f.close())
		}
	}
	return errors.Join(errs...)
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

var (
	_ gateway.Recorder       = (*Run)(nil)
	_ gateway.ArtifactStore  = (*Run)(nil)
	_ gateway.ArtifactOwners = (*Run)(nil)
)
