package skills

import (
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/toolgate/toolgate/adapters/yamlerr"
	"go.yaml.in/yaml/v3"
)

const skillFile = "SKILL.md"

var (
	// Both names are up to 64 bytes, checked apart (validName): a counted
	// repetition compiles to a copy of its class per count.
	nameRE       = regexp.MustCompile(`^[a-z0-9-]+$`)
	capabilityRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)
	yamlLineRE   = regexp.MustCompile(`line (\d+)`)
)

// validName reports whether s matches re and is at most 64 bytes.
func validName(re *regexp.Regexp, s string) bool { return len(s) <= 64 && re.MatchString(s) }

// fingerprint hashes what a change check looks at: each directory, the
// non-hidden entries in it, and each entry's SKILL.md (mode, size and
// modification time, through and not through symbolic links).
func (t *Toolset) fingerprint() uint64 {
	h := fnv.New64a()
	stat := func(fi os.FileInfo, err error) {
		if err != nil {
			fmt.Fprintf(h, "!%v|", errors.Is(err, fs.ErrNotExist))
			return
		}
		fmt.Fprintf(h, "%v %d %d|", fi.Mode(), fi.Size(), fi.ModTime().UnixNano())
	}
	for _, dir := range t.dirs {
		fmt.Fprintf(h, "D%s|", dir)
		stat(os.Stat(dir))
		entries, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		for _, e := range entries {
			if hidden(e.Name()) {
				continue
			}
			folder := filepath.Join(dir, e.Name())
			fmt.Fprintf(h, "E%s|", e.Name())
			stat(os.Stat(folder))
			stat(os.Lstat(filepath.Join(folder, skillFile)))
			stat(os.Stat(filepath.Join(folder, skillFile)))
		}
	}
	return h.Sum64()
}

// scan reads every skill directory and returns the new state.
func (t *Toolset) scan() *state {
	s := &state{byName: map[string]*skill{}, broken: map[string][]Problem{}}
	for _, dir := range t.dirs {
		fi, err := os.Stat(dir)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			s.problems = append(s.problems, Problem{dir, "skill directory does not exist"})
			continue
		case err != nil:
			s.problems = append(s.problems, Problem{dir, "cannot read skill directory: " + errText(err)})
			continue
		case !fi.IsDir():
			s.problems = append(s.problems, Problem{dir, "skill directory is not a directory"})
			continue
		}
		entries, err := os.ReadDir(dir)
		if err != nil {
			s.problems = append(s.problems, Problem{dir, "cannot read skill directory: " + errText(err)})
			// ReadDir returns the entries it read before the error.
		}
		for _, e := range entries {
			if hidden(e.Name()) {
				continue
			}
			folder := filepath.Join(dir, e.Name())
			if !e.IsDir() {
				// A link to a folder is a skill folder too (the link is
				// the operator's, in a directory the operator chose);
				// plain files beside the skill folders are ignored.
				if e.Type()&fs.ModeSymlink == 0 {
					continue
				}
				if fi, err := os.Stat(folder); err != nil || !fi.IsDir() {
					continue
				}
			}
			t.add(s, t.load(folder))
		}
	}
	sort.Slice(s.skills, func(i, j int) bool { return s.skills[i].name < s.skills[j].name })
	return s
}

// add files sk into s: under its name if it has a valid one that is not
// taken, else as a problem.
func (t *Toolset) add(s *state, sk *skill) {
	s.problems = append(s.problems, sk.problems...)
	if !validName(nameRE, sk.name) {
		// No usable name: load_skill can still explain, by folder name
		// or by the name as written.
		probs := sk.problems
		for _, key := range []string{filepath.Base(sk.folder), sk.name} {
			if key != "" {
				s.broken[key] = append(s.broken[key], probs...)
			}
		}
		return
	}
	if first, ok := s.byName[sk.name]; ok {
		s.problems = append(s.problems, Problem{sk.file, fmt.Sprintf(
			"duplicate skill name %q: %s already defines it and keeps it; this skill is ignored", sk.name, first.file)})
		return
	}
	s.byName[sk.name] = sk
	if len(sk.problems) == 0 {
		s.skills = append(s.skills, sk)
	}
}

// load reads one skill folder. Whatever goes wrong is recorded in the
// skill's problems; the name is filled in whenever the front matter could
// be read, so that load_skill can name the problem.
func (t *Toolset) load(folder string) *skill {
	sk := &skill{folder: folder, file: filepath.Join(folder, skillFile)}
	problem := func(p, format string, args ...any) {
		sk.problems = append(sk.problems, Problem{p, fmt.Sprintf(format, args...)})
	}
	root, err := os.OpenRoot(folder)
	if err != nil {
		problem(folder, "cannot open skill folder: %s", errText(err))
		return sk
	}
	defer root.Close()

	data, ok := t.readSkillFile(root, sk, problem)
	if ok {
		t.parse(sk, data, problem)
	}
	t.listResources(root, sk, problem)
	return sk
}

// readSkillFile reads SKILL.md through root, which refuses any path (and
// any symbolic link) that leads outside the folder.
func (t *Toolset) readSkillFile(root *os.Root, sk *skill, problem func(string, string, ...any)) ([]byte, bool) {
	fi, err := root.Lstat(skillFile)
	if errors.Is(err, fs.ErrNotExist) {
		problem(sk.folder, "no %s in skill folder", skillFile)
		return nil, false
	}
	if err != nil {
		problem(sk.file, "cannot read %s: %s", skillFile, errText(err))
		return nil, false
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		if msg := linkProblem(root, skillFile); msg != "" {
			problem(sk.file, "%s", msg)
			return nil, false
		}
		if fi, err = root.Stat(skillFile); err != nil {
			problem(sk.file, "cannot read %s: %s", skillFile, errText(err))
			return nil, false
		}
	}
	// Checked before opening: opening a named pipe waits for a writer,
	// which would block the scan (and New, and every rescan) for good.
	if !fi.Mode().IsRegular() {
		problem(sk.file, "%s is not a regular file", skillFile)
		return nil, false
	}
	f, err := root.Open(skillFile)
	if err != nil {
		problem(sk.file, "cannot read %s: %s", skillFile, errText(err))
		return nil, false
	}
	defer f.Close()
	if fi, err = f.Stat(); err != nil {
		problem(sk.file, "cannot read %s: %s", skillFile, errText(err))
		return nil, false
	}
	if !fi.Mode().IsRegular() {
		problem(sk.file, "%s is not a regular file", skillFile)
		return nil, false
	}
	max := t.opts.MaxBodyBytes
	if fi.Size() > int64(max) {
		problem(sk.file, "%s is %d bytes, over the limit of %d bytes", skillFile, fi.Size(), max)
		return nil, false
	}
	data, err := io.ReadAll(io.LimitReader(f, int64(max)+1))
	if err != nil {
		problem(sk.file, "cannot read %s: %s", skillFile, errText(err))
		return nil, false
	}
	if len(data) > max {
		problem(sk.file, "%s is over the limit of %d bytes", skillFile, max)
		return nil, false
	}
	return data, true
}

// linkProblem says what is wrong with the symbolic link at name (relative
// to root), or "" if it resolves inside root.
func linkProblem(root *os.Root, name string) string {
	target, _ := root.Readlink(name)
	_, err := root.Stat(name)
	switch {
	case err == nil:
		return ""
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Sprintf("%q is a symbolic link to %q, which does not exist", name, target)
	case errors.Is(err, fs.ErrPermission):
		return fmt.Sprintf("%q is a symbolic link to %q, which cannot be read: %s", name, target, errText(err))
	case filepath.IsAbs(target):
		return fmt.Sprintf("%q is a symbolic link to the absolute path %q: links in a skill folder must be relative and stay inside it", name, target)
	default:
		return fmt.Sprintf("%q is a symbolic link to %q, which resolves outside the skill folder", name, target)
	}
}

// parse splits SKILL.md into front matter and body and reads the front
// matter's fields into sk.
func (t *Toolset) parse(sk *skill, data []byte, problem func(string, string, ...any)) {
	if !utf8.Valid(data) {
		problem(sk.file, "%s is not valid UTF-8", skillFile)
		return
	}
	text := strings.TrimPrefix(string(data), "\uFEFF")
	if strings.TrimSpace(text) == "" {
		problem(sk.file, "%s is empty", skillFile)
		return
	}
	front, body, err := splitFrontMatter(text)
	if err != nil {
		problem(sk.file, "%s", err.Error())
		return
	}
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(front), &doc); err != nil {
		problem(sk.file, "front matter is not valid YAML: %s", shiftLines(strings.TrimPrefix(yamlerr.Place([]byte(front), err).Error(), "yaml: ")))
		return
	}
	sk.body = body
	var fields *yaml.Node
	if len(doc.Content) > 0 {
		fields = doc.Content[0]
		if fields.Kind != yaml.MappingNode {
			if fields.Kind == yaml.ScalarNode && fields.Tag == "!!null" {
				fields = nil
			} else {
				problem(sk.file, "front matter must be a YAML mapping of fields (name: ..., description: ...), got %s", nodeKind(fields))
				return
			}
		}
	}
	var nameSet, descSet bool
	seen := map[string]bool{}
	for i := 0; fields != nil && i+1 < len(fields.Content); i += 2 {
		k, v := fields.Content[i], fields.Content[i+1]
		if v.Kind == yaml.AliasNode && v.Alias != nil {
			v = v.Alias
		}
		key := k.Value
		if key == "allowed-tools" {
			key = "allowed_tools"
		}
		switch key {
		case "name", "description", "capabilities", "allowed_tools":
		default:
			continue // other fields (license, metadata...) are not ours
		}
		if seen[key] {
			problem(sk.file, "front matter line %d: %s is given twice", k.Line+1, k.Value)
			continue
		}
		seen[key] = true
		switch key {
		case "name":
			s, err := scalar(v)
			if err != nil {
				problem(sk.file, "front matter line %d: name %s", v.Line+1, err)
				continue
			}
			sk.name, nameSet = strings.TrimSpace(s), true
		case "description":
			s, err := scalar(v)
			if err != nil {
				problem(sk.file, "front matter line %d: description %s", v.Line+1, err)
				continue
			}
			sk.description, descSet = strings.TrimSpace(s), true
		case "capabilities":
			list, err := stringList(v, false)
			if err != nil {
				problem(sk.file, "front matter line %d: capabilities %s", v.Line+1, err)
				continue
			}
			for _, c := range list {
				if !validName(capabilityRE, c) {
					problem(sk.file, "front matter line %d: capability %q is not a capability name (such as net or fs.write)", v.Line+1, c)
					continue
				}
				if !slices.Contains(sk.capabilities, c) {
					sk.capabilities = append(sk.capabilities, c)
				}
			}
		case "allowed_tools":
			list, err := stringList(v, true)
			if err != nil {
				problem(sk.file, "front matter line %d: %s %s", v.Line+1, k.Value, err)
				continue
			}
			sk.allowedTools = list
		}
	}
	switch {
	case !nameSet || sk.name == "":
		problem(sk.file, "front matter has no name")
	case !validName(nameRE, sk.name):
		problem(sk.file, "name %q is invalid: use 1 to 64 characters of a-z, 0-9 and -", sk.name)
	}
	switch n := utf8.RuneCountInString(sk.description); {
	case !descSet || n == 0:
		problem(sk.file, "front matter has no description")
	case n > MaxDescription:
		problem(sk.file, "description is %d characters, over the limit of %d", n, MaxDescription)
	}
}

// splitFrontMatter splits text (a whole SKILL.md) at its front matter
// fences: a first line of "---" and the next line of "---". The body has
// its leading blank lines and trailing white space removed.
func splitFrontMatter(text string) (front, body string, err error) {
	first, rest, _ := strings.Cut(text, "\n")
	if strings.TrimRight(first, " \t\r") != "---" {
		return "", "", errors.New(`SKILL.md must start with YAML front matter: a line "---", the fields, and another line "---"`)
	}
	for off := 0; off < len(rest); {
		line, _, _ := strings.Cut(rest[off:], "\n")
		if strings.TrimRight(line, " \t\r") == "---" {
			front = rest[:off]
			body = rest[min(off+len(line)+1, len(rest)):]
			body = strings.TrimLeft(body, "\r\n")
			return front, strings.TrimRightFunc(body, isSpace), nil
		}
		off += len(line) + 1
	}
	return "", "", errors.New(`front matter is not closed: no line "---" after the fields`)
}

func isSpace(r rune) bool { return r == ' ' || r == '\t' || r == '\r' || r == '\n' }

// shiftLines turns the front matter's line numbers in a YAML error into
// SKILL.md's (the front matter starts on line 2).
func shiftLines(msg string) string {
	return yamlLineRE.ReplaceAllStringFunc(msg, func(m string) string {
		n, err := strconv.Atoi(strings.TrimPrefix(m, "line "))
		if err != nil {
			return m
		}
		return "line " + strconv.Itoa(n+1)
	})
}

// scalar returns the text of a scalar node ("" for null).
func scalar(n *yaml.Node) (string, error) {
	if n.Kind != yaml.ScalarNode {
		return "", fmt.Errorf("must be a string, got %s", nodeKind(n))
	}
	if n.Tag == "!!null" {
		return "", nil
	}
	return n.Value, nil
}

// stringList reads a list of strings: a YAML sequence of scalars, or one
// comma-separated string. Empty items are dropped; with keepDup false,
// repeated items are too.
func stringList(n *yaml.Node, keepDup bool) ([]string, error) {
	var items []string
	switch n.Kind {
	case yaml.ScalarNode:
		if n.Tag != "!!null" {
			items = strings.Split(n.Value, ",")
		}
	case yaml.SequenceNode:
		for _, c := range n.Content {
			if c.Kind == yaml.AliasNode && c.Alias != nil {
				c = c.Alias
			}
			s, err := scalar(c)
			if err != nil {
				return nil, fmt.Errorf("must be a list of strings: item on line %d %s", c.Line+1, err)
			}
			items = append(items, s)
		}
	default:
		return nil, fmt.Errorf("must be a list of strings, got %s", nodeKind(n))
	}
	out := []string{}
	for _, s := range items {
		s = strings.TrimSpace(s)
		if s != "" && (keepDup || !slices.Contains(out, s)) {
			out = append(out, s)
		}
	}
	return out, nil
}

func nodeKind(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		return "a " + strings.TrimPrefix(n.Tag, "!!")
	default:
		return "something else"
	}
}

// listResources lists the skill folder's files other than SKILL.md,
// without following symbolic links, and records links that lead outside
// the folder or nowhere as problems.
func (t *Toolset) listResources(root *os.Root, sk *skill, problem func(string, string, ...any)) {
	sk.resources = []Resource{}
	visited := 0
	err := fs.WalkDir(root.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		full := filepath.Join(sk.folder, filepath.FromSlash(p))
		if err != nil {
			problem(full, "cannot read: %s", errText(err))
			return nil
		}
		if p == "." {
			return nil
		}
		if visited++; visited > maxWalk {
			sk.truncated = true
			return fs.SkipAll
		}
		if hidden(d.Name()) {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if p == skillFile || d.IsDir() {
			return nil
		}
		var size int64
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			if msg := linkProblem(root, p); msg != "" {
				problem(full, "resource %s", msg)
				return nil
			}
			fi, err := root.Stat(p)
			if err != nil {
				problem(full, "cannot read: %s", errText(err))
				return nil
			}
			if !fi.Mode().IsRegular() {
				return nil // links to directories are not followed
			}
			size = fi.Size()
		case d.Type().IsRegular():
			fi, err := d.Info()
			if err != nil {
				problem(full, "cannot read: %s", errText(err))
				return nil
			}
			size = fi.Size()
		default:
			return nil // pipes, sockets, devices are not resources
		}
		if len(sk.resources) >= MaxResources {
			sk.truncated = true
			return fs.SkipAll
		}
		sk.resources = append(sk.resources, Resource{Path: path.Clean(p), Size: size})
		return nil
	})
	if err != nil {
		problem(sk.folder, "cannot list resources: %s", errText(err))
	}
}

func hidden(name string) bool { return strings.HasPrefix(name, ".") }

// errText is an error's text without the operation and path that
// *fs.PathError adds (the problem's path says where).
func errText(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}
