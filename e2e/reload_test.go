package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// rewriteConfig applies opts to the env's config and writes it as an
// editor that saves by rename does: a new file, renamed over the old one.
func (e *Env) rewriteConfig(t *testing.T, opts ...Opt) {
	t.Helper()
	for _, o := range opts {
		o(e.Config)
	}
	b, err := json.MarshalIndent(e.Config, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	tmp := e.ConfigPath + ".swp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, e.ConfigPath); err != nil {
		t.Fatal(err)
	}
}

// TestReload: the config file is edited while a Go SDK client is
// connected (stdio on the 2025 era, HTTP on the 2026 era): an upstream is
// added and one removed. The client gets list_changed and sees the new
// tools without reconnecting; the removed upstream leaves no process; the
// unchanged one keeps its process. A broken edit keeps the old config
// and says why (key or line); SIGHUP reloads and does not end serve.
func TestReload(t *testing.T) {
	t.Parallel()
	node, script := everythingPeer(t)
	for _, c := range []clientCase{{"stdio", era2025}, {"http", era2026}} {
		t.Run(c.String(), func(t *testing.T) {
			t.Parallel()
			marker := fmt.Sprintf("tg-e2e-reload-%d-%d", os.Getpid(), time.Now().UnixNano())
			ev := func(name string) map[string]any {
				return map[string]any{
					"name": name, "command": node, "args": []string{script, "stdio"}, "startup_timeout": "20s",
					"env": map[string]string{"TG_E2E_MARKER": marker + "-" + name},
				}
			}
			killAtCleanup(t, marker) // whatever happens, kill what is left
			allow := set("policy.destructive.allow", []string{"keep__*", "drop__*", "add__*"})
			e := newEnv(t, upstreams(ev("keep"), ev("drop")), allow)
			s := e.startFor(t, c)
			changed := make(chan struct{}, 16)
			cs := s.Connect(t, c.Era, &ConnectOptions{Client: &mcp.ClientOptions{
				ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
					select {
					case changed <- struct{}{}:
					default:
					}
				},
			}})
			names := func() []string {
				lt, err := cs.ListTools(callCtx(t), nil)
				if err != nil {
					t.Fatalf("tools/list: %v", err)
				}
				var out []string
				for _, tl := range lt.Tools {
					out = append(out, tl.Name)
				}
				return out
			}
			has := func(name string) bool { return slices.Contains(names(), name) }
			if !waitFor(20*time.Second, func() bool { return has("keep__echo") && has("drop__echo") }) {
				t.Fatalf("upstreams keep and drop not listed: %v", names())
			}
			dropPrompts := func() (n int) {
				lp, err := cs.ListPrompts(callCtx(t), nil)
				if err != nil {
					t.Fatalf("prompts/list: %v", err)
				}
				for _, p := range lp.Prompts {
					if strings.HasPrefix(p.Name, "drop__") {
						n++
					}
				}
				return n
			}
			if dropPrompts() == 0 {
				t.Fatal("upstream drop serves no prompts before the edit")
			}
			keepProcs := procsWith(marker + "-keep")
			if len(keepProcs) != 1 || len(procsWith(marker+"-drop")) != 1 {
				t.Fatalf("upstream processes before the edit: keep %v, drop %v", keepProcs, procsWith(marker+"-drop"))
			}
			for len(changed) > 0 { // notifications of the start
				<-changed
			}

			e.rewriteConfig(t, upstreams(ev("keep"), ev("add")))
			select {
			case <-changed:
			case <-time.After(20 * time.Second):
				t.Fatal("no notifications/tools/list_changed within 20s of the config edit")
			}
			if !waitFor(20*time.Second, func() bool { return has("add__echo") && !has("drop__echo") }) {
				t.Fatalf("after the edit, tools/list: %v; want add__echo and no drop__echo", names())
			}
			if r := call(t, cs, "add__echo", map[string]any{"message": "new"}); r.IsError || textOf(r) != "Echo: new" {
				t.Errorf("add__echo: %s", mustJSON(r))
			}
			var left []string
			if !waitFor(5*time.Second, func() bool { left = procsWith(marker + "-drop"); return len(left) == 0 }) {
				t.Errorf("the removed upstream's processes remain: %v", left)
			}
			if n := dropPrompts(); n != 0 {
				t.Errorf("%d prompts of the removed upstream are still listed", n)
			}
			if now := procsWith(marker + "-keep"); !slices.Equal(now, keepProcs) {
				t.Errorf("the unchanged upstream's process changed: before %v, after %v", keepProcs, now)
			}

			// A broken edit: the old config stays, the error is logged.
			if err := os.WriteFile(e.ConfigPath, []byte("upstreams:\n  - name: [oops\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			if !waitFor(10*time.Second, func() bool { return strings.Contains(s.Stderr(), "config reload failed") }) {
				t.Fatalf("no \"config reload failed\" in the log after a broken edit:\n%s", tail(s.Stderr(), 2000))
			}
			if line := grepLines(s.Stderr(), "config reload failed", 1); !strings.Contains(line, "line") {
				t.Errorf("the reload error does not say where: %s", line)
			}
			if c.Transport == "http" {
				lr, _ := healthDetails(t, s)["last_reload"].(map[string]any)
				if lr == nil || lr["ok"] != false || lr["error"] == "" {
					t.Errorf("/healthz last_reload after a broken edit: %v", lr)
				}
			}
			if r := call(t, cs, "keep__echo", map[string]any{"message": "still"}); r.IsError || textOf(r) != "Echo: still" {
				t.Errorf("keep__echo after a broken edit: %s", mustJSON(r))
			}
			if !has("add__echo") {
				t.Errorf("after a broken edit, add__echo is gone: %v", names())
			}

			// SIGHUP reloads (the config is good again) and serve goes on.
			e.rewriteConfig(t)
			if !waitFor(10*time.Second, func() bool { return strings.Count(s.Stderr(), "config reloaded") >= 2 }) {
				t.Fatalf("the repaired config was not reloaded:\n%s", tail(s.Stderr(), 2000))
			}
			if err := s.cmd.Process.Signal(syscall.SIGHUP); err != nil {
				t.Fatal(err)
			}
			if !waitFor(10*time.Second, func() bool { return strings.Contains(s.Stderr(), "trigger=SIGHUP") }) {
				t.Fatalf("no reload on SIGHUP:\n%s", tail(s.Stderr(), 2000))
			}
			if s.Exited() {
				t.Fatal("serve exited on SIGHUP")
			}
			if r := call(t, cs, "keep__echo", map[string]any{"message": "hup"}); r.IsError {
				t.Errorf("keep__echo after SIGHUP: %s", mustJSON(r))
			}
			if now := procsWith(marker + "-keep"); !slices.Equal(now, keepProcs) {
				t.Errorf("the unchanged upstream's process changed across reloads: before %v, after %v", keepProcs, now)
			}
			s.Stop(t)
			var reloads int
			for _, ev := range e.Archive(t).Events {
				if ev["type"] == "config.reloaded" {
					reloads++
				}
			}
			if reloads < 2 {
				t.Errorf("%d config.reloaded events in the run archive, want at least 2 (an edit, a broken edit)", reloads)
			}
		})
	}
}

// TestReloadLetsCallsFinish: an edit that changes an upstream (its env)
// while a call of it is in flight does not cut the call: it answers in
// full from the old process, the new process serves the calls that start
// meanwhile, and the old one ends once its call has.
func TestReloadLetsCallsFinish(t *testing.T) {
	t.Parallel()
	node, script := everythingPeer(t)
	marker := fmt.Sprintf("tg-e2e-drain-%d-%d", os.Getpid(), time.Now().UnixNano())
	ev := func(version string) Opt {
		return upstreams(map[string]any{
			"name": "ev", "command": node, "args": []string{script, "stdio"}, "startup_timeout": "20s",
			"env": map[string]string{"TG_E2E_MARKER": marker + "-" + version},
		})
	}
	killAtCleanup(t, marker) // whatever happens, kill what is left
	e := newEnv(t, ev("old"), set("policy.destructive.allow", []string{"ev__*"}))
	c := clientCase{"stdio", era2025}
	s := e.startFor(t, c)
	cs := s.Connect(t, c.Era, nil)
	if !waitFor(20*time.Second, func() bool {
		lt, err := cs.ListTools(callCtx(t), nil)
		return err == nil && slices.ContainsFunc(lt.Tools, func(tl *mcp.Tool) bool { return tl.Name == "ev__echo" })
	}) {
		t.Fatal("upstream ev not listed")
	}

	type answer struct {
		res *mcp.CallToolResult
		err error
	}
	done := make(chan answer, 1)
	go func() {
		res, err := cs.CallTool(callCtx(t), &mcp.CallToolParams{Name: "ev__trigger-long-running-operation",
			Arguments: map[string]any{"duration": 4, "steps": 4}})
		done <- answer{res, err}
	}()
	if !waitFor(10*time.Second, func() bool {
		return countEvents(e.liveEvents(t), "tool.started", "ev__trigger-long-running-operation") == 1
	}) {
		t.Fatal("the long call did not start")
	}

	e.rewriteConfig(t, ev("new"))
	if !waitFor(20*time.Second, func() bool { return len(procsWith(marker+"-new")) == 1 }) {
		t.Fatalf("the changed upstream's new process did not start:\n%s", tail(s.Stderr(), 2000))
	}
	if !waitFor(20*time.Second, func() bool {
		r, err := cs.CallTool(callCtx(t), &mcp.CallToolParams{Name: "ev__echo", Arguments: map[string]any{"message": "new"}})
		return err == nil && !r.IsError && textOf(r) == "Echo: new"
	}) {
		t.Error("the changed upstream's new process serves no calls while the old one finishes")
	}
	select {
	case a := <-done:
		t.Fatalf("the call in flight ended before its time (%v): %s", a.err, mustJSON(a.res))
	default:
	}
	if len(procsWith(marker+"-old")) != 1 {
		t.Fatalf("the old process ended with its call in flight")
	}

	a := <-done
	if a.err != nil || a.res.IsError || !strings.Contains(textOf(a.res), "Long running operation completed") {
		t.Fatalf("the call in flight across the reload: %v %s", a.err, mustJSON(a.res))
	}
	var left []string
	if !waitFor(10*time.Second, func() bool { left = procsWith(marker + "-old"); return len(left) == 0 }) {
		t.Errorf("the old process remains after its call ended: %v", left)
	}
	s.Stop(t)
}

// TestReloadTSClient: a TypeScript SDK client connected over HTTP edits
// the config (rename-replace, as editors save) to add an upstream: it is
// told with list_changed and lists the new tools on the same session.
func TestReloadTSClient(t *testing.T) {
	t.Parallel()
	allow := set("policy.destructive.allow", []string{"everything__*", "add__*"})
	e := newEnv(t, upstreams(everythingStdio(t, "everything")), allow)
	s := e.StartHTTP(t)
	if !waitFor(20*time.Second, func() bool { return s.healthToolsets(t)["everything"].Status.State == "ready" }) {
		t.Fatal("upstream everything not ready")
	}
	set("upstreams", []map[string]any{everythingStdio(t, "everything"), everythingStdio(t, "add")})(e.Config)
	newConfig, err := json.Marshal(e.Config)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Before   []string `json:"before"`
		Notified bool     `json:"notified"`
		After    []string `json:"after"`
		Error    string   `json:"error"`
	}
	runNode(t, "reload-client.mjs", map[string]any{"url": s.URL, "config": e.ConfigPath, "newConfig": string(newConfig), "want": "add__echo"}, &got)
	if got.Error != "" {
		t.Fatalf("TS client: %s", got.Error)
	}
	if !slices.Contains(got.Before, "everything__echo") || slices.Contains(got.Before, "add__echo") {
		t.Errorf("before the edit: %v; want everything__echo and no add__echo", got.Before)
	}
	if !got.Notified {
		t.Error("the TS client got no notifications/tools/list_changed within 20s of the edit")
	}
	if !slices.Contains(got.After, "add__echo") || !slices.Contains(got.After, "everything__echo") {
		t.Errorf("after the edit: %v; want add__echo and everything__echo", got.After)
	}
	s.Stop(t)
}
