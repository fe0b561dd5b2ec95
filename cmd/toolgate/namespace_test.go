package main

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// mcpUpstream serves tools (destructive ones where destructive says so)
// over streamable HTTP and returns its URL.
func mcpUpstream(t *testing.T, tools map[string]bool) string {
	t.Helper()
	s := server.NewMCPServer("fixture", "1.0.0", server.WithToolCapabilities(true))
	for name, destructive := range tools {
		text := "ran " + name
		s.AddTool(mcp.NewTool(name, mcp.WithDestructiveHintAnnotation(destructive), mcp.WithReadOnlyHintAnnotation(!destructive),
			mcp.WithOpenWorldHintAnnotation(false)),
			func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return mcp.NewToolResultText(text), nil
			})
	}
	ts := httptest.NewServer(server.NewStreamableHTTPServer(s))
	t.Cleanup(ts.Close)
	return ts.URL
}

// An upstream configured with prefix: "" serves its tools under their own
// names; one of them named kg__wipe fell into the namespace of the
// upstream with prefix kg, so the policy written for kg (here the
// destructive allow kg__*) reached it. Such a tool is refused, with both
// upstreams named, wherever the upstreams are in the list.
func TestUnprefixedToolInAnotherUpstreamsNamespace(t *testing.T) {
	kg := mcpUpstream(t, map[string]bool{"read_graph": false})
	flat := mcpUpstream(t, map[string]bool{"kg__wipe": true, "hello": false})
	for _, order := range []string{"flat first", "kg first"} {
		t.Run(order, func(t *testing.T) {
			ups := []string{
				"  - name: flat\n    prefix: \"\"\n    url: " + flat + "\n",
				"  - name: kg\n    url: " + kg + "\n",
			}
			if order == "kg first" {
				ups[0], ups[1] = ups[1], ups[0]
			}
			cfg := "policy:\n  destructive:\n    allow: [\"kg__*\"]\nupstreams:\n" + ups[0] + ups[1]
			code, out, errOut := run(t, cfg, "tools", "--json")
			if code != exitOK {
				t.Fatalf("tools: exit %d\n%s", code, errOut)
			}
			var got toolsJSON
			if err := json.Unmarshal([]byte(out), &got); err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			served := map[string]string{}
			for _, tl := range got.Tools {
				served[tl.Name] = tl.Toolset
			}
			if served["kg__read_graph"] != "kg" || served["hello"] != "flat" {
				t.Fatalf("the upstreams' own tools are not served: %v", served)
			}
			for name, ts := range served {
				if ts == "flat" && strings.HasPrefix(name, "kg__") {
					t.Errorf("upstream flat's tool is served as %s, in the namespace of upstream kg (its policy reaches it)", name)
				}
			}
			if len(got.Conflicts) != 1 || got.Conflicts[0].Name != "kg__wipe" || got.Conflicts[0].Kept != "kg" ||
				got.Conflicts[0].Renamed != "flat" || got.Conflicts[0].Namespace != "kg" || got.Conflicts[0].Served != "" {
				t.Errorf("conflicts: %+v, want kg__wipe of flat refused in kg's namespace", got.Conflicts)
			}
			// The text listing says so, naming both upstreams.
			_, text, _ := run(t, cfg, "tools")
			if !strings.Contains(text, `"kg__wipe" of flat is not served`) || !strings.Contains(text, "namespace kg__ of kg") {
				t.Errorf("toolgate tools does not report the refused tool:\n%s", text)
			}
			// And it cannot be called.
			code, out, _ = run(t, cfg, "call", "kg__wipe", "{}")
			if code == exitOK || strings.Contains(out, "ran kg__wipe") {
				t.Errorf("call kg__wipe: exit %d, %s", code, out)
			} else if !strings.Contains(out, "namespace kg__ of kg") {
				t.Errorf("call kg__wipe does not say why it is not served: %s", out)
			}
		})
	}
}

// Tool search's find_tools and call_tool are the gateway's own: an
// upstream without a prefix that lists tools of those names is renamed.
// Before, the upstreams were added first, so (depending on whether it had
// connected when serve stopped waiting) the upstream's call_tool took the
// name: the model's calls through tool search, with the name and
// arguments of the tool it meant, went to that server.
func TestUnprefixedUpstreamCannotTakeToolSearchNames(t *testing.T) {
	flat := mcpUpstream(t, map[string]bool{"call_tool": false, "find_tools": false, "hello": false})
	cfg := "discovery:\n  mode: search\nupstreams:\n  - name: flat\n    prefix: \"\"\n    url: " + flat + "\n"
	code, out, errOut := run(t, cfg, "tools", "--json")
	if code != exitOK {
		t.Fatalf("tools: exit %d\n%s", code, errOut)
	}
	var got toolsJSON
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, tl := range got.Tools {
		if (tl.Name == "call_tool" || tl.Name == "find_tools") && tl.Toolset != "discovery" {
			t.Errorf("%s is served by %s, not by tool search", tl.Name, tl.Toolset)
		}
	}
	for _, c := range got.Conflicts {
		if c.Kept != "discovery" {
			t.Errorf("conflict %+v: the gateway's tool search lost its name", c)
		}
	}
	// toolgate call call_tool still reaches an upstream's tool.
	code, out, errOut = run(t, cfg, "call", "call_tool", `{"name":"hello","arguments":{}}`)
	if code != exitOK || !strings.Contains(out, "ran hello") {
		t.Errorf("call call_tool hello: exit %d, %s %s", code, out, errOut)
	}
}

// toolsJSON is what these tests read of toolgate tools --json.
type toolsJSON struct {
	Tools []struct {
		Name    string `json:"name"`
		Toolset string `json:"toolset"`
	} `json:"tools"`
	Conflicts []struct {
		Name      string `json:"name"`
		Kept      string `json:"kept_by"`
		Renamed   string `json:"renamed_in"`
		Served    string `json:"served_as"`
		Namespace string `json:"namespace"`
	} `json:"conflicts"`
}
