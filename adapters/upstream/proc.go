package upstream

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"
)

// process is the child of a stdio upstream: it builds the exec.Cmd for the
// mcp-go transport (own process group, curated environment, working
// directory, stderr into the logger), watches it exit, and ends its whole
// process group.
type process struct {
	log     *slog.Logger
	relayed *logLimiter // the child's stderr lines go through it
	env     []string
	dir     string
	path    string        // PATH used to find the command
	grace   time.Duration // SIGTERM to SIGKILL

	mu      sync.Mutex
	cmd     *exec.Cmd
	stderrW *os.File     // the child's end of the stderr pipe, closed once started
	stdin   *childInput  // the writing end of its stdin, closed first to end it
	stdout  *stdoutWatch // its stdout lines that are not messages (stdout.go)
	// errTail is the last lines it wrote to stderr (exitReport);
	// stderrDone is closed once its stderr ended.
	errTail    stderrTail
	stderrDone chan struct{}
	pid        int // also the process group ID
	exited     chan struct{}
	status     string // how it exited, once exited is closed
	termed     bool   // the group was sent SIGTERM
	stopped    bool
}

// terminate sends the group led by pid SIGTERM, unless it was sent it
// already: a second one makes some servers (uvicorn, many Node apps) skip
// their clean shutdown.
func (p *process) terminate(pid int) error {
	p.mu.Lock()
	termed := p.termed
	p.termed = true
	p.mu.Unlock()
	if termed {
		return nil
	}
	return killGroup(pid, false)
}

// curatedEnv is the child's environment: PATH, HOME, LANG and TMPDIR from
// the gateway's environment (when set), then the configured variables,
// which win. Nothing else of the gateway's environment is passed on.
func curatedEnv(extra map[string]string) []string {
	var env []string
	seen := map[string]bool{}
	for _, k := range sortedKeys(extra) {
		seen[k] = true
	}
	for _, k := range []string{"PATH", "HOME", "LANG", "TMPDIR"} {
		if v, ok := os.LookupEnv(k); ok && !seen[k] {
			env = append(env, k+"="+v)
		}
	}
	for _, k := range sortedKeys(extra) {
		env = append(env, k+"="+extra[k])
	}
	return env
}

func envValue(env []string, key string) (string, bool) {
	for i := len(env) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(env[i], key+"="); ok {
			return v, true
		}
	}
	return "", false
}

// commandFunc is the transport.CommandFunc: it builds the command but does
// not start it (the transport does).
func (p *process) commandFunc(ctx context.Context, command string, _ []string, args []string) (*exec.Cmd, error) {
	name := command
	if !strings.ContainsRune(command, filepath.Separator) && p.path != "" {
		// Looked up in the child's PATH only: exec.Command would look a
		// name not found there up again in the gateway's PATH, which
		// silently bypasses a PATH configured to pin a runtime.
		found, err := lookPathIn(command, p.path, p.dir)
		switch {
		case err == nil:
			name = found
		case strictPathLookup:
			return nil, fmt.Errorf("command %q not found in the upstream's PATH (%s)", command, p.path)
		}
	}
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Args[0] = command
	cmd.Env = p.env
	cmd.Dir = p.dir
	setProcessGroup(cmd)
	setDeathSignal(cmd)
	// The connection's context ends on Close before the connection is
	// closed: the child's stdin is then closed, which is how the MCP spec
	// asks a client to end a stdio server (most shut down cleanly when
	// their input ends), and stop, which every close runs, gives it time
	// to exit before SIGTERM, and a grace after that before SIGKILL. A
	// signal here would take that time away from a child that is shutting
	// down cleanly. Should nothing stop it, the child itself is killed
	// once stop would have (WaitDelay, counted from the context's end);
	// the gateway's end is covered by Pdeathsig and the watchdog.
	cmd.Cancel = func() error {
		p.closeInput()
		return nil
	}
	cmd.WaitDelay = inputWait(p.grace) + 2*p.grace
	// stderr goes through a pipe of our own rather than an io.Writer, so
	// that cmd.Wait never waits for grandchildren that hold it open.
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("stderr pipe: %w", err)
	}
	cmd.Stderr = w
	done := make(chan struct{})
	p.mu.Lock()
	p.cmd, p.stderrW, p.stderrDone = cmd, w, done
	p.mu.Unlock()
	go func() {
		defer close(done)
		p.logStderr(r)
	}()
	return cmd, nil
}

// maxQueuedInput is how many bytes of messages may wait for a stdio child
// that is slow to read its input (childInput).
const maxQueuedInput = 16 << 20

// start starts the child and returns the transport that speaks to it:
// stdin through a writer that never blocks (childInput), stdout through
// the per-message limit. The child is reaped by [process.stop].
func (p *process) start(ctx context.Context, command string, args []string, maxMessage int64, upstream string) (*transport.Stdio, error) {
	if p.dir != "" {
		// Checked here: with SysProcAttr set (the process group), os/exec
		// leaves the directory to the child's chdir, whose failure reads
		// "fork/exec COMMAND: no such file or directory", blaming the
		// command.
		if fi, err := os.Stat(p.dir); err != nil {
			return nil, fmt.Errorf("dir %q: %w", p.dir, errors.Unwrap(err))
		} else if !fi.IsDir() {
			return nil, fmt.Errorf("dir %q: not a directory", p.dir)
		}
	}
	cmd, err := p.commandFunc(ctx, command, nil, args)
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("stdout pipe: %w", err)
	}
	// The stdin pipe is made here rather than by cmd.StdinPipe, which
	// hides the *os.File childInput writes to without waiting.
	stdinR, stdinW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("stdin pipe: %w", err)
	}
	cmd.Stdin = stdinR
	stdin, err := newChildInput(stdinW, maxQueuedInput)
	if err == nil {
		p.mu.Lock()
		p.stdin = stdin
		p.mu.Unlock()
		if err = cmd.Start(); err != nil {
			err = startFailure(command, err)
		}
	}
	stdinR.Close() // the child's copy, if it started, is its own
	if err != nil {
		stdinW.Close()
		p.mu.Lock()
		if p.stderrW != nil {
			p.stderrW.Close()
			p.stderrW = nil
		}
		p.mu.Unlock()
		return nil, err
	}
	out := newLineLimiter(stdout, maxMessage, upstream, func(size int64, id string) {
		p.log.Warn("upstream message refused: over upstreams[].max_result_bytes", "bytes", size, "max", maxMessage, "request_id", id)
	})
	out.watch = newStdoutWatch(p.logStray)
	p.mu.Lock()
	p.stdout = out.watch
	p.mu.Unlock()
	return transport.NewIO(out, stdin, nil), nil
}

// startFailure says why command did not start, in the words of what to do
// for the two failures a hand-written command meets most: a file that is
// not executable, and a script without its "#!" line.
func startFailure(command string, err error) error {
	switch {
	case errors.Is(err, fs.ErrPermission):
		return fmt.Errorf("failed to start command: %q is not executable (permission denied): make it so (chmod +x), or name its interpreter as the command and the file in args (command: python3, args: [server.py]): %w", command, err)
	case errors.Is(err, syscall.ENOEXEC):
		return fmt.Errorf("failed to start command: %q is not a program this system runs (exec format error): a script needs a \"#!\" first line, or its interpreter as the command: %w", command, err)
	}
	return fmt.Errorf("failed to start command: %w", err)
}

// started is called once the transport's Start returned: it closes the
// parent's copy of the stderr pipe and starts watching the child exit. It
// returns false if the child never started.
func (p *process) started() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stderrW != nil {
		p.stderrW.Close()
		p.stderrW = nil
	}
	if p.cmd == nil || p.cmd.Process == nil {
		return false
	}
	p.pid = p.cmd.Process.Pid
	dog.watch(p.pid, p.log) // its group dies with the gateway, however it ends
	p.exited = make(chan struct{})
	go func(pid int, exited chan struct{}) {
		status := waitExit(pid)
		p.mu.Lock()
		p.status = status
		p.mu.Unlock()
		close(exited)
	}(p.pid, p.exited)
	return true
}

// exitedChan is closed when the child has exited (nil if it never
// started).
func (p *process) exitedChan() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.exited
}

// exitReport is how the child exited and, unless a signal ended it, the
// line of its stderr that most likely says why (stderrTail.why): "exited
// with status 1; from its stderr: \"ModuleNotFoundError: No module named
// 'mcp'\"". Lines still in the pipe when it exited are waited for, up to
// 200 ms. A child killed by a signal is reported without: its last words
// are of before the signal.
func (p *process) exitReport() string {
	p.mu.Lock()
	done := p.stderrDone
	p.mu.Unlock()
	awaitPipeEnd(done)
	p.mu.Lock()
	defer p.mu.Unlock()
	why := p.errTail.why()
	if why == "" || strings.HasPrefix(p.status, "killed by signal") {
		return p.status
	}
	return fmt.Sprintf("%s; from its stderr: %q", p.status, why)
}

// PID of the child and leader of its process group, 0 if not started.
func (p *process) PID() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.pid
}

// closeInput closes the child's stdin (the end of its input is the MCP
// spec's first step of a stdio server's shutdown).
func (p *process) closeInput() {
	p.mu.Lock()
	in := p.stdin
	p.mu.Unlock()
	if in != nil {
		_ = in.Close()
	}
}

// inputWait is how long stop waits for a child to exit once its stdin is
// closed, before SIGTERM: at most a second, and within grace.
func inputWait(grace time.Duration) time.Duration { return min(grace, time.Second) }

// stop ends the process group as the MCP spec asks of a client: the
// child's stdin closed, up to inputWait for it to exit, SIGTERM to the
// group, up to grace for the child to exit, then SIGKILL to the group
// (whatever ignored SIGTERM, grandchildren included). The child stays
// unreaped (a zombie) until the SIGKILL has been sent, so its process
// group ID cannot be reused before; then stop reaps it. Without served,
// the child never got past its connection's setup (it failed to start,
// or to initialize in time): it is not waited for after its stdin is
// closed, so that the failed attempt is reported without that wait.
func (p *process) stop(grace time.Duration, served bool) {
	p.mu.Lock()
	if p.stderrW != nil { // started() never ran
		p.stderrW.Close()
		p.stderrW = nil
	}
	pid, exited, stopped := p.pid, p.exited, p.stopped
	p.stopped = true
	p.mu.Unlock()
	if pid == 0 || stopped {
		p.closeInput()
		return
	}
	p.closeInput()
	if served {
		select {
		case <-exited:
		case <-time.After(inputWait(grace)):
		}
	}
	_ = p.terminate(pid) // the group: grandchildren may outlive the child
	select {
	case <-exited:
	case <-time.After(grace):
	}
	_ = killGroup(pid, true)
	dog.forget(pid) // the leader is still unreaped: the ID cannot be reused yet
	select {
	case <-exited:
	case <-time.After(2 * time.Second):
		p.log.Debug("upstream child not seen exiting after SIGKILL", "pid", pid)
	}
	p.mu.Lock()
	cmd := p.cmd
	p.mu.Unlock()
	go func() { _ = cmd.Wait() }() // reap it (and close its pipes) now that the group is gone
}

// logStderr logs the child's stderr line by line until every holder of
// the pipe (the child and its descendants) has closed it.
func (p *process) logStderr(r *os.File) {
	defer r.Close()
	br := bufio.NewReaderSize(r, 4096)
	for {
		line, err := readLine(br, 8<<10)
		if len(line) > 0 {
			p.relayed.Log(slog.LevelInfo, line, "stream", "stderr")
			p.mu.Lock()
			p.errTail.add(line)
			p.mu.Unlock()
		}
		if err != nil {
			return
		}
	}
}

// readLine reads one line, keeping at most max bytes of it.
func readLine(br *bufio.Reader, max int) (string, error) {
	var b []byte
	for {
		frag, isPrefix, err := br.ReadLine()
		if len(b) < max {
			n := min(len(frag), max-len(b))
			b = append(b, frag[:n]...)
		}
		if err != nil {
			if errors.Is(err, io.EOF) && len(b) > 0 {
				return strings.TrimRight(string(b), "\r"), nil
			}
			return strings.TrimRight(string(b), "\r"), err
		}
		if !isPrefix {
			return strings.TrimRight(string(b), "\r"), nil
		}
	}
}

// lookPathIn finds an executable named file in the directories of path,
// as the child's shell would: a relative directory ("node_modules/.bin",
// ".", an empty entry) is relative to the child's working directory (cwd,
// the gateway's when empty). The result is absolute, so that exec neither
// looks it up again (in the gateway's PATH) nor takes it relative to the
// directory it changes to.
func lookPathIn(file, path, cwd string) (string, error) {
	for _, dir := range filepath.SplitList(path) {
		if dir == "" {
			dir = "."
		}
		if !filepath.IsAbs(dir) && cwd != "" {
			dir = filepath.Join(cwd, dir)
		}
		cand, err := filepath.Abs(filepath.Join(dir, file))
		if err != nil {
			continue
		}
		if fi, err := os.Stat(cand); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return cand, nil
		}
	}
	return "", exec.ErrNotFound
}

// explain adds to err, the failure of a connection attempt, what the
// child printed on its stdout instead of answering (stdoutWatch.explain).
func (p *process) explain(err error) error {
	p.mu.Lock()
	w, exited := p.stdout, p.exited
	p.mu.Unlock()
	return w.explain(err, exited)
}

// pipeLag bounds how long what a child wrote before it exited may take to
// be read from its pipes (its stderr's last lines, its stdout's).
const pipeLag = 200 * time.Millisecond

// awaitPipeEnd waits for ended, a pipe's end, at most pipeLag (not at all
// for nil).
func awaitPipeEnd(ended <-chan struct{}) {
	if ended == nil {
		return
	}
	select {
	case <-ended:
	case <-time.After(pipeLag):
	}
}
