package upstream

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/gateway"
)

// TestExitAtOnceReportsExitStatus: a child that exits as soon as it
// starts (a missing module, a bad flag) fails its connection attempt with
// its exit status and what its stderr said (most often why), every time, never with a bare "transport closed" (the
// end of its stdout may be seen before its exit).
func TestExitAtOnceReportsExitStatus(t *testing.T) {
	requireProc(t)
	for i := 0; i < 40; i++ {
		u := start(t, Config{Name: "x", Command: "sh", Args: []string{"-c", "echo boom >&2; exit 3"}}, nil, false)
		err := u.WaitReady(context.Background())
		if err == nil || !strings.Contains(err.Error(), "exited with status 3") {
			t.Fatalf("attempt %d: WaitReady: %v", i, err)
		}
		// Its last stderr line too, every time (it may still be in the
		// pipe when the exit is seen).
		if d := u.Status().Detail; !strings.Contains(d, `last error: initialize: upstream process exited with status 3; from its stderr: "boom"`) {
			t.Fatalf("attempt %d: status %q", i, d)
		}
		u.Close()
	}
}

// TestMissingDirNamed: a stdio upstream whose dir does not exist fails
// with an error that names the directory, not with Go's "fork/exec
// COMMAND: no such file or directory", which blames a command that is
// there.
func TestMissingDirNamed(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{"/nonexistent/toolgate-dir", file} {
		u := start(t, Config{Name: "d", Command: "sh", Args: []string{"-c", "exit 0"}, Dir: dir}, nil, false)
		err := u.WaitReady(context.Background())
		if err == nil || !strings.Contains(err.Error(), "dir "+strconv.Quote(dir)) || strings.Contains(err.Error(), "fork/exec") {
			t.Errorf("dir %s: WaitReady: %v", dir, err)
		}
		if d := u.Status().Detail; !strings.Contains(d, "dir "+strconv.Quote(dir)) {
			t.Errorf("dir %s: status %q", dir, d)
		}
		u.Close()
	}
}

// TestRelativePathEntries: the command is looked up in the child's PATH
// as its shell would, relative entries ("node_modules/.bin", ".")
// included, relative to its dir, not to the gateway's working directory.
func TestRelativePathEntries(t *testing.T) {
	requireProc(t)
	dir := t.TempDir()
	script := []byte("#!/bin/sh\nexec " + testBinary(t) + "\n")
	if err := os.MkdirAll(filepath.Join(dir, "node_modules", ".bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "node_modules", ".bin", "tg-srv"), script, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "tg-here"), script, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ cmd, path string }{
		{"tg-srv", "node_modules/.bin:/usr/bin:/bin"},
		{"tg-here", ".:/usr/bin:/bin"},
		{"tg-here", ":/usr/bin:/bin"},
	} {
		cfg := Config{Name: "p", Command: c.cmd, Dir: dir, Env: map[string]string{envServerMode: "stdio", "PATH": c.path}}
		u, err := New(cfg, nil)
		if err != nil {
			t.Fatal(err)
		}
		u.tune = fastTuning()
		u.Start(context.Background())
		if err := u.WaitReady(context.Background()); err != nil {
			t.Errorf("%s with PATH=%s in %s: %v", c.cmd, c.path, dir, err)
		}
		u.Close()
	}
}

// A command is looked up in the child's PATH only: one that is not there
// is not taken from the gateway's PATH instead (a configured PATH that
// pins a runtime would otherwise be silently bypassed), and the failure
// names the PATH searched.
func TestCommandOnlyInGatewayPath(t *testing.T) {
	requireProc(t)
	gw := t.TempDir()
	script := []byte("#!/bin/sh\nexec " + testBinary(t) + "\n")
	if err := os.WriteFile(filepath.Join(gw, "tg-gw-only"), script, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", gw+string(filepath.ListSeparator)+os.Getenv("PATH"))
	cfg := Config{Name: "p", Command: "tg-gw-only", Env: map[string]string{envServerMode: "stdio", "PATH": "/usr/bin:/bin"}}
	u, err := New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	u.tune = fastTuning()
	u.Start(context.Background())
	defer u.Close()
	err = u.WaitReady(context.Background())
	if err == nil || !strings.Contains(err.Error(), "not found") || !strings.Contains(err.Error(), "/usr/bin:/bin") {
		t.Fatalf("tg-gw-only, only in the gateway's PATH, with the upstream's PATH=/usr/bin:/bin: %v; want not found naming that PATH", err)
	}
}

// TestStartFailureSaysWhatToDo: a command that is not executable, or a
// script without its "#!" line, fails saying what to do about it, not
// with exec's words alone.
func TestStartFailureSaysWhatToDo(t *testing.T) {
	requireProc(t)
	dir := t.TempDir()
	plain := filepath.Join(dir, "server.py")
	noShebang := filepath.Join(dir, "script.py")
	if err := os.WriteFile(plain, []byte("print(1)\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(noShebang, []byte("print(1)\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ command, want string }{
		{plain, strconv.Quote(plain) + " is not executable (permission denied): make it so (chmod +x), or name its interpreter as the command"},
		{noShebang, strconv.Quote(noShebang) + ` is not a program this system runs (exec format error): a script needs a "#!" first line`},
	} {
		u := start(t, Config{Name: "x", Command: tc.command}, nil, false)
		if d := u.Status().Detail; !strings.Contains(d, tc.want) {
			t.Errorf("status %q\nwant %s", d, tc.want)
		}
		u.Close()
	}
}

// TestCallTimeoutNamesItsSetting: an upstream call that runs out of its
// deadline says which setting gave it: the upstream's call_timeout, else
// limits.call_timeout.
func TestCallTimeoutNamesItsSetting(t *testing.T) {
	requireProc(t)
	for _, tc := range []struct {
		timeout time.Duration
		want    string
	}{
		{300 * time.Millisecond, `timed out after 300ms (the deadline upstreams[].call_timeout of "ser" gives its calls)`},
		{0, `timed out after 20s (the deadline limits.call_timeout gives its calls)`},
	} {
		cfg := serialConfig(t, "ser")
		cfg.CallTimeout = tc.timeout
		u, err := New(cfg, &Options{DefaultCallTimeout: 20 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		u.tune = fastTuning()
		u.Start(context.Background())
		if err := u.WaitReady(context.Background()); err != nil {
			t.Fatal(err)
		}
		tool := findTool(u, "ser__slow")
		if tool == nil || tool.TimeoutSetting == "" {
			t.Fatalf("tool %+v", tool)
		}
		if tc.timeout > 0 {
			res := newGW(t, u).call(context.Background(), "ser__slow", `{"ms":3000}`)
			if !strings.Contains(res.Message, tc.want) {
				t.Errorf("%s: %q, want %s", res.Kind, res.Message, tc.want)
			}
		} else if got := gateway.TimeoutResult(tool.Name, tool.Timeout, tool.TimeoutSetting).Message; !strings.Contains(got, tc.want) {
			t.Errorf("without call_timeout: %q, want %s", got, tc.want)
		}
		u.Close()
	}
}
