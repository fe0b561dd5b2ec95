package upstream

import (
	"github.com/toolgate/toolgate/gateway"
	"strings"
	"testing"
)

func strp(s string) *string { return &s }

func TestConfigValidate(t *testing.T) {
	t.Setenv("TG_TEST_TOKEN", "tok-value-123")
	tests := []struct {
		name string
		cfg  Config
		want []string // substrings of the error; none means valid
	}{
		{"stdio ok", Config{Name: "fs", Command: "server", Env: map[string]string{"K": "${TG_TEST_TOKEN}"}}, nil},
		{"http ok", Config{Name: "web", URL: "https://example.com/mcp", Headers: map[string]string{"Authorization": "Bearer ${TG_TEST_TOKEN}"}}, nil},
		{"sse ok", Config{Name: "old", Transport: "sse", URL: "http://127.0.0.1:1/sse"}, nil},
		{"empty prefix ok", Config{Name: "p", Prefix: strp(""), Command: "x"}, nil},
		{"missing both", Config{Name: "a"}, []string{`upstream "a"`, "url: required"}},
		{"stdio without command", Config{Name: "a", Transport: "stdio"}, []string{"command: required"}},
		{"both set", Config{Name: "a", Command: "x", URL: "http://h/"}, []string{"command and url are both set"}},
		{"bad transport", Config{Name: "a", Transport: "websocket", URL: "http://h/"}, []string{`transport "websocket"`}},
		{"bad name", Config{Name: "no spaces", Command: "x"}, []string{"name: must be 1-32"}},
		{"long name", Config{Name: strings.Repeat("n", 33), Command: "x"}, []string{"name: must be 1-32"}},
		{"bad prefix", Config{Name: "a", Prefix: strp("a.b"), Command: "x"}, []string{`prefix "a.b"`}},
		{"bad url", Config{Name: "a", URL: "ftp://h/x"}, []string{"url: must be an absolute http"}},
		{"bad allow glob", Config{Name: "a", Command: "x", Allow: []string{"read_[a"}}, []string{`allow[0]: bad tool-name glob "read_[a"`, "syntax error in pattern"}},
		{"bad deny glob", Config{Name: "a", Command: "x", Deny: []string{""}}, []string{`deny[0]`, "empty tool-name glob"}},
		{"unset var in env", Config{Name: "a", Command: "x", Env: map[string]string{"KEY": "${TG_TEST_UNSET_VAR}"}},
			[]string{"env.KEY", "TG_TEST_UNSET_VAR is not set"}},
		{"unset var in header", Config{Name: "a", URL: "http://h/", Headers: map[string]string{"X-Key": "pre-${TG_TEST_UNSET_VAR}"}},
			[]string{"headers.X-Key", "TG_TEST_UNSET_VAR is not set"}},
		{"unterminated var", Config{Name: "a", Command: "x", Env: map[string]string{"K": "${OOPS"}}, []string{"env.K", "unterminated"}},
		{"headers on stdio", Config{Name: "a", Command: "x", Headers: map[string]string{"A": "b"}}, []string{"headers: only http"}},
		{"env on http", Config{Name: "a", URL: "http://h/", Env: map[string]string{"A": "b"}}, []string{"apply only to stdio"}},
		{"negative", Config{Name: "a", Command: "x", MaxConcurrency: -1, CallTimeout: -1}, []string{"max_concurrency", "call_timeout"}},
		{"tasks ok", Config{Name: "a", Command: "x", Tasks: map[string]string{"slow_*": "optional", "export": "required"}}, nil},
		{"bad tasks", Config{Name: "a", Command: "x", Tasks: map[string]string{"read_[a": "optional", "b": "always"}},
			[]string{`tasks["read_[a"]: bad tool-name glob`, `tasks["b"]: "always" is not optional or required`}},
		{"disabled skips env resolution", Config{Name: "a", Command: "x", Disabled: true, Env: map[string]string{"K": "${TG_TEST_UNSET_VAR}"}}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Validate()
			if len(tt.want) == 0 {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("no error, want %q", tt.want)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
			if strings.Contains(err.Error(), "tok-value-123") {
				t.Errorf("error leaks a variable's value: %v", err)
			}
		})
	}
}

func TestValidateAll(t *testing.T) {
	err := ValidateAll([]Config{
		{Name: "a", Command: "x"},
		{Name: "a", Command: "y"},
		{Name: "b", Prefix: strp("c"), Command: "z"},
		{Name: "c", Command: "z"},
		{Name: "d", Prefix: strp(""), Command: "z"},
		{Name: "e", Prefix: strp(""), Command: "z"},
	})
	if err == nil {
		t.Fatal("want errors")
	}
	for _, w := range []string{`upstream "a": name: upstreams[0] has it too`, `upstream "c": prefix "c" is also the prefix of upstream "b"`} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("%q missing from %v", w, err)
		}
	}
	// A repeated name is one problem, not also its prefix's.
	if strings.Contains(err.Error(), `prefix "a"`) {
		t.Errorf("the repeated name's prefix reported too: %v", err)
	}
	if strings.Contains(err.Error(), `upstream "e"`) {
		t.Errorf("empty prefixes may repeat: %v", err)
	}
}

func TestExpandVars(t *testing.T) {
	env := map[string]string{"A": "1", "B_2": "two", "EMPTY": ""}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	tests := []struct{ in, want, err string }{
		{"plain", "plain", ""},
		{"${A}", "1", ""},
		{"x${A}y${B_2}z", "x1ytwoz", ""},
		{"${EMPTY}", "", ""},
		{"$$", "$", ""},
		{"$${A}", "${A}", ""},
		{"cost $5", "cost $5", ""},
		{"end$", "end$", ""},
		{"${MISSING}", "", "MISSING is not set"},
		{"${A", "", "unterminated"},
		{"${1A}", "", "invalid variable name"},
		{"${A:-x}", "1", ""},
		{"${MISSING:-/tmp/cache}", "/tmp/cache", ""},
		{"${EMPTY:-d}", "d", ""},
		{"${MISSING:-}", "", ""},
		{"${MISSING:-a$$b:-c}x", "a$$b:-cx", ""},
		{"${1A:-x}", "", "invalid variable name"},
	}
	for _, tt := range tests {
		got, err := expandVars(tt.in, lookup)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("expandVars(%q) error = %v, want %q", tt.in, err, tt.err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("expandVars(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
	// A default is the configuration's text, not a secret: only values
	// from the environment are collected for redaction.
	var secrets []string
	if _, err := expandMap(map[string]string{"x": "${A:-d1}", "y": "${MISSING:-info}"}, lookup, func(v string) { secrets = append(secrets, v) }); err != nil || strings.Join(secrets, ",") != "1" {
		t.Errorf("collected %q, %v; want only A's value", secrets, err)
	}
}

func TestGlobs(t *testing.T) {
	tests := []struct {
		pat, name string
		want      bool
	}{
		{"*", "anything.at/all", true},
		{"read_*", "read_file", true},
		{"read_*", "write_file", false},
		{"*_file", "read_file", true},
		{"get-?", "get-x", true},
		{"get-?", "get-xy", false},
		{"[rw]*", "write", true},
		{"[!rw]*", "write", false},
		{"[a-c]x", "bx", true},
		{"a.b", "a.b", true},
		{"a.b", "axb", false},
		{`a\*`, "a*", true},
		{`a\*`, "ab", false},
		{"é*", "éclair", true},
	}
	// The one glob syntax of every tool-name key (gateway.MatchGlob),
	// on upstream tool names, which may hold characters served names
	// cannot ('.', '/', 'é').
	for _, tt := range tests {
		if err := gateway.CheckGlob(tt.pat); err != nil {
			t.Fatalf("CheckGlob(%q): %v", tt.pat, err)
		}
		if got := gateway.MatchGlob(tt.pat, tt.name); got != tt.want {
			t.Errorf("glob %q on %q = %v, want %v", tt.pat, tt.name, got, tt.want)
		}
	}
	for _, bad := range []string{"", "[", "a[b", `x\`, "[]"} {
		if _, err := newFilter([]string{bad}, nil); err == nil {
			t.Errorf("newFilter(%q): no error", bad)
		}
	}
	f, err := newFilter([]string{"echo", "p*"}, []string{"pid"})
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]bool{"echo": true, "progress": true, "pid": false, "rich": false} {
		if got := f.allows(name); got != want {
			t.Errorf("filter.allows(%q) = %v, want %v", name, got, want)
		}
	}
	if all, _ := newFilter(nil, []string{"x"}); !all.allows("y") || all.allows("x") {
		t.Error("deny-only filter wrong")
	}
}

func TestValidateAllOverlappingPrefixes(t *testing.T) {
	cfgs := []Config{
		{Name: "n", Command: "x"},
		{Name: "other", Command: "x", Prefix: ptr("n__a")},
		{Name: "fine", Command: "x", Prefix: ptr("na")},
	}
	err := ValidateAll(cfgs)
	if err == nil || !strings.Contains(err.Error(), `prefix "n__a" overlaps the prefix "n" of upstream "n"`) {
		t.Fatalf("overlapping prefixes: %v", err)
	}
	if strings.Contains(err.Error(), `"na"`) {
		t.Errorf("a prefix that merely shares a start is refused: %v", err)
	}
}

func ptr[T any](v T) *T { return &v }

// TestValidateAllPrefixFollowedByUnderscore: prefixes "a" and "a_" overlap
// as surely as "n" and "n__a": tool x of "a_" is a___x, which is tool _x of
// "a", and the glob a__* (what upstream a's grant: becomes, and how an
// operator denies or allows "all of a's tools") matches every tool of a_.
func TestValidateAllPrefixFollowedByUnderscore(t *testing.T) {
	err := ValidateAll([]Config{
		{Name: "a", Command: "x", Grant: []string{"net"}},
		{Name: "untrusted", Command: "x", Prefix: ptr("a_")},
	})
	if err == nil || !strings.Contains(err.Error(), `prefix "a_" overlaps the prefix "a" of upstream "a"`) {
		t.Fatalf("prefixes a and a_: %v", err)
	}
	if err := ValidateAll([]Config{{Name: "a", Command: "x"}, {Name: "b", Command: "x", Prefix: ptr("a_b")}}); err != nil {
		t.Errorf("prefixes a and a_b do not overlap (a_b__x is no a__ name): %v", err)
	}
}
