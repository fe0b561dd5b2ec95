package policy

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// sbTree is a test tree:
//
//	base/
//	  root/                 the sandbox root
//	    a.txt "A", sub/b.txt "B", odd names (content = name)
//	    in_link -> a.txt, in_dirlink -> sub, chain_in1 -> chain_in2 -> a.txt
//	    abs_in_link -> <abs>/root/a.txt
//	    out_file -> ../outside/secret.txt, out_dir -> ../outside
//	    abs_out -> <abs>/outside/secret.txt, abs_out_dir -> <abs>/outside
//	    chain1 -> chain2 -> ../outside/secret.txt
//	    dangling -> missing.txt, dangling_out -> ../outside/nope.txt
//	    loop -> loop
//	  outside/secret.txt "SECRET"
//	  root-evil/ root2/ root_backup/ root'/ `root "`/ `root `/   each with f "SECRET"
type sbTree struct {
	base, root, outside string
	sb                  *Sandbox
}

var sbOddNames = []string{"..test", "te..st", "...", ".hidden", "a..", "with space.txt", `quo"te.txt`, "it's.txt", "~"}

var sbSiblingNames = []string{"root-evil", "root2", "root_backup", "root'", `root "`, "root "}

func newSandboxTree(t testing.TB) *sbTree {
	t.Helper()
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	tr := &sbTree{base: base, root: filepath.Join(base, "root"), outside: filepath.Join(base, "outside")}
	mkdir := func(p string) {
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write := func(p, content string) {
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	link := func(target, name string) {
		if err := os.Symlink(target, filepath.Join(tr.root, name)); err != nil {
			t.Fatal(err)
		}
	}
	mkdir(filepath.Join(tr.root, "sub"))
	mkdir(tr.outside)
	write(filepath.Join(tr.root, "a.txt"), "A")
	write(filepath.Join(tr.root, "sub", "b.txt"), "B")
	for _, n := range sbOddNames {
		write(filepath.Join(tr.root, n), n)
	}
	write(filepath.Join(tr.outside, "secret.txt"), "SECRET")
	for _, n := range sbSiblingNames {
		mkdir(filepath.Join(base, n))
		write(filepath.Join(base, n, "f"), "SECRET")
	}
	link("a.txt", "in_link")
	link("sub", "in_dirlink")
	link("chain_in2", "chain_in1")
	link("a.txt", "chain_in2")
	link(filepath.Join(tr.root, "a.txt"), "abs_in_link")
	link(filepath.Join(tr.root, "sub"), "abs_in_dirlink")
	link(filepath.Join(tr.root, "abs_in_link"), "abs_in_chain")
	link(filepath.Join(tr.root, "in_dirlink", "..", "..", "outside", "secret.txt"), "abs_in_dotdot_out")
	link("../outside/secret.txt", "out_file")
	link("../outside", "out_dir")
	link(filepath.Join(tr.outside, "secret.txt"), "abs_out")
	link(tr.outside, "abs_out_dir")
	link("chain2", "chain1")
	link("../outside/secret.txt", "chain2")
	link("missing.txt", "dangling")
	link("../outside/nope.txt", "dangling_out")
	link("loop", "loop")

	sb, err := NewSandbox([]string{tr.root})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sb.Close() })
	tr.sb = sb
	return tr
}

// sbSnapshot returns every path under dir (symlinks not followed) with its
// content or link target, to prove nothing outside the root changed.
func sbSnapshot(t testing.TB, dir string) map[string]string {
	t.Helper()
	m := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			m[p] = "-> " + target
		case d.Type().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			m[p] = string(b)
		default:
			m[p] = "dir"
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// outsideSnapshot covers everything in base except the root.
func (tr *sbTree) outsideSnapshot(t testing.TB) map[string]string {
	m := sbSnapshot(t, tr.base)
	for k := range m {
		if k == tr.root || strings.HasPrefix(k, tr.root+"/") {
			delete(m, k)
		}
	}
	return m
}

func sbAssertNoTemps(t *testing.T, dir string) {
	t.Helper()
	for p := range sbSnapshot(t, dir) {
		if strings.Contains(filepath.Base(p), ".tmp-") {
			t.Errorf("temp file left behind: %s", p)
		}
	}
}

func TestSandboxLocate(t *testing.T) {
	tr := newSandboxTree(t)
	root := tr.root
	const outside, invalid = "outside", "invalid"
	tests := []struct {
		name, path string
		wantRel    string // when ok
		wantErr    string // "", outside or invalid
	}{
		{"plain", "a.txt", "a.txt", ""},
		{"dot", ".", ".", ""},
		{"dot slash", "./a.txt", "a.txt", ""},
		{"nested", "sub/b.txt", "sub/b.txt", ""},
		{"inner dotdot", "sub/../a.txt", "a.txt", ""},
		{"trailing slash", "sub/", "sub", ""},
		{"double slashes", "sub//b.txt", "sub/b.txt", ""},
		{"absolute inside", root + "/sub/b.txt", "sub/b.txt", ""},
		{"absolute root", root, ".", ""},
		{"absolute root slash", root + "/", ".", ""},
		{"absolute messy", root + "//sub/./../sub///b.txt", "sub/b.txt", ""},
		{"reenter root by name", "../root/a.txt", "a.txt", ""},
		{"dots as names", "....//..//x", "x", ""},
		{"three dots dir", ".../x", ".../x", ""},
		{"tilde not expanded", "~", "~", ""},
		{"tilde slash not expanded", "~/x", "~/x", ""},
		{"dotdot test", "..test", "..test", ""},
		{"te..st", "te..st", "te..st", ""},
		{"three dots", "...", "...", ""},
		{"hidden", ".hidden", ".hidden", ""},
		{"a..", "a..", "a..", ""},
		{"space", "with space.txt", "with space.txt", ""},
		{"double quote", `quo"te.txt`, `quo"te.txt`, ""},
		{"single quote", "it's.txt", "it's.txt", ""},
		{"backslashes are names", `a\..\..\x`, `a\..\..\x`, ""},

		{"parent", "..", "", outside},
		{"parent slash", "../", "", outside},
		{"parent file", "../x", "", outside},
		{"a/../../x", "a/../../x", "", outside},
		{"./../x", "./../x", "", outside},
		{"a/b/../../../x", "a/b/../../../x", "", outside},
		{"deep", "a/b/c/../../../../../../../etc/passwd", "", outside},
		{"dots then dotdot", "....//..//..//x", "", outside},
		{"absolute dotdot", root + "/../etc/passwd", "", outside},
		{"absolute sub dotdot", root + "/sub/../../outside/secret.txt", "", outside},
		{"etc passwd", "/etc/passwd", "", outside},
		{"filesystem root", "/", "", outside},
		{"absolute outside", tr.outside + "/secret.txt", "", outside},
		{"base dir", tr.base, "", outside},

		{"empty", "", "", invalid},
		{"nul middle", "x\x00y", "", invalid},
		{"nul only", "\x00", "", invalid},
		{"nul end", "a.txt\x00", "", invalid},
		{"nul after dotdot", "../\x00", "", invalid},
		{"nul absolute", root + "/a\x00", "", invalid},
	}
	for _, n := range sbSiblingNames {
		tests = append(tests,
			struct{ name, path, wantRel, wantErr string }{"sibling abs " + n, filepath.Join(tr.base, n, "f"), "", outside},
			struct{ name, path, wantRel, wantErr string }{"sibling abs dir " + n, filepath.Join(tr.base, n), "", outside},
			struct{ name, path, wantRel, wantErr string }{"sibling rel " + n, "../" + n + "/f", "", outside},
		)
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			i, rel, err := tr.sb.Locate(tc.path)
			switch tc.wantErr {
			case "":
				if err != nil || i != 0 || rel != tc.wantRel {
					t.Fatalf("Locate(%q) = %d, %q, %v; want 0, %q, nil", tc.path, i, rel, err, tc.wantRel)
				}
				abs, err := tr.sb.Abs(tc.path)
				if want := filepath.Join(root, rel); err != nil || abs != want {
					t.Fatalf("Abs(%q) = %q, %v; want %q", tc.path, abs, err, want)
				}
			case outside, invalid:
				want := ErrOutsideSandbox
				if tc.wantErr == invalid {
					want = ErrInvalidPath
				}
				if !errors.Is(err, want) {
					t.Fatalf("Locate(%q) = %d, %q, %v; want error wrapping %v", tc.path, i, rel, err, want)
				}
				var pe *PathError
				if !errors.As(err, &pe) || pe.Path != tc.path {
					t.Fatalf("Locate(%q) error %v is not a *PathError for the path", tc.path, err)
				}
				if _, err := tr.sb.Abs(tc.path); !errors.Is(err, want) {
					t.Fatalf("Abs(%q) error = %v, want %v", tc.path, err, want)
				}
			}
		})
	}
}

func TestSandboxErrorMessages(t *testing.T) {
	tr := newSandboxTree(t)
	// deep_link/up is sub/deep/up, whose ../b.txt is sub/b.txt (not the
	// b.txt that deep_link/../b.txt would be).
	if err := os.Mkdir(filepath.Join(tr.root, "sub", "deep"), 0o755); err != nil {
		t.Fatal(err)
	}
	for link, target := range map[string]string{"deep_link": "sub/deep", "sub/deep/up": "../b.txt"} {
		if err := os.Symlink(target, filepath.Join(tr.root, link)); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name string
		err  func() error
		want string
	}{
		{"outside", func() error { _, _, err := tr.sb.Locate("../etc/passwd"); return err },
			fmt.Sprintf(`path "../etc/passwd": resolves outside the sandbox roots [%s]`, tr.root)},
		{"nul", func() error { _, _, err := tr.sb.Locate("x\x00y"); return err },
			`path "x\x00y": contains a NUL byte`},
		{"empty", func() error { _, err := tr.sb.Open(""); return err },
			`path "": empty path`},
		{"symlink escape", func() error { _, err := tr.sb.Open("out_file"); return err },
			`path "out_file": symlink target leaves the sandbox root`},
		{"not exist", func() error { _, err := tr.sb.Open("nope"); return err },
			`path "nope": no such file or directory`},
		// A symlink is never written through; its target is named when
		// it can be written instead, as the kernel resolves it.
		{"write symlink", func() error { _, err := tr.sb.WriteFile("in_link", nil, false); return err },
			`path "in_link": is a symlink to a.txt; refusing to write through it (write to a.txt instead)`},
		{"write symlink, absolute target", func() error { _, err := tr.sb.WriteFile("abs_in_link", nil, false); return err },
			`path "abs_in_link": is a symlink to a.txt; refusing to write through it (write to a.txt instead)`},
		{"write symlink in a linked directory", func() error { _, err := tr.sb.WriteFile("deep_link/up", nil, false); return err },
			`path "deep_link/up": is a symlink to sub/b.txt; refusing to write through it (write to sub/b.txt instead)`},
		{"write symlink out", func() error { _, err := tr.sb.WriteFile("out_file", nil, false); return err },
			`path "out_file": is a symlink to a target outside the sandbox root; refusing to write through it`},
		{"write symlink, dotdot out", func() error { _, err := tr.sb.WriteFile("abs_in_dotdot_out", nil, false); return err },
			`path "abs_in_dotdot_out": is a symlink to a target outside the sandbox root; refusing to write through it`},
		{"write dir", func() error { _, err := tr.sb.WriteFile("sub", nil, false); return err },
			`path "sub": is a directory; refusing to overwrite it`},
		{"missing parent", func() error { _, err := tr.sb.WriteFile("x/y/z", nil, false); return err },
			`path "x/y/z": parent directory "x/y" does not exist (create it or ask for parent directories to be created)`},
		{"parent escape", func() error { _, err := tr.sb.WriteFile("out_dir/n", nil, false); return err },
			`path "out_dir/n": a symlink in the parent directory path leads outside the sandbox`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.err()
			if err == nil || err.Error() != tc.want {
				t.Fatalf("error = %v\nwant    %s", err, tc.want)
			}
		})
	}
}

// TestSandboxOSRootEscapeError pins the text of os.Root's unexported escape error,
// which sbMapErr relies on.
func TestSandboxOSRootEscapeError(t *testing.T) {
	dir := t.TempDir()
	if err := os.Symlink("..", filepath.Join(dir, "up")); err != nil {
		t.Fatal(err)
	}
	r, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for _, name := range []string{"../x", "up/x", "/etc/passwd"} {
		_, err := r.Open(name)
		if !sbIsEscape(err) {
			t.Errorf("os.Root.Open(%q) error %v not recognised as escape (%q)", name, err, sbEscapeMsg)
		}
	}
}

func TestSandboxOpen(t *testing.T) {
	tr := newSandboxTree(t)
	tests := []struct {
		name, path string
		want       string // content, or "" with wantErr
		wantErr    any    // nil, error sentinel
	}{
		{"file", "a.txt", "A", nil},
		{"nested", "sub/b.txt", "B", nil},
		{"absolute", tr.root + "/sub/b.txt", "B", nil},
		{"relative symlink inside", "in_link", "A", nil},
		{"symlinked dir inside", "in_dirlink/b.txt", "B", nil},
		{"chain inside", "chain_in1", "A", nil},
		{"lexical dotdot inside", "sub/../a.txt", "A", nil},

		{"file symlink out", "out_file", "", ErrOutsideSandbox},
		{"dir symlink out", "out_dir", "", ErrOutsideSandbox},
		{"through dir symlink out", "out_dir/secret.txt", "", ErrOutsideSandbox},
		{"absolute symlink out", "abs_out", "", ErrOutsideSandbox},
		{"absolute dir symlink out", "abs_out_dir/secret.txt", "", ErrOutsideSandbox},
		{"absolute symlink inside", "abs_in_link", "A", nil},
		{"absolute dir symlink inside", "abs_in_dirlink/b.txt", "B", nil},
		{"absolute chain inside", "abs_in_chain", "A", nil},
		{"absolute symlink out through dotdot", "abs_in_dotdot_out", "", ErrOutsideSandbox},
		{"chain out", "chain1", "", ErrOutsideSandbox},
		{"dangling out", "dangling_out", "", ErrOutsideSandbox},
		{"dangling inside", "dangling", "", fs.ErrNotExist},
		{"missing", "missing.txt", "", fs.ErrNotExist},
		{"loop", "loop", "", syscall.ELOOP},
		{"lexical escape", "sub/../../outside/secret.txt", "", ErrOutsideSandbox},
		{"absolute outside", tr.outside + "/secret.txt", "", ErrOutsideSandbox},
		{"sibling prefix", tr.root + "-evil/f", "", ErrOutsideSandbox},
		{"nul", "a.txt\x00", "", ErrInvalidPath},
		{"empty", "", "", ErrInvalidPath},
	}
	for _, n := range sbOddNames {
		tests = append(tests, struct {
			name, path string
			want       string
			wantErr    any
		}{"odd name " + n, n, n, nil})
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, err := tr.sb.Open(tc.path)
			if tc.wantErr != nil {
				if err == nil {
					f.Close()
					t.Fatalf("Open(%q) succeeded, want error %v", tc.path, tc.wantErr)
				}
				if !errors.Is(err, tc.wantErr.(error)) {
					t.Fatalf("Open(%q) error = %v, want %v", tc.path, err, tc.wantErr)
				}
				var pe *PathError
				if !errors.As(err, &pe) || pe.Path != tc.path {
					t.Fatalf("Open(%q) error %#v is not a *PathError naming the path", tc.path, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Open(%q): %v", tc.path, err)
			}
			defer f.Close()
			b, err := io.ReadAll(f)
			if err != nil || string(b) != tc.want {
				t.Fatalf("Open(%q) read %q, %v; want %q", tc.path, b, err, tc.want)
			}
		})
	}

	t.Run("root directory", func(t *testing.T) {
		f, err := tr.sb.Open(".")
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		names, err := f.Readdirnames(-1)
		if err != nil || !slices.Contains(names, "a.txt") {
			t.Fatalf("Readdirnames = %v, %v", names, err)
		}
	})
}

func TestSandboxStat(t *testing.T) {
	tr := newSandboxTree(t)
	tests := []struct {
		name, path string
		lstat      bool
		wantMode   fs.FileMode // type bits
		wantErr    error
	}{
		{"stat file", "a.txt", false, 0, nil},
		{"stat link inside", "in_link", false, 0, nil},
		{"lstat link inside", "in_link", true, fs.ModeSymlink, nil},
		{"stat dir", "sub", false, fs.ModeDir, nil},
		{"stat link out", "out_file", false, 0, ErrOutsideSandbox},
		{"lstat link out is the link itself", "out_file", true, fs.ModeSymlink, nil},
		{"lstat through dir link out", "out_dir/secret.txt", true, 0, ErrOutsideSandbox},
		{"stat absolute link", "abs_out", false, 0, ErrOutsideSandbox},
		{"stat dangling", "dangling", false, 0, fs.ErrNotExist},
		{"lstat dangling", "dangling", true, fs.ModeSymlink, nil},
		{"stat outside", "../outside/secret.txt", false, 0, ErrOutsideSandbox},
		{"lstat nul", "\x00", true, 0, ErrInvalidPath},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			stat := tr.sb.Stat
			if tc.lstat {
				stat = tr.sb.Lstat
			}
			fi, err := stat(tc.path)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("error = %v, want %v", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if fi.Mode().Type() != tc.wantMode {
				t.Fatalf("mode = %v, want type %v", fi.Mode(), tc.wantMode)
			}
		})
	}
}

func TestSandboxWriteFile(t *testing.T) {
	tests := []struct {
		name        string
		path        string
		mkdirs      bool
		setup       func(t *testing.T, tr *sbTree)
		wantCreated bool
		wantErr     error
		check       func(t *testing.T, tr *sbTree) // extra checks
	}{
		{name: "new file", path: "new.txt", wantCreated: true,
			check: func(t *testing.T, tr *sbTree) {
				sbWantFile(t, filepath.Join(tr.root, "new.txt"), "DATA", 0o644)
			}},
		{name: "overwrite keeps mode", path: "a.txt",
			setup: func(t *testing.T, tr *sbTree) { sbChmod(t, filepath.Join(tr.root, "a.txt"), 0o600) },
			check: func(t *testing.T, tr *sbTree) {
				sbWantFile(t, filepath.Join(tr.root, "a.txt"), "DATA", 0o600)
			}},
		{name: "overwrite executable keeps mode", path: "sub/b.txt",
			setup: func(t *testing.T, tr *sbTree) { sbChmod(t, filepath.Join(tr.root, "sub/b.txt"), 0o750) },
			check: func(t *testing.T, tr *sbTree) {
				sbWantFile(t, filepath.Join(tr.root, "sub/b.txt"), "DATA", 0o750)
			}},
		{name: "absolute path", path: "", wantCreated: true, // path filled in below
			check: func(t *testing.T, tr *sbTree) {
				sbWantFile(t, filepath.Join(tr.root, "sub", "abs.txt"), "DATA", 0o644)
			}},
		{name: "odd name", path: "with space.txt",
			check: func(t *testing.T, tr *sbTree) {
				sbWantFile(t, filepath.Join(tr.root, "with space.txt"), "DATA", 0o644)
			}},
		{name: "parent symlink inside", path: "in_dirlink/new.txt", wantCreated: true,
			check: func(t *testing.T, tr *sbTree) {
				sbWantFile(t, filepath.Join(tr.root, "sub", "new.txt"), "DATA", 0o644)
			}},
		{name: "mkdirs creates parents", path: "n1/n2/f.txt", mkdirs: true, wantCreated: true,
			check: func(t *testing.T, tr *sbTree) {
				sbWantFile(t, filepath.Join(tr.root, "n1/n2/f.txt"), "DATA", 0o644)
			}},
		{name: "mkdirs with existing parent", path: "sub/f.txt", mkdirs: true, wantCreated: true},
		{name: "no mkdirs no parents", path: "n1/n2/f.txt", wantErr: fs.ErrNotExist,
			check: func(t *testing.T, tr *sbTree) { sbWantMissing(t, filepath.Join(tr.root, "n1")) }},

		{name: "symlink target inside refused", path: "in_link", wantErr: ErrInvalidPath,
			check: func(t *testing.T, tr *sbTree) {
				sbWantFile(t, filepath.Join(tr.root, "a.txt"), "A", 0o644)
				sbWantLink(t, filepath.Join(tr.root, "in_link"))
			}},
		{name: "symlink target outside refused", path: "out_file", wantErr: ErrInvalidPath,
			check: func(t *testing.T, tr *sbTree) { sbWantLink(t, filepath.Join(tr.root, "out_file")) }},
		{name: "absolute symlink target refused", path: "abs_out", wantErr: ErrInvalidPath},
		{name: "dangling symlink out refused", path: "dangling_out", wantErr: ErrInvalidPath},
		{name: "dangling symlink inside refused", path: "dangling", wantErr: ErrInvalidPath,
			check: func(t *testing.T, tr *sbTree) { sbWantMissing(t, filepath.Join(tr.root, "missing.txt")) }},
		{name: "symlinked parent out, new file", path: "out_dir/new.txt", wantErr: ErrOutsideSandbox},
		{name: "symlinked parent out, mkdirs", path: "out_dir/deep/new.txt", mkdirs: true, wantErr: ErrOutsideSandbox},
		{name: "absolute symlinked parent out", path: "abs_out_dir/new.txt", mkdirs: true, wantErr: ErrOutsideSandbox},
		{name: "symlinked parent out, existing file", path: "out_dir/secret.txt", wantErr: ErrOutsideSandbox},
		{name: "directory refused", path: "sub", wantErr: ErrInvalidPath},
		{name: "read-only file refused", path: "a.txt", wantErr: fs.ErrPermission,
			setup: func(t *testing.T, tr *sbTree) { sbChmod(t, filepath.Join(tr.root, "a.txt"), 0o444) },
			check: func(t *testing.T, tr *sbTree) {
				sbWantFile(t, filepath.Join(tr.root, "a.txt"), "A", 0o444)
			}},
		{name: "trailing slash refused", path: "newdir/", mkdirs: true, wantErr: ErrInvalidPath,
			check: func(t *testing.T, tr *sbTree) { sbWantMissing(t, filepath.Join(tr.root, "newdir")) }},
		{name: "root refused", path: ".", wantErr: ErrInvalidPath},
		{name: "parent is a file", path: "a.txt/f", mkdirs: false, wantErr: syscall.ENOTDIR},
		{name: "parent is a file, mkdirs", path: "a.txt/f", mkdirs: true, wantErr: syscall.ENOTDIR},
		{name: "traversal", path: "../outside/new.txt", mkdirs: true, wantErr: ErrOutsideSandbox},
		{name: "sibling prefix", path: "../root-evil/f", wantErr: ErrOutsideSandbox},
		{name: "nul", path: "f\x00", wantErr: ErrInvalidPath},
		{name: "empty", path: "", wantErr: ErrInvalidPath},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tr := newSandboxTree(t)
			if tc.name == "absolute path" {
				tc.path = filepath.Join(tr.root, "sub", "abs.txt")
			}
			if tc.setup != nil {
				tc.setup(t, tr)
			}
			before := tr.outsideSnapshot(t)
			created, err := tr.sb.WriteFile(tc.path, []byte("DATA"), tc.mkdirs)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("WriteFile(%q) = %v, %v; want error %v", tc.path, created, err, tc.wantErr)
				}
				var pe *PathError
				if !errors.As(err, &pe) || pe.Path != tc.path {
					t.Fatalf("error %v is not a *PathError naming the path", err)
				}
			} else if err != nil || created != tc.wantCreated {
				t.Fatalf("WriteFile(%q) = %v, %v; want %v, nil", tc.path, created, err, tc.wantCreated)
			}
			if tc.check != nil {
				tc.check(t, tr)
			}
			if after := tr.outsideSnapshot(t); !maps.Equal(before, after) {
				t.Fatalf("outside of the root changed:\nbefore %v\nafter  %v", before, after)
			}
			sbAssertNoTemps(t, tr.root)
		})
	}
}

func TestSandboxWriteFileCleanupOnFailure(t *testing.T) {
	tr := newSandboxTree(t)
	var sawTemp atomic.Bool
	sbTestHookBeforeRename = func(tmp string) error {
		if _, err := os.Stat(filepath.Join(tr.root, "sub", tmp)); err == nil {
			sawTemp.Store(true)
		}
		return errors.New("injected failure")
	}
	defer func() { sbTestHookBeforeRename = nil }()
	for _, p := range []string{"sub/b.txt", "sub/new.txt"} {
		t.Run(p, func(t *testing.T) {
			if _, err := tr.sb.WriteFile(p, []byte("NEW"), false); err == nil {
				t.Fatal("WriteFile succeeded despite injected failure")
			}
			sbAssertNoTemps(t, tr.root)
		})
	}
	if !sawTemp.Load() {
		t.Fatal("temp file was not created next to the target")
	}
	sbWantFile(t, filepath.Join(tr.root, "sub/b.txt"), "B", 0o644)
	sbWantMissing(t, filepath.Join(tr.root, "sub/new.txt"))
}

// TestSandboxWriteFileAtomic reads the target while it is rewritten and
// requires every read to see one complete version.
func TestSandboxWriteFileAtomic(t *testing.T) {
	tr := newSandboxTree(t)
	versions := [][]byte{bytes.Repeat([]byte("a"), 1<<18), bytes.Repeat([]byte("b"), 1<<18)}
	if _, err := tr.sb.WriteFile("big.txt", versions[0], false); err != nil {
		t.Fatal(err)
	}
	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := 0; !stop.Load(); i++ {
			if _, err := tr.sb.WriteFile("big.txt", versions[i%2], false); err != nil {
				t.Error(err)
				return
			}
		}
	})
	deadline := time.Now().Add(time.Second)
	for i := 0; i < 300 && time.Now().Before(deadline); i++ {
		b, err := os.ReadFile(filepath.Join(tr.root, "big.txt"))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(b, versions[0]) && !bytes.Equal(b, versions[1]) {
			t.Fatalf("read a torn file of %d bytes", len(b))
		}
	}
	stop.Store(true)
	wg.Wait()
	sbAssertNoTemps(t, tr.root)
}

// TestSandboxSwapRace swaps a directory (and a file) for a symlink to the
// outside in a loop while other goroutines read and write through the
// sandbox, and requires that nothing outside is ever read or written.
func TestSandboxSwapRace(t *testing.T) {
	tr := newSandboxTree(t)
	dir := filepath.Join(tr.root, "d")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "secret.txt"), []byte("inside"), 0o644); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(tr.root, "g.txt")
	if err := os.WriteFile(file, []byte("inside"), 0o644); err != nil {
		t.Fatal(err)
	}
	before := tr.outsideSnapshot(t)

	const maxIter = 2000
	deadline := time.Now().Add(2 * time.Second)
	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Go(func() { // swapper
		// Workers with mkdirs may recreate "d" while it is moved away, so
		// every step makes room for itself first (removing only things
		// inside the root; RemoveAll on a symlink removes the link).
		retry := func(op func() error, clear string) {
			for range 100 {
				if op() == nil {
					return
				}
				os.RemoveAll(clear)
			}
			t.Error("swapper is stuck")
			stop.Store(true)
		}
		targets := []string{"../outside", tr.outside}
		for i := 0; !stop.Load() && i < maxIter && time.Now().Before(deadline); i++ {
			target := targets[i%2]
			retry(func() error { return os.Rename(dir, dir+".real") }, dir+".real")
			retry(func() error { return os.Symlink(target, dir) }, dir)
			retry(func() error { return os.Rename(file, file+".real") }, file+".real")
			retry(func() error { return os.Symlink(filepath.Join(target, "secret.txt"), file) }, file)
			runtime.Gosched()
			retry(func() error { return os.Remove(dir) }, dir)
			retry(func() error { return os.Rename(dir+".real", dir) }, dir)
			retry(func() error { return os.Remove(file) }, file)
			retry(func() error { return os.Rename(file+".real", file) }, file)
		}
	})
	var reads, writes atomic.Int64
	running := func() func() bool {
		i := 0
		return func() bool {
			i++
			return i <= maxIter && !stop.Load() && time.Now().Before(deadline)
		}
	}
	for range 2 { // readers
		wg.Go(func() {
			for more := running(); more(); {
				for _, p := range []string{"d/secret.txt", "g.txt", filepath.Join(tr.root, "d/secret.txt")} {
					tr.sb.Stat(p)
					f, err := tr.sb.Open(p)
					if err != nil {
						continue
					}
					b, _ := io.ReadAll(f)
					f.Close()
					reads.Add(1)
					if string(b) != "inside" {
						t.Errorf("Open(%q) read %q: data from outside the sandbox", p, b)
						stop.Store(true)
					}
				}
			}
		})
	}
	for w := range 3 { // writers; each WriteFile fsyncs, so they are slower
		wg.Go(func() {
			for more := running(); more(); {
				name := fmt.Sprintf("d/w%d.txt", w)
				if w == 2 {
					name = fmt.Sprintf("d/m%d/f.txt", w) // exercises MkdirAll
				}
				if _, err := tr.sb.WriteFile(name, []byte("w"), w == 2); err == nil {
					writes.Add(1)
				}
			}
		})
	}
	wg.Wait()
	stop.Store(true)
	t.Logf("%d successful reads, %d successful writes", reads.Load(), writes.Load())
	if after := tr.outsideSnapshot(t); !maps.Equal(before, after) {
		t.Fatalf("outside of the root changed:\nbefore %v\nafter  %v", before, after)
	}
	sbAssertNoTemps(t, tr.root)
}

func TestSandboxMultipleRoots(t *testing.T) {
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	r0, r1 := filepath.Join(base, "r0"), filepath.Join(base, "r1")
	for _, d := range []string{r0, r1, r1 + "-evil"} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(r0, "f"), []byte("zero"), 0o644)
	os.WriteFile(filepath.Join(r1, "f"), []byte("one"), 0o644)
	os.Symlink("../r0/f", filepath.Join(r1, "cross"))
	sb, err := NewSandbox([]string{r0, r1})
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close()
	if got := sb.Roots(); !slices.Equal(got, []string{r0, r1}) {
		t.Fatalf("Roots() = %v", got)
	}
	locate := []struct {
		name, path string
		wantRoot   int
		wantRel    string
		wantErr    error
	}{
		{"relative uses first", "f", 0, "f", nil},
		{"absolute first", r0 + "/f", 0, "f", nil},
		{"absolute second", r1 + "/f", 1, "f", nil},
		{"absolute second root dir", r1, 1, ".", nil},
		{"relative into second by dotdot", "../r1/f", 1, "f", nil},
		{"second root sibling prefix", r1 + "-evil/f", -1, "", ErrOutsideSandbox},
		{"between roots", base + "/f", -1, "", ErrOutsideSandbox},
	}
	for _, tc := range locate {
		t.Run(tc.name, func(t *testing.T) {
			i, rel, err := sb.Locate(tc.path)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("Locate(%q) error = %v, want %v", tc.path, err, tc.wantErr)
				}
				return
			}
			if err != nil || i != tc.wantRoot || rel != tc.wantRel {
				t.Fatalf("Locate(%q) = %d, %q, %v; want %d, %q", tc.path, i, rel, err, tc.wantRoot, tc.wantRel)
			}
		})
	}
	t.Run("open picks root", func(t *testing.T) {
		for p, want := range map[string]string{"f": "zero", r0 + "/f": "zero", r1 + "/f": "one"} {
			f, err := sb.Open(p)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(f)
			f.Close()
			if string(b) != want {
				t.Errorf("Open(%q) = %q, want %q", p, b, want)
			}
		}
	})
	t.Run("symlink across roots refused", func(t *testing.T) {
		if _, err := sb.Open(r1 + "/cross"); !errors.Is(err, ErrOutsideSandbox) {
			t.Fatalf("error = %v, want ErrOutsideSandbox", err)
		}
	})
	t.Run("write picks root", func(t *testing.T) {
		if _, err := sb.WriteFile(r1+"/w.txt", []byte("DATA"), false); err != nil {
			t.Fatal(err)
		}
		sbWantFile(t, filepath.Join(r1, "w.txt"), "DATA", 0o644)
		sbWantMissing(t, filepath.Join(r0, "w.txt"))
	})
	t.Run("FS picks root", func(t *testing.T) {
		fsys, name, err := sb.FS(r1 + "/f")
		if err != nil || name != "f" {
			t.Fatalf("FS = %v, %q, %v", fsys, name, err)
		}
		if b, err := fs.ReadFile(fsys, name); err != nil || string(b) != "one" {
			t.Fatalf("ReadFile = %q, %v", b, err)
		}
	})
}

func TestNewSandbox(t *testing.T) {
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ws := filepath.Join(base, "ws")
	os.Mkdir(ws, 0o755)
	os.Mkdir(filepath.Join(ws, "inner"), 0o755)
	os.Mkdir(filepath.Join(base, "other"), 0o755)
	os.WriteFile(filepath.Join(base, "file"), nil, 0o644)
	os.Symlink("ws", filepath.Join(base, "wslink"))
	tests := []struct {
		name    string
		roots   []string
		wantErr bool
	}{
		{"one", []string{ws}, false},
		{"two", []string{ws, filepath.Join(base, "other")}, false},
		{"symlinked root", []string{filepath.Join(base, "wslink")}, false},
		{"none", nil, true},
		{"empty string", []string{""}, true},
		{"nul", []string{ws + "\x00"}, true},
		{"missing", []string{filepath.Join(base, "missing")}, true},
		{"not a directory", []string{filepath.Join(base, "file")}, true},
		{"duplicate", []string{ws, ws + "/"}, true},
		{"duplicate through symlink", []string{ws, filepath.Join(base, "wslink")}, true},
		{"nested", []string{ws, filepath.Join(ws, "inner")}, true},
		{"nested reversed", []string{filepath.Join(ws, "inner"), ws}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sb, err := NewSandbox(tc.roots)
			if (err != nil) != tc.wantErr {
				t.Fatalf("NewSandbox(%q) error = %v, wantErr %v", tc.roots, err, tc.wantErr)
			}
			if sb != nil {
				sb.Close()
			}
		})
	}

	t.Run("both spellings accepted", func(t *testing.T) {
		os.WriteFile(filepath.Join(ws, "f"), []byte("F"), 0o644)
		link := filepath.Join(base, "wslink")
		sb, err := NewSandbox([]string{link})
		if err != nil {
			t.Fatal(err)
		}
		defer sb.Close()
		if got := sb.Roots(); !slices.Equal(got, []string{ws}) {
			t.Fatalf("Roots() = %v, want resolved %v", got, ws)
		}
		for _, p := range []string{link + "/f", ws + "/f", "f"} {
			if i, rel, err := sb.Locate(p); err != nil || i != 0 || rel != "f" {
				t.Errorf("Locate(%q) = %d, %q, %v", p, i, rel, err)
			}
		}
		if abs, _ := sb.Abs(link + "/f"); abs != ws+"/f" {
			t.Errorf("Abs = %q, want %q", abs, ws+"/f")
		}
		if _, _, err := sb.Locate(link + "/../other"); !errors.Is(err, ErrOutsideSandbox) {
			t.Errorf("Locate(link/../other) error = %v", err)
		}
	})

	t.Run("relative root", func(t *testing.T) {
		t.Chdir(base)
		sb, err := NewSandbox([]string{"ws"})
		if err != nil {
			t.Fatal(err)
		}
		defer sb.Close()
		if got := sb.Roots(); !slices.Equal(got, []string{ws}) {
			t.Fatalf("Roots() = %v", got)
		}
	})
}

func TestSandboxFS(t *testing.T) {
	tr := newSandboxTree(t)
	fsys, name, err := tr.sb.FS(".")
	if err != nil || name != "." {
		t.Fatalf("FS(.) = %q, %v", name, err)
	}
	var visited []string
	err = fs.WalkDir(fsys, name, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		visited = append(visited, p)
		if d.IsDir() {
			return nil
		}
		b, err := fs.ReadFile(fsys, p) // what grep_files does
		if string(b) == "SECRET" {
			t.Errorf("read outside data through %q", p)
		}
		switch p {
		case "out_file", "abs_out", "chain1", "dangling_out", "abs_in_link", "abs_in_chain", "abs_in_dotdot_out":
			if !errors.Is(err, ErrOutsideSandbox) {
				t.Errorf("ReadFile(%q) error = %v, want ErrOutsideSandbox", p, err)
			}
			var pe *fs.PathError
			if !errors.As(err, &pe) {
				t.Errorf("ReadFile(%q) error %T is not *fs.PathError", p, err)
			}
		case "in_link", "a.txt":
			if err != nil || string(b) != "A" {
				t.Errorf("ReadFile(%q) = %q, %v", p, b, err)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range visited {
		if strings.HasPrefix(p, "out_dir/") || strings.HasPrefix(p, "abs_out_dir/") || strings.HasPrefix(p, "in_dirlink/") {
			t.Errorf("WalkDir descended into symlinked directory: %s", p)
		}
	}
	if !slices.Contains(visited, "sub/b.txt") || !slices.Contains(visited, "...") {
		t.Errorf("visited = %v", visited)
	}

	tests := []struct {
		name, path string
		wantName   string
		wantErr    error
		openErr    error
	}{
		{"sub dir", "sub", "sub", nil, nil},
		{"absolute", tr.root + "/sub/b.txt", "sub/b.txt", nil, nil},
		{"dir link out", "out_dir", "out_dir", nil, ErrOutsideSandbox},
		{"outside", "../outside", "", ErrOutsideSandbox, nil},
		{"nul", "\x00", "", ErrInvalidPath, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fsys, name, err := tr.sb.FS(tc.path)
			if !errors.Is(err, tc.wantErr) || name != tc.wantName {
				t.Fatalf("FS(%q) = %q, %v; want %q, %v", tc.path, name, err, tc.wantName, tc.wantErr)
			}
			if err != nil {
				return
			}
			if _, err := fs.Stat(fsys, name); !errors.Is(err, tc.openErr) {
				t.Fatalf("Stat(%q) error = %v, want %v", name, err, tc.openErr)
			}
			if _, err := fs.ReadDir(fsys, "out_dir"); !errors.Is(err, ErrOutsideSandbox) {
				t.Fatalf("ReadDir(out_dir) error = %v", err)
			}
			if fi, err := fs.Lstat(fsys, "out_dir"); err != nil || fi.Mode().Type() != fs.ModeSymlink {
				t.Fatalf("Lstat(out_dir) = %v, %v", fi, err)
			}
		})
	}
}

func TestSandboxClose(t *testing.T) {
	tr := newSandboxTree(t)
	if err := tr.sb.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := tr.sb.Open("a.txt"); err == nil || !strings.Contains(err.Error(), "sandbox is closed") {
		t.Fatalf("Open after Close error = %v", err)
	}
	if _, err := tr.sb.WriteFile("n.txt", nil, false); err == nil {
		t.Fatal("WriteFile after Close succeeded")
	}
	// Locate stays lexical and keeps working.
	if _, _, err := tr.sb.Locate("a.txt"); err != nil {
		t.Fatal(err)
	}
}

func sbWantFile(t *testing.T, p, content string, perm fs.FileMode) {
	t.Helper()
	fi, err := os.Lstat(p)
	if err != nil {
		t.Fatal(err)
	}
	if !fi.Mode().IsRegular() || fi.Mode().Perm() != perm {
		t.Errorf("%s: mode %v, want regular %v", p, fi.Mode(), perm)
	}
	if b, err := os.ReadFile(p); err != nil || string(b) != content {
		t.Errorf("%s: content %q, %v; want %q", p, b, err, content)
	}
}

func sbWantLink(t *testing.T, p string) {
	t.Helper()
	if fi, err := os.Lstat(p); err != nil || fi.Mode().Type() != fs.ModeSymlink {
		t.Errorf("%s is no longer a symlink: %v, %v", p, fi, err)
	}
}

func sbWantMissing(t *testing.T, p string) {
	t.Helper()
	if _, err := os.Lstat(p); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("%s exists (err %v), want missing", p, err)
	}
}

func sbChmod(t *testing.T, p string, mode fs.FileMode) {
	t.Helper()
	if err := os.Chmod(p, mode); err != nil {
		t.Fatal(err)
	}
}
