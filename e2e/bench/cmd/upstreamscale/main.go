// Command upstreamscale is the scale benchmark: toolgate with K stdio
// upstreams (e2e/bench/cmd/manytools, N tools each) for each K in -k, and
// how start-up time, tools/list latency and memory grow with K.
//
// For each K it writes a config with K upstreams (u00..u19, each
// `manytools -n N`, production defaults otherwise: recording on, the
// built-in toolsets on), starts `toolgate serve --http` and measures:
//
//   - start-up: from process start until /healthz answers with every
//     upstream toolset ready with N tools (toolgate serves HTTP only after
//     its upstreams are ready or have failed), and until a tools/list on
//     a new session returns all K×N upstream tools plus the built-in ones;
//   - tools/list latency: -lists requests on one session (raw JSON-RPC
//     over HTTP, timed until the whole body is read), median, p90, p99,
//     and the response size;
//   - CPU time toolgate and its children had used when it was ready;
//   - memory: toolgate's peak RSS (VmHWM) and the sum of its children's;
//   - shutdown: from SIGTERM until toolgate has exited (children ended);
//   - the upstreams alone: right before toolgate, the K upstreams started
//     at once by this program, each asked initialize and tools/list over
//     stdio, until the last has listed its N tools: what toolgate's
//     start-up cannot be faster than on this machine (the same K processes
//     starting on the same cores). Start-up "beyond the upstreams" is
//     toolgate's time to a ready /healthz minus that;
//   - the tools/list baseline: right after toolgate, the same number of
//     tools/list requests to a bare mcp-go server (`manytools -addr`)
//     listing as many tools as toolgate did, same schemas, same transport.
//
// The K values are run -rounds times in rotating order and each figure is
// the median over rounds; ratios are to the smallest K >= 1 in -k (K=1 by
// default). K=0 (toolgate alone) is included by default as context.
//
//	upstreamscale -toolgate bin/toolgate -manytools bin/manytools -k 0,1,5,10,20 -n 100
//
// Every loop is bounded in count and time; all traffic is on 127.0.0.1.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/toolgate/toolgate/e2e/bench/internal/benchkit"
)

type config struct {
	toolgate, manytools string
	ks                  []int
	n, lists, rounds    int
	jsonOut             string
	keep                bool
}

func main() {
	var cfg config
	var ks string
	flag.StringVar(&cfg.toolgate, "toolgate", "bin/toolgate", "toolgate binary")
	flag.StringVar(&cfg.manytools, "manytools", "bin/manytools", "upstream binary (e2e/bench/cmd/manytools)")
	flag.StringVar(&ks, "k", "0,1,5,10,20", "comma-separated upstream counts (0-100)")
	flag.IntVar(&cfg.n, "n", 100, "tools per upstream")
	flag.IntVar(&cfg.lists, "lists", 50, "tools/list requests timed per K and round (one session)")
	flag.IntVar(&cfg.rounds, "rounds", 3, "rounds over every K (rotating order); figures are medians over rounds")
	flag.StringVar(&cfg.jsonOut, "json", "", "also write the results as JSON to this file")
	flag.BoolVar(&cfg.keep, "keep", false, "keep the temporary directory (configs, run archives, logs)")
	flag.Parse()
	var err error
	if cfg.ks, err = benchkit.Counts(ks, 0, 100); err != nil {
		fatalf("-k: %v", err)
	}
	if cfg.n < 1 || cfg.n > 10000 || cfg.lists < 1 || cfg.lists > 10000 || cfg.rounds < 1 || cfg.rounds > 20 {
		fatalf("-n must be 1-10000, -lists 1-10000, -rounds 1-20")
	}
	if err := run(cfg); err != nil {
		fatalf("%v", err)
	}
}

func fatalf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "upstreamscale: "+format+"\n", args...)
	os.Exit(1)
}

// sample is one start of toolgate with K upstreams.
type sample struct {
	healthy, listed, shutdown time.Duration
	alone                     time.Duration   // the K upstreams listed without toolgate
	cpuTG, cpuChildren        time.Duration   // CPU time used until ready
	lists                     []time.Duration // sorted
	bareLists                 []time.Duration // sorted; the bare mcp-go baseline
	bytes                     int
	tools                     int
	hwm, childHWM, childMax   int64 // kB
	children                  int
	threads                   string
}

type point struct {
	K           int           `json:"k"`
	Tools       int           `json:"tools_listed"`
	Healthy     time.Duration `json:"startup_healthz_ns"`
	Listed      time.Duration `json:"startup_tools_list_ns"`
	Alone       time.Duration `json:"upstreams_alone_listed_ns,omitempty"`
	Beyond      time.Duration `json:"startup_beyond_upstreams_ns,omitempty"`
	ListP50     time.Duration `json:"tools_list_p50_ns"`
	ListP90     time.Duration `json:"tools_list_p90_ns"`
	ListP99     time.Duration `json:"tools_list_p99_ns"`
	ListBytes   int           `json:"tools_list_bytes"`
	BareP50     time.Duration `json:"bare_tools_list_p50_ns,omitempty"`
	BareP99     time.Duration `json:"bare_tools_list_p99_ns,omitempty"`
	HWM         int64         `json:"toolgate_vmhwm_kb"`
	ChildrenHWM int64         `json:"children_vmhwm_sum_kb"`
	ChildMaxHWM int64         `json:"child_vmhwm_max_kb"`
	Children    int           `json:"children"`
	Threads     string        `json:"toolgate_threads"`
	Shutdown    time.Duration `json:"shutdown_ns"`
	StartCPU    time.Duration `json:"startup_cpu_toolgate_ns"`
	StartCPUCh  time.Duration `json:"startup_cpu_children_ns"`
	Rounds      int           `json:"rounds"`
}

func run(cfg config) error {
	dir, err := os.MkdirTemp("", "toolgate-upstreamscale-")
	if err != nil {
		return err
	}
	if !cfg.keep {
		defer os.RemoveAll(dir)
	}
	fmt.Fprintf(os.Stderr, "upstreamscale: %s; load average %s\n", benchkit.Machine(), benchkit.LoadAvg())
	load0 := benchkit.LoadAvg()
	samples := map[int][]*sample{}
	for r := range cfg.rounds {
		for i := range cfg.ks {
			k := cfg.ks[(i+r)%len(cfg.ks)]
			s, err := once(cfg, dir, k, r)
			if err != nil {
				return fmt.Errorf("round %d with K=%d: %w", r+1, k, err)
			}
			fmt.Fprintf(os.Stderr, "upstreamscale: K=%-3d round %d: healthz %v, tools/list ready %v, %d tools, list p50 %v, VmHWM %d kB (+ children %d kB), shutdown %v\n",
				k, r+1, s.healthy.Round(time.Millisecond), s.listed.Round(time.Millisecond), s.tools,
				benchkit.Percentile(s.lists, 0.5).Round(time.Microsecond), s.hwm, s.childHWM, s.shutdown.Round(time.Millisecond))
			samples[k] = append(samples[k], s)
		}
	}
	var pts []*point
	for _, k := range cfg.ks {
		ss := samples[k]
		p := &point{K: k, Rounds: len(ss), Tools: ss[0].tools, ListBytes: ss[0].bytes, Threads: ss[len(ss)-1].threads, Children: ss[0].children}
		med := func(f func(*sample) time.Duration) time.Duration {
			v := make([]time.Duration, len(ss))
			for i, s := range ss {
				v[i] = f(s)
			}
			slices.Sort(v)
			return v[len(v)/2]
		}
		medKB := func(f func(*sample) int64) int64 {
			v := make([]int64, len(ss))
			for i, s := range ss {
				v[i] = f(s)
			}
			slices.Sort(v)
			return v[len(v)/2]
		}
		p.Healthy = med(func(s *sample) time.Duration { return s.healthy })
		p.Listed = med(func(s *sample) time.Duration { return s.listed })
		if k > 0 {
			p.Alone = med(func(s *sample) time.Duration { return s.alone })
			p.Beyond = med(func(s *sample) time.Duration { return s.healthy - s.alone })
		}
		p.Shutdown = med(func(s *sample) time.Duration { return s.shutdown })
		p.StartCPU = med(func(s *sample) time.Duration { return s.cpuTG })
		p.StartCPUCh = med(func(s *sample) time.Duration { return s.cpuChildren })
		var all []time.Duration
		for _, s := range ss {
			all = append(all, s.lists...)
		}
		slices.Sort(all)
		p.ListP50, p.ListP90, p.ListP99 = benchkit.Percentile(all, 0.5), benchkit.Percentile(all, 0.9), benchkit.Percentile(all, 0.99)
		all = all[:0]
		for _, s := range ss {
			all = append(all, s.bareLists...)
		}
		slices.Sort(all)
		p.BareP50, p.BareP99 = benchkit.Percentile(all, 0.5), benchkit.Percentile(all, 0.99)
		p.HWM = medKB(func(s *sample) int64 { return s.hwm })
		p.ChildrenHWM = medKB(func(s *sample) int64 { return s.childHWM })
		p.ChildMaxHWM = medKB(func(s *sample) int64 { return s.childMax })
		pts = append(pts, p)
	}
	load1 := benchkit.LoadAvg()
	report(os.Stdout, cfg, pts, load0, load1)
	if cfg.jsonOut != "" {
		b, _ := json.MarshalIndent(map[string]any{"machine": benchkit.Machine(), "n": cfg.n, "lists": cfg.lists,
			"rounds": cfg.rounds, "load_avg": []string{"start: " + load0, "end: " + load1}, "points": pts}, "", "  ")
		if err := os.WriteFile(cfg.jsonOut, append(b, '\n'), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// health is the part of /healthz this program reads.
type health struct {
	Details struct {
		Tools    int `json:"tools"`
		Toolsets []struct {
			Name   string `json:"name"`
			Tools  int    `json:"tools"`
			Status struct {
				State string `json:"state"`
			} `json:"status"`
		} `json:"toolsets"`
	} `json:"details"`
}

func once(cfg config, dir string, k, round int) (*sample, error) {
	sub := filepath.Join(dir, fmt.Sprintf("k%d-r%d", k, round+1))
	if err := os.MkdirAll(sub, 0o755); err != nil {
		return nil, err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "runs_dir: %q\nmemory:\n  path: %q\ndiscovery:\n  mode: all # measure the whole list\nupstreams:", filepath.Join(sub, "runs"), filepath.Join(sub, "memory.db"))
	if k == 0 {
		b.WriteString(" []\n")
	} else {
		b.WriteString("\n")
	}
	for i := range k {
		fmt.Fprintf(&b, "  - name: u%02d\n    command: %q\n    args: [\"-n\", \"%d\", \"-name\", \"u%02d\"]\n", i, cfg.manytools, cfg.n, i)
	}
	confPath := filepath.Join(sub, "toolgate.yaml")
	if err := os.WriteFile(confPath, []byte(b.String()), 0o644); err != nil {
		return nil, err
	}
	logf, err := os.Create(filepath.Join(sub, "toolgate.stderr"))
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	s := &sample{}
	if k > 0 {
		if s.alone, err = upstreamsAlone(cfg, k, logf); err != nil {
			return nil, fmt.Errorf("the upstreams alone: %w", err)
		}
	}
	addr, err := benchkit.FreeAddr()
	if err != nil {
		return nil, err
	}
	p, err := benchkit.Start("toolgate", []string{cfg.toolgate, "serve", "--http", addr, "--config", confPath}, logf)
	if err != nil {
		return nil, err
	}
	stopped := false
	defer func() {
		if !stopped {
			p.Stop(15 * time.Second)
		}
	}()
	var total, offered int
	s.healthy, err = p.WaitHealthy("http://"+addr+"/healthz", 60*time.Second, func(body []byte) bool {
		var h health
		if json.Unmarshal(body, &h) != nil {
			return false
		}
		ready, full := 0, 0
		for _, ts := range h.Details.Toolsets {
			if strings.HasPrefix(ts.Name, "u") && ts.Status.State == "ready" {
				ready++
				if ts.Tools == cfg.n {
					full++
				}
			}
		}
		total, offered = h.Details.Tools, full
		return ready == k
	})
	if err != nil {
		return nil, err
	}
	if offered != k {
		return nil, fmt.Errorf("only %d of %d upstreams offer all %d tools (see %s)", offered, k, cfg.n, logf.Name())
	}
	if total < k*cfg.n {
		return nil, fmt.Errorf("/healthz reports %d tools, want at least %d", total, k*cfg.n)
	}
	url := "http://" + addr + "/mcp"
	hc := &http.Client{Timeout: 30 * time.Second}
	// Start-up until a new session lists every tool.
	for i := 0; ; i++ {
		sess, err := initialize(hc, url)
		if err == nil {
			var n int
			if _, n, err = list(hc, url, sess); err == nil && n >= total {
				s.tools = n
				break
			}
		}
		if i >= 1000 {
			return nil, fmt.Errorf("tools/list never returned %d tools: %v", total, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	s.listed = time.Since(p.Started)
	s.cpuTG = benchkit.CPUTime(p.PID())
	for _, c := range benchkit.Children(p.PID()) {
		s.cpuChildren += benchkit.CPUTime(c)
	}

	sess, err := initialize(hc, url)
	if err != nil {
		return nil, err
	}
	for range cfg.lists {
		t0 := time.Now()
		size, n, err := list(hc, url, sess)
		d := time.Since(t0)
		if err != nil {
			return nil, err
		}
		if n != s.tools {
			return nil, fmt.Errorf("tools/list returned %d tools, then %d", s.tools, n)
		}
		s.lists = append(s.lists, d)
		s.bytes = size
	}
	slices.Sort(s.lists)

	st := benchkit.Status(p.PID())
	s.hwm, s.threads = benchkit.KB(st["VmHWM"]), st["Threads"]
	for _, c := range benchkit.Children(p.PID()) {
		if !isUpstream(c, cfg.manytools) {
			continue // toolgate's watchdog of its stdio children (a shell), not an upstream
		}
		h := benchkit.KB(benchkit.Status(c)["VmHWM"])
		s.childHWM += h
		s.childMax = max(s.childMax, h)
		s.children++
	}
	if s.children != k {
		return nil, fmt.Errorf("toolgate has %d children, want %d", s.children, k)
	}
	t0 := time.Now()
	p.Stop(15 * time.Second)
	s.shutdown = time.Since(t0)
	stopped = true
	if k > 0 {
		if s.bareLists, err = bareLists(cfg, logf, s.tools); err != nil {
			return nil, fmt.Errorf("bare baseline: %w", err)
		}
	}
	return s, nil
}

// upstreamsAlone starts the K upstreams at once, as toolgate would, asks
// each initialize and tools/list over stdio, and returns the time from the
// start until the last of them has listed its N tools.
func upstreamsAlone(cfg config, k int, logf io.Writer) (time.Duration, error) {
	start := time.Now()
	errs := make(chan error, k)
	for i := range k {
		go func() { errs <- listOverStdio(cfg, fmt.Sprintf("u%02d", i), logf) }()
	}
	var first error
	for range k {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	return time.Since(start), first
}

// listOverStdio runs one upstream, initializes it and lists its tools
// (one page: manytools does not paginate), then ends it. It speaks the
// three JSON-RPC lines itself rather than through mcp-go's client: the
// baseline is what the upstreams take, and the client's goroutines and
// decoding of every tool into mcp.Tool, on the same two cores as the
// children, made it 50% slower at K=20 (156 ms against 92-105), which
// would flatter toolgate's "beyond".
func listOverStdio(cfg config, name string, logf io.Writer) error {
	cmd := exec.Command(cfg.manytools, "-n", strconv.Itoa(cfg.n), "-name", name)
	cmd.Stderr = logf
	in, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	defer func() {
		in.Close()
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	}()
	rd := bufio.NewReaderSize(out, 1<<20)
	answer := func(req string) ([]byte, error) {
		if _, err := io.WriteString(in, req+"\n"); err != nil {
			return nil, err
		}
		for range 100 { // skip notifications and log lines, boundedly
			line, err := rd.ReadBytes('\n')
			if err != nil {
				return nil, err
			}
			if bytes.Contains(line, []byte(`"id":`)) {
				return line, nil
			}
		}
		return nil, errors.New("no answer")
	}
	if _, err := answer(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"upstreamscale","version":"1"}}}`); err != nil {
		return fmt.Errorf("%s: initialize: %w", name, err)
	}
	if _, err := io.WriteString(in, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n"); err != nil {
		return err
	}
	line, err := answer(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	if err != nil {
		return fmt.Errorf("%s: tools/list: %w", name, err)
	}
	var r struct {
		Result struct {
			Tools []json.RawMessage `json:"tools"`
		} `json:"result"`
	}
	if err := json.Unmarshal(line, &r); err != nil || len(r.Result.Tools) != cfg.n {
		return fmt.Errorf("%s: tools/list gave %d tools, want %d (%v)", name, len(r.Result.Tools), cfg.n, err)
	}
	return nil
}

// bareLists times cfg.lists tools/list requests, on one session, to a bare
// mcp-go server with n tools (manytools over HTTP).
func bareLists(cfg config, logf io.Writer, n int) ([]time.Duration, error) {
	addr, err := benchkit.FreeAddr()
	if err != nil {
		return nil, err
	}
	p, err := benchkit.Start("manytools", []string{cfg.manytools, "-n", strconv.Itoa(n), "-addr", addr}, logf)
	if err != nil {
		return nil, err
	}
	defer p.Stop(15 * time.Second)
	if _, err := p.WaitHealthy("http://"+addr+"/healthz", 30*time.Second, nil); err != nil {
		return nil, err
	}
	hc := &http.Client{Timeout: 30 * time.Second}
	url := "http://" + addr + "/mcp"
	sess, err := initialize(hc, url)
	if err != nil {
		return nil, err
	}
	var out []time.Duration
	for range cfg.lists {
		t0 := time.Now()
		_, got, err := list(hc, url, sess)
		d := time.Since(t0)
		if err != nil {
			return nil, err
		}
		if got != n {
			return nil, fmt.Errorf("listed %d tools, want %d", got, n)
		}
		out = append(out, d)
	}
	slices.Sort(out)
	return out, nil
}

// post sends one JSON-RPC message and returns the response body (the
// data of an SSE answer) and headers.
func post(hc *http.Client, url, session, body string) ([]byte, http.Header, error) {
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		return nil, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 256<<20))
	if err != nil {
		return nil, nil, err
	}
	if resp.StatusCode/100 != 2 {
		return nil, nil, fmt.Errorf("%s: %s", resp.Status, bytes.TrimSpace(b[:min(len(b), 300)]))
	}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		b = sseResponse(b)
	}
	return b, resp.Header, nil
}

// sseResponse is the JSON-RPC response among the events of an SSE body
// (one data line per event here): toolgate may send a notification on the
// request's stream before the response (tools/list_changed while it
// settles after start).
func sseResponse(body []byte) []byte {
	var last []byte
	for _, line := range bytes.Split(body, []byte("\n")) {
		d, ok := bytes.CutPrefix(line, []byte("data:"))
		if !ok {
			continue
		}
		d = bytes.TrimSpace(d)
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if json.Unmarshal(d, &m) == nil && len(m.ID) > 0 && m.Method == "" {
			return d
		}
		last = d
	}
	return last
}

func initialize(hc *http.Client, url string) (string, error) {
	_, h, err := post(hc, url, "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"upstreamscale","version":"1"}}}`)
	if err != nil {
		return "", err
	}
	sess := h.Get("Mcp-Session-Id")
	if _, _, err := post(hc, url, sess, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); err != nil {
		return "", err
	}
	return sess, nil
}

// list sends tools/list (following nextCursor, at most 1000 pages) and
// returns the bytes received and the number of tools.
func list(hc *http.Client, url, sess string) (int, int, error) {
	size, n, cursor := 0, 0, ""
	for range 1000 {
		params := "{}"
		if cursor != "" {
			c, _ := json.Marshal(cursor)
			params = `{"cursor":` + string(c) + `}`
		}
		b, _, err := post(hc, url, sess, `{"jsonrpc":"2.0","id":2,"method":"tools/list","params":`+params+`}`)
		if err != nil {
			return 0, 0, err
		}
		size += len(b)
		var r struct {
			Result struct {
				Tools      []json.RawMessage `json:"tools"`
				NextCursor string            `json:"nextCursor"`
			} `json:"result"`
			Error *struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		if err := json.Unmarshal(b, &r); err != nil {
			return 0, 0, err
		}
		if r.Error != nil {
			return 0, 0, fmt.Errorf("tools/list: %s", r.Error.Message)
		}
		n += len(r.Result.Tools)
		if cursor = r.Result.NextCursor; cursor == "" {
			return size, n, nil
		}
	}
	return 0, 0, fmt.Errorf("tools/list: more than 1000 pages")
}

func report(w io.Writer, cfg config, pts []*point, load0, load1 string) {
	fmt.Fprintf(w, "Scale: K stdio upstreams x %d tools (manytools) behind toolgate; median of %d rounds, %d tools/list per K and round (%s; load average start %s, end %s)\n\n",
		cfg.n, cfg.rounds, cfg.lists, benchkit.Machine(), load0, load1)
	var base *point
	for _, p := range pts {
		if p.K >= 1 && (base == nil || p.K < base.K) {
			base = p
		}
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "K\ttools\tstart-up healthz ms\tstart-up listed ms\tupstreams alone ms\tbeyond them ms\tstart-up CPU ms tg / children\ttools/list p50 ms\tp90 ms\tp99 ms\tlist KB\tbare mcp-go list p50 ms\tp99 ms\ttoolgate/bare p50\ttoolgate VmHWM MB\tchildren VmHWM MB (sum)\tthreads\tshutdown ms\t")
	for _, p := range pts {
		bare50, bare99, br := "-", "-", "-"
		if p.BareP50 > 0 {
			bare50, bare99 = benchkit.Ms(p.BareP50), benchkit.Ms(p.BareP99)
			br = fmt.Sprintf("%.2f", benchkit.Ratio(float64(p.ListP50), float64(p.BareP50)))
		}
		alone, beyond := "-", "-"
		if p.K > 0 {
			alone, beyond = fmt.Sprintf("%.0f", float64(p.Alone)/1e6), fmt.Sprintf("%.0f", float64(p.Beyond)/1e6)
		}
		fmt.Fprintf(tw, "%d\t%d\t%.0f\t%.0f\t%s\t%s\t%.0f / %.0f\t%s\t%s\t%s\t%.0f\t%s\t%s\t%s\t%.1f\t%.1f\t%s\t%.0f\t\n", p.K, p.Tools,
			float64(p.Healthy)/1e6, float64(p.Listed)/1e6, alone, beyond, float64(p.StartCPU)/1e6, float64(p.StartCPUCh)/1e6, benchkit.Ms(p.ListP50), benchkit.Ms(p.ListP90), benchkit.Ms(p.ListP99),
			float64(p.ListBytes)/1024, bare50, bare99, br, float64(p.HWM)/1024, float64(p.ChildrenHWM)/1024, p.Threads, float64(p.Shutdown)/1e6)
	}
	tw.Flush()
	if base == nil {
		return
	}
	fmt.Fprintf(w, "\nGrowth relative to K=%d (ratios):\n", base.K)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "K\tx upstreams\tx tools\tstart-up (listed)\ttools/list p50\ttools/list p99\ttoolgate VmHWM\ttoolgate VmHWM above K=0\tchildren VmHWM\t")
	var zero *point
	for _, p := range pts {
		if p.K == 0 {
			zero = p
		}
	}
	for _, p := range pts {
		if p.K < base.K {
			continue
		}
		above := "-"
		if zero != nil && base.HWM > zero.HWM {
			above = fmt.Sprintf("%.2f", float64(p.HWM-zero.HWM)/float64(base.HWM-zero.HWM))
		}
		fmt.Fprintf(tw, "%d\t%.0f\t%.2f\t%.2f\t%.2f\t%.2f\t%.2f\t%s\t%.2f\t\n", p.K, float64(p.K)/float64(base.K),
			float64(p.Tools)/float64(base.Tools), benchkit.Ratio(float64(p.Listed), float64(base.Listed)),
			benchkit.Ratio(float64(p.ListP50), float64(base.ListP50)), benchkit.Ratio(float64(p.ListP99), float64(base.ListP99)),
			benchkit.Ratio(float64(p.HWM), float64(base.HWM)), above, benchkit.Ratio(float64(p.ChildrenHWM), float64(base.ChildrenHWM)))
	}
	tw.Flush()
	if zero != nil {
		var last *point = pts[len(pts)-1]
		for _, p := range pts {
			if p.K > last.K {
				last = p
			}
		}
		if last.K > 0 {
			fmt.Fprintf(w, "\nper upstream (K=%d vs K=0): start-up +%.1f ms, toolgate memory +%.0f kB, tools/list +%.1f µs per upstream tool\n",
				last.K, float64(last.Listed-zero.Listed)/1e6/float64(last.K), float64(last.HWM-zero.HWM)/float64(last.K),
				float64(last.ListP50-zero.ListP50)/1e3/float64(last.Tools-zero.Tools))
		}
	}
}

// isUpstream reports whether process pid runs the upstream binary.
func isUpstream(pid int, bin string) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return false
	}
	arg0, _, _ := strings.Cut(string(b), "\x00")
	return filepath.Base(arg0) == filepath.Base(bin)
}
