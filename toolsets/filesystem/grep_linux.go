package filesystem

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"
	"syscall"
)

// haveOpenAt: files are opened relative to their directory's descriptor.
const haveOpenAt = true

// scanAt opens file (a path in j.fsys) by its base name, a single path
// component from a listing of dir, with openat relative to dir's
// descriptor and searches it. hidden (nil if nothing is) tells which of
// dir's entries are toolgate's own state (see stateHider). O_NOFOLLOW refuses a
// symlink swapped in since the walk, O_NONBLOCK keeps a FIFO swapped in from
// blocking the open; anything but a regular file is skipped. dir itself was
// opened through the sandbox, so the file is inside the root, as with
// os.Root (which works the same way, a component at a time).
func (sc *scanner) scanAt(ctx context.Context, j *grepJob, dir *os.File, hidden func(string) bool, file string) fileResult {
	name := path.Base(file)
	if name == "" || name == "." || name == ".." || strings.ContainsRune(name, '/') {
		return fileResult{status: fileUnreadable, err: errors.New("invalid file name")}
	}
	if hidden != nil && hidden(name) {
		return fileResult{status: fileUnreadable, err: errProtected} // moved in since the walk
	}
	rc, err := dir.SyscallConn()
	if err != nil {
		return fileResult{status: fileUnreadable, err: err}
	}
	fd := -1
	var openErr error
	if err := rc.Control(func(dfd uintptr) {
		for {
			fd, openErr = syscall.Openat(int(dfd), name, syscall.O_RDONLY|syscall.O_CLOEXEC|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
			if openErr != syscall.EINTR {
				return
			}
		}
	}); err != nil {
		return fileResult{status: fileUnreadable, err: err}
	}
	if openErr != nil {
		return fileResult{status: fileUnreadable, err: openErr}
	}
	defer syscall.Close(fd)
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		return fileResult{status: fileUnreadable, err: err}
	}
	if st.Mode&syscall.S_IFMT != syscall.S_IFREG {
		return fileResult{status: fileUnreadable, err: errNotRegular}
	}
	return sc.search(ctx, j, st.Size, func(b []byte) (int, error) {
		for {
			n, err := syscall.Read(fd, b)
			if err != syscall.EINTR {
				return n, err
			}
		}
	})
}

// walkDirs is fs.WalkDir for grep_files: the same calls to fn, in the same
// order, but directories below name are opened with openat relative to
// their parent's descriptor (O_NOFOLLOW, a single component from a listing)
// instead of through os.Root by path. Besides saving a walk from the root
// for every directory, this spares the lstat os.Root does for every entry
// of a directory it opened: entry types come from the directory listing.
// name itself is opened through fsys, so everything below it is inside the
// sandbox root; where fsys hides toolgate's own state (a stateHider), each
// listing leaves it out, as fsys's ReadDir would.
func walkDirs(fsys fs.FS, name string, fn fs.WalkDirFunc) error {
	info, err := fs.Stat(fsys, name)
	if err != nil {
		return ignoreSkip(fn(name, nil, err))
	}
	d := fs.FileInfoToDirEntry(info)
	if err := fn(name, d, nil); err != nil || !d.IsDir() {
		if err == fs.SkipDir && d.IsDir() {
			err = nil
		}
		return ignoreSkip(err)
	}
	f, err := fsys.Open(name)
	if err != nil {
		return ignoreSkip(fn(name, d, err))
	}
	top, err := reopenDir(f)
	f.Close()
	if err != nil {
		return ignoreSkip(fn(name, d, err))
	}
	defer top.Close()
	h, _ := fsys.(stateHider)
	return ignoreSkip(walkChildren(top, name, d, h, fn))
}

func ignoreSkip(err error) error {
	if err == fs.SkipAll || err == fs.SkipDir {
		return nil
	}
	return err
}

// reopenDir returns a plain *os.File on the directory f (which may have been
// opened through an os.Root), by opening "." relative to it.
func reopenDir(f fs.File) (*os.File, error) {
	of, ok := f.(*os.File)
	if !ok {
		return nil, errors.New("not an os.File")
	}
	return openDirAt(of, ".", of.Name())
}

// openDirAt opens the directory name (one component) relative to dir.
func openDirAt(dir *os.File, name, shown string) (*os.File, error) {
	rc, err := dir.SyscallConn()
	if err != nil {
		return nil, err
	}
	fd := -1
	var openErr error
	if err := rc.Control(func(dfd uintptr) {
		for {
			fd, openErr = syscall.Openat(int(dfd), name, syscall.O_RDONLY|syscall.O_CLOEXEC|syscall.O_NOFOLLOW|syscall.O_DIRECTORY, 0)
			if openErr != syscall.EINTR {
				return
			}
		}
	}); err != nil {
		return nil, err
	}
	if openErr != nil {
		return nil, &fs.PathError{Op: "open", Path: shown, Err: openErr}
	}
	return os.NewFile(uintptr(fd), shown), nil
}

// walkChildren walks the entries of the open directory dir (at p), as
// fs.WalkDir's walkDir does after calling fn on the directory itself.
func walkChildren(dir *os.File, p string, d fs.DirEntry, h stateHider, fn fs.WalkDirFunc) error {
	ents, err := dir.ReadDir(-1)
	slices.SortFunc(ents, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	if h != nil {
		if hidden := h.HiddenIn(dir, p); hidden != nil {
			ents = slices.DeleteFunc(ents, func(e fs.DirEntry) bool { return hidden(e.Name()) })
		}
	}
	if err != nil {
		if err := fn(p, d, err); err != nil {
			if err == fs.SkipDir {
				return nil
			}
			return err
		}
	}
	for _, e := range ents {
		name := e.Name()
		if name == "" || name == "." || name == ".." || strings.ContainsRune(name, '/') {
			continue
		}
		child := path.Join(p, name)
		if err := fn(child, e, nil); err != nil {
			if err == fs.SkipDir {
				if e.IsDir() {
					continue
				}
				return nil // skip the rest of this directory
			}
			return err
		}
		if !e.IsDir() {
			continue
		}
		sub, err := openDirAt(dir, name, child)
		if err != nil {
			if err := fn(child, e, err); err != nil && err != fs.SkipDir {
				return err
			}
			continue
		}
		err = walkChildren(sub, child, e, h, fn)
		sub.Close()
		if err != nil {
			return err
		}
	}
	return nil
}
