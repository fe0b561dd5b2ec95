// Package e2e drives the built toolgate binary as a subprocess with real MCP
// clients: the official Go SDK (over stdio and streamable HTTP, on both
// protocol eras), the TypeScript SDKs (node scripts under js/), and plain
// os/exec and net/http for the checks no SDK makes.
//
// TestMain builds the binary once. The TypeScript peers are installed by
// the test command (`npm ci --prefix e2e/js`); when e2e/js/node_modules is
// missing the JS tests are skipped, unless REQUIRE_MCP_PEERS=1 (CI),
// which makes them fail.
//
// Every process a test starts is killed in t.Cleanup, everything listens on
// loopback, and every wait is bounded.
package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Protocol eras the Go SDK client speaks to the gateway.
const (
	era2025 = "2025-11-25" // initialize + sessions
	era2026 = "2026-07-28" // server/discover, stateless requests
)

var (
	// toolgateBin is the binary built by TestMain.
	toolgateBin string
	// repoRoot is the module root (the parent of e2e/).
	repoRoot string
	// jsDir is e2e/js, where the node scripts and their node_modules live.
	jsDir string
	// peersMissing, when not empty, says why the JS peers cannot run.
	peersMissing string
)

func TestMain(m *testing.M) {
	if os.Getenv(bigUpstreamEnv) != "" { // this binary as a test upstream
		serveBigUpstream(os.Stdin, os.Stdout)
		os.Exit(0)
	}
	os.Exit(testMain(m))
}

func testMain(m *testing.M) int {
	wd, err := os.Getwd()
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	repoRoot = filepath.Dir(wd)
	jsDir = filepath.Join(wd, "js")

	tmp, err := os.MkdirTemp("", "toolgate-e2e-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	defer os.RemoveAll(tmp)
	toolgateBin = filepath.Join(tmp, "toolgate")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	build := exec.CommandContext(ctx, goTool(), "build", "-o", toolgateBin, "./cmd/toolgate")
	build.Dir = repoRoot
	build.Env = append(os.Environ(), "CGO_ENABLED=0") // as `make build` builds it
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "e2e: building toolgate: %v\n%s", err, out)
		return 1
	}

	if _, err := os.Stat(filepath.Join(jsDir, "node_modules", "@modelcontextprotocol", "sdk", "package.json")); err != nil {
		peersMissing = "e2e/js/node_modules is missing: run `npm ci --prefix e2e/js` (the test command does)"
	} else if _, err := exec.LookPath("node"); err != nil {
		peersMissing = "node is not on PATH"
	}
	return m.Run()
}

// goTool is the go command that runs the tests.
func goTool() string {
	//lint:ignore SA1019 the test binary runs where it was built, so the GOROOT of its build is the toolchain running the tests
	if p := filepath.Join(runtime.GOROOT(), "bin", "go"); fileExists(p) {
		return p
	}
	return "go"
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// requirePeers skips (or, with REQUIRE_MCP_PEERS=1, fails) a test that
// needs the TypeScript peers when they are not installed.
func requirePeers(t *testing.T) {
	t.Helper()
	if peersMissing == "" {
		return
	}
	if os.Getenv("REQUIRE_MCP_PEERS") == "1" {
		t.Fatalf("REQUIRE_MCP_PEERS=1 but the JS peers cannot run: %s", peersMissing)
	}
	t.Skipf("skipping the TypeScript SDK tests: %s (set REQUIRE_MCP_PEERS=1 to make this a failure)", peersMissing)
}

// ---------------------------------------------------------------------------
// Configuration

// Env is one gateway's configuration and directories, in a t.TempDir().
type Env struct {
	Dir        string         // the test's temporary directory
	ConfigPath string         // the config file written there
	RunsDir    string         // runs_dir
	Sandbox    string         // the single sandbox root
	Config     map[string]any // what was written (JSON is YAML)
	Environ    []string       // extra environment for the process
	Prefix     []string       // a command that runs toolgate, e.g. prlimit

	// admin is where the last serve bound admin.addr (host:port), once
	// known: the constructors of envs with an admin API set admin.addr to
	// 127.0.0.1:0, so that its port is never taken by another test between
	// being picked and bound (StartHTTP retries only the MCP port). The
	// serves started after it, and the operator commands, are given it
	// (TOOLGATE_ADMIN__ADDR): a restarted gateway keeps its page's address.
	admin atomic.Pointer[string]
}

// Opt changes the configuration before it is written.
type Opt func(cfg map[string]any)

// set returns an Opt that sets a dotted config key, e.g.
// set("limits.call_timeout", "300ms").
func set(key string, value any) Opt {
	return func(cfg map[string]any) {
		parts := strings.Split(key, ".")
		m := cfg
		for _, p := range parts[:len(parts)-1] {
			next, ok := m[p].(map[string]any)
			if !ok {
				next = map[string]any{}
				m[p] = next
			}
			m = next
		}
		m[parts[len(parts)-1]] = value
	}
}

// newEnv writes a config for one gateway: runs_dir and a sandbox root in
// t.TempDir(), the diagnostics toolset on, debug logs (so that every log
// line a call can produce is seen), and then opts.
func newEnv(t *testing.T, opts ...Opt) *Env {
	t.Helper()
	dir := t.TempDir()
	e := &Env{Dir: dir, RunsDir: filepath.Join(dir, "runs"), Sandbox: filepath.Join(dir, "sandbox")}
	if err := os.MkdirAll(e.Sandbox, 0o755); err != nil {
		t.Fatal(err)
	}
	e.Config = map[string]any{}
	for _, o := range append([]Opt{
		set("runs_dir", e.RunsDir),
		set("sandbox.roots", []string{e.Sandbox}),
		set("diagnostics.enabled", true),
		set("memory.enabled", false), // not under test here; keeps its store out of $HOME
		set("log.level", "debug"),
		set("limits.shutdown_grace", "2s"),
	}, opts...) {
		o(e.Config)
	}
	b, err := json.MarshalIndent(e.Config, "", "  ") // JSON is YAML
	if err != nil {
		t.Fatal(err)
	}
	e.ConfigPath = filepath.Join(dir, "toolgate.yaml")
	if err := os.WriteFile(e.ConfigPath, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return e
}

// command returns a toolgate command with the env's config, run in the
// env's directory with a clean TOOLGATE_* environment.
func (e *Env) command(ctx context.Context, args ...string) *exec.Cmd {
	args = append(args, "--config", e.ConfigPath)
	cmd := exec.CommandContext(ctx, toolgateBin, args...)
	if len(e.Prefix) > 0 { // the prefix execs toolgate: same process
		cmd = exec.CommandContext(ctx, e.Prefix[0], append(append(e.Prefix[1:], toolgateBin), args...)...)
	}
	cmd.Dir = e.Dir
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "TOOLGATE_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	// Anything that defaults to the user's state directory stays in the test's.
	cmd.Env = append(cmd.Env, "XDG_STATE_HOME="+filepath.Join(e.Dir, "state"), "HOME="+e.Dir)
	cmd.Env = append(cmd.Env, e.Environ...)
	if a := e.admin.Load(); a != nil {
		cmd.Env = append(cmd.Env, "TOOLGATE_ADMIN__ADDR="+*a)
	}
	cmd.WaitDelay = 2 * time.Second
	return cmd
}

// toolInfo is one tool of `toolgate tools --json`.
type toolInfo struct {
	Name         string          `json:"name"`
	Toolset      string          `json:"toolset"`
	Capabilities []string        `json:"capabilities"`
	Hints        map[string]bool `json:"hints"`
	Decision     map[string]any  `json:"decision"`
	InputSchema  json.RawMessage `json:"input_schema"`
}

// toolsJSON runs `toolgate tools --json` with the env's config.
func (e *Env) toolsJSON(t *testing.T) map[string]toolInfo {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := e.command(ctx, "tools", "--json")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("toolgate tools --json: %v\n%s", err, stderr.String())
	}
	var doc struct {
		Tools []toolInfo `json:"tools"`
	}
	if err := json.Unmarshal(out, &doc); err != nil {
		t.Fatalf("toolgate tools --json: %v\n%s", err, out)
	}
	m := map[string]toolInfo{}
	for _, ti := range doc.Tools {
		m[ti.Name] = ti
	}
	return m
}

// hint reads a hint of `toolgate tools --json` by a spelling-insensitive
// name ("readonly" matches ReadOnly and read_only).
func (ti toolInfo) hint(name string) bool {
	for k, v := range ti.Hints {
		if strings.EqualFold(strings.ReplaceAll(k, "_", ""), name) {
			return v
		}
	}
	return false
}

// ---------------------------------------------------------------------------
// Processes

// Server is one running `toolgate serve`.
type Server struct {
	Env       *Env
	Transport string // "stdio" or "http"
	URL       string // http: the MCP endpoint, http://127.0.0.1:PORT/mcp
	Base      string // http: http://127.0.0.1:PORT
	Admin     string // with admin.addr: the admin API and page, http://127.0.0.1:PORT

	cmd     *exec.Cmd
	stderr  *syncBuffer
	done    chan struct{} // closed when the process has exited
	waitErr error

	// stdio only
	stdin  io.WriteCloser
	stdout io.Reader // through Wire
	used   bool      // the stdio pipe is taken by a client

	// Wire is every message received from the server, in arrival order
	// (stdio: each stdout line; http: each JSON body or SSE data line).
	Wire *wireLog
}

// syncBuffer is a bytes.Buffer safe for concurrent use.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// start starts the process and arranges for it to be killed in Cleanup.
func (e *Env) start(t *testing.T, transport string, args ...string) *Server {
	t.Helper()
	s := &Server{Env: e, Transport: transport, stderr: &syncBuffer{}, done: make(chan struct{}), Wire: &wireLog{}}
	s.cmd = e.command(context.Background(), append([]string{"serve"}, args...)...)
	s.cmd.Stderr = s.stderr
	if transport == "stdio" {
		var err error
		if s.stdin, err = s.cmd.StdinPipe(); err != nil {
			t.Fatal(err)
		}
		out, err := s.cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		s.stdout = &teeLines{r: out, log: s.Wire}
	}
	if err := s.cmd.Start(); err != nil {
		t.Fatalf("starting toolgate: %v", err)
	}
	go func() {
		s.waitErr = s.cmd.Wait()
		close(s.done)
	}()
	t.Cleanup(func() {
		select {
		case <-s.done:
		default:
			_ = s.cmd.Process.Kill()
			select {
			case <-s.done:
			case <-time.After(5 * time.Second):
				t.Errorf("toolgate (pid %d) did not die after SIGKILL", s.cmd.Process.Pid)
			}
		}
		if t.Failed() {
			t.Logf("toolgate %s stderr:\n%s", transport, tail(s.stderr.String(), 6000))
		}
	})
	return s
}

// StartStdio starts `toolgate serve` over stdio. Connect a client with
// [Server.Connect], or speak to it directly with [Server.Pipes].
func (e *Env) StartStdio(t *testing.T) *Server {
	t.Helper()
	s := e.start(t, "stdio")
	s.awaitAdmin(t)
	return s
}

// StartHTTP starts `toolgate serve --http 127.0.0.1:PORT` on a free port
// and waits until /healthz answers.
func (e *Env) StartHTTP(t *testing.T) *Server {
	t.Helper()
	for attempt := 0; ; attempt++ {
		port := freePort(t)
		addr := "127.0.0.1:" + strconv.Itoa(port)
		s := e.start(t, "http", "--http", addr)
		s.Base = "http://" + addr
		s.URL = s.Base + "/mcp"
		err := s.waitHealthy(15 * time.Second)
		if err == nil {
			s.awaitAdmin(t)
			return s
		}
		if attempt < 3 && strings.Contains(s.stderr.String(), "address already in use") {
			continue // the port was taken between freePort and the bind
		}
		t.Fatalf("toolgate serve --http %s: %v\nstderr:\n%s", addr, err, s.stderr.String())
	}
}

// adminLine is the log line of the admin API's bound address (text or
// JSON logs).
var adminLine = regexp.MustCompile(`serving the admin API.*?"?api"?[=:]"?http://([^/"\s]+)/v1/pending`)

// awaitAdmin, when the env's config sets admin.addr, waits for the serve to
// say where it bound it, and notes that in s.Admin and in the env.
func (s *Server) awaitAdmin(t *testing.T) {
	t.Helper()
	admin, _ := s.Env.Config["admin"].(map[string]any)
	if addr, _ := admin["addr"].(string); addr == "" {
		return
	}
	var bound string
	if !waitFor(15*time.Second, func() bool {
		if m := adminLine.FindStringSubmatch(s.stderr.String()); m != nil {
			bound = m[1]
			return true
		}
		return s.Exited()
	}) || bound == "" {
		t.Fatalf("toolgate serve did not say where it serves the admin API\nstderr:\n%s", tail(s.stderr.String(), 4000))
	}
	s.Admin = "http://" + bound
	s.Env.admin.Store(&bound)
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

func (s *Server) waitHealthy(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	client := &http.Client{Timeout: time.Second}
	for time.Now().Before(deadline) {
		select {
		case <-s.done:
			return fmt.Errorf("exited before serving: %v", s.waitErr)
		default:
		}
		resp, err := client.Get(s.Base + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		time.Sleep(25 * time.Millisecond)
	}
	return fmt.Errorf("/healthz did not answer 200 within %s", timeout)
}

// Pipes returns the stdio server's stdin and stdout (stdout also feeds
// Wire). Only one user may take them.
func (s *Server) Pipes(t *testing.T) (io.WriteCloser, io.Reader) {
	t.Helper()
	if s.Transport != "stdio" || s.used {
		t.Fatal("Pipes: not a stdio server, or its pipes are taken")
	}
	s.used = true
	return s.stdin, s.stdout
}

// Stderr is what the process wrote to stderr so far.
func (s *Server) Stderr() string { return s.stderr.String() }

// Exited reports whether the process has exited.
func (s *Server) Exited() bool {
	select {
	case <-s.done:
		return true
	default:
		return false
	}
}

// Wait waits up to timeout for the process to exit and returns its exit
// code (-1 if it did not exit).
func (s *Server) Wait(timeout time.Duration) int {
	select {
	case <-s.done:
	case <-time.After(timeout):
		return -1
	}
	return s.cmd.ProcessState.ExitCode()
}

// Stop sends SIGTERM and asserts that the process exits with code 0 within
// the shutdown grace period plus a margin, and that stderr shows no panic
// and no data race. It returns how long the exit took.
func (s *Server) Stop(t *testing.T) time.Duration {
	t.Helper()
	start := time.Now()
	if !s.Exited() {
		if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
			t.Fatalf("SIGTERM: %v", err)
		}
	}
	grace := 2 * time.Second
	if g, ok := s.Env.Config["limits"].(map[string]any)["shutdown_grace"].(string); ok {
		if d, err := time.ParseDuration(g); err == nil {
			grace = d
		}
	}
	code := s.Wait(grace + 5*time.Second)
	took := time.Since(start)
	if code == -1 {
		t.Fatalf("toolgate did not exit within %s of SIGTERM", grace+5*time.Second)
	}
	if code != 0 {
		t.Errorf("toolgate exited with code %d after SIGTERM (want 0)", code)
	}
	s.checkStderr(t)
	if s.Transport == "stdio" {
		s.Wire.checkAllJSONRPC(t)
	}
	return took
}

// checkStderr asserts that stderr shows no panic or race report.
func (s *Server) checkStderr(t *testing.T) {
	t.Helper()
	errOut := s.stderr.String()
	for _, bad := range []string{"panic:", "goroutine ", "DATA RACE", "fatal error:"} {
		if strings.Contains(errOut, bad) {
			t.Errorf("toolgate stderr contains %q:\n%s", bad, tail(errOut, 6000))
			return
		}
	}
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}

// ---------------------------------------------------------------------------
// Go SDK clients

// ConnectOptions configure [Server.Connect].
type ConnectOptions struct {
	// Client options (progress handler...). Optional.
	Client *mcp.ClientOptions
	// HTTPHeader is added to every HTTP request (e.g. Authorization).
	HTTPHeader http.Header
	// Roots are the client's roots, given before it connects (so that it
	// sends no roots/list_changed). The SDK's client declares the roots
	// capability whether it has any or not.
	//lint:ignore SA1019 roots are deprecated in 2026-07-28 (SEP-2577) but still in it, and 2025-11-25 clients have them
	Roots []*mcp.Root
	// Reconnect keeps the SDK's default reconnection of a broken stream
	// (5 attempts), as a real client has; without it a broken stream ends
	// the session at once, so that a test sees every failure.
	Reconnect bool
}

// Connect connects a Go SDK client speaking the given protocol era
// (era2025 or era2026) and asserts that the era was negotiated. On stdio
// only one client can connect. The session is closed in Cleanup.
func (s *Server) Connect(t *testing.T, era string, opts *ConnectOptions) *mcp.ClientSession {
	t.Helper()
	if opts == nil {
		opts = &ConnectOptions{}
	}
	var transport mcp.Transport
	switch s.Transport {
	case "stdio":
		in, out := s.Pipes(t)
		transport = &mcp.IOTransport{Reader: io.NopCloser(out), Writer: in}
	case "http":
		st := &mcp.StreamableClientTransport{
			Endpoint:   s.URL,
			HTTPClient: &http.Client{Transport: &recordingRoundTripper{log: s.Wire, header: opts.HTTPHeader}},
			MaxRetries: -1,
		}
		if opts.Reconnect {
			st.MaxRetries = 0
		}
		transport = st
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "toolgate-e2e", Version: "1.0.0"}, opts.Client)
	if len(opts.Roots) > 0 {
		//lint:ignore SA1019 as Roots above
		client.AddRoots(opts.Roots...)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	cs, err := client.Connect(ctx, transport, &mcp.ClientSessionOptions{ProtocolVersion: era})
	if err != nil {
		t.Fatalf("connecting a Go SDK client (%s, %s): %v", s.Transport, era, err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	if got := cs.InitializeResult().ProtocolVersion; got != era {
		t.Fatalf("negotiated protocol version %q, want %q", got, era)
	}
	return cs
}

// ---------------------------------------------------------------------------
// Wire log: what the server sent, as raw JSON.

type wireLog struct {
	mu   sync.Mutex
	msgs []json.RawMessage
	bad  []string // lines that were not JSON
}

func (w *wireLog) add(line []byte) {
	line = bytes.TrimSpace(line)
	if len(line) == 0 {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if !json.Valid(line) {
		w.bad = append(w.bad, string(line))
		return
	}
	w.msgs = append(w.msgs, append(json.RawMessage(nil), line...))
}

// Messages returns the messages received so far, in order (a JSON-RPC
// batch counts as one).
func (w *wireLog) Messages() []json.RawMessage {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.msgs)
}

// checkAllJSONRPC asserts that every line received was a JSON-RPC 2.0
// message.
func (w *wireLog) checkAllJSONRPC(t *testing.T) {
	t.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, b := range w.bad {
		t.Errorf("the server sent a line that is not JSON: %q", tail(b, 300))
	}
	for _, m := range w.msgs {
		if !isJSONRPC(m) {
			t.Errorf("the server sent a message that is not JSON-RPC 2.0: %s", tail(string(m), 300))
		}
	}
}

func isJSONRPC(m json.RawMessage) bool {
	var one struct {
		JSONRPC string `json:"jsonrpc"`
	}
	if json.Unmarshal(m, &one) == nil {
		return one.JSONRPC == "2.0"
	}
	var batch []json.RawMessage
	if json.Unmarshal(m, &batch) != nil || len(batch) == 0 {
		return false
	}
	for _, b := range batch {
		if !isJSONRPC(b) {
			return false
		}
	}
	return true
}

// wireMsg is the shape of any JSON-RPC message.
type wireMsg struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// teeLines passes stdout through and records each complete line.
type teeLines struct {
	r   io.Reader
	log *wireLog
	buf []byte
}

func (t *teeLines) Read(p []byte) (int, error) {
	n, err := t.r.Read(p)
	t.buf = append(t.buf, p[:n]...)
	for {
		i := bytes.IndexByte(t.buf, '\n')
		if i < 0 {
			break
		}
		t.log.add(t.buf[:i])
		t.buf = t.buf[i+1:]
	}
	if err != nil && len(t.buf) > 0 {
		t.log.add(t.buf)
		t.buf = nil
	}
	return n, err
}

// recordingRoundTripper adds headers to requests and records the JSON-RPC
// messages in responses: a JSON body whole, an SSE stream per data line.
type recordingRoundTripper struct {
	log    *wireLog
	header http.Header
}

func (rt *recordingRoundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	if len(rt.header) > 0 {
		req = req.Clone(req.Context())
		for k, vs := range rt.header {
			req.Header[k] = vs
		}
	}
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	sse := strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream")
	resp.Body = &recordingBody{rc: resp.Body, sse: sse, log: rt.log}
	return resp, nil
}

type recordingBody struct {
	rc   io.ReadCloser
	sse  bool
	log  *wireLog
	buf  []byte
	done bool
}

func (b *recordingBody) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	b.buf = append(b.buf, p[:n]...)
	if b.sse {
		for {
			i := bytes.IndexByte(b.buf, '\n')
			if i < 0 {
				break
			}
			line := bytes.TrimRight(b.buf[:i], "\r")
			if data, ok := bytes.CutPrefix(line, []byte("data:")); ok {
				b.log.add(data)
			}
			b.buf = b.buf[i+1:]
		}
	} else if err != nil && !b.done {
		b.done = true
		b.log.add(b.buf)
	}
	return n, err
}

func (b *recordingBody) Close() error { return b.rc.Close() }

// ---------------------------------------------------------------------------
// Run archive

// Archive is a run directory read back, every JSONL line parsed.
type Archive struct {
	Dir    string
	Events []map[string]any
	Tools  []ToolRecord
	Errors []map[string]any
}

// ToolRecord is one line of logs/tools.jsonl.
type ToolRecord struct {
	CallID    string `json:"call_id"`
	Tool      string `json:"tool"`
	Toolset   string `json:"toolset"`
	Session   string `json:"session"`
	Identity  string `json:"identity"`
	Principal *struct {
		ClientID string              `json:"client_id"`
		Scopes   []string            `json:"scopes"`
		Claims   map[string][]string `json:"claims"`
	} `json:"principal"`
	Replica string `json:"replica"`
	Task    *struct {
		ID string `json:"id"`
	} `json:"task"`
	Round     int             `json:"round"`    // a repeat answering round Round-1 (2026-07-28)
	RoundOf   string          `json:"round_of"` // the call that began the exchange
	Arguments json.RawMessage `json:"arguments"`
	Status    string          `json:"status"`
	IsError   bool            `json:"is_error"`
	Decision  *struct {
		Allow bool   `json:"allow"`
		Layer string `json:"layer"`
		Rule  string `json:"rule"`
	} `json:"decision"`
	Artifacts []struct {
		URI  string `json:"uri"`
		Size int64  `json:"size"`
	} `json:"artifacts"`
}

// runDir returns the single run directory under the env's runs_dir.
func (e *Env) runDir(t *testing.T) string {
	t.Helper()
	ents, err := os.ReadDir(e.RunsDir)
	if err != nil {
		t.Fatalf("reading runs_dir: %v", err)
	}
	var dirs []string
	for _, en := range ents {
		if en.IsDir() {
			dirs = append(dirs, en.Name())
		}
	}
	if len(dirs) != 1 {
		t.Fatalf("runs_dir %s holds %d run directories %v, want 1", e.RunsDir, len(dirs), dirs)
	}
	return filepath.Join(e.RunsDir, dirs[0])
}

// Archive reads the run archive; every line of every JSONL file must be a
// whole JSON object (strict: call it after the server has stopped).
func (e *Env) Archive(t *testing.T) *Archive {
	t.Helper()
	a := &Archive{Dir: e.runDir(t)}
	a.Events = readJSONL[map[string]any](t, filepath.Join(a.Dir, "events.jsonl"), true)
	a.Tools = readJSONL[ToolRecord](t, filepath.Join(a.Dir, "logs", "tools.jsonl"), true)
	a.Errors = readJSONL[map[string]any](t, filepath.Join(a.Dir, "logs", "errors.jsonl"), true)
	return a
}

// liveTools reads tools.jsonl of a running server, skipping a line that
// may be half written.
func (e *Env) liveTools(t *testing.T) []ToolRecord {
	t.Helper()
	return readJSONL[ToolRecord](t, filepath.Join(e.runDir(t), "logs", "tools.jsonl"), false)
}

// liveEvents reads events.jsonl of a running server.
// awaitRecord waits up to timeout for a tools.jsonl line of tool among
// the records live returns, and returns it (nil if none came).
func awaitRecord(timeout time.Duration, live func() []ToolRecord, tool string) *ToolRecord {
	var rec *ToolRecord
	waitFor(timeout, func() bool {
		for _, r := range live() {
			if r.Tool == tool {
				rec = &r
				return true
			}
		}
		return false
	})
	return rec
}

func (e *Env) liveEvents(t *testing.T) []map[string]any {
	t.Helper()
	return readJSONL[map[string]any](t, filepath.Join(e.runDir(t), "events.jsonl"), false)
}

func readJSONL[T any](t *testing.T, path string, strict bool) []T {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading %s: %v", path, err)
	}
	if strict && len(data) > 0 && data[len(data)-1] != '\n' {
		t.Errorf("%s does not end with a newline (a line was cut)", path)
	}
	var out []T
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 1<<20), 64<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Bytes()
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(line, &obj); err != nil {
			if strict {
				t.Errorf("%s:%d is not a JSON object: %v: %q", path, n, err, tail(string(line), 200))
			}
			continue
		}
		var v T
		if err := json.Unmarshal(line, &v); err != nil {
			t.Errorf("%s:%d: %v", path, n, err)
			continue
		}
		out = append(out, v)
	}
	return out
}

// toolsByCallID indexes tools.jsonl by call id, failing on duplicates.
func (a *Archive) toolsByCallID(t *testing.T) map[string]ToolRecord {
	t.Helper()
	m := map[string]ToolRecord{}
	for _, r := range a.Tools {
		if _, dup := m[r.CallID]; dup {
			t.Errorf("tools.jsonl has two lines for call %s", r.CallID)
		}
		m[r.CallID] = r
	}
	return m
}

// eventTypes returns the count of each event type.
func (a *Archive) eventTypes() map[string]int {
	m := map[string]int{}
	for _, ev := range a.Events {
		typ, _ := ev["type"].(string)
		m[typ]++
	}
	return m
}

// waitFor polls cond every 20 ms until it holds or timeout passes.
func waitFor(timeout time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// ---------------------------------------------------------------------------
// The client matrix

// clientCase is one transport × protocol era.
type clientCase struct {
	Transport string // stdio or http
	Era       string
}

func (c clientCase) String() string { return c.Transport + "/" + c.Era }

var matrix = []clientCase{{"stdio", era2025}, {"stdio", era2026}, {"http", era2025}, {"http", era2026}}

// forEachClient runs f in a parallel subtest per transport × era.
func forEachClient(t *testing.T, f func(t *testing.T, c clientCase)) {
	t.Helper()
	for _, c := range matrix {
		t.Run(c.String(), func(t *testing.T) {
			t.Parallel()
			f(t, c)
		})
	}
}

// start starts a server for the case's transport.
func (e *Env) startFor(t *testing.T, c clientCase) *Server {
	t.Helper()
	if c.Transport == "stdio" {
		return e.StartStdio(t)
	}
	return e.StartHTTP(t)
}

// callCtx is the context of one call: bounded.
func callCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// call calls a tool and fails the test on a protocol error.
func call(t *testing.T, cs *mcp.ClientSession, name string, args any) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(callCtx(t), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("tools/call %s: %v", name, err)
	}
	return res
}

// textOf joins the text content blocks of a result.
func textOf(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// callIDOf is the toolgate/call_id in a result's _meta.
func callIDOf(res *mcp.CallToolResult) string {
	if res == nil || res.Meta == nil {
		return ""
	}
	id, _ := res.Meta["toolgate/call_id"].(string)
	return id
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
