// Package benchkit holds what the end-to-end benchmark programs under
// e2e/bench/cmd share: starting and stopping server processes, reading
// their CPU time (their CPU-time clocks) and memory (/proc), the rounds of
// a run and their ratios, and latency percentiles. Linux only (it reads
// /proc); every wait is bounded.
package benchkit

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"golang.org/x/sys/unix"
)

// clkTck is USER_HZ on Linux: the unit of /proc/PID/stat CPU times.
const clkTck = 100

// FreeAddr returns a free 127.0.0.1 port as host:port.
func FreeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// Proc is a server process under test, in its own process group.
type Proc struct {
	Name    string
	Cmd     *exec.Cmd
	Started time.Time
	done    chan struct{}
}

// Start starts args[0] with args[1:], stdout and stderr to log.
func Start(name string, args []string, log io.Writer) (*Proc, error) {
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	p := &Proc{Name: name, Cmd: cmd, done: make(chan struct{})}
	p.Started = time.Now()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	go func() { _ = cmd.Wait(); close(p.done) }()
	return p, nil
}

// PID is the process ID.
func (p *Proc) PID() int { return p.Cmd.Process.Pid }

// Exited reports whether the process has ended.
func (p *Proc) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// WaitHealthy polls url (every 10 ms, at most until timeout) until it
// answers 200 and, if check is set, check accepts the body. It returns the
// time since the process started.
func (p *Proc) WaitHealthy(url string, timeout time.Duration, check func([]byte) bool) (time.Duration, error) {
	hc := &http.Client{Timeout: 2 * time.Second}
	deadline := time.Now().Add(timeout)
	for {
		resp, err := hc.Get(url)
		if err == nil {
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK && (check == nil || check(body)) {
				return time.Since(p.Started), nil
			}
		}
		if p.Exited() {
			return 0, fmt.Errorf("%s exited before it was ready", p.Name)
		}
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("%s not ready on %s within %s", p.Name, url, timeout)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Stop ends the process: SIGTERM to it, then SIGKILL to its process group
// after grace.
func (p *Proc) Stop(grace time.Duration) {
	if p == nil || p.Cmd.Process == nil {
		return
	}
	_ = p.Cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(grace):
		_ = syscall.Kill(-p.PID(), syscall.SIGKILL)
		<-p.done
	}
	// Whatever is left in the group (children that outlived it).
	_ = syscall.Kill(-p.PID(), syscall.SIGKILL)
}

// Status reads fields of /proc/PID/status (VmHWM, VmRSS, Threads).
func Status(pid int) map[string]string {
	out := map[string]string{}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return out
	}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok {
			out[k] = strings.TrimSpace(v)
		}
	}
	return out
}

// KB parses a /proc/PID/status size ("1234 kB") into kB; 0 if absent.
func KB(s string) int64 {
	n, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(s, "kB")), 10, 64)
	return n
}

// CPUTime is a process's CPU time, every thread's (those that have exited
// included); pid 0 is this process, and a process that is gone has 0.
//
// It reads the process's CPU-time clock, the one clock_getcpuclockid(3)
// names (Linux lets any process read another's), exact to the nanosecond:
// /proc/PID/stat counts 10 ms ticks, which over a 1 s slice of a process
// busy 60% of the time is ±2%. Where that clock cannot be read, it falls
// back to the ticks.
func CPUTime(pid int) time.Duration {
	// MAKE_PROCESS_CPUCLOCK(pid, CPUCLOCK_SCHED) of the kernel's
	// include/linux/posix-timers.h; pid 0 is the caller.
	clock := int32(^uint32(pid)<<3 | 2)
	var ts unix.Timespec
	if err := unix.ClockGettime(clock, &ts); err == nil {
		return time.Duration(ts.Nano())
	}
	return time.Duration(cpuTicks(pid)) * time.Second / clkTck
}

// cpuTicks is a process's user+system CPU time in clock ticks, from
// /proc/PID/stat; pid 0 is this process.
func cpuTicks(pid int) int64 {
	path := "/proc/self/stat"
	if pid > 0 {
		path = fmt.Sprintf("/proc/%d/stat", pid)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0
	}
	u, _ := strconv.ParseInt(f[11], 10, 64)
	s, _ := strconv.ParseInt(f[12], 10, 64)
	return u + s
}

// Children lists the direct children of pid (from every thread's
// /proc/PID/task/TID/children).
func Children(pid int) []int {
	files, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	var out []int
	for _, f := range files {
		b, _ := os.ReadFile(f)
		for _, s := range strings.Fields(string(b)) {
			if n, err := strconv.Atoi(s); err == nil && !slices.Contains(out, n) {
				out = append(out, n)
			}
		}
	}
	slices.Sort(out)
	return out
}

// LoadAvg is the first three fields of /proc/loadavg.
func LoadAvg() string {
	b, _ := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

// Machine describes the CPU and the number of CPUs (and a cgroup quota).
func Machine() string {
	model := "?"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				model = strings.TrimSpace(v)
				break
			}
		}
	}
	s := fmt.Sprintf("%s, %d CPUs", model, runtime.NumCPU())
	if b, err := os.ReadFile("/sys/fs/cgroup/cpu.max"); err == nil {
		f := strings.Fields(string(b))
		if len(f) == 2 && f[0] != "max" {
			q, _ := strconv.Atoi(f[0])
			p, _ := strconv.Atoi(f[1])
			if p > 0 {
				s += fmt.Sprintf(" (cgroup quota %d)", q/p)
			}
		}
	}
	return s
}

// Percentile of sorted durations (nearest rank); 0 if empty.
func Percentile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(q*float64(len(sorted))+0.5) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

// Ms formats d in milliseconds with three decimals.
func Ms(d time.Duration) string { return fmt.Sprintf("%.3f", float64(d)/1e6) }

// Ratio is a/b, 0 when b is 0.
func Ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

// Verdict formats a target check: MET or MISSED with how much.
func Verdict(what string, ok bool, miss string) string {
	if ok {
		return "MET     " + what
	}
	return "MISSED  " + what + ": " + miss
}

// ToolgateConfig writes, in dir, the config of a toolgate run as name: a
// run archive and a memory database of its own, the log level, and extra
// (YAML of further top-level keys, each line ending in a newline). It
// returns the config's path and the run archive's directory.
func ToolgateConfig(dir, name, logLevel, extra string) (path, runsDir string, err error) {
	runsDir = filepath.Join(dir, "runs-"+name)
	conf := fmt.Sprintf("runs_dir: %q\nlog:\n  level: %s\nmemory:\n  path: %q\n%s",
		runsDir, logLevel, filepath.Join(dir, "memory-"+name+".db"), extra)
	path = filepath.Join(dir, name+".yaml")
	return path, runsDir, os.WriteFile(path, []byte(conf), 0o644)
}

// KeepOrRemove removes a program's temporary directory as it ends, unless
// *keep says to keep it (-keep, or a run whose records or calls went
// wrong, so that its run archives and toolgate's logs can be looked into):
// then it says where the directory is.
func KeepOrRemove(prog, dir string, keep *bool) {
	if *keep {
		fmt.Fprintf(os.Stderr, "%s: kept %s\n", prog, dir)
		return
	}
	os.RemoveAll(dir)
}

// CountLines counts the lines of the files matching glob (a run archive's
// tools.jsonl, say).
func CountLines(glob string) int64 {
	files, _ := filepath.Glob(glob)
	var n int64
	for _, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(fh)
		sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
		for sc.Scan() {
			n++
		}
		fh.Close()
	}
	return n
}

// MaxCallsPerSlice bounds the calls one client makes in one time slice,
// whatever the slice's length.
const MaxCallsPerSlice = 2_000_000

// Worker is one MCP client calling the echo tool in a closed loop, and the
// latencies and errors it saw.
type Worker struct {
	C   *client.Client
	Own bool // close C when done
	Lat []time.Duration
	N   int64 // calls made
	Err int64 // calls that failed
	Msg string
}

// Reset forgets what the worker measured.
func (w *Worker) Reset() { w.Lat, w.N, w.Err, w.Msg = w.Lat[:0], 0, 0, "" }

// Loop calls echo with text until end (or MaxCallsPerSlice calls), checking
// each answer, and records latencies if record.
func (w *Worker) Loop(end time.Time, text string, record bool) {
	req := mcp.CallToolRequest{}
	req.Params.Name = "echo"
	req.Params.Arguments = map[string]any{"text": text}
	for i := 0; i < MaxCallsPerSlice && time.Now().Before(end); i++ {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		t0 := time.Now()
		res, err := w.C.CallTool(ctx, req)
		d := time.Since(t0)
		cancel()
		w.N++
		if err == nil && (res.IsError || len(res.Content) == 0) {
			err = fmt.Errorf("tool error result: %+v", res.Content)
		}
		if err == nil {
			if tc, ok := res.Content[0].(mcp.TextContent); !ok || tc.Text != text {
				err = fmt.Errorf("unexpected content %+v", res.Content[0])
			}
		}
		if err != nil {
			w.Err++
			if w.Msg == "" {
				w.Msg = err.Error()
			}
			continue
		}
		if record {
			w.Lat = append(w.Lat, d)
		}
	}
}

// Counts parses a comma-separated list of whole numbers within [lo, hi]
// (a -clients flag, say).
func Counts(list string, lo, hi int) ([]int, error) {
	var out []int
	for _, s := range strings.Split(list, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < lo || n > hi {
			return nil, fmt.Errorf("bad entry %q: want a whole number from %d to %d", s, lo, hi)
		}
		out = append(out, n)
	}
	return out, nil
}
