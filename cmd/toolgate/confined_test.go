package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/gateway"
)

// TestConfinedIdentitySearches: a caller confined to a profile
// (policy.identities[].profile) on a gateway in search mode can still find
// and call its profile's tools through find_tools and call_tool, and
// nothing outside it.
func TestConfinedIdentitySearches(t *testing.T) {
	dir := t.TempDir()
	var next = configFrom(t, dir, "")
	a, _ := reloadApp(t, dir, "profiles:\n  readers: {tools: [read_file, list_files]}\npolicy:\n  identities:\n    - match: {name: local}\n      profile: readers\ndiscovery: {mode: search}\n", &next)
	call := func(name, args string) *gateway.Result {
		c := &gateway.Call{Name: name, Identity: "local", Arguments: json.RawMessage(args)}
		c.View = a.policy.IdentityView(c)
		return a.pipeline.Call(context.Background(), c)
	}
	res := call("find_tools", `{"query":"read a file"}`)
	if res.IsError || !strings.Contains(res.OutputText(), `"read_file"`) || strings.Contains(res.OutputText(), `"write_file"`) {
		t.Errorf("find_tools for a confined caller: %s %s", res.Kind, res.Message)
	}
	if res := call("call_tool", `{"name":"list_files","arguments":{}}`); res.IsError {
		t.Errorf("call_tool(list_files) for a confined caller: %s %s", res.Kind, res.Message)
	}
	if res := call("call_tool", `{"name":"write_file","arguments":{"path":"x","content":"y"}}`); res.Kind != gateway.KindNotFound {
		t.Errorf("call_tool(write_file) outside the profile: %s %s", res.Kind, res.Message)
	}
}
