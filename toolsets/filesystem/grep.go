package filesystem

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/toolgate/toolgate/gateway"
)

const (
	// maxMatchText is how much of a matching line is shown.
	maxMatchText = 500
	// progressEvery is how many files pass between progress reports.
	progressEvery = 200
)

type grepFilesParams struct {
	Pattern       string `json:"pattern" jsonschema:"maxLength=4096" jsonschema_description:"RE2 regular expression (Go regexp syntax) matched against each line; a literal string when fixed_string is true."`
	Path          string `json:"path,omitempty" jsonschema:"default=.,maxLength=4096" jsonschema_description:"Directory to search recursively, or a single file. Relative paths are relative to the first sandbox root."`
	Glob          string `json:"glob,omitempty" jsonschema:"maxLength=1024" jsonschema_description:"Only search files whose base name matches this glob (Go path.Match syntax, e.g. '*.go')."`
	IgnoreCase    bool   `json:"ignore_case,omitempty" jsonschema:"default=false" jsonschema_description:"Match case-insensitively."`
	MaxMatches    int    `json:"max_matches,omitempty" jsonschema:"minimum=1,maximum=1000,default=200" jsonschema_description:"Stop after this many matching lines."`
	FixedString   bool   `json:"fixed_string,omitempty" jsonschema:"default=false" jsonschema_description:"Treat pattern as a literal string, not a regular expression."`
	IncludeHidden bool   `json:"include_hidden,omitempty" jsonschema:"default=false" jsonschema_description:"Also search files and directories whose names start with '.'."`
}

func (t *toolset) grepFilesTool() (*gateway.Tool, error) {
	tool, err := gateway.NewTypedTool(gateway.ToolDef{
		Name:  "grep_files",
		Title: "Search files",
		Description: fmt.Sprintf("Search the text files under a directory of the sandbox for lines matching a regular "+
			"expression (RE2 syntax; or a literal with fixed_string). Output: one line per match, `path:line:text`, "+
			"paths relative to the sandbox root (Go-quoted if they hold a control character or invalid UTF-8), "+
			"in path order then line order; the text is cut at %d bytes. "+
			"Binary files (a NUL byte in the first 8 KiB), files over %s, hidden files and directories "+
			"(unless include_hidden) and symbolic links are not searched; the message gives the numbers of files "+
			"searched and skipped. Stops after max_matches (default %d) matching lines and says so.",
			maxMatchText, gateway.HumanSize(t.opts.MaxGrepFileSize), t.opts.MaxGrepMatches),
		Permissions: gateway.Permissions{Capabilities: []string{capRead}, Hints: gateway.ReadOnlyHints()},
	}, t.grepFiles)
	if err != nil {
		return nil, err
	}
	limit := max(maxGrepMatchesLimit, t.opts.MaxGrepMatches)
	if t.opts.MaxGrepMatches == DefaultMaxGrepMatches && limit == maxGrepMatchesLimit {
		return tool, nil
	}
	return patchSchema(tool, map[string]map[string]any{"max_matches": {"maximum": limit, "default": t.opts.MaxGrepMatches}})
}

func (t *toolset) grepFiles(ctx context.Context, in grepFilesParams) (*gateway.Result, error) {
	m, err := newMatcher(in.Pattern, in.FixedString, in.IgnoreCase)
	if err != nil {
		if errors.Is(err, errPatternTooLarge) {
			return gateway.Error(fmt.Sprintf("%v (the pattern has %d characters)", err, utf8.RuneCountInString(in.Pattern)), "Pattern too large"), nil
		}
		return gateway.Error(fmt.Sprintf("invalid regexp %q: %v", gateway.Truncate(in.Pattern, 200), err), "Invalid regexp"), nil
	}
	if in.Glob != "" {
		if _, err := path.Match(in.Glob, ""); err != nil {
			return gateway.Error(fmt.Sprintf("invalid glob %q: %v", in.Glob, err), "Invalid glob"), nil
		}
	}
	p := in.Path
	if p == "" {
		p = "."
	}
	root, rel, err := t.sb.Locate(p)
	if err != nil {
		return pathResult(p, err), nil
	}
	where := t.display(root, rel)
	if _, err := t.sb.Stat(p); err != nil {
		return pathResult(p, err), nil
	}
	fsys, name, err := t.sb.FS(p)
	if err != nil {
		return pathResult(p, err), nil
	}
	name = filepath.ToSlash(name)
	maxMatches := in.MaxMatches
	if maxMatches <= 0 {
		maxMatches = t.opts.MaxGrepMatches
	}

	// Walk once, collecting the files to search in path order, and the
	// directory each is in (workers open each directory once, see dirCache).
	var files []string
	var fileDirs []int
	var dirs []string
	dirIndex := map[string]int{}
	var walkErrs, visited int
	var firstWalkErr string
	err = walkDirs(fsys, name, func(p string, d fs.DirEntry, err error) error {
		if visited++; visited%256 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		if err != nil {
			if p == name {
				return err
			}
			if walkErrs++; firstWalkErr == "" {
				firstWalkErr = fmt.Sprintf("%s: %v", t.display(root, p), unwrapPathErr(err))
			}
			return nil
		}
		if p != name && !in.IncludeHidden && strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			dirIndex[p] = len(dirs)
			dirs = append(dirs, p)
			return nil
		}
		if !d.Type().IsRegular() {
			return nil // symlinks and special files are not searched
		}
		if p != name && in.Glob != "" && !matchBase(in.Glob, d.Name()) {
			return nil
		}
		dir, ok := dirIndex[path.Dir(p)]
		if !ok {
			dir = -1 // the searched path is this file
		}
		files = append(files, p)
		fileDirs = append(fileDirs, dir)
		return nil
	})
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return pathResult(p, err), nil
	}

	show := func(rel string) string { return t.display(root, rel) }
	job := &grepJob{fsys: fsys, files: files, m: m, maxSize: t.opts.MaxGrepFileSize, limit: maxMatches + 1, show: show,
		fileDirs: fileDirs, dirs: newDirCache(fsys, dirs, fileDirs)}
	s, err := job.run(ctx, maxMatches, func(done int) {
		gateway.ReportProgress(ctx, gateway.Progress{Progress: float64(done), Total: float64(len(files)),
			Message: fmt.Sprintf("searched %d of %d files", done, len(files))})
	})
	if err != nil {
		return nil, err
	}
	s.unreadable += walkErrs
	if s.firstUnreadable == "" {
		s.firstUnreadable = firstWalkErr
	}
	t.log.Debug("grep_files", "path", where, "files", len(files), "scanned", s.scanned, "matches", s.matches,
		"binary", s.binary, "too_large", s.tooLarge, "unreadable", s.unreadable, "truncated", s.truncated)
	return t.grepResult(in, root, where, maxMatches, len(files), s), nil
}

func (t *toolset) grepResult(in grepFilesParams, root int, where string, maxMatches, total int, s *grepStats) *gateway.Result {
	var out strings.Builder
	for i, f := range s.matchFiles {
		shown := quoteOdd(t.display(root, f))
		for _, m := range s.matchLines[i] {
			if out.Len() > 0 {
				out.WriteByte('\n')
			}
			out.WriteString(shown)
			out.WriteByte(':')
			out.WriteString(strconv.Itoa(m.line))
			out.WriteByte(':')
			out.WriteString(m.text)
		}
	}
	nFiles := len(s.matchFiles)
	what := "regexp"
	if in.FixedString {
		what = "string"
	}
	var msg strings.Builder
	switch {
	case s.truncated:
		fmt.Fprintf(&msg, "Showing the first %s in %s (max_matches=%d reached and more matches exist; narrow the pattern, path or glob, or raise max_matches up to %d). Searched %d of %d files under %s before stopping",
			gateway.Plural(s.matches, "match", "matches"), gateway.Plural(nFiles, "file", "files"), maxMatches, max(maxGrepMatchesLimit, t.opts.MaxGrepMatches), s.scanned, total, where)
	case s.matches == 0:
		// where last would end the sentence in ".." at the root (".").
		fmt.Fprintf(&msg, "No matches for %s %q under %s (searched %s)", what, in.Pattern, where, gateway.Plural(s.scanned, "file", "files"))
	default:
		fmt.Fprintf(&msg, "Found %s in %s (searched %s under %s)",
			gateway.Plural(s.matches, "match", "matches"), gateway.Plural(nFiles, "file", "files"), gateway.Plural(s.scanned, "file", "files"), where)
	}
	if skipped := s.binary + s.tooLarge + s.unreadable; skipped > 0 {
		var parts []string
		if s.binary > 0 {
			parts = append(parts, fmt.Sprintf("%d binary", s.binary))
		}
		if s.tooLarge > 0 {
			parts = append(parts, fmt.Sprintf("%d over %s", s.tooLarge, gateway.HumanSize(t.opts.MaxGrepFileSize)))
		}
		if s.unreadable > 0 {
			u := fmt.Sprintf("%d unreadable", s.unreadable)
			if s.firstUnreadable != "" {
				u += " (" + s.firstUnreadable + ")"
			}
			parts = append(parts, u)
		}
		fmt.Fprintf(&msg, "; skipped %d: %s", skipped, strings.Join(parts, ", "))
	}
	msg.WriteString(".")

	res := gateway.OkText(out.String())
	res.Message = msg.String()
	res.Extras = map[string]any{
		"matches": s.matches, "files_with_matches": nFiles, "files_total": total, "files_scanned": s.scanned,
		"skipped_binary": s.binary, "skipped_too_large": s.tooLarge, "skipped_unreadable": s.unreadable,
		"truncated": s.truncated,
	}
	var brief string
	switch {
	case s.matches == 0:
		brief = fmt.Sprintf("No matches in %s", gateway.Plural(s.scanned, "file", "files"))
	case s.truncated:
		brief = fmt.Sprintf("%d+ matches in %s", s.matches, gateway.Plural(nFiles, "file", "files"))
	default:
		brief = fmt.Sprintf("%s in %s", gateway.Plural(s.matches, "match", "matches"), gateway.Plural(nFiles, "file", "files"))
	}
	return res.WithBrief(brief)
}
