package runs

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"runtime"
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
//
// A writer may ask its leader to yield its processor once before it
// takes the batch (runtime.Gosched; the Run asks while calls overlap in
// the pipeline, [gateway.Call.CallsOverlap], and there is more than one
// processor): the goroutines ready to run then run first, and those about
// to record (other calls starting or finishing) queue their lines and
// join its write(2) instead of each making their own. Without it writers
// rarely met: at 16 clients a call's three lines took 2.7 writes, with it
// 0.5 (perf stat of the served process), and 4-14% less CPU per call
// (docs/benchmarks-journal.md). Calls one at a time do not yield: there the
// goroutines ready to run are the call's own, and with a second processor
// idle the yield wakes a thread for nothing, 5 µs a call in process.
type lineFile struct {
	path string
	f    *os.File

	// testWrite, when set by a test, writes a batch instead of f.Write.
	testWrite func([]byte) (int, error)

	mu      sync.Mutex
	cond    *sync.Cond
	buf     []byte // lines queued and not yet written
	spare   []byte // the other buffer, reused
	queued  uint64 // lines queued so far
	written uint64 // lines written so far (or failed)
	writing bool   // a leader is writing
	closed  bool

	// lines and size are the lines and bytes whose writes succeeded; at
	// close, a file of exactly size bytes holds exactly those lines, all
	// records (see [lineFile.close]).
	lines uint64
	size  int64
	// final, set by close, is what the file holds when it is that file.
	final *FileRecords

	// failed holds the batches whose write failed until each of their
	// writers has taken the error: a writer returns its own batch's
	// result, never a later batch's (a start record said written when it
	// was not would let a call run unrecorded). Empty while writes
	// succeed, so the common path neither allocates nor searches.
	failed []failedBatch
}

// failedBatch is a batch whose write failed: lines from..upto (numbered
// as queued), the error, and how many of its writers have yet to take it.
type failedBatch struct {
	from, upto uint64
	err        error
	left       uint64
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

// yieldToWriters says whether a leader asked to yield does (with more
// than one processor; see [lineFile]); a variable for tests.
var yieldToWriters = func() bool { return runtime.GOMAXPROCS(0) > 1 }

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
	return l.write(line, false)
}

// write writes one whole line (ending in '\n'); line is not retained.
// yield asks a leader to yield before it writes (see [lineFile]).
func (l *lineFile) write(line []byte, yield bool) error {
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
		if yield && yieldToWriters() {
			l.mu.Unlock()
			runtime.Gosched() // let the writers ready to run join this batch
			l.mu.Lock()
		}
		batch, from, upto := l.buf, l.written+1, l.queued
		l.buf = l.spare[:0]
		l.mu.Unlock()
		n, werr := l.writeBatch(batch)
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
		l.written = upto
		if werr == nil {
			l.lines += upto - from + 1
			l.size += int64(n)
		} else {
			l.failed = append(l.failed, failedBatch{from: from, upto: upto, err: werr, left: upto - from + 1})
		}
		l.cond.Broadcast()
	}
	if len(l.failed) == 0 {
		return nil
	}
	return l.takeErr(mine)
}

func (l *lineFile) writeBatch(batch []byte) (int, error) {
	if l.testWrite != nil {
		return l.testWrite(batch)
	}
	return l.f.Write(batch)
}

// takeErr returns the error of the failed batch that holds line n, if
// any, and forgets the batch once all its writers have taken it. Called
// with l.mu held.
func (l *lineFile) takeErr(n uint64) error {
	for i := range l.failed {
		b := &l.failed[i]
		if n < b.from || n > b.upto {
			continue
		}
		err := b.err
		if b.left--; b.left == 0 {
			l.failed = append(l.failed[:i], l.failed[i+1:]...)
		}
		return err
	}
	return nil
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
	// A file of exactly the bytes written holds exactly the lines written
	// (each a record): what a reader would count, kept in run.json so that
	// `runs list` need not read it. Anything else (a partial write not cut
	// off, a hand edit while the run was live, another file at the path)
	// leaves it to be counted.
	fi, serr := l.f.Stat()
	onDisk, derr := os.Lstat(l.path)
	if err == nil && serr == nil && derr == nil && os.SameFile(fi, onDisk) && fi.Size() == l.size {
		l.final = &FileRecords{Records: int(l.lines), Size: fi.Size(), Modified: fi.ModTime().UnixNano()}
	}
	if cerr := l.f.Close(); err == nil {
		err = cerr
	}
	return err
}
