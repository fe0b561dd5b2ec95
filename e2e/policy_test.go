package e2e

// End-to-end tests of issue 3 through real MCP clients: a skill's capability
// requests (seed 002 merge rule 4), and memory in each write mode.

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// everythingServer is the reference MCP server installed by npm ci.
func everythingServer(t *testing.T) string {
	t.Helper()
	requirePeers(t)
	p, err := filepath.Abs(filepath.Join("js", "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js"))
	if err != nil || !fileExists(p) {
		t.Fatalf("server-everything is not installed (%s): run npm ci --prefix e2e/js", p)
	}
	return p
}

func writeSkill(t *testing.T, dir, name, front string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(dir, name), 0o755); err != nil {
		t.Fatal(err)
	}
	body := "---\nname: " + name + "\n" + front + "---\nInstructions for " + name + ".\n"
	if err := os.WriteFile(filepath.Join(dir, name, "SKILL.md"), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestSkillCapabilityRequests: a skill that requests a requestable
// capability gets it for its session only, so a tool that needed it is
// allowed there and still denied elsewhere; a skill that requests a
// capability config does not mark requestable gets a refusal saying why.
// The tool needing net is the reference server's open-world
// gzip-file-as-resource, served as an upstream.
func TestSkillCapabilityRequests(t *testing.T) {
	t.Parallel()
	server := everythingServer(t)
	skills := t.TempDir()
	writeSkill(t, skills, "web-research", "description: Research on the web\ncapabilities: [net]\n")
	writeSkill(t, skills, "gpu-training", "description: Train models\ncapabilities: [gpu]\n")
	e := newEnv(t,
		set("skills.dirs", []string{skills}),
		set("policy.capabilities.requestable", []string{"net"}),
		set("policy.custom_capabilities", []string{"gpu"}),
		set("upstreams", []map[string]any{{
			"name": "everything", "command": "node", "args": []string{server, "stdio"},
			"allow": []string{"gzip-file-as-resource"},
		}}),
	)
	s := e.StartHTTP(t)
	a := s.Connect(t, "2025-11-25", nil)
	b := s.Connect(t, "2025-11-25", nil)
	gzip := map[string]any{"name": "x.gz", "data": "data:text/plain;base64,aGVsbG8=", "outputType": "resource"}

	denied := call(t, a, "everything__gzip-file-as-resource", gzip)
	if !denied.IsError || !strings.Contains(textOf(denied), "needs net") {
		t.Fatalf("before the skill: %s; want a denial for the missing net capability", textOf(denied))
	}

	loaded := call(t, a, "load_skill", map[string]any{"skill_id": "web-research"})
	if loaded.IsError || !strings.Contains(textOf(loaded), "Instructions for web-research") {
		t.Fatalf("load_skill: %s", textOf(loaded))
	}
	if !strings.Contains(textOf(loaded), "net") || !strings.Contains(strings.ToLower(textOf(loaded)), "granted") {
		t.Errorf("load_skill does not say net was granted: %s", textOf(loaded))
	}
	allowed := call(t, a, "everything__gzip-file-as-resource", gzip)
	if allowed.IsError {
		t.Errorf("after the skill requested net: %s", textOf(allowed))
	}
	// Grants are per session: another client is still refused.
	other := call(t, b, "everything__gzip-file-as-resource", gzip)
	if !other.IsError || !strings.Contains(textOf(other), "needs net") {
		t.Errorf("another session: %s; want the denial (skill grants are per session)", textOf(other))
	}

	refused := call(t, a, "load_skill", map[string]any{"skill_id": "gpu-training"})
	if refused.IsError {
		t.Fatalf("load_skill gpu-training: %s", textOf(refused))
	}
	if txt := textOf(refused); !strings.Contains(txt, "gpu") || !strings.Contains(txt, "not requestable") {
		t.Errorf("load_skill of a non-requestable capability: %s; want it refused as not requestable", txt)
	}
	s.Stop(t)
	recs := e.Archive(t).toolsByCallID(t)
	if r := recs[callIDOf(denied)]; r.Status != "permission_denied" {
		t.Errorf("denied call recorded as %q", r.Status)
	}
	if r := recs[callIDOf(allowed)]; r.Decision == nil || !r.Decision.Allow || !strings.HasPrefix(r.Decision.Rule, "skill:") {
		t.Errorf("allowed call's decision %s; want a skill rule", mustJSON(r.Decision))
	}
}

// TestMemoryWriteModes: memory through a real client in each write mode.
func TestMemoryWriteModes(t *testing.T) {
	t.Parallel()
	write := map[string]any{"content": "the staging database listens on port 5433", "scope": "proj", "tags": []string{"db"}}
	recall := map[string]any{"query": "staging database port", "scope": "proj"}

	t.Run("disabled", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, set("memory.enabled", true), set("memory.write_mode", "disabled"))
		s := e.StartStdio(t)
		cs := s.Connect(t, "2025-11-25", nil)
		tools, err := cs.ListTools(callCtx(t), nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, tool := range tools.Tools {
			if tool.Name == "write_memory" {
				t.Error("write_memory is offered in disabled mode")
			}
		}
		_, err = cs.CallTool(callCtx(t), &mcp.CallToolParams{Name: "write_memory", Arguments: write})
		var rpcErr interface{ Error() string }
		if err == nil || !errors.As(err, &rpcErr) || !strings.Contains(err.Error(), "memory.write_mode: disabled") {
			t.Errorf("calling write_memory: %v; want an error that says writes are disabled", err)
		}
		if r := call(t, cs, "recall_memory", recall); r.IsError {
			t.Errorf("recall in disabled mode: %s", textOf(r))
		}
		s.Stop(t)
		if recs := e.Archive(t).Tools; len(recs) != 2 || recs[0].Status != "not_found" && recs[1].Status != "not_found" {
			t.Errorf("records %s; want the refused write recorded", mustJSON(recs))
		}
	})

	t.Run("candidate", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, set("memory.enabled", true)) // candidate is the default
		s := e.StartStdio(t)
		cs := s.Connect(t, "2025-11-25", nil)
		w := call(t, cs, "write_memory", write)
		if w.IsError || !strings.Contains(textOf(w), "candidate") {
			t.Fatalf("write_memory: %s", textOf(w))
		}
		r := call(t, cs, "recall_memory", recall)
		if !strings.Contains(textOf(r), "[candidate]") || !strings.Contains(textOf(r), "5433") {
			t.Errorf("recall in the same run: %s; want the candidate", textOf(r))
		}
		s.Stop(t)
		runDir := e.runDir(t)
		cand, err := os.ReadFile(filepath.Join(runDir, "archive", "memory-candidates.jsonl"))
		if err != nil || !strings.Contains(string(cand), "5433") {
			t.Fatalf("candidates file: %q %v", cand, err)
		}

		// Review, then promote with the CLI; a new run recalls it committed.
		promote := e.command(context.Background(), "memory", "promote", filepath.Base(runDir))
		if out, err := promote.CombinedOutput(); err != nil || !strings.Contains(string(out), "1 promoted") {
			t.Fatalf("memory promote: %v\n%s", err, out)
		}
		again := e.command(context.Background(), "memory", "promote", filepath.Base(runDir))
		if out, err := again.CombinedOutput(); err != nil || !strings.Contains(string(out), "0 promoted") {
			t.Errorf("second promote: %v\n%s; want nothing promoted twice", err, out)
		}
		s2 := e.StartStdio(t)
		cs2 := s2.Connect(t, "2025-11-25", nil)
		r2 := call(t, cs2, "recall_memory", recall)
		if !strings.Contains(textOf(r2), "[committed]") || !strings.Contains(textOf(r2), "5433") {
			t.Errorf("recall after promote: %s", textOf(r2))
		}
		s2.Stop(t)
	})

	t.Run("external", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, set("memory.enabled", true), set("memory.write_mode", "external"))
		s := e.StartStdio(t)
		cs := s.Connect(t, "2025-11-25", nil)
		if w := call(t, cs, "write_memory", write); w.IsError || !strings.Contains(strings.ToLower(textOf(w)), "committed") {
			t.Fatalf("write_memory: %s", textOf(w))
		}
		s.Stop(t)
		// The store outlives the run: a new gateway process recalls it.
		s2 := e.StartStdio(t)
		cs2 := s2.Connect(t, "2025-11-25", nil)
		r := call(t, cs2, "recall_memory", recall)
		if !strings.Contains(textOf(r), "[committed]") || !strings.Contains(textOf(r), "5433") {
			t.Errorf("recall in a new run: %s", textOf(r))
		}
		s2.Stop(t)
		if !fileExists(filepath.Join(e.Dir, "state", "toolgate", "memory.db")) {
			t.Errorf("the store is not where the docs say (state dir/toolgate/memory.db)")
		}
	})
}
