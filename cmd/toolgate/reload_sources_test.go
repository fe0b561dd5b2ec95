package main

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"
	"weak"

	"github.com/toolgate/toolgate/adapters/upstream"
	"github.com/toolgate/toolgate/cmd/toolgate/internal/config"
	"github.com/toolgate/toolgate/gateway"
)

// Reloads that change an upstream retire its old toolset: once its calls
// in flight are done (none here) it is closed, and nothing of the gateway
// holds it any more. Before, every such reload left the old upstream
// registered with the MCP server as a prompt and resource source (one more
// per reload, asked at every prompt and resource sync, serving nothing)
// and in the app's list of toolsets to close at shutdown.
func TestReloadReleasesRetiredUpstreams(t *testing.T) {
	url := mcpUpstream(t, map[string]bool{"hello": false})
	dir := t.TempDir()
	yaml := func(i int) string {
		return fmt.Sprintf("upstreams:\n  - name: up\n    url: %s\n    call_timeout: %ds\n", url, 10+i)
	}
	var next *config.Config
	a, r := reloadApp(t, dir, yaml(0), &next)
	srv := gateway.NewMCPServer(&gateway.MCPOptions{Name: "toolgate", Version: "test", Catalog: a.catalog, Pipeline: a.pipeline})
	for _, src := range a.promptSources { // as serve does
		srv.AddPromptSource(src)
	}
	for _, src := range a.resourceSources {
		srv.AddResourceSource(src)
	}
	load := r.load
	r = newReloader(a, srv, nil, load)
	var old []weak.Pointer[upstream.Upstream]
	const reloads = 4
	for i := 1; i <= reloads; i++ {
		old = append(old, weak.Make(a.upSources["up"]))
		next = configFrom(t, dir, yaml(i))
		r.reload(context.Background(), "SIGHUP")
		if res := r.last.Load(); !res.OK || len(res.Changes.Changed) != 1 {
			t.Fatalf("reload %d: %+v", i, res)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for _, _, ok := a.catalog.Resolve("up__hello"); !ok; _, _, ok = a.catalog.Resolve("up__hello") {
		if time.Now().After(deadline) {
			t.Fatalf("the upstream after %d reloads serves no tool", reloads)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if res := callTool(a, "up__hello", nil); res.IsError {
		t.Fatalf("the upstream after %d reloads: %s", reloads, res.Message)
	}
	// Each retired upstream is let go once it has closed, which a loaded
	// machine (CI runs the packages' race tests side by side) can take a
	// while to get to: its own deadline, not what is left of the one above.
	deadline = time.Now().Add(30 * time.Second)
	for {
		runtime.GC()
		held := 0
		for _, p := range old {
			if p.Value() != nil {
				held++
			}
		}
		if held == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of the %d upstreams retired by reloads are still held by the gateway", held, reloads)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
