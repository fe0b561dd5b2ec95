package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestReloadSettings: policy, limits, sandbox roots and profiles edited
// while a real client is connected apply to the calls that start after the
// reload; a call in flight finishes under the settings it started with;
// `toolgate tools` shows the last reload.
func TestReloadSettings(t *testing.T) {
	t.Parallel()
	e := newEnv(t, set("limits.call_timeout", "30s"))
	s := e.StartHTTP(t)
	cs := s.Connect(t, era2025, nil)
	if r := call(t, cs, "echo", map[string]any{"text": "before"}); r.IsError {
		t.Fatalf("echo before the reload: %s", textOf(r))
	}

	// A call in flight when the reload happens: 1.5s of sleep, under the
	// 30s timeout it started with.
	inflight := make(chan *mcp.CallToolResult, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		r, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "sleep", Arguments: map[string]any{"ms": 1500, "steps": 3}})
		if err != nil {
			r = &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: err.Error()}}}
		}
		inflight <- r
	}()
	// Wait until the sleep is running (its start is recorded).
	if !waitFor(10*time.Second, func() bool {
		for _, ev := range e.liveEvents(t) {
			if ev["type"] == "tool.started" && ev["tool"] == "sleep" {
				return true
			}
		}
		return false
	}) {
		t.Fatal("the sleep call never started")
	}

	other := filepath.Join(e.Dir, "other-root")
	if err := os.MkdirAll(other, 0o755); err != nil {
		t.Fatal(err)
	}
	e.rewriteConfig(t,
		set("policy.tools.deny", []string{"echo"}),
		set("limits.call_timeout", "300ms"),
		set("sandbox.roots", []string{other}),
		set("profiles", map[string]any{"ro": map[string]any{"tools": []string{"read_file", "list_files"}}}),
	)
	if !waitFor(15*time.Second, func() bool {
		lr, _ := healthDetails(t, s)["last_reload"].(map[string]any)
		return lr != nil && lr["ok"] == true
	}) {
		t.Fatalf("no reload: %v", healthDetails(t, s)["last_reload"])
	}
	// What did not change is an empty list, not null.
	lr, _ := healthDetails(t, s)["last_reload"].(map[string]any)
	if ch, _ := lr["changes"].(map[string]any); ch == nil || ch["added"] == nil || ch["removed"] == nil || ch["settings"] == nil {
		t.Errorf("/healthz last_reload changes: %v, want lists (empty ones too)", lr["changes"])
	}

	// Policy: echo is denied now, naming the rule.
	if r := call(t, cs, "echo", map[string]any{"text": "after"}); !r.IsError || !strings.Contains(textOf(r), "policy.tools.deny") {
		t.Errorf("echo after the reload denied it: %q", textOf(r))
	}
	// Limits: a new sleep times out at 300ms ...
	if r := call(t, cs, "sleep", map[string]any{"ms": 5000}); !r.IsError || !strings.Contains(strings.ToLower(textOf(r)), "timed out after 300ms") {
		t.Errorf("a call after the reload: %q, want the new 300ms timeout", textOf(r))
	}
	// ... while the one in flight keeps its 30s and completes.
	select {
	case r := <-inflight:
		if r.IsError {
			t.Errorf("the call in flight during the reload: %q, want it to finish under its own limits", textOf(r))
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the call in flight never finished")
	}
	// Sandbox roots: writes land in the new root.
	if r := call(t, cs, "write_file", map[string]any{"path": "moved.txt", "content": "x"}); r.IsError {
		t.Errorf("write_file after the reload: %s", textOf(r))
	}
	if _, err := os.Stat(filepath.Join(other, "moved.txt")); err != nil {
		t.Errorf("the write did not land in the new sandbox root: %v", err)
	}
	// Profiles: the new profile's endpoint serves its tools.
	ro := *s
	ro.URL = s.Base + "/mcp/ro"
	rcs := ro.Connect(t, era2026, nil)
	if got := listedNames(t, rcs); strings.Join(got, ",") != "list_files,read_file" {
		t.Errorf("the reloaded profile lists %v", got)
	}

	out, err := e.command(callCtx(t), "tools").Output()
	if err != nil || !strings.Contains(string(out), "last reload of serve run") || !strings.Contains(string(out), "ok") {
		t.Errorf("toolgate tools does not show the last reload: %v\n%s", err, out)
	}
}
