package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/spf13/pflag"
	"github.com/toolgate/toolgate/adapters/upstream"
	"github.com/toolgate/toolgate/cmd/toolgate/internal/config"
	"github.com/toolgate/toolgate/gateway"
	"github.com/toolgate/toolgate/gateway/runs"
	"github.com/toolgate/toolgate/policy"
)

// reloadDebounce is how long the config file must be quiet before a
// reload: an editor's save is often several writes, or a write and a
// rename.
const reloadDebounce = 300 * time.Millisecond

// reloadResult is the outcome of the last reload, shown in /healthz.
type reloadResult struct {
	Time    time.Time       `json:"time"`
	Trigger string          `json:"trigger"` // "file" or "SIGHUP"
	OK      bool            `json:"ok"`
	Error   string          `json:"error,omitempty"`
	Changes *config.Changes `json:"changes,omitempty"`
}

// reloader reloads the configuration of a running serve when its file
// changes or on SIGHUP. Reloads run one at a time, in its own goroutine,
// so its state needs no lock.
type reloader struct {
	a    *app
	srv  *gateway.MCPServer
	load func() (*config.Config, error)
	// addSources gives an upstream started by a reload to the MCP server
	// as a prompt and resource source; removeSources takes a retired one
	// back (nil: no MCP server).
	addSources, removeSources func(*upstream.Upstream)
	cur                       *config.Config // what the gateway runs with
	hup                       chan os.Signal // SIGHUP, from before the app was built
	last                      atomic.Pointer[reloadResult]
	// stopped is closed once watch's reloads have stopped: ctx ended and
	// the reload under way, if any, returned (see [reloader.wait]).
	stopped chan struct{}
}

// reloadCounts are the reloads of a serve by result, for metrics.
type reloadCounts struct{ ok, failed atomic.Int64 }

func (c *reloadCounts) counts() map[string]int64 {
	return map[string]int64{"ok": c.ok.Load(), "error": c.failed.Load()}
}

// watch reloads on every debounced change of one of files and on SIGHUP,
// until ctx ends.
func (r *reloader) watch(ctx context.Context, files []string) error {
	r.stopped = make(chan struct{})
	triggers := make(chan string, 1)
	send := func(why string) {
		select {
		case triggers <- why:
		default: // a reload is already due
		}
	}
	go func() {
		defer signal.Stop(r.hup)
		for {
			select {
			case <-ctx.Done():
				return
			case <-r.hup:
				send("SIGHUP")
			}
		}
	}()
	go func() {
		defer close(r.stopped)
		for {
			select {
			case <-ctx.Done():
				return
			case why := <-triggers:
				r.reload(ctx, why)
			}
		}
	}()
	if len(files) > 0 {
		// SIGHUP reloads even if the files cannot be watched.
		return r.watchFiles(ctx, files, func() { send("file") })
	}
	return nil
}

// wait returns once the reloads watch started have stopped (its ctx must
// have ended): a reload under way when shutdown begins finishes first, so
// that it does not add toolsets, start upstreams or write to the run
// archive while the app closes them. A reload's ctx is ended too, which
// bounds its waits.
func (r *reloader) wait() {
	if r != nil && r.stopped != nil {
		<-r.stopped
	}
}

// watchFiles calls changed once the files have been quiet for
// reloadDebounce after a change. Their directories are watched, not the
// files, so that editors that save by writing a new file and renaming it
// over the old one are seen.
func (r *reloader) watchFiles(ctx context.Context, files []string, changed func()) error {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("watching the config file: %w", err)
	}
	watched := map[string]bool{}
	for _, f := range files {
		abs, err := filepath.Abs(f)
		if err != nil {
			w.Close()
			return err
		}
		watched[abs] = true
		if err := w.Add(filepath.Dir(abs)); err != nil {
			w.Close()
			return fmt.Errorf("watching %s: %w", f, err)
		}
	}
	events := make(chan struct{}, 1)
	go func() {
		defer w.Close()
		for {
			select {
			case <-ctx.Done():
				return
			case ev, ok := <-w.Events:
				if !ok {
					return
				}
				if watched[filepath.Clean(ev.Name)] && ev.Op&(fsnotify.Write|fsnotify.Create|fsnotify.Rename|fsnotify.Remove) != 0 {
					select {
					case events <- struct{}{}:
					default:
					}
				}
			case err, ok := <-w.Errors:
				if !ok {
					return
				}
				r.a.log.Warn("watching the config file", "err", err)
			}
		}
	}()
	go debounce(ctx, events, reloadDebounce, changed)
	return nil
}

// debounce calls f once no event has arrived on events for d, after one
// or more events; it returns when ctx ends.
func debounce(ctx context.Context, events <-chan struct{}, d time.Duration, f func()) {
	timer := time.NewTimer(d)
	timer.Stop()
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-events:
			timer.Reset(d)
		case <-timer.C:
			f()
		}
	}
}

// reload loads the configuration again and applies what changed. A
// configuration that does not load leaves everything as it was.
func (r *reloader) reload(ctx context.Context, trigger string) {
	res := &reloadResult{Time: time.Now().UTC(), Trigger: trigger}
	// announce logs the outcome and records its event once /healthz and
	// `toolgate tools` show it: whoever reads the log line and then asks
	// sees this reload, not the one before.
	var announce func()
	defer func() {
		r.last.Store(res)
		r.a.writeLastReload(res)
		if res.OK {
			r.a.reloadCounts.ok.Add(1)
		} else {
			r.a.reloadCounts.failed.Add(1)
		}
		if announce != nil {
			announce()
		}
	}()
	next, err := r.load()
	if err != nil {
		res.Error = err.Error()
		announce = func() {
			r.a.log.Error("config reload failed; still serving with the previous configuration", "trigger", trigger, "err", err)
			r.event(map[string]any{"trigger": trigger, "ok": false, "error": res.Error})
		}
		return
	}
	ch := config.Diff(r.cur, next)
	// Lists, never null, in /healthz and the config.reloaded event.
	ch.Added, ch.Removed, ch.Changed, ch.Settings, ch.Fixed = nonNil(ch.Added), nonNil(ch.Removed), nonNil(ch.Changed), nonNil(ch.Settings), nonNil(ch.Fixed)
	res.OK, res.Changes = true, &ch
	if ch.Empty() {
		announce = func() { r.a.log.Info("config reloaded; nothing changed", "trigger", trigger) }
		return
	}
	if len(ch.Fixed) > 0 {
		r.a.log.Warn("config reload: these settings cannot change while serving; they keep their values until restart", "keys", ch.Fixed)
	}
	r.applyUpstreams(ctx, ch, next)
	if later, err := r.applySettings(ctx, ch, next); err != nil {
		// The rest is in force; these stay as they were and, as they still
		// differ from the file, the next reload tries them again.
		res.OK, res.Error = false, "not applied: "+err.Error()
		r.a.log.Error("config reload: these settings could not be applied; they keep their previous values until a reload applies them", "keys", later, "err", err)
	}
	announce = func() {
		r.a.log.Info("config reloaded", reloadedAttrs(trigger, res.OK, ch)...)
		fields := map[string]any{"trigger": trigger, "ok": res.OK, "added": ch.Added, "removed": ch.Removed,
			"changed": ch.Changed, "settings": ch.Settings, "fixed": ch.Fixed}
		if !res.OK {
			fields["error"] = res.Error
		}
		r.event(fields)
	}
}

// reloadedAttrs are the "config reloaded" line's attributes: the trigger,
// whether all of it was applied, and what changed, each kind only when
// something of it did. The line once gave the upstreams' three lists
// alone, so a reload that changed a profile or the policy read
// "added=[] removed=[] changed=[]".
func reloadedAttrs(trigger string, ok bool, ch config.Changes) []any {
	attrs := []any{"trigger", trigger, "ok", ok}
	for _, l := range []struct {
		key   string
		names []string
	}{{"upstreams_added", ch.Added}, {"upstreams_removed", ch.Removed}, {"upstreams_restarted", ch.Changed}, {"settings", ch.Settings}} {
		if len(l.names) > 0 {
			attrs = append(attrs, l.key, l.names)
		}
	}
	return attrs
}

// applyUpstreams stops removed upstreams, restarts changed ones and starts
// added ones; the others keep their processes and sessions. It does not
// wait for new upstreams: their tools appear when they connect, and
// clients are told with list_changed. A removed or changed upstream's
// tools leave at once, but its process ends only once the calls in flight
// on it have (retire): a changed one's new process serves the calls that
// start meanwhile.
func (r *reloader) applyUpstreams(ctx context.Context, ch config.Changes, next *config.Config) {
	for _, name := range append(append([]string(nil), ch.Removed...), ch.Changed...) {
		ts, err := r.a.catalog.Detach(name)
		if err != nil {
			r.a.log.Warn("config reload: stopping upstream", "upstream", name, "err", err)
		} else if u, ok := ts.(*upstream.Upstream); ok {
			r.retire(u)
		}
		if u := r.a.upSources[name]; u != nil {
			// Its prompts and resources leave with its tools, and the server
			// lets it go (gets under way finish on it).
			if r.removeSources != nil {
				r.removeSources(u)
			}
			r.a.dropSource(u)
			delete(r.a.upSources, name)
		}
	}
	start := map[string]bool{}
	for _, name := range append(append([]string(nil), ch.Added...), ch.Changed...) {
		start[name] = true
	}
	for _, uc := range next.Upstreams {
		if !start[uc.Name] {
			continue
		}
		u, err := r.a.newUpstream(uc)
		if err != nil { // checked with the config: not expected
			r.a.log.Error("config reload: upstream", "upstream", uc.Name, "err", err)
			continue
		}
		u.Start(r.a.bg)
		if err := r.a.catalog.Add(ctx, u); err != nil {
			r.a.log.Info("upstream not ready; its tools will appear when it connects", "upstream", u.Name(), "err", err)
		}
		r.a.addUpstreamSource(u)
		if r.addSources != nil {
			r.addSources(u)
		}
	}
	cur := *r.cur // settings other than upstreams keep their values
	cur.Upstreams = next.Upstreams
	r.cur = &cur
}

// retire closes an upstream taken out of the catalog once the calls in
// flight on it have ended, within the longest a call may run (their
// deadlines end them by then), or at shutdown, whichever is first.
func (r *reloader) retire(u *upstream.Upstream) {
	a := r.a
	a.retiring.add(u)                 // closed at shutdown if still open
	grace := r.cur.Limits.CallTimeout // the calls in flight started under it
	if t := u.Config().CallTimeout; t > grace {
		grace = t
	}
	go func() {
		ctx, cancel := context.WithTimeout(a.bg, grace+retireSlack)
		defer cancel()
		if err := u.CloseWhenIdle(ctx); err != nil {
			a.log.Warn("config reload: stopping upstream", "upstream", u.Name(), "err", err)
		}
		a.retiring.remove(u) // closed: nothing holds it any more
	}()
}

// dropSource takes a retired upstream out of the sources the app gave the
// MCP server at start.
func (a *app) dropSource(u *upstream.Upstream) {
	a.promptSources = slices.DeleteFunc(a.promptSources, func(s gateway.PromptSource) bool { return s == gateway.PromptSource(u) })
	a.resourceSources = slices.DeleteFunc(a.resourceSources, func(s gateway.ResourceSource) bool { return s == gateway.ResourceSource(u) })
}

// retireSlack is how long past the longest call deadline a retired
// upstream waits for its calls: a call's answer and record, after its
// deadline, before the process ends.
const retireSlack = 5 * time.Second

// applySettings puts the changed settings in force for the calls that
// start from now on; calls in flight finish under the settings they
// started with (they hold the policy version, limits and toolsets they
// began with). It returns the keys it could not apply, and why: they keep
// their values in r.cur, so the next reload tries them again.
func (r *reloader) applySettings(ctx context.Context, ch config.Changes, next *config.Config) (later []string, _ error) {
	a := r.a
	var errs []error
	fail := func(err error, keys ...string) {
		later = append(later, keys...)
		errs = append(errs, fmt.Errorf("%s: %w", strings.Join(keys, ", "), err))
	}
	changed := map[string]bool{}
	for _, k := range ch.Settings {
		changed[k] = true
	}
	cur := *r.cur
	// The sandbox first: the filesystem toolset and the policy report use it.
	// It protects toolgate's own state, so it is rebuilt (and the
	// filesystem toolset with it) when that list changes too, not only
	// sandbox: a reload that moves memory.path under a root must protect
	// the new database as a fresh start would.
	roots := a.policy.SandboxRoots()
	protect := r.protected(next)
	sandboxRebuilt := false
	var unprotected error // the protected list changed and could not be put in force
	if changed["sandbox"] || !slices.Equal(protect, ownState(r.cur)) {
		sb, shown, err := a.newSandbox(next, protect)
		if err != nil {
			a.log.Error("config reload: sandbox", "err", err)
			fail(err, "sandbox")
			changed["sandbox"] = false
			if !slices.Equal(protect, ownState(r.cur)) {
				unprotected = err
			}
		} else {
			// cur.Sandbox is taken with the filesystem toolset built on it.
			a.retired = append(a.retired, a.sandbox) // calls in flight may still use it
			a.sandbox, roots, sandboxRebuilt = sb, shown, true
		}
	}
	// A profile admits tool search's tools by the discovery.mode in force,
	// which waits for a restart, not by the file's.
	withSearch := *next
	withSearch.Discovery = r.cur.Discovery
	policyChanged := changed["policy"] || changed["sandbox"] || changed["profiles"] // policy.identities name profiles
	if policyChanged {
		profiles, err := withSearch.PolicyProfiles()
		var eff *policy.Effective
		if err == nil {
			eff, err = policy.New(next.EffectivePolicy(), &policy.Options{SandboxRoots: roots, Logger: a.log, Profiles: profiles})
		}
		if err != nil { // checked with the configuration: not expected
			a.log.Error("config reload: policy", "err", err)
			fail(err, "policy")
		} else {
			for _, g := range a.policy.Replace(eff) {
				a.log.Info("config reload: a skill grant no longer allowed is dropped", "session", gateway.SessionRef(g.Session), "skill", g.Skill, "capability", g.Capability)
			}
			if a.approvals != nil {
				a.approvals.SetOptions(eff.ApprovalChannel(), eff.ApprovalTimeout())
			}
			if why := unanswerableApprovals(a.policy); why != "" && cur.Admin.Addr == "" { // admin.addr waits for a restart
				a.log.Warn("config reload: " + why)
			}
			cur.Policy = next.Policy
			if eff.HideDenied() != a.hideDenied {
				// Not filtering tools/list by default keeps its fast path.
				a.log.Warn("config reload: policy.list_denied cannot change while serving; tools/list and find_tools keep listing as at start until restart",
					"list_denied", next.Policy.ListDenied, "hide_denied_in_force", a.hideDenied)
			}
			defer a.globs.check(a) // once the reload is in place
		}
	}
	if changed["limits"] && a.pipeline != nil {
		a.pipeline.SetLimits(gateway.Limits{CallTimeout: next.Limits.CallTimeout, MaxOutputBytes: next.Limits.MaxOutputBytes})
		cur.Limits.TakeLive(next.Limits) // the others wait for a restart (config.Diff reports them)
	}
	for _, b := range builtins {
		uses := b.name == "filesystem" && sandboxRebuilt
		if !uses && !slices.ContainsFunc(b.keys, func(k string) bool { return changed[k] }) {
			continue
		}
		keys := slices.DeleteFunc(slices.Clone(b.keys), func(k string) bool { return !changed[k] })
		if len(keys) == 0 { // the filesystem toolset, on a sandbox rebuilt to protect a moved memory.path
			keys = []string{b.name}
		}
		if b.name == "memory" && unprotected != nil {
			// Its database may have moved under a root that the sandbox in
			// force does not protect: it stays where it is until a reload
			// can protect the new place.
			fail(fmt.Errorf("the database stays where it is: the sandbox that would protect its new place could not be built (%w)", unprotected), keys...)
			continue
		}
		if err := r.replaceBuiltin(ctx, b, next); err != nil {
			a.log.Error("config reload: toolset", "toolset", b.name, "err", err)
			fail(err, keys...)
			continue
		}
		for _, k := range keys { // only this toolset's keys are in force
			takeSetting(&cur, next, k)
		}
	}
	if _, ok := next.Profiles[a.servedProfile]; changed["profiles"] && a.servedProfile != "" && !ok {
		// Its clients would be left an empty list without a word (stdio
		// cannot refuse them as /mcp/NAME's 404 does).
		err := fmt.Errorf("profile %q is the one this process serves (serve --profile %s): keep it, or restart serve with another", a.servedProfile, a.servedProfile)
		a.log.Error("config reload: profiles", "err", err)
		fail(err, "profiles")
	} else if changed["profiles"] {
		if err := a.setViews(&withSearch); err != nil {
			a.log.Error("config reload: profiles", "err", err)
			fail(err, "profiles")
		} else {
			cur.Profiles = next.Profiles
		}
	}
	cur.Upstreams = r.cur.Upstreams
	r.cur = &cur
	if policyChanged || changed["profiles"] {
		r.srv.Resync() // the tools' decisions (in _meta) and views changed: re-send what differs
	}
	return later, errors.Join(errs...)
}

// takeSetting copies the built-in toolset setting key from next into cur:
// it has been applied.
func takeSetting(cur, next *config.Config, key string) {
	switch key {
	case "sandbox":
		cur.Sandbox = next.Sandbox
	case "filesystem":
		cur.Filesystem = next.Filesystem
	case "diagnostics":
		cur.Diagnostics = next.Diagnostics
	case "memory":
		cur.Memory = next.Memory
	case "skills":
		cur.Skills = next.Skills
	}
}

// protected is the sandbox's protected list for a reload to next: the
// own state of the settings in force after it (runs_dir and log keep their
// values until restart), and the memory database in force before it,
// which stays open for calls in flight and stays in use if the new one
// fails to open.
func (r *reloader) protected(next *config.Config) []string {
	after := *r.cur
	after.Memory = next.Memory
	p := ownState(&after)
	for _, s := range ownState(r.cur) {
		if !slices.Contains(p, s) {
			p = append(p, s)
		}
	}
	return p
}

// replaceBuiltin builds a built-in toolset from the new configuration and
// puts it in the place of the one in force (or adds or removes it).
func (r *reloader) replaceBuiltin(ctx context.Context, b builtin, next *config.Config) error {
	a := r.a
	ts, err := b.build(a, next)
	if err != nil {
		return err
	}
	have := slices.ContainsFunc(a.catalog.Toolsets(), func(t gateway.ToolsetInfo) bool { return t.Name == b.name })
	switch {
	case ts != nil && have:
		old, err := a.catalog.Replace(ctx, ts)
		if c, ok := old.(io.Closer); ok {
			a.retired = append(a.retired, c) // closed at shutdown: calls in flight may use it
		}
		return err
	case ts != nil:
		return a.catalog.Add(ctx, ts)
	case have:
		old, err := a.catalog.Detach(b.name)
		if c, ok := old.(io.Closer); ok {
			a.retired = append(a.retired, c) // closed at shutdown: calls in flight may use it
		}
		return err
	}
	return nil
}

func (r *reloader) event(fields map[string]any) {
	if r.a.run != nil {
		r.a.run.Event("config.reloaded", fields)
	}
}

// lastReload is the result of the last reload for /healthz, or nil.
func (r *reloader) lastReload() *reloadResult {
	if r == nil {
		return nil
	}
	return r.last.Load()
}

// lastReloadFile is where a serve keeps its last reload's result in its run
// directory, for `toolgate tools`.
const lastReloadFile = "last-reload.json"

// writeLastReload writes the last reload's result into the run directory.
func (a *app) writeLastReload(res *reloadResult) {
	if a.run == nil {
		return
	}
	b, err := json.Marshal(res)
	if err != nil {
		return
	}
	path := filepath.Join(a.run.Dir(), lastReloadFile)
	tmp := path + ".tmp"
	if os.WriteFile(tmp, b, 0o644) == nil {
		_ = os.Rename(tmp, path) // whole or not at all
	}
}

// newestReload finds the last reload of the newest serve run still
// running that reloaded (run IDs sort by start time), for `toolgate
// tools`. A stopped serve's reload is history, not the state of a gateway
// that may still be serving an old configuration: it was shown as if it
// were.
func newestReload(runsDir string) (runID string, res *reloadResult) {
	ents, err := os.ReadDir(runsDir)
	if err != nil {
		return "", nil
	}
	for i := len(ents) - 1; i >= 0; i-- {
		dir := filepath.Join(runsDir, ents[i].Name())
		b, err := os.ReadFile(filepath.Join(dir, lastReloadFile))
		if err != nil {
			continue
		}
		if _, live := runs.Live(dir); !live {
			continue
		}
		var r reloadResult
		if json.Unmarshal(b, &r) == nil {
			return ents[i].Name(), &r
		}
	}
	return "", nil
}

// notifySIGHUP catches SIGHUP from the start of serve, so that one that
// arrives while upstreams start does not end it (the default action):
// it reloads once the reloader runs. Call signal.Stop when done.
func notifySIGHUP() chan os.Signal {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	return hup
}

// configFiles are the configuration files a command reads: --config, or
// the default file if it exists, or none.
func configFiles(fs *pflag.FlagSet) []string {
	if file, _ := fs.GetString("config"); file != "" {
		return []string{file}
	}
	if _, err := os.Stat(config.DefaultFile); err == nil {
		return []string{config.DefaultFile}
	}
	return nil
}

// upstreamsFromFiles are the other clients' files upstreams_from names:
// reloads watch them too (config.Load reads them again each time).
func upstreamsFromFiles(cfg *config.Config) []string {
	var files []string
	for _, u := range cfg.UpstreamsFrom {
		files = append(files, config.ExpandHome(u.Path))
	}
	return files
}

// reloadLoad is how a serve's reloads load the configuration: as at
// start, but from the file read at start (configFiles) even when it was
// the default one, so that a ./toolgate.yaml gone since (moved away,
// deleted, an editor's save that unlinks first) fails the reload instead
// of loading the defaults alone (no upstreams, the default policy); an
// empty file fails it too (config.Options.RefuseEmpty).
func reloadLoad(fs *pflag.FlagSet, keys map[string]string) func() (*config.Config, error) {
	file := configPathOf(configFiles(fs))
	return func() (*config.Config, error) {
		return loadConfigFrom(config.Options{File: file, Flags: fs, FlagKeys: keys, RefuseEmpty: true})
	}
}

// startReloader watches the configuration of a serve: files are the
// files it is read from (the config file and the upstreams_from files).
func startReloader(ctx context.Context, a *app, srv *gateway.MCPServer, hup chan os.Signal, files []string, load func() (*config.Config, error)) (*reloader, error) {
	r := newReloader(a, srv, hup, load)
	return r, r.watch(ctx, files)
}

// newReloader returns the reloader of a serve whose MCP server is srv.
func newReloader(a *app, srv *gateway.MCPServer, hup chan os.Signal, load func() (*config.Config, error)) *reloader {
	return &reloader{a: a, srv: srv, load: load, cur: a.cfg, hup: hup,
		addSources: func(u *upstream.Upstream) {
			srv.AddPromptSource(u)
			srv.AddResourceSource(u)
		},
		removeSources: func(u *upstream.Upstream) {
			srv.RemovePromptSource(u)
			srv.RemoveResourceSource(u)
		},
	}
}
