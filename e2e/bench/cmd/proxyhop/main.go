// Command proxyhop is the proxy-hop benchmark: what the second MCP hop
// through toolgate costs, against the same hop through a minimal mcp-go
// passthrough proxy.
//
// One upstream MCP server (bareserver's echo tool) is reached these ways
// by the same client load:
//
//	direct    client -> upstream
//	minproxy  client -> minproxy (bare mcp-go server + mcp-go client, no pipeline) -> upstream
//	toolgate  client -> toolgate serve --http (production defaults, recording on) -> upstream
//
// for each upstream transport in -transports: "http" (one bareserver on
// loopback streamable HTTP, shared by every target), "http+pool" (the same,
// but minproxy's upstream HTTP client keeps enough idle connections for
// every call in flight, where mcp-go's default client, like toolgate's,
// keeps 2 and opens and closes a TCP connection for every other concurrent
// call) and "stdio" (each target runs its own `bareserver -stdio`
// child; the direct clients share one mcp-go stdio client, as the proxies
// share their one upstream connection). The clients are mcp-go clients over loopback streamable
// HTTP, one initialize each, calling tools/call echo in a closed loop, 1,
// 16 and 64 of them at a time by default; toolgate serves the upstream
// with an empty prefix so the tool is "echo" everywhere. The measured time
// is cut into rounds (-duration / -slice; with one client
// -one-client-duration / -slice when that is more), each a slice of every target in
// rotating order, so a busy machine affects them alike.
//
// Reported per transport and client count: calls/s, latency percentiles,
// the latency each proxy adds over direct (p50, p99, mean) and the ratio
// added(toolgate)/added(minproxy), CPU per call of each proxy process and
// of the upstream process (from each process's CPU-time clock), the ratios over the whole
// run and per round, the verdicts on the median of the rounds' ratios
// (added p50 and p99 <= 1.2, proxy CPU per call <= 1.15), peak RSS, and
// the record check (toolgate wrote exactly one tools.jsonl line per call
// it answered).
//
// With -minproxy-published, the same minimal proxy built on mcp-go as
// published (e2e/bench/stock) is a second baseline, as the end-to-end
// benchmark has two bare servers: -minproxy is built on toolgate's patched
// copy, whose patches make it cheaper by what they save toolgate. Each
// baseline gets its own ratios and verdicts.
//
// With -mcp-proxy, another target: TBXark/mcp-proxy (an mcp-go proxy
// without validation, policy or records; https://github.com/TBXark/mcp-proxy),
// built from its repository outside this one, serving the same upstream over
// streamable HTTP; toolgate's throughput is then compared with its. Without
// the flag that column is skipped, and the report says so. Another proxy can
// take that place through a script that reads mcp-proxy's configuration and
// serves the upstream at -mcp-proxy-path (e2e/bench/peers has one for
// AmoyLab/Unla); the report still names the column mcp-proxy.
//
// With -candidate, a second toolgate binary (a change under test) is one
// more target, configured as toolgate is, and the report adds its ratios
// to toolgate's, per round (median and range): a before-and-after
// measured in one run, each round giving both the same slice of the
// machine, where two runs an hour apart differ by more than most changes
// do. It has no verdicts; its records are checked as toolgate's are.
//
//	proxyhop -toolgate bin/toolgate -minproxy bin/minproxy -upstream bin/bareserver [-minproxy-published bin/minproxy-stock] [-mcp-proxy /path/to/mcp-proxy] [-candidate /path/to/toolgate-new]
//
// Every loop is bounded in time and in count; all traffic is on 127.0.0.1.
package main

import (
	"context"
	"encoding/json"
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
	"sync"
	"text/tabwriter"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/toolgate/toolgate/e2e/bench/bare"
	"github.com/toolgate/toolgate/e2e/bench/internal/benchkit"
)

type config struct {
	toolgate, minproxy, upstream string
	minproxyPub                  string // minproxy on mcp-go as published; empty: not measured
	mcpProxy                     string // TBXark/mcp-proxy binary; empty: not measured
	mcpProxyPath                 string // where mcpProxy serves the upstream
	candidate                    string // a second toolgate binary, measured against -toolgate; empty: none
	transports                   []string
	clients                      []int
	sched                        benchkit.Schedule
	warmup                       time.Duration
	text                         string
	jsonOut                      string
	keep                         bool
	logLevel                     string
	tgMaxConc                    int
	minIdle                      int
}

func main() {
	var cfg config
	var clients, transports string
	flag.StringVar(&cfg.toolgate, "toolgate", "bin/toolgate", "toolgate binary")
	flag.StringVar(&cfg.minproxy, "minproxy", "bin/minproxy", "minimal proxy binary (e2e/bench/cmd/minproxy)")
	flag.StringVar(&cfg.minproxyPub, "minproxy-published", "", "the minimal proxy built on mcp-go as published (e2e/bench/stock), a second baseline (empty: skipped)")
	flag.StringVar(&cfg.upstream, "upstream", "bin/bareserver", "upstream server binary (e2e/bench/cmd/bareserver)")
	flag.StringVar(&cfg.mcpProxy, "mcp-proxy", "", "TBXark/mcp-proxy binary, built from its repository (empty: that target is skipped)")
	flag.StringVar(&cfg.mcpProxyPath, "mcp-proxy-path", "/up/", "the URL path at which the -mcp-proxy binary serves the upstream (another proxy in its place may serve it elsewhere)")
	flag.StringVar(&cfg.candidate, "candidate", "", "a second toolgate binary (a change under test), measured against -toolgate in the same rounds (empty: none)")
	flag.StringVar(&transports, "transports", "http,http+pool,stdio", "upstream transports to measure (http, http+pool, stdio)")
	flag.StringVar(&clients, "clients", "1,16,64", "comma-separated concurrent client counts")
	cfg.sched.Flags(flag.CommandLine, "target, transport and client count", "targets", 6*time.Second, 2*time.Second)
	flag.DurationVar(&cfg.warmup, "warmup", time.Second, "warm-up per target, transport and client count (not measured)")
	flag.StringVar(&cfg.text, "text", "hello, toolgate", "echo argument")
	flag.StringVar(&cfg.jsonOut, "json", "", "also write the results as JSON to this file")
	flag.BoolVar(&cfg.keep, "keep", false, "keep the temporary directory (toolgate's run archives and logs)")
	flag.StringVar(&cfg.logLevel, "log-level", "info", "toolgate's log.level (info is the production default)")
	flag.IntVar(&cfg.tgMaxConc, "toolgate-max-concurrency", 0, "the upstream's max_concurrency in toolgate's config (0: toolgate's default, 16)")
	flag.IntVar(&cfg.minIdle, "minproxy-idle-conns", 0, "minproxy -upstream-idle-conns for every HTTP transport (0: mcp-go's default client for http, 256 for http+pool)")
	flag.Parse()
	var err error
	if cfg.clients, err = benchkit.Counts(clients, 1, 1000); err != nil {
		fatalf("-clients: %v", err)
	}
	for _, s := range strings.Split(transports, ",") {
		s = strings.TrimSpace(s)
		if s != "http" && s != "http+pool" && s != "stdio" {
			fatalf("bad -transports entry %q", s)
		}
		cfg.transports = append(cfg.transports, s)
	}
	if err := cfg.sched.Check(); err != nil {
		fatalf("%v", err)
	}
	if !strings.HasPrefix(cfg.mcpProxyPath, "/") {
		fatalf("-mcp-proxy-path %q: not a path from the root (/...)", cfg.mcpProxyPath)
	}
	if err := run(cfg); err != nil {
		fatalf("%v", err)
	}
}

func fatalf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "proxyhop: "+format+"\n", args...)
	os.Exit(1)
}

// target is one way of reaching the upstream.
type target struct {
	name string
	url  string // streamable HTTP endpoint; empty for direct stdio
	// stdio is the shared client of direct stdio.
	stdio *client.Client
	// proxyPID is the proxy process (0 for direct); upPID the upstream
	// process that serves this target.
	proxyPID, upPID int
	runsDir         string // toolgate's
	calls           int64  // every call sent, warm-up included
}

type point struct {
	Transport  string        `json:"transport"`
	Target     string        `json:"target"`
	Clients    int           `json:"clients"`
	Calls      int64         `json:"calls"`
	Errors     int64         `json:"errors"`
	FirstError string        `json:"first_error,omitempty"`
	Elapsed    time.Duration `json:"elapsed_ns"`
	Throughput float64       `json:"calls_per_s"`
	P50        time.Duration `json:"p50_ns"`
	P90        time.Duration `json:"p90_ns"`
	P99        time.Duration `json:"p99_ns"`
	Max        time.Duration `json:"max_ns"`
	Mean       time.Duration `json:"mean_ns"`
	// CPU per call in µs: the proxy process (0 for direct), the upstream
	// process, the load generator.
	ProxyCPU    float64 `json:"proxy_cpu_us_per_call"`
	UpstreamCPU float64 `json:"upstream_cpu_us_per_call"`
	ClientCPU   float64 `json:"client_cpu_us_per_call"`
	// Rounds are the target's slices, one per round, in order (the proxy's
	// CPU), for the per-round ratios of the verdicts.
	Rounds []benchkit.Round `json:"rounds"`

	lat              []time.Duration
	sum              time.Duration
	pCPU, uCPU, cCPU time.Duration
}

func newWorkers(ctx context.Context, t *target, n int, hc *http.Client) ([]*worker, error) {
	var ws []*worker
	for range n {
		if t.stdio != nil {
			ws = append(ws, &worker{C: t.stdio})
			continue
		}
		c, err := client.NewStreamableHttpClient(t.url, transport.WithHTTPBasicClient(hc))
		if err != nil {
			return ws, err
		}
		if err := c.Start(ctx); err != nil {
			return ws, err
		}
		if err := bare.Initialize(ctx, c, mcp.LATEST_LEGACY_PROTOCOL_VERSION, "proxyhop"); err != nil {
			c.Close()
			return ws, err
		}
		ws = append(ws, &worker{C: c, Own: true})
	}
	return ws, nil
}

func runSlice(t *target, ws []*worker, d time.Duration, text string, p *point) {
	for _, w := range ws {
		w.Reset()
	}
	p0, u0, c0 := cpuTime(t.proxyPID), cpuTime(t.upPID), benchkit.CPUTime(0)
	t0 := time.Now()
	end := t0.Add(d)
	var wg sync.WaitGroup
	for _, w := range ws {
		wg.Go(func() { w.Loop(end, text, p != nil) })
	}
	wg.Wait()
	elapsed := time.Since(t0)
	p1, u1, c1 := cpuTime(t.proxyPID), cpuTime(t.upPID), benchkit.CPUTime(0)
	for _, w := range ws {
		t.calls += w.N
	}
	if p == nil {
		return
	}
	p.Elapsed += elapsed
	p.pCPU += p1 - p0
	p.uCPU += u1 - u0
	p.cCPU += c1 - c0
	var calls int64
	var lat []time.Duration
	for _, w := range ws {
		calls += w.N
		p.Errors += w.Err
		if p.FirstError == "" {
			p.FirstError = w.Msg
		}
		lat = append(lat, w.Lat...)
		for _, l := range w.Lat {
			p.sum += l
		}
	}
	p.Calls += calls
	p.lat = append(p.lat, lat...)
	p.Rounds = append(p.Rounds, benchkit.NewRound(calls, elapsed, p1-p0, lat))
}

// cpuTime is the CPU time of process pid; 0 for none (direct has no
// proxy).
func cpuTime(pid int) time.Duration {
	if pid <= 0 {
		return 0
	}
	return benchkit.CPUTime(pid)
}

func (p *point) finish() {
	if p.Elapsed > 0 {
		p.Throughput = float64(p.Calls) / p.Elapsed.Seconds()
	}
	p.ProxyCPU, p.UpstreamCPU, p.ClientCPU = benchkit.PerCall(p.pCPU, p.Calls), benchkit.PerCall(p.uCPU, p.Calls), benchkit.PerCall(p.cCPU, p.Calls)
	slices.Sort(p.lat)
	if len(p.lat) > 0 {
		p.Mean = p.sum / time.Duration(len(p.lat))
	}
	p.P50, p.P90 = benchkit.Percentile(p.lat, 0.50), benchkit.Percentile(p.lat, 0.90)
	p.P99, p.Max = benchkit.Percentile(p.lat, 0.99), benchkit.Percentile(p.lat, 1)
	p.lat = nil
}

type procMem struct {
	Name    string `json:"name"`
	VmHWM   string `json:"vm_hwm"`
	Threads string `json:"threads"`
}

type results struct {
	Machine  string           `json:"machine"`
	Started  time.Time        `json:"started"`
	Config   map[string]any   `json:"config"`
	LoadAvg  []string         `json:"load_avg"`
	Points   []*point         `json:"points"`
	Memory   []procMem        `json:"memory"`
	Records  map[string]int64 `json:"records"`
	Verdicts []string         `json:"verdicts"`
}

// setRecords and records keep, per transport and toolgate target, the
// calls it answered and the lines its tools.jsonl has (Records, in the
// JSON output, as "<transport>_<target>_calls_sent" and
// "<transport>_<target>_tools_jsonl_lines").
func (r *results) setRecords(tr, name string, sent, lines int64) {
	r.Records[tr+"_"+name+"_calls_sent"] = sent
	r.Records[tr+"_"+name+"_tools_jsonl_lines"] = lines
}

func (r *results) records(tr, name string) (sent, lines int64, ok bool) {
	sent, ok = r.Records[tr+"_"+name+"_calls_sent"]
	return sent, r.Records[tr+"_"+name+"_tools_jsonl_lines"], ok
}

func run(cfg config) error {
	dir, err := os.MkdirTemp("", "toolgate-proxyhop-")
	if err != nil {
		return err
	}
	keep := cfg.keep // and set when the records or calls go wrong
	defer benchkit.KeepOrRemove("proxyhop", dir, &keep)
	res := &results{Started: time.Now().UTC(), Machine: benchkit.Machine(), Records: map[string]int64{}}
	poolIdle := cfg.minIdle
	if poolIdle == 0 {
		poolIdle = 256
	}
	res.Config = map[string]any{"minproxy_idle_conns_http_pool": poolIdle, "transports": cfg.transports, "clients": cfg.clients, "duration": cfg.sched.Duration.String(), "one_client_duration": cfg.sched.OneClient.String(),
		"slice": cfg.sched.Slice.String(), "warmup": cfg.warmup.String(), "toolgate_log_level": cfg.logLevel,
		"toolgate_max_concurrency": cfg.tgMaxConc, "minproxy_idle_conns": cfg.minIdle, "minproxy_published": cfg.minproxyPub, "mcp_proxy": cfg.mcpProxy, "mcp_proxy_path": cfg.mcpProxyPath}
	res.LoadAvg = append(res.LoadAvg, "start: "+benchkit.LoadAvg())
	fmt.Fprintf(os.Stderr, "proxyhop: %s; load average %s\n", res.Machine, benchkit.LoadAvg())
	var failures []string
	for _, tr := range cfg.transports {
		if err := runTransport(cfg, dir, tr, res); err != nil {
			return fmt.Errorf("%s: %w", tr, err)
		}
	}
	res.LoadAvg = append(res.LoadAvg, "end: "+benchkit.LoadAvg())
	report(os.Stdout, res)
	if cfg.jsonOut != "" {
		b, _ := json.MarshalIndent(res, "", "  ")
		if err := os.WriteFile(cfg.jsonOut, append(b, '\n'), 0o644); err != nil {
			return err
		}
	}
	for _, tr := range cfg.transports {
		for _, name := range toolgates {
			if sent, lines, ok := res.records(tr, name); ok && sent != lines {
				failures = append(failures, fmt.Sprintf("%s: %s was sent %d calls and its tools.jsonl has %d lines", tr, name, sent, lines))
			}
		}
	}
	for _, p := range res.Points {
		if p.Errors > 0 {
			failures = append(failures, fmt.Sprintf("%s %s with %d clients: %d errors, first: %s", p.Transport, p.Target, p.Clients, p.Errors, p.FirstError))
		}
	}
	if len(failures) > 0 {
		keep = true
		return fmt.Errorf("%s", strings.Join(failures, "; "))
	}
	return nil
}

func runTransport(cfg config, dir, tr string, res *results) error {
	logf, err := os.Create(filepath.Join(dir, strings.ReplaceAll(tr, "+", "-")+".stderr"))
	if err != nil {
		return err
	}
	defer logf.Close()
	var stops []func()
	defer func() {
		for i := len(stops) - 1; i >= 0; i-- {
			stops[i]()
		}
	}()
	startHTTP := func(name string, args []string, addr string) (*benchkit.Proc, error) {
		p, err := benchkit.Start(name, args, logf)
		if err != nil {
			return nil, err
		}
		stops = append(stops, func() { p.Stop(15 * time.Second) })
		if _, err := p.WaitHealthy("http://"+addr+"/healthz", 30*time.Second, nil); err != nil {
			return nil, err
		}
		return p, nil
	}

	direct := &target{name: "direct"}
	var upCfg string
	var mpArgs []string
	minIdle := cfg.minIdle
	if tr == "http+pool" && minIdle == 0 {
		minIdle = 256
	}
	switch strings.TrimSuffix(tr, "+pool") {
	case "http":
		addr, err := benchkit.FreeAddr()
		if err != nil {
			return err
		}
		up, err := startHTTP("upstream", []string{cfg.upstream, "-addr", addr}, addr)
		if err != nil {
			return err
		}
		direct.url, direct.upPID = "http://"+addr+"/mcp", up.PID()
		upCfg = fmt.Sprintf("    url: %q\n", direct.url)
		mpArgs = []string{"-upstream-url", direct.url}
	case "stdio":
		var cmd *exec.Cmd
		t := transport.NewStdioWithOptions(cfg.upstream, nil, []string{"-stdio"},
			transport.WithCommandFunc(func(ctx context.Context, command string, env []string, args []string) (*exec.Cmd, error) {
				cmd = exec.CommandContext(ctx, command, args...)
				cmd.Env = append(os.Environ(), env...)
				cmd.Stderr = logf
				return cmd, nil
			}))
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := t.Start(context.Background()); err != nil {
			return fmt.Errorf("direct stdio upstream: %w", err)
		}
		c := client.NewClient(t)
		stops = append(stops, func() { _ = c.Close() })
		if err := bare.Initialize(ctx, c, mcp.LATEST_LEGACY_PROTOCOL_VERSION, "proxyhop"); err != nil {
			return fmt.Errorf("direct stdio upstream: %w", err)
		}
		direct.stdio, direct.upPID = c, cmd.Process.Pid
		upCfg = fmt.Sprintf("    command: %q\n    args: [\"-stdio\"]\n", cfg.upstream)
		mpArgs = []string{"-upstream-cmd", cfg.upstream, "-upstream-arg", "-stdio"}
	}

	if minIdle > 0 && tr != "stdio" {
		mpArgs = append(mpArgs, "-upstream-idle-conns", strconv.Itoa(minIdle))
	}
	// ownUpstream finds, over stdio, the upstream child t's proxy started.
	ownUpstream := func(t *target) error {
		if tr != "stdio" {
			return nil
		}
		if t.upPID = childNamed(t.proxyPID, filepath.Base(cfg.upstream)); t.upPID == 0 {
			return fmt.Errorf("cannot find %s's stdio child", t.name)
		}
		return nil
	}
	// startMin starts a minimal proxy (binary bin) as the target name.
	startMin := func(name, bin string) (*target, error) {
		addr, err := benchkit.FreeAddr()
		if err != nil {
			return nil, err
		}
		p, err := startHTTP(name, append([]string{bin, "-addr", addr}, mpArgs...), addr)
		if err != nil {
			return nil, err
		}
		t := &target{name: name, url: "http://" + addr + "/mcp", proxyPID: p.PID(), upPID: direct.upPID}
		return t, ownUpstream(t)
	}
	mins, err := startEach(startMin, named{"minproxy", cfg.minproxy}, named{minproxyPub, cfg.minproxyPub})
	if err != nil {
		return err
	}
	minp := mins[0]

	// startTG starts toolgate binary bin as the target name, with a
	// config, a run archive and a memory database of its own.
	startTG := func(name, bin string) (*target, error) {
		ups := "upstreams:\n  - name: up\n    prefix: \"\"\n" + upCfg
		if cfg.tgMaxConc > 0 {
			ups += fmt.Sprintf("    max_concurrency: %d\n", cfg.tgMaxConc)
		}
		confPath, runsDir, err := benchkit.ToolgateConfig(dir, name+"-"+strings.ReplaceAll(tr, "+", "-"), cfg.logLevel, ups)
		if err != nil {
			return nil, err
		}
		addr, err := benchkit.FreeAddr()
		if err != nil {
			return nil, err
		}
		p, err := startHTTP(name, []string{bin, "serve", "--http", addr, "--config", confPath}, addr)
		if err != nil {
			return nil, err
		}
		t := &target{name: name, url: "http://" + addr + "/mcp", proxyPID: p.PID(), upPID: direct.upPID, runsDir: runsDir}
		return t, ownUpstream(t)
	}
	tgs, err := startEach(startTG, named{"toolgate", cfg.toolgate}, named{candidate, cfg.candidate})
	if err != nil {
		return err
	}
	tgt := tgs[0]
	targets := append(append([]*target{direct}, mins...), tgs...)
	if cfg.mcpProxy != "" {
		tbx, err := startMCPProxy(cfg, dir, tr, direct.url, logf)
		if err != nil {
			return fmt.Errorf("mcp-proxy: %w", err)
		}
		stops = append(stops, func() { tbx.proc.Stop(15 * time.Second) })
		tbx.upPID = direct.upPID
		if err := ownUpstream(tbx.target); err != nil {
			return err
		}
		targets = append(targets, tbx.target)
		defer func() {
			st := benchkit.Status(tbx.proxyPID)
			res.Memory = append(res.Memory, procMem{Name: tr + " mcp-proxy", VmHWM: st["VmHWM"], Threads: st["Threads"]})
		}()
	}
	fmt.Fprintf(os.Stderr, "proxyhop: %s: pids direct-upstream %d, minproxy %d (upstream %d), toolgate %d (upstream %d)\n",
		tr, direct.upPID, minp.proxyPID, minp.upPID, tgt.proxyPID, tgt.upPID)

	hc := &http.Client{Transport: &http.Transport{
		Proxy: nil, MaxIdleConns: 2048, MaxIdleConnsPerHost: 1024,
		IdleConnTimeout: 90 * time.Second, DisableCompression: true,
	}}
	defer hc.CloseIdleConnections()

	for _, n := range cfg.clients {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		ws := map[*target][]*worker{}
		closeAll := func() {
			for _, l := range ws {
				for _, w := range l {
					if w.Own {
						w.C.Close()
					}
				}
			}
		}
		for _, t := range targets {
			l, err := newWorkers(ctx, t, n, hc)
			ws[t] = l
			if err != nil {
				cancel()
				closeAll()
				return fmt.Errorf("%s: client %d: %w", t.name, len(l), err)
			}
		}
		cancel()
		pts := map[*target]*point{}
		for _, t := range targets {
			pts[t] = &point{Transport: tr, Target: t.name, Clients: n}
			runSlice(t, ws[t], cfg.warmup, cfg.text, nil)
		}
		for r := range cfg.sched.Rounds(n) {
			for i := range targets {
				t := targets[(i+r)%len(targets)]
				runSlice(t, ws[t], cfg.sched.Slice, cfg.text, pts[t])
			}
		}
		closeAll()
		for _, t := range targets {
			p := pts[t]
			p.finish()
			res.Points = append(res.Points, p)
			fmt.Fprintf(os.Stderr, "proxyhop: %-5s %-8s %3d clients: %7.0f calls/s  p50 %v  p99 %v  proxy CPU %.1f µs/call  upstream CPU %.1f µs/call  errors %d\n",
				tr, t.name, n, p.Throughput, p.P50.Round(time.Microsecond), p.P99.Round(time.Microsecond), p.ProxyCPU, p.UpstreamCPU, p.Errors)
		}
	}
	mem := func(name string, pid int) {
		st := benchkit.Status(pid)
		res.Memory = append(res.Memory, procMem{Name: tr + " " + name, VmHWM: st["VmHWM"], Threads: st["Threads"]})
	}
	for _, t := range tgs {
		mem(t.name, t.proxyPID)
	}
	for _, m := range mins {
		mem(m.name, m.proxyPID)
	}
	if tr == "stdio" {
		mem("upstream of direct", direct.upPID)
		for _, m := range mins {
			mem("upstream of "+m.name, m.upPID)
		}
		for _, t := range tgs {
			mem("upstream of "+t.name, t.upPID)
		}
	} else {
		mem("upstream (shared)", direct.upPID)
	}
	// toolgate writes a call's record before it answers.
	for _, t := range tgs {
		res.setRecords(tr, t.name, t.calls, benchkit.CountLines(filepath.Join(t.runsDir, "*", "logs", "tools.jsonl")))
	}
	return nil
}

// named is a target's name and its binary.
type named struct{ name, bin string }

// startEach starts, with start, every target whose binary is given, in
// order; the first is always given (its flag has a default).
func startEach(start func(name, bin string) (*target, error), ts ...named) ([]*target, error) {
	var out []*target
	for _, t := range ts {
		if t.bin == "" {
			continue
		}
		st, err := start(t.name, t.bin)
		if err != nil {
			return nil, err
		}
		out = append(out, st)
	}
	return out, nil
}

// childNamed is the first child of pid whose comm is name (cut to 15
// bytes, as the kernel does); it waits up to 5 s for it to appear.
func childNamed(pid int, name string) int {
	if len(name) > 15 {
		name = name[:15]
	}
	for range 50 {
		for _, c := range benchkit.Children(pid) {
			b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", c))
			if strings.TrimSpace(string(b)) == name {
				return c
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	return 0
}

func added(p, base time.Duration) time.Duration { return p - base }

// addedRatio is c/b, the latency one proxy adds over direct against what
// another adds; ok is false when b is not positive (the ratio means
// nothing then).
func addedRatio(c, b float64) (float64, bool) {
	if b <= 0 {
		return 0, false
	}
	return c / b, true
}

func report(w io.Writer, res *results) {
	fmt.Fprintf(w, "Proxy hop: client -> upstream (direct) vs client -> minproxy -> upstream vs client -> toolgate -> upstream; echo tool, loopback (%s; load average %s)\n",
		res.Machine, strings.Join(res.LoadAvg, ", "))
	key := func(tr, t string, n int) string { return fmt.Sprintf("%s/%s/%d", tr, t, n) }
	by := map[string]*point{}
	var trs []string
	var ns []int
	for _, p := range res.Points {
		by[key(p.Transport, p.Target, p.Clients)] = p
		if !slices.Contains(trs, p.Transport) {
			trs = append(trs, p.Transport)
		}
		if !slices.Contains(ns, p.Clients) {
			ns = append(ns, p.Clients)
		}
	}
	for _, tr := range trs {
		switch tr {
		case "http":
			fmt.Fprintf(w, "\nupstream over http (minproxy keeps Go's default of 2 idle upstream connections; toolgate pools max_concurrency):\n")
		case "http+pool":
			fmt.Fprintf(w, "\nupstream over http, minproxy with a pooled upstream client too:\n")
		default:
			fmt.Fprintf(w, "\nupstream over %s:\n", tr)
		}
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "clients\ttarget\tcalls/s\tp50 ms\tp90 ms\tp99 ms\tmean ms\tproxy CPU µs/call\tupstream CPU µs/call\terrors\t")
		for _, n := range ns {
			for _, t := range []string{"direct", "minproxy", minproxyPub, "toolgate", candidate, "mcp-proxy"} {
				p := by[key(tr, t, n)]
				if p == nil {
					continue
				}
				pc := "-"
				if t != "direct" {
					pc = fmt.Sprintf("%.1f", p.ProxyCPU)
				}
				fmt.Fprintf(tw, "%d\t%s\t%.0f\t%s\t%s\t%s\t%s\t%s\t%.1f\t%d\t\n", n, t, p.Throughput,
					benchkit.Ms(p.P50), benchkit.Ms(p.P90), benchkit.Ms(p.P99), benchkit.Ms(p.Mean), pc, p.UpstreamCPU, p.Errors)
			}
		}
		tw.Flush()
		at := func(t string, n int) *point { return by[key(tr, t, n)] }
		for _, base := range baselines {
			if by[key(tr, base.name, ns[0])] != nil {
				baselineRatios(w, res, tr, base, ns, at)
			}
		}
		if by[key(tr, candidate, ns[0])] != nil {
			candidateRatios(w, ns, at)
		}
		if by[key(tr, "mcp-proxy", ns[0])] == nil {
			continue
		}
		fmt.Fprintln(w)
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "clients\tthroughput tg/mcp-proxy\tper round\tadded p50 ms mcp-proxy / tg\tproxy CPU tg/mcp-proxy\t")
		for _, n := range ns {
			a, x, c := by[key(tr, "direct", n)], by[key(tr, "mcp-proxy", n)], by[key(tr, "toolgate", n)]
			if a == nil || x == nil || c == nil {
				continue
			}
			whole := benchkit.Ratio(c.Throughput, x.Throughput)
			thr := benchkit.RoundRatios(c.Rounds, x.Rounds, benchkit.Round.Throughput)
			fmt.Fprintf(tw, "%d\t%.2f\t%s\t%s\t%.2f\t\n", n, whole, thr, benchkit.Ms(added(x.P50, a.P50))+" / "+benchkit.Ms(added(c.P50, a.P50)),
				benchkit.Ratio(c.ProxyCPU, x.ProxyCPU))
			res.Verdicts = append(res.Verdicts, thr.AtLeast(fmt.Sprintf("%-9s %2d clients: throughput toolgate/mcp-proxy", tr, n), 1, fmt.Sprintf("%.2f", whole)))
		}
		tw.Flush()
	}
	fmt.Fprintln(w)
	if res.Config["mcp_proxy"] == "" {
		fmt.Fprintln(w, "mcp-proxy (TBXark): not measured: no -mcp-proxy binary given (make bench: BENCH_MCP_PROXY=/path/to/mcp-proxy)")
	}
	for _, v := range res.Verdicts {
		fmt.Fprintln(w, v)
	}
	fmt.Fprintln(w)
	for _, m := range res.Memory {
		fmt.Fprintf(w, "peak RSS (VmHWM) %-36s %s, threads %s\n", m.Name, m.VmHWM, m.Threads)
	}
	for _, tr := range trs {
		for _, name := range toolgates {
			if sent, lines, ok := res.records(tr, name); ok {
				fmt.Fprintf(w, "records (%s): %s was sent %d calls, tools.jsonl has %d lines\n", tr, name, sent, lines)
			}
		}
	}
}

// worker is one MCP client in the load, and what it measured.
type worker = benchkit.Worker

// minproxyPub is the target name of the minimal proxy on mcp-go as
// published (-minproxy-published).
const minproxyPub = "minproxy-published"

// candidate is the target name of the second toolgate binary (-candidate).
const candidate = "candidate"

// toolgates are the targets that run toolgate, and keep records.
var toolgates = []string{"toolgate", candidate}

// baseline is a minimal proxy, by target name, and the mcp-go it is
// built on.
type baseline struct{ name, lib string }

// baselines are the minimal proxies toolgate's hop is held to, each with
// the mcp-go it is built on.
var baselines = []baseline{
	{"minproxy", "toolgate's patched mcp-go"},
	{minproxyPub, "mcp-go v1.2.1 as published"},
}

// baselineRatios prints, for transport tr, what toolgate's hop costs
// against the minimal proxy base: the latency each adds over direct, and
// the ratios of throughput and proxy CPU, over the whole run and per round
// (median and range), with the verdicts on the medians (added p50
// and p99 <= 1.2, CPU per call <= 1.15).
func baselineRatios(w io.Writer, res *results, tr string, base baseline, ns []int, at func(target string, n int) *point) {
	fmt.Fprintf(w, "\nagainst %s (%s):\n", base.name, base.lib)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "clients\tadded p50 ms min / tg\tratio\tadded p99 ms min / tg\tratio\tadded mean ms min / tg\tratio\tthroughput tg/min\tproxy CPU tg/min\t")
	type perRound struct {
		n, rounds          int
		p50, p99, thr, cpu benchkit.Ratios
	}
	var rounds []perRound
	for _, n := range ns {
		a, b, c := at("direct", n), at(base.name, n), at("toolgate", n)
		if a == nil || b == nil || c == nil {
			continue
		}
		cell := func(pa, pb, pc time.Duration) (string, string) {
			ab, ac := added(pb, pa), added(pc, pa)
			rs := "n/a"
			if r, ok := addedRatio(float64(ac), float64(ab)); ok {
				rs = fmt.Sprintf("%.2f", r)
			}
			return benchkit.Ms(ab) + " / " + benchkit.Ms(ac), rs
		}
		s50, r50 := cell(a.P50, b.P50, c.P50)
		s99, r99 := cell(a.P99, b.P99, c.P99)
		smean, rmean := cell(a.Mean, b.Mean, c.Mean)
		cpu := fmt.Sprintf("%.2f", benchkit.Ratio(c.ProxyCPU, b.ProxyCPU))
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%.2f\t%s\t\n", n, s50, r50, s99, r99, smean, rmean,
			benchkit.Ratio(c.Throughput, b.Throughput), cpu)
		pr := perRound{n: n, rounds: len(c.Rounds),
			p50: addedRatios(a.Rounds, b.Rounds, c.Rounds, benchkit.P50Of),
			p99: addedRatios(a.Rounds, b.Rounds, c.Rounds, benchkit.P99Of),
			thr: benchkit.RoundRatios(c.Rounds, b.Rounds, benchkit.Round.Throughput),
			cpu: benchkit.RoundRatios(c.Rounds, b.Rounds, benchkit.CPUOf),
		}
		rounds = append(rounds, pr)
		what := func(q string) string {
			return fmt.Sprintf("%-9s %2d clients: %s toolgate/%s", tr, n, q, base.name)
		}
		res.Verdicts = append(res.Verdicts,
			pr.p50.AtMost(what("added p50 latency"), 1.2, r50),
			pr.p99.AtMost(what("added p99 latency"), 1.2, r99),
			pr.cpu.AtMost(what("proxy CPU per call"), 1.15, cpu))
	}
	tw.Flush()
	if len(rounds) == 0 {
		return
	}
	fmt.Fprintln(w, "per round (median [lowest-highest] of the client count's rounds):")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "clients\trounds\tadded p50 tg/min\tadded p99 tg/min\tthroughput tg/min\tproxy CPU tg/min\t")
	for _, pr := range rounds {
		fmt.Fprintf(tw, "%d\t%d\t%s\t%s\t%s\t%s\t\n", pr.n, pr.rounds, pr.p50, pr.p99, pr.thr, pr.cpu)
	}
	tw.Flush()
}

// addedRatios is, per round, the latency (of quantile q: benchkit.P50Of,
// P99Of) toolgate adds over direct against what the baseline adds, for the
// rounds where the baseline adds some.
func addedRatios(direct, base, tg []benchkit.Round, q func(benchkit.Round) float64) benchkit.Ratios {
	var out benchkit.Ratios
	for i := range min(len(direct), len(base), len(tg)) {
		if r, ok := addedRatio(q(tg[i])-q(direct[i]), q(base[i])-q(direct[i])); ok {
			out = append(out, r)
		}
	}
	return out
}

// candidateRatios prints, for one transport, the candidate's figures
// against toolgate's, per round (median [lowest-highest]): the proxy CPU
// per call, the latency each adds over direct (p50, p99) and throughput.
// Below 1 the candidate costs less (is faster), except throughput, where
// above 1 it is.
func candidateRatios(w io.Writer, ns []int, at func(target string, n int) *point) {
	fmt.Fprintf(w, "\ncandidate against toolgate, per round (median [lowest-highest]; a before-and-after in one run):\n")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "clients\tproxy CPU µs/call tg / cand\tproxy CPU cand/tg\tadded p50 cand/tg\tadded p99 cand/tg\tthroughput cand/tg\t")
	for _, n := range ns {
		a, tg, c := at("direct", n), at("toolgate", n), at(candidate, n)
		if a == nil || tg == nil || c == nil {
			continue
		}
		fmt.Fprintf(tw, "%d\t%.1f / %.1f\t%s\t%s\t%s\t%s\t\n", n, tg.ProxyCPU, c.ProxyCPU,
			benchkit.RoundRatios(c.Rounds, tg.Rounds, benchkit.CPUOf),
			addedRatios(a.Rounds, tg.Rounds, c.Rounds, benchkit.P50Of),
			addedRatios(a.Rounds, tg.Rounds, c.Rounds, benchkit.P99Of),
			benchkit.RoundRatios(c.Rounds, tg.Rounds, benchkit.Round.Throughput))
	}
	tw.Flush()
}
