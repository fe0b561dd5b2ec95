package clientconfig

import (
	"fmt"
	"maps"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/toolgate/toolgate/adapters/upstream"
)

// spec is how one client writes its servers.
type spec struct {
	key      string // the top-level key holding the servers
	comments bool   // the client reads JSON with comments and trailing commas
	toml     bool   // the client's file is TOML (Codex), not JSON
	// fields maps the client's entry fields to what toolgate does with
	// them; a field not listed is unknown and reported.
	fields map[string]string
	// expand is the client's variable expansion.
	expand func(s string, env Env, inputs map[string]bool, res *Result) string
	// urlKeys are the fields holding a URL, preferred first, each with the
	// transport it pins ("" for none: the entry's type, or toolgate's
	// default, streamable HTTP falling back to legacy SSE as the clients
	// themselves do).
	urlKeys []urlKey
	// editorVars: the client is an editor that also expands its predefined
	// variables (${userHome}, ${workspaceFolder}, ...).
	editorVars bool
}

var specs = map[string]*spec{
	ClaudeDesktop: {key: "mcpServers", fields: fields("command", "args", "env", "url", "headers", "disabled"), expand: noExpand,
		urlKeys: []urlKey{{"url", ""}}},
	ClaudeCode: {key: "mcpServers", fields: fields("type", "command", "args", "env", "url", "headers", "disabled"), expand: expandShell,
		urlKeys: []urlKey{{"url", ""}}},
	Cursor: {key: "mcpServers", comments: true, fields: fields("type", "command", "args", "env", "envFile", "url", "headers", "disabled"), expand: expandEnvColon,
		urlKeys: []urlKey{{"url", ""}}, editorVars: true},
	VSCode: {key: "servers", comments: true, fields: fields("type", "command", "args", "env", "envFile", "cwd", "url", "headers", "disabled", "dev"), expand: expandEnvColon,
		urlKeys: []urlKey{{"url", ""}}, editorVars: true},
	Gemini: {key: "mcpServers", comments: true, fields: fields("command", "args", "env", "cwd", "url", "httpUrl", "headers", "timeout", "trust", "includeTools", "excludeTools", "disabled"), expand: expandGeminiEnv,
		urlKeys: []urlKey{{"httpUrl", upstream.TransportHTTP}, {"url", upstream.TransportSSE}}},
	Windsurf: {key: "mcpServers", comments: true, fields: fields("command", "args", "env", "serverUrl", "url", "headers", "disabled", "disabledTools"), expand: expandEnvColon,
		urlKeys: []urlKey{{"serverUrl", ""}, {"url", ""}}},
	// Codex expands no variables: it takes values from the environment
	// by naming the variable (env_vars, bearer_token_env_var,
	// env_http_headers), which [codexEntry] turns into references.
	Codex: {key: "mcp_servers", toml: true, fields: fields("command", "args", "env", "env_vars", "cwd", "url", "bearer_token_env_var", "http_headers", "env_http_headers",
		"enabled", "disabled_reason", "startup_timeout_sec", "startup_timeout_ms", "tool_timeout_sec", "enabled_tools", "disabled_tools"), expand: noExpand,
		urlKeys: []urlKey{{"url", upstream.TransportHTTP}}},
}

type urlKey struct{ field, transport string }

func fields(names ...string) map[string]string {
	m := map[string]string{}
	for _, n := range names {
		m[n] = n
	}
	return m
}

// converted is what convert says of an entry besides its configuration.
type converted struct {
	// printed, when not nil, is the entry as the printed configuration
	// writes it (see [Result.YAML]), which a rewrite leaves in the client's
	// file.
	printed *upstream.Config
}

// convert turns one entry into an upstream configuration, or says why it
// is skipped.
func (sp *spec) convert(name string, e map[string]any, env Env, inputs map[string]bool, res *Result, out *converted) (upstream.Config, string, error) {
	var uc upstream.Config
	var unknown []string
	for k := range e {
		if _, ok := sp.fields[k]; !ok {
			unknown = append(unknown, k)
		}
	}
	sort.Strings(unknown)
	// Codex's entry in the generic fields, and what it says besides.
	var codex *codexExtra
	if sp == specs[Codex] {
		var skip string
		var err error
		if e, codex, skip, err = codexEntry(name, e, res); err != nil || skip != "" {
			return uc, skip, err
		}
	}
	if len(unknown) > 0 {
		res.Notes = append(res.Notes, fmt.Sprintf("server %q: field(s) %s are not used by toolgate (they stay in the client's file)", name, strings.Join(unknown, ", ")))
	}
	str := func(k string) (string, error) {
		v, ok := e[k]
		if !ok || v == nil {
			return "", nil
		}
		s, ok := v.(string)
		if !ok {
			return "", fmt.Errorf("%s is not a string", k)
		}
		return s, nil
	}
	strMap := func(k string) (map[string]string, error) {
		v, ok := e[k]
		if !ok || v == nil {
			return nil, nil
		}
		m, ok := v.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%s is not an object", k)
		}
		out := map[string]string{}
		for mk, mv := range m {
			s, ok := mv.(string)
			if !ok {
				s = fmt.Sprint(mv)
			}
			out[mk] = s
		}
		return out, nil
	}
	var err error
	if uc.Command, err = str("command"); err != nil {
		return uc, "", err
	}
	if v, ok := e["args"]; ok && v != nil {
		list, ok := v.([]any)
		if !ok {
			return uc, "", fmt.Errorf("args is not a list")
		}
		for _, a := range list {
			uc.Args = append(uc.Args, fmt.Sprint(a))
		}
	}
	if isToolgate(name, uc.Command, uc.Args) {
		return uc, "toolgate's own entry (a gateway never starts itself)", nil
	}
	if d, _ := e["disabled"].(bool); d {
		uc.Disabled = true
	}
	if uc.Env, err = strMap("env"); err != nil {
		return uc, "", err
	}
	if uc.Headers, err = strMap("headers"); err != nil {
		return uc, "", err
	}
	if uc.Dir, err = str("cwd"); err != nil {
		return uc, "", err
	}
	for _, k := range sp.urlKeys {
		u, err := str(k.field)
		if err != nil {
			return uc, "", err
		}
		if u != "" && uc.URL == "" {
			uc.URL, uc.Transport = u, k.transport
		}
	}
	if t, _ := str("type"); t != "" {
		switch t {
		case "stdio", "sse":
			uc.Transport = t
		case "http":
			// Left to toolgate's default for a url: streamable HTTP,
			// falling back to legacy SSE when the server refuses it (400,
			// 404, 405), as VS Code does from its "http" (docs/import.md).
			uc.Transport = ""
		case "streamable-http", "streamableHttp":
			uc.Transport = upstream.TransportHTTP
		default:
			return uc, "", fmt.Errorf("type %q is not one of stdio, http, sse", t)
		}
	}
	if uc.Command == "" && uc.URL == "" {
		return uc, "", fmt.Errorf("neither command nor a URL")
	}
	if uc.Command != "" && uc.URL == "" {
		uc.Transport = upstream.TransportStdio
	}
	// Tool filters and timeouts where the client has them.
	strList := func(k string) []string {
		list, _ := e[k].([]any)
		var out []string
		for _, v := range list {
			out = append(out, fmt.Sprint(v))
		}
		return out
	}
	uc.Allow = strList("includeTools")                                     // Gemini CLI
	uc.Deny = append(strList("excludeTools"), strList("disabledTools")...) // Gemini CLI, Windsurf
	if ms, ok := e["timeout"].(float64); ok && ms > 0 {                    // Gemini CLI, milliseconds
		uc.CallTimeout = time.Duration(ms) * time.Millisecond
	}
	if trust, _ := e["trust"].(bool); trust {
		res.Notes = append(res.Notes, fmt.Sprintf("server %q: trust: true skips Gemini CLI's confirmations; toolgate's policy still decides every call (see policy.destructive and policy.approval)", name))
	}
	if ef, _ := str("envFile"); ef != "" {
		res.Notes = append(res.Notes, fmt.Sprintf("server %q: envFile %s is not read by toolgate; put its variables in the environment", name, ef))
	}

	if sp.editorVars {
		if skip := editorVariables(&uc, env); skip != "" {
			return uc, skip, nil
		}
	}

	// Claude Code does not start a server whose command, args or url use
	// an unset ${VAR} without a default (its configuration fails to
	// parse): neither does toolgate, rather than pass the empty string.
	if sp == specs[ClaudeCode] {
		for _, s := range append([]string{uc.Command, uc.URL}, uc.Args...) {
			for _, m := range shellVarRE.FindAllStringSubmatch(s, -1) {
				if _, set := env(m[1]); !set && m[2] == "" {
					return uc, fmt.Sprintf("uses %s, which is not set and has no default; Claude Code does not start it either: set it (or write ${%s:-default})", m[0], m[1]), nil
				}
			}
		}
	}

	// A value the client takes from the environment in command, args or
	// the URL, where toolgate's upstreams expand nothing, is expanded for
	// serving; the printed configuration keeps the client's text (it may
	// be a secret), disabled, and a rewrite leaves the entry in place.
	if vars := sp.fromEnv(&uc, env, res); len(vars) > 0 {
		p := uc
		p.Command, p.URL = sp.expandPlaces(uc.Command, env), sp.expandPlaces(uc.URL, env)
		p.Args = make([]string, len(uc.Args))
		for i, a := range uc.Args {
			p.Args[i] = sp.expandPlaces(a, env)
		}
		p.Env, p.Headers = maps.Clone(uc.Env), maps.Clone(uc.Headers)
		p.Disabled = true
		out.printed = &p
		res.Notes = append(res.Notes, fmt.Sprintf("server %q: its command, args or url take %s from the environment, which toolgate does not expand there; "+
			"so that no secret is written into toolgate's configuration, it is printed with the client's text and disabled, and --rewrite leaves it in the client's file: "+
			"write the value in and enable it, or serve this file with upstreams_from (which expands it as the client does)", name, strings.Join(vars, ", ")))
	}

	// Expansion where the client does it: in command, args and URL now;
	// in env and headers into toolgate's own ${VAR} references.
	uc.Command = sp.expand(uc.Command, env, inputs, res)
	for i := range uc.Args {
		uc.Args[i] = sp.expand(uc.Args[i], env, inputs, res)
	}
	uc.URL = sp.expand(uc.URL, env, inputs, res)
	for k, v := range uc.Env {
		uc.Env[k] = toReference(v, sp, inputs, res)
	}
	for k, v := range uc.Headers {
		uc.Headers[k] = toReference(v, sp, inputs, res)
	}
	if codex != nil {
		codex.apply(&uc)
	}
	if out.printed != nil {
		out.printed.Env, out.printed.Headers = uc.Env, uc.Headers
	}
	return uc, "", nil
}

// notSecret are the variables that name places, not secrets: written out
// in the printed configuration.
var notSecret = map[string]bool{"HOME": true, "USERPROFILE": true}

// refRE matches the client's variable references.
func (sp *spec) refRE() *regexp.Regexp {
	switch sp {
	case specs[ClaudeDesktop], specs[Codex]:
		return nil
	case specs[ClaudeCode]:
		return shellVarRE
	case specs[Gemini]:
		return geminiRefRE
	}
	return editorRefRE
}

// expandPlaces expands the references to the variables of notSecret in s.
func (sp *spec) expandPlaces(s string, env Env) string {
	re := sp.refRE()
	if re == nil {
		return s
	}
	return re.ReplaceAllStringFunc(s, func(m string) string {
		g := re.FindStringSubmatch(m)
		if notSecret[g[1]] || (sp == specs[Gemini] && notSecret[g[4]]) {
			return sp.expand(m, env, nil, &Result{})
		}
		return m
	})
}

// fromEnv lists the client's variable references in uc's command, args
// and URL (as the client's file writes them) that take a value from the
// environment (set and not empty) which may be a secret.
func (sp *spec) fromEnv(uc *upstream.Config, env Env, res *Result) []string {
	re := sp.refRE()
	if re == nil {
		return nil
	}
	var vars []string
	for _, s := range append([]string{uc.Command, uc.URL}, uc.Args...) {
		for _, m := range re.FindAllStringSubmatch(s, -1) {
			name := m[1]
			if name == "" && sp == specs[Gemini] {
				name = m[4]
			}
			if name == "" { // ${input:ID}
				name = inputVar(m[2], res)
			}
			if v, _ := env(name); v != "" && !notSecret[name] && !slices.Contains(vars, m[0]) {
				vars = append(vars, m[0])
			}
		}
	}
	return vars
}

var (
	shellVarRE  = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)(:-([^}]*))?\}`)
	envColonRE  = regexp.MustCompile(`\$\{env:([A-Za-z_][A-Za-z0-9_]*)\}`)
	inputRE     = regexp.MustCompile(`\$\{input:([^}]+)\}`)
	bareDollar  = regexp.MustCompile(`\$([A-Za-z_][A-Za-z0-9_]*)`)
	inputNameRE = regexp.MustCompile(`[^A-Za-z0-9_]+`)
)

func noExpand(s string, _ Env, _ map[string]bool, _ *Result) string { return s }

// expandShell is Claude Code's ${VAR} and ${VAR:-default}.
func expandShell(s string, env Env, _ map[string]bool, _ *Result) string {
	return shellVarRE.ReplaceAllStringFunc(s, func(m string) string {
		g := shellVarRE.FindStringSubmatch(m)
		if v, ok := env(g[1]); ok && v != "" {
			return v
		}
		return g[3]
	})
}

// expandEnvColon is VS Code's, Cursor's and Windsurf's ${env:VAR}; a VS
// Code ${input:ID} becomes the variable ID (reported).
func expandEnvColon(s string, env Env, inputs map[string]bool, res *Result) string {
	s = envColonRE.ReplaceAllStringFunc(s, func(m string) string {
		v, _ := env(envColonRE.FindStringSubmatch(m)[1])
		return v
	})
	return inputRE.ReplaceAllStringFunc(s, func(m string) string {
		name := inputVar(inputRE.FindStringSubmatch(m)[1], res)
		v, _ := env(name)
		return v
	})
}

// expandGeminiEnv is Gemini CLI's $VAR and ${VAR} (env values only, but
// harmless elsewhere).
func expandGeminiEnv(s string, env Env, inputs map[string]bool, res *Result) string {
	s = expandShell(s, env, inputs, res)
	return bareDollar.ReplaceAllStringFunc(s, func(m string) string {
		v, _ := env(m[1:])
		return v
	})
}

// editorVarRE matches VS Code's (and Cursor's) predefined variables: the
// user's home and the path separator, which mean the same to toolgate, and
// those of the editor's state (the open workspace, the current file, its
// settings and commands), which toolgate does not have.
var editorVarRE = regexp.MustCompile(`\$\{(userHome|pathSeparator|/|workspaceFolder|workspaceFolderBasename|file|fileWorkspaceFolder|relativeFile|relativeFileDirname|fileBasename|fileBasenameNoExtension|fileExtname|fileDirname|fileDirnameBasename|cwd|lineNumber|columnNumber|selectedText|execPath|defaultBuildTask|config:[^}]*|command:[^}]*|workspaceFolder:[^}]*)\}`)

// editorVariables resolves ${userHome}, ${pathSeparator} and ${/} in
// every field of uc, or says why the entry is skipped: it uses a variable
// of the editor's state. Such an entry is left out rather than kept with
// the variable unresolved, because kept it would either run the server
// on the literal text (a file server rooted at "${workspaceFolder}") or,
// in env and headers, fail validation and with it the whole
// configuration that reads the file with upstreams_from.
func editorVariables(uc *upstream.Config, env Env) string {
	home, ok := env("HOME")
	if !ok || home == "" {
		home, ok = env("USERPROFILE")
	}
	var missing string
	resolve := func(s string) string {
		return editorVarRE.ReplaceAllStringFunc(s, func(m string) string {
			switch name := m[2 : len(m)-1]; name {
			case "userHome":
				if ok && home != "" {
					return home
				}
			case "pathSeparator", "/":
				return string(filepath.Separator)
			}
			if missing == "" {
				missing = m
			}
			return m
		})
	}
	uc.Command, uc.URL, uc.Dir = resolve(uc.Command), resolve(uc.URL), resolve(uc.Dir)
	for i := range uc.Args {
		uc.Args[i] = resolve(uc.Args[i])
	}
	for k, v := range uc.Env {
		uc.Env[k] = resolve(v)
	}
	for k, v := range uc.Headers {
		uc.Headers[k] = resolve(v)
	}
	switch {
	case missing == "${userHome}":
		return "uses ${userHome} and neither HOME nor USERPROFILE is set: write the path in its place"
	case missing != "":
		return fmt.Sprintf("uses %s, which the editor sets from its open workspace or file; toolgate has neither: "+
			"add the server to toolgate's upstreams with the path written in its place", missing)
	}
	return ""
}

// toReference rewrites a client's variable references in an env or header
// value into toolgate's ${VAR} (or ${VAR:-default}), which toolgate
// expands at start without writing the value anywhere. Every other "$" is
// the client's literal text and is written "$$", toolgate's literal "$":
// a Claude Desktop password "pa$$w0rd" (Claude Desktop expands nothing)
// must reach the server as written, not as "pa$w0rd".
func toReference(v string, sp *spec, inputs map[string]bool, res *Result) string {
	switch {
	case sp == specs[ClaudeDesktop], sp == specs[Codex]:
		return strings.ReplaceAll(v, "$", "$$")
	case sp == specs[ClaudeCode]:
		return references(v, shellVarRE, func(m []string) string { return "${" + m[1] + m[2] + "}" })
	case sp == specs[Gemini]:
		return references(v, geminiRefRE, func(m []string) string {
			if m[1] != "" {
				return "${" + m[1] + m[2] + "}"
			}
			return "${" + m[4] + "}"
		})
	}
	return references(v, editorRefRE, func(m []string) string {
		if m[1] != "" {
			return "${" + m[1] + "}"
		}
		return "${" + inputVar(m[2], res) + "}"
	})
}

var (
	geminiRefRE = regexp.MustCompile(shellVarRE.String() + `|` + bareDollar.String())
	editorRefRE = regexp.MustCompile(envColonRE.String() + `|` + inputRE.String())
)

// references replaces each match of re in v with ref(its submatches) and
// writes every "$" outside the matches as "$$".
func references(v string, re *regexp.Regexp, ref func(m []string) string) string {
	var b strings.Builder
	last := 0
	for _, ix := range re.FindAllStringSubmatchIndex(v, -1) {
		b.WriteString(strings.ReplaceAll(v[last:ix[0]], "$", "$$"))
		m := make([]string, len(ix)/2)
		for i := range m {
			if ix[2*i] >= 0 {
				m[i] = v[ix[2*i]:ix[2*i+1]]
			}
		}
		b.WriteString(ref(m))
		last = ix[1]
	}
	b.WriteString(strings.ReplaceAll(v[last:], "$", "$$"))
	return b.String()
}

// inputVar is the environment variable standing in for a VS Code input.
func inputVar(id string, res *Result) string {
	name := strings.ToUpper(strings.Trim(inputNameRE.ReplaceAllString(id, "_"), "_"))
	note := fmt.Sprintf("${input:%s} is asked of the user by VS Code; toolgate reads it from the environment variable %s instead: set it", id, name)
	for _, n := range res.Notes {
		if n == note {
			return name
		}
	}
	res.Notes = append(res.Notes, note)
	return name
}

// vscodeInputs lists the ids of VS Code's declared inputs.
func vscodeInputs(root map[string]any) map[string]bool {
	ids := map[string]bool{}
	list, _ := root["inputs"].([]any)
	for _, in := range list {
		if m, ok := in.(map[string]any); ok {
			if id, ok := m["id"].(string); ok {
				ids[id] = true
			}
		}
	}
	return ids
}
