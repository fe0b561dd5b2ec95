package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Helpers for the upstream tests: the real server-everything peer, a raw
// JSON-RPC client over stdio (no SDK re-encoding), a toolgate configured
// as an upstream of another toolgate, /healthz details, and /proc scans.

// everythingPeer returns node's absolute path and server-everything's
// script, or skips the test (fails it with REQUIRE_MCP_PEERS=1).
func everythingPeer(t *testing.T) (node, script string) {
	t.Helper()
	requirePeers(t)
	script = filepath.Join(jsDir, "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js")
	if !fileExists(script) {
		if os.Getenv("REQUIRE_MCP_PEERS") == "1" {
			t.Fatalf("REQUIRE_MCP_PEERS=1 but %s is missing (run `npm ci --prefix e2e/js`)", script)
		}
		t.Skipf("skipping: %s is missing (run `npm ci --prefix e2e/js`)", script)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("node: %v", err)
	}
	if node, err = filepath.Abs(node); err != nil {
		t.Fatal(err)
	}
	return node, script
}

// everythingStdio is the `upstreams:` entry of server-everything over
// stdio, its tools allowed (destructive ones included) and granted net.
func everythingStdio(t *testing.T, name string) map[string]any {
	node, script := everythingPeer(t)
	return map[string]any{
		"name": name, "command": node, "args": []string{script, "stdio"},
		"grant": []string{"net"}, "startup_timeout": "20s",
	}
}

// startEverythingHTTP runs server-everything's streamable HTTP transport
// on a free loopback port and returns its MCP URL (see startHTTPPeer).
func startEverythingHTTP(t *testing.T) string {
	t.Helper()
	node, script := everythingPeer(t)
	return startHTTPPeer(t, "server-everything", func(port int) *exec.Cmd {
		cmd := exec.Command(node, script, "streamableHttp")
		cmd.Env = append(os.Environ(), "PORT="+strconv.Itoa(port))
		return cmd
	}) + "/mcp"
}

// startHTTPPeer runs the HTTP server cmdFor(port) makes on a free loopback
// port, in its own process group (killed in Cleanup), and returns
// http://127.0.0.1:PORT once it accepts connections. A port another
// process took in the meantime (the server exits saying so) is retried.
func startHTTPPeer(t *testing.T, name string, cmdFor func(port int) *exec.Cmd) string {
	t.Helper()
	for attempt := 0; ; attempt++ {
		port := freePort(t)
		cmd := cmdFor(port)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		stderr := &syncBuffer{}
		cmd.Stderr, cmd.Stdout = stderr, stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan struct{})
		go func() { _ = cmd.Wait(); close(exited) }()
		t.Cleanup(func() {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			select {
			case <-exited:
			case <-time.After(5 * time.Second):
				t.Errorf("%s (pid %d) did not die", name, cmd.Process.Pid)
			}
		})
		addr := "127.0.0.1:" + strconv.Itoa(port)
		up := waitFor(20*time.Second, func() bool {
			select {
			case <-exited:
				return true
			default:
			}
			c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
			if err == nil {
				c.Close()
			}
			return err == nil
		})
		select {
		case <-exited:
			if out := stderr.String(); attempt < 3 && (strings.Contains(out, "EADDRINUSE") || strings.Contains(out, "address already in use")) {
				continue
			}
			t.Fatalf("%s exited:\n%s", name, stderr.String())
		default:
		}
		if !up {
			t.Fatalf("%s did not listen on %s within 20s:\n%s", name, addr, stderr.String())
		}
		return "http://" + addr
	}
}

// innerEnv writes the config of a toolgate meant to run as an upstream of
// another (its own runs_dir and sandbox, diagnostics on) and returns the
// env and the `upstreams:` entry that runs it over stdio.
func innerEnv(t *testing.T, name string, opts ...Opt) (*Env, map[string]any) {
	t.Helper()
	e := newEnv(t, append([]Opt{set("log.level", "info")}, opts...)...)
	return e, map[string]any{
		"name": name, "command": toolgateBin, "args": []string{"serve", "--config", e.ConfigPath},
		"startup_timeout": "20s",
	}
}

// upstreams is an Opt setting the `upstreams:` list.
func upstreams(entries ...map[string]any) Opt {
	return set("upstreams", entries)
}

// runPID reads the pid from the run.json of the env's single run.
func (e *Env) runPID(t *testing.T) int {
	t.Helper()
	var m struct {
		PID int `json:"pid"`
	}
	b, err := os.ReadFile(filepath.Join(e.runDir(t), "run.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &m); err != nil || m.PID <= 0 {
		t.Fatalf("run.json: %s (%v)", b, err)
	}
	return m.PID
}

// runDirs lists the run directories under runs_dir (none if it does not
// exist yet).
func (e *Env) runDirs() []string {
	ents, _ := os.ReadDir(e.RunsDir)
	var out []string
	for _, en := range ents {
		if en.IsDir() {
			out = append(out, filepath.Join(e.RunsDir, en.Name()))
		}
	}
	return out
}

// toolsetHealth is one toolset of /healthz details.
type toolsetHealth struct {
	Name   string `json:"name"`
	Tools  int    `json:"tools"`
	Status struct {
		State  string `json:"state"`
		Detail string `json:"detail"`
	} `json:"status"`
}

// healthToolsets reads /healthz and returns its details' toolsets by name.
func (s *Server) healthToolsets(t *testing.T) map[string]toolsetHealth {
	t.Helper()
	client := &http.Client{Timeout: 3 * time.Second}
	resp, err := client.Get(s.Base + "/healthz")
	if err != nil {
		t.Fatalf("GET /healthz: %v", err)
	}
	defer resp.Body.Close()
	var body struct {
		Status  string `json:"status"`
		Details struct {
			Toolsets []toolsetHealth `json:"toolsets"`
		} `json:"details"`
	}
	b, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(b, &body); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("/healthz: %d %s (%v)", resp.StatusCode, b, err)
	}
	m := map[string]toolsetHealth{}
	for _, ts := range body.Details.Toolsets {
		m[ts.Name] = ts
	}
	return m
}

// ---------------------------------------------------------------------------
// A raw JSON-RPC client over stdio: what a server sends, byte for byte.

type rawStdio struct {
	t      *testing.T
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  chan []byte
	stderr *syncBuffer
	nextID int
}

// startRawStdio starts a stdio MCP server in its own process group (killed
// in Cleanup) and initializes it with empty client capabilities.
func startRawStdio(t *testing.T, name string, args ...string) *rawStdio {
	t.Helper()
	c := &rawStdio{t: t, lines: make(chan []byte, 256), stderr: &syncBuffer{}}
	c.cmd = exec.Command(name, args...)
	c.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	c.cmd.Stderr = c.stderr
	var err error
	if c.stdin, err = c.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	out, err := c.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 0, 1<<20), 64<<20)
		for sc.Scan() {
			c.lines <- append([]byte(nil), sc.Bytes()...)
		}
		close(c.lines)
	}()
	go func() { _ = c.cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = syscall.Kill(-c.cmd.Process.Pid, syscall.SIGKILL)
		select {
		case <-exited:
		case <-time.After(5 * time.Second):
			t.Errorf("%s (pid %d) did not die", name, c.cmd.Process.Pid)
		}
	})
	c.request("initialize", map[string]any{
		"protocolVersion": era2025, "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "raw", "version": "0"},
	})
	c.send(map[string]any{"jsonrpc": "2.0", "method": "notifications/initialized"})
	return c
}

func (c *rawStdio) send(msg any) {
	b, _ := json.Marshal(msg)
	if _, err := c.stdin.Write(append(b, '\n')); err != nil {
		c.t.Fatalf("writing to the raw server: %v", err)
	}
}

// request sends a request and returns its raw result, skipping
// notifications and server requests; it fails on an error or after 20s.
func (c *rawStdio) request(method string, params any) json.RawMessage {
	c.t.Helper()
	c.nextID++
	id := c.nextID
	c.send(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	timeout := time.After(20 * time.Second)
	for {
		select {
		case line, ok := <-c.lines:
			if !ok {
				c.t.Fatalf("the raw server closed stdout waiting for %s:\n%s", method, c.stderr.String())
			}
			var m struct {
				ID     *int            `json:"id"`
				Method string          `json:"method"`
				Result json.RawMessage `json:"result"`
				Error  json.RawMessage `json:"error"`
			}
			if json.Unmarshal(line, &m) != nil || m.ID == nil || *m.ID != id || m.Method != "" {
				continue
			}
			if len(m.Error) > 0 {
				c.t.Fatalf("%s: JSON-RPC error %s", method, m.Error)
			}
			return m.Result
		case <-timeout:
			c.t.Fatalf("no answer to %s within 20s", method)
		}
	}
}

// tools lists every page of tools/list, each tool as raw JSON.
func (c *rawStdio) tools() []json.RawMessage {
	c.t.Helper()
	var all []json.RawMessage
	cursor := ""
	for range 50 {
		params := map[string]any{}
		if cursor != "" {
			params["cursor"] = cursor
		}
		var page struct {
			Tools      []json.RawMessage `json:"tools"`
			NextCursor string            `json:"nextCursor"`
		}
		if err := json.Unmarshal(c.request("tools/list", params), &page); err != nil {
			c.t.Fatal(err)
		}
		all = append(all, page.Tools...)
		if cursor = page.NextCursor; cursor == "" {
			return all
		}
	}
	c.t.Fatal("tools/list pages do not end")
	return nil
}

// ---------------------------------------------------------------------------
// Processes in /proc

// killAtCleanup kills, when t ends, every process procsWith(marker)
// finds: whatever the test left behind.
func killAtCleanup(t *testing.T, marker string) {
	t.Cleanup(func() {
		for _, p := range procsWith(marker) {
			var pid int
			fmt.Sscanf(p, "%d:", &pid)
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
}

// procsWith returns "pid: cmdline" for each process (other than this test
// process) whose command line or environment contains marker.
func procsWith(marker string) []string {
	ents, _ := os.ReadDir("/proc")
	var out []string
	self := os.Getpid()
	for _, en := range ents {
		pid, err := strconv.Atoi(en.Name())
		if err != nil || pid == self {
			continue
		}
		cmdline, _ := os.ReadFile(filepath.Join("/proc", en.Name(), "cmdline"))
		environ, _ := os.ReadFile(filepath.Join("/proc", en.Name(), "environ"))
		if bytes.Contains(cmdline, []byte(marker)) || bytes.Contains(environ, []byte(marker)) {
			if st, _ := os.ReadFile(filepath.Join("/proc", en.Name(), "stat")); isZombie(st) {
				continue // exited, waiting to be reaped by its parent: not running
			}
			out = append(out, fmt.Sprintf("%d: %s", pid, strings.ReplaceAll(strings.TrimRight(string(cmdline), "\x00"), "\x00", " ")))
		}
	}
	return out
}

// isZombie reads the state field of /proc/PID/stat.
func isZombie(stat []byte) bool {
	i := bytes.LastIndexByte(stat, ')')
	return i >= 0 && i+2 < len(stat) && stat[i+2] == 'Z'
}

// lockedSlice is a slice appended to from SDK handlers.
type lockedSlice[T any] struct {
	mu sync.Mutex
	s  []T
}

func (l *lockedSlice[T]) add(v T) {
	l.mu.Lock()
	l.s = append(l.s, v)
	l.mu.Unlock()
}

func (l *lockedSlice[T]) get() []T {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]T(nil), l.s...)
}
