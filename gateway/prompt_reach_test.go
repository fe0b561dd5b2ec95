package gateway

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// gatedPrompts serves a prompt that follows the tool "gate" (as the
// skills' prompts follow load_skill) and one that follows no tool.
type gatedPrompts struct{}

func (gatedPrompts) Prompts(context.Context) ([]Prompt, error) {
	get := func(context.Context, map[string]string) (*PromptResult, error) {
		return &PromptResult{Messages: []PromptMessage{{Role: "user", Content: Text("secret instructions")}}}, nil
	}
	return []Prompt{{Name: "gated", Tool: "gate", Get: get}, {Name: "free", Get: get}}, nil
}

// TestPromptFollowsItsTool: a prompt that follows a tool ([Prompt.Tool])
// is listed and got only by a caller who may call that tool: one whose
// view (a profile, the profile an identity is confined to) admits it and
// whom the policy allows it. A skill's instructions are then out of reach
// of a caller confined to a profile without load_skill, or denied
// skills.read, as load_skill is. Prompts that follow no tool are served
// to every caller.
func TestPromptFollowsItsTool(t *testing.T) {
	tests := []struct {
		name   string
		view   View
		deny   bool
		listed []string
	}{
		{"no view, allowed", nil, false, []string{"free", "gated"}},
		{"a view admitting the tool", namesView{"gate": true}, false, []string{"free", "gated"}},
		{"a view without the tool", namesView{"other": true}, false, []string{"free"}},
		{"the policy denies the tool", nil, true, []string{"free"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			gate, err := NewDynamicTool(ToolDef{Name: "gate"}, func(context.Context, map[string]any) (*Result, error) { return OkText(""), nil })
			if err != nil {
				t.Fatal(err)
			}
			ts, err := NewToolset("skills", gate)
			if err != nil {
				t.Fatal(err)
			}
			cat := NewCatalog(nil)
			if err := cat.Add(context.Background(), ts); err != nil {
				t.Fatal(err)
			}
			pol := PolicyFunc(func(_ context.Context, tl *Tool) Decision {
				if tc.deny && tl.Name == "gate" {
					return Decision{Layer: "config", Rule: "policy.capabilities.deny:skills.read"}
				}
				return Decision{Allow: true}
			})
			m := NewMCPServer(&MCPOptions{Name: "t", Version: "1", Catalog: cat, View: tc.view, Pipeline: NewPipeline(&Options{Tools: cat, Policy: pol})})
			m.AddPromptSource(gatedPrompts{})

			_, raw := rpcAnswer(t, m, `{"jsonrpc":"2.0","id":1,"method":"prompts/list"}`)
			var list struct {
				Result struct {
					Prompts []struct{ Name string } `json:"prompts"`
				} `json:"result"`
			}
			if err := json.Unmarshal([]byte(raw), &list); err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, p := range list.Result.Prompts {
				names = append(names, p.Name)
			}
			slices.Sort(names)
			if !slices.Equal(names, tc.listed) {
				t.Errorf("prompts/list: %v, want %v", names, tc.listed)
			}
			errObj, raw := rpcAnswer(t, m, `{"jsonrpc":"2.0","id":2,"method":"prompts/get","params":{"name":"gated"}}`)
			if got := errObj == nil && strings.Contains(raw, "secret instructions"); got != slices.Contains(tc.listed, "gated") {
				t.Errorf("prompts/get gated: %s; want it got only when listed", raw)
			}
			// A mistyped name is told the nearest the caller may get, and
			// never one it may not (mcp-go copy item 92).
			errObj, raw = rpcAnswer(t, m, `{"jsonrpc":"2.0","id":3,"method":"prompts/get","params":{"name":"gatd"}}`)
			want := "prompt 'gatd' not found"
			if slices.Contains(tc.listed, "gated") {
				want += "; did you mean gated?"
			}
			if errObj == nil || errObj.Message != want {
				t.Errorf("prompts/get gatd: %s; want the message %q", raw, want)
			}
			errObj, raw = rpcAnswer(t, m, `{"jsonrpc":"2.0","id":4,"method":"completion/complete","params":{"ref":{"type":"ref/prompt","name":"gatd"},"argument":{"name":"a","value":""}}}`)
			if want = strings.Replace(want, "'gatd'", `"gatd"`, 1); errObj == nil || errObj.Message != want {
				t.Errorf("completion/complete of gatd: %s; want the message %q", raw, want)
			}
		})
	}
}
