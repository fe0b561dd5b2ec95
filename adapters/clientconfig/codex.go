package clientconfig

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"strings"
	"time"

	"github.com/BurntSushi/toml"
	"github.com/toolgate/toolgate/adapters/upstream"
)

// The OpenAI Codex CLI keeps its servers in TOML, in $CODEX_HOME/config.toml
// (~/.codex/config.toml by default) and in a trusted project's
// .codex/config.toml, as [mcp_servers.NAME] tables:
//
//	command, args, env, cwd        a stdio server
//	env_vars                       variables Codex passes on from its own environment
//	url                            a streamable HTTP server
//	bearer_token_env_var           the variable holding its bearer token
//	http_headers, env_http_headers headers written out, and taken from variables
//	enabled = false                switched off
//	startup_timeout_sec (_ms), tool_timeout_sec, enabled_tools, disabled_tools
//
// Codex expands no variables in the values themselves.

// codexExtra is what a Codex entry says that the generic fields do not:
// applied to the upstream once they are converted.
type codexExtra struct {
	env, headers  map[string]string // toolgate references (${VAR}), set as they are
	startup, call time.Duration
	allow, deny   []string
	hasAllow      bool
}

func (x *codexExtra) apply(uc *upstream.Config) {
	if len(x.env) > 0 {
		if uc.Env == nil {
			uc.Env = map[string]string{}
		}
		for k, v := range x.env {
			if _, set := uc.Env[k]; !set { // env's own value wins
				uc.Env[k] = v
			}
		}
	}
	if len(x.headers) > 0 {
		if uc.Headers == nil {
			uc.Headers = map[string]string{}
		}
		maps.Copy(uc.Headers, x.headers)
	}
	uc.StartupTimeout, uc.CallTimeout = x.startup, x.call
	uc.Allow, uc.Deny = x.allow, x.deny
	if x.hasAllow && len(x.allow) == 0 {
		// enabled_tools = []: Codex offers none of the server's tools.
		uc.Deny = []string{"*"}
	}
}

// codexEntry translates a Codex entry into the generic fields convert reads
// (command, args, env, cwd, url, headers) and what it says besides, or
// says why it is skipped.
func codexEntry(name string, e map[string]any, res *Result) (map[string]any, *codexExtra, string, error) {
	if v, ok := e["enabled"]; ok {
		on, isBool := v.(bool)
		if !isBool {
			return nil, nil, "", fmt.Errorf("enabled is not a boolean")
		}
		if !on {
			why := "enabled = false in Codex's configuration: Codex does not start it"
			if r, _ := e["disabled_reason"].(string); r != "" {
				why += " (" + r + ")"
			}
			return nil, nil, why + "; set enabled = true there, or add it to toolgate's upstreams, to serve it", nil
		}
	}
	g := map[string]any{}
	for _, k := range []string{"command", "args", "env", "cwd", "url"} {
		if v, ok := e[k]; ok {
			g[k] = v
		}
	}
	if v, ok := e["http_headers"]; ok {
		g["headers"] = v
	}
	x := &codexExtra{env: map[string]string{}, headers: map[string]string{}}

	// env_vars: names (or {name, source} tables) of variables Codex passes
	// on from its environment. toolgate's children get only PATH, HOME,
	// LANG and TMPDIR of its own, so each becomes a reference, empty when
	// the variable is not set (Codex then passes nothing).
	if v, ok := e["env_vars"]; ok {
		list, ok := v.([]any)
		if !ok {
			return nil, nil, "", fmt.Errorf("env_vars is not a list")
		}
		for _, item := range list {
			var vname, source string
			switch it := item.(type) {
			case string:
				vname = it
			case map[string]any:
				vname, _ = it["name"].(string)
				source, _ = it["source"].(string)
			}
			if !varName(vname) {
				return nil, nil, "", fmt.Errorf("env_vars: %q is not a variable name", fmt.Sprint(item))
			}
			if source != "" && source != "local" {
				res.Notes = append(res.Notes, fmt.Sprintf("server %q: env_vars %s comes from Codex's %s executor environment, which toolgate does not have: it is not passed on", name, vname, source))
				continue
			}
			x.env[vname] = "${" + vname + ":-}"
		}
	}

	// bearer_token_env_var: Codex sends "Authorization: Bearer <value>"
	// and does not connect when the variable is not set; toolgate's
	// reference does the same (an unset variable keeps the server from
	// being served, and says which).
	if v, ok := e["bearer_token_env_var"]; ok {
		vname, _ := v.(string)
		if !varName(vname) {
			return nil, nil, "", fmt.Errorf("bearer_token_env_var %q is not a variable name", fmt.Sprint(v))
		}
		x.headers["Authorization"] = "Bearer ${" + vname + "}"
	}
	// env_http_headers: header name to variable; Codex leaves a header
	// out when its variable is not set, toolgate sends it empty.
	if v, ok := e["env_http_headers"]; ok {
		m, ok := v.(map[string]any)
		if !ok {
			return nil, nil, "", fmt.Errorf("env_http_headers is not a table")
		}
		for h, vv := range m {
			vname, _ := vv.(string)
			if !varName(vname) {
				return nil, nil, "", fmt.Errorf("env_http_headers.%s: %q is not a variable name", h, fmt.Sprint(vv))
			}
			x.headers[h] = "${" + vname + ":-}"
		}
	}

	var err error
	if x.startup, err = seconds(e, "startup_timeout_sec", time.Second); err != nil {
		return nil, nil, "", err
	}
	if x.startup == 0 {
		if x.startup, err = seconds(e, "startup_timeout_ms", time.Millisecond); err != nil {
			return nil, nil, "", err
		}
	}
	if x.call, err = seconds(e, "tool_timeout_sec", time.Second); err != nil {
		return nil, nil, "", err
	}
	if x.allow, err = toolNames(e, "enabled_tools"); err != nil {
		return nil, nil, "", err
	}
	_, x.hasAllow = e["enabled_tools"]
	if x.deny, err = toolNames(e, "disabled_tools"); err != nil {
		return nil, nil, "", err
	}
	return g, x, "", nil
}

// seconds reads a duration written as a number of units (integer or not).
func seconds(e map[string]any, key string, unit time.Duration) (time.Duration, error) {
	v, ok := e[key]
	if !ok {
		return 0, nil
	}
	var f float64
	switch n := v.(type) {
	case int64:
		f = float64(n)
	case float64:
		f = n
	default:
		return 0, fmt.Errorf("%s is not a number", key)
	}
	if math.IsNaN(f) || f < 0 || f*float64(unit) > float64(math.MaxInt64) {
		return 0, fmt.Errorf("%s: %v is not a duration", key, v)
	}
	return time.Duration(f * float64(unit)), nil
}

// toolNames reads a list of tool names as globs that match each name alone.
func toolNames(e map[string]any, key string) ([]string, error) {
	v, ok := e[key]
	if !ok {
		return nil, nil
	}
	list, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("%s is not a list", key)
	}
	out := []string{}
	for _, t := range list {
		s, ok := t.(string)
		if !ok || s == "" {
			return nil, fmt.Errorf("%s: %q is not a tool name", key, fmt.Sprint(t))
		}
		out = append(out, globQuote.Replace(s))
	}
	return out, nil
}

// globQuote escapes the characters a tool-name glob treats specially.
var globQuote = strings.NewReplacer(`\`, `\\`, `*`, `\*`, `?`, `\?`, `[`, `\[`)

func varName(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		if r != '_' && (r < 'A' || r > 'Z') && (r < 'a' || r > 'z') && (i == 0 || r < '0' || r > '9') {
			return false
		}
	}
	return true
}

// decodeTOML parses a TOML file, reporting a syntax error with its line
// and column.
func decodeTOML(path string, data []byte) (map[string]any, error) {
	var root map[string]any
	if _, err := toml.Decode(string(data), &root); err != nil {
		var pe toml.ParseError
		if errors.As(err, &pe) {
			return nil, fmt.Errorf("%s:%d:%d: toml: %s", path, pe.Position.Line, pe.Position.Col, pe.Message)
		}
		return nil, fmt.Errorf("%s: toml: %w", path, err)
	}
	return root, nil
}

// isCodexTOML reports whether data is TOML with an [mcp_servers] table.
func isCodexTOML(data []byte) bool {
	root, err := decodeTOML("", data)
	if err != nil {
		return false
	}
	_, ok := root["mcp_servers"].(map[string]any)
	return ok
}

// RewriteSupported says why [Rewrite] cannot edit a file of the format,
// or nil. The rewrite edits JSON (with comments) in place; Codex's
// config.toml is TOML, which it would corrupt.
func RewriteSupported(format string) error {
	if sp, ok := specs[format]; ok && sp.toml {
		return fmt.Errorf("--rewrite edits JSON client files only, and %s's file is TOML: it is not rewritten. "+
			"Import without --rewrite, then in the file replace the imported [mcp_servers.*] tables with one for toolgate by hand:\n"+
			"  [mcp_servers.toolgate]\n  command = \"/path/to/toolgate\"\n  args = [\"serve\", \"--config\", \"/path/to/toolgate.yaml\"]", format)
	}
	return nil
}
