package policy

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// sbFuzzSeeds are shared by both fuzz targets; more live in testdata/fuzz.
var sbFuzzSeeds = []string{
	"", ".", "..", "/", "a.txt", "./a.txt", "../x", "a/../../x", "./../x",
	"a/b/../../../x", "....//..//x", "....//..//..//x", "~", "~/x", "x\x00y",
	"sub/../a.txt", "sub//b.txt", "sub/", "...", "..test", "te..st", "a..",
	".hidden", "out", "out/secret.txt", "absout", "in", "loop", "dangling",
	"chain", "in/../../outside/secret.txt", "sub/.././../root/a.txt",
	"ROOT/a.txt", "ROOT/../outside/secret.txt", "ROOT-evil/f", "ROOT2/x",
	"ROOT /f", "LINK/a.txt", "LINK/../outside", "OTHER/f", "OTHER/../ROOT",
}

// sbFuzzTree builds base/{root,other,outside,root-evil} with symlinks and
// returns a sandbox over [base/link (-> root), base/other]. In fuzz inputs,
// "ROOT", "LINK", "OTHER" and "BASE" are replaced by absolute paths so the
// fuzzer can reach the absolute-path code.
func sbFuzzTree(f *testing.F) (*Sandbox, func(string) string) {
	base, err := filepath.EvalSymlinks(f.TempDir())
	if err != nil {
		f.Fatal(err)
	}
	root, other, outside := filepath.Join(base, "root"), filepath.Join(base, "other"), filepath.Join(base, "outside")
	for _, d := range []string{root + "/sub", other, outside, root + "-evil"} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			f.Fatal(err)
		}
	}
	files := map[string]string{
		root + "/a.txt": "A", root + "/sub/b.txt": "B", other + "/f": "O",
		outside + "/secret.txt": "SECRET", root + "-evil/f": "SECRET",
	}
	for p, c := range files {
		if err := os.WriteFile(p, []byte(c), 0o644); err != nil {
			f.Fatal(err)
		}
	}
	links := map[string]string{
		root + "/out": "../outside", root + "/absout": outside + "/secret.txt",
		root + "/in": "a.txt", root + "/loop": "loop", root + "/dangling": "nope",
		root + "/chain": "out/secret.txt", other + "/toroot": "../root/a.txt",
		base + "/link": "root",
	}
	for p, target := range links {
		if err := os.Symlink(target, p); err != nil {
			f.Fatal(err)
		}
	}
	sb, err := NewSandbox([]string{base + "/link", other})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { sb.Close() })
	expand := strings.NewReplacer("ROOT", root, "LINK", base+"/link", "OTHER", other, "BASE", base).Replace
	return sb, expand
}

func FuzzSandboxLocate(f *testing.F) {
	for _, s := range sbFuzzSeeds {
		f.Add(s)
	}
	sb, expand := sbFuzzTree(f)
	roots := sb.Roots()
	f.Fuzz(func(t *testing.T, p string) {
		p = expand(p)
		i, rel, err := sb.Locate(p)
		if p == "" || strings.IndexByte(p, 0) >= 0 {
			if !errors.Is(err, ErrInvalidPath) {
				t.Fatalf("Locate(%q) = %d, %q, %v; want ErrInvalidPath", p, i, rel, err)
			}
			return
		}
		if err != nil {
			if !errors.Is(err, ErrOutsideSandbox) {
				t.Fatalf("Locate(%q) error %v wraps neither sentinel", p, err)
			}
			var pe *PathError
			if !errors.As(err, &pe) || pe.Path != p {
				t.Fatalf("Locate(%q) error %v is not a PathError for p", p, err)
			}
			// A relative path that stays lexically below the first root
			// must never be refused.
			if c := filepath.Clean(p); !filepath.IsAbs(p) && c != ".." && !strings.HasPrefix(c, "../") {
				t.Fatalf("Locate(%q) refused a path below the first root: %v", p, err)
			}
			return
		}
		if i < 0 || i >= len(roots) {
			t.Fatalf("Locate(%q) root index %d out of range", p, i)
		}
		if rel == "" || strings.IndexByte(rel, 0) >= 0 || strings.HasPrefix(rel, "/") || filepath.Clean(rel) != rel {
			t.Fatalf("Locate(%q) rel %q is not a clean relative path", p, rel)
		}
		if slices.Contains(strings.Split(rel, "/"), "..") {
			t.Fatalf("Locate(%q) rel %q has a .. component", p, rel)
		}
		abs := filepath.Join(roots[i], rel)
		if !sbWithin(roots[i], abs) {
			t.Fatalf("Locate(%q) = %d, %q: %q is outside root %q", p, i, rel, abs, roots[i])
		}
		if got, err := sb.Abs(p); err != nil || got != abs {
			t.Fatalf("Abs(%q) = %q, %v; want %q", p, got, err, abs)
		}
		if !filepath.IsAbs(p) {
			if c := filepath.Clean(p); c != ".." && !strings.HasPrefix(c, "../") && (i != 0 || rel != c) {
				t.Fatalf("Locate(%q) = %d, %q; want 0, %q", p, i, rel, c)
			}
		}
	})
}

func FuzzSandboxOpen(f *testing.F) {
	if runtime.GOOS != "linux" {
		f.Skip("uses /proc/self/fd")
	}
	for _, s := range sbFuzzSeeds {
		f.Add(s)
	}
	sb, expand := sbFuzzTree(f)
	roots := sb.Roots()
	f.Fuzz(func(t *testing.T, p string) {
		p = expand(p)
		if _, err := sb.Stat(p); err == nil {
			if _, _, err := sb.Locate(p); err != nil {
				t.Fatalf("Stat(%q) succeeded but Locate failed: %v", p, err)
			}
		}
		file, err := sb.Open(p)
		if err != nil {
			var pe *PathError
			if !errors.As(err, &pe) {
				t.Fatalf("Open(%q) error %v is not a *PathError", p, err)
			}
			return
		}
		defer file.Close()
		real, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(int(file.Fd())))
		if err != nil {
			t.Fatal(err)
		}
		if !slices.ContainsFunc(roots, func(r string) bool { return sbWithin(r, real) }) {
			t.Fatalf("Open(%q) opened %q, outside roots %v", p, real, roots)
		}
		if fi, err := file.Stat(); err == nil && fi.Mode().IsRegular() {
			if b, _ := io.ReadAll(file); string(b) == "SECRET" {
				t.Fatalf("Open(%q) read outside data from %q", p, real)
			}
		}
	})
}
