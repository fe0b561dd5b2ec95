package policy

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestProtectedState: toolgate's own state under a root (the runs
// directory, the memory database) is out of reach of every operation,
// by its own path and through symlinks; the rest of the root is not.
func TestProtectedState(t *testing.T) {
	root := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	runs := filepath.Join(root, ".local", "state", "toolgate", "runs")
	db := filepath.Join(root, ".local", "state", "toolgate", "memory.db")
	must(os.MkdirAll(filepath.Join(runs, "r1", "logs"), 0o755))
	must(os.WriteFile(filepath.Join(runs, "r1", "logs", "tools.jsonl"), []byte("{}\n"), 0o644))
	must(os.WriteFile(db, []byte("sqlite"), 0o644))
	must(os.WriteFile(db+"-wal", []byte("wal"), 0o644))
	must(os.WriteFile(filepath.Join(root, "notes.txt"), []byte("mine"), 0o644))
	must(os.Symlink(filepath.Join(".local", "state", "toolgate"), filepath.Join(root, "state"))) // relative link to the state
	must(os.Symlink(filepath.Join(runs, "r1", "logs"), filepath.Join(root, "logs")))             // absolute link into the runs
	must(os.Symlink(filepath.Join("state", "memory.db"), filepath.Join(root, "db")))             // link to a link to the database
	sb, err := NewSandboxWith([]string{root}, &SandboxOptions{Protected: []string{runs, db, db + "-wal", db + "-shm"}})
	must(err)
	defer sb.Close()

	protectedPaths := []string{
		".local/state/toolgate/runs", ".local/state/toolgate/runs/r1/logs/tools.jsonl", ".local/state/toolgate/memory.db",
		filepath.Join(runs, "r1", "logs", "tools.jsonl"), "state/runs/r1/logs/tools.jsonl", "logs/tools.jsonl", "logs", "db",
		"state/memory.db-wal",
	}
	isProtected := func(err error) bool {
		var pe *PathError
		return errors.As(err, &pe) && pe.Reason == protectedReason && errors.Is(err, ErrOutsideSandbox)
	}
	// Through a symlink some operations refuse earlier, for the link
	// itself (writes never go through a link; os.Root's FS refuses an
	// absolute target): refused is what matters there.
	refused := func(p string, err error) bool {
		if filepath.IsAbs(p) || p[0] == '.' {
			return isProtected(err)
		}
		return err != nil
	}
	for _, p := range protectedPaths {
		if f, err := sb.Open(p); !isProtected(err) {
			if f != nil {
				f.Close()
			}
			t.Errorf("Open(%s): %v, want protected", p, err)
		}
		if _, err := sb.Stat(p); !isProtected(err) {
			t.Errorf("Stat(%s): %v", p, err)
		}
		if _, err := sb.WriteFile(p, []byte("forged"), false); !refused(p, err) {
			t.Errorf("WriteFile(%s): %v", p, err)
		}
		fsys, name, err := sb.FS(p)
		if err == nil {
			if _, err := fs.ReadFile(fsys, name); !refused(p, err) {
				t.Errorf("FS ReadFile(%s): %v", p, err)
			}
		} else if !isProtected(err) {
			t.Errorf("FS(%s): %v", p, err)
		}
	}
	// New files in a protected directory, through a link too.
	for _, p := range []string{"logs/planted.jsonl", "state/runs/r1/archive/x-artifact.txt", ".local/state/toolgate/runs/new.txt"} {
		if _, err := sb.WriteFile(p, []byte("planted"), true); !refused(p, err) {
			t.Errorf("WriteFile(%s): %v", p, err)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(runs, "r1", "logs", "tools.jsonl")); string(b) != "{}\n" {
		t.Errorf("the record file changed: %q", b)
	}
	for _, planted := range []string{filepath.Join(runs, "r1", "logs", "planted.jsonl"), filepath.Join(runs, "r1", "archive"), filepath.Join(runs, "new.txt")} {
		if _, err := os.Lstat(planted); err == nil {
			t.Errorf("%s was planted in the runs directory", planted)
		}
	}

	// A walk of the root never shows protected state.
	fsys, name, err := sb.FS(".")
	must(err)
	var seen []string
	must(fs.WalkDir(fsys, name, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		seen = append(seen, p)
		return nil
	}))
	for _, p := range seen {
		if p == ".local/state/toolgate/runs" || p == ".local/state/toolgate/memory.db" || filepath.Dir(p) == ".local/state/toolgate/runs" {
			t.Errorf("the walk shows %s", p)
		}
	}
	if !slices.Contains(seen, "notes.txt") || !slices.Contains(seen, ".local/state/toolgate") {
		t.Errorf("the walk lost ordinary entries: %v", seen)
	}

	// The rest of the root works as before.
	if b, err := fs.ReadFile(fsys, "notes.txt"); err != nil || string(b) != "mine" {
		t.Errorf("notes.txt: %q %v", b, err)
	}
	if _, err := sb.WriteFile("state/notes2.txt", []byte("ok"), false); err != nil {
		t.Errorf("writing beside the protected state: %v", err)
	}
	if got := sb.Protected(); len(got) != 4 {
		t.Errorf("Protected() = %v", got)
	}
}

// TestProtectedHoldsTheRoot: a root inside protected state (the run's own
// workspace in the runs directory) is not protected from itself.
func TestProtectedHoldsTheRoot(t *testing.T) {
	runs := t.TempDir()
	ws := filepath.Join(runs, "r1", "workspace")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	sb, err := NewSandboxWith([]string{ws}, &SandboxOptions{Protected: []string{runs}})
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close()
	if _, err := sb.WriteFile("a.txt", []byte("x"), false); err != nil {
		t.Fatalf("writing in the workspace: %v", err)
	}
	if len(sb.Protected()) != 0 {
		t.Errorf("Protected() = %v", sb.Protected())
	}
}
