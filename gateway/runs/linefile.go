package runs

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync"
)

// lineFile is a JSON Lines file written one whole line per write(2). The
// file is opened with O_APPEND, and writes are serialized by a mutex, so a
// line is never torn or interleaved with another, whatever the concurrency;
// there is no user-space buffer to lose in a crash.
type lineFile struct {
	path string
	mu   sync.Mutex
	f    *os.File
}

func openLineFile(path string) (*lineFile, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("opening %s: %w", path, err)
	}
	return &lineFile{path: path, f: f}, nil
}

var errClosed = errors.New("record file is closed")

func (l *lineFile) writeLine(v any) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil { // Encode ends the line with '\n'
		return fmt.Errorf("encoding record: %w", err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return errClosed
	}
	_, err := l.f.Write(buf.Bytes())
	return err
}

func (l *lineFile) close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return nil
	}
	err := l.f.Sync()
	if cerr := l.f.Close(); err == nil {
		err = cerr
	}
	l.f = nil
	return err
}
