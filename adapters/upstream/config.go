package upstream

import (
	"errors"
	"fmt"
	"github.com/toolgate/toolgate/gateway"
	"maps"
	"net/url"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"
)

// Config is one entry of the `upstreams:` list in toolgate's config.
type Config struct {
	Name      string            `koanf:"name"`      // required, 1-32 of [A-Za-z0-9_-], unique
	Prefix    *string           `koanf:"prefix"`    // tool-name prefix; nil means Name; "" means no prefix
	Transport string            `koanf:"transport"` // "stdio" | "http" | "sse"; empty: stdio if Command is set, else http, falling back to sse (connect)
	Command   string            `koanf:"command"`
	Args      []string          `koanf:"args"`
	Env       map[string]string `koanf:"env"` // values may reference the gateway's environment as ${VAR}; never logged
	Dir       string            `koanf:"dir"`
	URL       string            `koanf:"url"`
	Headers   map[string]string `koanf:"headers"` // values may be ${VAR}; never logged
	Allow     []string          `koanf:"allow"`   // globs on the upstream's own tool names; filter tools/list AND tools/call
	Deny      []string          `koanf:"deny"`
	// CallTimeout is the per-call deadline of this upstream's tools; 0
	// means Options.DefaultCallTimeout, and if that is 0 too, the
	// pipeline's default.
	CallTimeout time.Duration `koanf:"call_timeout"`
	// MaxConcurrency bounds the calls in flight to this upstream; 0 means
	// 16. Calls over the limit wait (respecting their context).
	MaxConcurrency int `koanf:"max_concurrency"`
	// MaxResultBytes bounds one message read from the upstream (a tool's
	// result, say); 0 means 16 MiB. A larger message is refused while it
	// streams in, never held whole: the call it answers fails with an
	// error naming this key.
	MaxResultBytes int64 `koanf:"max_result_bytes"`
	// TrustAnnotations: nil or true takes hints from the upstream's
	// annotations (an absent hint is destructive and open-world, as in MCP);
	// false treats every tool as destructive and open-world.
	TrustAnnotations *bool `koanf:"trust_annotations"`
	// Capabilities are declared by every tool of this upstream (fs.read,
	// net, ...) for the policy.
	Capabilities []string `koanf:"capabilities"`
	// Grant lists capabilities the operator grants to this upstream's tools.
	// The wiring turns it into a policy grant for "<prefix>__*"; this
	// package only carries it.
	Grant []string `koanf:"grant"`
	// ForwardRoots declares the roots capability to the upstream and answers
	// its roots/list requests (see Options.Roots). Default false: the
	// upstream is never told about roots.
	ForwardRoots bool `koanf:"forward_roots"`
	// RelaySampling and RelayElicitation declare the sampling (elicitation)
	// capability to the upstream and relay its sampling/createMessage
	// (elicitation/create) requests to the client of the call they belong
	// to. Default false: the upstream is told of neither capability (it sees
	// the same client as before, offers the same tools) and such requests
	// are refused. When on, a request is relayed only when it can be
	// attributed to exactly one call (it arrived on that call's own
	// response stream, or that call is the only request in flight on the
	// connection) and that call's client declared the capability (a
	// 2026-07-28 client, which cannot be sent requests, is asked in a
	// round of its call: gateway/exchange.go); otherwise the upstream gets
	// a JSON-RPC error. The capability is declared for the whole
	// connection, so with several clients of different abilities the
	// upstream may ask a client that cannot answer, and gets an error.
	// Legacy SSE upstreams cannot send requests at all.
	RelaySampling    bool `koanf:"relay_sampling"`
	RelayElicitation bool `koanf:"relay_elicitation"`
	// Protocol chooses the connections to the upstream (modern.go): ""
	// (auto) a 2025-11-25 main connection, and for 2026-07-28 callers a
	// second one of their era when the upstream speaks it, or a 2026-07-28
	// main connection when the upstream refuses initialize; ProtocolLegacy
	// only the 2025-11-25 connection, for callers of both eras (one stdio
	// child); ProtocolModern only a 2026-07-28 connection.
	Protocol string `koanf:"protocol"`
	// Tasks offers tools of the upstream as tasks that the upstream does
	// not run as tasks itself: upstream tool-name globs to "optional"
	// (callers that take tasks may call it as one) or "required" (only as
	// a task). toolgate runs such a task itself and calls the upstream
	// plainly (docs/tasks.md). Tools the upstream runs as tasks need no
	// entry.
	Tasks map[string]string `koanf:"tasks"`
	// StartupTimeout bounds connect + initialize + first listing; 0 means 30s.
	StartupTimeout time.Duration `koanf:"startup_timeout"`
	Disabled       bool          `koanf:"disabled"`
}

// Values of Config.Protocol besides auto ("").
const (
	ProtocolLegacy = "2025-11-25"
	ProtocolModern = "2026-07-28"
)

// Transports.
const (
	TransportStdio = "stdio"
	TransportHTTP  = "http"
	TransportSSE   = "sse"
)

const (
	defaultMaxConcurrency = 16
	// defaultMaxResultBytes is far above what a model can use (the gateway
	// summarizes large output into artifacts anyway) and far below what
	// hurts: one message is held whole while it is decoded, several times.
	defaultMaxResultBytes = 16 << 20
	defaultStartupTimeout = 30 * time.Second
)

// validName reports whether s is an upstream name or prefix: 1 to 32
// characters of [A-Za-z0-9_-], the characters of a tool name (the prefix
// begins the served names, "<prefix>__<tool>").
func validName(s string) bool { return len(s) <= 32 && gateway.ValidToolName(s) }

// EffectiveTransport is the transport the upstream uses: Transport, or
// stdio when Command is set, else http.
func (c *Config) EffectiveTransport() string {
	if c.Transport != "" {
		return c.Transport
	}
	if c.Command != "" {
		return TransportStdio
	}
	return TransportHTTP
}

// EffectivePrefix is the prefix of the upstream's tool and prompt names:
// Prefix if set (possibly empty), else Name.
func (c *Config) EffectivePrefix() string {
	if c.Prefix != nil {
		return *c.Prefix
	}
	return c.Name
}

// Validate checks the entry and returns an error naming the upstream and
// the field at fault. It resolves every ${VAR} in env and headers against
// the gateway's environment (an unset variable is an error that names it;
// values are never included in errors). A disabled entry is checked for
// syntax only.
func (c *Config) Validate() error {
	var errs []error
	who := fmt.Sprintf("upstream %q", c.Name)
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", who, fmt.Sprintf(format, args...)))
	}
	if !validName(c.Name) {
		bad("name: must be 1-32 characters of [A-Za-z0-9_-]")
	}
	if c.Prefix != nil && *c.Prefix != "" && !validName(*c.Prefix) {
		bad("prefix %q: must be empty or 1-32 characters of [A-Za-z0-9_-]", *c.Prefix)
	}
	switch c.Transport {
	case "", TransportStdio, TransportHTTP, TransportSSE:
	default:
		bad("transport %q: must be stdio, http or sse", c.Transport)
	}
	if c.Command != "" && c.URL != "" {
		bad("command and url are both set; an upstream is either a command (stdio) or a url (http, sse)")
	}
	switch c.Protocol {
	case "", "auto", ProtocolLegacy:
	case ProtocolModern:
		if c.EffectiveTransport() == TransportSSE {
			bad("protocol %q: the legacy SSE transport cannot carry it; use transport http", c.Protocol)
		}
	default:
		bad("protocol %q: must be auto, %s or %s", c.Protocol, ProtocolLegacy, ProtocolModern)
	}
	switch c.EffectiveTransport() {
	case TransportStdio:
		if c.Command == "" {
			bad("command: required for a stdio upstream")
		}
		if c.URL != "" && c.Command == "" {
			bad("url: set on a stdio upstream (transport: stdio); remove it or use transport http or sse")
		}
		if len(c.Headers) > 0 {
			bad("headers: only http and sse upstreams send headers")
		}
	case TransportHTTP, TransportSSE:
		if c.URL == "" {
			bad("url: required for an %s upstream (or set command for a stdio upstream)", c.EffectiveTransport())
		} else if u, err := url.Parse(c.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			bad("url: must be an absolute http:// or https:// URL")
		}
		if c.Command != "" && c.URL == "" {
			bad("command: set on an %s upstream; remove it or use transport stdio", c.EffectiveTransport())
		}
		if len(c.Args) > 0 || len(c.Env) > 0 || c.Dir != "" {
			bad("args, env and dir apply only to stdio upstreams")
		}
	}
	for i, g := range c.Allow {
		if err := gateway.CheckGlob(g); err != nil {
			bad("allow[%d]: %v", i, err)
		}
	}
	for i, g := range c.Deny {
		if err := gateway.CheckGlob(g); err != nil {
			bad("deny[%d]: %v", i, err)
		}
	}
	for _, g := range slices.Sorted(maps.Keys(c.Tasks)) {
		if err := gateway.CheckGlob(g); err != nil {
			bad("tasks[%q]: %v", g, err)
		}
		if v := c.Tasks[g]; v != gateway.TaskOptional && v != gateway.TaskRequired {
			bad("tasks[%q]: %q is not optional or required", g, v)
		}
	}
	if c.CallTimeout < 0 {
		bad("call_timeout: must not be negative")
	}
	if c.StartupTimeout < 0 {
		bad("startup_timeout: must not be negative")
	}
	if c.MaxConcurrency < 0 {
		bad("max_concurrency: must not be negative")
	}
	if c.MaxResultBytes < 0 {
		bad("max_result_bytes: must not be negative")
	}
	lookup := os.LookupEnv
	if c.Disabled {
		lookup = func(string) (string, bool) { return "", true }
	}
	for _, k := range sortedKeys(c.Env) {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			bad("env: invalid variable name %q", k)
			continue
		}
		if _, err := expandVars(c.Env[k], lookup); err != nil {
			bad("env.%s: %v", k, err)
		}
	}
	for _, k := range sortedKeys(c.Headers) {
		if k == "" || strings.ContainsAny(k, " :\r\n\x00") {
			bad("headers: invalid header name %q", k)
			continue
		}
		v, err := expandVars(c.Headers[k], lookup)
		if err != nil {
			bad("headers.%s: %v", k, err)
		} else if strings.ContainsAny(v, "\r\n\x00") {
			bad("headers.%s: the value contains a control character", k)
		}
	}
	return errors.Join(errs...)
}

// ValidateAll validates every entry and checks that names, and the
// prefixes of enabled entries, are unique.
func ValidateAll(cfgs []Config) error {
	var errs []error
	names := map[string]int{} // the first entry of each name
	prefixes := map[string]string{}
	for i := range cfgs {
		c := &cfgs[i]
		if err := c.Validate(); err != nil {
			errs = append(errs, err)
		}
		if first, ok := names[c.Name]; ok {
			// Its prefix clashes too, as it derives from the name: one
			// problem, said once.
			errs = append(errs, fmt.Errorf("upstream %q: name: upstreams[%d] has it too; each upstream needs a name of its own", c.Name, first))
			continue
		}
		names[c.Name] = i
		if c.Disabled {
			continue
		}
		p := c.EffectivePrefix()
		if p == "" {
			continue
		}
		if other, ok := prefixes[p]; ok {
			errs = append(errs, fmt.Errorf("upstream %q: prefix %q is also the prefix of upstream %q", c.Name, p, other))
		}
		prefixes[p] = c.Name
	}
	// Prefixes that overlap ("n" and "n__a", or "n" and "n_") make names
	// that either upstream could serve: n__a__x is tool a__x of the first
	// and tool x of the second, n___x tool _x of the first and tool x of
	// "n_". Refused, so that neither can take the other's names, nor be
	// reached by the other's globs (its grant: is a grant for n__*).
	for _, a := range cfgs {
		for _, b := range cfgs {
			p, q := a.EffectivePrefix(), b.EffectivePrefix()
			if !a.Disabled && !b.Disabled && p != "" && (strings.HasPrefix(q, p+"__") || q == p+"_") {
				errs = append(errs, fmt.Errorf("upstream %q: prefix %q overlaps the prefix %q of upstream %q (a tool named %s__x could come from either); choose prefixes that are not one another's start followed by __ (or by a single _ at the end)", b.Name, q, p, a.Name, q))
			}
		}
	}
	return errors.Join(errs...)
}

// expandVars replaces ${NAME} with the value lookup gives for NAME, and
// ${NAME:-DEFAULT} with that value or, when NAME is unset or empty, with
// DEFAULT taken literally (up to the first "}"); "$$" is a literal "$". Any
// other "$" is kept. An unset variable without a default is an error
// naming it (never its value). The default form is the shell's, which
// Claude Code's .mcp.json uses too, so an imported ${VAR:-x} keeps its
// meaning.
func expandVars(s string, lookup func(string) (string, bool)) (string, error) {
	return expandVarsCollect(s, lookup, nil)
}

// expandVarsCollect is expandVars that also passes each substituted value
// to collect (if not nil).
func expandVarsCollect(s string, lookup func(string) (string, bool), collect func(string)) (string, error) {
	if !strings.Contains(s, "$") {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		ch := s[i]
		if ch != '$' || i+1 >= len(s) {
			b.WriteByte(ch)
			continue
		}
		switch s[i+1] {
		case '$':
			b.WriteByte('$')
			i++
		case '{':
			end := strings.IndexByte(s[i+2:], '}')
			if end < 0 {
				return "", errors.New("unterminated ${ (write $$ for a literal $)")
			}
			name, def, hasDef := strings.Cut(s[i+2:i+2+end], ":-")
			if !varNameRE.MatchString(name) {
				return "", fmt.Errorf("${%s}: invalid variable name", name)
			}
			v, ok := lookup(name)
			switch {
			case hasDef && v == "":
				// The default is the configuration's own text, not a
				// secret: not collected (a default such as "info" would
				// otherwise be redacted wherever it appears).
				v = def
			case !ok:
				return "", fmt.Errorf("environment variable %s is not set", name)
			case collect != nil:
				collect(v)
			}
			b.WriteString(v)
			i += 2 + end
		default:
			b.WriteByte(ch)
		}
	}
	return b.String(), nil
}

var varNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// expandMap expands every value of m; collect gets each substituted
// variable value.
func expandMap(m map[string]string, lookup func(string) (string, bool), collect func(string)) (map[string]string, error) {
	if len(m) == 0 {
		return nil, nil
	}
	out := make(map[string]string, len(m))
	for _, k := range sortedKeys(m) {
		v, err := expandVarsCollect(m[k], lookup, collect)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", k, err)
		}
		out[k] = v
	}
	return out, nil
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// filter decides which upstream tools are offered: allowed by some allow
// glob (or there are none) and denied by no deny glob.
type filter struct {
	allow, deny []string // tool-name globs (gateway.MatchGlob)
}

func newFilter(allow, deny []string) (*filter, error) {
	for _, g := range append(append([]string{}, allow...), deny...) {
		if err := gateway.CheckGlob(g); err != nil {
			return nil, err
		}
	}
	return &filter{allow: allow, deny: deny}, nil
}

// maxResultBytes is the effective MaxResultBytes.
func (c *Config) maxResultBytes() int64 {
	if c.MaxResultBytes > 0 {
		return c.MaxResultBytes
	}
	return defaultMaxResultBytes
}

// unmatched describes the allow and deny globs that match none of the
// upstream's tool names (its own names, before the prefix): an `allow:
// ["ecoh"]` that quietly drops echo is a mistake worth a warning.
func (f *filter) unmatched(names []string) []string {
	var out []string
	for _, l := range []struct {
		key   string
		globs []string
	}{{"allow", f.allow}, {"deny", f.deny}} {
		for _, g := range l.globs {
			if !slices.ContainsFunc(names, func(n string) bool { return gateway.MatchGlob(g, n) }) {
				out = append(out, fmt.Sprintf("%s glob %q matches no tool of the upstream%s", l.key, g, gateway.DidYouMean(g, names)))
			}
		}
	}
	return out
}

// allows reports whether the filter offers the tool: no deny glob matches
// it, and an allow glob does (or there are none).
func (f *filter) allows(name string) bool {
	for _, g := range f.deny {
		if gateway.MatchGlob(g, name) {
			return false
		}
	}
	if len(f.allow) == 0 {
		return true
	}
	for _, g := range f.allow {
		if gateway.MatchGlob(g, name) {
			return true
		}
	}
	return false
}

// taskSupport is the task support the operator gives the upstream's tool
// name (Tasks): that of the first glob in sorted order that matches, or
// "".
func (c *Config) taskSupport(name string) string {
	for _, g := range slices.Sorted(maps.Keys(c.Tasks)) {
		if gateway.MatchGlob(g, name) {
			return c.Tasks[g]
		}
	}
	return ""
}
