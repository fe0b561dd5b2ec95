package upstream

import (
	"bytes"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"
)

// A stdio server's stdout carries only JSON-RPC messages; a server that
// prints a banner, its usage or its logs there breaks that. mcp-go drops
// such a line without a word, so a server that only ever printed its
// usage failed as "startup timed out", and a banner's text was lost.
// toolgate sees every line first ([lineLimiter]): a line that cannot be
// a JSON-RPC message (see isStray) is logged, as the server's stderr
// lines are, and not passed on; and
// while the server has sent no message at all, a failure to connect
// names what it printed instead.

// strayKeep bounds the text of a stray line kept for an error or a log
// line (the bound of a relayed stderr line).
const strayKeep = 8 << 10

// stdoutWatch counts the lines of a child's stdout for [lineLimiter].
type stdoutWatch struct {
	onStray  func(text string, first bool) // each stray line, on the reading goroutine
	messages atomic.Bool                   // a line that may be a message was seen

	mu    sync.Mutex
	stray int
	first string

	endOnce sync.Once
	ended   chan struct{} // closed once stdout ended (or failed)
}

func newStdoutWatch(onStray func(text string, first bool)) *stdoutWatch {
	return &stdoutWatch{onStray: onStray, ended: make(chan struct{})}
}

// end records the end of stdout.
func (w *stdoutWatch) end() {
	if w != nil {
		w.endOnce.Do(func() { close(w.ended) })
	}
}

// isStray reports whether line cannot be a JSON-RPC message: it does not
// begin with '{' or '[' (a banner, a usage text), or it has no "jsonrpc"
// member, which every message has (JSON logs, such as pino's, written
// to stdout; the SDKs of other clients refuse such a line too). A blank
// line is not stray: it is passed on, and ignored, as before.
func isStray(line []byte) bool {
	for _, c := range line {
		switch c {
		case ' ', '\t', '\r', '\n':
			continue
		case '{', '[':
			return !bytes.Contains(line, jsonrpcMember)
		}
		return true
	}
	return false
}

var jsonrpcMember = []byte(`"jsonrpc"`)

// keep is called for each whole line the child writes; false drops it.
// A line that may be a message costs the search for its "jsonrpc" (near
// its start in what the SDKs write) and, once, the flag's store.
func (w *stdoutWatch) keep(line []byte) bool {
	if !isStray(line) {
		if !w.messages.Load() {
			w.messages.Store(true)
		}
		return true
	}
	text := strayText(line)
	w.mu.Lock()
	w.stray++
	first := w.stray == 1
	if first {
		w.first = text
	}
	w.mu.Unlock()
	if w.onStray != nil {
		w.onStray(text, first)
	}
	return false
}

// strayText is a stray line as text for a log or an error: without its
// line ending, at most strayKeep bytes, valid UTF-8.
func strayText(line []byte) string {
	line = bytes.TrimRight(line, "\r\n")
	if len(line) > strayKeep {
		line = line[:strayKeep]
	}
	return strings.ToValidUTF8(string(line), string(utf8.RuneError))
}

// explain adds to err, a failure to connect, what the child printed on
// its stdout, when it printed stray lines and no message: the likely
// reason it did not answer. Otherwise err is returned as it is. A child
// that exited may have lines in the pipe not yet read: they are waited
// for, up to 200 ms, so that what it printed before it exited is named.
func (w *stdoutWatch) explain(err error, exited <-chan struct{}) error {
	if w == nil {
		return err
	}
	select {
	case <-exited:
		awaitPipeEnd(w.ended)
	default:
	}
	if w.messages.Load() {
		return err
	}
	w.mu.Lock()
	n, first := w.stray, w.first
	w.mu.Unlock()
	if n == 0 {
		return err
	}
	const quoted = 200 // of the first line, in the error
	if len(first) > quoted {
		first = strings.ToValidUTF8(first[:quoted], "") + "…"
	}
	what := "a line to stdout that is not JSON-RPC:"
	if n > 1 {
		what = fmt.Sprintf("%d lines to stdout that are not JSON-RPC, the first", n)
	}
	return fmt.Errorf("%w; it wrote %s %q (a stdio server's stdout carries only protocol messages; its logs belong on stderr)",
		err, what, first)
}

// logStray logs the stray lines of a child's stdout: the first with
// what it means, the others as its stderr lines are (rate-limited).
func (p *process) logStray(text string, first bool) {
	if first {
		p.log.Warn("upstream wrote a line to stdout that is not JSON-RPC; it is logged here and not passed on (a stdio server's stdout carries only protocol messages: its logs belong on stderr)",
			"line", text)
		return
	}
	p.relayed.Log(slog.LevelInfo, text, "stream", "stdout")
}
