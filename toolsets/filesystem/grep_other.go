//go:build !linux

package filesystem

import (
	"context"
	"io/fs"
	"os"
)

// haveOpenAt: without openat in the syscall package, files are opened
// through the sandbox's file system.
const haveOpenAt = false

func (sc *scanner) scanAt(ctx context.Context, j *grepJob, _ *os.File, _ func(string) bool, file string) fileResult {
	return sc.scanFS(ctx, j, file)
}

// walkDirs is fs.WalkDir.
func walkDirs(fsys fs.FS, name string, fn fs.WalkDirFunc) error {
	return fs.WalkDir(fsys, name, fn)
}
