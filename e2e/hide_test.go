package e2e

import (
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestListDeniedHideWithSkillGrants: with policy.list_denied: hide, a tool
// enabled only by a skill's grant is hidden (and "not found") until the
// skill is loaded in the session, then listed, marked allowed and callable
// there, and still hidden in another session. (It stayed hidden: the list
// filter asked the policy without the caller's session.)
func TestListDeniedHideWithSkillGrants(t *testing.T) {
	t.Parallel()
	server := everythingServer(t)
	skills := t.TempDir()
	writeSkill(t, skills, "web-research", "description: Research on the web\ncapabilities: [net]\n")
	e := newEnv(t,
		set("skills.dirs", []string{skills}),
		set("policy.capabilities.requestable", []string{"net"}),
		set("policy.list_denied", "hide"),
		set("upstreams", []map[string]any{{
			"name": "everything", "command": "node", "args": []string{server, "stdio"},
			"allow": []string{"gzip-file-as-resource"},
		}}),
	)
	s := e.StartHTTP(t)
	const tool = "everything__gzip-file-as-resource"
	gzip := map[string]any{"name": "x.gz", "data": "data:text/plain;base64,aGVsbG8=", "outputType": "resource"}
	listed := func(cs *mcp.ClientSession) (bool, map[string]any) {
		res, err := cs.ListTools(callCtx(t), nil)
		if err != nil {
			t.Fatalf("tools/list: %v", err)
		}
		for _, tl := range res.Tools {
			if tl.Name == tool {
				d, _ := tl.Meta["toolgate/decision"].(map[string]any)
				return true, d
			}
		}
		return false, nil
	}

	for _, era := range []string{era2025} {
		a := s.Connect(t, era, nil)
		b := s.Connect(t, era, nil)
		if ok, _ := listed(a); ok {
			t.Fatalf("%s is listed before any skill granted net", tool)
		}
		if _, err := a.CallTool(callCtx(t), &mcp.CallToolParams{Name: tool, Arguments: gzip}); err == nil || !strings.Contains(err.Error(), "not found") {
			t.Errorf("a hidden tool's call: %v, want not found", err)
		}
		if r := call(t, a, "load_skill", map[string]any{"skill_id": "web-research"}); r.IsError {
			t.Fatalf("load_skill: %s", textOf(r))
		}
		ok, decision := listed(a)
		if !ok {
			t.Fatalf("after the skill granted net in this session, %s is still hidden", tool)
		}
		if decision["allow"] != true || decision["layer"] != "skill" {
			t.Errorf("its _meta decision in this session: %v, want allow by the skill layer", decision)
		}
		if r := call(t, a, tool, gzip); r.IsError {
			t.Errorf("calling it in the granted session: %s", textOf(r))
		}
		if ok, _ := listed(b); ok {
			t.Error("the grant leaked into another session's list")
		}
		names := []string{}
		res, _ := b.ListTools(callCtx(t), nil)
		for _, tl := range res.Tools {
			names = append(names, tl.Name)
		}
		if !slices.Contains(names, "load_skill") {
			t.Errorf("another session's list lost unrelated tools: %v", names)
		}
	}
}
