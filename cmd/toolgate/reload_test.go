package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/spf13/pflag"
	"github.com/toolgate/toolgate/cmd/toolgate/internal/config"
	"github.com/toolgate/toolgate/gateway"
	"github.com/toolgate/toolgate/toolsets/discovery"
)

func TestDebounce(t *testing.T) {
	tests := []struct {
		name   string
		events []time.Duration // when each event arrives, from the start
		want   []time.Duration // when f is called
	}{
		{"one event", []time.Duration{0}, []time.Duration{300 * time.Millisecond}},
		{"a burst is one call", []time.Duration{0, 100 * time.Millisecond, 250 * time.Millisecond}, []time.Duration{550 * time.Millisecond}},
		{"two bursts are two calls", []time.Duration{0, 50 * time.Millisecond, time.Second}, []time.Duration{350 * time.Millisecond, 1300 * time.Millisecond}},
		{"no event, no call", nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				start := time.Now()
				events := make(chan struct{})
				var calls []time.Duration
				go debounce(ctx, events, 300*time.Millisecond, func() { calls = append(calls, time.Since(start)) })
				for _, at := range tt.events {
					time.Sleep(at - time.Since(start))
					events <- struct{}{}
				}
				time.Sleep(5 * time.Second)
				synctest.Wait()
				if len(calls) != len(tt.want) {
					t.Fatalf("calls at %v, want %v", calls, tt.want)
				}
				for i := range calls {
					if calls[i] != tt.want[i] {
						t.Errorf("calls at %v, want %v", calls, tt.want)
					}
				}
			})
		})
	}
}

// TestShutdownWaitsForReload: serve's shutdown ends the reloads and waits
// for one under way, so that it does not add toolsets or start upstreams
// while the app closes them: wait returns only once the reload has
// returned (its result stored), not merely once it was told to stop.
func TestShutdownWaitsForReload(t *testing.T) {
	var next *config.Config
	_, r := reloadApp(t, t.TempDir(), "memory: {enabled: false}\n", &next)
	entered, release := make(chan struct{}), make(chan struct{})
	r.hup = make(chan os.Signal, 1)
	r.load = func() (*config.Config, error) {
		close(entered)
		<-release // a slow load: a database another process holds, say
		return nil, errors.New("gone")
	}
	ctx, cancel := context.WithCancel(context.Background())
	if err := r.watch(ctx, nil); err != nil {
		t.Fatal(err)
	}
	r.hup <- syscall.SIGHUP
	<-entered
	cancel() // shutdown begins
	waited := make(chan struct{})
	go func() { r.wait(); close(waited) }()
	select {
	case <-waited:
		t.Fatal("wait returned while the reload was under way")
	case <-time.After(100 * time.Millisecond):
	}
	close(release)
	select {
	case <-waited:
	case <-time.After(10 * time.Second):
		t.Fatal("wait did not return once the reload had")
	}
	if r.last.Load() == nil {
		t.Error("wait returned before the reload stored its result")
	}
}

// configFrom loads yaml as toolgate.yaml in dir, without the environment.
func configFrom(t *testing.T, dir, yaml string) *config.Config {
	t.Helper()
	f := filepath.Join(dir, "toolgate.yaml")
	if err := os.WriteFile(f, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, _, _, err := config.Load(config.Options{File: f, Environ: func() []string { return nil }})
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// reloadApp starts an app with the configuration yaml and returns it with
// a reloader that loads whatever *next holds.
func reloadApp(t *testing.T, dir, yaml string, next **config.Config) (*app, *reloader) {
	t.Helper()
	t.Setenv("XDG_STATE_HOME", filepath.Join(dir, "state"))
	cfg := configFrom(t, dir, yaml)
	a, err := newApp(context.Background(), cfg, io.Discard, appOptions{record: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.close() })
	return a, &reloader{a: a, cur: cfg, load: func() (*config.Config, error) { return *next, nil }}
}

func callTool(a *app, tool string, args map[string]any) *gateway.Result {
	b, _ := json.Marshal(args)
	return a.pipeline.Call(context.Background(), &gateway.Call{Name: tool, Arguments: b, Identity: "local"})
}

// A reload that moves memory.path under a sandbox root protects the new
// database (and its journal files) as a fresh start would: the sandbox
// follows every setting its protected list comes from, not only sandbox.
func TestReloadProtectsMovedMemoryDatabase(t *testing.T) {
	dir := t.TempDir()
	root := filepath.Join(dir, "ws")
	if err := os.MkdirAll(root, 0o755); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(root, "mem", "memory.db")
	var next *config.Config
	a, r := reloadApp(t, dir, "sandbox: {roots: ["+root+"]}\nmemory: {write_mode: external, path: "+filepath.Join(dir, "outside.db")+"}\n", &next)
	next = configFrom(t, dir, "sandbox: {roots: ["+root+"]}\nmemory: {write_mode: external, path: "+db+"}\n")
	r.reload(context.Background(), "SIGHUP")
	if res := r.last.Load(); !res.OK {
		t.Fatalf("reload: %+v", res)
	}
	if res := callTool(a, "write_memory", map[string]any{"content": "remember this", "scope": "global"}); res.IsError {
		t.Fatalf("write_memory: %s", res.Message)
	}
	tests := []struct {
		tool string
		args map[string]any
	}{
		{"write_file", map[string]any{"path": db, "content": "clobbered"}},
		{"read_file", map[string]any{"path": db}},
		{"write_file", map[string]any{"path": db + "-wal", "content": "clobbered"}},
	}
	for _, tt := range tests {
		t.Run(tt.tool+" "+filepath.Base(tt.args["path"].(string)), func(t *testing.T) {
			res := callTool(a, tt.tool, tt.args)
			if !res.IsError || !strings.Contains(res.Message, "toolgate's own state") {
				t.Errorf("%s after the reload: is_error=%v %q, want refused as toolgate's own state", tt.tool, res.IsError, res.Message)
			}
		})
	}
	if res := callTool(a, "recall_memory", map[string]any{"query": "remember", "scope": "global"}); res.IsError || !strings.Contains(res.OutputText(), "remember this") {
		t.Errorf("recall_memory after the refused writes: %s %s", res.Message, res.OutputText())
	}
}

// TestReloadTurningMemoryOffLetsCallsFinish: a call that resolved
// recall_memory before a reload turned the memory off still runs on the
// toolset it began with (calls in flight finish with the toolsets they
// began with); the database closes at shutdown, not under the call.
func TestReloadTurningMemoryOffLetsCallsFinish(t *testing.T) {
	dir := t.TempDir()
	mem := "memory: {write_mode: external, path: " + filepath.Join(dir, "memory.db") + "}\n"
	var next *config.Config
	a, r := reloadApp(t, dir, mem, &next)
	if res := callTool(a, "write_memory", map[string]any{"content": "remember this", "scope": "global"}); res.IsError {
		t.Fatalf("write_memory: %s", res.Message)
	}
	tool, _, ok := a.catalog.Resolve("recall_memory") // a call in flight has it
	if !ok {
		t.Fatal("recall_memory not served")
	}
	next = configFrom(t, dir, "memory: {enabled: false}\n")
	r.reload(context.Background(), "SIGHUP")
	if res := r.last.Load(); !res.OK {
		t.Fatalf("reload: %+v", res)
	}
	if _, _, ok := a.catalog.Resolve("recall_memory"); ok {
		t.Fatal("recall_memory still served after the reload turned the memory off")
	}
	res, err := tool.Handler()(context.Background(), &gateway.Call{Name: "recall_memory", Arguments: json.RawMessage(`{"query":"remember","scope":"global"}`)})
	if err != nil || res.IsError || !strings.Contains(res.OutputText(), "remember this") {
		t.Errorf("the call in flight across the reload: %v %+v", err, res)
	}
}

// TestReloadKeepsMemoryWhereItIsProtected: a reload that moves memory.path
// under a root while the sandbox cannot be rebuilt (a root gone since
// start) leaves the database where it was, which the sandbox in force
// protects, instead of opening the new one unprotected; the reload says
// so.
func TestReloadKeepsMemoryWhereItIsProtected(t *testing.T) {
	dir := t.TempDir()
	root, gone := filepath.Join(dir, "ws"), filepath.Join(dir, "gone")
	for _, d := range []string{root, gone} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	old, db := filepath.Join(dir, "outside.db"), filepath.Join(root, "mem", "memory.db")
	var next *config.Config
	a, r := reloadApp(t, dir, "sandbox: {roots: ["+root+", "+gone+"]}\nmemory: {write_mode: external, path: "+old+"}\n", &next)
	next = configFrom(t, dir, "sandbox: {roots: ["+root+", "+gone+"]}\nmemory: {write_mode: external, path: "+db+"}\n")
	if err := os.Remove(gone); err != nil {
		t.Fatal(err)
	}
	r.reload(context.Background(), "SIGHUP")
	if res := r.last.Load(); res.OK || !strings.Contains(res.Error, "memory: the database stays where it is") {
		t.Errorf("reload: %+v; want it failed, saying the database stays", res)
	}
	if r.cur.Memory.Path != old {
		t.Errorf("memory.path in force %q, want %q", r.cur.Memory.Path, old)
	}
	if res := callTool(a, "write_memory", map[string]any{"content": "secret", "scope": "global"}); res.IsError {
		t.Fatalf("write_memory: %s", res.Message)
	}
	if _, err := os.Stat(db); err == nil {
		t.Error("the new database was opened under a root the sandbox does not protect")
	}
}

// A built-in toolset that fails to rebuild is not recorded as applied when
// another one succeeds: the reload reports it failed, and the next reload
// of the same file, once the cause is fixed, applies it.
func TestReloadRetriesFailedBuiltin(t *testing.T) {
	dir := t.TempDir()
	root := filepath.Join(dir, "ws")
	if err := os.MkdirAll(root, 0o755); err != nil {
		t.Fatal(err)
	}
	blocker := filepath.Join(dir, "blocker")
	if err := os.WriteFile(blocker, []byte("a file, not a directory"), 0o644); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(blocker, "memory.db")
	var next *config.Config
	a, r := reloadApp(t, dir, "sandbox: {roots: ["+root+"]}\nmemory: {write_mode: external, path: "+filepath.Join(dir, "good.db")+"}\n", &next)
	next = configFrom(t, dir, "sandbox: {roots: ["+root+"]}\nfilesystem: {max_read_lines: 100}\nmemory: {write_mode: external, path: "+db+"}\n")
	steps := []struct {
		name    string
		before  func() error
		wantOK  bool
		wantErr string // in last_reload's error
		wantDB  bool   // the store in use is at db
		wantNew bool   // the reload found settings to apply
	}{
		{"memory.path under a file fails, filesystem applies", nil, false, "memory", false, true},
		{"the cause fixed, the same file applies memory", func() error {
			if err := os.Remove(blocker); err != nil {
				return err
			}
			return os.Mkdir(blocker, 0o755)
		}, true, "", true, true},
		{"then nothing is left to apply", nil, true, "", true, false},
	}
	for _, st := range steps {
		if st.before != nil {
			if err := st.before(); err != nil {
				t.Fatal(err)
			}
		}
		r.reload(context.Background(), "SIGHUP")
		res := r.last.Load()
		if res.OK != st.wantOK || !strings.Contains(res.Error, st.wantErr) {
			t.Errorf("%s: last_reload ok=%v error=%q, want ok=%v error containing %q", st.name, res.OK, res.Error, st.wantOK, st.wantErr)
		}
		if !res.Changes.Empty() != st.wantNew {
			t.Errorf("%s: changes %+v, want some: %v", st.name, *res.Changes, st.wantNew)
		}
		if r.cur.Filesystem.MaxReadLines != 100 {
			t.Errorf("%s: filesystem not applied: max_read_lines %d", st.name, r.cur.Filesystem.MaxReadLines)
		}
		if w := callTool(a, "write_memory", map[string]any{"content": "x", "scope": "s"}); w.IsError {
			t.Errorf("%s: write_memory: %s", st.name, w.Message)
		}
		if _, err := os.Stat(db); (err == nil) != st.wantDB {
			t.Errorf("%s: store at %s in use = %v, want %v", st.name, db, err == nil, st.wantDB)
		}
	}
}

// skillDirs makes a sandbox root (dir/ws) and a skills directory
// (dir/skills) holding one skill, name, and returns both.
func skillDirs(t *testing.T, dir, name, description, body string) (root, skillsDir string) {
	t.Helper()
	root, skillsDir = filepath.Join(dir, "ws"), filepath.Join(dir, "skills")
	for _, d := range []string{root, filepath.Join(skillsDir, name)} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	md := "---\nname: " + name + "\ndescription: " + description + "\n---\n" + body + "\n"
	if err := os.WriteFile(filepath.Join(skillsDir, name, "SKILL.md"), []byte(md), 0o644); err != nil {
		t.Fatal(err)
	}
	return root, skillsDir
}

// A reload that turns the skills off (skills.dirs emptied) stops serving
// them as prompts too, not only as tools: the prompts of the skills in
// force before were still listed and rendered, and clients were not told.
func TestReloadTurningSkillsOffRemovesPrompts(t *testing.T) {
	dir := t.TempDir()
	root, sd := skillDirs(t, dir, "secret", "A skill to withdraw.", "Secret body.")
	var next *config.Config
	a, r := reloadApp(t, dir, "sandbox: {roots: ["+root+"]}\nskills: {dirs: ["+sd+"]}\n", &next)
	listed, _ := a.skills.Prompts(context.Background())
	if len(listed) != 1 {
		t.Fatalf("before the reload: %d prompts, want 1", len(listed))
	}
	told := 0
	a.skills.OnPromptsChanged(func() { told++ })
	next = configFrom(t, dir, "sandbox: {roots: ["+root+"]}\n")
	r.reload(context.Background(), "SIGHUP")
	if res := r.last.Load(); !res.OK {
		t.Fatalf("reload: %+v", res)
	}
	if res := callTool(a, "load_skill", map[string]any{"skill_id": "secret"}); !res.IsError {
		t.Errorf("load_skill after the reload succeeded: %s", res.OutputText())
	}
	ps, err := a.skills.Prompts(context.Background())
	if err != nil || len(ps) != 0 {
		t.Errorf("prompts after the skills were turned off: %d (err %v), want none", len(ps), err)
	}
	if told != 1 {
		t.Errorf("turning the skills off told the prompt listeners %d times, want 1", told)
	}
	// A prompt listed before (a client's mirror keeps it until told) no
	// longer renders.
	if res, err := listed[0].Get(context.Background(), nil); err == nil {
		t.Errorf("the prompt listed before the reload still renders: %+v", res)
	}
}

// stdioSession serves srv over in-process pipes, initializes a session and
// returns a function that sends one request and returns its result.
func stdioSession(t *testing.T, srv *gateway.MCPServer) func(method string, params any) json.RawMessage {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() { cancel(); inW.Close(); outR.Close() })
	go func() { _ = srv.ServeStdio(ctx, inR, outW); outW.Close() }()
	dec := json.NewDecoder(outR)
	id := 0
	call := func(method string, params any) json.RawMessage {
		t.Helper()
		id++
		req, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
		if _, err := inW.Write(append(req, '\n')); err != nil {
			t.Fatal(err)
		}
		for {
			var msg struct {
				ID     int             `json:"id"`
				Method string          `json:"method"`
				Result json.RawMessage `json:"result"`
				Error  json.RawMessage `json:"error"`
			}
			if err := dec.Decode(&msg); err != nil {
				t.Fatalf("%s: %v", method, err)
			}
			if msg.Method != "" || msg.ID != id {
				continue // a notification
			}
			if msg.Error != nil {
				t.Fatalf("%s: %s", method, msg.Error)
			}
			return msg.Result
		}
	}
	call("initialize", map[string]any{"protocolVersion": "2025-06-18", "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "test", "version": "1"}})
	if _, err := inW.Write([]byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n")); err != nil {
		t.Fatal(err)
	}
	return call
}

// A reload that turns the skills on (none configured at start) serves
// their prompts too, as docs/reload.md says: the prompt source was made
// only when the skills were built, after the server had taken its sources
// at start, so prompts/list stayed empty until a restart.
func TestReloadTurningSkillsOnServesPrompts(t *testing.T) {
	dir := t.TempDir()
	root, sd := skillDirs(t, dir, "fresh", "A skill added by a reload.", "Fresh body.")
	var next *config.Config
	a, r := reloadApp(t, dir, "sandbox: {roots: ["+root+"]}\n", &next)
	srv := gateway.NewMCPServer(&gateway.MCPOptions{Name: "toolgate", Version: "test", Catalog: a.catalog, Pipeline: a.pipeline})
	for _, src := range a.promptSources { // as serve does
		srv.AddPromptSource(src)
	}
	r.srv = srv
	call := stdioSession(t, srv)
	next = configFrom(t, dir, "sandbox: {roots: ["+root+"]}\nskills: {dirs: ["+sd+"]}\n")
	r.reload(context.Background(), "SIGHUP")
	if res := r.last.Load(); !res.OK {
		t.Fatalf("reload: %+v", res)
	}
	if res := callTool(a, "load_skill", map[string]any{"skill_id": "fresh"}); res.IsError {
		t.Fatalf("load_skill after the reload: %s", res.Message)
	}
	var list struct {
		Prompts []struct {
			Name string `json:"name"`
		} `json:"prompts"`
	}
	if err := json.Unmarshal(call("prompts/list", map[string]any{}), &list); err != nil {
		t.Fatal(err)
	}
	if len(list.Prompts) != 1 || list.Prompts[0].Name != "fresh" {
		t.Errorf("prompts/list after the skills were turned on: %+v, want the skill fresh", list.Prompts)
	}
}

// TestReloadLimitsSetUpAtStart: limits.max_in_flight (and the other limits
// the HTTP server or the shutdown read at start) changed by a reload are
// reported as waiting for a restart, on this reload and the next, while
// call_timeout applies; before, the reload said "limits" applied, ok, and
// the bound stayed as at start.
func TestReloadLimitsSetUpAtStart(t *testing.T) {
	dir := t.TempDir()
	var next *config.Config
	_, r := reloadApp(t, dir, "memory: {enabled: false}\n", &next)
	next = configFrom(t, dir, "memory: {enabled: false}\nlimits: {max_in_flight: 3, call_timeout: 7s}\n")
	for i := range 2 {
		r.reload(context.Background(), "SIGHUP")
		res := r.last.Load()
		if !res.OK || !slices.Contains(res.Changes.Fixed, "limits.max_in_flight") {
			t.Fatalf("reload %d: %+v, want limits.max_in_flight among the fixed", i, res.Changes)
		}
		if r.cur.Limits.CallTimeout != 7*time.Second {
			t.Errorf("reload %d: call_timeout in force %s, want 7s", i, r.cur.Limits.CallTimeout)
		}
	}
}

// TestReloadDefaultFileGone: a serve that read ./toolgate.yaml (no
// --config) and reloads once that file is gone (moved away, deleted, an
// editor's save that unlinks first) fails the reload and keeps serving
// with what it has; before, the reload loaded the defaults alone: every
// upstream removed and the policy back to the defaults, ok: true.
func TestReloadDefaultFileGone(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	if err := os.WriteFile(config.DefaultFile, []byte("policy: {tools: {deny: [danger_*]}}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	fs := pflag.NewFlagSet("serve", pflag.ContinueOnError)
	fs.String("config", "", "")
	load := reloadLoad(fs, nil)
	cfg, err := load()
	if err != nil || len(cfg.Policy.Tools.Deny) != 1 {
		t.Fatalf("load: %v, %+v", err, cfg)
	}
	// Truncated by an editor about to write it: not the defaults either.
	if err := os.WriteFile(config.DefaultFile, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if cfg, err := load(); err == nil {
		t.Fatalf("load of an empty file: no error, tools.deny now %q", cfg.Policy.Tools.Deny)
	}
	if err := os.Remove(config.DefaultFile); err != nil {
		t.Fatal(err)
	}
	if cfg, err := load(); err == nil {
		t.Fatalf("load with the file gone: no error, tools.deny now %q", cfg.Policy.Tools.Deny)
	}
}

// A reload that removes the profile serve --profile serves fails for
// profiles, naming it, and the view stays in force: its stdio clients
// would otherwise be left an empty list without a word. Other changes
// of the same reload are made.
func TestReloadKeepsServedProfile(t *testing.T) {
	dir := t.TempDir()
	var next *config.Config
	a, r := reloadApp(t, dir, "profiles:\n  readers: {tools: [read_file]}\n  writers: {tools: [write_file]}\n", &next)
	r.srv = gateway.NewMCPServer(&gateway.MCPOptions{Name: "t", Catalog: a.catalog, Pipeline: a.pipeline})
	if err := a.setViews(a.cfg); err != nil {
		t.Fatal(err)
	}
	a.servedProfile = "readers"
	view := liveView{a: a, name: "readers"}
	next = configFrom(t, dir, "profiles:\n  writers: {tools: [write_file, list_files]}\nlimits: {call_timeout: 7s}\n")
	r.reload(context.Background(), "SIGHUP")
	res := r.last.Load()
	if res.OK || !strings.Contains(res.Error, `profile "readers" is the one this process serves`) {
		t.Fatalf("reload removing the served profile: %+v", res)
	}
	if !view.Admits("read_file") {
		t.Error("the served profile no longer admits read_file after the failed reload")
	}
	if r.cur.Limits.CallTimeout != 7*time.Second {
		t.Errorf("limits.call_timeout %s, want the reload's 7s taken", r.cur.Limits.CallTimeout)
	}
	// A reload that keeps it changes it as asked.
	next = configFrom(t, dir, "profiles:\n  readers: {tools: [list_files]}\n")
	r.reload(context.Background(), "SIGHUP")
	if res := r.last.Load(); !res.OK {
		t.Fatalf("reload: %+v", res)
	}
	if view.Admits("read_file") || !view.Admits("list_files") {
		t.Error("the served profile's new tools are not in force")
	}
}

// The view HTTP's /mcp/NAME serves through follows reloads: what a
// request keeps of it (a resource subscription, which outlives the
// request) sees a later edit of the profile, and its removal admits
// nothing.
func TestProfileLookupFollowsReload(t *testing.T) {
	dir := t.TempDir()
	var next *config.Config
	a, r := reloadApp(t, dir, "profiles:\n  readers: {tools: [read_file]}\n", &next)
	r.srv = gateway.NewMCPServer(&gateway.MCPOptions{Name: "t", Catalog: a.catalog, Pipeline: a.pipeline})
	if err := a.setViews(a.cfg); err != nil {
		t.Fatal(err)
	}
	v, ok := a.profileLookup("readers")
	if !ok || !v.Admits("read_file") || v.Admits("list_files") {
		t.Fatalf("profile readers before the reload: found %v", ok)
	}
	next = configFrom(t, dir, "profiles:\n  readers: {tools: [list_files]}\n")
	r.reload(context.Background(), "SIGHUP")
	if res := r.last.Load(); !res.OK {
		t.Fatalf("reload: %+v", res)
	}
	if v.Admits("read_file") || !v.Admits("list_files") {
		t.Error("a view of readers taken before the reload does not follow its edit")
	}
	next = configFrom(t, dir, "profiles:\n  writers: {tools: [write_file]}\n")
	r.reload(context.Background(), "SIGHUP")
	if res := r.last.Load(); !res.OK {
		t.Fatalf("reload: %+v", res)
	}
	if _, ok := a.profileLookup("readers"); ok {
		t.Error("profile readers still found after a reload removed it")
	}
	if v.Admits("list_files") || v.Admits("write_file") {
		t.Error("a view of readers taken before a reload that removed it still admits tools")
	}
}

// A reload that changes profiles (or the policy) together with
// discovery.mode, which waits for a restart, builds the profiles for tool
// search as it stays in force: a profile keeps find_tools and call_tool
// while the discovery toolset serves, or its clients, and the callers an
// identity confines to it, could reach none of its tools past the pinned
// ones until the restart.
func TestReloadProfilesFollowToolSearchInForce(t *testing.T) {
	dir := t.TempDir()
	var next *config.Config
	const conf = "policy: {identities: [{match: {name: local}, profile: readers}]}\nprofiles:\n  readers: {tools: [%s]}\n"
	a, r := reloadApp(t, dir, "discovery: {mode: search}\n"+fmt.Sprintf(conf, "read_file"), &next)
	r.srv = gateway.NewMCPServer(&gateway.MCPOptions{Name: "t", Catalog: a.catalog, Pipeline: a.pipeline})
	if err := a.setViews(a.cfg); err != nil {
		t.Fatal(err)
	}
	next = configFrom(t, dir, "discovery: {mode: all}\n"+fmt.Sprintf(conf, "read_file, list_files"))
	r.reload(context.Background(), "SIGHUP")
	if res := r.last.Load(); !res.OK || res.Changes == nil || !slices.Contains(res.Changes.Fixed, "discovery") {
		t.Fatalf("reload: %+v; want ok, discovery waiting for a restart", res)
	}
	v, ok := a.profileLookup("readers")
	if !ok || !v.Admits("list_files") {
		t.Fatal("the reload's profile is not in force")
	}
	for _, tool := range []string{discovery.FindTools, discovery.CallTool} {
		if !v.Admits(tool) {
			t.Errorf("profile readers no longer admits %s, which still serves", tool)
		}
	}
	if res := callTool(a, discovery.FindTools, map[string]any{"query": "list files"}); res.IsError {
		t.Errorf("find_tools by an identity confined to readers: %s %s", res.Kind, res.Message)
	}
}

// seenAtLog is a log handler that, at a record whose message begins with
// prefix, notes what at says then.
type seenAtLog struct {
	slog.Handler
	prefix string
	at     func() *reloadResult
	seen   **reloadResult
}

func (h seenAtLog) Enabled(context.Context, slog.Level) bool { return true }

func (h seenAtLog) Handle(ctx context.Context, rec slog.Record) error {
	if strings.HasPrefix(rec.Message, h.prefix) {
		*h.seen = h.at()
	}
	return nil
}

// TestReloadLoggedOnceShown: a reload's outcome is logged once /healthz
// (and `toolgate tools`) show it, so that whoever reads "config reload
// failed" or "config reloaded" and then asks sees that reload, not the
// one before (e2e TestReload read the previous result once).
func TestReloadLoggedOnceShown(t *testing.T) {
	dir := t.TempDir()
	var next *config.Config
	a, r := reloadApp(t, dir, "filesystem: {max_read_lines: 100}\n", &next)
	for _, c := range []struct {
		prefix string
		load   func() (*config.Config, error)
		wantOK bool
	}{
		{"config reload failed", func() (*config.Config, error) { return nil, errors.New("line 2: broken") }, false},
		{"config reloaded", func() (*config.Config, error) {
			return configFrom(t, dir, "filesystem: {max_read_lines: 200}\n"), nil
		}, true},
		{"config reloaded; nothing changed", func() (*config.Config, error) {
			return configFrom(t, dir, "filesystem: {max_read_lines: 200}\n"), nil
		}, true},
	} {
		var seen *reloadResult
		a.log = slog.New(seenAtLog{Handler: slog.DiscardHandler, prefix: c.prefix, at: r.lastReload, seen: &seen})
		r.load = c.load
		before := time.Now().UTC()
		r.reload(context.Background(), "SIGHUP")
		if seen == nil || seen.OK != c.wantOK || seen.Time.Before(before) {
			t.Errorf("%q logged while /healthz showed %+v, want this reload's (ok %v)", c.prefix, seen, c.wantOK)
		}
	}
}

// TestReloadedLineNamesWhatChanged: the "config reloaded" line names the
// settings a reload changed; it once gave the upstreams' lists alone, and
// a reload of the profiles or limits read "added=[] removed=[] changed=[]".
func TestReloadedLineNamesWhatChanged(t *testing.T) {
	dir := t.TempDir()
	var next *config.Config
	a, r := reloadApp(t, dir, "filesystem: {max_read_lines: 100}\n", &next)
	var buf bytes.Buffer
	a.log = slog.New(slog.NewTextHandler(&buf, nil))
	r.load = func() (*config.Config, error) {
		return configFrom(t, dir, "filesystem: {max_read_lines: 200}\nlimits: {call_timeout: 30s}\n"), nil
	}
	r.reload(context.Background(), "SIGHUP")
	line := buf.String()
	if !strings.Contains(line, `msg="config reloaded" trigger=SIGHUP ok=true settings="[limits filesystem]"`) {
		t.Errorf("the line does not name the changed settings:\n%s", line)
	}
	if strings.Contains(line, "upstreams_") {
		t.Errorf("the line names upstream lists though no upstream changed:\n%s", line)
	}
}

// TestNewestReloadOfARunningServe: `toolgate tools` shows the last reload
// of a serve that is still running, and none once it stopped (a stopped
// serve's reload was shown as if a gateway still served that config).
func TestNewestReloadOfARunningServe(t *testing.T) {
	dir := t.TempDir()
	var next *config.Config
	a, r := reloadApp(t, dir, "filesystem: {max_read_lines: 100}\n", &next)
	next = configFrom(t, dir, "filesystem: {max_read_lines: 200}\n")
	r.reload(context.Background(), "SIGHUP")
	runsDir := a.cfg.ResolvedRunsDir()
	if run, res := newestReload(runsDir); res == nil || !res.OK || run != filepath.Base(a.run.Dir()) {
		t.Fatalf("while the run is live: %q %+v, want its reload", run, res)
	}
	if err := a.close(); err != nil {
		t.Fatal(err)
	}
	if run, res := newestReload(runsDir); res != nil {
		t.Errorf("after the run stopped: %q %+v, want none", run, res)
	}
}
