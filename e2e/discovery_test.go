package e2e

// Profiles and tool search (issue 11 §3, §4) through real clients: the
// Go SDK client on both eras, over HTTP (plain endpoint and a profile's
// path) and stdio (serve --profile), in front of a real upstream
// (server-everything).

import (
	"encoding/json"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func listedNames(t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	res, err := cs.ListTools(callCtx(t), nil)
	if err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	var names []string
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
	}
	sort.Strings(names)
	return names
}

func foundNames(t *testing.T, res *mcp.CallToolResult) []string {
	t.Helper()
	if res.IsError {
		t.Fatalf("find_tools failed: %s", textOf(res))
	}
	var out struct {
		Tools []struct {
			Name        string          `json:"name"`
			InputSchema json.RawMessage `json:"inputSchema"`
		} `json:"tools"`
	}
	if err := json.Unmarshal([]byte(res.Content[0].(*mcp.TextContent).Text), &out); err != nil {
		t.Fatalf("find_tools output is not the documented JSON: %v: %s", err, textOf(res))
	}
	var names []string
	for _, tl := range out.Tools {
		if len(tl.InputSchema) == 0 {
			t.Errorf("find_tools gave %s without its input schema", tl.Name)
		}
		names = append(names, tl.Name)
	}
	return names
}

func discoveryEnv(t *testing.T) *Env {
	return newEnv(t,
		set("discovery.mode", "search"),
		set("discovery.pinned", []string{"read_file"}),
		set("policy.tools.deny", []string{"sleep"}),
		set("profiles", map[string]any{
			"ro": map[string]any{"tools": []string{"read_file", "list_files", "grep_files", "echo", "everything__*"}, "deny": []string{"everything__get-env"}},
		}),
		set("upstreams", []map[string]any{{"name": "everything", "command": "node", "args": []string{everythingServer(t), "stdio"}}}),
	)
}

// TestToolSearch: in search mode tools/list holds the pinned tools and the
// two discovery tools; find_tools finds the others by what they do, and
// call_tool calls them as themselves: validated against the real schema,
// authorized and recorded under the real name.
func TestToolSearch(t *testing.T) {
	t.Parallel()
	e := discoveryEnv(t)
	s := e.StartHTTP(t)
	for _, era := range []string{era2025, era2026} {
		t.Run(era, func(t *testing.T) {
			cs := s.Connect(t, era, nil)
			if got, want := listedNames(t, cs), []string{"call_tool", "find_tools", "read_file"}; !slices.Equal(got, want) {
				t.Fatalf("tools/list in search mode = %v, want %v", got, want)
			}
			found := foundNames(t, call(t, cs, "find_tools", map[string]any{"query": "add two numbers together", "limit": 5}))
			if !slices.Contains(found, "everything__get-sum") {
				t.Errorf("find_tools(add two numbers) = %v, want everything__get-sum among them", found)
			}
			found = foundNames(t, call(t, cs, "find_tools", map[string]any{"query": "return the text I give you unchanged"}))
			if !slices.Contains(found, "echo") {
				t.Errorf("find_tools(echo-like) = %v, want echo", found)
			}

			ok := call(t, cs, "call_tool", map[string]any{"name": "echo", "arguments": map[string]any{"text": "via call_tool " + era}})
			if ok.IsError || textOf(ok) != "via call_tool "+era {
				t.Errorf("call_tool(echo) = %q (error %v)", textOf(ok), ok.IsError)
			}
			bad := call(t, cs, "call_tool", map[string]any{"name": "echo", "arguments": map[string]any{"text": 42}})
			if !bad.IsError || !strings.Contains(textOf(bad), "/text") {
				t.Errorf("call_tool(echo, text: 42) = %q, want echo's own schema error naming /text", textOf(bad))
			}
			sum := call(t, cs, "call_tool", map[string]any{"name": "everything__get-sum", "arguments": map[string]any{"a": 1, "b": 2}})
			if sum.IsError || !strings.Contains(textOf(sum), "3") {
				t.Errorf("call_tool(everything__get-sum) = %q, want the upstream's answer", textOf(sum))
			}
			// policy.tools.deny: [sleep] holds through call_tool as directly.
			denied := call(t, cs, "call_tool", map[string]any{"name": "sleep", "arguments": map[string]any{"ms": 1}})
			if !denied.IsError || !strings.Contains(textOf(denied), "policy.tools.deny") {
				t.Errorf("call_tool(sleep) = %q, want the policy's denial naming policy.tools.deny", textOf(denied))
			}
			nested := call(t, cs, "call_tool", map[string]any{"name": "call_tool", "arguments": map[string]any{"name": "echo"}})
			if !nested.IsError {
				t.Errorf("call_tool(call_tool) was not refused: %s", textOf(nested))
			}
		})
	}

	// Each real call has its own record under the real tool's name and
	// toolset, with the status the real tool's stages gave it.
	live := func() []ToolRecord { return e.liveTools(t) }
	want := map[string]string{"echo": "ok", "everything__get-sum": "ok", "sleep": "permission_denied"}
	for tool, status := range want {
		rec := awaitRecord(10*time.Second, live, tool)
		if rec == nil {
			t.Fatalf("no record of %s", tool)
		}
		var statuses []string
		for _, r := range live() {
			if r.Tool == tool {
				statuses = append(statuses, r.Status)
			}
		}
		if !slices.Contains(statuses, status) {
			t.Errorf("records of %s have statuses %v, want %s among them", tool, statuses, status)
		}
	}
	var invalid bool
	for _, r := range live() {
		if r.Tool == "echo" && r.Status == "invalid_arguments" && r.Toolset == "diagnostics" {
			invalid = true
		}
	}
	if !invalid {
		t.Errorf("no invalid_arguments record of echo in toolset diagnostics")
	}
}

// TestProfiles: a profile's endpoint (HTTP /mcp/NAME, stdio serve
// --profile NAME) lists, finds and calls only the profile's tools; a call
// outside it is "not found" and recorded; the plain endpoint is unchanged.
func TestProfiles(t *testing.T) {
	t.Parallel()
	e := discoveryEnv(t)
	s := e.StartHTTP(t)

	ro := *s
	ro.URL = s.Base + "/mcp/ro"
	cs := ro.Connect(t, era2026, nil)
	if got, want := listedNames(t, cs), []string{"call_tool", "find_tools", "read_file"}; !slices.Equal(got, want) {
		t.Errorf("profile ro tools/list = %v, want %v", got, want)
	}
	found := foundNames(t, call(t, cs, "find_tools", map[string]any{"query": "write a file to disk", "limit": 20}))
	for _, n := range found {
		if n == "write_file" || n == "everything__get-env" || n == "sleep" {
			t.Errorf("profile ro: find_tools found %s, which the profile leaves out (%v)", n, found)
		}
	}
	out := call(t, cs, "call_tool", map[string]any{"name": "write_file", "arguments": map[string]any{"path": "x", "content": "y"}})
	if !out.IsError || !strings.Contains(textOf(out), `not found in profile "ro"`) {
		t.Errorf("profile ro: call_tool(write_file) = %q, want not found in the profile", textOf(out))
	}
	// Not listed, so the client cannot call it directly either.
	if _, err := cs.CallTool(callCtx(t), &mcp.CallToolParams{Name: "write_file", Arguments: map[string]any{"path": "x", "content": "y"}}); err == nil {
		t.Errorf("profile ro: a direct call of write_file was served")
	}
	if rec := awaitRecord(10*time.Second, func() []ToolRecord { return e.liveTools(t) }, "write_file"); rec == nil || rec.Status != "not_found" {
		t.Errorf("the refused call of write_file in profile ro is not recorded as not_found: %+v", rec)
	}

	// The plain endpoint serves the whole catalog (no profile is named
	// default): its not-found answer names no profile.
	plain := s.Connect(t, era2025, nil)
	if out := call(t, plain, "call_tool", map[string]any{"name": "write_fil", "arguments": map[string]any{}}); !out.IsError ||
		!strings.Contains(textOf(out), "Tool `write_fil` not found; did you mean write_file?") {
		t.Errorf("the plain endpoint: call_tool(write_fil) = %q, want not found, and no profile named", textOf(out))
	}

	// An unknown profile is not an endpoint.
	if code, _, body := post(t, s.Base+"/mcp/nope", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, nil); code != 404 {
		t.Errorf("POST /mcp/nope: status %d (%s), want 404", code, body)
	}

	// stdio: serve --profile ro.
	st := e.start(t, "stdio", "--profile", "ro")
	scs := st.Connect(t, era2025, nil)
	if got, want := listedNames(t, scs), []string{"call_tool", "find_tools", "read_file"}; !slices.Equal(got, want) {
		t.Errorf("serve --profile ro tools/list = %v, want %v", got, want)
	}
	got := call(t, scs, "call_tool", map[string]any{"name": "sleep", "arguments": map[string]any{"ms": 1}})
	if !got.IsError || !strings.Contains(textOf(got), `not found in profile "ro"`) {
		t.Errorf("serve --profile ro: call_tool(sleep) = %q, want not found", textOf(got))
	}
}
