package policy

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// ErrOutsideSandbox is wrapped by every error for a path that leaves the
// sandbox roots, whether lexically (".." or an absolute path elsewhere) or
// through a symbolic link whose target is outside its root.
var ErrOutsideSandbox = errors.New("path is outside the sandbox")

// ErrInvalidPath is wrapped by errors for paths that cannot be used at all:
// the empty path, a path containing a NUL byte, or a path naming something
// the requested operation refuses to act on (a symlink or a directory as a
// write target, the root directory itself).
var ErrInvalidPath = errors.New("invalid path")

// PathError says which path was refused and why. It unwraps to
// ErrOutsideSandbox, ErrInvalidPath or the underlying os error (so
// errors.Is(err, fs.ErrNotExist) works as usual).
type PathError struct {
	// Path is the path as the caller gave it.
	Path string
	// Reason is a short human- and model-readable explanation.
	Reason string
	// Err is the sentinel or os error behind Reason.
	Err error
}

// Error returns `path "<Path>": <Reason>`.
func (e *PathError) Error() string {
	return fmt.Sprintf("path %q: %s", e.Path, e.Reason)
}

// Unwrap returns e.Err.
func (e *PathError) Unwrap() error { return e.Err }

// Sandbox confines filesystem access to a fixed set of root directories.
// It is the guard behind the filesystem toolset (read_file, write_file,
// list_files, grep_files), whose paths come from an untrusted model.
//
// Every access goes through an [os.Root] opened on each root. os.Root
// resolves paths component by component with openat and O_NOFOLLOW from a
// directory descriptor held open for the Sandbox's lifetime, following a
// symbolic link only if its target stays inside the same root (absolute link
// targets are never followed). The containment check is therefore the open
// itself, performed by the kernel on the object actually opened, instead of a
// string check on a path that may be swapped for a symlink between the check
// and the use (check-then-use races). We build on it rather than on
// filepath.EvalSymlinks plus a prefix check, which is inherently racy, or on
// openat2(RESOLVE_BENEATH), which is Linux-only and not in the standard
// library.
//
// On top of os.Root, Sandbox adds: a lexical pre-check (Locate) that refuses
// empty paths, NUL bytes and paths outside every root by whole path
// components, with clear errors; selection among several roots by absolute
// path; errors mapped to [ErrOutsideSandbox] and [ErrInvalidPath] inside a
// [PathError]; and atomic writes (temp file, fsync, rename) that never write
// through a symlink.
//
// Known limits (shared with os.Root): hard links and bind mounts inside a
// root that point elsewhere cannot be detected.
//
// A Sandbox is safe for concurrent use by multiple goroutines.
type Sandbox struct {
	roots []sandboxRoot
	// display is the resolved roots formatted for error messages.
	display string
}

type sandboxRoot struct {
	given    string // absolute, cleaned spelling as configured
	resolved string // given with symlinks resolved
	root     *os.Root
	// protected is the state under this root no operation may touch
	// (protect.go).
	protected []string
}

// NewSandbox opens a sandbox over roots, which must be existing directories.
// Each root is made absolute and symlinks in the root path itself are
// resolved; user paths may use either spelling. At least one root is
// required; duplicate roots (also when they are the same directory through a
// symlink) and nested roots (one inside another) are refused.
func NewSandbox(roots []string) (*Sandbox, error) {
	return NewSandboxWith(roots, nil)
}

// NewSandboxWith is [NewSandbox] with options: paths under the roots that
// no operation may touch (toolgate's own state, see protect.go).
func NewSandboxWith(roots []string, opts *SandboxOptions) (*Sandbox, error) {
	if opts == nil {
		opts = &SandboxOptions{}
	}
	var protected []string
	for _, p := range opts.Protected {
		if p != "" {
			protected = append(protected, resolveProtected(p))
		}
	}
	if len(roots) == 0 {
		return nil, errors.New("sandbox: at least one root directory is required")
	}
	s := &Sandbox{}
	fail := func(err error) (*Sandbox, error) {
		s.Close()
		return nil, err
	}
	for _, r := range roots {
		if r == "" || strings.IndexByte(r, 0) >= 0 {
			return fail(fmt.Errorf("sandbox root %q: %w", r, ErrInvalidPath))
		}
		given, err := filepath.Abs(r)
		if err != nil {
			return fail(fmt.Errorf("sandbox root %q: %w", r, err))
		}
		resolved, err := filepath.EvalSymlinks(given)
		if err != nil {
			return fail(fmt.Errorf("sandbox root %q: %w", r, err))
		}
		fi, err := os.Stat(resolved)
		if err != nil {
			return fail(fmt.Errorf("sandbox root %q: %w", r, err))
		}
		if !fi.IsDir() {
			return fail(fmt.Errorf("sandbox root %q: is not a directory", r))
		}
		for _, o := range s.roots {
			if o.resolved == resolved {
				return fail(fmt.Errorf("sandbox root %q: duplicate of root %q", r, o.given))
			}
			if sbWithin(o.resolved, resolved) || sbWithin(resolved, o.resolved) {
				return fail(fmt.Errorf("sandbox root %q: overlaps root %q (roots must not be nested)", r, o.given))
			}
		}
		root, err := os.OpenRoot(resolved)
		if err != nil {
			return fail(fmt.Errorf("sandbox root %q: %w", r, err))
		}
		s.roots = append(s.roots, sandboxRoot{given: given, resolved: resolved, root: root, protected: protectFor(resolved, protected)})
	}
	s.display = fmt.Sprint(s.Roots())
	return s, nil
}

// Roots returns the resolved absolute root directories, in the given order.
func (s *Sandbox) Roots() []string {
	out := make([]string, len(s.roots))
	for i, r := range s.roots {
		out[i] = r.resolved
	}
	return out
}

// Protected returns the protected paths that lie under the roots (the
// only ones that matter), resolved.
func (s *Sandbox) Protected() []string {
	var out []string
	for _, r := range s.roots {
		out = append(out, r.protected...)
	}
	return out
}

// Close releases the root directory handles. Operations after Close fail.
func (s *Sandbox) Close() error {
	var errs []error
	for _, r := range s.roots {
		if r.root != nil {
			errs = append(errs, r.root.Close())
		}
	}
	return errors.Join(errs...)
}

// sbWithin reports whether the clean absolute path p is root or lies below it,
// by whole path components.
func sbWithin(root, p string) bool {
	if p == root {
		return true
	}
	if root == string(filepath.Separator) {
		return strings.HasPrefix(p, root)
	}
	return strings.HasPrefix(p, root) && p[len(root)] == filepath.Separator
}

// sbRelTo returns the clean path p relative to root; p must lie within root.
func sbRelTo(root, p string) string {
	if p == root {
		return "."
	}
	if root == string(filepath.Separator) {
		return p[1:]
	}
	return p[len(root)+1:]
}

// Locate maps a user path to the index of the root that contains it and the
// cleaned root-relative path (never absolute, never containing ".."; "." for
// the root itself). Relative paths are relative to the first root. Absolute
// paths must be inside one of the roots by whole path components ("/ws-evil"
// is not inside "/ws"); the resolved and the configured spelling of a root
// are both accepted. "~" is not expanded. Locate is lexical only and does not
// touch the filesystem; symlinks are checked by the operations themselves.
func (s *Sandbox) Locate(p string) (root int, rel string, err error) {
	if p == "" {
		return -1, "", &PathError{Path: p, Reason: "empty path", Err: ErrInvalidPath}
	}
	if strings.IndexByte(p, 0) >= 0 {
		return -1, "", &PathError{Path: p, Reason: "contains a NUL byte", Err: ErrInvalidPath}
	}
	abs := p
	if !filepath.IsAbs(p) {
		abs = filepath.Join(s.roots[0].resolved, p)
	}
	abs = filepath.Clean(abs)
	best, bestLen := -1, -1
	for i, r := range s.roots {
		for _, prefix := range [2]string{r.resolved, r.given} {
			if len(prefix) > bestLen && sbWithin(prefix, abs) {
				best, bestLen, rel = i, len(prefix), sbRelTo(prefix, abs)
			}
		}
	}
	if best < 0 {
		return -1, "", &PathError{
			Path:   p,
			Reason: "resolves outside the sandbox roots " + s.display,
			Err:    ErrOutsideSandbox,
		}
	}
	if r := &s.roots[best]; len(r.protected) > 0 && r.isProtected(filepath.Join(r.resolved, rel)) {
		return -1, "", protectedErr(p)
	}
	return best, filepath.ToSlash(rel), nil
}

// Abs returns the absolute path of p for display: the resolved root joined
// with the root-relative path. It is lexical, like Locate.
func (s *Sandbox) Abs(p string) (string, error) {
	i, rel, err := s.Locate(p)
	if err != nil {
		return "", err
	}
	return filepath.Join(s.roots[i].resolved, filepath.FromSlash(rel)), nil
}

// Open opens the file or directory p for reading. Symlinks are followed only
// while they stay inside the same root: relative ones by os.Root, absolute
// ones whose target is inside the root by rewriting them ([sandboxRoot.unabs]);
// otherwise the error wraps ErrOutsideSandbox. The containment check is the
// open itself, so there is no window between check and use.
func (s *Sandbox) Open(p string) (*os.File, error) {
	r, rel, err := s.locate(p)
	if err != nil {
		return nil, err
	}
	// O_NONBLOCK so that opening a named pipe cannot hang the call; the
	// check below then refuses anything but files and directories (pipes,
	// devices, sockets), whose reads could block or never end.
	f, err := r.root.OpenFile(rel, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if sbIsEscape(err) {
		if inside, ok := r.unabs(rel); ok {
			f, err = r.root.OpenFile(inside, os.O_RDONLY|syscall.O_NONBLOCK, 0)
		}
	}
	if err != nil {
		return nil, sbMapErr(p, err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, sbMapErr(p, err)
	}
	if !fi.Mode().IsRegular() && !fi.IsDir() {
		f.Close()
		return nil, &PathError{Path: p, Reason: fmt.Sprintf("is not a regular file or directory (%s)", fi.Mode().Type()), Err: ErrInvalidPath}
	}
	if r.landedProtected(f) {
		f.Close()
		return nil, protectedErr(p)
	}
	return f, nil
}

// Stat returns the FileInfo of p, following symlinks inside its root.
func (s *Sandbox) Stat(p string) (fs.FileInfo, error) {
	r, rel, err := s.locate(p)
	if err != nil {
		return nil, err
	}
	if err := r.checkPath(p, rel, true); err != nil {
		return nil, err
	}
	fi, err := r.root.Stat(rel)
	if sbIsEscape(err) {
		if inside, ok := r.unabs(rel); ok {
			fi, err = r.root.Stat(inside)
		}
	}
	if err != nil {
		return nil, sbMapErr(p, err)
	}
	return fi, nil
}

// Lstat returns the FileInfo of p without following a symlink in the final
// component. Symlinks in parent directories are followed inside the root.
func (s *Sandbox) Lstat(p string) (fs.FileInfo, error) {
	r, rel, err := s.locate(p)
	if err != nil {
		return nil, err
	}
	if err := r.checkPath(p, rel, false); err != nil {
		return nil, err
	}
	fi, err := r.root.Lstat(rel)
	if sbIsEscape(err) {
		// An absolute symlink inside the root among the parents: follow
		// it as Stat does, but never the final component.
		if dir, base := filepath.Split(rel); dir != "" {
			if inside, ok := r.unabs(dir); ok {
				fi, err = r.root.Lstat(filepath.Join(inside, base))
			}
		}
	}
	if err != nil {
		return nil, sbMapErr(p, err)
	}
	return fi, nil
}

// WriteFile writes data to p atomically: a temp file is created next to the
// target (in the same directory, opened through the root), written, fsynced,
// and renamed over the target, so a crash leaves either the old or the new
// content, never a partial file. The temp file is removed on any failure.
//
// WriteFile never writes through a symlink: if p itself is a symlink (even
// one pointing inside the sandbox) it is refused; symlinked parent
// directories are followed only inside the root. Directories and other
// non-regular files are refused, and so are files without the owner's
// write permission ([ReadOnlyErr]). Missing parent directories are created
// (mode 0o755, through the root) only when mkdirs is true. An existing
// target keeps its permission bits; a new file gets 0o644. created reports
// whether p did not exist before.
func (s *Sandbox) WriteFile(p string, data []byte, mkdirs bool) (created bool, err error) {
	r, rel, err := s.locate(p)
	if err != nil {
		return false, err
	}
	if rel == "." {
		return false, &PathError{Path: p, Reason: "is the sandbox root directory, not a file", Err: ErrInvalidPath}
	}
	if strings.HasSuffix(p, "/") || strings.HasSuffix(p, "/.") {
		return false, &PathError{Path: p, Reason: "names a directory (trailing slash); a file name is required", Err: ErrInvalidPath}
	}
	dir, base := filepath.Split(filepath.FromSlash(rel))
	dir = filepath.Clean(dir) // "" becomes "."
	if dir != "." {
		// A parent reached through a symlink with an absolute target
		// inside the root is followed like a relative one (os.Root refuses
		// all absolute targets, as an escape); one that leaves stays
		// refused. Looked for only when os.Root refuses the parent.
		if _, err := r.root.Stat(dir); sbIsEscape(err) {
			if inside, ok := r.unabs(dir); ok {
				dir = inside
			}
		}
	}
	if err := r.checkNew(p, filepath.Join(dir, base)); err != nil {
		return false, err
	}
	if mkdirs && dir != "." {
		if err := r.root.MkdirAll(dir, 0o755); err != nil {
			return false, sbMapParentErr(p, dir, err, mkdirs)
		}
	}
	// Check the parent first: OpenRoot on a FIFO would block.
	if fi, err := r.root.Stat(dir); err != nil {
		return false, sbMapParentErr(p, dir, err, mkdirs)
	} else if !fi.IsDir() {
		return false, sbMapParentErr(p, dir, syscall.ENOTDIR, mkdirs)
	}
	// Pin the parent directory: every later step is a single-component
	// operation relative to this descriptor, so swapping a path component
	// for a symlink mid-way cannot redirect the write.
	d, err := r.root.OpenRoot(dir)
	if err != nil {
		return false, sbMapParentErr(p, dir, err, mkdirs)
	}
	defer d.Close()
	if len(r.protected) > 0 {
		if df, err := d.Open("."); err == nil {
			dir := fdPath(df)
			df.Close()
			if dir != "" && r.isProtected(filepath.Join(dir, base)) {
				return false, protectedErr(p)
			}
		}
	}

	mode := fs.FileMode(0o644)
	fi, err := d.Lstat(base)
	switch {
	case err == nil:
		switch t := fi.Mode().Type(); {
		case t == fs.ModeSymlink:
			return false, &PathError{Path: p, Reason: s.symlinkReason(r, d, base), Err: ErrInvalidPath}
		case t == fs.ModeDir:
			return false, &PathError{Path: p, Reason: "is a directory; refusing to overwrite it", Err: ErrInvalidPath}
		case !fi.Mode().IsRegular():
			return false, &PathError{Path: p, Reason: "is not a regular file (" + fi.Mode().Type().String() + "); refusing to overwrite it", Err: ErrInvalidPath}
		}
		if err := ReadOnlyErr(p, fi); err != nil {
			return false, err
		}
		mode = fi.Mode().Perm()
	case errors.Is(err, fs.ErrNotExist):
		created = true
	default:
		return false, sbMapErr(p, err)
	}

	tmp, f, err := sbCreateTemp(d, base)
	if err != nil {
		return false, sbMapErr(p, err)
	}
	ok := false
	defer func() {
		if !ok {
			f.Close()
			d.Remove(tmp)
		}
	}()
	if _, err := f.Write(data); err != nil {
		return false, sbMapErr(p, err)
	}
	if err := f.Chmod(mode); err != nil {
		return false, sbMapErr(p, err)
	}
	if err := f.Sync(); err != nil {
		return false, sbMapErr(p, err)
	}
	if err := f.Close(); err != nil {
		return false, sbMapErr(p, err)
	}
	if sbTestHookBeforeRename != nil {
		if err := sbTestHookBeforeRename(tmp); err != nil {
			return false, sbMapErr(p, err)
		}
	}
	if err := d.Rename(tmp, base); err != nil {
		if errors.Is(err, syscall.EEXIST) || errors.Is(err, syscall.EISDIR) {
			return false, &PathError{Path: p, Reason: "is a directory; refusing to overwrite it", Err: ErrInvalidPath}
		}
		return false, sbMapErr(p, err)
	}
	ok = true
	// Persist the rename itself; best effort, the new content is already in place.
	if df, err := d.Open("."); err == nil {
		df.Sync()
		df.Close()
	}
	return created, nil
}

// symlinkReason says why WriteFile refuses the symlink base in the
// directory d (of root r): it names the link's target, as a path the
// caller can write to, when that lies in the same root. The target is
// taken against the directory's real path (/proc/self/fd), since a
// relative target is the kernel's to resolve from there; without it (not
// Linux) the target is not named.
func (s *Sandbox) symlinkReason(r *sandboxRoot, d *os.Root, base string) string {
	const refused = "is a symlink; refusing to write through it"
	generic := refused + " (write to the target's own path instead)"
	target, err := d.Readlink(base)
	if err != nil {
		return generic
	}
	if !filepath.IsAbs(target) {
		df, err := d.Open(".")
		if err != nil {
			return generic
		}
		dir := fdPath(df)
		df.Close()
		if dir == "" {
			return generic
		}
		target = filepath.Join(dir, target)
	}
	target = filepath.Clean(target)
	for _, root := range [2]string{r.resolved, r.given} {
		if sbWithin(root, target) && target != root {
			name := filepath.ToSlash(sbRelTo(root, target))
			if r != &s.roots[0] { // relative paths are the first root's
				name = target
			}
			return fmt.Sprintf("is a symlink to %s; refusing to write through it (write to %s instead)", name, name)
		}
	}
	return "is a symlink to a target outside the sandbox root; refusing to write through it"
}

// ReadOnlyErr returns the error for replacing the existing file p, whose
// FileInfo is fi, if its owner may not write it (no 0o200 bit), or nil.
// The rename of an atomic write needs only the directory to be writable,
// so it would replace a file its owner made read-only on purpose (and
// root could do so whatever the bits): WriteFile refuses it instead.
func ReadOnlyErr(p string, fi fs.FileInfo) error {
	if fi.Mode().IsRegular() && fi.Mode().Perm()&0o200 == 0 {
		return &PathError{Path: p, Reason: fmt.Sprintf("is read-only (mode %s); refusing to replace it (make it writable first if it should change)", fi.Mode().Perm()), Err: fs.ErrPermission}
	}
	return nil
}

// sbTestHookBeforeRename, set only by tests, runs after the temp file is
// complete and before it is renamed over the target; an error aborts the
// write (exercising the cleanup path).
var sbTestHookBeforeRename func(tmp string) error

// sbCreateTemp creates a new, empty, exclusively created temp file next to base
// in d. O_EXCL never follows a symlink.
func sbCreateTemp(d *os.Root, base string) (string, *os.File, error) {
	const maxBase = 200 // keep the temp name under NAME_MAX (255)
	prefix := base
	if len(prefix) > maxBase {
		prefix = prefix[:maxBase]
	}
	prefix = "." + prefix + ".tmp-"
	var err error
	for range 10 {
		name := prefix + strconv.FormatUint(rand.Uint64(), 36)
		var f *os.File
		f, err = d.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err == nil {
			return name, f, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			break
		}
	}
	return "", nil, err
}

// FS returns an fs.FS over the root that contains p, and p's path within it,
// for walking with fs.WalkDir (list_files, grep_files). The file system is
// confined like Open: symlinks resolve only inside that root, and escape
// errors wrap ErrOutsideSandbox. fs.WalkDir does not descend into symlinked
// directories. If p leads through a symlink with an absolute target inside
// the root, name is the path rewritten to that target (see unabs).
func (s *Sandbox) FS(p string) (fsys fs.FS, name string, err error) {
	r, rel, err := s.locate(p)
	if err != nil {
		return nil, "", err
	}
	// A path through a symlink with an absolute target inside the root
	// is walked at its target, as Open and Stat follow it.
	if _, err := r.root.Stat(rel); sbIsEscape(err) {
		if inside, ok := r.unabs(rel); ok {
			rel = inside
		}
	}
	if len(r.protected) > 0 {
		return protectedFS{sbRootFS{r.root.FS(), r.root}, r}, rel, nil
	}
	return sbRootFS{r.root.FS(), r.root}, rel, nil
}

func (s *Sandbox) locate(p string) (*sandboxRoot, string, error) {
	i, rel, err := s.Locate(p)
	if err != nil {
		return nil, "", err
	}
	return &s.roots[i], filepath.FromSlash(rel), nil
}

// unabs rewrites rel so that every symlink on it whose target is an
// absolute path inside this same root (as resolved or as given) is
// replaced by that target relative to the root: os.Root refuses absolute
// targets outright, although such a link (made by a tool that writes
// absolute links) does not leave the sandbox. It reports false when
// nothing was rewritten, or a link's absolute target is outside the root
// (a real escape, refused as before). The rewritten path is then opened
// through the root again, which still refuses anything that leaves it, so
// a link swapped in the meantime gains nothing.
func (r *sandboxRoot) unabs(rel string) (string, bool) {
	parts := strings.Split(filepath.ToSlash(filepath.Clean(rel)), "/")
	changed := false
	for hops := 0; hops < 40; hops++ { // like the kernel's symlink limit
		rewrote := false
		for i := range parts {
			cur := filepath.FromSlash(strings.Join(parts[:i+1], "/"))
			fi, err := r.root.Lstat(cur)
			if err != nil {
				break
			}
			if fi.Mode()&fs.ModeSymlink == 0 {
				continue
			}
			target, err := r.root.Readlink(cur)
			if err != nil || !filepath.IsAbs(target) {
				continue // relative links are os.Root's to follow
			}
			target = filepath.Clean(target)
			inside, ok := "", false
			for _, base := range []string{r.resolved, r.given} {
				if target == base || strings.HasPrefix(target, base+string(filepath.Separator)) {
					inside, _ = filepath.Rel(base, target)
					ok = true
					break
				}
			}
			if !ok {
				return "", false
			}
			parts = append(strings.Split(filepath.ToSlash(inside), "/"), parts[i+1:]...)
			changed, rewrote = true, true
			break
		}
		if !rewrote {
			break
		}
	}
	return filepath.FromSlash(strings.Join(parts, "/")), changed
}

// errSbSymlinkEscape is what sbRootFS reports for an os.Root escape.
var errSbSymlinkEscape = fmt.Errorf("symlink target leaves the sandbox: %w", ErrOutsideSandbox)

// sbRootFS wraps the fs.FS of an os.Root, translating escape errors so that
// they wrap ErrOutsideSandbox while staying *fs.PathError values as the fs
// package expects. Its Open does not block on a named pipe (O_NONBLOCK, as
// Sandbox.Open): a walk's file or directory swapped for one after it was
// listed would otherwise hang the open, and its goroutine and thread, until
// a writer came. ReadFile refuses anything but a regular file.
type sbRootFS struct {
	fsys fs.FS
	root *os.Root
}

var (
	_ fs.StatFS     = sbRootFS{}
	_ fs.ReadDirFS  = sbRootFS{}
	_ fs.ReadFileFS = sbRootFS{}
	_ fs.ReadLinkFS = sbRootFS{}
)

func sbFSErr(err error) error {
	var pe *fs.PathError
	if sbIsEscape(err) && errors.As(err, &pe) {
		return &fs.PathError{Op: pe.Op, Path: pe.Path, Err: errSbSymlinkEscape}
	}
	return err
}

func (r sbRootFS) Open(name string) (fs.File, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrInvalid}
	}
	f, err := r.root.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, sbFSErr(err) // a nil *os.File must not become a non-nil fs.File
	}
	return f, nil
}

func (r sbRootFS) Stat(name string) (fs.FileInfo, error) {
	fi, err := fs.Stat(r.fsys, name)
	return fi, sbFSErr(err)
}

func (r sbRootFS) Lstat(name string) (fs.FileInfo, error) {
	fi, err := fs.Lstat(r.fsys, name)
	return fi, sbFSErr(err)
}

func (r sbRootFS) ReadDir(name string) ([]fs.DirEntry, error) {
	ents, err := fs.ReadDir(r.fsys, name)
	return ents, sbFSErr(err)
}

func (r sbRootFS) ReadFile(name string) ([]byte, error) {
	f, err := r.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return sbReadRegular(name, f)
}

// sbReadRegular reads all of f, the file name, if it is a regular file.
func sbReadRegular(name string, f fs.File) ([]byte, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() && !fi.IsDir() {
		return nil, &fs.PathError{Op: "read", Path: name, Err: fmt.Errorf("not a regular file (%s): %w", fi.Mode().Type(), ErrInvalidPath)}
	}
	return io.ReadAll(f)
}

func (r sbRootFS) ReadLink(name string) (string, error) {
	t, err := fs.ReadLink(r.fsys, name)
	return t, sbFSErr(err)
}

// sbEscapeMsg is the text of os.Root's unexported errPathEscapes, returned when
// a path (after following symlinks) would leave the root, including for
// absolute symlink targets. A test pins it.
const sbEscapeMsg = "path escapes from parent"

func sbIsEscape(err error) bool {
	for e := err; e != nil; e = errors.Unwrap(e) {
		if e.Error() == sbEscapeMsg {
			return true
		}
	}
	return false
}

// sbInnermost returns the error inside os path, link and syscall error wrappers,
// whose text ("no such file or directory") makes a good reason.
func sbInnermost(err error) error {
	for {
		switch e := err.(type) {
		case *fs.PathError:
			err = e.Err
		case *os.LinkError:
			err = e.Err
		case *os.SyscallError:
			err = e.Err
		default:
			return err
		}
	}
}

// sbMapErr turns an error from an os.Root operation on user path p into a
// PathError.
func sbMapErr(p string, err error) error {
	switch {
	case sbIsEscape(err):
		return &PathError{Path: p, Reason: "symlink target leaves the sandbox root", Err: ErrOutsideSandbox}
	case errors.Is(err, syscall.ELOOP):
		return &PathError{Path: p, Reason: "too many levels of symbolic links", Err: err}
	case errors.Is(err, os.ErrClosed):
		return &PathError{Path: p, Reason: "sandbox is closed", Err: err}
	}
	return &PathError{Path: p, Reason: sbInnermost(err).Error(), Err: err}
}

// sbMapParentErr is sbMapErr for failures to create or open p's parent
// directory dir.
func sbMapParentErr(p, dir string, err error, mkdirs bool) error {
	switch {
	case sbIsEscape(err):
		return &PathError{Path: p, Reason: "a symlink in the parent directory path leads outside the sandbox", Err: ErrOutsideSandbox}
	case errors.Is(err, fs.ErrNotExist) && !mkdirs:
		return &PathError{Path: p, Reason: fmt.Sprintf("parent directory %q does not exist (create it or ask for parent directories to be created)", filepath.ToSlash(dir)), Err: err}
	case errors.Is(err, syscall.ENOTDIR), errors.Is(err, fs.ErrExist), // MkdirAll over a file
		sbInnermost(err).Error() == "not a directory": // OpenRoot on a file
		return &PathError{Path: p, Reason: fmt.Sprintf("parent %q is not a directory", filepath.ToSlash(dir)), Err: syscall.ENOTDIR}
	}
	return sbMapErr(p, err)
}
