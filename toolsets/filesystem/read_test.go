package filesystem

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/gateway"
)

// numbered renders lines first.. as read_file does.
func numbered(first int, lines ...string) string {
	var b strings.Builder
	for i, l := range lines {
		if i > 0 {
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "%6d\t%s", first+i, l)
	}
	return b.String()
}

func linesOf(n int, format string) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, format+"\n", i)
	}
	return b.String()
}

func TestReadFile(t *testing.T) {
	files := map[string]string{
		"a.txt":        "alpha\nbeta\n",
		"noeol.txt":    "one\ntwo",
		"crlf.txt":     "x\r\ny\r\n",
		"ten.txt":      linesOf(10, "line %d"),
		"empty.txt":    "",
		"dir/sub.txt":  "sub\n",
		"big.txt":      linesOf(53211, "%d"),
		"blank.txt":    "\n\n",
		"utf8.txt":     "héllo wörld\n",
		"five.txt":     "aaaa\nbbbb\ncccc\ndddd\neeee\n",
		"longline.txt": strings.Repeat("x", 25) + "\nshort\n",
		"runes.txt":    strings.Repeat("é", 8) + "\n", // 16 bytes of 2-byte runes
	}
	tests := []struct {
		name    string
		opts    *Options
		args    map[string]any
		out     string
		message string
		brief   string
	}{
		{name: "whole file", args: map[string]any{"path": "a.txt"},
			out: numbered(1, "alpha", "beta"), message: "Read lines 1-2 of 2 (whole file).", brief: "Read 2 lines of a.txt"},
		{name: "no final newline", args: map[string]any{"path": "noeol.txt"},
			out: numbered(1, "one", "two"), message: "Read lines 1-2 of 2 (whole file)."},
		{name: "crlf kept", args: map[string]any{"path": "crlf.txt"},
			out: numbered(1, "x\r", "y\r"), message: "Read lines 1-2 of 2 (whole file)."},
		{name: "blank lines", args: map[string]any{"path": "blank.txt"},
			out: numbered(1, "", ""), message: "Read lines 1-2 of 2 (whole file)."},
		{name: "utf8", args: map[string]any{"path": "utf8.txt"},
			out: numbered(1, "héllo wörld"), message: "Read lines 1-1 of 1 (whole file).", brief: "Read 1 line of utf8.txt"},
		{name: "offset and limit", args: map[string]any{"path": "ten.txt", "offset": 3, "limit": 2},
			out: numbered(3, "line 3", "line 4"), message: "Read lines 3-4 of 10 (truncated at 2 lines; continue with offset=5).", brief: "Read 2 lines of ten.txt"},
		{name: "offset to the end", args: map[string]any{"path": "ten.txt", "offset": 9},
			out: numbered(9, "line 9", "line 10"), message: "Read lines 9-10 of 10 (end of file)."},
		{name: "limit reaching the end exactly", args: map[string]any{"path": "ten.txt", "offset": 6, "limit": 5},
			out: numbered(6, "line 6", "line 7", "line 8", "line 9", "line 10"), message: "Read lines 6-10 of 10 (end of file)."},
		{name: "last line only", args: map[string]any{"path": "ten.txt", "offset": 10, "limit": 1},
			out: numbered(10, "line 10"), message: "Read lines 10-10 of 10 (end of file)."},
		{name: "default line limit", args: map[string]any{"path": "big.txt"},
			message: "Read lines 1-2000 of 53211 (truncated at 2000 lines; continue with offset=2001).", brief: "Read 2000 lines of big.txt"},
		{name: "default line limit from an offset", args: map[string]any{"path": "big.txt", "offset": 52001},
			message: "Read lines 52001-53211 of 53211 (end of file)."},
		{name: "configured line limit", opts: &Options{MaxReadLines: 4}, args: map[string]any{"path": "ten.txt"},
			out: numbered(1, "line 1", "line 2", "line 3", "line 4"), message: "Read lines 1-4 of 10 (truncated at 4 lines; continue with offset=5)."},
		{name: "byte limit on a line boundary", opts: &Options{MaxReadBytes: 12}, args: map[string]any{"path": "five.txt"},
			out: numbered(1, "aaaa", "bbbb"), message: "Read lines 1-2 of 5 (truncated at 12 bytes; continue with offset=3)."},
		{name: "byte limit exactly filled", opts: &Options{MaxReadBytes: 10}, args: map[string]any{"path": "five.txt", "offset": 4},
			out: numbered(4, "dddd", "eeee"), message: "Read lines 4-5 of 5 (end of file)."},
		{name: "line longer than the byte limit", opts: &Options{MaxReadBytes: 10}, args: map[string]any{"path": "longline.txt"},
			out:     numbered(1, strings.Repeat("x", 10)),
			message: "Read line 1 of 2, cut to its first 10 of 25 bytes (the line is longer than the 10-byte read limit); continue with offset=2.",
			brief:   "Read 1 line of longline.txt"},
		{name: "long line cut on a rune boundary", opts: &Options{MaxReadBytes: 9}, args: map[string]any{"path": "runes.txt"},
			out:     numbered(1, strings.Repeat("é", 4)),
			message: "Read line 1 of 1, cut to its first 8 of 16 bytes (the line is longer than the 9-byte read limit)."},
		{name: "line exactly the byte limit", opts: &Options{MaxReadBytes: 5}, args: map[string]any{"path": "longline.txt", "offset": 2},
			out: numbered(2, "short"), message: "Read lines 2-2 of 2 (end of file)."},
		{name: "empty file", args: map[string]any{"path": "empty.txt"},
			out: "", message: "empty.txt is empty (0 lines).", brief: "Read 0 lines of empty.txt (empty)"},
		{name: "subdirectory path", args: map[string]any{"path": "dir/sub.txt"},
			out: numbered(1, "sub"), brief: "Read 1 line of dir/sub.txt"},
		{name: "dot segments cleaned", args: map[string]any{"path": "./dir/../a.txt"},
			out: numbered(1, "alpha", "beta"), brief: "Read 2 lines of a.txt"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, tc.opts, files)
			res := e.call(context.Background(), "read_file", tc.args)
			wantOK(t, res)
			if tc.out != "" || tc.name == "empty file" {
				if got := res.OutputText(); got != tc.out {
					t.Errorf("output:\n%q\nwant:\n%q", got, tc.out)
				}
			}
			if tc.message != "" && res.Message != tc.message {
				t.Errorf("message = %q\nwant      %q", res.Message, tc.message)
			}
			if tc.brief != "" && res.Brief() != tc.brief {
				t.Errorf("brief = %q, want %q", res.Brief(), tc.brief)
			}
		})
	}
}

func TestReadFileBigOutputShape(t *testing.T) {
	e := newEnv(t, nil, map[string]string{"big.txt": linesOf(53211, "%d")})
	res := e.call(context.Background(), "read_file", map[string]any{"path": "big.txt", "offset": 2001, "limit": 3})
	wantOK(t, res)
	if got, want := res.OutputText(), numbered(2001, "2001", "2002", "2003"); got != want {
		t.Errorf("output %q, want %q", got, want)
	}
	if res.Extras["total_lines"] != 53211 || res.Extras["start_line"] != 2001 || res.Extras["end_line"] != 2003 || res.Extras["truncated"] != true || res.Extras["truncated_by"] != "lines" {
		t.Errorf("extras = %v", res.Extras)
	}
}

func TestReadFileErrors(t *testing.T) {
	e := newEnv(t, nil, map[string]string{"a.txt": "a\nb\n", "dir/x": "x"})
	ctx := context.Background()
	wantError(t, e.call(ctx, "read_file", map[string]any{"path": "a.txt", "offset": 3}),
		gateway.KindToolError, "offset 3 is past the end of a.txt, which has 2 lines")
	wantError(t, e.call(ctx, "read_file", map[string]any{"path": "dir"}),
		gateway.KindToolError, "dir is a directory", "list_files")
	wantError(t, e.call(ctx, "read_file", map[string]any{"path": "missing.txt"}),
		gateway.KindToolError, `path "missing.txt"`, "no such file")
	wantError(t, e.call(ctx, "read_file", map[string]any{"path": ""}),
		gateway.KindToolError, "empty path")
}

func TestReadFileValidation(t *testing.T) {
	e := newEnv(t, nil, map[string]string{"a.txt": "a\n"})
	ctx := context.Background()
	wantError(t, e.call(ctx, "read_file", map[string]any{"path": "a.txt", "limit": 5000}),
		gateway.KindInvalid, "at '/limit': maximum 2000, got 5000")
	wantError(t, e.call(ctx, "read_file", map[string]any{"path": "a.txt", "offset": 0}),
		gateway.KindInvalid, "at '/offset': minimum 1, got 0")
	wantError(t, e.call(ctx, "read_file", map[string]any{"offset": 2}),
		gateway.KindInvalid, "missing required property 'path'")
	wantError(t, e.call(ctx, "read_file", map[string]any{"path": "a.txt", "lines": 2}),
		gateway.KindInvalid, "unknown properties not allowed: 'lines'")
}

func pngBytes(t testing.TB, w, h int) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	r := rand.New(rand.NewPCG(uint64(w), uint64(h)))
	for x := range w {
		for y := range h {
			img.Set(x, y, color.RGBA{uint8(r.UintN(256)), uint8(r.UintN(256)), uint8(r.UintN(256)), 255})
		}
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestReadFileBinary(t *testing.T) {
	pic := pngBytes(t, 8, 8)
	big := pngBytes(t, 200, 200)
	rnd := make([]byte, 4096)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range rnd {
		rnd[i] = byte(r.UintN(256))
	}
	rnd[0] = 0xff // not a known signature
	// A text file whose 8 KiB sniff window ends inside a 2-byte rune.
	straddle := strings.Repeat("a", sniffLen-1) + "é\n"
	e := newEnv(t, &Options{MaxReadBytes: 16 << 10}, map[string]string{
		"nul.txt":      "text\x00more text\n",
		"pic.png":      string(pic),
		"big.png":      string(big),
		"random.bin":   string(rnd),
		"latin1.txt":   "caf\xe9\n",
		"straddle.txt": straddle,
		"doc.pdf":      "%PDF-1.4\n%\xe2\xe3\xcf\xd3\n",
	})
	ctx := context.Background()

	wantError(t, e.call(ctx, "read_file", map[string]any{"path": "nul.txt"}),
		gateway.KindToolError, "nul.txt is a binary file (15 bytes, detected type application/octet-stream)", "detected type application/octet-stream")
	wantError(t, e.call(ctx, "read_file", map[string]any{"path": "random.bin"}),
		gateway.KindToolError, "random.bin is a binary file (4.0 KiB (4096 bytes), detected type")
	wantError(t, e.call(ctx, "read_file", map[string]any{"path": "latin1.txt"}),
		gateway.KindToolError, "latin1.txt is a binary file")
	wantError(t, e.call(ctx, "read_file", map[string]any{"path": "doc.pdf"}),
		gateway.KindToolError, "binary", "application/pdf")

	res := e.call(ctx, "read_file", map[string]any{"path": "pic.png"})
	wantOK(t, res)
	if len(res.Output) != 1 {
		t.Fatalf("output = %v", res.Output)
	}
	img, ok := res.Output[0].(gateway.ImagePart)
	if !ok || img.MIMEType != "image/png" || !bytes.Equal(img.Data, pic) {
		t.Fatalf("want the PNG as an image part, got %T %v", res.Output[0], ok)
	}
	if !strings.Contains(res.Brief(), "pic.png") {
		t.Errorf("brief = %q", res.Brief())
	}

	if len(big) <= 16<<10 {
		t.Fatalf("test PNG too small: %d", len(big))
	}
	wantError(t, e.call(ctx, "read_file", map[string]any{"path": "big.png"}),
		gateway.KindToolError, "big.png is an image (image/png) of", "bytes), larger than the 16.0 KiB read limit")

	res = e.call(ctx, "read_file", map[string]any{"path": "straddle.txt"})
	wantOK(t, res)
	if !strings.HasSuffix(res.OutputText(), "aé") {
		t.Errorf("straddling rune lost: ...%q", res.OutputText()[len(res.OutputText())-10:])
	}
}

func TestSniff(t *testing.T) {
	tests := []struct {
		head         string
		whole        bool
		binary, img  bool
		mimeContains string
	}{
		{"plain text\n", true, false, false, "text/plain"},
		{"<html><body>x</body></html>", true, false, false, "text/html"},
		{"{\"json\": true}", true, false, false, "text/plain"},
		{"\x1b[31mred\x1b[0m\n", true, false, false, ""},
		{"ends in a cut rune \xc3", false, false, false, ""},
		{"ends in a cut rune \xc3", true, true, false, ""},
		{"GIF89a\x01\x00\x01\x00", true, true, true, "image/gif"},
		{"\xff\xd8\xff\xe0", true, true, true, "image/jpeg"},
		{"RIFF\x00\x00\x00\x00WEBPVP", true, true, true, "image/webp"},
		{"BM\x00\x00", true, true, false, "image/bmp"},
		{"PK\x03\x04", true, true, false, "application/zip"},
		{"%!PS-Adobe-3.0\n", true, false, false, "application/postscript"},
	}
	for _, tc := range tests {
		s := sniff([]byte(tc.head), tc.whole)
		if s.binary != tc.binary || s.image != tc.img || !strings.Contains(s.mime, tc.mimeContains) {
			t.Errorf("sniff(%q, %v) = %+v, want binary=%v image=%v mime~%q", tc.head, tc.whole, s, tc.binary, tc.img, tc.mimeContains)
		}
	}
}

// A huge file read a few lines at a time is not scanned to its end for
// the count: past countPast beyond the window the total is "at least",
// said in the extras and the message. The file is sparse (text, then a
// hole of 80 MiB), so the test writes almost nothing.
func TestReadFileHugeFileCountBounded(t *testing.T) {
	e := newEnv(t, nil, map[string]string{"huge.log": linesOf(2000, "line %d")})
	p := filepath.Join(e.root, "huge.log")
	if err := os.Truncate(p, 80<<20); err != nil {
		t.Fatal(err)
	}
	res := e.call(context.Background(), "read_file", map[string]any{"path": "huge.log", "limit": 10})
	wantOK(t, res)
	if got, want := res.OutputText(), numbered(1, strings.Split(linesOf(10, "line %d"), "\n")[:10]...); got != want {
		t.Errorf("output %q, want %q", got, want)
	}
	if _, ok := res.Extras["total_lines"]; ok || res.Extras["total_lines_at_least"] != 2000 || res.Extras["truncated_by"] != "lines" {
		t.Errorf("extras = %v, want total_lines_at_least 2000 and no total_lines", res.Extras)
	}
	if !strings.Contains(res.Message, "Read lines 1-10 of at least 2000 (truncated at 10 lines; continue with offset=11).") ||
		!strings.Contains(res.Message, "counted only up to 64.0 MiB past line 10") {
		t.Errorf("message %q", res.Message)
	}
}

// readLines counts to the end when the end is within countPast of the
// window, and says "at least" otherwise, also for a last line without a
// newline and a limit that ends exactly at the end.
func TestReadLinesCountPast(t *testing.T) {
	text := linesOf(50, "%02d") // 3 bytes a line
	for _, c := range []struct {
		name      string
		text      string
		countPast int64
		total     int
		counted   bool
		reason    string
	}{
		{"all counted", text, 1 << 20, 50, true, "lines"},
		{"exactly to the end", text, 40 * 3, 50, true, "lines"},
		{"one byte short", text, 40*3 - 1, 49, false, "lines"},
		{"stopped early", text, 30, 20, false, "lines"},
		{"partial last line counted", text + "x", 1 << 20, 51, true, "lines"},
		{"limit at the end", linesOf(10, "%02d"), 0, 10, true, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			w, err := readLines(context.Background(), strings.NewReader(c.text), 1, 10, 1<<20, c.countPast)
			if err != nil {
				t.Fatal(err)
			}
			if w.total != c.total || w.counted != c.counted || w.reason != c.reason || w.last != 10 {
				t.Errorf("total %d counted %v reason %q last %d; want %d %v %q 10", w.total, w.counted, w.reason, w.last, c.total, c.counted, c.reason)
			}
		})
	}
}
