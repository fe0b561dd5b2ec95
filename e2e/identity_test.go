package e2e

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestIdentityInRecords (issue 14, part 2): the caller's identity is in
// every record: the name of the bearer token over HTTP (an unnamed
// token's fingerprint, printf %s TOKEN | sha256sum | cut -c1-12), "local"
// over stdio.
func TestIdentityInRecords(t *testing.T) {
	t.Parallel()
	e := newEnv(t, set("http.auth.tokens", []any{
		map[string]any{"name": "ci", "token": "ci-token-0123456789"},
		"plain-token-0123456789",
	}))
	s := e.StartHTTP(t)
	for _, tc := range []struct{ token, want string }{{"ci-token-0123456789", "token:ci"}, {"plain-token-0123456789", "token:sha256:cff863533c74"}} {
		auth := map[string]string{"Authorization": "Bearer " + tc.token}
		id := initSession(t, s, auth)
		h := sessionHeader(id)
		h["Authorization"] = auth["Authorization"]
		if code, _, body := post(t, s.URL, `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"echo","arguments":{"text":"`+tc.want+`"}}}`, h); code != http.StatusOK {
			t.Fatalf("call: %d %s", code, body)
		}
	}
	s.Stop(t)
	var ids []string
	for _, ev := range e.Archive(t).Events {
		if ev["type"] == "tool.completed" {
			ids = append(ids, ev["identity"].(string))
		}
	}
	if len(ids) != 2 || ids[0] != "token:ci" || ids[1] != "token:sha256:cff863533c74" {
		t.Errorf("identities in events: %v", ids)
	}

	e2 := newEnv(t)
	st := e2.StartStdio(t)
	cs := st.Connect(t, era2025, nil)
	call(t, cs, "echo", map[string]any{"text": "hi"})
	rec := awaitRecord(10*time.Second, func() []ToolRecord { return e2.liveTools(t) }, "echo")
	if rec == nil || rec.Identity != "local" {
		t.Errorf("stdio record: %+v", rec)
	}
}

// TestIdentityPolicy (issue 14): policy.identities rules apply to the
// calls of the matching bearer token only, and the denial names the rule.
func TestIdentityPolicy(t *testing.T) {
	t.Parallel()
	e := newEnv(t,
		set("http.auth.tokens", []any{
			map[string]any{"name": "ci", "token": "ci-token-0123456789"},
			map[string]any{"name": "alice", "token": "alice-token-0123456789"},
		}),
		set("policy.identities", []any{map[string]any{"match": map[string]any{"name": "ci"}, "tools": map[string]any{"deny": []string{"echo"}}}}),
	)
	s := e.StartHTTP(t)
	for _, tc := range []struct{ token, want string }{
		{"ci-token-0123456789", "policy.identities[0].tools.deny"},
		{"alice-token-0123456789", "hello"},
	} {
		auth := map[string]string{"Authorization": "Bearer " + tc.token}
		id := initSession(t, s, auth)
		h := sessionHeader(id)
		h["Authorization"] = auth["Authorization"]
		code, _, body := post(t, s.URL, `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"}}}`, h)
		if code != http.StatusOK || !strings.Contains(body, tc.want) {
			t.Errorf("%s: %d %s", tc.token, code, tail(body, 300))
		}
	}
}

// TestIdentityProfileKeepsSkillPrompts: a caller that policy.identities
// confines to a profile without load_skill is served no skill as a
// prompt (prompts/list leaves them out, prompts/get answers not found),
// as it cannot load one; a caller that may load skills gets them.
func TestIdentityProfileKeepsSkillPrompts(t *testing.T) {
	t.Parallel()
	skills := t.TempDir()
	writeSkill(t, skills, "deploy-notes", "description: How we deploy\n")
	e := newEnv(t,
		set("skills.dirs", []string{skills}),
		set("profiles", map[string]any{"readers": map[string]any{"tools": []string{"echo"}}}),
		set("http.auth.tokens", []any{
			map[string]any{"name": "ci", "token": "ci-token-0123456789"},
			map[string]any{"name": "alice", "token": "alice-token-0123456789"},
		}),
		set("policy.identities", []any{map[string]any{"match": map[string]any{"name": "ci"}, "profile": "readers"}}),
	)
	s := e.StartHTTP(t)
	for _, tc := range []struct {
		token  string
		served bool
	}{
		{"ci-token-0123456789", false},
		{"alice-token-0123456789", true},
	} {
		auth := map[string]string{"Authorization": "Bearer " + tc.token}
		id := initSession(t, s, auth)
		h := sessionHeader(id)
		h["Authorization"] = auth["Authorization"]
		_, _, list := post(t, s.URL, `{"jsonrpc":"2.0","id":5,"method":"prompts/list"}`, h)
		_, _, get := post(t, s.URL, `{"jsonrpc":"2.0","id":6,"method":"prompts/get","params":{"name":"deploy-notes"}}`, h)
		if listed := strings.Contains(list, `"deploy-notes"`); listed != tc.served {
			t.Errorf("%s: prompts/list lists the skill: %v, want %v: %s", tc.token, listed, tc.served, tail(list, 300))
		}
		if got := strings.Contains(get, "Instructions for deploy-notes"); got != tc.served {
			t.Errorf("%s: prompts/get gets the skill: %v, want %v: %s", tc.token, got, tc.served, tail(get, 300))
		}
	}
}
