package runs

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync"
)

// lineFile is a JSON Lines file written whole lines at a time.
//
// Lines are appended to a file opened with O_APPEND, and a writer returns
// only once its line has been written to the file (the kernel's page cache:
// it survives a crash of the process, kill -9 included). Writes are group
// commits: whichever writer finds no write in progress becomes the leader
// and writes every line queued so far with one write(2), while the others
// wait for it; so under concurrency many lines share a system call, a
// line is never torn or interleaved with another, and nothing is held in
// the process after its writer has returned. There is no goroutine to
// start or stop.
type lineFile struct {
	path string
	f    *os.File

	mu      sync.Mutex
	cond    *sync.Cond
	buf     []byte // lines queued and not yet written
	spare   []byte // the other buffer, reused
	queued  uint64 // lines queued so far
	written uint64 // lines written so far (or failed)
	writing bool   // a leader is writing
	err     error  // the last batch's error
	closed  bool
}

func openLineFile(path string) (*lineFile, error) {
	// Read access too: a replaced file is restored from this one (guard.go).
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("opening %s: %w", path, err)
	}
	l := &lineFile{path: path, f: f}
	l.cond = sync.NewCond(&l.mu)
	return l, nil
}

var errClosed = errors.New("record file is closed")

// encodeLine is v as one line of JSON (no HTML escaping), newline included.
func encodeLine(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil { // Encode ends the line with '\n'
		return nil, fmt.Errorf("encoding record: %w", err)
	}
	return buf.Bytes(), nil
}

func (l *lineFile) writeLine(v any) error {
	line, err := encodeLine(v)
	if err != nil {
		return err
	}
	return l.write(line)
}

// write writes one whole line (ending in '\n'); line is not retained.
func (l *lineFile) write(line []byte) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return errClosed
	}
	l.buf = append(l.buf, line...)
	l.queued++
	mine := l.queued
	for l.written < mine {
		if l.writing {
			l.cond.Wait()
			continue
		}
		// Lead: write everything queued so far, outside the lock.
		l.writing = true
		batch, upto := l.buf, l.queued
		l.buf = l.spare[:0]
		l.mu.Unlock()
		n, werr := l.f.Write(batch)
		if werr != nil && n > 0 {
			// Part of the batch went in (a full disk): cut it off, so the
			// file holds whole lines only and later lines are not glued
			// to a fragment.
			if fi, serr := l.f.Stat(); serr == nil {
				_ = l.f.Truncate(fi.Size() - int64(n))
			}
		}
		l.mu.Lock()
		l.spare = batch
		l.writing = false
		l.written, l.err = upto, werr
		l.cond.Broadcast()
	}
	return l.err
}

func (l *lineFile) close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	for l.writing {
		l.cond.Wait()
	}
	if l.closed {
		return nil
	}
	l.closed = true
	err := l.f.Sync()
	if cerr := l.f.Close(); err == nil {
		err = cerr
	}
	return err
}
