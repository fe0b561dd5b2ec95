// Package clientconfig reads the MCP server lists other clients keep
// (Claude Desktop, Claude Code, Cursor, VS Code, Gemini CLI, Windsurf,
// Codex CLI) and
// turns them into toolgate upstream configurations, so the file a person
// already maintains can stay the source of truth (config upstreams_from)
// or be converted once (toolgate import).
//
// Each format is read as its client documents it: the top-level key
// (mcpServers, or servers for VS Code), the fields of an entry (command,
// args, env, cwd, url, headers, type or transport, disabled), comments and
// trailing commas where the client accepts them (VS Code and Gemini CLI
// read JSON with comments; parsed with tailscale/hujson), and variable
// expansion where the client does it:
//
//	Claude Code   ${VAR} and ${VAR:-default} in command, args, env, url, headers
//	Cursor        ${env:VAR} in command, args, env, url, headers
//	VS Code       ${env:VAR}; ${input:ID} prompts the user, which toolgate cannot:
//	              it becomes ${ID} (upper case) and is reported, to be set in the environment
//	VS Code, Cursor  the editor's ${userHome}, ${pathSeparator}, ${/} (resolved);
//	              an entry using its ${workspaceFolder}, ${file}, ... is skipped
//	Gemini CLI    $VAR and ${VAR} in env values
//	Windsurf      ${env:VAR} in command, args, env, serverUrl, headers
//	Claude Desktop none
//	Codex CLI     none; its TOML names variables instead (env_vars,
//	              bearer_token_env_var, env_http_headers): see codex.go
//
// Variables in env and headers stay references (${VAR} or
// ${VAR:-default}, which toolgate expands itself when it starts the
// upstream, and never logs), so secrets are not copied into toolgate's
// configuration; in command, args and url they are expanded when the file
// is read.
package clientconfig

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/tailscale/hujson"
	"github.com/toolgate/toolgate/adapters/upstream"
	"github.com/toolgate/toolgate/gateway"
)

// Formats.
const (
	Auto          = "auto"
	ClaudeDesktop = "claude-desktop"
	ClaudeCode    = "claude-code"
	Cursor        = "cursor"
	VSCode        = "vscode"
	Gemini        = "gemini"
	Windsurf      = "windsurf"
	Codex         = "codex"
)

// Formats lists the formats by name.
var Formats = []string{ClaudeDesktop, ClaudeCode, Cursor, VSCode, Gemini, Windsurf, Codex}

// Result is what a client's file holds for toolgate.
type Result struct {
	Format    string
	Path      string
	Upstreams []upstream.Config
	// Imported are the client's own names of the servers in Upstreams
	// (which may be renamed there): what a rewrite takes out of its file.
	// A server whose command, args or URL take a value from the
	// environment is not among them (see [Result.YAML]).
	Imported []string
	// Skipped names the entries not imported, with why (toolgate's own
	// entry, say).
	Skipped []string
	// Notes are everything else worth saying: unknown fields (left in the
	// client's file, unused by toolgate), renamed servers, variables to
	// set.
	Notes []string
	// printed are Upstreams as [Result.YAML] writes them.
	printed []upstream.Config
}

// Env looks a variable up (os.LookupEnv in production).
type Env func(name string) (string, bool)

// Load reads and parses a client's file. format may be Auto.
func Load(path, format string, env Env) (*Result, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(path, data, format, env)
}

// Parse parses a client's file (path names it in errors and picks the
// format when format is Auto).
func Parse(path string, data []byte, format string, env Env) (*Result, error) {
	if env == nil {
		env = os.LookupEnv
	}
	if format == "" || format == Auto {
		f, err := Detect(path, data)
		if err != nil {
			return nil, err
		}
		format = f
	}
	spec, ok := specs[format]
	if !ok {
		return nil, fmt.Errorf("unknown client format %q (one of auto, %s)", format, strings.Join(Formats, ", "))
	}
	var root map[string]any
	var err error
	if spec.toml {
		root, err = decodeTOML(path, data)
	} else {
		root, err = decode(path, data, spec.comments)
	}
	if err != nil {
		return nil, err
	}
	res := &Result{Format: format, Path: path}
	if format == ClaudeCode {
		localScope(root, res)
	}
	servers, ok := root[spec.key].(map[string]any)
	if !ok {
		if _, present := root[spec.key]; present {
			return nil, fmt.Errorf("%s: %q is not an object of servers", path, spec.key)
		}
		return res, nil // a settings file with no servers: nothing to import
	}
	inputs := vscodeInputs(root)
	project := projectDir(path, env)
	var loads func(name string) string
	if format == Gemini {
		loads = geminiLoads(root)
	}
	names := make([]string, 0, len(servers))
	for n := range servers {
		names = append(names, n)
	}
	sort.Strings(names)
	used := map[string]bool{}
	for _, name := range names {
		// An entry toolgate cannot take is skipped with why, as the client
		// would start its other servers: one broken entry of a file
		// toolgate does not own must not fail the rest (upstreams_from
		// reads it at every start and reload).
		entry, ok := servers[name].(map[string]any)
		if !ok {
			res.Skipped = append(res.Skipped, fmt.Sprintf("%s: the entry is not an object", name))
			continue
		}
		if loads != nil {
			if why := loads(name); why != "" {
				res.Skipped = append(res.Skipped, fmt.Sprintf("%s: %s", name, why))
				continue
			}
		}
		var out converted
		uc, skip, err := spec.convert(name, entry, env, inputs, res, &out)
		if err != nil {
			res.Skipped = append(res.Skipped, fmt.Sprintf("%s: %v", name, err))
			continue
		}
		if skip != "" {
			res.Skipped = append(res.Skipped, fmt.Sprintf("%s: %s", name, skip))
			continue
		}
		relativePaths(name, &uc, &out, project, res)
		uc.Name = upstreamName(name, used)
		if uc.Name != name {
			res.Notes = append(res.Notes, fmt.Sprintf("server %q is served as upstream %q (names are 1-32 of [A-Za-z0-9_-])", name, uc.Name))
		}
		used[uc.Name] = true
		res.Upstreams = append(res.Upstreams, uc)
		printed := uc
		if out.printed != nil {
			printed = *out.printed
			printed.Name = uc.Name
		} else {
			res.Imported = append(res.Imported, name)
		}
		res.printed = append(res.printed, printed)
	}
	return res, nil
}

// Detect names the format of a client's file from its name and content.
func Detect(path string, data []byte) (string, error) {
	base := strings.ToLower(filepath.Base(path))
	dir := strings.ToLower(filepath.Base(filepath.Dir(path)))
	switch {
	case base == "claude_desktop_config.json":
		return ClaudeDesktop, nil
	case base == ".mcp.json" || base == ".claude.json":
		return ClaudeCode, nil
	case base == "mcp.json" && dir == ".vscode":
		return VSCode, nil
	case base == "mcp.json" && dir == ".cursor":
		return Cursor, nil
	case base == "settings.json" && dir == ".gemini":
		return Gemini, nil
	case base == "mcp_config.json":
		return Windsurf, nil
	case base == "config.toml" && dir == ".codex":
		return Codex, nil
	}
	root, err := decode(path, data, true)
	if err != nil {
		// Not JSON: Codex's TOML, by its [mcp_servers] table.
		if troot, terr := decodeTOML(path, data); terr == nil {
			if _, ok := troot["mcp_servers"].(map[string]any); ok {
				return Codex, nil
			}
			if strings.HasSuffix(base, ".toml") {
				return "", fmt.Errorf("%s: not an MCP client configuration this version knows (TOML without an [mcp_servers] table); name the format with --from", path)
			}
		}
		return "", err
	}
	if _, ok := root["servers"]; ok {
		return VSCode, nil
	}
	if servers, ok := root["mcpServers"].(map[string]any); ok {
		for _, s := range servers {
			if e, ok := s.(map[string]any); ok {
				if _, ok := e["httpUrl"]; ok {
					return Gemini, nil
				}
				if _, ok := e["serverUrl"]; ok {
					return Windsurf, nil
				}
				if _, ok := e["type"]; ok {
					return ClaudeCode, nil
				}
			}
		}
		return ClaudeDesktop, nil // the plain mcpServers form (Cursor's too)
	}
	return "", fmt.Errorf("%s: not an MCP client configuration this version knows (no mcpServers or servers key); name the format with --from", path)
}

// IsClientConfig reports whether data looks like a client's MCP server
// list rather than toolgate's own configuration.
func IsClientConfig(data []byte) bool {
	root, err := decode("", data, true)
	if err != nil {
		return isCodexTOML(data)
	}
	_, a := root["mcpServers"]
	_, b := root["servers"]
	return a || b
}

// decode parses JSON (with comments and trailing commas when allowed),
// reporting a syntax error with its line and column.
func decode(path string, data []byte, comments bool) (map[string]any, error) {
	src := data
	if comments {
		// A copy: Standardize rewrites the parsed bytes in place.
		v, err := hujson.Parse(append([]byte(nil), data...))
		if err != nil {
			return nil, positioned(path, data, err)
		}
		v.Standardize()
		src = v.Pack()
	}
	dec := json.NewDecoder(bytes.NewReader(src))
	var root map[string]any
	if err := dec.Decode(&root); err != nil {
		return nil, positioned(path, data, err)
	}
	return root, nil
}

var offsetRE = regexp.MustCompile(`offset (\d+)`)

// positioned adds the line and column of a syntax error.
func positioned(path string, data []byte, err error) error {
	off := -1
	var se *json.SyntaxError
	if ok := asSyntax(err, &se); ok {
		off = int(se.Offset)
	} else if m := offsetRE.FindStringSubmatch(err.Error()); m != nil {
		fmt.Sscan(m[1], &off)
	}
	if off < 0 {
		return fmt.Errorf("%s: %w", path, err)
	}
	if off > len(data) {
		off = len(data)
	}
	line := 1 + bytes.Count(data[:off], []byte("\n"))
	col := off - bytes.LastIndexByte(data[:off], '\n')
	return fmt.Errorf("%s:%d:%d: %w", path, line, col, err)
}

func asSyntax(err error, target **json.SyntaxError) bool {
	se, ok := err.(*json.SyntaxError)
	if ok {
		*target = se
	}
	return ok
}

var nameRE = regexp.MustCompile(`[^A-Za-z0-9_-]+`)

// upstreamName fits a client's server name to toolgate's upstream names,
// unique among those already used.
func upstreamName(name string, used map[string]bool) string {
	n := strings.Trim(nameRE.ReplaceAllString(name, "-"), "-")
	if n == "" {
		n = "server"
	}
	if len(n) > 32 {
		n = n[:32]
	}
	base := n
	for i := 2; used[n]; i++ {
		suffix := fmt.Sprintf("-%d", i)
		n = base[:min(len(base), 32-len(suffix))] + suffix
	}
	return n
}

// AvoidNames gives each server whose upstream name is in taken another
// name ("memory" becomes "memory-server") with its old name as prefix, so
// that its tools keep their names (memory__create_entities) and the
// policy written for them still matches; why says why a name is taken.
// It returns what it did, one note per server, also added to Notes.
// toolgate import passes the names of toolgate's built-in toolsets, which
// an upstream may not have: its printed configuration then starts
// whichever of them are on.
func (r *Result) AvoidNames(taken []string, why func(name string) string) []string {
	used := map[string]bool{}
	for _, n := range taken {
		used[n] = true
	}
	for _, u := range r.Upstreams {
		used[u.Name] = true
	}
	var notes []string
	for i := range r.Upstreams {
		old := r.Upstreams[i].Name
		if !slices.Contains(taken, old) {
			continue
		}
		name := upstreamName(old+"-server", used)
		used[name] = true
		ups := []*upstream.Config{&r.Upstreams[i]}
		if i < len(r.printed) {
			ups = append(ups, &r.printed[i])
		}
		for _, u := range ups {
			u.Name = name
			if u.Prefix == nil {
				u.Prefix = &old
			}
		}
		note := fmt.Sprintf("server %q is served as upstream %q with prefix: %s, which keeps its tools' names (%s__*): %s, and an upstream may not be named so while that toolset is on",
			old, name, old, old, why(old))
		notes = append(notes, note)
		r.Notes = append(r.Notes, note)
	}
	return notes
}

// WrittenSecrets notes each env or header value of the printed upstreams
// that is a secret written out in the client's file (its name looks like
// one: a token, a password, an API key, Authorization): the printed
// configuration copies it into toolgate's, a second file that holds it.
// A ${VAR} reference in its place takes it from toolgate's environment
// instead, as the references of the client's file already do (they are
// printed as references). It returns the notes, also added to Notes.
// toolgate import calls it; upstreams_from does not, as the client's file
// stays the only one that holds the value.
func (r *Result) WrittenSecrets() []string {
	var notes []string
	for _, u := range r.printed {
		for _, k := range slices.Sorted(maps.Keys(u.Env)) {
			if writtenSecret(k, u.Env[k]) {
				notes = append(notes, fmt.Sprintf("upstream %q: env %s holds a secret written out, copied from the client's file into this configuration; %s: %q takes it from toolgate's environment instead",
					u.Name, k, k, "${"+k+"}"))
			}
		}
		for _, k := range slices.Sorted(maps.Keys(u.Headers)) {
			v := u.Headers[k]
			if !writtenSecret(k, v) {
				continue
			}
			ref := "${" + envName(u.Name+"_"+k) + "}"
			if scheme, _, ok := strings.Cut(v, " "); ok && strings.EqualFold(k, "Authorization") {
				ref = scheme + " " + ref // Bearer ${REMOTE_AUTHORIZATION}
			}
			notes = append(notes, fmt.Sprintf("upstream %q: header %s holds a secret written out, copied from the client's file into this configuration; %s: %q takes it from toolgate's environment instead",
				u.Name, k, k, ref))
		}
	}
	r.Notes = append(r.Notes, notes...)
	return notes
}

// writtenSecret reports whether the value of key is a secret written out:
// the key's name looks like a secret's and the value holds no reference.
func writtenSecret(key, value string) bool {
	return value != "" && !strings.Contains(value, "${") && gateway.IsSecretKey(key)
}

// envName makes s a variable name: upper case, "_" for what is not a
// letter or digit.
func envName(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z':
			return r - 'a' + 'A'
		case r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
			return r
		}
		return '_'
	}, s)
}

// ownEntry reports whether a client's entry is the one toolgate's rewrite
// writes ([Rewrite]): named "toolgate", its args starting with "serve".
func ownEntry(name string, args []string) bool {
	return name == EntryName && len(args) > 0 && args[0] == "serve"
}

// isToolgate recognizes toolgate's own entry, which must never be
// imported (a gateway that spawns itself): a command named toolgate (or
// `go run …/cmd/toolgate`), or, whatever its binary is named, the entry
// toolgate's own rewrite writes: named "toolgate", its args starting with
// "serve" (see [Rewrite]).
func isToolgate(name, command string, args []string) bool {
	if ownEntry(name, args) {
		return true
	}
	b := strings.TrimSuffix(strings.ToLower(filepath.Base(command)), ".exe")
	if b == "toolgate" {
		return true
	}
	for _, a := range args {
		if strings.HasSuffix(filepath.ToSlash(a), "cmd/toolgate") || strings.TrimSuffix(filepath.Base(a), ".exe") == "toolgate" {
			return true
		}
	}
	return false
}

// geminiLoads is Gemini CLI's choice of the servers it connects to: none
// that mcp.excluded names, and when mcp.allowed is set only those it names
// (excludeMCPServers and allowMCPServers in older settings files). It says
// why a server is not loaded, or "".
func geminiLoads(root map[string]any) func(name string) string {
	list := func(m map[string]any, key string) ([]string, bool) {
		v, ok := m[key].([]any)
		if !ok {
			return nil, false
		}
		out := []string{}
		for _, e := range v {
			if s, ok := e.(string); ok {
				out = append(out, s)
			}
		}
		return out, true
	}
	type rule struct {
		key   string
		names []string
		allow bool
	}
	var rules []rule
	mcp, _ := root["mcp"].(map[string]any)
	for _, r := range []struct {
		m        map[string]any
		key, msg string
		allow    bool
	}{{mcp, "allowed", "mcp.allowed", true}, {mcp, "excluded", "mcp.excluded", false},
		{root, "allowMCPServers", "allowMCPServers", true}, {root, "excludeMCPServers", "excludeMCPServers", false}} {
		if names, ok := list(r.m, r.key); ok {
			rules = append(rules, rule{r.msg, names, r.allow})
		}
	}
	return func(name string) string {
		for _, r := range rules {
			if !r.allow && slices.Contains(r.names, name) {
				return "Gemini CLI does not connect to it (listed in " + r.key + " of its settings)"
			}
		}
		for _, r := range rules {
			if r.allow && !slices.Contains(r.names, name) {
				return "Gemini CLI does not connect to it (not listed in " + r.key + " of its settings)"
			}
		}
		return ""
	}
}

// localScope notes the local-scope servers of Claude Code's ~/.claude.json
// (projects.<path>.mcpServers), which the import leaves out: they apply
// only when Claude Code runs in that project, where they win over a
// user-scope server of the same name.
func localScope(root map[string]any, res *Result) {
	projects, _ := root["projects"].(map[string]any)
	user, _ := root["mcpServers"].(map[string]any)
	for _, dir := range slices.Sorted(maps.Keys(projects)) {
		p, _ := projects[dir].(map[string]any)
		servers, _ := p["mcpServers"].(map[string]any)
		if len(servers) == 0 {
			continue
		}
		var names, over []string
		for _, n := range slices.Sorted(maps.Keys(servers)) {
			names = append(names, strconv.Quote(n))
			if _, ok := user[n]; ok {
				over = append(over, strconv.Quote(n))
			}
		}
		note := fmt.Sprintf("Claude Code's project %s has local-scope server(s) %s, used only when Claude Code runs there", dir, strings.Join(names, ", "))
		if len(over) > 0 {
			note += fmt.Sprintf(" (where they replace the user-scope %s imported here)", strings.Join(over, ", "))
		}
		res.Notes = append(res.Notes, note+"; they are not imported: add them to toolgate's upstreams, or to that project's .mcp.json and import it")
	}
}

// projectDir is the project a client's file belongs to, whose root the
// client starts the file's servers in and takes their relative paths
// from: the directory holding .vscode/mcp.json, .cursor/mcp.json or
// .gemini/settings.json or .codex/config.toml, or the one holding Claude
// Code's .mcp.json. It is "" for a file of no project: a user-wide one
// (Claude Desktop's, Windsurf's, ~/.claude.json, ~/.cursor, ~/.gemini or
// ~/.codex in the home directory, $CODEX_HOME), whose client starts
// servers wherever it runs.
func projectDir(path string, env Env) string {
	abs, err := filepath.Abs(path)
	if err != nil {
		return ""
	}
	base, dir := filepath.Base(abs), filepath.Dir(abs)
	var root string
	switch parent := filepath.Base(dir); {
	case base == ".mcp.json":
		return dir
	case base == "mcp.json" && (parent == ".vscode" || parent == ".cursor"),
		base == "settings.json" && parent == ".gemini",
		base == "config.toml" && parent == ".codex":
		root = filepath.Dir(dir)
	default:
		return ""
	}
	if ch, ok := env("CODEX_HOME"); ok && ch != "" && filepath.Clean(ch) == dir {
		return "" // Codex's own configuration, not a project's
	}
	for _, v := range []string{"HOME", "USERPROFILE"} {
		if home, ok := env(v); ok && home != "" && filepath.Clean(home) == root {
			return "" // ~/.cursor/mcp.json, ~/.gemini/settings.json: the user's
		}
	}
	return root
}

// relativePaths starts a stdio server of a project's file where its
// client does, whatever toolgate's own working directory: a relative cwd
// is taken from the project's root, and a relative command with a slash
// ("./server.sh", "node_modules/.bin/x") and no cwd runs in the project's
// root (the client's working directory for it), where it is found. In a
// file of no project (project is "") such paths are left as they are,
// with a note: toolgate resolves them against its own working directory.
func relativePaths(name string, uc *upstream.Config, out *converted, project string, res *Result) {
	if uc.Command == "" || uc.URL != "" {
		return
	}
	relCwd := uc.Dir != "" && !filepath.IsAbs(uc.Dir)
	relCommand := uc.Dir == "" && !filepath.IsAbs(uc.Command) && strings.ContainsAny(uc.Command, "/"+string(filepath.Separator))
	switch {
	case !relCwd && !relCommand:
		return
	case project == "":
		what := fmt.Sprintf("cwd %q", uc.Dir)
		if relCommand {
			what = fmt.Sprintf("command %q", uc.Command)
		}
		res.Notes = append(res.Notes, fmt.Sprintf("server %q: its %s is relative and this file belongs to no project: "+
			"toolgate takes it from its own working directory, the client from wherever it runs; write it absolute", name, what))
		return
	case relCwd:
		uc.Dir = filepath.Join(project, uc.Dir)
	default:
		uc.Dir = project
	}
	if out.printed != nil {
		out.printed.Dir = uc.Dir
	}
}
