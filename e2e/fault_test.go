package e2e

// Faults: SIGTERM during load, an upstream killed repeatedly during load,
// kill -9 of toolgate during a stream of write_file calls, and an
// unwritable or full run directory.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestFaultSIGTERMDuringLoad: 200 sleep calls in flight (half finish
// within the grace period, half do not) and a stream of new echo calls
// arriving when SIGTERM comes. Every call that started has its
// tool.started, its end event and its tools.jsonl line; calls arriving
// after the signal are refused (recorded as unavailable, or refused at the
// HTTP layer); the process exits within shutdown_grace plus a margin.
func TestFaultSIGTERMDuringLoad(t *testing.T) {
	t.Parallel()
	const grace = 3 * time.Second
	e := newEnv(t, set("log.level", "info"), set("limits.shutdown_grace", grace.String()))
	s := e.StartHTTP(t)
	lc := connectLoad(t, s, 10, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	inflight := newLedger()
	var wg sync.WaitGroup
	for i := range 200 {
		ms := 1000 // ends within the grace period
		if i%2 == 1 {
			ms = 60000 // cancelled when it ends
		}
		cs := lc.sessions[i%len(lc.sessions)]
		wg.Go(func() {
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "sleep", Arguments: map[string]any{"ms": ms, "steps": 1}})
			inflight.add(fmt.Sprintf("sleep %d", ms), res, err)
		})
	}
	if !waitFor(30*time.Second, func() bool { return countEvents(e.liveEvents(t), "tool.started", "sleep") == 200 }) {
		t.Fatalf("the 200 calls did not start: %d started", countEvents(e.liveEvents(t), "tool.started", "sleep"))
	}

	// New calls keep arriving, every 5 ms, before and after the signal,
	// until the process has exited (at most 4,000 calls).
	arrivals := newLedger()
	var signalled atomic.Bool
	var afterSignal, afterExit atomic.Int64
	stopArrivals := make(chan struct{})
	arrivalsDone := make(chan struct{})
	go func() {
		defer close(arrivalsDone)
		var awg sync.WaitGroup
		defer awg.Wait()
		for i := range 4000 {
			select {
			case <-stopArrivals:
				return
			case <-time.After(5 * time.Millisecond):
			}
			if signalled.Load() {
				afterSignal.Add(1)
			}
			if s.Exited() {
				afterExit.Add(1)
			}
			cs := lc.sessions[i%len(lc.sessions)]
			awg.Go(func() {
				cctx, ccancel := context.WithTimeout(ctx, 20*time.Second)
				defer ccancel()
				res, err := cs.CallTool(cctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "arrival " + strconv.Itoa(i)}})
				arrivals.add("echo", res, err)
			})
		}
	}()
	time.Sleep(300 * time.Millisecond) // arrivals flow before the signal
	signalled.Store(true)
	took := s.Stop(t)                  // SIGTERM; asserts exit code 0 within grace + 5 s and a clean stderr
	time.Sleep(300 * time.Millisecond) // a few arrivals after the exit too
	close(stopArrivals)
	<-arrivalsDone
	wg.Wait()

	a := e.Archive(t)
	ix := indexArchive(a)

	// Nothing that started is missing its end.
	var unended []string
	for id, n := range ix.started {
		if n != 1 || ix.finished[id] != 1 || ix.tools[id] != 1 {
			unended = append(unended, fmt.Sprintf("%s: %d tool.started, %d end events, %d tools.jsonl lines", id, n, ix.finished[id], ix.tools[id]))
		}
	}
	for id := range ix.tools {
		if ix.started[id] == 0 {
			unended = append(unended, id+": a tools.jsonl line without tool.started")
		}
	}
	sort.Strings(unended)
	if len(unended) > 0 {
		t.Errorf("%d calls in the record are incomplete, e.g.:\n%s", len(unended), strings.Join(unended[:min(10, len(unended))], "\n"))
	}
	if n := len(a.Events); n == 0 || a.Events[n-1]["type"] != "run.stopped" {
		t.Errorf("events.jsonl does not end with run.stopped")
	}
	if strings.Contains(s.Stderr(), "run archive write failed") {
		t.Errorf("records were lost at shutdown:\n%s", grepLines(s.Stderr(), "run archive write failed", 5))
	}

	// The 200 calls in flight: each has a result and its records; the
	// short ones completed, the long ones were cancelled.
	inflight.checkClean(t, true)
	checkOneRecordPerCall(t, a, inflight, false)
	var shortOK, longCancelled, other int
	inflight.mu.Lock()
	for id, tool := range inflight.ids {
		switch {
		case tool == "sleep 1000" && ix.status[id] == "ok" && inflight.isError[id] == "":
			shortOK++
		case tool == "sleep 60000" && ix.status[id] == "cancelled" && inflight.kinds[id] == "cancelled":
			longCancelled++
		default:
			other++
			if other <= 5 {
				t.Errorf("%s call %s: recorded %q, result kind %q (%s)", tool, id, ix.status[id], inflight.kinds[id], tail(inflight.isError[id], 200))
			}
		}
	}
	inflightResults := len(inflight.ids)
	inflight.mu.Unlock()
	if shortOK != 100 || longCancelled != 100 {
		t.Errorf("of the 200 calls in flight: %d short ones ok (want 100), %d long ones cancelled (want 100), %d otherwise, %d got no result",
			shortOK, longCancelled, other, 200-inflightResults)
	}

	// The arrivals: each that got a result has its records; those after
	// the signal were refused.
	checkOneRecordPerCall(t, a, arrivals, false)
	arrivals.mu.Lock()
	var ok, refused int
	var weird []string
	for id := range arrivals.ids {
		switch k := arrivals.kinds[id]; {
		case arrivals.isError[id] == "" && ix.status[id] == "ok":
			ok++
		case k == "unavailable" && ix.status[id] == "unavailable" && strings.Contains(arrivals.isError[id], "shutting down"):
			refused++
		default:
			weird = append(weird, fmt.Sprintf("%s: kind %q recorded %q: %s", id, k, ix.status[id], tail(arrivals.isError[id], 200)))
		}
	}
	protoErrs := len(arrivals.protoErrs)
	var sampleErr string
	if protoErrs > 0 {
		sampleErr = arrivals.protoErrs[len(arrivals.protoErrs)-1]
	}
	arrivals.mu.Unlock()
	if len(weird) > 0 {
		t.Errorf("%d arrivals ended neither ok nor refused as shutting down, e.g. %s", len(weird), strings.Join(weird[:min(3, len(weird))], "; "))
	}
	if refused+protoErrs == 0 {
		t.Errorf("no call arriving after the signal was refused (%d arrivals after it)", afterSignal.Load())
	}
	t.Logf("exited %s after SIGTERM (grace %s)", took.Round(time.Millisecond), grace)
	t.Logf("in flight: %d short ok, %d long cancelled; arrivals: %d ok, %d refused with a recorded unavailable result, %d refused at the HTTP layer or connection (e.g. %s); %d arrivals sent after the signal, %d after the exit",
		shortOK, longCancelled, ok, refused, protoErrs, tail(sampleErr, 160), afterSignal.Load(), afterExit.Load())
}

// grepLines returns up to n lines of s that contain sub.
func grepLines(s, sub string, n int) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
			if len(out) == n {
				break
			}
		}
	}
	return strings.Join(out, "\n")
}

// TestFaultUpstreamKilled: the inner toolgate (a stdio upstream of the
// outer) is killed with SIGKILL five times while 100 calls/s flow through
// the outer. Affected calls get a clear error result (unavailable, naming
// the upstream), calls succeed again after each restart, and no inner
// process is left once the outer has stopped.
func TestFaultUpstreamKilled(t *testing.T) {
	t.Parallel()
	const kills = 5
	inner := newInner(t)
	e := newEnv(t, set("log.level", "info"), inner.upstreamOpt(64))
	s := e.StartHTTP(t)
	lc := connectLoad(t, s, 4, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()

	l := newLedger()
	var okCount atomic.Int64
	stop := make(chan struct{})
	trafficDone := make(chan struct{})
	go func() { // 100 calls/s, at most 4 minutes' worth
		defer close(trafficDone)
		var wg sync.WaitGroup
		defer wg.Wait()
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for i := range 24000 {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			tool, args := "inner__echo", map[string]any{"text": "through " + strconv.Itoa(i)}
			if i%2 == 1 {
				tool, args = "inner__sleep", map[string]any{"ms": 200, "steps": 1} // in flight when the kill comes
			}
			cs := lc.sessions[i%len(lc.sessions)]
			wg.Go(func() {
				cctx, ccancel := context.WithTimeout(ctx, 60*time.Second)
				defer ccancel()
				res, err := cs.CallTool(cctx, &mcp.CallToolParams{Name: tool, Arguments: args})
				l.add(tool, res, err)
				if err == nil && !res.IsError {
					okCount.Add(1)
				}
			})
		}
	}()

	// recovered waits until a live inner process serves calls again:
	// at least 20 calls succeeded since `since`.
	recovered := func(since int64) (runManifest, bool) {
		var cur runManifest
		ok := waitFor(60*time.Second, func() bool {
			runs := inner.runs(t)
			if len(runs) == 0 {
				return false
			}
			cur = runs[len(runs)-1]
			return processAlive(cur.PID) && okCount.Load() >= since+20
		})
		return cur, ok
	}
	var pids []int
	var killedAt []int64 // okCount at each kill
	for k := range kills {
		cur, ok := recovered(okCount.Load())
		if !ok {
			t.Fatalf("before kill %d: calls did not succeed again within 60s (inner runs %+v)\nstderr:\n%s", k+1, inner.runs(t), tail(s.Stderr(), 4000))
		}
		if len(pids) > 0 && cur.PID == pids[len(pids)-1] {
			t.Fatalf("kill %d: the inner toolgate was not restarted (pid %d still the newest)", k+1, cur.PID)
		}
		if err := syscall.Kill(cur.PID, syscall.SIGKILL); err != nil {
			t.Fatalf("kill -9 %d: %v", cur.PID, err)
		}
		pids = append(pids, cur.PID)
		killedAt = append(killedAt, okCount.Load())
	}
	last, ok := recovered(okCount.Load())
	if !ok {
		t.Fatalf("after the last kill, calls did not succeed again within 60s\nstderr:\n%s", tail(s.Stderr(), 4000))
	}
	pids = append(pids, last.PID)
	close(stop)
	<-trafficDone

	// Every result is a success or a clear error naming the upstream.
	l.checkClean(t, true)
	l.mu.Lock()
	kinds := map[string]int{}
	var unclear []string
	for id, txt := range l.isError {
		k := l.kinds[id]
		kinds[k]++
		if (k != "unavailable" && k != "runtime_error") || !strings.Contains(txt, `"inner"`) {
			unclear = append(unclear, fmt.Sprintf("%s (%s): kind %q: %s", id, l.ids[id], k, tail(txt, 240)))
		}
	}
	total, failed := len(l.ids), len(l.isError)
	var sample string
	for _, txt := range l.isError {
		sample = txt
		break
	}
	l.mu.Unlock()
	if len(unclear) > 0 {
		sort.Strings(unclear)
		t.Errorf("%d error results are not a clear unavailable/runtime error naming upstream \"inner\", e.g.:\n%s", len(unclear), strings.Join(unclear[:min(5, len(unclear))], "\n"))
	}
	if failed == 0 {
		t.Errorf("no call failed across %d kills of the upstream; the kills did not take effect", kills)
	}

	s.Stop(t)
	checkOneRecordPerCall(t, e.Archive(t), l, true)
	// The sessions are of both eras: an inner process per era's
	// connection (adapters/upstream/modern.go), and one more for each
	// kill (the supervisor restarts the main one; the next 2026-07-28
	// call reopens the other).
	if runs := inner.runs(t); len(runs) != kills+2 {
		t.Errorf("the inner toolgate ran %d times, want %d (one start per era and %d replacements)", len(runs), kills+2, kills)
	}
	if !waitFor(10*time.Second, func() bool { return len(processesWithArg(inner.Env.ConfigPath)) == 0 }) {
		t.Errorf("inner toolgate processes left after the outer stopped:\n%s", strings.Join(processesWithArg(inner.Env.ConfigPath), "\n"))
	}
	for _, pid := range pids {
		if processAlive(pid) {
			t.Errorf("inner pid %d is still alive", pid)
		}
	}
	t.Logf("%d calls through the outer across %d kills of the inner (pids %v): %d ok, %d error results by kind %v", total, kills, pids, total-failed, failed, kinds)
	t.Logf("successful calls counted at each kill: %v", killedAt)
	t.Logf("an error result: %s", tail(sample, 300))
}

// TestFaultKill9DuringWrites: toolgate is killed with SIGKILL while four
// clients stream write_file calls to the same file, each writing 64 KiB of
// one repeated byte. Afterwards the file is whole: exactly one of the
// contents written, never a mix or a truncation. Five rounds. Temp files
// left by killed writes are reported, not failed.
func TestFaultKill9DuringWrites(t *testing.T) {
	t.Parallel()
	const size = 64 << 10
	const rounds = 5
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	e := newEnv(t, set("log.level", "info"))
	target := filepath.Join(e.Sandbox, "target.txt")
	issued := map[byte]bool{}
	var strays []string
	for round := range rounds {
		s := e.StartHTTP(t)
		lc := connectLoad(t, s, 4, nil)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		var done atomic.Int64
		var seq atomic.Int64
		var mu sync.Mutex
		var wg sync.WaitGroup
		for w := range 4 {
			cs := lc.sessions[w]
			wg.Go(func() {
				for range 500 {
					k := seq.Add(1)
					c := alphabet[int(k)%len(alphabet)]
					mu.Lock()
					issued[c] = true
					mu.Unlock()
					res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "write_file", Arguments: map[string]any{
						"path": "target.txt", "content": strings.Repeat(string(c), size)}})
					if err != nil {
						return // the gateway is gone
					}
					if res.IsError {
						t.Errorf("round %d: write_file: %s", round, textOf(res))
						return
					}
					done.Add(1)
				}
			})
		}
		// Kill after at least 10 writes, at a random moment, with four
		// writes in flight.
		if !waitFor(30*time.Second, func() bool { return done.Load() >= 10 }) {
			t.Fatalf("round %d: writes did not complete", round)
		}
		time.Sleep(time.Duration(rand.IntN(40)) * time.Millisecond)
		if err := s.cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		if s.Wait(10 * time.Second); !s.Exited() {
			t.Fatalf("round %d: toolgate did not die after SIGKILL", round)
		}
		wg.Wait()
		cancel()
		lc.Close()

		data, err := os.ReadFile(target)
		if err != nil {
			t.Fatalf("round %d: after kill -9: %v", round, err)
		}
		if len(data) != size || len(bytes.Trim(data, string(data[:1]))) != 0 || !issued[data[0]] {
			first := byte(0)
			if len(data) > 0 {
				first = data[0]
			}
			t.Errorf("round %d: after kill -9 %s holds %d bytes starting with %q: not one whole content written (%d bytes of one byte)",
				round, target, len(data), first, size)
		}
		t.Logf("round %d: killed after %d writes completed; target holds 64 KiB of %q", round, done.Load(), data[:1])
	}
	// Every run's records are whole lines (nothing buffered, no torn line).
	runDirs, _ := os.ReadDir(e.RunsDir)
	if len(runDirs) != rounds {
		t.Errorf("%d run directories, want %d", len(runDirs), rounds)
	}
	for _, rd := range runDirs {
		dir := filepath.Join(e.RunsDir, rd.Name())
		for _, f := range []string{"events.jsonl", "logs/tools.jsonl", "logs/errors.jsonl"} {
			readJSONL[map[string]any](t, filepath.Join(dir, f), true)
		}
	}
	ents, _ := os.ReadDir(e.Sandbox)
	for _, en := range ents {
		if en.Name() != "target.txt" {
			strays = append(strays, en.Name())
		}
	}
	if len(strays) > 0 {
		t.Logf("stray files left in the sandbox after %d kills (temp files of killed writes; the target is intact): %d: %v", rounds, len(strays), strays)
	} else {
		t.Logf("no stray temp files in the sandbox")
	}
}

// serveExpectFail runs `toolgate serve --http` and expects it to exit at
// start-up with code 1 or 2 and a message containing each of want.
func serveExpectFail(t *testing.T, e *Env, want ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := e.command(ctx, "serve", "--http", "127.0.0.1:"+strconv.Itoa(freePort(t)))
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("toolgate serve did not exit at start-up: it is serving with runs_dir %s\n%s", e.RunsDir, out)
	}
	code := cmd.ProcessState.ExitCode()
	if code != 1 && code != 2 {
		t.Errorf("exit code %d (%v), want 1 or 2\n%s", code, err, out)
	}
	for _, w := range want {
		if !strings.Contains(string(out), w) {
			t.Errorf("the message does not name %q:\n%s", w, out)
		}
	}
	if strings.Contains(string(out), "panic") {
		t.Errorf("panic:\n%s", out)
	}
	t.Logf("exit %d: %s", code, strings.TrimSpace(string(out)))
	return string(out)
}

// mountTmpfs mounts a tmpfs of the given options at dir (root only) and
// unmounts it in Cleanup; it skips the test when that is not possible.
func mountTmpfs(t *testing.T, dir, opts string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("mounting a tmpfs needs root")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("mount", "-t", "tmpfs", "-o", opts, "tmpfs", dir).CombinedOutput()
	if err != nil {
		t.Skipf("mount -t tmpfs -o %s: %v: %s", opts, err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", dir, err, out)
		}
	})
}

// fillDisk writes a file in dir until the file system is full and returns
// its path.
func fillDisk(t *testing.T, dir string) string {
	t.Helper()
	p := filepath.Join(dir, "filler")
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := bytes.Repeat([]byte{'x'}, 512)
	for range 1 << 16 { // at most 32 MiB
		if _, err := f.Write(buf); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("filling %s: %v", dir, err)
			}
			break
		}
	}
	// Single bytes, to fill the last page too.
	for range 4096 {
		if _, err := f.Write([]byte{'x'}); err != nil {
			break
		}
	}
	return p
}

// TestFaultRunDirUnwritable: an unwritable runs_dir stops `toolgate serve`
// at start-up with exit 1 or 2 and a message naming the directory, as does
// a full disk; a disk that fills during a run shows in /healthz
// (write_errors) and in the log.
func TestFaultRunDirUnwritable(t *testing.T) {
	t.Parallel()
	t.Run("under a regular file", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		file := filepath.Join(dir, "a-file")
		if err := os.WriteFile(file, []byte("not a directory\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		runs := filepath.Join(file, "runs")
		e := newEnv(t, set("runs_dir", runs))
		e.RunsDir = runs
		serveExpectFail(t, e, runs)
	})
	t.Run("read-only", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		ro := filepath.Join(dir, "ro")
		if os.Geteuid() == 0 {
			mountTmpfs(t, ro, "ro,size=100k") // root ignores permission bits
		} else {
			if err := os.Mkdir(ro, 0o555); err != nil {
				t.Fatal(err)
			}
		}
		runs := filepath.Join(ro, "runs")
		e := newEnv(t, set("runs_dir", runs))
		e.RunsDir = runs
		serveExpectFail(t, e, runs)
	})
	t.Run("full disk at start-up", func(t *testing.T) {
		t.Parallel()
		dir := filepath.Join(t.TempDir(), "full")
		mountTmpfs(t, dir, "size=100k")
		fillDisk(t, dir)
		runs := filepath.Join(dir, "runs")
		e := newEnv(t, set("runs_dir", runs))
		e.RunsDir = runs
		out := serveExpectFail(t, e, runs)
		if !strings.Contains(out, "no space left on device") && !strings.Contains(out, "full disk") {
			t.Errorf("the message does not say the disk is full:\n%s", out)
		}
	})
	t.Run("disk fills during a run", func(t *testing.T) {
		t.Parallel()
		dir := filepath.Join(t.TempDir(), "small")
		mountTmpfs(t, dir, "size=256k")
		runs := filepath.Join(dir, "runs")
		e := newEnv(t, set("runs_dir", runs), set("log.level", "info"))
		e.RunsDir = runs
		s := e.StartHTTP(t)
		cs := s.Connect(t, era2025, nil)
		refused := 0
		echo := func(n int, tag string, wantOK bool) []string {
			var ids []string
			for i := range n {
				res := call(t, cs, "echo", map[string]any{"text": fmt.Sprintf("%s %d %s", tag, i, strings.Repeat("y", 100))})
				switch {
				case wantOK && res.IsError:
					t.Errorf("echo (%s): %s", tag, textOf(res))
				case !wantOK && res.IsError && !strings.Contains(textOf(res), "cannot be recorded"):
					t.Errorf("echo (%s) on a full disk: %s; want success or a refusal as unrecordable", tag, textOf(res))
				case !wantOK && res.IsError:
					refused++
				}
				ids = append(ids, callIDOf(res))
			}
			return ids
		}
		before := echo(5, "before", true)
		filler := fillDisk(t, dir)
		during := echo(20, "during", false)
		// A call whose start cannot be recorded is refused, not run
		// unrecorded (the first ones may still fit in the last free bytes).
		if refused == 0 {
			t.Errorf("no call was refused while the disk was full")
		}
		// /healthz says the replica cannot serve calls (503, for a load
		// balancer's check), and why.
		code, hb := healthz(t, s)
		health := hb.Details
		we, _ := health["write_errors"].(float64)
		if we == 0 {
			t.Errorf("/healthz write_errors is %v after 20 calls on a full disk; the loss is silent (details %v)", health["write_errors"], health)
		}
		if code != http.StatusServiceUnavailable || hb.Status != "unavailable" || !strings.Contains(hb.Reason, "no space left on device") {
			t.Errorf("/healthz on a full disk: %d %q %q; want 503, unavailable, and why", code, hb.Status, hb.Reason)
		}
		// The failures are logged, once in a while with their count, not
		// once per line (20 calls wrote 40 or more).
		if !strings.Contains(s.Stderr(), "run archive write failed") || !strings.Contains(s.Stderr(), "no space left on device") {
			t.Errorf("the log does not show the failed writes:\n%s", tail(s.Stderr(), 3000))
		}
		if n := strings.Count(s.Stderr(), "run archive write failed"); n > 3 {
			t.Errorf("%d lines logged for the failed writes, want them bounded:\n%s", n, tail(s.Stderr(), 3000))
		}
		// Space comes back: the calls after it are recorded, and the
		// record is still JSON Lines (a write cut by the full disk must not
		// leave half a line that swallows the next).
		if err := os.Remove(filler); err != nil {
			t.Fatal(err)
		}
		// /healthz finds out by itself (its own write, at most once a
		// second): a replica out of rotation gets no calls to write.
		if !waitFor(10*time.Second, func() bool { code, _ := healthz(t, s); return code == http.StatusOK }) {
			t.Errorf("/healthz did not answer 200 once the disk had room")
		}
		after := echo(5, "after", true)
		s.Stop(t)
		a := e.Archive(t) // strict: every line whole
		resumed := false
		for _, ev := range a.Events {
			resumed = resumed || ev["type"] == "records.resumed"
		}
		if !resumed {
			t.Errorf("no records.resumed event after the disk had room again")
		}
		recs := a.toolsByCallID(t)
		for _, id := range append(before, after...) {
			if _, ok := recs[id]; !ok {
				t.Errorf("call %s (made while the disk had space) has no tools.jsonl line", id)
			}
		}
		lost := 0
		for _, id := range during {
			if _, ok := recs[id]; !ok {
				lost++
			}
		}
		t.Logf("disk full: /healthz write_errors=%v; %d of %d calls made while full were refused as unrecordable, %d have no tools.jsonl line; run.stopped write_errors=%v",
			health["write_errors"], refused, len(during), lost, lastEvent(a)["write_errors"])
	})
}

// healthDetails reads /healthz and returns its details.
func healthDetails(t *testing.T, s *Server) map[string]any {
	t.Helper()
	code, body := healthz(t, s)
	if code != http.StatusOK {
		t.Fatalf("/healthz: %d %+v", code, body)
	}
	// What there is none of is left out or empty, never null (a reload
	// before any happened was "last_reload": null).
	for k, v := range body.Details {
		if v == nil {
			t.Errorf("/healthz details: %q is null", k)
		}
	}
	return body.Details
}

// healthBody is what /healthz answers.
type healthBody struct {
	Status  string         `json:"status"`
	Reason  string         `json:"reason"`
	Details map[string]any `json:"details"`
}

// healthz reads /healthz: its status code and body.
func healthz(t *testing.T, s *Server) (int, healthBody) {
	t.Helper()
	resp, err := httpClient.Get(s.Base + "/healthz")
	if err != nil {
		t.Fatalf("/healthz: %v", err)
	}
	defer resp.Body.Close()
	var body healthBody
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatalf("/healthz: %d %v", resp.StatusCode, err)
	}
	return resp.StatusCode, body
}

func lastEvent(a *Archive) map[string]any {
	if len(a.Events) == 0 {
		return nil
	}
	return a.Events[len(a.Events)-1]
}
