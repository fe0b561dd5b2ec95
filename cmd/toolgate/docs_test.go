package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/knadh/koanf/parsers/yaml"
	"github.com/toolgate/toolgate/cmd/toolgate/internal/config"
)

// docFiles are the documents a newcomer follows: README.md and docs/*.md.
func docFiles(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("..", "..", "docs", "*.md"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no docs/*.md: %v", err)
	}
	return append([]string{filepath.Join("..", "..", "README.md")}, files...)
}

type docBlock struct {
	file string
	line int // of the block's first line
	lang string
	text string
}

var fenceRE = regexp.MustCompile("^(\\s*)```(\\w*)\\s*$")

// docBlocks returns the fenced code blocks of a Markdown file, dedented by
// their fence's indentation.
func docBlocks(t *testing.T, file string) []docBlock {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(data), "\n")
	var out []docBlock
	for i := 0; i < len(lines); i++ {
		m := fenceRE.FindStringSubmatch(lines[i])
		if m == nil {
			continue
		}
		indent, b := m[1], docBlock{file: file, line: i + 2, lang: m[2]}
		var body []string
		for i++; i < len(lines) && strings.TrimSpace(lines[i]) != "```"; i++ {
			body = append(body, strings.TrimPrefix(lines[i], indent))
		}
		b.text = strings.Join(body, "\n") + "\n"
		out = append(out, b)
	}
	return out
}

// Every YAML configuration example in README.md and docs/*.md loads as
// toolgate's configuration: no key in them is unknown, misspelt or of the
// wrong type, and every value passes the checks `toolgate config` makes. The
// upstream reference, which lists the keys of both transports in one entry,
// only has to name known keys.
func TestDocsConfigExamplesLoad(t *testing.T) {
	for _, kv := range os.Environ() {
		if name, _, _ := strings.Cut(kv, "="); strings.HasPrefix(name, "TOOLGATE_") {
			t.Setenv(name, "")
			os.Unsetenv(name)
		}
	}
	varRE := regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)`)
	n := 0
	for _, file := range docFiles(t) {
		for _, b := range docBlocks(t, file) {
			if b.lang != "yaml" && b.lang != "yml" {
				continue
			}
			if strings.HasPrefix(b.text, "apiVersion:") || strings.Contains(b.text, "\napiVersion:") {
				continue // a Kubernetes manifest (docs/replicas.md), not toolgate's
			}
			n++
			t.Run(filepath.Base(file)+":"+strconv.Itoa(b.line), func(t *testing.T) {
				home, dir := t.TempDir(), t.TempDir()
				t.Setenv("HOME", home)
				t.Setenv("XDG_STATE_HOME", filepath.Join(home, "state"))
				t.Chdir(dir)
				for _, m := range varRE.FindAllStringSubmatch(b.text, -1) {
					if m[1] != "HOME" {
						t.Setenv(m[1], "value-of-"+m[1])
					}
				}
				// The client files upstreams_from names, empty.
				parsed, err := yaml.Parser().Unmarshal([]byte(b.text))
				if err != nil {
					t.Fatalf("%s:%d: not YAML: %v", b.file, b.line, err)
				}
				from, _ := parsed["upstreams_from"].([]any)
				for _, e := range from {
					entry, _ := e.(map[string]any)
					p, _ := entry["path"].(string)
					if p == "" {
						continue
					}
					if rest, ok := strings.CutPrefix(p, "~/"); ok {
						p = filepath.Join(home, rest)
					}
					if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
						t.Fatal(err)
					}
					empty := `{"mcpServers": {}}`
					if strings.HasSuffix(p, ".toml") { // Codex's
						empty = "[mcp_servers]\n"
					}
					if err := os.WriteFile(p, []byte(empty), 0o644); err != nil {
						t.Fatal(err)
					}
				}
				path := filepath.Join(dir, "example.yaml")
				if err := os.WriteFile(path, []byte(b.text), 0o644); err != nil {
					t.Fatal(err)
				}
				_, _, _, err = config.Load(config.Options{File: path, Environ: func() []string { return nil }})
				if err == nil {
					return
				}
				if strings.Contains(err.Error(), "command and url are both set") && !strings.Contains(err.Error(), "unknown key") &&
					!strings.Contains(err.Error(), "decoding") {
					return // the upstream reference: both transports' keys in one entry
				}
				t.Errorf("%s:%d: the example does not load:\n%v\n%s", b.file, b.line, err, b.text)
			})
		}
	}
	if n < 10 {
		t.Errorf("found only %d YAML examples in the docs: is the extraction broken?", n)
	}
}

// Every relative link in README.md and docs/*.md (and the READMEs they send
// readers to) reaches an existing file, and its #anchor a heading there.
func TestDocsLinksResolve(t *testing.T) {
	linkRE := regexp.MustCompile(`\]\(([^)\s]+)\)`)
	files := append(docFiles(t), filepath.Join("..", "..", "third_party", "README.md"), filepath.Join("..", "..", "e2e", "bench", "README.md"))
	for _, file := range files {
		for _, m := range linkRE.FindAllStringSubmatch(withoutCode(t, file), -1) {
			link := m[1]
			if strings.Contains(link, "://") || strings.HasPrefix(link, "mailto:") {
				continue
			}
			target, anchor, _ := strings.Cut(link, "#")
			path := file
			if target != "" {
				path = filepath.Join(filepath.Dir(file), target)
			}
			if _, err := os.Stat(path); err != nil {
				t.Errorf("%s: link %s: %v", file, link, err)
				continue
			}
			if anchor != "" && strings.HasSuffix(path, ".md") && !anchors(t, path)[anchor] {
				t.Errorf("%s: link %s: no heading with that anchor in %s", file, link, path)
			}
		}
	}
}

// Every repository path the docs name in backquotes (`policy/sandbox.go`,
// `e2e/bench/README.md`) exists: a path under one of the repository's
// top-level directories, without globs or braces.
func TestDocsNamedFilesExist(t *testing.T) {
	pathRE := regexp.MustCompile("`([A-Za-z0-9_.-]+(?:/[A-Za-z0-9_.-]+)+)`")
	goIdentRE := regexp.MustCompile(`^[a-z0-9_]+\.[A-Z]`)
	for _, file := range docFiles(t) {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range pathRE.FindAllStringSubmatch(string(data), -1) {
			p := m[1]
			top, _, _ := strings.Cut(p, "/")
			if fi, err := os.Stat(filepath.Join("..", "..", top)); err != nil || !fi.IsDir() || strings.HasPrefix(top, ".") {
				continue // not a path in the repository (a URL path, ~/..., a client's file)
			}
			if goIdentRE.MatchString(filepath.Base(p)) {
				continue // a Go identifier, gateway/telemetry.Metrics
			}
			if _, err := os.Stat(filepath.Join("..", "..", p)); err != nil {
				t.Errorf("%s names %s, which does not exist", file, p)
			}
		}
	}
}

// withoutCode is a Markdown file's text without its fenced code blocks.
func withoutCode(t *testing.T, file string) string {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	in := false
	for _, l := range strings.Split(string(data), "\n") {
		if fenceRE.MatchString(l) || (in && strings.TrimSpace(l) == "```") {
			in = !in
			continue
		}
		if !in {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// anchors are the GitHub anchors of a Markdown file's headings.
func anchors(t *testing.T, file string) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	for _, l := range strings.Split(withoutCode(t, file), "\n") {
		if !strings.HasPrefix(l, "#") {
			continue
		}
		h := strings.ToLower(strings.TrimSpace(strings.TrimLeft(l, "#")))
		var b strings.Builder
		for _, r := range h {
			switch {
			case r == ' ':
				b.WriteRune('-')
			case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r > 127:
				b.WriteRune(r)
			}
		}
		out[b.String()] = true
	}
	return out
}
