package e2e

// Shared helpers of the load, soak, fault and security tests
// (load_test.go, fault_test.go, security_test.go): process statistics read
// from /proc, Go SDK clients on their own HTTP transports (so that idle
// keep-alive connections can be closed and the gateway's descriptors
// counted), toolgate as the stdio upstream of toolgate, call ledgers
// matched against the run archive, and the results file.

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ---------------------------------------------------------------------------
// /proc

// procStats is what /proc says about one process.
type procStats struct {
	RSSKB   int64 `json:"rss_kb"`   // VmRSS
	HWMKB   int64 `json:"hwm_kb"`   // VmHWM: peak RSS
	Threads int   `json:"threads"`  // Threads
	FDs     int   `json:"open_fds"` // entries of /proc/<pid>/fd
}

func (p procStats) String() string {
	return fmt.Sprintf("rss=%.1fMiB peak=%.1fMiB threads=%d fds=%d", float64(p.RSSKB)/1024, float64(p.HWMKB)/1024, p.Threads, p.FDs)
}

// readProcStats reads /proc/<pid>/status and counts /proc/<pid>/fd.
func readProcStats(pid int) (procStats, error) {
	var st procStats
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return st, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		fields := strings.Fields(v)
		if len(fields) == 0 {
			continue
		}
		n, _ := strconv.ParseInt(fields[0], 10, 64)
		switch k {
		case "VmRSS":
			st.RSSKB = n
		case "VmHWM":
			st.HWMKB = n
		case "Threads":
			st.Threads = int(n)
		}
	}
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return st, err
	}
	st.FDs = len(ents)
	return st, nil
}

func mustProcStats(t *testing.T, pid int) procStats {
	t.Helper()
	st, err := readProcStats(pid)
	if err != nil {
		t.Fatalf("reading /proc/%d: %v", pid, err)
	}
	return st
}

// Pid is the toolgate process's id.
func (s *Server) Pid() int { return s.cmd.Process.Pid }

// waitFDsSettle waits (bounded) until the process's open descriptors are
// at most want, and returns the last statistics read.
func waitFDsSettle(t *testing.T, pid, want int, timeout time.Duration) procStats {
	t.Helper()
	var st procStats
	waitFor(timeout, func() bool {
		var err error
		st, err = readProcStats(pid)
		return err == nil && st.FDs <= want
	})
	return st
}

// processesWithArg lists the live processes whose command line contains
// arg (read from /proc; nothing is signalled).
func processesWithArg(arg string) []string {
	ents, _ := os.ReadDir("/proc")
	var out []string
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || len(b) == 0 {
			continue // gone, or a zombie (whose parent, still alive, is then the leak)
		}
		if strings.Contains(string(b), arg) {
			out = append(out, fmt.Sprintf("pid %d: %s", pid, strings.ReplaceAll(strings.TrimRight(string(b), "\x00"), "\x00", " ")))
		}
	}
	return out
}

// ---------------------------------------------------------------------------
// Clients

// loadClients are Go SDK client sessions over one HTTP transport of their
// own, so that closing them also closes every connection they opened.
type loadClients struct {
	tr       *http.Transport
	sessions []*mcp.ClientSession
}

// connectLoad connects n sessions to an HTTP server, alternating the two
// protocol eras, over a transport with no connection limit.
func connectLoad(t *testing.T, s *Server, n int, header http.Header) *loadClients {
	t.Helper()
	lc := &loadClients{tr: &http.Transport{
		MaxIdleConns:        4096,
		MaxIdleConnsPerHost: 4096,
		IdleConnTimeout:     30 * time.Second,
	}}
	for i := range n {
		era := era2025
		if i%2 == 1 {
			era = era2026
		}
		var rt http.RoundTripper = lc.tr
		if len(header) > 0 {
			rt = headerRoundTripper{next: lc.tr, header: header}
		}
		transport := &mcp.StreamableClientTransport{Endpoint: s.URL, HTTPClient: &http.Client{Transport: rt}, MaxRetries: -1}
		client := mcp.NewClient(&mcp.Implementation{Name: fmt.Sprintf("toolgate-load-%d", i), Version: "1.0.0"}, nil)
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		cs, err := client.Connect(ctx, transport, &mcp.ClientSessionOptions{ProtocolVersion: era})
		cancel()
		if err != nil {
			t.Fatalf("connecting load session %d (%s): %v", i, era, err)
		}
		lc.sessions = append(lc.sessions, cs)
	}
	t.Cleanup(lc.Close)
	return lc
}

// Close ends every session and closes the idle connections.
func (lc *loadClients) Close() {
	for _, cs := range lc.sessions {
		_ = cs.Close()
	}
	lc.sessions = nil
	lc.tr.CloseIdleConnections()
}

type headerRoundTripper struct {
	next   http.RoundTripper
	header http.Header
}

func (h headerRoundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	for k, v := range h.header {
		req.Header[k] = v
	}
	return h.next.RoundTrip(req)
}

// ---------------------------------------------------------------------------
// Call ledger

// ledger records what every call returned, by call id.
type ledger struct {
	mu        sync.Mutex
	ids       map[string]string // call id -> tool
	isError   map[string]string // call id -> text of an error result
	kinds     map[string]string // call id -> _meta toolgate/kind of an error result
	protoErrs []string          // errors from CallTool (protocol or transport)
	noID      int               // results without _meta toolgate/call_id
	dupIDs    []string
}

func newLedger() *ledger {
	return &ledger{ids: map[string]string{}, isError: map[string]string{}, kinds: map[string]string{}}
}

// add records one call's outcome and returns its call id ("" if none).
func (l *ledger) add(tool string, res *mcp.CallToolResult, err error) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err != nil {
		l.protoErrs = append(l.protoErrs, fmt.Sprintf("%s: %v", tool, err))
		return ""
	}
	id := callIDOf(res)
	if id == "" {
		l.noID++
		return ""
	}
	if _, dup := l.ids[id]; dup {
		l.dupIDs = append(l.dupIDs, id)
	}
	l.ids[id] = tool
	if res.IsError {
		l.isError[id] = textOf(res)
		l.kinds[id] = kindOf(res)
	}
	return id
}

// kindOf is the toolgate/kind in a result's _meta ("" for a success).
func kindOf(res *mcp.CallToolResult) string {
	if res == nil || res.Meta == nil {
		return ""
	}
	k, _ := res.Meta["toolgate/kind"].(string)
	return k
}

func (l *ledger) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.ids)
}

// checkClean asserts that no call failed at the protocol level, that each
// result carried a distinct call id, and (unless errorsOK) that none was
// an error result.
func (l *ledger) checkClean(t *testing.T, errorsOK bool) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.protoErrs) > 0 {
		t.Errorf("%d protocol errors, e.g. %s", len(l.protoErrs), strings.Join(l.protoErrs[:min(5, len(l.protoErrs))], "; "))
	}
	if l.noID > 0 {
		t.Errorf("%d results without _meta toolgate/call_id", l.noID)
	}
	if len(l.dupIDs) > 0 {
		t.Errorf("%d call ids were returned twice, e.g. %s", len(l.dupIDs), l.dupIDs[0])
	}
	if !errorsOK && len(l.isError) > 0 {
		var some []string
		for id, txt := range l.isError {
			some = append(some, id+": "+tail(txt, 200))
			if len(some) == 3 {
				break
			}
		}
		t.Errorf("%d calls returned an error result, e.g. %s", len(l.isError), strings.Join(some, "; "))
	}
}

// recordIndex is the run archive indexed by call id.
type recordIndex struct {
	tools    map[string]int // tools.jsonl lines per call id
	started  map[string]int // tool.started events per call id
	finished map[string]int // tool.completed + tool.failed events per call id
	status   map[string]string
}

func indexArchive(a *Archive) recordIndex {
	ix := recordIndex{tools: map[string]int{}, started: map[string]int{}, finished: map[string]int{}, status: map[string]string{}}
	for _, r := range a.Tools {
		ix.tools[r.CallID]++
		ix.status[r.CallID] = r.Status
	}
	for _, ev := range a.Events {
		id, _ := ev["call_id"].(string)
		switch ev["type"] {
		case "tool.started":
			ix.started[id]++
		case "tool.completed", "tool.failed":
			ix.finished[id]++
		}
	}
	return ix
}

// checkOneRecordPerCall asserts exactly one tools.jsonl line, one
// tool.started and one end event for every call of the ledger, and, when
// exact, no record of a call the ledger does not know.
func checkOneRecordPerCall(t *testing.T, a *Archive, l *ledger, exact bool) recordIndex {
	t.Helper()
	ix := indexArchive(a)
	l.mu.Lock()
	defer l.mu.Unlock()
	var bad []string
	for id := range l.ids {
		if ix.tools[id] != 1 || ix.started[id] != 1 || ix.finished[id] != 1 {
			bad = append(bad, fmt.Sprintf("%s: %d tools.jsonl lines, %d tool.started, %d end events", id, ix.tools[id], ix.started[id], ix.finished[id]))
		}
	}
	sort.Strings(bad)
	if len(bad) > 0 {
		t.Errorf("%d of %d calls do not have exactly one record of each kind, e.g.:\n%s", len(bad), len(l.ids), strings.Join(bad[:min(10, len(bad))], "\n"))
	}
	if exact {
		var extra []string
		for id := range ix.tools {
			if _, ok := l.ids[id]; !ok {
				extra = append(extra, id)
			}
		}
		if len(extra) > 0 {
			t.Errorf("tools.jsonl has %d lines for calls no result carried, e.g. %v", len(extra), extra[:min(5, len(extra))])
		}
		if len(a.Tools) != len(l.ids) {
			t.Errorf("tools.jsonl has %d lines for %d calls", len(a.Tools), len(l.ids))
		}
	}
	return ix
}

// ---------------------------------------------------------------------------
// toolgate as the stdio upstream of toolgate

// innerGateway is the configuration of a toolgate that another toolgate
// runs as its stdio upstream "inner" (tools inner__echo, inner__sleep...).
type innerGateway struct {
	Env *Env
}

// newInner writes the inner gateway's configuration: diagnostics on, warn
// logs (its stderr is relayed into the outer's log), its own runs_dir.
func newInner(t *testing.T, opts ...Opt) *innerGateway {
	t.Helper()
	return &innerGateway{Env: newEnv(t, append([]Opt{set("log.level", "warn")}, opts...)...)}
}

// upstreamOpt adds the inner gateway as the outer's upstream "inner".
func (in *innerGateway) upstreamOpt(maxConcurrency int) Opt {
	return set("upstreams", []any{map[string]any{
		"name":            "inner",
		"command":         toolgateBin,
		"args":            []string{"serve", "--config", in.Env.ConfigPath},
		"dir":             in.Env.Dir,
		"max_concurrency": maxConcurrency,
		"startup_timeout": "30s",
	}})
}

// runManifest is a run.json.
type runManifest struct {
	ID      string `json:"id"`
	Started string `json:"started"`
	PID     int    `json:"pid"`
	Dir     string `json:"-"`
}

// runs lists the inner gateway's runs (one per process started), oldest
// first.
// eraArchives returns the run archives of the inner toolgate once its
// processes have ended: two runs, one per protocol era of the outer's
// callers (2026-07-28 callers are served over a connection of their era,
// adapters/upstream/modern.go). It fails the test otherwise.
func (in *innerGateway) eraArchives(t *testing.T) []*Archive {
	t.Helper()
	runs := in.runs(t)
	if len(runs) != 2 {
		t.Errorf("the inner toolgate was started %d times, want twice (once per era)", len(runs))
		return nil
	}
	var out []*Archive
	for _, run := range runs {
		if !waitFor(10*time.Second, func() bool { return !processAlive(run.PID) }) {
			t.Errorf("the inner toolgate (pid %d) outlived the outer one", run.PID)
			continue
		}
		out = append(out, &Archive{Dir: run.Dir,
			Events: readJSONL[map[string]any](t, run.Dir+"/events.jsonl", true),
			Tools:  readJSONL[ToolRecord](t, run.Dir+"/logs/tools.jsonl", true)})
	}
	return out
}

func (in *innerGateway) runs(t *testing.T) []runManifest {
	t.Helper()
	ents, err := os.ReadDir(in.Env.RunsDir)
	if err != nil {
		return nil
	}
	var out []runManifest
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(in.Env.RunsDir, e.Name(), "run.json"))
		if err != nil {
			continue
		}
		var m runManifest
		if json.Unmarshal(b, &m) == nil && m.PID > 0 {
			m.Dir = filepath.Join(in.Env.RunsDir, e.Name())
			out = append(out, m)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Started < out[j].Started })
	return out
}

// processAlive reports whether pid is a live, non-zombie process.
func processAlive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+2 >= len(s) {
		return false
	}
	state := s[i+2]
	return state != 'Z' && state != 'X'
}

// ---------------------------------------------------------------------------
// Results

// writeResults writes a test's measurements as JSON to a file under
// os.TempDir() and logs its path.
func writeResults(t *testing.T, v any) {
	t.Helper()
	dir := filepath.Join(os.TempDir(), "toolgate-load-results")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Logf("results: %v", err)
		return
	}
	name := strings.NewReplacer("/", "_", " ", "_").Replace(t.Name())
	path := filepath.Join(dir, fmt.Sprintf("%s-%s.json", name, time.Now().UTC().Format("20060102T150405Z")))
	b, _ := json.MarshalIndent(v, "", "  ")
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		t.Logf("results: %v", err)
		return
	}
	t.Logf("results written to %s", path)
}

// soakDuration is TOOLGATE_SOAK (a Go duration), 60s by default, 5s
// under -short.
func soakDuration(t *testing.T) time.Duration {
	t.Helper()
	if v := os.Getenv("TOOLGATE_SOAK"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 || d > time.Hour {
			t.Fatalf("TOOLGATE_SOAK=%q: want a duration up to 1h", v)
		}
		return d
	}
	if testing.Short() {
		return 5 * time.Second
	}
	return 60 * time.Second
}
