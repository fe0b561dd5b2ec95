package e2e

import (
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestProfileKeepsUpstreamPromptsAndResources: an upstream's prompts,
// resources and resource templates are served only to callers who reach
// the upstream, as its tools are. A profile that admits none of the
// upstream's tools (HTTP /mcp/coding, or a token that policy.identities
// confines to it on the plain endpoint) neither lists nor gets its
// prompts and neither lists nor reads its resources (a read is "not
// found", as for a URI nothing serves); a profile that admits the
// upstream's tools, and the plain endpoint, serve them all.
func TestProfileKeepsUpstreamPromptsAndResources(t *testing.T) {
	t.Parallel()
	e := newEnv(t,
		upstreams(everythingStdio(t, "everything")),
		set("policy.destructive.allow", []string{"everything__*"}),
		set("profiles", map[string]any{
			"coding":   map[string]any{"tools": []string{"echo", "read_file"}},
			"upstream": map[string]any{"tools": []string{"echo", "everything__*"}},
		}),
		set("http.auth.tokens", []any{
			map[string]any{"name": "ci", "token": "ci-token-0123456789"},
			map[string]any{"name": "alice", "token": "alice-token-0123456789"},
		}),
		set("policy.identities", []any{map[string]any{"match": map[string]any{"name": "ci"}, "profile": "coding"}}),
	)
	s := e.StartHTTP(t)
	const prompt, doc = "everything__simple-prompt", "demo://resource/dynamic/text/1"
	// The upstream is up once the endpoint that admits it serves them.
	if !waitFor(30*time.Second, func() bool { return upstreamServed(t, s, "alice-token-0123456789") }) {
		t.Fatal("the upstream's prompts and resources were never served on /mcp/upstream")
	}
	for _, tc := range []struct {
		name, path, token string
		served            bool
	}{
		{"profile without the upstream", "/mcp/coding", "alice-token-0123456789", false},
		{"profile with the upstream", "/mcp/upstream", "alice-token-0123456789", true},
		{"identity confined to the profile without it", "/mcp", "ci-token-0123456789", false},
		{"plain endpoint", "/mcp", "alice-token-0123456789", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := *s
			srv.URL = s.Base + tc.path
			cs := srv.Connect(t, era2025, &ConnectOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + tc.token}}})
			lp, err := cs.ListPrompts(callCtx(t), nil)
			if err != nil {
				t.Fatalf("prompts/list: %v", err)
			}
			listed := slices.ContainsFunc(lp.Prompts, func(p *mcp.Prompt) bool { return strings.HasPrefix(p.Name, "everything__") })
			if listed != tc.served {
				t.Errorf("prompts/list lists the upstream's prompts: %v, want %v", listed, tc.served)
			}
			_, err = cs.GetPrompt(callCtx(t), &mcp.GetPromptParams{Name: prompt})
			if (err == nil) != tc.served {
				t.Errorf("prompts/get %s: %v; want it got: %v", prompt, err, tc.served)
			}
			lr, err := cs.ListResources(callCtx(t), nil)
			if err != nil {
				t.Fatalf("resources/list: %v", err)
			}
			listed = slices.ContainsFunc(lr.Resources, func(r *mcp.Resource) bool { return strings.HasPrefix(r.URI, "demo://") })
			if listed != tc.served {
				t.Errorf("resources/list lists the upstream's resources: %v, want %v", listed, tc.served)
			}
			lt, err := cs.ListResourceTemplates(callCtx(t), nil)
			if err != nil {
				t.Fatalf("resources/templates/list: %v", err)
			}
			listed = slices.ContainsFunc(lt.ResourceTemplates, func(r *mcp.ResourceTemplate) bool { return strings.HasPrefix(r.URITemplate, "demo://") })
			if listed != tc.served {
				t.Errorf("resources/templates/list lists the upstream's templates: %v, want %v", listed, tc.served)
			}
			rr, err := cs.ReadResource(callCtx(t), &mcp.ReadResourceParams{URI: doc})
			if read := err == nil && len(rr.Contents) > 0; read != tc.served {
				t.Errorf("resources/read %s: %v; want it read: %v", doc, err, tc.served)
			}
			if !tc.served && err != nil && !strings.Contains(err.Error(), "not found") {
				t.Errorf("resources/read %s out of reach: %v; want not found, as a URI nothing serves", doc, err)
			}
		})
	}
}

// upstreamServed reports whether /mcp/upstream serves the everything
// upstream's prompt and resource template to the bearer of token.
func upstreamServed(t *testing.T, s *Server, token string) bool {
	t.Helper()
	h := map[string]string{"Authorization": "Bearer " + token}
	srv := *s
	srv.URL = s.Base + "/mcp/upstream"
	id := initSession(t, &srv, h)
	h2 := sessionHeader(id)
	h2["Authorization"] = h["Authorization"]
	_, _, prompts := post(t, srv.URL, `{"jsonrpc":"2.0","id":2,"method":"prompts/list"}`, h2)
	_, _, templates := post(t, srv.URL, `{"jsonrpc":"2.0","id":3,"method":"resources/templates/list"}`, h2)
	return strings.Contains(prompts, "everything__simple-prompt") && strings.Contains(templates, "demo://resource/dynamic/text/")
}
