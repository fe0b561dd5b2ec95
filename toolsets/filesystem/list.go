package filesystem

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"path"
	"path/filepath"
	"strings"

	"github.com/toolgate/toolgate/gateway"
)

type listFilesParams struct {
	Path          string `json:"path,omitempty" jsonschema:"default=.,maxLength=4096" jsonschema_description:"Directory to list (or a single file). Relative paths are relative to the first sandbox root."`
	Recursive     bool   `json:"recursive,omitempty" jsonschema:"default=false" jsonschema_description:"List subdirectories' contents too."`
	MaxDepth      int    `json:"max_depth,omitempty" jsonschema:"minimum=0" jsonschema_description:"Levels to list: 1 = direct children only, 2 = children and grandchildren... Over 1 implies recursive. 0 or absent: unlimited when recursive, else 1."`
	IncludeHidden bool   `json:"include_hidden,omitempty" jsonschema:"default=false" jsonschema_description:"Include entries whose names start with '.' (and descend into such directories)."`
	Pattern       string `json:"pattern,omitempty" jsonschema:"maxLength=1024" jsonschema_description:"Only show entries whose base name matches this glob (Go path.Match syntax: * ? [a-z], e.g. '*.go'). Directories are still descended."`
}

func (t *toolset) listFilesTool() (*gateway.Tool, error) {
	return gateway.NewTypedTool(gateway.ToolDef{
		Name:  "list_files",
		Title: "List files",
		Description: fmt.Sprintf("List a directory in the sandbox, optionally recursively. One entry per line, "+
			"depth first and sorted by name within each directory, paths relative to the sandbox root "+
			"(ready to pass to read_file):\n"+
			"  dir  src/\n"+
			"  file src/main.go  (1.2 KiB)\n"+
			"  link src/current -> ../v2\n"+
			"  misc src/fifo  (named pipe)\n"+
			"Symbolic links are shown with their target and never followed. A path with a control character "+
			"(newline, tab...) or invalid UTF-8 is shown Go-quoted (\"src/new\\nline.txt\"). Hidden entries (names starting with '.') "+
			"are skipped unless include_hidden is set. At most %d entries are returned; the message says when the "+
			"listing was truncated.", t.opts.MaxListEntries) + t.rootsNote(),
		Permissions: gateway.Permissions{Capabilities: []string{capRead}, Hints: gateway.ReadOnlyHints()},
	}, t.listFiles)
}

// lister collects list_files entries.
type lister struct {
	t        *toolset
	fsys     fs.FS
	root     int
	max      int
	lines    []string
	counts   [4]int // dirs, files, links, other
	full     bool   // max reached and another entry was found
	hidden   int
	badDirs  int
	firstBad string
}

func (t *toolset) listFiles(ctx context.Context, in listFilesParams) (*gateway.Result, error) {
	p := in.Path
	if p == "" {
		p = "."
	}
	root, rel, err := t.sb.Locate(p)
	if err != nil {
		return pathResult(p, err), nil
	}
	where := t.display(root, rel)
	if in.Pattern != "" {
		if _, err := path.Match(in.Pattern, ""); err != nil {
			return gateway.Error(fmt.Sprintf("invalid pattern %q: %v", in.Pattern, err), "Invalid pattern"), nil
		}
	}
	fi, err := t.sb.Stat(p)
	if err != nil {
		return pathResult(p, err), nil
	}
	fsys, name, err := t.sb.FS(p)
	if err != nil {
		return pathResult(p, err), nil
	}
	name = filepath.ToSlash(name)
	depth := in.MaxDepth
	if depth <= 0 {
		depth = 1
		if in.Recursive {
			depth = math.MaxInt
		}
	}
	l := &lister{t: t, fsys: fsys, root: root, max: t.opts.MaxListEntries}

	if !fi.IsDir() {
		lfi, err := t.sb.Lstat(p)
		if err != nil {
			return pathResult(p, err), nil
		}
		l.add(name, fs.FileInfoToDirEntry(lfi))
		return l.result(where, in), nil
	}

	err = fs.WalkDir(fsys, name, func(p string, d fs.DirEntry, err error) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		if p == name {
			return err // the listed directory itself: only its errors matter
		}
		if err != nil {
			// A directory that could not be read; keep going.
			l.badDirs++
			if l.firstBad == "" {
				l.firstBad = fmt.Sprintf("%s: %v", t.display(root, p), unwrapPathErr(err))
			}
			return nil
		}
		if !in.IncludeHidden && strings.HasPrefix(d.Name(), ".") {
			l.hidden++
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if in.Pattern == "" || matchBase(in.Pattern, d.Name()) {
			if len(l.lines) == l.max {
				l.full = true
				return fs.SkipAll
			}
			l.add(p, d)
		}
		if d.IsDir() && levels(name, p) >= depth {
			return fs.SkipDir
		}
		return nil
	})
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return pathResult(p, err), nil
	}
	return l.result(where, in), nil
}

// levels is how deep p is below dir: 1 for a direct child.
func levels(dir, p string) int {
	if dir != "." {
		p = p[len(dir)+1:]
	}
	return strings.Count(p, "/") + 1
}

func matchBase(pattern, name string) bool {
	ok, _ := path.Match(pattern, name)
	return ok
}

// unwrapPathErr drops the *fs.PathError wrapper (whose path is root-relative
// and repeated in our messages anyway).
func unwrapPathErr(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// add formats one entry.
func (l *lister) add(p string, d fs.DirEntry) {
	shown := quoteOdd(l.t.display(l.root, p))
	t := d.Type()
	switch {
	case t.IsDir():
		l.counts[0]++
		l.lines = append(l.lines, "dir  "+shown+"/")
	case t&fs.ModeSymlink != 0:
		l.counts[2]++
		target, err := fs.ReadLink(l.fsys, p)
		if err != nil {
			target = "?"
		}
		l.lines = append(l.lines, "link "+shown+" -> "+quoteOdd(target))
	case t.IsRegular():
		l.counts[1]++
		size := "?"
		if info, err := d.Info(); err == nil {
			size = gateway.HumanSize(info.Size())
		}
		l.lines = append(l.lines, "file "+shown+"  ("+size+")")
	default:
		l.counts[3]++
		l.lines = append(l.lines, "misc "+shown+"  ("+typeName(t)+")")
	}
}

func typeName(t fs.FileMode) string {
	switch {
	case t&fs.ModeNamedPipe != 0:
		return "named pipe"
	case t&fs.ModeSocket != 0:
		return "socket"
	case t&fs.ModeCharDevice != 0:
		return "character device"
	case t&fs.ModeDevice != 0:
		return "device"
	default:
		return "irregular file"
	}
}

func (l *lister) result(where string, in listFilesParams) *gateway.Result {
	n := len(l.lines)
	var msg strings.Builder
	switch {
	case n == 0 && in.Pattern != "":
		fmt.Fprintf(&msg, "No entries in %s match pattern %q", where, in.Pattern)
	case n == 0:
		fmt.Fprintf(&msg, "%s is empty", where)
	case l.full:
		fmt.Fprintf(&msg, "Listed the first %d entries in %s (truncated at %d entries; list a subdirectory, lower max_depth or use pattern to see the rest)",
			n, where, l.max)
	default:
		kinds := []string{gateway.Plural(l.counts[0], "dir", "dirs"), gateway.Plural(l.counts[1], "file", "files"), gateway.Plural(l.counts[2], "link", "links")}
		if l.counts[3] > 0 {
			kinds = append(kinds, fmt.Sprintf("%d other", l.counts[3]))
		}
		fmt.Fprintf(&msg, "Listed %s in %s (%s)", gateway.Plural(n, "entry", "entries"), where, strings.Join(kinds, ", "))
	}
	if l.hidden > 0 {
		fmt.Fprintf(&msg, "; %s skipped (include_hidden shows them)", gateway.Plural(l.hidden, "hidden entry", "hidden entries"))
	}
	if l.badDirs > 0 {
		fmt.Fprintf(&msg, "; %s could not be read (%s)", gateway.Plural(l.badDirs, "directory", "directories"), l.firstBad)
	}
	msg.WriteString(".")
	res := gateway.OkText(strings.Join(l.lines, "\n"))
	res.Message = msg.String()
	res.Extras = map[string]any{"entries": n, "truncated": l.full, "hidden_skipped": l.hidden}
	brief := fmt.Sprintf("Listed %s in %s", gateway.Plural(n, "entry", "entries"), where)
	if l.full {
		brief += " (truncated)"
	}
	return res.WithBrief(brief)
}
