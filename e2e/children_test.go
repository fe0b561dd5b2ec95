package e2e

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestUpstreamsDieWithGateway (issue 9): after a kill -9 of the gateway,
// no upstream process outlives it: not the stdio child (Pdeathsig), not
// a grandchild in its process group (the watchdog). Before, a grandchild
// kept running under PID 1.
func TestUpstreamsDieWithGateway(t *testing.T) {
	t.Parallel()
	inner := newInner(t)
	pidfile := filepath.Join(t.TempDir(), "grandchild.pid")
	e := newEnv(t, set("upstreams", []any{map[string]any{
		"name":    "inner",
		"command": "/bin/sh",
		// A grandchild in the child's group, then the real server.
		"args":            []string{"-c", `sleep 300 & echo $! > "$0"; exec "$1" serve --config "$2"`, pidfile, toolgateBin, inner.Env.ConfigPath},
		"startup_timeout": "30s",
	}}))
	s := e.StartHTTP(t)
	cs := s.Connect(t, era2025, nil)
	if res := call(t, cs, "inner__echo", map[string]any{"text": "up"}); res.IsError {
		t.Fatalf("inner__echo: %s", textOf(res))
	}
	b, err := os.ReadFile(pidfile)
	if err != nil {
		t.Fatal(err)
	}
	grandchild, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	children := processesWithArg(inner.Env.ConfigPath)
	if len(children) == 0 || !processAlive(grandchild) {
		t.Fatalf("before: upstream processes %v, grandchild %d alive %v", children, grandchild, processAlive(grandchild))
	}
	if err := s.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if !waitFor(10*time.Second, func() bool {
		return len(processesWithArg(inner.Env.ConfigPath)) == 0 && !processAlive(grandchild)
	}) {
		t.Errorf("10s after kill -9 of the gateway: upstream processes %v, grandchild %d alive %v",
			processesWithArg(inner.Env.ConfigPath), grandchild, processAlive(grandchild))
		_ = syscall.Kill(grandchild, syscall.SIGKILL)
	}
}
