package filesystem

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/toolgate/toolgate/gateway"
)

// sniffLen is how much of a file is examined to tell text from binary.
const sniffLen = 8 << 10

type readFileParams struct {
	Path   string `json:"path" jsonschema:"maxLength=4096" jsonschema_description:"File to read. Relative paths are relative to the first sandbox root; absolute paths must be inside a sandbox root."`
	Offset int    `json:"offset,omitempty" jsonschema:"minimum=1,default=1" jsonschema_description:"1-based number of the first line to return."`
	Limit  int    `json:"limit,omitempty" jsonschema:"minimum=1,maximum=2000,default=2000" jsonschema_description:"Maximum number of lines to return."`
}

func (t *toolset) readFileTool() (*gateway.Tool, error) {
	max := t.opts.MaxReadLines
	tool, err := gateway.NewTypedTool(gateway.ToolDef{
		Name:  "read_file",
		Title: "Read file",
		Description: fmt.Sprintf("Read a text file in the sandbox. Returns the lines from `offset` (1-based, default 1), "+
			"at most `limit` lines (default and maximum %d) and at most %s of text, cut on a line boundary. "+
			"Each line is prefixed with its line number, right-aligned in 6 columns, and a tab (like `cat -n`); "+
			"the line-number prefix is not part of the file. "+
			"The message says which lines were returned, how many the file has (at least how many, for a file that goes on "+
			"more than "+gateway.HumanSize(countPast)+" past them), and when the output was truncated, "+
			"the offset to continue from. PNG, JPEG, GIF and WebP images (up to %s) are returned as images; "+
			"other binary files are refused with their size and detected type. Use list_files for directories.",
			max, gateway.HumanSize(int64(t.opts.MaxReadBytes)), gateway.HumanSize(int64(t.opts.MaxReadBytes))),
		Permissions: gateway.Permissions{Capabilities: []string{capRead}, Hints: gateway.ReadOnlyHints()},
	}, t.readFile)
	if err != nil || max == DefaultMaxReadLines {
		return tool, err
	}
	return patchSchema(tool, map[string]map[string]any{"limit": {"maximum": max, "default": max}})
}

func (t *toolset) readFile(ctx context.Context, in readFileParams) (*gateway.Result, error) {
	root, rel, err := t.sb.Locate(in.Path)
	if err != nil {
		return pathResult(in.Path, err), nil
	}
	name := t.display(root, rel)
	fi, err := t.sb.Stat(in.Path)
	if err != nil {
		return pathResult(in.Path, err), nil
	}
	if fi.IsDir() {
		return gateway.Error(
			fmt.Sprintf("%s is a directory, not a file; use list_files to see what it contains", name),
			fmt.Sprintf("%s is a directory", name)), nil
	}
	if !fi.Mode().IsRegular() {
		// Opening a FIFO would block; devices and sockets are not files to read.
		return gateway.Error(
			fmt.Sprintf("%s is not a regular file (%s); read_file only reads regular files", name, fi.Mode().Type()),
			fmt.Sprintf("%s is not a regular file", name)), nil
	}
	f, err := t.sb.Open(in.Path)
	if err != nil {
		return pathResult(in.Path, err), nil
	}
	defer f.Close()
	if fi, err = f.Stat(); err != nil {
		return pathResult(in.Path, err), nil
	}
	if !fi.Mode().IsRegular() {
		return gateway.Errorf("%s is not a regular file", name), nil
	}
	size := fi.Size()

	head := make([]byte, sniffLen)
	n, err := io.ReadFull(f, head)
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
		return pathResult(in.Path, err), nil
	}
	head = head[:n]
	whole := n < sniffLen
	kind := sniff(head, whole)

	max := t.opts.MaxReadBytes
	switch {
	case kind.image:
		if size > int64(max) {
			return gateway.Error(
				fmt.Sprintf("%s is an image (%s) of %s, larger than the %s read limit; it was not returned",
					name, kind.mime, sizeDesc(size), gateway.HumanSize(int64(max))),
				fmt.Sprintf("Image %s too large (%s)", name, gateway.HumanSize(size))), nil
		}
		rest, err := io.ReadAll(io.LimitReader(f, int64(max)+1-int64(n)))
		if err != nil {
			return pathResult(in.Path, err), nil
		}
		data := append(head, rest...)
		if len(data) > max {
			return gateway.Errorf("%s grew past the %s read limit while being read", name, gateway.HumanSize(int64(max))), nil
		}
		res := gateway.Ok(gateway.ImagePart{Data: data, MIMEType: kind.mime})
		res.Message = fmt.Sprintf("%s is an image (%s) of %s, returned as an image.", name, kind.mime, sizeDesc(int64(len(data))))
		return res.WithBrief(fmt.Sprintf("Read image %s (%s)", name, gateway.HumanSize(int64(len(data))))), nil
	case kind.binary:
		return gateway.Error(
			fmt.Sprintf("%s is a binary file (%s, detected type %s); read_file only returns text files and PNG, JPEG, GIF or WebP images",
				name, sizeDesc(size), kind.mime),
			fmt.Sprintf("%s is binary (%s)", name, kind.mime)), nil
	}

	offset := max1(in.Offset)
	limit := in.Limit
	if limit <= 0 || limit > t.opts.MaxReadLines {
		limit = t.opts.MaxReadLines
	}
	w, err := readLines(ctx, io.MultiReader(bytes.NewReader(head), f), offset, limit, max, countPast)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return pathResult(in.Path, err), nil
	}
	return readResult(name, offset, limit, max, w), nil
}

// window is what readLines took from a file.
type window struct {
	text    strings.Builder // numbered lines, each ending in "\n"
	first   int             // number of the first line returned (0 if none)
	last    int             // number of the last line returned (0 if none)
	total   int             // lines in the file, or at least, when !counted
	counted bool            // total is every line of the file
	reason  string          // "" (not cut short), "lines", "bytes" or "cutline"
	cutLen  int             // for "cutline": bytes of the line returned
	lineLen int             // for "cutline": the line's full length
}

// countPast is how much of a file read_file reads past the lines it
// returns only to count the rest: enough for any file a person would page
// through (tens of milliseconds from the page cache), while a
// multi-gigabyte log read 10 lines at a time does not cost a scan of the
// whole file per call, which from a cold disk could outlast the call's
// deadline. Past it, the total is given as "at least".
const countPast = 64 << 20

// readLines reads r and returns lines offset .. offset+limit-1, taking at
// most budget bytes of file content (newlines included), and counts the
// lines of r, reading at most countLimit bytes past the window to do so
// (w.counted says whether it reached the end). A line longer than budget
// on its own is returned cut to budget bytes (on a UTF-8 boundary);
// otherwise lines are never split.
func readLines(ctx context.Context, r io.Reader, offset, limit, budget int, countLimit int64) (*window, error) {
	w := &window{}
	br := bufio.NewReaderSize(r, 64<<10)
	lastWanted := offset + limit - 1
	collecting := true
	used := 0
	var cur []byte // the current line's kept bytes (at most budget+1)
	curLen := 0    // the current line's full length
	var sinceCheck int

	// finish ends line n; complete says whether it ended with a newline.
	finish := func(n int, complete bool) {
		defer func() { cur, curLen = cur[:0], 0 }()
		contentLen := curLen - boolInt(complete)
		// cur holds the whole line whenever it fits: it keeps budget+1 bytes.
		if used+curLen <= budget || (w.first == 0 && contentLen <= budget) {
			writeNumbered(&w.text, n, cur[:contentLen])
			used += curLen
			if w.first == 0 {
				w.first = n
			}
			w.last = n
			if n == lastWanted {
				collecting = false
				w.reason = "lines"
			}
			return
		}
		collecting = false
		if w.first != 0 {
			w.reason = "bytes"
			return
		}
		// The first line alone is over the budget: return its head, cut
		// on a UTF-8 boundary.
		keep := cur[:budget]
		for len(keep) > 0 && !utf8.RuneStart(cur[len(keep)]) {
			keep = keep[:len(keep)-1]
		}
		writeNumbered(&w.text, n, keep)
		w.first, w.last = n, n
		w.reason, w.cutLen, w.lineLen = "cutline", len(keep), contentLen
	}

	lines := 0 // complete lines read so far
	partial := false
	counted := true // lines is every line of r, once r is read
	for {
		frag, err := br.ReadSlice('\n')
		if len(frag) > 0 {
			partial = true
			n := lines + 1
			if collecting && n >= offset {
				if room := budget + 1 - len(cur); room > 0 {
					cur = append(cur, frag[:min(room, len(frag))]...)
				}
				curLen += len(frag)
			}
			if frag[len(frag)-1] == '\n' {
				lines++
				partial = false
				if collecting && n >= offset {
					finish(n, true)
				}
			}
			if sinceCheck += len(frag); sinceCheck >= 1<<20 {
				sinceCheck = 0
				if err := ctx.Err(); err != nil {
					return nil, err
				}
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		if !collecting {
			// The window is taken, at a line's end: the rest is only
			// counted, a block at a time.
			n, partialEnd, all, err := countLines(ctx, br, countLimit)
			if err != nil {
				return nil, err
			}
			lines, partial, counted = lines+n, partialEnd, all
			break
		}
	}
	if partial { // a last line without a newline
		lines++
		if collecting && lines >= offset {
			finish(lines, false)
		}
	}
	w.total, w.counted = lines, counted
	if w.reason == "lines" && counted && w.last == w.total {
		w.reason = "" // the limit and the end of the file coincide
	}
	return w, nil
}

// countLines counts the lines left in br, reading at most limit bytes:
// n complete lines, partialEnd when br ends in a line without a newline,
// and counted when it reached the end.
func countLines(ctx context.Context, br *bufio.Reader, limit int64) (n int, partialEnd, counted bool, err error) {
	var read, sinceCheck int64
	last := byte('\n')
	for read < limit {
		// The reader's own buffer, a block at a time: no copy of ours.
		b, err := br.Peek(int(min(int64(br.Size()), limit-read)))
		if len(b) > 0 {
			n += bytes.Count(b, []byte{'\n'})
			last = b[len(b)-1]
			read += int64(len(b))
			_, _ = br.Discard(len(b))
			if sinceCheck += int64(len(b)); sinceCheck >= 1<<20 {
				sinceCheck = 0
				if err := ctx.Err(); err != nil {
					return 0, false, false, err
				}
			}
		}
		if errors.Is(err, io.EOF) {
			return n, last != '\n', true, nil
		}
		if err != nil {
			return 0, false, false, err
		}
	}
	// The limit reached: the end if nothing is left.
	if _, err := br.Peek(1); errors.Is(err, io.EOF) {
		return n, last != '\n', true, nil
	}
	return n, false, false, nil
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// writeNumbered writes one line as `cat -n` does: the number right-aligned
// in 6 columns, a tab, the line, a newline. A trailing "\r" is kept.
func writeNumbered(b *strings.Builder, n int, line []byte) {
	num := strconv.Itoa(n)
	for i := len(num); i < 6; i++ {
		b.WriteByte(' ')
	}
	b.WriteString(num)
	b.WriteByte('\t')
	b.Write(line)
	b.WriteByte('\n')
}

// readResult builds read_file's result from a window.
func readResult(name string, offset, limit, budget int, w *window) *gateway.Result {
	// truncated is a boolean in every filesystem tool; what cut the window
	// short ("lines", "bytes") is truncated_by.
	extras := map[string]any{"start_line": w.first, "end_line": w.last, "truncated": w.reason != ""}
	if w.reason != "" {
		extras["truncated_by"] = w.reason
	}
	// of is the file's line count as the messages give it.
	of := strconv.Itoa(w.total)
	if w.counted {
		extras["total_lines"] = w.total
	} else {
		extras["total_lines_at_least"] = w.total
		of = "at least " + of
	}
	if w.total == 0 {
		res := gateway.OkText("")
		res.Message = fmt.Sprintf("%s is empty (0 lines).", name)
		res.Extras = extras
		return res.WithBrief(fmt.Sprintf("Read 0 lines of %s (empty)", name))
	}
	if w.first == 0 {
		res := gateway.Error(
			fmt.Sprintf("offset %d is past the end of %s, which has %s", offset, name, gateway.Plural(w.total, "line", "lines")),
			fmt.Sprintf("Offset past the end of %s", name))
		res.Extras = extras
		return res
	}
	var msg string
	switch w.reason {
	case "":
		switch {
		case w.first == 1:
			msg = fmt.Sprintf("Read lines 1-%d of %d (whole file).", w.last, w.total)
		default:
			msg = fmt.Sprintf("Read lines %d-%d of %d (end of file).", w.first, w.last, w.total)
		}
	case "lines":
		msg = fmt.Sprintf("Read lines %d-%d of %s (truncated at %d lines; continue with offset=%d).", w.first, w.last, of, limit, w.last+1)
	case "bytes":
		msg = fmt.Sprintf("Read lines %d-%d of %s (truncated at %d bytes; continue with offset=%d).", w.first, w.last, of, budget, w.last+1)
	case "cutline":
		msg = fmt.Sprintf("Read line %d of %s, cut to its first %d of %d bytes (the line is longer than the %d-byte read limit)", w.first, of, w.cutLen, w.lineLen, budget)
		if w.first < w.total {
			msg += fmt.Sprintf("; continue with offset=%d", w.first+1)
		}
		msg += "."
	}
	if !w.counted {
		msg += fmt.Sprintf(" The file goes on: its lines were counted only up to %s past line %d.", gateway.HumanSize(countPast), w.last)
	}
	text := strings.TrimSuffix(w.text.String(), "\n")
	res := gateway.OkText(text)
	res.Message = msg
	res.Extras = extras
	return res.WithBrief(fmt.Sprintf("Read %s of %s", gateway.Plural(w.last-w.first+1, "line", "lines"), name))
}

func max1(n int) int {
	if n < 1 {
		return 1
	}
	return n
}

// sniffed is what sniff found out about a file from its first bytes.
type sniffed struct {
	mime   string // http.DetectContentType's answer
	image  bool   // an image read_file returns as an image part
	binary bool   // not text
}

// Images read_file returns as image parts.
var returnedImages = map[string]bool{"image/png": true, "image/jpeg": true, "image/gif": true, "image/webp": true}

// sniff classifies a file by its first bytes. head is the whole file when
// whole is true; otherwise an incomplete UTF-8 sequence at its end is
// ignored. A file is binary if head holds a NUL byte or invalid UTF-8, or if
// its signature is that of a binary format (images, audio, video, fonts,
// archives, PDF).
func sniff(head []byte, whole bool) sniffed {
	s := sniffed{mime: http.DetectContentType(head)}
	mediaType, _, _ := strings.Cut(s.mime, ";")
	s.image = returnedImages[mediaType]
	s.binary = s.image || bytes.IndexByte(head, 0) >= 0 || !validUTF8Head(head, whole) || binaryMIME(mediaType)
	return s
}

// validUTF8Head reports whether head is valid UTF-8, ignoring a sequence cut
// off at the end when head is not the whole file.
func validUTF8Head(head []byte, whole bool) bool {
	if !whole {
		for i := len(head) - 1; i >= 0 && i >= len(head)-utf8.UTFMax; i-- {
			if utf8.RuneStart(head[i]) {
				if !utf8.FullRune(head[i:]) {
					head = head[:i]
				}
				break
			}
		}
	}
	return utf8.Valid(head)
}

func binaryMIME(mediaType string) bool {
	for _, p := range []string{"image/", "audio/", "video/", "font/"} {
		if strings.HasPrefix(mediaType, p) {
			return true
		}
	}
	switch mediaType {
	case "application/pdf", "application/zip", "application/x-gzip", "application/x-rar-compressed",
		"application/wasm", "application/ogg", "application/vnd.ms-fontobject":
		return true
	}
	return false
}
