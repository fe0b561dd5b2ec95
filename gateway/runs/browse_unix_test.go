//go:build unix

package runs

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// Retention runs at every start of serve and call, over up to runs.keep
// runs, and Resolve at every `runs show` and `runs tail`: neither reads a
// run's records, which would make starting take as long as reading the
// whole archive. A run whose records files are FIFOs that nobody writes
// blocks any reader of them.
func TestPruneAndResolveReadNoRecords(t *testing.T) {
	dir := t.TempDir()
	var ids []string
	for range 2 {
		r := closedRun(t, dir, 0, nil)
		ids = append(ids, r.ID())
		for _, name := range []string{"tools.jsonl", "errors.jsonl"} {
			path := filepath.Join(dir, r.ID(), "logs", name)
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
			if err := syscall.Mkfifo(path, 0o600); err != nil {
				t.Skipf("no FIFO here: %v", err)
			}
			t.Cleanup(func() { // let a reader stuck on it go
				if f, err := os.OpenFile(path, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
					f.Close()
				}
			})
		}
	}
	type result struct {
		gone   []Summary
		latest string
		err    error
	}
	done := make(chan result, 1)
	go func() {
		var res result
		if res.gone, res.err = Prunable(dir, 1, 0, time.Now()); res.err == nil {
			res.latest, res.err = Resolve(dir, "latest")
		}
		done <- res
	}()
	select {
	case res := <-done:
		if res.err != nil {
			t.Fatal(res.err)
		}
		if len(res.gone) != 1 || res.gone[0].ID != ids[0] {
			t.Errorf("keep 1 prunes %+v, want the older run %s", res.gone, ids[0])
		}
		if filepath.Base(res.latest) != ids[1] {
			t.Errorf("latest is %s, want %s", res.latest, ids[1])
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Prunable or Resolve is reading a run's records")
	}
}
