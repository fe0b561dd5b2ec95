package memory

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"
)

// CandidatesFile is the name of a run's candidate file in its archive
// directory: runs/<run-id>/archive/memory-candidates.jsonl.
const CandidatesFile = "memory-candidates.jsonl"

// CandidatesPath returns the candidate file of a run whose archive
// directory is archiveDir.
func CandidatesPath(archiveDir string) string { return filepath.Join(archiveDir, CandidatesFile) }

// Candidate is one line of a candidate file: a memory written in candidate
// mode, awaiting review.
type Candidate struct {
	ID      string    `json:"id"`
	Content string    `json:"content"`
	Scope   string    `json:"scope"`
	Tags    []string  `json:"tags"`
	Created time.Time `json:"created"`
	// CallID and Session identify the call that wrote it.
	CallID  string `json:"call_id,omitempty"`
	Session string `json:"session,omitempty"`

	// Line is the candidate's 1-based line number in its file.
	Line int `json:"-"`
}

// Memory returns the candidate as a memory (without SourceID).
func (c Candidate) Memory() Memory {
	return Memory{ID: c.ID, Content: c.Content, Scope: c.Scope, Tags: c.Tags, Created: c.Created}
}

// LineError is a candidate line that could not be used.
type LineError struct {
	Line int
	// Torn is set for a last line without its newline that does not
	// decode: a write cut short by a crash.
	Torn bool
	Err  error
}

func (e *LineError) Error() string { return fmt.Sprintf("line %d: %s", e.Line, e.Problem()) }

// Problem says what is wrong with the line, without its number.
func (e *LineError) Problem() string {
	if e.Torn {
		return fmt.Sprintf("torn last line (a write was cut short, probably by a crash; it was never acknowledged): %v", e.Err)
	}
	return e.Err.Error()
}

func (e *LineError) Unwrap() error { return e.Err }

// ReadCandidates reads a candidate file. It is tolerant: a line that does
// not decode or is not a valid memory is reported in the second result (as
// a *[LineError]) and the others are still returned; a torn last line (a
// crash mid-write) is reported the same way, with Torn set. Blank lines are
// skipped. The error is for a file that cannot be read at all (it wraps
// fs.ErrNotExist when there is no file).
func ReadCandidates(path string) ([]Candidate, []error, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	return readCandidates(f)
}

func readCandidates(r io.Reader) ([]Candidate, []error, error) {
	var (
		cands []Candidate
		bad   []error
	)
	br := bufio.NewReader(r)
	for n := 1; ; n++ {
		line, err := br.ReadBytes('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return cands, bad, err
		}
		complete := len(line) > 0 && line[len(line)-1] == '\n'
		if len(bytes.TrimSpace(line)) > 0 {
			c, perr := parseCandidate(line)
			switch {
			case perr == nil:
				c.Line = n
				cands = append(cands, c)
			default:
				bad = append(bad, &LineError{Line: n, Torn: !complete, Err: perr})
			}
		}
		if err != nil { // io.EOF
			return cands, bad, nil
		}
	}
}

func parseCandidate(line []byte) (Candidate, error) {
	var c Candidate
	dec := json.NewDecoder(bytes.NewReader(line))
	if err := dec.Decode(&c); err != nil {
		return c, fmt.Errorf("not a JSON candidate: %v", err)
	}
	if dec.More() {
		return c, errors.New("not a JSON candidate: extra data after the object")
	}
	if c.ID == "" {
		return c, errors.New("candidate has no id")
	}
	c.Tags = NormalizeTags(c.Tags)
	if err := c.Memory().Validate(); err != nil {
		return c, fmt.Errorf("candidate %s: %v", c.ID, err)
	}
	return c, nil
}

// appendCandidate appends c as one line to path with a single write to a
// file opened with O_APPEND (preceded by a newline if the file's last line
// lacks one, so that the new line is never glued to it), and syncs it (and, when it created the file,
// its directory) before returning: once it returns nil, the line survives a
// crash.
func appendCandidate(path string, c Candidate) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(c); err != nil { // ends the line with '\n'
		return fmt.Errorf("encoding candidate: %w", err)
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	created := true
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|os.O_APPEND, 0o600)
	if errors.Is(err, os.ErrExist) {
		created = false
		f, err = os.OpenFile(path, os.O_RDWR|os.O_APPEND, 0)
	}
	if err != nil {
		return err
	}
	line := buf.Bytes()
	if !created {
		// A last line without its newline (a write cut short, or a line
		// whose newline an editor dropped) would swallow this one: start
		// a line of our own.
		terminated, err := endsWithNewline(f)
		if err != nil {
			f.Close()
			return err
		}
		if !terminated {
			line = append([]byte{'\n'}, line...)
		}
	}
	if _, err := f.Write(line); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if created {
		return syncDir(dir)
	}
	return nil
}

// endsWithNewline reports whether f is empty or its last byte is '\n'.
func endsWithNewline(f *os.File) (bool, error) {
	fi, err := f.Stat()
	if err != nil {
		return false, err
	}
	if fi.Size() == 0 {
		return true, nil
	}
	var b [1]byte
	if _, err := f.ReadAt(b[:], fi.Size()-1); err != nil {
		return false, err
	}
	return b[0] == '\n', nil
}

// syncDir makes a new directory entry durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
