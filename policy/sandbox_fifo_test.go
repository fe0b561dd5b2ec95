//go:build unix

package policy

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestOpenRefusesFIFO(t *testing.T) {
	dir := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(dir, "pipe"), 0o644); err != nil {
		t.Skip(err)
	}
	sb, err := NewSandbox([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close()
	done := make(chan error, 1)
	go func() {
		f, err := sb.Open("pipe")
		if f != nil {
			f.Close()
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Fatalf("err %v", err)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("Open of a named pipe hung")
	}
}

// TestFSOpenDoesNotBlockOnFIFO: the sandbox's fs.FS opens without
// blocking, so a file or directory swapped for a named pipe between a
// walk's listing and its open (grep_files, list_files) cannot hang the
// call, and the goroutine and thread behind it, until a writer comes.
func TestFSOpenDoesNotBlockOnFIFO(t *testing.T) {
	dir := t.TempDir()
	pipe := filepath.Join(dir, "sub", "pipe")
	if err := os.Mkdir(filepath.Dir(pipe), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(pipe, 0o644); err != nil {
		t.Skip(err)
	}
	// Unblock whatever did block, so that a failing test ends.
	t.Cleanup(func() {
		if w, err := os.OpenFile(pipe, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			w.Close()
		}
	})
	for _, protected := range []bool{false, true} {
		opts := &SandboxOptions{}
		if protected {
			opts.Protected = []string{filepath.Join(dir, "state")}
		}
		sb, err := NewSandboxWith([]string{dir}, opts)
		if err != nil {
			t.Fatal(err)
		}
		defer sb.Close()
		fsys, _, err := sb.FS(".")
		if err != nil {
			t.Fatal(err)
		}
		ops := []struct {
			name    string
			op      func() error
			wantErr bool
		}{
			{"Open", func() error {
				f, err := fsys.Open("sub/pipe")
				if f != nil {
					f.Close()
				}
				return err
			}, false},
			{"ReadFile", func() error { _, err := fs.ReadFile(fsys, "sub/pipe"); return err }, true},
		}
		for _, o := range ops {
			t.Run(fmt.Sprintf("protected=%v/%s", protected, o.name), func(t *testing.T) {
				done := make(chan error, 1)
				go func() { done <- o.op() }()
				select {
				case err := <-done:
					if (err != nil) != o.wantErr {
						t.Fatalf("err = %v, want error %v", err, o.wantErr)
					}
				case <-time.After(2 * time.Second):
					t.Fatalf("%s of a named pipe hung", o.name)
				}
			})
		}
	}
}
