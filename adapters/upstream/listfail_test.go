package upstream

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// TestPromptOrResourceListingFailureKeepsTools: an upstream whose
// prompts or resources cannot be listed (it refuses resources/list or
// prompts/list, or pages its resources past toolgate's bound) still
// connects and serves its tools; only what could not be listed is missing.
func TestPromptOrResourceListingFailureKeepsTools(t *testing.T) {
	defer func(n int) { maxListPages = n }(maxListPages)
	maxListPages = 20
	for _, c := range []struct {
		name  string
		st    *serverState
		setup func(st *serverState)
		// whether prompts and resources (not templates) are still listed
		prompts, resources bool
	}{
		{name: "resources/list refused", st: &serverState{refuse: map[string]bool{"resources/list": true}}, prompts: true},
		{name: "templates refused", st: &serverState{refuse: map[string]bool{"resources/templates/list": true}}, prompts: true, resources: true},
		{name: "prompts/list refused", st: &serverState{refuse: map[string]bool{"prompts/list": true}}, resources: true},
		{name: "over maxListPages pages of resources", st: &serverState{}, setup: func(st *serverState) {
			// The test server pages by 3: 100 resources are 34 pages, past
			// the bound of 20 set below (1,000 in use: the same path, which
			// under the race detector took 25 s here, past start's wait).
			var rs []server.ServerResource
			for i := range 100 {
				uri := fmt.Sprintf("test://many/%05d", i)
				rs = append(rs, server.ServerResource{Resource: mcp.NewResource(uri, fmt.Sprintf("many-%05d", i)),
					Handler: func(context.Context, mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) { return nil, nil }})
			}
			st.srv.AddResources(rs...)
		}, prompts: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			url, _ := httpUpstream(t, c.st)
			if c.setup != nil {
				c.setup(c.st)
			}
			log, logs := newLogger()
			u := start(t, Config{Name: "lf", URL: url}, log, true)
			if findTool(u, "lf__echo") == nil {
				t.Errorf("tools %v", toolNames(u))
			}
			ps, _ := u.Prompts(context.Background())
			rs, ts, _ := u.Resources(context.Background())
			if (len(ps) > 0) != c.prompts {
				t.Errorf("%d prompts, want some: %v", len(ps), c.prompts)
			}
			if (len(rs) > 0) != c.resources {
				t.Errorf("%d resources, want some: %v", len(rs), c.resources)
			}
			if refused := c.st.refuse["resources/templates/list"]; (len(ts) == 0) != refused {
				t.Errorf("%d templates (listing refused: %v)", len(ts), refused)
			}
			if !strings.Contains(logs.String(), "listing") {
				t.Errorf("the failure is not logged: %s", logs.String())
			}
		})
	}
}
