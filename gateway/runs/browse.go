package runs

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Browsing the archive: what `toolgate runs` shows, and retention. Only
// files are read; a run being written is read up to its last whole line.

// Summary is one run as `toolgate runs list` shows it.
type Summary struct {
	Manifest
	Dir    string `json:"dir"`
	Live   bool   `json:"live"`   // not stopped, and its process is running
	Calls  int    `json:"calls"`  // records in tools.jsonl, as [Records] reads them
	Errors int    `json:"errors"` // records in errors.jsonl
	// Skipped are the lines of tools.jsonl and errors.jsonl that are not
	// records (torn by a crash, edited by hand), which Records skips and
	// Calls and Errors do not count.
	Skipped    int `json:"skipped_lines,omitempty"`
	Artifacts  int `json:"artifacts"`
	Candidates int `json:"memory_candidates"`
}

// Duration is how long the run lasted (until now for a live run, zero for
// one that ended without stopping).
func (s Summary) Duration(now time.Time) time.Duration {
	start, err := time.Parse(time.RFC3339Nano, s.Started)
	if err != nil {
		return 0
	}
	if stop, err := time.Parse(time.RFC3339Nano, s.Stopped); err == nil {
		return stop.Sub(start)
	}
	if s.Live {
		return now.Sub(start)
	}
	return 0
}

// candidatesFile is the memory toolset's candidate file in a run's archive
// (memory.CandidatesFile; named here to keep this package free of it).
const candidatesFile = "memory-candidates.jsonl"

// List returns the runs under runsDir, newest first, with their records
// counted ([Summarize]).
func List(runsDir string) ([]Summary, error) { return list(runsDir, Summarize) }

// list returns the runs under runsDir, newest first, each read by read.
func list(runsDir string, read func(dir string) Summary) ([]Summary, error) {
	ents, err := os.ReadDir(runsDir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []Summary
	for _, e := range ents {
		if !e.IsDir() || !runIDRE.MatchString(e.Name()) {
			continue
		}
		out = append(out, read(filepath.Join(runsDir, e.Name())))
	}
	// Newest first by start time (to the nanosecond: run IDs have seconds,
	// and two runs may start in one), then by ID.
	slices.SortFunc(out, func(a, b Summary) int {
		if c := strings.Compare(startKey(b), startKey(a)); c != 0 {
			return c
		}
		return strings.Compare(b.ID, a.ID)
	})
	return out, nil
}

// startKey sorts runs by start time: the manifest's, in a fixed-width
// form, or the second in the run ID when the manifest is unreadable.
func startKey(s Summary) string {
	if t, err := time.Parse(time.RFC3339Nano, s.Started); err == nil {
		return t.UTC().Format("20060102T150405.000000000")
	}
	if len(s.ID) >= 15 {
		return s.ID[:15] + ".000000000"
	}
	return s.ID
}

// Summarize reads one run directory.
func Summarize(dir string) Summary {
	s := head(dir)
	var skipped int
	var kept Counted // set by Close only
	if s.Counted != nil {
		kept = *s.Counted
	}
	s.Calls, s.Skipped = countOf(kept.Tools, filepath.Join(dir, "logs", "tools.jsonl"))
	s.Errors, skipped = countOf(kept.Errors, filepath.Join(dir, "logs", "errors.jsonl"))
	s.Skipped += skipped
	s.Candidates = countLines(filepath.Join(dir, "archive", candidatesFile))
	if ents, err := os.ReadDir(filepath.Join(dir, "archive")); err == nil {
		for _, e := range ents {
			if !e.IsDir() && e.Name() != candidatesFile {
				s.Artifacts++
			}
		}
	}
	return s
}

// head reads what ordering runs and choosing among them needs: the
// manifest and whether the run is live. Its records are not counted
// (Calls, Errors, Skipped, Artifacts and Candidates are zero): that reads
// every line of every run, and retention runs at every start of serve and
// call, over up to runs.keep runs (200 by default).
func head(dir string) Summary {
	s := Summary{Dir: dir}
	s.Manifest, s.Live = Live(dir)
	if s.ID == "" { // no manifest, or none readable: the run is still named
		s.ID = filepath.Base(dir)
	}
	return s
}

// Live reads whether a run is live, and its manifest, without counting
// its records as [Summarize] does: what a follower of a live run asks at
// every poll.
func Live(dir string) (m Manifest, live bool) {
	if b, err := os.ReadFile(filepath.Join(dir, "run.json")); err == nil {
		_ = json.Unmarshal(b, &m)
	}
	// A run that holds its lock is live, whatever run.json says (it may
	// not be written yet); one that took a lock and no longer holds it is
	// over, whatever process has its PID now. Runs of versions without
	// the lock are told by their PID.
	return m, runLocked(dir) || m.Stopped == "" && !m.Locked && processRunning(m.PID)
}

func countLines(path string) int {
	f, err := os.Open(path)
	if err != nil {
		return 0
	}
	defer f.Close()
	n := 0
	buf := make([]byte, 64<<10)
	for {
		k, err := f.Read(buf)
		for _, c := range buf[:k] {
			if c == '\n' {
				n++
			}
		}
		if err != nil {
			return n
		}
	}
}

// Resolve finds a run by id, unique id prefix, or "latest"; or by its
// id's random part (after the dash: "4f2a9c" of
// 20261121T201530Z-4f2a9c) or a unique prefix of it, which is what tells
// runs of the same second apart and what a person copies.
func Resolve(runsDir, ref string) (string, error) {
	all, err := list(runsDir, head)
	if err != nil {
		return "", err
	}
	if len(all) == 0 {
		return "", fmt.Errorf("no runs in %s", runsDir)
	}
	if ref == "" || ref == "latest" {
		return all[0].Dir, nil
	}
	var found, byPart []string
	for _, s := range all {
		if s.ID == ref {
			return s.Dir, nil
		}
		if strings.HasPrefix(s.ID, ref) {
			found = append(found, s.ID)
		}
		if _, part, ok := strings.Cut(s.ID, "-"); ok && strings.HasPrefix(part, ref) {
			byPart = append(byPart, s.ID)
		}
	}
	if len(found) == 0 {
		found = byPart
	}
	switch len(found) {
	case 0:
		return "", fmt.Errorf("no run %q in %s (toolgate runs list shows them)", ref, runsDir)
	case 1:
		return filepath.Join(runsDir, found[0]), nil
	}
	return "", fmt.Errorf("%q matches %d runs (%s): give more of the id", ref, len(found), strings.Join(found[:min(3, len(found))], ", "))
}

// maxRecordLine is the longest line [Records] reads: far above what the
// writer produces (arguments, message and brief are bounded), so that a
// line from an older writer or a foreign hand is skipped, never fatal.
const maxRecordLine = 16 << 20

// Records reads a run's JSON lines file (say logs/tools.jsonl), skipping a
// line that is not a record (see [isRecord]: not whole JSON, not an
// object, torn by a crash or a hand edit) or is longer than maxRecordLine:
// one such line does not hide the run's other records. [Summarize] counts
// by the same rule, so a run's counts are what Records yields.
func Records(path string) ([]Record, error) {
	var out []Record
	err := scanLines(path, func(line []byte, tooLong, _ bool) bool {
		if m, ok := recordOf(line, tooLong); ok {
			out = append(out, m)
		}
		return true
	})
	return out, err
}

// Record is one record of a JSON lines file of the archive: its members,
// decoded to be read, and its line as it was written, to be shown.
// Decoding loses what a reader of a record relies on: a number beyond
// float64's precision, the members' order, and a name given twice, as a
// caller may send arguments and as a refusal of them records them. So
// whatever shows a record shows its line: MarshalJSON is the line.
type Record struct {
	Fields map[string]any
	Line   json.RawMessage
}

// MarshalJSON is the record's line, as written.
func (r Record) MarshalJSON() ([]byte, error) { return r.Line, nil }

// String is the record's member key when it is a string, or "".
func (r Record) String(key string) string {
	s, _ := r.Fields[key].(string)
	return s
}

// recordOf decodes one line as [Records] takes it: a line too long, or
// not a record, is skipped (false). The record keeps a copy of line.
func recordOf(line []byte, tooLong bool) (Record, bool) {
	if tooLong {
		return Record{}, false
	}
	var m map[string]any
	if json.Unmarshal(line, &m) != nil || m == nil {
		// Not decoded: a record all the same if it is one (a number
		// beyond float64's range is valid JSON), with what decoded, as
		// it is counted (isRecord); otherwise skipped.
		if !isRecord(line) {
			return Record{}, false
		}
		if m == nil {
			m = map[string]any{}
		}
	}
	return Record{Fields: m, Line: bytes.Clone(bytes.TrimSpace(line))}, true
}

// Follower reads the records a JSON lines file gains as it is written
// (`runs tail`), by the rules of [Records], each byte once: a poll of a
// run of a million calls reads what came since the last, not the file.
type Follower struct {
	path string
	off  int64  // where the first line not yet taken begins
	seen []byte // the last bytes before off, to tell a file cut short and written again past off
}

// followerCheck is how many of the bytes before its offset a Follower
// compares at each call.
const followerCheck = 64

// NewFollower follows path from its start.
func NewFollower(path string) *Follower { return &Follower{path: path} }

// Next returns the records of the lines ended since the last call; a line
// not ended yet (being written) waits for the next call, unless final
// (the run is over: a last line without a newline is taken as Records
// takes it). restarted says the file was cut short since (truncated,
// replaced by a shorter one), and the records are read from its start.
func (f *Follower) Next(final bool) (recs []Record, restarted bool, err error) {
	file, err := os.Open(f.path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	defer file.Close()
	fi, err := file.Stat()
	if err != nil {
		return nil, false, err
	}
	if f.off > 0 {
		// Cut short since: shorter than what was taken, or, written
		// again past it, other bytes where the last taken ones were.
		at := f.off - int64(len(f.seen))
		buf := make([]byte, len(f.seen))
		if fi.Size() < f.off {
			restarted = true
		} else if _, err := file.ReadAt(buf, at); err != nil || !bytes.Equal(buf, f.seen) {
			restarted = true
		}
		if restarted {
			f.off, f.seen = 0, nil
		}
	}
	if _, err := file.Seek(f.off, io.SeekStart); err != nil {
		return nil, restarted, err
	}
	err = scanReader(file, func(line []byte, tooLong, last bool, n int64) bool {
		if last && !final {
			return false // not ended yet: taken whole at a later call
		}
		f.off += n
		if !tooLong {
			f.seen = append(f.seen[:0], line[max(0, len(line)-followerCheck):]...)
		} else {
			f.seen = nil // not held: nothing to compare
		}
		if m, ok := recordOf(line, tooLong); ok {
			recs = append(recs, m)
		}
		return true
	})
	return recs, restarted, err
}

// countOf is countRecords of path, or the count kept in the manifest when
// the run closed, while the file is still the one counted then.
func countOf(kept *FileRecords, path string) (records, skipped int) {
	if kept.matches(path) {
		return kept.Records, 0
	}
	return countRecords(path)
}

// countRecords counts the records of a JSON lines file as [Records] reads
// them, and the lines it skips (a last line not ended yet aside: a live
// run may be writing it).
func countRecords(path string) (records, skipped int) {
	_ = scanLines(path, func(line []byte, tooLong, last bool) bool {
		switch {
		case !tooLong && isRecord(line):
			records++
		case !last && (tooLong || len(bytes.TrimSpace(line)) > 0):
			skipped++
		}
		return true
	})
	return records, skipped
}

// isRecord: a line is a record when it is one whole JSON object.
func isRecord(line []byte) bool {
	t := bytes.TrimLeft(line, " \t\r\n")
	return len(t) > 0 && t[0] == '{' && json.Valid(line)
}

// scanLines calls fn with each line of a file (tooLong, and no line, for
// one longer than maxRecordLine, which is not held; last for a final line
// with no newline) until fn returns false. A missing file has no lines.
func scanLines(path string, fn func(line []byte, tooLong, last bool) bool) error {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	return scanReader(f, func(line []byte, tooLong, last bool, _ int64) bool { return fn(line, tooLong, last) })
}

// scanReader is [scanLines] on a reader; fn also gets the line's length
// in bytes (its newline included), whether it holds the line or not.
func scanReader(r io.Reader, fn func(line []byte, tooLong, last bool, n int64) bool) error {
	br := bufio.NewReaderSize(r, 64<<10)
	var line []byte
	tooLong := false
	var n int64
	for {
		chunk, err := br.ReadSlice('\n')
		n += int64(len(chunk))
		if len(line)+len(chunk) > maxRecordLine {
			tooLong, line = true, line[:0]
		} else if !tooLong {
			line = append(line, chunk...)
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue // the line goes on
		}
		if errors.Is(err, io.EOF) {
			if tooLong || len(line) > 0 {
				fn(line, tooLong, true, n)
			}
			return nil
		}
		if !fn(line, tooLong, false, n) {
			return nil
		}
		line, tooLong, n = line[:0], false, 0
		if err != nil {
			return err
		}
	}
}

// Prunable lists the runs retention removes: beyond the keep newest
// (keep >= 0; negative turns it off), or started longer than maxAge ago
// (maxAge > 0). A live run is never among them, nor counted. Their records
// are not read (see [head]): [Summarize] counts them.
func Prunable(runsDir string, keep int, maxAge time.Duration, now time.Time) ([]Summary, error) {
	all, err := list(runsDir, head)
	if err != nil {
		return nil, err
	}
	var out []Summary
	i := -1
	for _, s := range all {
		if s.Live {
			continue
		}
		i++
		old := false
		if maxAge > 0 {
			if start, err := time.Parse(time.RFC3339Nano, s.Started); err == nil && now.Sub(start) > maxAge {
				old = true
			} else if err != nil {
				if t, err := time.Parse("20060102T150405Z", s.ID[:16]); err == nil && now.Sub(t) > maxAge {
					old = true
				}
			}
		}
		if old || keep >= 0 && i >= keep {
			out = append(out, s)
		}
	}
	return out, nil
}

// Remove deletes a run directory under runsDir (its name checked, so that
// nothing else can be removed).
func Remove(runsDir string, s Summary) error {
	if !runIDRE.MatchString(filepath.Base(s.Dir)) || filepath.Dir(s.Dir) != filepath.Clean(runsDir) {
		return fmt.Errorf("not a run directory of %s: %s", runsDir, s.Dir)
	}
	return os.RemoveAll(s.Dir)
}
