//go:build unix

package skills

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A SKILL.md that is not a regular file is a problem, found without
// opening it: a named pipe (or a link to one) blocked the scan for good,
// and with it New and every later rescan.
func TestSkillFileNotRegular(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string
		fifo  string // path of the named pipe, relative to the skills dir
	}{
		{"named pipe", nil, "bad/SKILL.md"},
		{"link to a named pipe", map[string]string{"bad/SKILL.md": "symlink:pipe"}, "bad/pipe"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			base := tempBase(t)
			dir := filepath.Join(base, "skills")
			writeTree(t, dir, merge(good, tc.files))
			fifo := filepath.Join(dir, filepath.FromSlash(tc.fifo))
			if err := os.MkdirAll(filepath.Dir(fifo), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := syscall.Mkfifo(fifo, 0o644); err != nil {
				t.Skipf("mkfifo: %v", err)
			}
			t.Cleanup(func() {
				// Release a reader blocked on the pipe, if any.
				if f, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
					f.Close()
				}
			})
			done := make(chan *Toolset, 1)
			go func() {
				ts, err := New(&Options{Dirs: []string{dir}})
				if err != nil {
					t.Error(err)
				}
				done <- ts
			}()
			var ts *Toolset
			select {
			case ts = <-done:
			case <-time.After(5 * time.Second):
				t.Fatal("New blocked on a SKILL.md that is a named pipe")
			}
			if ts == nil {
				return
			}
			found := false
			for _, p := range ts.Problems() {
				if p.Path == filepath.Join(dir, "bad", skillFile) && strings.Contains(p.Message, "not a regular file") {
					found = true
				}
			}
			if !found {
				t.Errorf("no problem saying SKILL.md is not a regular file in %+v", ts.Problems())
			}
		})
	}
}
