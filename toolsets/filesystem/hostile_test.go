package filesystem

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/gateway"
	"github.com/toolgate/toolgate/policy"
)

// TestHostilePaths sends each tool paths that leave the sandbox: they all
// come back as tool errors that name the path, and nothing outside is read
// or written.
func TestHostilePaths(t *testing.T) {
	e := newEnv(t, nil, map[string]string{"a.txt": "inside\n", "sub/b.txt": "b\n"})
	outside := filepath.Join(e.base, "outside")
	secret := filepath.Join(outside, "secret.txt")
	mustMkdir(t, e.root+"-evil")
	mustWrite(t, filepath.Join(e.root+"-evil", "f.txt"), "SECRET\n")
	e.symlink("../outside/secret.txt", "out_file")
	e.symlink("../outside", "out_dir")
	e.symlink(secret, "abs_out")
	e.symlink(outside, "sub/abs_out_dir")

	type hostile struct {
		path   string
		reason string // part of the sandbox's reason
	}
	common := []hostile{
		{"../x", "outside the sandbox"},
		{"sub/../../outside/secret.txt", "outside the sandbox"},
		{secret, "outside the sandbox"},
		{"/etc/passwd", "outside the sandbox"},
		{e.root + "-evil/f.txt", "outside the sandbox"},
		{"a\x00b", "NUL"},
	}
	readLike := append(common,
		hostile{"out_file", "leaves the sandbox"},
		hostile{"out_dir/secret.txt", "leaves the sandbox"},
		hostile{"abs_out", "leaves the sandbox"},
		hostile{"sub/abs_out_dir", "leaves the sandbox"},
	)
	dirLike := append(common,
		hostile{"out_dir", "leaves the sandbox"},
		hostile{"sub/abs_out_dir", "leaves the sandbox"},
	)
	writeLike := append(common,
		hostile{"out_file", "symlink"},
		hostile{"abs_out", "symlink"},
		hostile{"out_dir/new.txt", "leaves the sandbox"},
		hostile{"sub/abs_out_dir/new.txt", "leaves the sandbox"},
	)
	cases := []struct {
		tool  string
		paths []hostile
		args  func(p string) map[string]any
	}{
		{"read_file", readLike, func(p string) map[string]any { return map[string]any{"path": p} }},
		{"write_file", writeLike, func(p string) map[string]any { return map[string]any{"path": p, "content": "PWNED\n"} }},
		{"list_files", dirLike, func(p string) map[string]any { return map[string]any{"path": p, "recursive": true} }},
		{"grep_files", dirLike, func(p string) map[string]any { return map[string]any{"path": p, "pattern": "SECRET"} }},
	}
	for _, c := range cases {
		for _, h := range c.paths {
			t.Run(fmt.Sprintf("%s/%q", c.tool, h.path), func(t *testing.T) {
				res := e.call(context.Background(), c.tool, c.args(h.path))
				wantError(t, res, gateway.KindToolError, fmt.Sprintf("path %q", h.path), h.reason)
				if strings.Contains(res.OutputText(), "SECRET") || strings.Contains(res.Message, "SECRET") {
					t.Errorf("secret leaked: %q %q", res.Message, res.OutputText())
				}
			})
		}
	}
	if b, _ := os.ReadFile(secret); string(b) != "SECRET\n" {
		t.Errorf("outside file changed: %q", b)
	}
	if _, err := os.Stat(filepath.Join(outside, "new.txt")); err == nil {
		t.Error("a file was created outside the sandbox")
	}

	// Walking the whole root never follows the links out.
	res := e.call(context.Background(), "grep_files", map[string]any{"pattern": "SECRET"})
	wantOK(t, res)
	if res.OutputText() != "" {
		t.Errorf("grep followed a link out: %q", res.OutputText())
	}
	res = e.call(context.Background(), "list_files", map[string]any{"recursive": true})
	wantOK(t, res)
	if strings.Contains(res.OutputText(), "file out_dir/") || strings.Contains(res.OutputText(), "abs_out_dir/secret") {
		t.Errorf("list followed a link out:\n%s", res.OutputText())
	}
}

// TestMultipleRoots: paths under the first root are shown relative, under
// the others absolute.
func TestMultipleRoots(t *testing.T) {
	e := newEnv(t, nil, map[string]string{"a.txt": "needle one\n"})
	second := filepath.Join(e.base, "second")
	mustMkdir(t, filepath.Join(second, "d"))
	mustWrite(t, filepath.Join(second, "d", "b.txt"), "needle two\n")
	sb, err := policy.NewSandbox([]string{e.root, second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sb.Close() })
	e.sb = sb
	e.serve(nil)
	ctx := context.Background()

	res := e.call(ctx, "grep_files", map[string]any{"pattern": "needle", "path": second})
	wantOK(t, res)
	if want := second + "/d/b.txt:1:needle two"; res.OutputText() != want {
		t.Errorf("grep in the second root: %q, want %q", res.OutputText(), want)
	}
	res = e.call(ctx, "list_files", map[string]any{"path": second, "recursive": true})
	wantOK(t, res)
	if want := "dir  " + second + "/d/\nfile " + second + "/d/b.txt  (11 B)"; res.OutputText() != want {
		t.Errorf("list in the second root:\n%s\nwant\n%s", res.OutputText(), want)
	}
	res = e.call(ctx, "read_file", map[string]any{"path": filepath.Join(second, "d", "b.txt")})
	wantOK(t, res)
	if want := "Read 1 line of " + second + "/d/b.txt"; res.Brief() != want {
		t.Errorf("brief = %q, want %q", res.Brief(), want)
	}
	res = e.call(ctx, "write_file", map[string]any{"path": filepath.Join(second, "c.txt"), "content": "x\n"})
	wantOK(t, res)
	if d := diffOf(t, res); d.Path != second+"/c.txt" {
		t.Errorf("diff path = %q", d.Path)
	}
	res = e.call(ctx, "grep_files", map[string]any{"pattern": "needle"})
	wantOK(t, res)
	if res.OutputText() != "a.txt:1:needle one" {
		t.Errorf("grep in the first root: %q", res.OutputText())
	}
}

// TestAbsoluteLinkInsideRoot: a directory symlink whose absolute target is
// inside its own root does not leave the sandbox, so every tool works
// through it, as read_file does, and none says it leaves the sandbox. A
// link to the same place that does leave (through "..") is still refused.
func TestAbsoluteLinkInsideRoot(t *testing.T) {
	e := newEnv(t, nil, map[string]string{"dir/b.txt": "bbb\n"})
	e.symlink(filepath.Join(e.root, "dir"), "absdir")
	e.symlink(filepath.Join(e.root, "absdir"), "abschain")
	ctx := context.Background()
	cases := []struct {
		tool string
		args map[string]any
		out  string // part of the output, if any
	}{
		{"read_file", map[string]any{"path": "absdir/b.txt"}, "bbb"},
		{"write_file", map[string]any{"path": "absdir/new.txt", "content": "new\n"}, ""},
		{"write_file", map[string]any{"path": "abschain/deep/new.txt", "content": "deep\n"}, ""},
		{"write_file", map[string]any{"path": "absdir/b.txt", "content": "bbb2\n"}, ""},
		{"list_files", map[string]any{"path": "absdir"}, "b.txt"},
		{"list_files", map[string]any{"path": "absdir/b.txt"}, "b.txt"},
		{"grep_files", map[string]any{"path": "absdir", "pattern": "bbb"}, "b.txt:1:bbb2"},
		{"grep_files", map[string]any{"path": "abschain/b.txt", "pattern": "bbb"}, "b.txt:1:bbb2"},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%s/%v", c.tool, c.args["path"]), func(t *testing.T) {
			res := e.call(ctx, c.tool, c.args)
			wantOK(t, res)
			if !strings.Contains(res.OutputText(), c.out) {
				t.Errorf("output %q does not contain %q", res.OutputText(), c.out)
			}
		})
	}
	if got := e.read("dir/new.txt"); got != "new\n" {
		t.Errorf("dir/new.txt = %q", got)
	}
	if got := e.read("dir/deep/new.txt"); got != "deep\n" {
		t.Errorf("dir/deep/new.txt = %q", got)
	}
	if fi, err := os.Lstat(filepath.Join(e.root, "absdir")); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("absdir is no longer a symlink: %v %v", fi, err)
	}
	// The final component is still never written through.
	e.symlink(filepath.Join(e.root, "dir", "b.txt"), "absfile")
	wantError(t, e.call(ctx, "write_file", map[string]any{"path": "absfile", "content": "x"}),
		gateway.KindToolError, `path "absfile"`, "symlink")
	wantError(t, e.call(ctx, "write_file", map[string]any{"path": "absdir/../absfile", "content": "x"}),
		gateway.KindToolError, "symlink")
}
