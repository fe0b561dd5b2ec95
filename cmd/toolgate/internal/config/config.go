// Package config loads toolgate's configuration with koanf, in layers:
// the embedded defaults (defaults.yaml), then a YAML file (--config FILE,
// or toolgate.yaml in the working directory if present), then TOOLGATE_*
// environment variables, then flags. A later layer overrides an earlier
// one key by key. Unknown keys are an error that names the key, in every
// layer, so a typo never silently does nothing.
//
// Environment variables map to keys by dropping the TOOLGATE_ prefix,
// lower-casing, and reading a double underscore as a level:
// TOOLGATE_LIMITS__CALL_TIMEOUT=30s sets limits.call_timeout, and
// TOOLGATE_HTTP__ALLOWED_ORIGINS=a,b sets a list.
package config

import (
	_ "embed"
	"encoding/base64"
	"errors"
	"fmt"
	"maps"
	"math"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-viper/mapstructure/v2"
	"github.com/knadh/koanf/parsers/yaml"
	"github.com/knadh/koanf/providers/env/v2"
	"github.com/knadh/koanf/providers/posflag"
	"github.com/knadh/koanf/providers/rawbytes"
	"github.com/knadh/koanf/v2"
	"github.com/spf13/pflag"
	"github.com/toolgate/toolgate/adapters/clientconfig"
	"github.com/toolgate/toolgate/adapters/upstream"
	"github.com/toolgate/toolgate/adapters/yamlerr"
	"github.com/toolgate/toolgate/gateway"
	"github.com/toolgate/toolgate/policy"
	"github.com/toolgate/toolgate/toolsets/memory"
)

//go:embed defaults.yaml
var defaultsYAML []byte

// Defaults returns the embedded default configuration file.
func Defaults() []byte { return append([]byte(nil), defaultsYAML...) }

// parsedDefaults is defaults.yaml parsed once. Parsing it was half of a
// Load (0.45 of 1.0 ms), paid again by every reload and by each input of
// FuzzLoadConfigFile.
var parsedDefaults = sync.OnceValues(func() (map[string]any, error) {
	return yaml.Parser().Unmarshal(defaultsYAML)
})

// defaultsLayer is the koanf provider of the defaults' layer. Each Read
// gives a copy of parsedDefaults: koanf merges the later layers into the
// maps of the first, so a shared tree would carry one Load's file into
// the next.
type defaultsLayer struct{}

func (defaultsLayer) ReadBytes() ([]byte, error) { return Defaults(), nil }

func (defaultsLayer) Read() (map[string]any, error) {
	m, err := parsedDefaults()
	if err != nil {
		return nil, err
	}
	return copyTree(m).(map[string]any), nil
}

// copyTree copies the maps and lists of a parsed YAML tree; its scalars
// are values and are shared.
func copyTree(v any) any {
	switch v := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(v))
		for k, e := range v {
			m[k] = copyTree(e)
		}
		return m
	case []any:
		l := make([]any, len(v))
		for i, e := range v {
			l[i] = copyTree(e)
		}
		return l
	}
	return v
}

// Config is toolgate's configuration. The koanf tags are the keys.
type Config struct {
	RunsDir string `koanf:"runs_dir"`
	Runs    Runs   `koanf:"runs"`
	// ReplicaID names this gateway among replicas behind a load balancer;
	// it is in every record. Empty: none (one gateway).
	ReplicaID   string             `koanf:"replica_id"`
	Log         Log                `koanf:"log"`
	Limits      Limits             `koanf:"limits"`
	Sandbox     Sandbox            `koanf:"sandbox"`
	Filesystem  Filesystem         `koanf:"filesystem"`
	Diagnostics Diagnostics        `koanf:"diagnostics"`
	HTTP        HTTP               `koanf:"http"`
	Policy      policy.Config      `koanf:"policy"`
	Skills      Skills             `koanf:"skills"`
	Memory      Memory             `koanf:"memory"`
	Upstreams   []upstream.Config  `koanf:"upstreams"`
	Profiles    map[string]Profile `koanf:"profiles"`
	Discovery   Discovery          `koanf:"discovery"`
	Metrics     Metrics            `koanf:"metrics"`
	Traces      Traces             `koanf:"traces"`
	Definitions []Definition       `koanf:"definitions"`
	Admin       Admin              `koanf:"admin"`
	// UpstreamsFrom names other clients' MCP server lists whose servers
	// are served as upstreams too (read when toolgate starts).
	UpstreamsFrom []UpstreamsFrom `koanf:"upstreams_from"`

	// ImportNotes are what reading UpstreamsFrom found worth saying
	// (skipped entries, renamed servers, variables to set); logged at
	// start.
	ImportNotes []string `koanf:"-"`
}

// UpstreamsFrom is one client's file to take upstreams from.
type UpstreamsFrom struct {
	// Format is auto or one of clientconfig.Formats.
	Format string `koanf:"format"`
	Path   string `koanf:"path"`
}

// Definition is a definition-only tool: toolgate does not run it; a call
// waits until an operator (or, with answer: person, the client's user)
// submits its output.
type Definition struct {
	Name         string         `koanf:"name"`
	Description  string         `koanf:"description"`
	InputSchema  map[string]any `koanf:"input_schema"`
	OutputSchema map[string]any `koanf:"output_schema"`
	// Answer is operator (default) or person.
	Answer  string        `koanf:"answer"`
	Timeout time.Duration `koanf:"timeout"`
}

// Admin configures the operator's HTTP API.
type Admin struct {
	// Addr is where the admin API listens ("" = off). It also runs beside
	// a stdio serve.
	Addr     string   `koanf:"addr"`
	Tokens   []string `koanf:"tokens"`
	TokenEnv string   `koanf:"token_env"`
}

// Traces configures OpenTelemetry traces. The exporter (OTLP over HTTP)
// is configured by the standard OTEL_* environment variables
// (OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_EXPORTER_OTLP_HEADERS,
// OTEL_SERVICE_NAME, OTEL_TRACES_SAMPLER...).
type Traces struct {
	Enabled bool `koanf:"enabled"`
}

// Metrics configures Prometheus metrics.
type Metrics struct {
	Enabled bool `koanf:"enabled"`
	// Addr, if set, serves /metrics on a listener of its own (loopback
	// unless AllowRemote); otherwise /metrics is on the HTTP listener.
	Addr        string `koanf:"addr"`
	AllowRemote bool   `koanf:"allow_remote"`
	// TokenEnv names a variable holding the bearer token(s) (comma
	// separated) the listener of Addr requires; "" is none.
	TokenEnv string `koanf:"token_env"`
}

// Profile is a named view of the catalog: the tools matching Tools (all
// when empty) and not Deny. Served at http.path + "/NAME", and by
// `serve --profile NAME`; the profile named "default" narrows the plain
// endpoint too.
type Profile struct {
	Tools []string `koanf:"tools"`
	Deny  []string `koanf:"deny"`
}

// Discovery configures tool search (find_tools, call_tool).
type Discovery struct {
	Mode      string   `koanf:"mode"`
	Threshold int      `koanf:"threshold"`
	Pinned    []string `koanf:"pinned"`
}

// Memory configures the memory toolset and its store.
type Memory struct {
	Enabled   bool   `koanf:"enabled"`
	WriteMode string `koanf:"write_mode"`
	Path      string `koanf:"path"`
}

// Skills configures the skills toolset.
type Skills struct {
	Dirs []string `koanf:"dirs"`
}

// Diagnostics switches the diagnostics toolset (echo, sleep) on.
type Diagnostics struct {
	Enabled bool `koanf:"enabled"`
}

// Log configures operator logs (never the protocol stream).
type Log struct {
	Level  string `koanf:"level"`
	Format string `koanf:"format"`
	File   string `koanf:"file"`
}

// Runs is the run archive's retention, applied when serve or call starts:
// runs beyond the Keep newest, or older than MaxAge, are removed (never a
// live one). Zero turns either off.
type Runs struct {
	Keep   int           `koanf:"keep"`
	MaxAge time.Duration `koanf:"max_age"`
}

// Limits are the pipeline's limits.
type Limits struct {
	CallTimeout    time.Duration `koanf:"call_timeout"`
	MaxOutputBytes int           `koanf:"max_output_bytes"`
	ShutdownGrace  time.Duration `koanf:"shutdown_grace"`
	// MaxInFlight and MaxInFlightPerSession bound the HTTP requests being
	// answered at once, overall and per session.
	MaxInFlight           int `koanf:"max_in_flight"`
	MaxInFlightPerSession int `koanf:"max_in_flight_per_session"`
}

// Sandbox lists the roots of the filesystem tools.
type Sandbox struct {
	Roots []string `koanf:"roots"`
}

// Filesystem configures the filesystem toolset.
type Filesystem struct {
	Enabled          bool  `koanf:"enabled"`
	MaxReadBytes     int   `koanf:"max_read_bytes"`
	MaxReadLines     int   `koanf:"max_read_lines"`
	MaxListEntries   int   `koanf:"max_list_entries"`
	MaxGrepMatches   int   `koanf:"max_grep_matches"`
	MaxGrepFileBytes int64 `koanf:"max_grep_file_bytes"`
	// MaxOverwriteBytes bounds the existing file write_file replaces (it
	// is read whole for the diff and the backup).
	MaxOverwriteBytes int64 `koanf:"max_overwrite_bytes"`
}

// HTTP configures the streamable HTTP transport.
type HTTP struct {
	Addr           string        `koanf:"addr"`
	Path           string        `koanf:"path"`
	AllowedOrigins []string      `koanf:"allowed_origins"`
	AllowedHosts   []string      `koanf:"allowed_hosts"`
	MaxBodyBytes   int64         `koanf:"max_body_bytes"`
	SessionIdleTTL time.Duration `koanf:"session_idle_ttl"`
	// SessionKeysEnv names the environment variable holding the session
	// keys (comma-separated, base64, 32 bytes each; the first seals): with
	// them, session ids are sealed and any replica serves any session.
	SessionKeysEnv string        `koanf:"session_keys_env"`
	MaxSessions    int           `koanf:"max_sessions"`
	MaxStreams     int           `koanf:"max_streams"`
	MaxBodyMemory  int64         `koanf:"max_body_memory"`
	MaxConnections int           `koanf:"max_connections"`
	BodyTimeout    time.Duration `koanf:"body_timeout"`
	IdleTimeout    time.Duration `koanf:"idle_timeout"`
	Auth           Auth          `koanf:"auth"`
}

// Auth configures bearer tokens.
type Auth struct {
	Tokens                     []Token `koanf:"tokens"`
	TokenEnv                   string  `koanf:"token_env"`
	AllowUnauthenticatedRemote bool    `koanf:"allow_unauthenticated_remote"`
	OAuth                      OAuth   `koanf:"oauth"`
}

// OAuth makes the HTTP transport an OAuth 2.1 resource server: JWT access
// tokens of Issuer for Audience (this endpoint's URL) are accepted.
type OAuth struct {
	Issuer          string   `koanf:"issuer"`
	Audience        string   `koanf:"audience"`
	JWKSURL         string   `koanf:"jwks_url"`
	ScopesSupported []string `koanf:"scopes_supported"`
	RequiredScopes  []string `koanf:"required_scopes"`
	// IntrospectionURL, if set, checks tokens that are not JWTs by RFC
	// 7662 introspection, as IntrospectionClientID with the secret in the
	// environment variable IntrospectionSecretEnv.
	IntrospectionURL       string `koanf:"introspection_url"`
	IntrospectionClientID  string `koanf:"introspection_client_id"`
	IntrospectionSecretEnv string `koanf:"introspection_client_secret_env"`
	// RecordClaims are the token claims kept in records.
	RecordClaims []string `koanf:"record_claims"`
}

// Enabled reports whether OAuth is configured.
func (o OAuth) Enabled() bool { return o.Issuer != "" }

// Token is one bearer token of http.auth.tokens: a plain string (named by
// its place, "1", "2"...), or {name, token} or {name, token_env}. The name
// is the caller's identity in records ("token:ci").
type Token struct {
	Name     string `koanf:"name"`
	Token    string `koanf:"token"`
	TokenEnv string `koanf:"token_env"`
}

// UnmarshalText makes a plain string in the list a token.
func (t *Token) UnmarshalText(p []byte) error {
	t.Token = string(p)
	return nil
}

// DefaultFile is read when no --config is given and it exists in the
// working directory.
const DefaultFile = "toolgate.yaml"

// EnvPrefix begins every environment override.
const EnvPrefix = "TOOLGATE_"

// Source says where the configuration came from.
type Source struct {
	// File is the config file read, or "" if none.
	File string
}

// Options say where to load from. Zero values mean the process's own.
type Options struct {
	// File is --config; "" means toolgate.yaml if present.
	File string
	// Flags are the parsed flags of the subcommand; see FlagKeys.
	Flags *pflag.FlagSet
	// FlagKeys maps flag names to config keys; flags not listed are not
	// configuration (--json, say) and are ignored here.
	FlagKeys map[string]string
	// Environ replaces os.Environ (for tests).
	Environ func() []string
	// RefuseEmpty makes an empty config file an error rather than the
	// defaults. A reload sets it: an empty file there is far more likely
	// an editor's save under way (truncated, not yet written) than a wish
	// to stop every upstream and reset the policy. It is decided on the
	// bytes read, so a truncation between a look and the read cannot slip
	// through.
	RefuseEmpty bool
}

// ErrEmptyFile is Load's error for an empty file under RefuseEmpty.
var ErrEmptyFile = errors.New("config file is empty")

// Load reads the configuration layers and returns the checked result.
func Load(opts Options) (*Config, Source, *koanf.Koanf, error) {
	k := koanf.New(".")
	if err := k.Load(defaultsLayer{}, nil); err != nil {
		return nil, Source{}, nil, fmt.Errorf("embedded defaults: %w", err)
	}
	var src Source
	path := opts.File
	if path == "" {
		if _, err := os.Stat(DefaultFile); err == nil {
			path = DefaultFile
		}
	}
	if path != "" {
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, Source{}, nil, fmt.Errorf("config file: %w", err)
		}
		if len(data) == 0 && opts.RefuseEmpty {
			return nil, Source{}, nil, fmt.Errorf("%w: %s; the configuration in force is kept (write the defaults out with toolgate config --defaults)", ErrEmptyFile, path)
		}
		if clientconfig.IsClientConfig(data) {
			format, _ := clientconfig.Detect(path, data)
			return nil, Source{}, nil, fmt.Errorf("config file %s is an MCP client's server list (%s format), not toolgate's configuration: "+
				"serve its servers with `upstreams_from: [{format: auto, path: %s}]` in toolgate.yaml, "+
				"or convert it once with `toolgate import %s`", path, format, path, path)
		}
		if err := k.Load(rawbytes.Provider(data), yaml.Parser()); err != nil {
			return nil, Source{}, nil, fmt.Errorf("config file %s: %w", path, yamlerr.Place(data, err))
		}
		src.File = path
	}
	environ := opts.Environ
	if environ == nil {
		environ = os.Environ
	}
	// The variables the *_env settings name hold secrets (tokens, session
	// keys, a client secret), not settings, even when their names begin
	// with TOOLGATE_ (docs/replicas.md's TOOLGATE_SESSION_KEYS does): they
	// are not read as keys.
	secretVars := map[string]bool{}
	for _, key := range k.Keys() { // not All(), which copies every value
		if !strings.HasSuffix(key, "_env") {
			continue
		}
		if s, ok := k.Get(key).(string); ok && s != "" {
			secretVars[s] = true
		}
	}
	for _, tok := range k.Slices("http.auth.tokens") { // {name, token_env}
		if s := tok.String("token_env"); s != "" {
			secretVars[s] = true
		}
	}
	for _, kv := range environ() {
		if name, v, _ := strings.Cut(kv, "="); v != "" && strings.HasPrefix(name, EnvPrefix) && strings.HasSuffix(name, "_ENV") {
			secretVars[v] = true
		}
	}
	transform := func(key, v string) (string, any) {
		if secretVars[key] {
			return "", nil
		}
		return envKey(key, v)
	}
	if err := k.Load(env.Provider(".", env.Opt{Prefix: EnvPrefix, EnvironFunc: environ, TransformFunc: transform}), nil); err != nil {
		return nil, Source{}, nil, fmt.Errorf("environment: %w", err)
	}
	if opts.Flags != nil {
		if err := k.Load(posflag.ProviderWithFlag(opts.Flags, ".", k, func(f *pflag.Flag) (string, any) {
			key, ok := opts.FlagKeys[f.Name]
			if !ok || !f.Changed {
				return "", nil
			}
			return key, posflag.FlagVal(opts.Flags, f)
		}), nil); err != nil {
			return nil, Source{}, nil, fmt.Errorf("flags: %w", err)
		}
	}
	cfg, err := decode(k, environ())
	if err != nil {
		return nil, Source{}, nil, err
	}
	if err := cfg.importUpstreams(os.LookupEnv); err != nil {
		return nil, Source{}, nil, err
	}
	if err := cfg.check(); err != nil {
		return nil, Source{}, nil, err
	}
	return cfg, src, k, nil
}

// envKey maps TOOLGATE_LIMITS__CALL_TIMEOUT to limits.call_timeout.
func envKey(k, v string) (string, any) {
	k = strings.ToLower(strings.TrimPrefix(k, EnvPrefix))
	return strings.ReplaceAll(k, "__", "."), v
}

// decode unmarshals strictly: an unknown key is an error naming it (and
// the variable of environ it came from, if it did: describeDecodeError).
func decode(k *koanf.Koanf, environ []string) (*Config, error) {
	var cfg Config
	dc := &mapstructure.DecoderConfig{
		TagName:          "koanf",
		Result:           &cfg,
		ErrorUnused:      true,
		WeaklyTypedInput: true,
		DecodeHook: mapstructure.ComposeDecodeHookFunc(
			mapIsNoList,
			toDuration,
			toWholeNumber,
			stringToList,
			mapstructure.TextUnmarshallerHookFunc(),
		),
	}
	if err := k.UnmarshalWithConf("", &cfg, koanf.UnmarshalConf{Tag: "koanf", DecoderConfig: dc}); err != nil {
		return nil, fmt.Errorf("config: %s", describeDecodeError(err, environ))
	}
	return &cfg, nil
}

// toDuration reads a duration: text with a unit. A bare number is refused:
// YAML's `call_timeout: 30` would otherwise be 30 nanoseconds (and the
// same value from the environment, text, already needs a unit). The
// decoder's error names the key.
func toDuration(from, to reflect.Type, data any) (any, error) {
	if to != reflect.TypeFor[time.Duration]() || from == to {
		return data, nil
	}
	switch from.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64:
		return nil, fmt.Errorf("%v is a number, not a duration: write it with a unit, e.g. %vs or %vms", data, data, data)
	case reflect.String:
	default:
		return data, nil
	}
	str := strings.TrimSpace(data.(string))
	if _, err := strconv.ParseFloat(str, 64); err == nil {
		return nil, fmt.Errorf("%q is a number, not a duration: write it with a unit, e.g. %ss or %sms", str, str, str)
	}
	d, err := ParseDuration(str)
	if err != nil {
		return nil, fmt.Errorf("%q is not a duration: write it with a unit, as in 30s, 2m or 1h30m", str)
	}
	return d, nil
}

// ParseDuration is [time.ParseDuration] that also takes whole days in
// front ("30d", "1d12h"), as retention is usually said: runs.max_age and
// toolgate runs prune --older-than.
func ParseDuration(s string) (time.Duration, error) {
	days, rest, ok := strings.Cut(s, "d")
	if !ok {
		return time.ParseDuration(s)
	}
	n, err := strconv.ParseUint(days, 10, 16)
	if err != nil {
		return time.ParseDuration(s) // its error
	}
	d := time.Duration(n) * 24 * time.Hour
	if rest != "" {
		r, err := time.ParseDuration(rest)
		if err != nil || r < 0 {
			return 0, fmt.Errorf("time: invalid duration %q", s)
		}
		d += r
	}
	return d, nil
}

// toWholeNumber refuses a number with a fraction where a whole number
// goes: the decoder would drop the fraction (max_in_flight: 1.5 became 1).
func toWholeNumber(from, to reflect.Type, data any) (any, error) {
	if (from.Kind() != reflect.Float32 && from.Kind() != reflect.Float64) || to.Kind() < reflect.Int || to.Kind() > reflect.Uint64 {
		return data, nil
	}
	if f := reflect.ValueOf(data).Float(); f != math.Trunc(f) {
		return nil, fmt.Errorf("%v is not a whole number", data)
	}
	return data, nil
}

// mapIsNoList refuses a map where a list goes, unless it is one entry
// written without its "- " (every key one an entry takes), which is read
// as a list of that entry, as it always was. Left to the weakly typed
// decoder, `upstreams: {github: {command: x}}` (the shape of the
// mcpServers map other clients use) became a list of one entry whose key
// was the server's name, and the error read "unknown key
// upstreams[0].github". The decoder's error names the key.
func mapIsNoList(from, to reflect.Type, data any) (any, error) {
	if from.Kind() != reflect.Map || to.Kind() != reflect.Slice {
		return data, nil
	}
	keys := reflect.ValueOf(data).MapKeys()
	names := make([]string, 0, len(keys))
	for _, k := range keys {
		names = append(names, fmt.Sprint(k.Interface()))
	}
	slices.Sort(names)
	fields := entryKeys(to.Elem())
	if len(names) > 0 && !slices.ContainsFunc(names, func(n string) bool { return !fields[n] }) {
		return []any{data}, nil // one entry
	}
	hint := ""
	if len(names) > 0 && fields["name"] {
		hint = fmt.Sprintf(" (`- name: %s` and its keys below it)", names[0])
	}
	return nil, fmt.Errorf(`is a list, not a map: write each entry on a line of its own that starts with "- "%s; got a map with key(s) %s`, hint, strings.Join(names, ", "))
}

// entryKeys are the keys an entry of type t takes, when it is a struct.
func entryKeys(t reflect.Type) map[string]bool {
	keys := map[string]bool{}
	if t.Kind() == reflect.Struct {
		for f := range t.Fields() {
			if k := f.Tag.Get("koanf"); k != "" {
				keys[k] = true
			}
		}
	}
	return keys
}

// stringToList splits a comma-separated string (from the environment) into
// a list where the config wants a list.
func stringToList(from, to reflect.Type, data any) (any, error) {
	if from.Kind() != reflect.String || to.Kind() != reflect.Slice || to.Elem().Kind() != reflect.String {
		return data, nil
	}
	s := strings.TrimSpace(data.(string))
	if s == "" {
		return []string{}, nil
	}
	parts := strings.Split(s, ",")
	for i := range parts {
		parts[i] = strings.TrimSpace(parts[i])
	}
	return parts, nil
}

// addrProblem says what is wrong with a listen address, or "": it is
// host:port, and the port a number from 0 to 65535 (or a service's name),
// checked here rather than when the listener fails, since an address off
// loopback is refused first for what it lacks (tokens), which would hide
// a mistyped port.
func addrProblem(addr string) string {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Sprintf("%q is not host:port: %v", addr, err)
	}
	if _, err := net.LookupPort("tcp", port); err != nil {
		return fmt.Sprintf("%q: the port %q is not a number from 0 to 65535", addr, port)
	}
	return ""
}

// importUpstreams adds the servers of every upstreams_from file to the
// upstreams. An upstream toolgate.yaml defines by the same name wins (its
// file is toolgate's own), and the clash is noted. A server that cannot
// start as written (a variable it needs is not set, say) is not served
// and noted: the client starts its other servers, and so does toolgate,
// rather than failing the whole configuration on one entry of a file it
// does not own.
func (c *Config) importUpstreams(env clientconfig.Env) error {
	have := map[string]bool{}
	for _, u := range c.Upstreams {
		have[u.Name] = true
	}
	for i, src := range c.UpstreamsFrom {
		key := fmt.Sprintf("upstreams_from[%d]", i)
		if strings.TrimSpace(src.Path) == "" {
			return fmt.Errorf("%s.path: is empty", key)
		}
		res, err := clientconfig.Load(expandHome(src.Path), src.Format, env)
		if err != nil {
			return fmt.Errorf("%s: %w", key, err)
		}
		for _, s := range res.Skipped {
			c.ImportNotes = append(c.ImportNotes, fmt.Sprintf("%s: skipped %s", src.Path, s))
		}
		for _, n := range res.Notes {
			c.ImportNotes = append(c.ImportNotes, fmt.Sprintf("%s: %s", src.Path, n))
		}
		for _, u := range res.Upstreams {
			if have[u.Name] {
				c.ImportNotes = append(c.ImportNotes, fmt.Sprintf("%s: server %q is also defined in upstreams; toolgate.yaml's is used", src.Path, u.Name))
				continue
			}
			if err := u.Validate(); err != nil {
				c.ImportNotes = append(c.ImportNotes, fmt.Sprintf("%s: server %q is not served: %v", src.Path, u.Name, err))
				continue
			}
			if b := c.builtinNamed(u.Name); b != "" && !u.Disabled {
				c.ImportNotes = append(c.ImportNotes, fmt.Sprintf("%s: server %q is not served: %s; define it under upstreams with another name", src.Path, u.Name, b))
				continue
			}
			have[u.Name] = true
			c.Upstreams = append(c.Upstreams, u)
		}
	}
	return nil
}

// check validates values the types cannot.
func (c *Config) check() error {
	var errs []error
	bad := func(key, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", key, fmt.Sprintf(format, args...)))
	}
	if !slices.Contains([]string{"debug", "info", "warn", "error"}, c.Log.Level) {
		bad("log.level", "%q is not one of debug, info, warn, error", c.Log.Level)
	}
	if !slices.Contains([]string{"text", "json"}, c.Log.Format) {
		bad("log.format", "%q is not one of text, json", c.Log.Format)
	}
	if c.Limits.CallTimeout <= 0 {
		bad("limits.call_timeout", "must be positive, got %s", c.Limits.CallTimeout)
	}
	if c.Limits.MaxOutputBytes < 1024 {
		bad("limits.max_output_bytes", "must be at least 1024, got %d", c.Limits.MaxOutputBytes)
	}
	if c.Limits.ShutdownGrace < 0 {
		bad("limits.shutdown_grace", "must not be negative, got %s", c.Limits.ShutdownGrace)
	}
	for _, f := range []struct {
		key string
		v   int64
	}{
		{"filesystem.max_read_bytes", int64(c.Filesystem.MaxReadBytes)},
		{"filesystem.max_read_lines", int64(c.Filesystem.MaxReadLines)},
		{"filesystem.max_list_entries", int64(c.Filesystem.MaxListEntries)},
		{"filesystem.max_grep_matches", int64(c.Filesystem.MaxGrepMatches)},
		{"filesystem.max_grep_file_bytes", c.Filesystem.MaxGrepFileBytes},
		{"filesystem.max_overwrite_bytes", c.Filesystem.MaxOverwriteBytes},
		{"http.max_body_bytes", c.HTTP.MaxBodyBytes},
		{"http.max_sessions", int64(c.HTTP.MaxSessions)},
		{"http.max_streams", int64(c.HTTP.MaxStreams)},
		{"http.max_body_memory", c.HTTP.MaxBodyMemory},
		{"http.max_connections", int64(c.HTTP.MaxConnections)},
		{"http.body_timeout", int64(c.HTTP.BodyTimeout)},
		{"http.idle_timeout", int64(c.HTTP.IdleTimeout)},
		{"limits.max_in_flight", int64(c.Limits.MaxInFlight)},
		{"limits.max_in_flight_per_session", int64(c.Limits.MaxInFlightPerSession)},
	} {
		if f.v <= 0 {
			bad(f.key, "must be positive, got %d", f.v)
		}
	}
	if !strings.HasPrefix(c.HTTP.Path, "/") || c.HTTP.Path == "/healthz" {
		bad("http.path", "must start with / and not be /healthz, got %q", c.HTTP.Path)
	}
	if o := c.HTTP.Auth.OAuth; o.Enabled() && o.Audience == "" {
		bad("http.auth.oauth.audience", "is required with an issuer: the URL of this MCP endpoint, which tokens must name in aud")
	} else if !o.Enabled() && (o.Audience != "" || o.JWKSURL != "" || len(o.RequiredScopes) > 0) {
		bad("http.auth.oauth.issuer", "is required: the other oauth keys do nothing without it")
	}
	if c.Runs.Keep < 0 {
		bad("runs.keep", "must not be negative (0: keep any number), got %d", c.Runs.Keep)
	}
	if c.Runs.MaxAge < 0 {
		bad("runs.max_age", "must not be negative (0: any age), got %s", c.Runs.MaxAge)
	}
	if c.HTTP.MaxBodyMemory > 0 && c.HTTP.MaxBodyMemory < c.HTTP.MaxBodyBytes {
		bad("http.max_body_memory", "must be at least http.max_body_bytes (%d), got %d", c.HTTP.MaxBodyBytes, c.HTTP.MaxBodyMemory)
	}
	if c.HTTP.SessionIdleTTL <= 0 {
		bad("http.session_idle_ttl", "must be positive, got %s", c.HTTP.SessionIdleTTL)
	}
	if c.HTTP.Addr != "" {
		if why := addrProblem(c.HTTP.Addr); why != "" {
			bad("http.addr", "%s", why)
		}
	}
	if _, err := memory.ParseMode(c.Memory.WriteMode); err != nil {
		bad("memory.write_mode", "%v", err)
	}
	if err := upstream.ValidateAll(c.Upstreams); err != nil {
		errs = append(errs, err)
	}
	for i, u := range c.Upstreams {
		if b := c.builtinNamed(u.Name); b != "" && !u.Disabled {
			bad(fmt.Sprintf("upstreams[%d].name", i), "%s; give the upstream another name (prefix: %s keeps its tools' names)", b, u.Name)
		}
		if len(u.Grant) > 0 && !u.Disabled && u.EffectivePrefix() == "" {
			bad(fmt.Sprintf("upstreams[%d].grant", i), "needs a non-empty prefix: grants apply to the tools named <prefix>__*")
		}
	}
	profiles, err := c.PolicyProfiles()
	if err != nil {
		errs = append(errs, err)
	}
	if _, err := policy.New(c.EffectivePolicy(), &policy.Options{Profiles: profiles}); err != nil {
		errs = append(errs, err)
	}
	if !slices.Contains([]string{"all", "search", "auto"}, c.Discovery.Mode) {
		bad("discovery.mode", "%q is not one of all, search, auto", c.Discovery.Mode)
	}
	for i, id := range c.Policy.Identities {
		if why := c.placeName(id.Match.Name); why != "" {
			bad(fmt.Sprintf("policy.identities[%d].match.name", i), "%q is %s, which names no token: an unnamed token is known by its fingerprint (sha256:…, docs/auth.md), not its place; name the token ({name: ci, token_env: CI_TOKEN}) and match that name", id.Match.Name, why)
		}
	}
	if c.Metrics.TokenEnv != "" && c.Metrics.Addr == "" {
		bad("metrics.token_env", "applies to the listener of metrics.addr only: /metrics on the HTTP listener (metrics.addr empty) takes the MCP endpoint's tokens (http.auth)")
	}
	if c.Metrics.Addr != "" {
		if why := addrProblem(c.Metrics.Addr); why != "" {
			bad("metrics.addr", "%s", why)
		} else if !IsLoopback(c.Metrics.Addr) && !c.Metrics.AllowRemote {
			bad("metrics.addr", "%q is not a loopback address: metrics reveal tool names and traffic; set metrics.allow_remote: true to serve them there", c.Metrics.Addr)
		}
	}
	for i, t := range c.Admin.Tokens {
		if strings.TrimSpace(t) == "" {
			// Never a credential: the admin API would take the list for
			// "no tokens", and off loopback that is no authentication
			// (an unset variable in "${A},${B}" makes one).
			bad(fmt.Sprintf("admin.tokens[%d]", i), "is blank: remove it, or give the token (admin.token_env reads one from the environment)")
		}
	}
	if c.Admin.Addr != "" {
		if why := addrProblem(c.Admin.Addr); why != "" {
			bad("admin.addr", "%s", why)
		} else if !IsLoopback(c.Admin.Addr) && len(c.Admin.Tokens) == 0 && c.Admin.TokenEnv == "" {
			bad("admin.addr", "%q is not a loopback address: set admin.tokens or admin.token_env (the admin API answers waiting calls)", c.Admin.Addr)
		}
	}
	for i, d := range c.Definitions {
		key := fmt.Sprintf("definitions[%d]", i)
		if d.Answer != "" && d.Answer != "operator" && d.Answer != "person" {
			bad(key+".answer", "%q is not one of operator, person", d.Answer)
		}
		if d.Timeout < 0 {
			bad(key+".timeout", "must not be negative, got %s", d.Timeout)
		}
	}
	if c.Discovery.Threshold <= 0 {
		bad("discovery.threshold", "must be positive, got %d", c.Discovery.Threshold)
	}
	if _, err := policy.GlobSet("discovery.pinned", c.Discovery.Pinned); err != nil {
		errs = append(errs, err)
	}
	for i, r := range c.Sandbox.Roots {
		if strings.TrimSpace(r) == "" {
			bad(fmt.Sprintf("sandbox.roots[%d]", i), "is empty")
		}
	}
	if len(errs) == 0 {
		return nil
	}
	var lines []string
	for _, err := range errs {
		lines = append(lines, problemLines(err)...)
	}
	return fmt.Errorf("config: %s", listProblems(lines))
}

// stateDir is toolgate's directory for state: $XDG_STATE_HOME/toolgate,
// ~/.local/state/toolgate, or a directory under the system temp dir.
func stateDir() string {
	if s := os.Getenv("XDG_STATE_HOME"); s != "" {
		return filepath.Join(s, "toolgate")
	}
	if home, err := os.UserHomeDir(); err == nil {
		return filepath.Join(home, ".local", "state", "toolgate")
	}
	return filepath.Join(os.TempDir(), "toolgate")
}

// ResolvedMemoryPath is memory.path, or memory.db in the state directory.
func (c *Config) ResolvedMemoryPath() string {
	if c.Memory.Path != "" {
		return expandHome(c.Memory.Path)
	}
	return filepath.Join(stateDir(), "memory.db")
}

// DefaultWorkspace is the sandbox root when sandbox.roots is empty: one
// persistent directory in the user's state directory, so that files a
// client writes in one session are there in the next (and for every
// `toolgate call`), and the path can be told to the user once.
func DefaultWorkspace() string { return filepath.Join(stateDir(), "workspace") }

// ResolvedRunsDir is runs_dir, or the default under the user's state
// directory.
func (c *Config) ResolvedRunsDir() string {
	if c.RunsDir != "" {
		return expandHome(c.RunsDir)
	}
	return filepath.Join(stateDir(), "runs")
}

// placeName says which token a name would stand for by its place in a
// list (a plain string of http.auth.tokens, "2"; one of several tokens of
// http.auth.token_env, "VAR[2]"), or "" for any other name. Such names
// name no token (TokenFingerprint does): a rule that uses one is refused
// rather than left to match nothing.
func (c *Config) placeName(name string) string {
	for i, t := range c.HTTP.Auth.Tokens {
		if t.Name == "" && name == strconv.Itoa(i+1) {
			return fmt.Sprintf("the place of the unnamed token http.auth.tokens[%d]", i)
		}
	}
	if v := c.HTTP.Auth.TokenEnv; v != "" && strings.HasPrefix(name, v+"[") && strings.HasSuffix(name, "]") {
		return "the place of a token in the list of http.auth.token_env " + v
	}
	return ""
}

// PolicyProfiles builds the profiles by name: the views clients connect
// through, and what policy.identities[].profile names. The error names
// every profile with a bad name or glob.
func (c *Config) PolicyProfiles() (map[string]*policy.Profile, error) {
	out := make(map[string]*policy.Profile, len(c.Profiles))
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(c.Profiles)) {
		p := c.Profiles[name]
		tools := p.Tools
		if len(tools) > 0 && c.Discovery.Mode != "all" {
			// Tool search is how a profile's tools are reached in search
			// mode: a profile admits find_tools and call_tool (which only
			// ever reach its own tools), also where it confines an
			// identity (policy.identities[].profile) rather than serves an
			// endpoint.
			tools = append(slices.Clip(tools), "find_tools", "call_tool")
		}
		prof, err := policy.NewProfile(name, tools, p.Deny)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out[name] = prof
	}
	return out, errors.Join(errs...)
}

// EffectivePolicy is the policy configuration with each upstream's grant
// added as a policy grant for the tools named <prefix>__*.
func (c *Config) EffectivePolicy() policy.Config {
	p := c.Policy
	p.Grants = slices.Clone(p.Grants)
	for i, u := range c.Upstreams {
		if len(u.Grant) > 0 && !u.Disabled && u.EffectivePrefix() != "" {
			p.Grants = append(p.Grants, policy.Grant{Tools: []string{u.EffectivePrefix() + "__*"}, Capabilities: u.Grant,
				Key: fmt.Sprintf("upstreams[%d].grant", i)})
		}
	}
	return p
}

// builtinNamed says why name is taken when a built-in toolset this
// configuration turns on has it ("" when none): the catalog serves one
// toolset per name, so an upstream of that name would never be served.
func (c *Config) builtinNamed(name string) string {
	for _, b := range builtins {
		if b.name == name && b.on(c) {
			return BuiltinNameTaken(name)
		}
	}
	return ""
}

// builtins are toolgate's built-in toolsets, with when a configuration
// turns each on.
var builtins = []struct {
	name string
	on   func(*Config) bool
}{
	{"filesystem", func(c *Config) bool { return c.Filesystem.Enabled }},
	{"diagnostics", func(c *Config) bool { return c.Diagnostics.Enabled }},
	{"memory", func(c *Config) bool { return c.Memory.Enabled }},
	{"skills", func(c *Config) bool { return len(c.Skills.Dirs) > 0 }},
	{"definitions", func(c *Config) bool { return len(c.Definitions) > 0 }},
	{"discovery", func(c *Config) bool { return c.Discovery.Mode != "all" }},
}

// BuiltinToolsets returns the names of toolgate's built-in toolsets,
// which an upstream may not have while that toolset is on.
func BuiltinToolsets() []string {
	names := make([]string, len(builtins))
	for i, b := range builtins {
		names[i] = b.name
	}
	return names
}

// BuiltinNameTaken says why an upstream may not be named name, one of
// [BuiltinToolsets].
func BuiltinNameTaken(name string) string {
	return fmt.Sprintf("%q is the name of toolgate's built-in %s toolset", name, name)
}

// SkillDirs returns the configured skill directories with ~ expanded.
func (c *Config) SkillDirs() []string {
	out := make([]string, len(c.Skills.Dirs))
	for i, d := range c.Skills.Dirs {
		out[i] = expandHome(d)
	}
	return out
}

// SandboxRoots returns the configured roots with ~ expanded.
func (c *Config) SandboxRoots() []string {
	out := make([]string, len(c.Sandbox.Roots))
	for i, r := range c.Sandbox.Roots {
		out[i] = expandHome(r)
	}
	return out
}

// ExpandHome expands a leading ~ to the home directory, as the
// configuration does for every path.
func ExpandHome(p string) string { return expandHome(p) }

func expandHome(p string) string {
	if p == "~" || strings.HasPrefix(p, "~/") {
		if home, err := os.UserHomeDir(); err == nil {
			return filepath.Join(home, strings.TrimPrefix(p, "~"))
		}
	}
	return p
}

// Tokens returns the bearer tokens: the configured ones plus those in the
// environment variable named by http.auth.token_env.
func (c *Config) Tokens() ([]gateway.BearerToken, error) {
	var out []gateway.BearerToken
	names := tokenNames{}
	for i, t := range c.HTTP.Auth.Tokens {
		key := fmt.Sprintf("http.auth.tokens[%d]", i)
		name := t.Name
		if name == "local" || name == "anonymous" {
			return nil, fmt.Errorf("%s: the name %q is reserved (policy.identities name %s the caller %s); give the token another name", key, name, name, map[string]string{"local": "over stdio and the command line", "anonymous": "over HTTP without tokens"}[name])
		}
		value := t.Token
		switch {
		case t.Token != "" && t.TokenEnv != "":
			return nil, fmt.Errorf("%s: give token or token_env, not both", key)
		case t.TokenEnv != "":
			v, ok := os.LookupEnv(t.TokenEnv)
			if !ok || strings.TrimSpace(v) == "" {
				return nil, fmt.Errorf("%s.token_env: environment variable %s is not set", key, t.TokenEnv)
			}
			value = strings.TrimSpace(v)
		case t.Token == "":
			return nil, fmt.Errorf("%s: a token needs token or token_env", key)
		}
		if err := tokenLongEnough(key, value); err != nil {
			return nil, err
		}
		if name == "" { // known by the token itself, not by its place
			name = gateway.TokenFingerprint(value)
		}
		if err := names.add(name, value); err != nil {
			return nil, fmt.Errorf("%s: %w", key, err)
		}
		out = append(out, gateway.BearerToken{Name: name, Value: value})
	}
	env, err := tokensOf(nil, c.HTTP.Auth.TokenEnv, "http.auth.token_env")
	if err != nil {
		return nil, err
	}
	for _, v := range env { // one token is named after the variable
		name := c.HTTP.Auth.TokenEnv
		if len(env) > 1 { // several are unnamed
			name = gateway.TokenFingerprint(v)
		}
		if err := names.add(name, v); err != nil {
			return nil, fmt.Errorf("http.auth.token_env: %w", err)
		}
		out = append(out, gateway.BearerToken{Name: name, Value: v})
	}
	return out, nil
}

// tokenNames are the tokens' names taken so far, and their tokens.
type tokenNames map[string]string

// add takes name for the token value, or says why it cannot: the name is
// another token's, or the token is given twice (an unnamed one, known by
// its fingerprint, finds its name taken by itself).
func (n tokenNames) add(name, value string) error {
	switch had, taken := n[name]; {
	case taken && had == value:
		return fmt.Errorf("the same token is given twice (as %q)", name)
	case taken:
		return fmt.Errorf("the name %q is used by two tokens", name)
	}
	n[name] = value
	return nil
}

// tokensOf is a token list plus the comma-separated tokens of the
// environment variable envName names (key names the setting in errors).
func tokensOf(list []string, envName, key string) ([]string, error) {
	tokens := slices.Clone(list)
	v, err := secretEnv(key, envName)
	if err != nil {
		return nil, err
	}
	for _, t := range strings.Split(v, ",") {
		if t = strings.TrimSpace(t); t != "" {
			tokens = append(tokens, t)
		}
	}
	for i, t := range tokens {
		where := key
		if i < len(list) {
			where = fmt.Sprintf("%s[%d]", strings.TrimSuffix(key, "_env")+"s", i)
		}
		if err := tokenLongEnough(where, t); err != nil {
			return nil, err
		}
	}
	return tokens, nil
}

// minTokenLen is the shortest bearer token toolgate takes: a token is
// the whole of an HTTP caller's or an operator's authentication, and a
// short one can be guessed (nothing slows guesses down).
const minTokenLen = 16

// tokenLongEnough refuses a token shorter than minTokenLen, naming its
// setting (key) but not the token.
func tokenLongEnough(key, token string) error {
	if n := len(token); n < minTokenLen {
		return fmt.Errorf("%s: a token of %d characters can be guessed; use at least %d (make one with: head -c 24 /dev/urandom | base64)", key, n, minTokenLen)
	}
	return nil
}

// secretEnv is the value of the environment variable name, which the
// setting key names ("" when name is empty); an unset or blank variable is
// an error naming both.
func secretEnv(key, name string) (string, error) {
	if name == "" {
		return "", nil
	}
	v, ok := os.LookupEnv(name)
	if !ok || strings.TrimSpace(v) == "" {
		return "", fmt.Errorf("%s: environment variable %s is not set", key, name)
	}
	return v, nil
}

// IntrospectionSecret is the OAuth introspection client's secret, from
// the variable http.auth.oauth.introspection_client_secret_env names.
func (c *Config) IntrospectionSecret() (string, error) {
	return secretEnv("http.auth.oauth.introspection_client_secret_env", c.HTTP.Auth.OAuth.IntrospectionSecretEnv)
}

// SessionKeys returns the session keys http.session_keys_env names, or
// none.
func (c *Config) SessionKeys() ([][]byte, error) {
	name := c.HTTP.SessionKeysEnv
	v, err := secretEnv("http.session_keys_env", name)
	if err != nil || v == "" {
		return nil, err
	}
	var keys [][]byte
	for i, k := range strings.Split(v, ",") {
		k = strings.TrimSpace(k)
		b, err := base64.StdEncoding.DecodeString(k)
		if err != nil {
			b, err = base64.RawURLEncoding.DecodeString(k)
		}
		if err != nil || len(b) != 32 {
			return nil, fmt.Errorf("http.session_keys_env: key %d of %s is not 32 bytes in base64 (make one with: head -c 32 /dev/urandom | base64)", i+1, name)
		}
		keys = append(keys, b)
	}
	return keys, nil
}

// MetricsTokens returns the bearer tokens the listener of metrics.addr
// requires (the variable metrics.token_env names; none when unset).
func (c *Config) MetricsTokens() ([]string, error) {
	return tokensOf(nil, c.Metrics.TokenEnv, "metrics.token_env")
}

// AdminTokens returns the admin API's bearer tokens (admin.tokens and the
// variable admin.token_env names).
func (c *Config) AdminTokens() ([]string, error) {
	return tokensOf(c.Admin.Tokens, c.Admin.TokenEnv, "admin.token_env")
}

// IsLoopback reports whether addr binds only loopback interfaces.
func IsLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Effective returns the effective configuration as YAML, with secret
// values (tokens) redacted.
func Effective(k *koanf.Koanf) ([]byte, error) {
	c := k.Copy()
	for _, key := range []string{"http.auth.tokens", "admin.tokens"} {
		if v, ok := c.Get(key).(string); ok && v != "" {
			// From the environment (TOOLGATE_ADMIN__TOKENS=a,b): one string.
			if err := c.Set(key, gateway.Redacted); err != nil {
				return nil, err
			}
			continue
		}
		list, _ := c.Get(key).([]any)
		if len(list) == 0 {
			continue
		}
		// An unnamed token of http.auth.tokens (a plain string, or {token}
		// without a name) shows the name it goes by, its fingerprint,
		// which nothing else shows.
		redact := func(token any, unnamed bool) string {
			if s, ok := token.(string); ok && s != "" && unnamed && key == "http.auth.tokens" {
				return gateway.Redacted + " (identity token:" + gateway.TokenFingerprint(s) + ")"
			}
			return gateway.Redacted
		}
		red := make([]any, len(list))
		for i, v := range list {
			red[i] = redact(v, true)
			if m, ok := v.(map[string]any); ok { // {name, token} or {name, token_env}
				cp := maps.Clone(m)
				if tok, has := cp["token"]; has {
					name, _ := cp["name"].(string)
					cp["token"] = redact(tok, name == "")
				}
				red[i] = cp
			}
		}
		if err := c.Set(key, red); err != nil {
			return nil, err
		}
	}
	if ups, ok := c.Get("upstreams").([]any); ok {
		red := make([]any, len(ups))
		for i, u := range ups {
			red[i] = u
			if m, ok := u.(map[string]any); ok {
				red[i] = redactUpstream(m)
			}
		}
		if err := c.Set("upstreams", red); err != nil {
			return nil, err
		}
	}
	// A list from the environment (TOOLGATE_SANDBOX__ROOTS=/a,/b) is one
	// string until decoding splits it: show the list toolgate uses.
	for _, key := range stringListKeys("", reflect.TypeFor[Config]()) {
		if s, ok := c.Get(key).(string); ok {
			list, _ := stringToList(reflect.TypeFor[string](), reflect.TypeFor[[]string](), s)
			if err := c.Set(key, list); err != nil {
				return nil, err
			}
		}
	}
	return c.Marshal(yaml.Parser())
}

// stringListKeys are the keys of typ's sections (not of list entries or
// map values) that hold a list of strings.
func stringListKeys(prefix string, typ reflect.Type) []string {
	var out []string
	for f := range typ.Fields() {
		tag := f.Tag.Get("koanf")
		if tag == "" || tag == "-" || !f.IsExported() {
			continue
		}
		switch {
		case f.Type.Kind() == reflect.Slice && f.Type.Elem().Kind() == reflect.String:
			out = append(out, prefix+tag)
		case f.Type.Kind() == reflect.Struct:
			out = append(out, stringListKeys(prefix+tag+".", f.Type)...)
		}
	}
	return out
}

// redactUpstream is an upstream's settings as toolgate config shows them:
// an env or header value written out in the file may be a secret (an API
// key), so only values that reference the environment (${VAR}, which the
// file then does not hold) are shown, and the URL without its user info
// or query.
func redactUpstream(m map[string]any) map[string]any {
	cp := maps.Clone(m)
	for _, key := range []string{"env", "headers"} {
		vals, ok := m[key].(map[string]any)
		if !ok {
			continue
		}
		red := maps.Clone(vals)
		for k, v := range red {
			if s, ok := v.(string); ok && !strings.Contains(s, "${") {
				red[k] = "[REDACTED]"
			}
		}
		cp[key] = red
	}
	if raw, ok := m["url"].(string); ok {
		if u, err := url.Parse(raw); err == nil && (u.User != nil || u.RawQuery != "") {
			if u.User != nil {
				u.User = url.User("[REDACTED]")
			}
			if u.RawQuery != "" {
				u.RawQuery = "[REDACTED]"
			}
			cp["url"] = u.String()
		}
	}
	return cp
}
