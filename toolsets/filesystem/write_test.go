package filesystem

import (
	"context"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/gateway"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	p := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs:\n--- got ---\n%s\n--- want ---\n%s", name, got, want)
	}
}

func diffOf(t *testing.T, res *gateway.Result) gateway.DiffBlock {
	t.Helper()
	for _, b := range res.Display {
		if d, ok := b.(gateway.DiffBlock); ok {
			return d
		}
	}
	t.Fatalf("no diff block in %v", res.Display)
	return gateway.DiffBlock{}
}

const oldMain = `package main

import "fmt"

func main() {
	fmt.Println("hello")
}
`

const newMain = `package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Println("hello, world")
	os.Exit(0)
}
`

func TestWriteFileCreate(t *testing.T) {
	e := newEnv(t, nil, nil)
	res := e.call(context.Background(), "write_file", map[string]any{"path": "notes/x.md", "content": "# Notes\nfirst\n"})
	wantOK(t, res)
	if res.Message != "Wrote 14 bytes to notes/x.md (created)." {
		t.Errorf("message = %q", res.Message)
	}
	if res.Brief() != "Wrote 14 B to notes/x.md" {
		t.Errorf("brief = %q", res.Brief())
	}
	d := diffOf(t, res)
	want := gateway.DiffBlock{Path: "notes/x.md", Unified: "@@ -0,0 +1,2 @@\n+# Notes\n+first\n", Added: 2, Created: true}
	if d != want {
		t.Errorf("diff = %+v\nwant   %+v", d, want)
	}
	if got := e.read("notes/x.md"); got != "# Notes\nfirst\n" {
		t.Errorf("file = %q", got)
	}
}

func TestWriteFileUpdateGolden(t *testing.T) {
	e := newEnv(t, nil, map[string]string{"cmd/main.go": oldMain})
	res := e.call(context.Background(), "write_file", map[string]any{"path": "cmd/main.go", "content": newMain})
	wantOK(t, res)
	if res.Message != "Wrote 96 bytes to cmd/main.go (updated)." {
		t.Errorf("message = %q", res.Message)
	}
	d := diffOf(t, res)
	if d.Path != "cmd/main.go" || d.Added != 6 || d.Removed != 2 || d.Created || d.Truncated {
		t.Errorf("diff block = %+v", d)
	}
	golden(t, "update.diff", d.Unified)
	if got := applyUnified(t, oldMain, d.Unified); got != newMain {
		t.Errorf("applying the diff gives %q", got)
	}
	if e.read("cmd/main.go") != newMain {
		t.Error("file not updated")
	}
}

func TestWriteFileCases(t *testing.T) {
	e := newEnv(t, nil, map[string]string{"a.txt": "same\n", "dir/": "", "kb.txt": "x\n"})
	ctx := context.Background()

	res := e.call(ctx, "write_file", map[string]any{"path": "a.txt", "content": "same\n"})
	wantOK(t, res)
	if res.Message != "Wrote 5 bytes to a.txt (unchanged)." || diffOf(t, res).Unified != "" {
		t.Errorf("unchanged: %q %+v", res.Message, diffOf(t, res))
	}

	res = e.call(ctx, "write_file", map[string]any{"path": "kb.txt", "content": strings.Repeat("k", 1300)})
	wantOK(t, res)
	if res.Brief() != "Wrote 1.3 KiB to kb.txt" {
		t.Errorf("brief = %q", res.Brief())
	}
	d := diffOf(t, res)
	want := "--- a/kb.txt\n+++ b/kb.txt\n@@ -1 +1 @@\n-x\n+" + strings.Repeat("k", 1300) + "\n\\ No newline at end of file\n"
	if d.Unified != want || d.Added != 1 || d.Removed != 1 {
		t.Errorf("diff = %+v", d)
	}

	res = e.call(ctx, "write_file", map[string]any{"path": "empty.txt", "content": ""})
	wantOK(t, res)
	if res.Message != "Wrote 0 bytes to empty.txt (created)." {
		t.Errorf("message = %q", res.Message)
	}

	wantError(t, e.call(ctx, "write_file", map[string]any{"path": "new/deep/f.txt", "content": "x", "create_dirs": false}),
		gateway.KindToolError, `path "new/deep/f.txt"`, "parent directory", "does not exist")
	wantOK(t, e.call(ctx, "write_file", map[string]any{"path": "new/deep/f.txt", "content": "x"}))

	wantError(t, e.call(ctx, "write_file", map[string]any{"path": "dir", "content": "x"}),
		gateway.KindToolError, `path "dir"`, "is a directory")
	wantError(t, e.call(ctx, "write_file", map[string]any{"path": "a.txt/sub", "content": "x"}),
		gateway.KindToolError, `path "a.txt/sub"`, "not a directory")
	wantError(t, e.call(ctx, "write_file", map[string]any{"path": ".", "content": "x"}),
		gateway.KindToolError, `path "."`)
	wantError(t, e.call(ctx, "write_file", map[string]any{"path": "a.txt"}),
		gateway.KindInvalid, "missing required property 'content'")

	// Content may hold anything, NUL bytes included.
	wantOK(t, e.call(ctx, "write_file", map[string]any{"path": "nul.bin", "content": "a\x00b"}))
	if e.read("nul.bin") != "a\x00b" {
		t.Error("NUL content not written")
	}

	// A symlink inside the sandbox is still refused as a write target.
	e.symlink("a.txt", "in_link")
	wantError(t, e.call(ctx, "write_file", map[string]any{"path": "in_link", "content": "x"}),
		gateway.KindToolError, `path "in_link"`, "symlink")
	if e.read("a.txt") != "same\n" {
		t.Error("write went through a symlink")
	}
}

func TestWriteFileBackups(t *testing.T) {
	store := newMemStore()
	e := newEnv(t, &Options{Backups: store}, map[string]string{"notes/x.md": "old content\n"})
	ctx := context.Background()

	call := &gateway.Call{ID: "call-1", Name: "write_file", Arguments: []byte(`{"path":"notes/x.md","content":"new content\n"}`)}
	res := e.p.Call(ctx, call)
	wantOK(t, res)
	uri, _ := res.Extras["previous_version"].(string)
	if uri != "toolgate://artifacts/call-1/previous-x.md" {
		t.Fatalf("previous_version = %q (extras %v)", uri, res.Extras)
	}
	data, mime, err := store.ReadArtifact(uri)
	if err != nil || string(data) != "old content\n" || mime != "text/plain; charset=utf-8" {
		t.Errorf("artifact = %q %q %v", data, mime, err)
	}
	if !strings.Contains(res.Message, "Wrote 12 bytes to notes/x.md (updated). The previous content (12 bytes) is archived as "+uri) {
		t.Errorf("message = %q", res.Message)
	}
	if len(call.Artifacts) != 0 {
		t.Errorf("the call was modified: %v", call.Artifacts)
	}
	if !strings.Contains(e.tool("write_file").Description, "previous content is archived") {
		t.Errorf("description does not explain backups: %s", e.tool("write_file").Description)
	}

	// Binary previous content keeps its detected type.
	e.write("img.bin", "\x89PNG\r\n\x1a\n\x00\x00")
	res = e.call(ctx, "write_file", map[string]any{"path": "img.bin", "content": "text now"})
	wantOK(t, res)
	if _, mime, _ := store.ReadArtifact(res.Extras["previous_version"].(string)); mime != "image/png" {
		t.Errorf("binary backup type = %q", mime)
	}

	// Creating, or writing the same content, archives nothing.
	n := len(store.calls)
	wantOK(t, e.call(ctx, "write_file", map[string]any{"path": "fresh.txt", "content": "x"}))
	res = e.call(ctx, "write_file", map[string]any{"path": "fresh.txt", "content": "x"})
	wantOK(t, res)
	if len(store.calls) != n || res.Extras["previous_version"] != nil {
		t.Errorf("archived on create or no-op: %d artifacts, extras %v", len(store.calls)-n, res.Extras)
	}

	// A failed backup refuses the write: nothing is lost.
	store.fail = errors.New("disk full")
	wantError(t, e.call(ctx, "write_file", map[string]any{"path": "notes/x.md", "content": "newer\n"}),
		gateway.KindToolError, "notes/x.md was not written", "disk full")
	if e.read("notes/x.md") != "new content\n" {
		t.Error("file overwritten although the backup failed")
	}
}

// applyUnified applies a unified diff to old (for checking diffs).
func applyUnified(t *testing.T, old, unified string) string {
	t.Helper()
	a := splitLines(old)
	var out []string
	ai := 0
	lines := strings.SplitAfter(unified, "\n")
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		switch {
		case l == "" || strings.HasPrefix(l, "--- ") || strings.HasPrefix(l, "+++ "):
		case strings.HasPrefix(l, "@@ "):
			var os, ns int
			var rest string
			parseHunk(t, l, &os, &ns, &rest)
			start := os - 1
			if strings.Contains(strings.Fields(l)[1], ",0") {
				start = os
			}
			for ai < start {
				out = append(out, a[ai])
				ai++
			}
		case strings.HasPrefix(l, `\ No newline`):
		default:
			text := l[1:]
			if i+1 < len(lines) && strings.HasPrefix(lines[i+1], `\ No newline`) {
				text = strings.TrimSuffix(text, "\n")
			}
			switch l[0] {
			case ' ':
				if ai >= len(a) || a[ai] != text {
					t.Fatalf("context line %q does not match old line %d %q", text, ai+1, a[min(ai, len(a)-1)])
				}
				out = append(out, text)
				ai++
			case '-':
				if ai >= len(a) || a[ai] != text {
					t.Fatalf("removed line %q does not match old line %d", text, ai+1)
				}
				ai++
			case '+':
				out = append(out, text)
			default:
				t.Fatalf("bad diff line %q", l)
			}
		}
	}
	out = append(out, a[ai:]...)
	return strings.Join(out, "")
}

func parseHunk(t *testing.T, header string, oldStart, newStart *int, rest *string) {
	t.Helper()
	f := strings.Fields(header)
	if len(f) < 4 || f[0] != "@@" || f[3] != "@@" {
		t.Fatalf("bad hunk header %q", header)
	}
	parse := func(s string) int {
		s, _, _ = strings.Cut(s[1:], ",")
		n := 0
		for _, c := range s {
			n = n*10 + int(c-'0')
		}
		return n
	}
	*oldStart, *newStart = parse(f[1]), parse(f[2])
}

// TestWriteOneByte: "1 byte", not "1 bytes".
func TestWriteOneByte(t *testing.T) {
	e := newEnv(t, nil, nil)
	res := e.call(context.Background(), "write_file", map[string]any{"path": "one.txt", "content": "x"})
	wantOK(t, res)
	if res.Message != "Wrote 1 byte to one.txt (created)." {
		t.Errorf("message %q", res.Message)
	}
}

// TestWriteFileBoundsThePreviousContent: write_file reads an existing file
// whole (for the diff and the backup), so it replaces one only up to
// MaxOverwriteSize; a larger one is left as it was, with the reason, and
// is never read into memory.
func TestWriteFileBoundsThePreviousContent(t *testing.T) {
	store := newMemStore()
	e := newEnv(t, &Options{Backups: store, MaxOverwriteSize: 1 << 20}, nil)
	ctx := context.Background()
	sparse := func(name string, size int64) string {
		p := filepath.Join(e.root, name)
		f, err := os.Create(p)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if err := f.Truncate(size); err != nil {
			t.Fatal(err)
		}
		return p
	}

	// At the limit: replaced, and archived whole.
	sparse("at.img", 1<<20)
	res := e.call(ctx, "write_file", map[string]any{"path": "at.img", "content": "x"})
	wantOK(t, res)
	if data, _, err := store.ReadArtifact(res.Extras["previous_version"].(string)); err != nil || len(data) != 1<<20 {
		t.Errorf("backup of at.img: %d bytes, %v", len(data), err)
	}

	// Over it: refused, untouched, and not read (a 256 MiB sparse file
	// would cost several times its size to read, diff and archive).
	big := sparse("big.img", 256<<20)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	res = e.call(ctx, "write_file", map[string]any{"path": "big.img", "content": "x"})
	runtime.ReadMemStats(&after)
	wantError(t, res, gateway.KindToolError, "big.img was not written: it holds more than 1.0 MiB", "filesystem.max_overwrite_bytes")
	if fi, err := os.Stat(big); err != nil || fi.Size() != 256<<20 {
		t.Errorf("big.img after the refusal: %v %v", fi, err)
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 8<<20 {
		t.Errorf("refusing allocated %d MiB", grew>>20)
	}
	if !strings.Contains(e.tool("write_file").Description, "existing files over 1.0 MiB") {
		t.Errorf("description does not give the limit: %s", e.tool("write_file").Description)
	}
}

// TestWriteFileReadOnly: a file without write permission is not replaced,
// although the atomic rename (which needs only the directory to be
// writable) could: its owner made it read-only on purpose.
func TestWriteFileReadOnly(t *testing.T) {
	cases := []struct {
		mode os.FileMode
		ok   bool
	}{
		{0o444, false},
		{0o400, false},
		{0o000, false},
		{0o464, false}, // group-writable, not the owner
		{0o644, true},
		{0o600, true},
	}
	for _, c := range cases {
		t.Run(c.mode.String(), func(t *testing.T) {
			e := newEnv(t, nil, map[string]string{"f.txt": "keep\n"})
			p := filepath.Join(e.root, "f.txt")
			if err := os.Chmod(p, c.mode); err != nil {
				t.Fatal(err)
			}
			res := e.call(context.Background(), "write_file", map[string]any{"path": "f.txt", "content": "new\n"})
			os.Chmod(p, 0o644) // so that the test can read it back
			if c.ok {
				wantOK(t, res)
				if got := e.read("f.txt"); got != "new\n" {
					t.Errorf("content = %q", got)
				}
				return
			}
			wantError(t, res, gateway.KindToolError, `path "f.txt"`, "read-only")
			if got := e.read("f.txt"); got != "keep\n" {
				t.Errorf("read-only file replaced: %q", got)
			}
		})
	}
}
