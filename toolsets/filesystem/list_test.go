package filesystem

import (
	"context"
	"strings"
	"syscall"
	"testing"
	"unicode/utf8"

	"github.com/toolgate/toolgate/gateway"
)

func listTree(t *testing.T, opts *Options) *env {
	e := newEnv(t, opts, map[string]string{
		"a.txt":             "aaa",
		"b/c.txt":           strings.Repeat("c", 2048),
		"b/d/e.go":          "package e\n",
		"b/d/f/g.txt":       "",
		"b.txt":             "b",
		".hidden":           "h",
		".git/config":       "[core]\n",
		"b/.secret/key.txt": "k",
		"empty/":            "",
		"z.go":              "package z\n",
	})
	e.symlink("a.txt", "link")
	e.symlink("../outside", "out_link")
	return e
}

func TestListFiles(t *testing.T) {
	tests := []struct {
		name    string
		opts    *Options
		args    map[string]any
		lines   []string
		message string
		brief   string
	}{
		{name: "top level", args: map[string]any{},
			lines: []string{
				"file a.txt  (3 B)",
				"dir  b/",
				"file b.txt  (1 B)",
				"dir  empty/",
				"link link -> a.txt",
				"link out_link -> ../outside",
				"file z.go  (10 B)",
			},
			message: "Listed 7 entries in . (2 dirs, 3 files, 2 links); 2 hidden entries skipped (include_hidden shows them).",
			brief:   "Listed 7 entries in ."},
		{name: "recursive, depth first by name", args: map[string]any{"path": "b", "recursive": true},
			lines: []string{
				"file b/c.txt  (2.0 KiB)",
				"dir  b/d/",
				"file b/d/e.go  (10 B)",
				"dir  b/d/f/",
				"file b/d/f/g.txt  (0 B)",
			},
			message: "Listed 5 entries in b (2 dirs, 3 files, 0 links); 1 hidden entry skipped (include_hidden shows them).",
			brief:   "Listed 5 entries in b"},
		{name: "max depth 2", args: map[string]any{"path": "b", "max_depth": 2},
			lines: []string{"file b/c.txt  (2.0 KiB)", "dir  b/d/", "file b/d/e.go  (10 B)", "dir  b/d/f/"}},
		{name: "recursive with max depth 1", args: map[string]any{"path": "b", "recursive": true, "max_depth": 1},
			lines: []string{"file b/c.txt  (2.0 KiB)", "dir  b/d/"}},
		{name: "include hidden", args: map[string]any{"include_hidden": true, "recursive": true, "path": "b"},
			lines: []string{
				"dir  b/.secret/",
				"file b/.secret/key.txt  (1 B)",
				"file b/c.txt  (2.0 KiB)",
				"dir  b/d/",
				"file b/d/e.go  (10 B)",
				"dir  b/d/f/",
				"file b/d/f/g.txt  (0 B)",
			},
			message: "Listed 7 entries in b (3 dirs, 4 files, 0 links)."},
		{name: "pattern", args: map[string]any{"pattern": "*.txt", "recursive": true},
			lines:   []string{"file a.txt  (3 B)", "file b/c.txt  (2.0 KiB)", "file b/d/f/g.txt  (0 B)", "file b.txt  (1 B)"},
			message: "Listed 4 entries in . (0 dirs, 4 files, 0 links); 3 hidden entries skipped (include_hidden shows them)."},
		{name: "pattern matching nothing", args: map[string]any{"pattern": "*.rs", "path": "b"},
			lines: nil, message: `No entries in b match pattern "*.rs"; 1 hidden entry skipped (include_hidden shows them).`},
		{name: "empty directory", args: map[string]any{"path": "empty"},
			lines: nil, message: "empty is empty.", brief: "Listed 0 entries in empty"},
		{name: "a single file", args: map[string]any{"path": "b/c.txt"},
			lines: []string{"file b/c.txt  (2.0 KiB)"}},
		{name: "a symlink to a file", args: map[string]any{"path": "link"},
			lines: []string{"link link -> a.txt"}},
		{name: "truncated", opts: &Options{MaxListEntries: 3}, args: map[string]any{"recursive": true},
			lines: []string{"file a.txt  (3 B)", "dir  b/", "file b/c.txt  (2.0 KiB)"},
			message: "Listed the first 3 entries in . (truncated at 3 entries; list a subdirectory, lower max_depth or use pattern to see the rest)" +
				"; 3 hidden entries skipped (include_hidden shows them).",
			brief: "Listed 3 entries in . (truncated)"},
		{name: "exactly at the limit is not truncated", opts: &Options{MaxListEntries: 5}, args: map[string]any{"path": "b", "recursive": true},
			lines: []string{"file b/c.txt  (2.0 KiB)", "dir  b/d/", "file b/d/e.go  (10 B)", "dir  b/d/f/", "file b/d/f/g.txt  (0 B)"},
			brief: "Listed 5 entries in b"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := listTree(t, tc.opts)
			wantListing(t, e.call(context.Background(), "list_files", tc.args), tc.lines, tc.message, tc.brief)
		})
	}
}

func TestListFilesSpecial(t *testing.T) {
	e := listTree(t, nil)
	ctx := context.Background()
	// Nothing listed: no output part (no empty text block for the model);
	// the message says the directory is empty.
	if res := e.call(ctx, "list_files", map[string]any{"path": "empty"}); len(res.Output) != 0 || res.Message != "empty is empty." {
		t.Errorf("an empty directory listed as output %#v, message %q; want no output and the message", res.Output, res.Message)
	}
	wantError(t, e.call(ctx, "list_files", map[string]any{"pattern": "[a-"}),
		gateway.KindToolError, `invalid pattern "[a-"`)
	wantError(t, e.call(ctx, "list_files", map[string]any{"path": "nope"}),
		gateway.KindToolError, `path "nope"`, "no such file")

	if err := syscall.Mkfifo(e.root+"/b/fifo", 0o644); err == nil {
		res := e.call(ctx, "list_files", map[string]any{"path": "b", "pattern": "fifo"})
		wantOK(t, res)
		if res.OutputText() != "misc b/fifo  (named pipe)" {
			t.Errorf("fifo listed as %q", res.OutputText())
		}
		// read_file refuses it rather than blocking on it.
		wantError(t, e.call(ctx, "read_file", map[string]any{"path": "b/fifo"}), gateway.KindToolError, "not a regular file")
	}
}

func TestListFilesCancelled(t *testing.T) {
	e := listTree(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res, err := e.tool("list_files").Handler()(ctx, &gateway.Call{Arguments: []byte(`{"recursive":true}`)})
	if err == nil {
		t.Fatalf("cancelled listing returned %v", res)
	}
}

// TestOddNamesKeepOneEntryPerLine: names with a newline or another control
// character (or invalid UTF-8) are shown quoted, so that each entry of
// list_files and each match of grep_files stays on one line and a name
// cannot pass for other entries.
func TestOddNamesKeepOneEntryPerLine(t *testing.T) {
	names := []struct{ name, shown string }{
		{"new\nline.txt", `"d/new\nline.txt"`},
		{"fake  (1 B)\nfile ghost.txt", `"d/fake  (1 B)\nfile ghost.txt"`},
		{"cr\r.txt", `"d/cr\r.txt"`},
		{"tab\t.txt", `"d/tab\t.txt"`},
		{"bad\xff.txt", `"d/bad\xff.txt"`},
		{"plain é.txt", "d/plain é.txt"},
		{`"quoted".txt`, `d/"quoted".txt`},
	}
	files := map[string]string{}
	for _, n := range names {
		files["d/"+n.name] = "hit\n"
	}
	e := newEnv(t, nil, files)
	ctx := context.Background()
	for _, n := range names {
		t.Run(n.shown, func(t *testing.T) {
			if !utf8.ValidString(n.name) {
				t.Skip("JSON cannot carry this name; checked in the listing below")
			}
			res := e.call(ctx, "list_files", map[string]any{"path": "d/" + n.name})
			wantOK(t, res)
			if want := "file " + n.shown + "  (4 B)"; res.OutputText() != want {
				t.Errorf("list_files = %q, want %q", res.OutputText(), want)
			}
			res = e.call(ctx, "grep_files", map[string]any{"path": "d/" + n.name, "pattern": "hit"})
			wantOK(t, res)
			if want := n.shown + ":1:hit"; res.OutputText() != want {
				t.Errorf("grep_files = %q, want %q", res.OutputText(), want)
			}
		})
	}
	res := e.call(ctx, "list_files", map[string]any{"path": "d"})
	wantOK(t, res)
	if !strings.Contains(res.OutputText(), `file "d/bad\xff.txt"  (4 B)`) {
		t.Errorf("invalid UTF-8 name not quoted:\n%s", res.OutputText())
	}
	if got := strings.Count(res.OutputText(), "\n") + 1; got != len(names) {
		t.Errorf("list_files of %d entries gave %d lines:\n%s", len(names), got, res.OutputText())
	}
	res = e.call(ctx, "grep_files", map[string]any{"path": "d", "pattern": "hit"})
	wantOK(t, res)
	if got := strings.Count(res.OutputText(), "\n") + 1; got != len(names) {
		t.Errorf("grep_files of %d matches gave %d lines:\n%s", len(names), got, res.OutputText())
	}
}
