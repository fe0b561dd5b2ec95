package yamlerr

import (
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

func TestPlace(t *testing.T) {
	for _, tc := range []struct{ yaml, want string }{
		{"sandbox:\n  roots: [/srv/notes\n", `line 2: the flow list opened with "[" is not closed with "]" (the YAML parser: did not find expected ',' or ']')`},
		{"# a comment [\nlog:\n  level: debug\nsandbox:\n  roots: ['/a', \"/b]\"\n", "line 5: the flow list"},
		{"policy: {tools: {deny: [x]}\n", `line 1: the flow map opened with "{" is not closed with "}"`},
		{"a: 'it''s [\n  still quoted'\nb: [1\n", "line 3: the flow list"},
	} {
		var v any
		err := yaml.Unmarshal([]byte(tc.yaml), &v)
		if err == nil {
			t.Fatalf("%q parsed", tc.yaml)
		}
		got := Place([]byte(tc.yaml), err)
		if !strings.HasPrefix(got.Error(), tc.want) {
			t.Errorf("%q: %v, want %s", tc.yaml, got, tc.want)
		}
		if strings.Count(got.Error(), "line ") != 1 {
			t.Errorf("%q: %v names more than one line", tc.yaml, got)
		}
	}
	// Any other error is the parser's, unchanged.
	var v any
	other := yaml.Unmarshal([]byte("a: b: c\n"), &v)
	if other == nil || Place([]byte("a: b: c\n"), other) != other {
		t.Errorf("an error that is not an unclosed flow is changed: %v", other)
	}
}
