package main

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/gateway"
)

// TestHideDeniedKeepsToolsThatAsk: policy.list_denied: hide leaves out the
// tools the policy denies, not those it allows once a person approves
// (policy.approval.tools): they stay listed, findable and callable.
func TestHideDeniedKeepsToolsThatAsk(t *testing.T) {
	dir := t.TempDir()
	var next = configFrom(t, dir, "")
	a, _ := reloadApp(t, dir, "policy:\n  list_denied: hide\n  tools: {deny: [grep_files]}\n  approval: {tools: [read_file]}\ndiscovery: {mode: search}\n", &next)
	filter := a.toolFilter()
	ctx := context.Background()
	for name, want := range map[string]bool{"read_file": true, "grep_files": false, "list_files": true} {
		tl, _, ok := a.catalog.Resolve(name)
		if !ok {
			t.Fatalf("%s not served", name)
		}
		if got := filter(ctx, tl); got != want {
			t.Errorf("tools/list keeps %s: %v, want %v (decision %+v)", name, got, want, a.policy.Decide(ctx, tl))
		}
	}
	res := a.pipeline.Call(context.Background(), &gateway.Call{Name: "find_tools", Identity: "local", Arguments: json.RawMessage(`{"query":"read a file","limit":20}`)})
	if !strings.Contains(res.OutputText(), `"read_file"`) {
		t.Errorf("find_tools leaves out read_file, which asks for approval: %s %s", res.OutputText(), res.Message)
	}
}

// TestToolMetaIsTheDecision: each listed tool's _meta is the policy's
// decision for it, and tools of one decision share one map (made once by
// gateway.DecisionMeta; TestDecisionMetaIsBounded checks its bound).
func TestToolMetaIsTheDecision(t *testing.T) {
	dir := t.TempDir()
	var next = configFrom(t, dir, "")
	a, _ := reloadApp(t, dir, "policy:\n  tools: {deny: [grep_files]}\n", &next)
	ctx := context.Background()
	meta := func(name string) map[string]any {
		t.Helper()
		tl, _, ok := a.catalog.Resolve(name)
		if !ok {
			t.Fatalf("%s not served", name)
		}
		m := a.toolMeta(ctx, tl)
		d := a.policy.Decide(ctx, tl)
		want := map[string]any{"toolgate/decision": map[string]any{"allow": d.Allow, "layer": d.Layer, "rule": d.Rule}}
		if !reflect.DeepEqual(m, want) {
			t.Fatalf("%s: _meta %v, want %v", name, m, want)
		}
		return m
	}
	read, list, grep := meta("read_file"), meta("list_files"), meta("grep_files")
	if reflect.ValueOf(read).Pointer() != reflect.ValueOf(list).Pointer() {
		t.Error("two tools of one decision got a map each")
	}
	if d := grep["toolgate/decision"].(map[string]any); d["allow"] != false || d["rule"] != "policy.tools.deny:grep_files" {
		t.Errorf("grep_files: %v, want denied by its glob", d)
	}
}
