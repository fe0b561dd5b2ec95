package clientconfig

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode"

	"go.yaml.in/yaml/v3"
)

// yamlUpstream is an upstream as toolgate.yaml writes it (only the keys an
// import sets, in the order the docs use).
type yamlUpstream struct {
	Name      string            `yaml:"name"`
	Prefix    *string           `yaml:"prefix,omitempty"`
	Transport string            `yaml:"transport,omitempty"`
	Command   string            `yaml:"command,omitempty"`
	Args      []string          `yaml:"args,omitempty,flow"`
	Env       map[string]string `yaml:"env,omitempty"`
	Dir       string            `yaml:"dir,omitempty"`
	URL       string            `yaml:"url,omitempty"`
	Headers   map[string]string `yaml:"headers,omitempty"`
	Allow     []string          `yaml:"allow,omitempty,flow"`
	Deny      []string          `yaml:"deny,omitempty,flow"`
	Timeout   string            `yaml:"call_timeout,omitempty"`
	Startup   string            `yaml:"startup_timeout,omitempty"`
	Disabled  bool              `yaml:"disabled,omitempty"`
}

// YAML is the `upstreams:` section of toolgate.yaml equivalent to the
// client's servers, with what was skipped or needs attention as comments.
// A value the client takes from the environment is never written in
// clear: in env and headers it is toolgate's own ${VAR} reference; in
// command, args and the URL (which toolgate does not expand) the entry
// keeps the client's text and is written disabled, with a note.
func (r *Result) YAML() ([]byte, error) {
	var b bytes.Buffer
	fmt.Fprintf(&b, "# Imported from %s (%s).\n", commentText(r.Path), r.Format)
	for _, s := range r.Skipped {
		fmt.Fprintf(&b, "# Skipped %s.\n", commentText(s))
	}
	for _, n := range r.Notes {
		fmt.Fprintf(&b, "# Note: %s.\n", commentText(strings.TrimSuffix(n, ".")))
	}
	// Only the printed entries: Upstreams hold what the environment gave
	// command, args and URL (secrets among them), for serving alone.
	ups := r.printed
	if len(ups) != len(r.Upstreams) {
		return nil, errors.New("clientconfig: a Result not made by Parse cannot be printed")
	}
	list := make([]yamlUpstream, 0, len(ups))
	for _, u := range ups {
		y := yamlUpstream{Name: u.Name, Prefix: u.Prefix, Command: u.Command, Args: u.Args, Env: u.Env, Dir: u.Dir, URL: u.URL, Headers: u.Headers,
			Allow: u.Allow, Deny: u.Deny, Disabled: u.Disabled}
		if u.CallTimeout > 0 {
			y.Timeout = u.CallTimeout.String()
		}
		if u.StartupTimeout > 0 {
			y.Startup = u.StartupTimeout.String()
		}
		if u.Transport != "" && !(u.Transport == "stdio" && u.Command != "") {
			// Only where it is not what toolgate infers: a written
			// transport: http does not fall back to legacy SSE.
			y.Transport = u.Transport
		}
		list = append(list, y)
	}
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(map[string]any{"upstreams": list}); err != nil {
		return nil, err
	}
	return b.Bytes(), enc.Close()
}

// commentText is s fit for one comment line: the notes quote text from
// the client's file (server names, field names, envFile, input ids), and
// a line break in it would end the comment and let that file write
// toolgate's configuration. Control characters and YAML's other line
// breaks (NEL, U+2028, U+2029) are written as Go escapes them (\n,
// \x1b, \u2028); invalid UTF-8 as U+FFFD.
func commentText(s string) string {
	var b strings.Builder
	for _, r := range s {
		if unicode.IsControl(r) || r == '\u2028' || r == '\u2029' {
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}
