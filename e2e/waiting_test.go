package e2e

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// latePolicy allows every tool of the upstream named late.
var latePolicy = set("policy.destructive.allow", []string{"late__*"})

// slowUpstreams is a config with an upstream that hangs at start (it
// never answers initialize; startup_timeout 60s) and one, "late", that
// starts server-everything once the returned gate file exists.
func slowUpstreams(t *testing.T) (Opt, string) {
	node, script := everythingPeer(t)
	gate := filepath.Join(t.TempDir(), "open")
	hung := map[string]any{"name": "hung", "command": "/bin/sleep", "args": []string{"120"}, "startup_timeout": "60s"}
	late := map[string]any{
		"name": "late", "command": "/bin/sh", "startup_timeout": "60s",
		"args": []string{"-c", `while [ ! -e "$1" ]; do sleep 0.05; done; exec "$2" "$3" stdio`, "gate", gate, node, script},
	}
	return upstreams(hung, late), gate
}

// TestUpstreamSlowStartServe: with an upstream that hangs at start and one
// that comes up late, a stdio client gets its initialize answer without
// waiting for them, can call built-in tools at once, and is told with
// notifications/tools/list_changed when the late upstream's tools arrive.
func TestUpstreamSlowStartServe(t *testing.T) {
	t.Parallel()
	ups, gate := slowUpstreams(t)
	e := newEnv(t, ups, latePolicy)
	start := time.Now()
	s := e.StartStdio(t)
	// A SIGHUP while upstreams start does not end serve.
	if !waitFor(10*time.Second, func() bool { return strings.Contains(s.Stderr(), "starting upstream") }) {
		t.Fatalf("no \"starting upstream\" in the log:\n%s", s.Stderr())
	}
	if err := s.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	changed := make(chan struct{}, 16)
	cs := s.Connect(t, era2025, &ConnectOptions{Client: &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			select {
			case changed <- struct{}{}:
			default:
			}
		},
	}})
	took := time.Since(start)
	t.Logf("initialize answered %s after start", took.Round(time.Millisecond))
	if took > 12*time.Second {
		t.Errorf("initialize took %s; the hung upstream's startup_timeout is 60s and serve must not wait for it", took)
	}
	if r := call(t, cs, "echo", map[string]any{"text": "now"}); r.IsError || textOf(r) != "now" {
		t.Errorf("built-in echo while upstreams start: %s", mustJSON(r))
	}
	has := func(name string) bool {
		lt, err := cs.ListTools(callCtx(t), nil)
		if err != nil {
			t.Fatalf("tools/list: %v", err)
		}
		return slices.ContainsFunc(lt.Tools, func(tl *mcp.Tool) bool { return tl.Name == name })
	}
	if has("late__echo") {
		t.Fatal("late__echo is listed before its upstream started")
	}
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	select {
	case <-changed:
	case <-time.After(20 * time.Second):
		t.Fatal("no notifications/tools/list_changed within 20s of the late upstream starting")
	}
	if !waitFor(5*time.Second, func() bool { return has("late__echo") }) {
		t.Fatal("late__echo is not in tools/list after list_changed")
	}
	if r := call(t, cs, "late__echo", map[string]any{"message": "up"}); r.IsError || textOf(r) != "Echo: up" {
		t.Errorf("late__echo: %s", mustJSON(r))
	}
	if !waitFor(5*time.Second, func() bool { return strings.Contains(s.Stderr(), "trigger=SIGHUP") }) {
		t.Error("the SIGHUP sent while upstreams started did not reload once serve ran")
	}
	s.Stop(t)
}

// TestUpstreamSlowStartCall: `toolgate call` of a built-in tool does not
// wait for (or start) upstreams; `toolgate call late__echo` waits for
// "late" only, not for the hung upstream.
func TestUpstreamSlowStartCall(t *testing.T) {
	t.Parallel()
	ups, gate := slowUpstreams(t)
	e := newEnv(t, ups, latePolicy)
	run := func(args ...string) (string, time.Duration) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
		defer cancel()
		cmd := e.command(ctx, append([]string{"call"}, args...)...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		start := time.Now()
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("toolgate call %v after %s: %v\n%s", args, time.Since(start), err, stderr.String())
		}
		return string(out), time.Since(start)
	}
	out, took := run("echo", `{"text":"built-in"}`)
	if !strings.Contains(out, "built-in") || took > 15*time.Second {
		t.Errorf("toolgate call echo: %q after %s; want the echo, without waiting for upstreams (hung's startup_timeout is 60s)", out, took)
	}
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	out, took = run("late__echo", `{"message":"late"}`)
	if !strings.Contains(out, "Echo: late") || took > 30*time.Second {
		t.Errorf("toolgate call late__echo: %q after %s; want the echo, without waiting for the hung upstream", out, took)
	}
}
