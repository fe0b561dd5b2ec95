package policy

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
)

// Protected paths: toolgate's own state (the run archive, the memory
// database, the log file) may lie under a sandbox root, as the default
// runs directory under ~/.local/state does with `sandbox.roots: ["~"]`. No
// tool may read or write it there: a client that rewrote tools.jsonl or
// planted an artifact would falsify the records.
//
// The check has two parts. Locate refuses a path that names protected
// state lexically. Every operation then checks where it really landed:
// the file or directory it opened (its path read back from
// /proc/self/fd, which follows whatever symlinks led there) or, for a
// write, the directory the new file is created in (pinned by descriptor,
// so a component swapped for a symlink after the check gains nothing).
// Listings leave protected entries out. Where /proc is not mounted the
// lexical check remains; hard links into protected state cannot be told
// apart (as for os.Root), and no filesystem tool can make one.

// SandboxOptions configure [NewSandboxWith].
type SandboxOptions struct {
	// Protected are files and directories no operation may read, write or
	// list, wherever the roots are. A protected path that holds a root
	// (the run's own workspace inside the runs directory) does not
	// protect that root from itself.
	Protected []string
}

// protectedReason is the reason given for protected state.
const protectedReason = "is toolgate's own state (the run archive, the memory database or the log), which no tool may read or write"

// resolveProtected makes p absolute with symlinks resolved in the part of
// it that exists (the rest, not created yet, is joined as written).
func resolveProtected(p string) string {
	abs, err := filepath.Abs(p)
	if err != nil {
		return filepath.Clean(p)
	}
	rest := ""
	for cur := abs; ; {
		if r, err := filepath.EvalSymlinks(cur); err == nil {
			return filepath.Join(r, rest)
		}
		parent := filepath.Dir(cur)
		if parent == cur {
			return abs
		}
		rest = filepath.Join(filepath.Base(cur), rest)
		cur = parent
	}
}

// protectFor returns the protected paths that apply to a root: those
// inside it, unless the root is inside them.
func protectFor(root string, protected []string) []string {
	var out []string
	for _, p := range protected {
		if sbWithin(p, root) {
			continue // the root is the protected state's own (the workspace)
		}
		if sbWithin(root, p) && !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}

// isProtected reports whether abs (absolute, resolved) is protected state
// of this root or inside it.
func (r *sandboxRoot) isProtected(abs string) bool {
	for _, p := range r.protected {
		if sbWithin(p, abs) {
			return true
		}
	}
	return false
}

func protectedErr(p string) error {
	return &PathError{Path: p, Reason: protectedReason, Err: ErrOutsideSandbox}
}

// fdPath is the path of an open file as the kernel knows it ("" if it
// cannot tell).
func fdPath(f *os.File) string {
	target, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(int(f.Fd())))
	if err != nil || !filepath.IsAbs(target) || strings.HasSuffix(target, " (deleted)") {
		return ""
	}
	return target
}

// landedProtected reports whether an open file is protected state.
func (r *sandboxRoot) landedProtected(f *os.File) bool {
	if len(r.protected) == 0 {
		return false
	}
	real := fdPath(f)
	return real != "" && r.isProtected(real)
}

// checkPath opens rel (following symlinks inside the root; non-blocking,
// so a FIFO cannot hang it) to see where it lands. A path that
// does not open is left to the operation to report.
func (r *sandboxRoot) checkPath(p, rel string, follow bool) error {
	if len(r.protected) == 0 {
		return nil
	}
	flags := os.O_RDONLY | syscall.O_NONBLOCK
	if !follow {
		flags |= oNoFollow
	}
	f, err := r.root.OpenFile(rel, flags, 0)
	if sbIsEscape(err) {
		if inside, ok := r.unabs(rel); ok {
			f, err = r.root.OpenFile(inside, flags, 0)
		}
	}
	if err != nil {
		return nil
	}
	defer f.Close()
	if r.landedProtected(f) {
		return protectedErr(p)
	}
	return nil
}

// checkNew refuses a path to be created (a file and the directories
// before it) that would land in protected state: its deepest existing
// ancestor is opened to see where it really is, before anything is made.
func (r *sandboxRoot) checkNew(p, rel string) error {
	if len(r.protected) == 0 {
		return nil
	}
	rest := ""
	for cur := rel; ; {
		f, err := r.root.OpenFile(cur, os.O_RDONLY|syscall.O_NONBLOCK, 0)
		if err == nil {
			real := fdPath(f)
			f.Close()
			if real != "" && r.isProtected(filepath.Join(real, rest)) {
				return protectedErr(p)
			}
			return nil
		}
		if cur == "." || cur == "" {
			return nil
		}
		rest = filepath.Join(filepath.Base(cur), rest)
		cur = filepath.Dir(cur)
	}
}

// protectedFS is the fs.FS over a root that hides protected state:
// opening it fails, listings leave it out.
type protectedFS struct {
	sbRootFS
	r *sandboxRoot
}

func (p protectedFS) check(name string, f fs.File) error {
	if of, ok := f.(*os.File); ok && p.r.landedProtected(of) {
		return &fs.PathError{Op: "open", Path: name, Err: protectedErr(name)}
	}
	return nil
}

func (p protectedFS) Open(name string) (fs.File, error) {
	f, err := p.sbRootFS.Open(name)
	if err != nil {
		return nil, err
	}
	if err := p.check(name, f); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

func (p protectedFS) Stat(name string) (fs.FileInfo, error) {
	f, err := p.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.Stat()
}

func (p protectedFS) ReadFile(name string) ([]byte, error) {
	f, err := p.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return sbReadRegular(name, f)
}

func (p protectedFS) Lstat(name string) (fs.FileInfo, error) {
	if p.r.isProtected(filepath.Join(p.r.resolved, filepath.FromSlash(name))) {
		return nil, &fs.PathError{Op: "lstat", Path: name, Err: protectedErr(name)}
	}
	return p.sbRootFS.Lstat(name)
}

func (p protectedFS) ReadDir(name string) ([]fs.DirEntry, error) {
	f, err := p.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	of, ok := f.(*os.File)
	if !ok {
		return fs.ReadDir(p.sbRootFS, name)
	}
	ents, err := of.ReadDir(-1)
	if err != nil {
		return nil, err
	}
	slices.SortFunc(ents, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	if hidden := p.HiddenIn(of, name); hidden != nil {
		ents = slices.DeleteFunc(ents, func(e fs.DirEntry) bool { return hidden(e.Name()) })
	}
	return ents, nil
}

// HiddenIn tells which entries of the directory dir are protected state:
// it returns a predicate over their names, or nil if nothing in dir is
// protected. dir is a directory of this file system, opened through it or
// by descriptor below one that was (as grep_files' walk does, one
// component at a time); name is its path in the file system, used where
// /proc cannot tell where dir really is. A walk that lists directories
// itself instead of through ReadDir must leave out what this hides.
func (p protectedFS) HiddenIn(dir *os.File, name string) func(entry string) bool {
	real := fdPath(dir)
	if real == "" {
		real = filepath.Join(p.r.resolved, filepath.FromSlash(name))
	}
	var inside []string
	for _, pr := range p.r.protected {
		if sbWithin(pr, real) {
			return func(string) bool { return true } // dir is protected itself
		}
		if sbWithin(real, pr) {
			inside = append(inside, pr)
		}
	}
	if len(inside) == 0 {
		return nil
	}
	return func(entry string) bool {
		abs := filepath.Join(real, entry)
		for _, pr := range inside {
			if sbWithin(pr, abs) {
				return true
			}
		}
		return false
	}
}
