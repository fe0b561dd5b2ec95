package runs

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"
)

// A record file replaced under a running gateway (renamed over, deleted,
// rewritten by another program) would swallow every later record: the
// gateway would keep writing to the old, unlinked file. The run checks its
// files every few seconds (Options.CheckEvery) and recovers: whatever now
// sits at the path is kept aside as <name>.replaced-<time>, a new file is
// created at the path holding everything the gateway wrote (copied from
// the old file, which it still holds open), and writing goes on there.
// Nothing recorded is lost; the replacement is an event
// (archive.file_replaced), a WARN line, and a count in /healthz
// ([Run.ReplacedFiles]).

const defaultCheckEvery = 2 * time.Second

// recoverReplaced checks that the file at l.path is still the one being
// written and recovers if not. It reports whether it recovered and where
// a foreign file was kept.
func (l *lineFile) recoverReplaced() (recovered bool, aside string, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for l.writing {
		l.cond.Wait()
	}
	if l.closed {
		return false, "", nil
	}
	mine, err := l.f.Stat()
	if err != nil {
		return false, "", err
	}
	onDisk, err := os.Lstat(l.path)
	if err == nil && os.SameFile(mine, onDisk) {
		return false, "", nil
	}
	if err == nil { // a foreign file: keep it for whoever investigates
		aside = fmt.Sprintf("%s.replaced-%s", l.path, time.Now().UTC().Format("20060102T150405.000000000Z"))
		if err := os.Rename(l.path, aside); err != nil {
			return false, "", fmt.Errorf("moving the replaced %s aside: %w", l.path, err)
		}
	}
	if err := os.MkdirAll(filepath.Dir(l.path), 0o755); err != nil {
		return false, aside, err
	}
	nf, err := os.OpenFile(l.path, os.O_RDWR|os.O_CREATE|os.O_EXCL|os.O_APPEND, 0o644)
	if err != nil {
		return false, aside, fmt.Errorf("recreating %s: %w", l.path, err)
	}
	if _, err := io.Copy(nf, io.NewSectionReader(l.f, 0, mine.Size())); err != nil {
		nf.Close()
		return false, aside, fmt.Errorf("restoring %s: %w", l.path, err)
	}
	_ = nf.Sync()
	_ = l.f.Close()
	l.f = nf
	return true, aside, nil
}

// guard checks the run's record files until stop is closed.
func (r *Run) guard(every time.Duration, stop <-chan struct{}) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		r.checkFiles()
	}
}

// checkFiles recovers every replaced record file and records that it did.
func (r *Run) checkFiles() {
	type replaced struct{ file, aside string }
	var found []replaced
	for _, f := range []*lineFile{r.events, r.tools, r.errs} {
		ok, aside, err := f.recoverReplaced()
		if err != nil {
			r.writeErrors.Add(1)
			r.log.Error("run archive: a record file was replaced and could not be restored", "file", f.path, "err", err)
			continue
		}
		if ok {
			rel, _ := filepath.Rel(r.dir, f.path)
			found = append(found, replaced{rel, aside})
		}
	}
	for _, f := range found { // after every file is whole again
		r.replaced.Add(1)
		r.log.Warn("run archive: a record file was replaced under the running gateway; restored, the foreign file kept aside",
			"file", f.file, "kept_aside", f.aside)
		fields := map[string]any{"file": f.file}
		if f.aside != "" {
			fields["kept_aside"] = filepath.Base(f.aside)
		}
		r.Event("archive.file_replaced", fields)
	}
}

// ReplacedFiles is how many times a record file was found replaced (and
// restored) while the run was open.
func (r *Run) ReplacedFiles() int64 { return r.replaced.Load() }
