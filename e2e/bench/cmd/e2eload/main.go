// Command e2eload is the end-to-end benchmark: toolgate (the real binary,
// recording on as in production) against a bare mcp-go server exposing the
// same echo tool, both over loopback streamable HTTP, both run as
// subprocesses.
//
// For each client count (1, 16, 64 by default) it opens that many MCP
// clients per server (mcp-go's client, one initialize each), warms up, and
// then measures tools/call in a closed loop per client. The measured time is
// cut into rounds (-duration / -slice; with one client -one-client-duration
// / -slice when that is more), each a slice of each server, in rotating
// order, so that a noisy machine affects them alike. It reports
// throughput (calls/s), latency percentiles, server CPU per call (from
// the process's CPU-time clock), the ratios toolgate/bare over the whole run and per
// round, the verdicts on the median of the rounds' ratios (throughput >=
// 0.85, server CPU per call <= 1.2, p99 <= 1.2), the servers' peak RSS
// (VmHWM) and threads, and checks that toolgate wrote exactly one
// tools.jsonl line per call.
//
// With -candidate, a second toolgate binary (a change under test) is
// measured in the same rounds, configured as toolgate is, and the report
// adds its ratios to toolgate's per round (median [lowest-highest]): a
// before-and-after in one run. It has no verdicts; its records are
// checked as toolgate's are.
//
//	e2eload -toolgate bin/toolgate -bare bin/bareserver -clients 1,16,64 -duration 10s [-candidate /path/to/toolgate-new]
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
	"strings"
	"sync"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/toolgate/toolgate/e2e/bench/bare"
	"github.com/toolgate/toolgate/e2e/bench/internal/benchkit"
)

type config struct {
	toolgate, bare string
	candidate      string // a second toolgate binary, measured against -toolgate; empty: none
	clients        []int
	sched          benchkit.Schedule
	warmup         time.Duration
	text           string
	protocol       string
	jsonOut        string
	keep           bool
	logLevel       string
}

func main() {
	var cfg config
	var clients string
	flag.StringVar(&cfg.toolgate, "toolgate", "bin/toolgate", "toolgate binary")
	flag.StringVar(&cfg.bare, "bare", "bin/bareserver", "bare mcp-go server binary (bench/cmd/bareserver)")
	flag.StringVar(&cfg.candidate, "candidate", "", "a second toolgate binary (a change under test), measured against -toolgate in the same rounds (empty: none)")
	flag.StringVar(&clients, "clients", "1,16,64", "comma-separated concurrent client counts")
	cfg.sched.Flags(flag.CommandLine, "server and client count", "servers", 10*time.Second, 2*time.Second)
	flag.DurationVar(&cfg.warmup, "warmup", time.Second, "warm-up per server and client count (not measured)")
	flag.StringVar(&cfg.text, "text", "hello, toolgate", "echo argument")
	flag.StringVar(&cfg.protocol, "protocol", "2025-11-25", "protocol version the clients initialize with (2026-07-28: stateless requests, no session)")
	flag.StringVar(&cfg.jsonOut, "json", "", "also write the results as JSON to this file")
	flag.BoolVar(&cfg.keep, "keep", false, "keep the temporary directory (toolgate's run archive and logs)")
	flag.StringVar(&cfg.logLevel, "log-level", "info", "toolgate's log.level (info is the production default: a log line per failed call; debug adds one per call)")
	flag.Parse()
	var err error
	if cfg.clients, err = benchkit.Counts(clients, 1, 1000); err != nil {
		fatalf("-clients: %v", err)
	}
	if err := cfg.sched.Check(); err != nil {
		fatalf("%v", err)
	}
	if err := run(cfg); err != nil {
		fatalf("%v", err)
	}
}

func fatalf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "e2eload: "+format+"\n", args...)
	os.Exit(1)
}

// server is one server process under test.
type server struct {
	name string
	cmd  *exec.Cmd
	url  string
	dir  string // toolgate's runs directory, if any
	// calls counts every tools/call sent, warm-up included.
	calls int64
}

func startServer(name string, args []string, stderr io.Writer, addr string) (*server, error) {
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdout, cmd.Stderr = stderr, stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	s := &server{name: name, cmd: cmd, url: "http://" + addr + "/mcp"}
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := http.Get("http://" + addr + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return s, nil
			}
		}
		if time.Now().After(deadline) {
			s.stop()
			return nil, fmt.Errorf("%s did not become ready on %s within 20s", name, addr)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// stop ends the server: SIGTERM, then SIGKILL after a grace period.
func (s *server) stop() {
	if s.cmd.Process == nil {
		return
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = s.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
		<-done
	}
}

// point is the measurement of one server at one client count.
type point struct {
	Server     string        `json:"server"`
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
	// ServerCPUPerCall and ClientCPUPerCall are CPU time per call, in µs.
	ServerCPUPerCall float64 `json:"server_cpu_us_per_call"`
	ClientCPUPerCall float64 `json:"client_cpu_us_per_call"`
	// Rounds are the server's slices, one per round, in order (the
	// server's CPU), for the per-round ratios of the verdicts.
	Rounds []benchkit.Round `json:"rounds"`

	lat       []time.Duration
	serverCPU time.Duration
	clientCPU time.Duration
}

func newWorker(ctx context.Context, url string, hc *http.Client, proto string) (*worker, error) {
	c, err := client.NewStreamableHttpClient(url, transport.WithHTTPBasicClient(hc))
	if err != nil {
		return nil, err
	}
	if err := c.Start(ctx); err != nil {
		return nil, err
	}
	if err := bare.Initialize(ctx, c, proto, "e2eload"); err != nil {
		c.Close()
		return nil, err
	}
	return &worker{C: c}, nil
}

// runSlice runs every worker of a server for d and adds the result to p.
func runSlice(s *server, ws []*worker, d time.Duration, text string, p *point) {
	for _, w := range ws {
		w.Reset()
	}
	pid := s.cmd.Process.Pid
	st0, ct0 := benchkit.CPUTime(pid), benchkit.CPUTime(0)
	t0 := time.Now()
	end := t0.Add(d)
	var wg sync.WaitGroup
	for _, w := range ws {
		wg.Go(func() { w.Loop(end, text, p != nil) })
	}
	wg.Wait()
	elapsed := time.Since(t0)
	st1, ct1 := benchkit.CPUTime(pid), benchkit.CPUTime(0)
	for _, w := range ws {
		s.calls += w.N
	}
	if p == nil {
		return
	}
	p.Elapsed += elapsed
	p.serverCPU += st1 - st0
	p.clientCPU += ct1 - ct0
	var calls int64
	var lat []time.Duration
	for _, w := range ws {
		calls += w.N
		p.Errors += w.Err
		if p.FirstError == "" {
			p.FirstError = w.Msg
		}
		lat = append(lat, w.Lat...)
	}
	p.Calls += calls
	p.lat = append(p.lat, lat...)
	p.Rounds = append(p.Rounds, benchkit.NewRound(calls, elapsed, st1-st0, lat))
}

func (p *point) finish() {
	if p.Elapsed > 0 {
		p.Throughput = float64(p.Calls) / p.Elapsed.Seconds()
	}
	p.ServerCPUPerCall, p.ClientCPUPerCall = benchkit.PerCall(p.serverCPU, p.Calls), benchkit.PerCall(p.clientCPU, p.Calls)
	slices.Sort(p.lat)
	pct := func(q float64) time.Duration {
		if len(p.lat) == 0 {
			return 0
		}
		i := int(q*float64(len(p.lat))+0.5) - 1
		return p.lat[min(max(i, 0), len(p.lat)-1)]
	}
	p.P50, p.P90, p.P99, p.Max = pct(0.50), pct(0.90), pct(0.99), pct(1)
	p.lat = nil
}

type results struct {
	Machine  string             `json:"machine"`
	Started  time.Time          `json:"started"`
	Config   map[string]any     `json:"config"`
	LoadAvg  []string           `json:"load_avg"`
	Points   []*point           `json:"points"`
	Servers  map[string]procRes `json:"servers"`
	Records  map[string]int64   `json:"records"`
	Verdicts []string           `json:"verdicts"`
}

type procRes struct {
	VmHWM   string `json:"vm_hwm"`
	VmRSS   string `json:"vm_rss"`
	Threads string `json:"threads"`
	Calls   int64  `json:"calls"`
}

func run(cfg config) error {
	dir, err := os.MkdirTemp("", "toolgate-e2eload-")
	if err != nil {
		return err
	}
	keep := cfg.keep // and set when the records or calls go wrong
	defer benchkit.KeepOrRemove("e2eload", dir, &keep)
	// startTG starts toolgate binary bin as the server name, with a
	// config, a run archive, a memory database and a log of its own.
	startTG := func(name, bin string) (*server, error) {
		confPath, runsDir, err := benchkit.ToolgateConfig(dir, name, cfg.logLevel, "diagnostics:\n  enabled: true\n")
		if err != nil {
			return nil, err
		}
		logf, err := os.Create(filepath.Join(dir, name+".stderr"))
		if err != nil {
			return nil, err
		}
		addr, err := benchkit.FreeAddr()
		if err != nil {
			logf.Close()
			return nil, err
		}
		s, err := startServer(name, []string{bin, "serve", "--http", addr, "--config", confPath}, logf, addr)
		// The child has its own copy of the log's descriptor.
		logf.Close()
		if err != nil {
			return nil, err
		}
		s.dir = runsDir
		return s, nil
	}
	tg, err := startTG("toolgate", cfg.toolgate)
	if err != nil {
		return err
	}
	defer tg.stop()
	bareLog, err := os.Create(filepath.Join(dir, "bare.stderr"))
	if err != nil {
		return err
	}
	defer bareLog.Close()
	bareAddr, err := benchkit.FreeAddr()
	if err != nil {
		return err
	}
	bare, err := startServer("bare", []string{cfg.bare, "-addr", bareAddr}, bareLog, bareAddr)
	if err != nil {
		return err
	}
	defer bare.stop()
	servers := []*server{tg, bare}
	tgs := []*server{tg}
	if cfg.candidate != "" {
		cand, err := startTG(candidate, cfg.candidate)
		if err != nil {
			return err
		}
		defer cand.stop()
		servers = append(servers, cand)
		tgs = append(tgs, cand)
	}

	res := &results{Started: time.Now().UTC(), Servers: map[string]procRes{}, Records: map[string]int64{}}
	res.Machine = benchkit.Machine()
	res.Config = map[string]any{"clients": cfg.clients, "duration": cfg.sched.Duration.String(), "one_client_duration": cfg.sched.OneClient.String(), "slice": cfg.sched.Slice.String(),
		"warmup": cfg.warmup.String(), "protocol": cfg.protocol, "toolgate_log_level": cfg.logLevel}
	res.LoadAvg = append(res.LoadAvg, "start: "+benchkit.LoadAvg())
	fmt.Fprintf(os.Stderr, "e2eload: %s; load average %s\n", res.Machine, benchkit.LoadAvg())

	hc := &http.Client{Transport: &http.Transport{
		Proxy:               nil,
		MaxIdleConns:        2048,
		MaxIdleConnsPerHost: 1024,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
	}}
	defer hc.CloseIdleConnections()

	for _, n := range cfg.clients {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		ws := map[*server][]*worker{}
		for _, s := range servers {
			for range n {
				w, err := newWorker(ctx, s.url, hc, cfg.protocol)
				if err != nil {
					cancel()
					return fmt.Errorf("%s: client %d: %w", s.name, len(ws[s]), err)
				}
				ws[s] = append(ws[s], w)
			}
		}
		cancel()
		pts := map[*server]*point{}
		for _, s := range servers {
			pts[s] = &point{Server: s.name, Clients: n}
			runSlice(s, ws[s], cfg.warmup, cfg.text, nil)
		}
		for r := range cfg.sched.Rounds(n) {
			// Each round starts with the next server.
			for i := range servers {
				s := servers[(i+r)%len(servers)]
				runSlice(s, ws[s], cfg.sched.Slice, cfg.text, pts[s])
			}
		}
		for _, s := range servers {
			for _, w := range ws[s] {
				w.C.Close()
			}
			p := pts[s]
			p.finish()
			res.Points = append(res.Points, p)
			fmt.Fprintf(os.Stderr, "e2eload: %-8s %3d clients: %8.0f calls/s  p50 %v  p99 %v  server CPU %.1f µs/call  errors %d\n",
				s.name, n, p.Throughput, p.P50.Round(time.Microsecond), p.P99.Round(time.Microsecond), p.ServerCPUPerCall, p.Errors)
		}
	}
	res.LoadAvg = append(res.LoadAvg, "end: "+benchkit.LoadAvg())

	for _, s := range servers {
		st := benchkit.Status(s.cmd.Process.Pid)
		res.Servers[s.name] = procRes{VmHWM: st["VmHWM"], VmRSS: st["VmRSS"], Threads: st["Threads"], Calls: s.calls}
	}
	// toolgate writes a call's records before it answers, so the lines are
	// all there now.
	for _, s := range tgs {
		res.Records[s.name+"_calls_sent"] = s.calls
		res.Records[s.name+"_tools_jsonl_lines"] = benchkit.CountLines(filepath.Join(s.dir, "*", "logs", "tools.jsonl"))
		res.Records[s.name+"_errors_jsonl_lines"] = benchkit.CountLines(filepath.Join(s.dir, "*", "logs", "errors.jsonl"))
	}

	report(os.Stdout, res)
	if cfg.jsonOut != "" {
		b, _ := json.MarshalIndent(res, "", "  ")
		if err := os.WriteFile(cfg.jsonOut, append(b, '\n'), 0o644); err != nil {
			return err
		}
	}
	for _, s := range tgs {
		if lines := res.Records[s.name+"_tools_jsonl_lines"]; lines != s.calls {
			// A call that failed at the client (the connection closed, say)
			// may never have reached toolgate: say how many did.
			var failed int64
			for _, p := range res.Points {
				if p.Server == s.name {
					failed += p.Errors
				}
			}
			keep = true
			return fmt.Errorf("%s was sent %d calls (%d of them failed at the client while measured) and its tools.jsonl has %d lines", s.name, s.calls, failed, lines)
		}
	}
	for _, p := range res.Points {
		if p.Errors > 0 {
			keep = true
			return fmt.Errorf("%s with %d clients: %d errors, first: %s", p.Server, p.Clients, p.Errors, p.FirstError)
		}
	}
	return nil
}

func report(w io.Writer, res *results) {
	fmt.Fprintf(w, "End-to-end, loopback streamable HTTP, echo tool (%s; load average %s)\n\n", res.Machine, strings.Join(res.LoadAvg, ", "))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "clients\tserver\tcalls/s\tp50 ms\tp90 ms\tp99 ms\tmax ms\tsrv CPU µs/call\tcli CPU µs/call\terrors\t")
	byKey := map[string]*point{}
	for _, p := range res.Points {
		byKey[fmt.Sprintf("%s/%d", p.Server, p.Clients)] = p
	}
	var clients []int
	for _, p := range res.Points {
		if !slices.Contains(clients, p.Clients) {
			clients = append(clients, p.Clients)
		}
	}
	type perRound struct {
		n             int
		thr, cpu, p99 benchkit.Ratios
	}
	var rounds []perRound
	for _, n := range clients {
		tg, bare := byKey[fmt.Sprintf("toolgate/%d", n)], byKey[fmt.Sprintf("bare/%d", n)]
		for _, p := range []*point{tg, bare, byKey[fmt.Sprintf("%s/%d", candidate, n)]} {
			if p == nil {
				continue
			}
			fmt.Fprintf(tw, "%d\t%s\t%.0f\t%s\t%s\t%s\t%s\t%.1f\t%.1f\t%d\t\n", p.Clients, p.Server, p.Throughput,
				benchkit.Ms(p.P50), benchkit.Ms(p.P90), benchkit.Ms(p.P99), benchkit.Ms(p.Max), p.ServerCPUPerCall, p.ClientCPUPerCall, p.Errors)
		}
		fmt.Fprintf(tw, "%d\ttoolgate/bare\t%.2f\t%.2f\t%.2f\t%.2f\t\t%.2f\t\t\t\n", n, tg.Throughput/bare.Throughput,
			ratio(tg.P50, bare.P50), ratio(tg.P90, bare.P90), ratio(tg.P99, bare.P99), tg.ServerCPUPerCall/bare.ServerCPUPerCall)
		r := perRound{n: n,
			thr: benchkit.RoundRatios(tg.Rounds, bare.Rounds, benchkit.Round.Throughput),
			cpu: benchkit.RoundRatios(tg.Rounds, bare.Rounds, benchkit.CPUOf),
			p99: benchkit.RoundRatios(tg.Rounds, bare.Rounds, benchkit.P99Of),
		}
		rounds = append(rounds, r)
		res.Verdicts = append(res.Verdicts,
			r.thr.AtLeast(fmt.Sprintf("%2d clients: throughput ratio", n), 0.85, fmt.Sprintf("%.2f", tg.Throughput/bare.Throughput)),
			r.cpu.AtMost(fmt.Sprintf("%2d clients: server CPU per call ratio", n), 1.2, fmt.Sprintf("%.2f", tg.ServerCPUPerCall/bare.ServerCPUPerCall)),
			r.p99.AtMost(fmt.Sprintf("%2d clients: p99 ratio", n), 1.2, fmt.Sprintf("%.2f", ratio(tg.P99, bare.P99))))
	}
	tw.Flush()
	if len(rounds) > 0 {
		fmt.Fprintln(w, "\ntoolgate/bare per round (median [lowest-highest] of the client count's rounds):")
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "clients\trounds\tthroughput\tserver CPU per call\tp99\t")
		for _, r := range rounds {
			fmt.Fprintf(tw, "%d\t%d\t%s\t%s\t%s\t\n", r.n, len(r.cpu), r.thr, r.cpu, r.p99)
		}
		tw.Flush()
	}
	if byKey[fmt.Sprintf("%s/%d", candidate, clients[0])] != nil {
		fmt.Fprintf(w, "\ncandidate against toolgate, per round (median [lowest-highest]; a before-and-after in one run):\n")
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "clients\tsrv CPU µs/call tg / cand\tserver CPU cand/tg\tp50 cand/tg\tp99 cand/tg\tthroughput cand/tg\t")
		for _, n := range clients {
			tg, c := byKey[fmt.Sprintf("toolgate/%d", n)], byKey[fmt.Sprintf("%s/%d", candidate, n)]
			fmt.Fprintf(tw, "%d\t%.1f / %.1f\t%s\t%s\t%s\t%s\t\n", n, tg.ServerCPUPerCall, c.ServerCPUPerCall,
				benchkit.RoundRatios(c.Rounds, tg.Rounds, benchkit.CPUOf),
				benchkit.RoundRatios(c.Rounds, tg.Rounds, benchkit.P50Of),
				benchkit.RoundRatios(c.Rounds, tg.Rounds, benchkit.P99Of),
				benchkit.RoundRatios(c.Rounds, tg.Rounds, benchkit.Round.Throughput))
		}
		tw.Flush()
	}
	fmt.Fprintln(w)
	for _, v := range res.Verdicts {
		fmt.Fprintln(w, v)
	}
	fmt.Fprintln(w)
	for _, name := range []string{"toolgate", "bare", candidate} {
		s, ok := res.Servers[name]
		if !ok {
			continue
		}
		fmt.Fprintf(w, "%-9s peak RSS (VmHWM) %s, RSS at end %s, threads %s, calls %d\n", name, s.VmHWM, s.VmRSS, s.Threads, s.Calls)
	}
	for _, name := range []string{"toolgate", candidate} {
		if sent, ok := res.Records[name+"_calls_sent"]; ok {
			fmt.Fprintf(w, "records: %s was sent %d calls, tools.jsonl has %d lines, errors.jsonl %d\n",
				name, sent, res.Records[name+"_tools_jsonl_lines"], res.Records[name+"_errors_jsonl_lines"])
		}
	}
}

// candidate is the server name of the second toolgate binary (-candidate).
const candidate = "candidate"

func ratio(a, b time.Duration) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

// worker is one MCP client in the load, and what it measured.
type worker = benchkit.Worker
