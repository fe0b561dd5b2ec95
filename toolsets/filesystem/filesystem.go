// Package filesystem is the built-in filesystem toolset: read_file,
// write_file, list_files and grep_files, confined to the roots of a
// [policy.Sandbox].
//
// Every path a tool receives goes through the sandbox, which refuses paths
// outside its roots, symlinks that leave a root, NUL bytes and writes through
// symlinks; those refusals come back as tool error results whose message is
// the sandbox's own (`path "../x": resolves outside the sandbox roots [...]`).
//
// Paths in outputs are shown relative to the sandbox root they belong to, so
// that they can be passed back to any tool as they are. With several roots,
// relative paths are relative to the first root; entries under the other
// roots are shown as absolute paths.
//
// Every read is bounded (lines and bytes for read_file, entries for
// list_files, matches and file size for grep_files), and every result says
// in its message what was returned and whether and why it was cut short,
// and has a brief ("Read 120 lines of a.txt", "42 matches in 17 files").
//
// Output formats:
//
//   - read_file: each line as `cat -n` prints it, the line number
//     right-aligned in 6 columns, a tab, the line ("     1	package main");
//     message "Read lines 1-2000 of 53211 (truncated at 2000 lines; continue
//     with offset=2001)." PNG, JPEG, GIF and WebP images come back as an
//     image part; other binary files are refused.
//   - write_file: no output; message "Wrote 12 bytes to a.txt (created)"
//     (or updated, unchanged) and a diff display block (unified, 3 lines of
//     context, GNU hunk headers, file headers --- a/PATH +++ b/PATH when the
//     file existed).
//   - list_files: one entry per line, depth first, by name in each
//     directory: "dir  src/", "file src/main.go  (1.2 KiB)",
//     "link src/cur -> ../v2", "misc src/fifo  (named pipe)".
//   - grep_files: "path:line:text" per matching line, in path then line
//     order, the text cut at 500 bytes (marked with "…").
//
// In list_files and grep_files lines, a path holding a control character
// (a newline, a tab...) or invalid UTF-8 is shown Go-quoted
// ("src/new\nline.txt"), so that every entry keeps to one line.
package filesystem

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/toolgate/toolgate/gateway"
	"github.com/toolgate/toolgate/policy"
)

// Defaults for [Options].
const (
	DefaultMaxReadBytes    = 256 << 10
	DefaultMaxReadLines    = 2000
	DefaultMaxListEntries  = 1000
	DefaultMaxGrepMatches  = 200
	DefaultMaxGrepFileSize = 8 << 20
	DefaultMaxOverwrite    = 64 << 20

	// capRead and capWrite are the capabilities the tools declare (the
	// policy package's fs.read and fs.write).
	capRead  = "fs.read"
	capWrite = "fs.write"

	// maxGrepMatchesLimit is the schema maximum of grep_files' max_matches
	// (raised to MaxGrepMatches if that is configured higher).
	maxGrepMatchesLimit = 1000
)

// Options configure the toolset. The zero value of each field is the default
// documented on it; a nil *Options is all defaults.
type Options struct {
	// MaxReadBytes bounds the file content read_file returns as text
	// (lines are never split, except a single line longer than the bound),
	// and the size of an image it returns. Default 256 KiB.
	MaxReadBytes int
	// MaxReadLines bounds the lines per read_file call; it is also the
	// default and the schema maximum of read_file's `limit`. Default 2000.
	MaxReadLines int
	// MaxListEntries bounds the entries list_files returns. Default 1000.
	MaxListEntries int
	// MaxGrepMatches is the default of grep_files' max_matches (whose
	// schema maximum is 1000). Default 200.
	MaxGrepMatches int
	// MaxGrepFileSize is the size above which grep_files skips a file (and
	// counts it as skipped). Default 8 MiB.
	MaxGrepFileSize int64
	// MaxOverwriteSize bounds the existing file write_file replaces: its
	// content is read whole, for the diff and the backup. Default 64 MiB.
	MaxOverwriteSize int64
	// Backups, if set, receives the previous content of every file
	// write_file overwrites, as an artifact of the call, so an overwrite
	// loses nothing. The artifact URI is in the result's extras under
	// "previous_version".
	Backups gateway.ArtifactStore
	// Logger receives the toolset's diagnostics. Nil discards them.
	Logger *slog.Logger
}

// toolset holds what the four tools share.
type toolset struct {
	sb    *policy.Sandbox
	opts  Options
	log   *slog.Logger
	roots []string // resolved absolute roots, slash-separated
}

// New returns the filesystem toolset, named "filesystem", over the sandbox
// sb. opts may be nil.
func New(sb *policy.Sandbox, opts *Options) (*gateway.SimpleToolset, error) {
	if sb == nil {
		return nil, errors.New("filesystem: nil sandbox")
	}
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.MaxReadBytes <= 0 {
		o.MaxReadBytes = DefaultMaxReadBytes
	}
	if o.MaxReadLines <= 0 {
		o.MaxReadLines = DefaultMaxReadLines
	}
	if o.MaxListEntries <= 0 {
		o.MaxListEntries = DefaultMaxListEntries
	}
	if o.MaxGrepMatches <= 0 {
		o.MaxGrepMatches = DefaultMaxGrepMatches
	}
	if o.MaxGrepFileSize <= 0 {
		o.MaxGrepFileSize = DefaultMaxGrepFileSize
	}
	if o.MaxOverwriteSize <= 0 {
		o.MaxOverwriteSize = DefaultMaxOverwrite
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	t := &toolset{sb: sb, opts: o, log: log}
	for _, r := range sb.Roots() {
		t.roots = append(t.roots, filepath.ToSlash(r))
	}

	read, err := t.readFileTool()
	if err != nil {
		return nil, err
	}
	write, err := t.writeFileTool()
	if err != nil {
		return nil, err
	}
	list, err := t.listFilesTool()
	if err != nil {
		return nil, err
	}
	grep, err := t.grepFilesTool()
	if err != nil {
		return nil, err
	}
	return gateway.NewToolset("filesystem", read, write, list, grep)
}

// display returns the path shown for rel (slash-separated, relative to root
// number root): rel itself under the first root, an absolute path under the
// others.
func (t *toolset) display(root int, rel string) string {
	if root <= 0 {
		return rel
	}
	return path.Join(t.roots[root], rel)
}

// quoteOdd returns a path for a line of list_files or grep_files output:
// as it is, or Go-quoted ("new\nline.txt") if it holds a control character
// or invalid UTF-8, so that each entry stays on its own line and a name
// cannot pass for other entries.
func quoteOdd(p string) string {
	if !utf8.ValidString(p) || strings.IndexFunc(p, unicode.IsControl) >= 0 {
		return strconv.Quote(p)
	}
	return p
}

// pathResult turns an error from the sandbox into a tool error result whose
// message is the sandbox's message (it names the path as given). Other
// errors are wrapped with the path.
func pathResult(p string, err error) *gateway.Result {
	var pe *policy.PathError
	if errors.As(err, &pe) {
		return gateway.Error(pe.Error(), pe.Error())
	}
	msg := fmt.Sprintf("path %q: %v", p, err)
	return gateway.Error(msg, msg)
}

// patchSchema returns tool with the given keywords of its input schema's
// properties replaced (property -> keyword -> value). The typed tool's
// handler is kept: it decodes the arguments whatever the schema says. It is
// how bounds that come from Options reach the schema, since struct tags are
// constants.
func patchSchema(tool *gateway.Tool, patches map[string]map[string]any) (*gateway.Tool, error) {
	var doc map[string]any
	if err := json.Unmarshal(tool.InputSchema, &doc); err != nil {
		return nil, fmt.Errorf("tool %q: decoding schema: %w", tool.Name, err)
	}
	props, _ := doc["properties"].(map[string]any)
	for prop, kv := range patches {
		p, ok := props[prop].(map[string]any)
		if !ok {
			return nil, fmt.Errorf("tool %q: schema has no property %q", tool.Name, prop)
		}
		for k, v := range kv {
			p[k] = v
		}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(doc); err != nil {
		return nil, fmt.Errorf("tool %q: encoding schema: %w", tool.Name, err)
	}
	return gateway.NewTool(gateway.ToolDef{
		Name:         tool.Name,
		Title:        tool.Title,
		Description:  tool.Description,
		InputSchema:  bytes.TrimSpace(buf.Bytes()),
		OutputSchema: tool.OutputSchema,
		Permissions:  tool.Permissions,
		Timeout:      tool.Timeout,
		Meta:         tool.Meta,
	}, tool.Handler())
}

// sizeDesc is a size for a message: "15 bytes", "1.2 MiB (1234567 bytes)".
func sizeDesc(n int64) string {
	if n < 1<<10 {
		return gateway.Plural(int(n), "byte", "bytes")
	}
	return fmt.Sprintf("%s (%s)", gateway.HumanSize(n), gateway.Plural(int(n), "byte", "bytes"))
}

// rootsNote names the sandbox roots in a tool's description, so that the
// model (and the person reading over its shoulder) knows where files go.
func (t *toolset) rootsNote() string {
	if len(t.roots) == 1 {
		return " The sandbox root is " + t.roots[0] + "."
	}
	return " The sandbox roots are " + strings.Join(t.roots, ", ") + "; relative paths are relative to the first."
}
