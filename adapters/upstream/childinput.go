package upstream

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"syscall"
)

// childInput is the writing end of a stdio child's stdin, as the stdio
// transport writes its messages to it: a write never blocks its caller.
//
// mcp-go's transport writes each message whole under a lock of its own,
// with no context. Straight to the pipe, a child that stops reading (busy,
// or hung) with the pipe's 64 KiB full would hold the writing call past
// its deadline, and every other call behind the lock. Here a write puts
// what the pipe takes at once (a non-blocking write(2), no goroutine and
// no timer: the common case), and the rest of the message, and every
// message after it until the pipe has drained, in a queue that one
// goroutine writes as the child reads. Messages stay whole and in order;
// the caller goes on to wait for its answer, which does honour its
// context. The queue is bounded: a message that would take it over max is
// refused whole, with an error saying the child is not reading.
//
// So a stdio upstream's tools can run on the caller's goroutine
// (gateway.Tool.HonoursContext).
type childInput struct {
	f   *os.File // the pipe's writing end (non-blocking, in Go's poller)
	rc  syscall.RawConn
	max int

	mu       sync.Mutex
	queue    []byte // bytes written by callers and not yet to the pipe
	spare    []byte // the other buffer, reused
	draining bool   // a goroutine is writing the queue
	err      error  // the error that ended the stream

	closeOnce sync.Once
	closeErr  error
}

// errNotReading is the refusal of a message the queue has no room for.
var errNotReading = errors.New("upstream is not reading its input")

func newChildInput(f *os.File, max int) (*childInput, error) {
	rc, err := f.SyscallConn()
	if err != nil {
		return nil, fmt.Errorf("stdin pipe: %w", err)
	}
	return &childInput{f: f, rc: rc, max: max}, nil
}

// Write queues or writes b whole and returns without waiting for the
// child; it fails only when the stream has ended (the child exited, the
// pipe was closed) or the queue has no room for b.
func (w *childInput) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return 0, w.err
	}
	if w.draining {
		if len(w.queue)+len(b) > w.max {
			return 0, fmt.Errorf("%w: %d bytes wait for it already", errNotReading, len(w.queue))
		}
		w.queue = append(w.queue, b...)
		return len(b), nil
	}
	n, err := w.writeNow(b)
	if err != nil {
		w.err = err
		return n, err
	}
	if n < len(b) {
		w.queue = append(w.queue[:0], b[n:]...)
		w.draining = true
		go w.drain()
	}
	return len(b), nil
}

// writeNow writes as much of b as the pipe takes without waiting.
func (w *childInput) writeNow(b []byte) (int, error) {
	var done int
	var werr error
	err := w.rc.Write(func(fd uintptr) bool {
		for done < len(b) {
			n, e := writeFD(fd, b[done:])
			if n > 0 {
				done += n
			}
			switch {
			case e == syscall.EINTR:
				continue
			case e == syscall.EAGAIN, e == nil && n <= 0:
				return true // full: the rest waits in the queue
			case e != nil:
				werr = e
				return true
			}
		}
		return true
	})
	if err == nil && werr != nil {
		err = &os.PathError{Op: "write", Path: w.f.Name(), Err: werr}
	}
	return done, err
}

// drain writes the queue until it is empty, waiting for the child to
// read; it ends with the stream when a write fails (Close included).
func (w *childInput) drain() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for len(w.queue) > 0 && w.err == nil {
		batch := w.queue
		w.queue = w.spare[:0]
		w.mu.Unlock()
		_, err := w.f.Write(batch) // waits in the poller, not on a thread
		w.mu.Lock()
		w.spare = batch[:0]
		if err != nil {
			w.err = err
		}
	}
	w.queue = w.queue[:0]
	w.draining = false
}

// Close closes the pipe; a message still queued is dropped, and the
// goroutine writing the queue, if any, ends.
// Closing it again does nothing (the child's shutdown closes it before
// the transport does).
func (w *childInput) Close() error {
	w.closeOnce.Do(func() { w.closeErr = w.f.Close() })
	return w.closeErr
}
