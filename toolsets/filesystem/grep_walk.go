package filesystem

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
)

// grepJob is the state of one grep_files call shared by its workers.
type grepJob struct {
	fsys    fs.FS
	files   []string
	m       *matcher
	maxSize int64
	limit   int // matches kept per file: enough to fill the output and see one more
	show    func(rel string) string
	// fileDirs[i] is the index in dirs of the directory of files[i], or -1.
	fileDirs []int
	dirs     *dirCache
}

// File outcomes.
const (
	fileScanned = iota
	fileBinary
	fileTooLarge
	fileUnreadable
	fileStopped // the call ended while the file was searched
)

type fileResult struct {
	status  int
	matches []lineMatch
	err     error // for fileUnreadable
}

// grepStats is what a grep found.
type grepStats struct {
	matches                      int
	processed, scanned           int
	binary, tooLarge, unreadable int
	truncated                    bool
	firstUnreadable              string
	matchFiles                   []string      // files with matches, in order
	matchLines                   [][]lineMatch // their matches
}

// run searches the job's files with runtime.GOMAXPROCS workers and gathers
// their results in file order, stopping once more than maxMatches matches
// are found. Workers run at most a window of files ahead of the gatherer, so
// memory stays bounded whatever the tree.
func (j *grepJob) run(ctx context.Context, maxMatches int, progress func(done int)) (*grepStats, error) {
	s := &grepStats{}
	n := len(j.files)
	if n == 0 {
		progress(0)
		return s, nil
	}
	workers := min(runtime.GOMAXPROCS(0), n)
	window := 8 * workers
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() {
		cancel()
		wg.Wait() // no worker outlives the call
		j.dirs.closeAll()
	}()

	// slots[i%window] carries file i's result; tokens bound the files taken
	// and not yet gathered to window, so no two of them share a slot.
	slots := make([]chan fileResult, window)
	for i := range slots {
		slots[i] = make(chan fileResult, 1)
	}
	tokens := make(chan struct{}, window)
	var next atomic.Int64
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var sc scanner
			for {
				select {
				case tokens <- struct{}{}:
				case <-ctx.Done():
					return
				}
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				if ctx.Err() != nil {
					return
				}
				slots[i%window] <- sc.scan(ctx, j, i)
			}
		}()
	}

	for i := range n {
		var r fileResult
		select {
		case r = <-slots[i%window]:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		<-tokens
		if r.status == fileStopped {
			return nil, r.err
		}
		s.processed++
		switch r.status {
		case fileScanned:
			s.scanned++
		case fileBinary:
			s.binary++
		case fileTooLarge:
			s.tooLarge++
		case fileUnreadable:
			s.unreadable++
			if s.firstUnreadable == "" {
				s.firstUnreadable = fmt.Sprintf("%s: %v", j.show(j.files[i]), unwrapPathErr(r.err))
			}
		}
		if len(r.matches) > 0 {
			room := maxMatches - s.matches
			if len(r.matches) > room {
				r.matches = r.matches[:room]
				s.truncated = true
			}
			if len(r.matches) > 0 {
				s.matches += len(r.matches)
				s.matchFiles = append(s.matchFiles, j.files[i])
				s.matchLines = append(s.matchLines, r.matches)
			}
		}
		if s.truncated {
			break
		}
		if s.processed%progressEvery == 0 {
			progress(s.processed)
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err // the call ended: what was found may be partial
	}
	progress(s.processed)
	return s, nil
}

// scanner is one worker's reusable state.
type scanner struct {
	buf []byte // file contents
}

// scan searches file i of the job.
func (sc *scanner) scan(ctx context.Context, j *grepJob, i int) fileResult {
	if d := j.fileDirs[i]; d >= 0 && haveOpenAt {
		dir, hidden, err := j.dirs.acquire(d)
		defer j.dirs.release(d)
		if err != nil {
			return fileResult{status: fileUnreadable, err: err}
		}
		return sc.scanAt(ctx, j, dir, hidden, j.files[i])
	}
	return sc.scanFS(ctx, j, j.files[i])
}

// scanFS searches a file opened through the sandbox's file system.
func (sc *scanner) scanFS(ctx context.Context, j *grepJob, name string) fileResult {
	f, err := j.fsys.Open(name)
	if err != nil {
		return fileResult{status: fileUnreadable, err: err}
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return fileResult{status: fileUnreadable, err: err}
	}
	if !fi.Mode().IsRegular() {
		return fileResult{status: fileUnreadable, err: errNotRegular}
	}
	return sc.search(ctx, j, fi.Size(), f.Read)
}

var (
	errNotRegular = errors.New("not a regular file")
	errProtected  = errors.New("is toolgate's own state, which no tool may read")
)

// stateHider is a sandbox file system that hides toolgate's own state
// (policy's protectedFS, where the run archive, the memory database or the
// log lies under a root). Its Open and ReadDir refuse and leave out that
// state; grep_files' walk and scan, which list directories and open files
// by descriptor below them instead, ask it what each directory holds of it.
type stateHider interface {
	HiddenIn(dir *os.File, name string) func(entry string) bool
}

// search reads an open file of the given size with read and searches it.
func (sc *scanner) search(ctx context.Context, j *grepJob, size int64, read func([]byte) (int, error)) fileResult {
	if size > j.maxSize {
		return fileResult{status: fileTooLarge}
	}
	if size == 0 {
		return fileResult{status: fileScanned}
	}
	if int64(cap(sc.buf)) < size {
		sc.buf = make([]byte, max(size, 64<<10))
	}
	// Read what Stat said is there; a file that grows meanwhile is
	// searched as it was.
	buf := sc.buf[:size]
	n := 0
	for n < len(buf) {
		k, err := read(buf[n:])
		n += max(k, 0)
		if errors.Is(err, io.EOF) || (k == 0 && err == nil) {
			break
		}
		if err != nil {
			return fileResult{status: fileUnreadable, err: err}
		}
	}
	buf = buf[:n]
	if bytes.IndexByte(buf[:min(len(buf), sniffLen)], 0) >= 0 {
		return fileResult{status: fileBinary}
	}
	matches, err := j.m.find(ctx, buf, j.limit)
	if err != nil {
		return fileResult{status: fileStopped, err: err}
	}
	return fileResult{status: fileScanned, matches: matches}
}

// dirCache holds the directories of a grep open while their files are
// searched, so that each file is opened with one openat relative to its
// directory instead of a walk from the root through every component. Each
// directory is opened once, through the sandbox's file system (so it is
// inside the root), and closed as soon as its last file is searched; since
// workers stay within a window of files, few are open at a time.
type dirCache struct {
	fsys  fs.FS
	names []string
	mu    sync.Mutex
	left  []int // files not yet searched, per directory
	open  map[int]*cachedDir
}

type cachedDir struct {
	once   sync.Once
	f      *os.File
	hidden func(entry string) bool // its entries that are toolgate's own state, if any
	err    error
}

func newDirCache(fsys fs.FS, dirs []string, fileDirs []int) *dirCache {
	c := &dirCache{fsys: fsys, names: dirs, left: make([]int, len(dirs)), open: map[int]*cachedDir{}}
	for _, d := range fileDirs {
		if d >= 0 {
			c.left[d]++
		}
	}
	return c
}

// acquire returns directory d, opening it if needed, and which of its
// entries are hidden (nil if none). Every acquire must be followed by a
// release, after the directory is no longer used.
func (c *dirCache) acquire(d int) (*os.File, func(string) bool, error) {
	c.mu.Lock()
	cd := c.open[d]
	if cd == nil {
		cd = &cachedDir{}
		c.open[d] = cd
	}
	c.mu.Unlock()
	cd.once.Do(func() {
		f, err := c.fsys.Open(c.names[d])
		if err != nil {
			cd.err = err
			return
		}
		if of, ok := f.(*os.File); ok {
			cd.f = of
			if h, ok := c.fsys.(stateHider); ok {
				cd.hidden = h.HiddenIn(of, c.names[d])
			}
			return
		}
		f.Close()
		cd.err = fmt.Errorf("open %s: not an os.File", c.names[d])
	})
	return cd.f, cd.hidden, cd.err
}

// release records that one file of directory d is done, and closes d after
// its last file.
func (c *dirCache) release(d int) {
	c.mu.Lock()
	c.left[d]--
	var cd *cachedDir
	if c.left[d] == 0 {
		cd = c.open[d]
		delete(c.open, d)
	}
	c.mu.Unlock()
	if cd != nil && cd.f != nil {
		cd.f.Close()
	}
}

// closeAll closes the directories still open (after a grep stopped early).
// No worker may be running.
func (c *dirCache) closeAll() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for d, cd := range c.open {
		if cd.f != nil {
			cd.f.Close()
		}
		delete(c.open, d)
	}
}
