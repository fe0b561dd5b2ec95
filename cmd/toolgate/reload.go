package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/spf13/pflag"
	"github.com/toolgate/toolgate/cmd/toolgate/internal/config"
	"github.com/toolgate/toolgate/gateway"
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
	load func() (*config.Config, error)
	// addSources gives an upstream started by a reload to the MCP server
	// as a prompt and resource source.
	addSources func(*upstreamSource)
	cur        *config.Config // what the gateway runs with
	hup        chan os.Signal // SIGHUP, from before the app was built
	last       atomic.Pointer[reloadResult]
}

// watch reloads on every debounced change of one of files and on SIGHUP,
// until ctx ends.
func (r *reloader) watch(ctx context.Context, files []string) error {
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
	defer r.last.Store(res)
	next, err := r.load()
	if err != nil {
		res.Error = err.Error()
		r.a.log.Error("config reload failed; still serving with the previous configuration", "trigger", trigger, "err", err)
		r.event(map[string]any{"trigger": trigger, "ok": false, "error": res.Error})
		return
	}
	ch := config.Diff(r.cur, next)
	res.OK, res.Changes = true, &ch
	if ch.Empty() {
		r.a.log.Info("config reloaded; nothing changed", "trigger", trigger)
		return
	}
	if len(ch.Fixed) > 0 {
		r.a.log.Warn("config reload: these settings cannot change while serving; they keep their values until restart", "keys", ch.Fixed)
	}
	if len(ch.Settings) > 0 {
		r.a.log.Warn("config reload: these settings apply at the next start", "keys", ch.Settings)
	}
	r.applyUpstreams(ctx, ch, next)
	r.a.log.Info("config reloaded", "trigger", trigger, "added", ch.Added, "removed", ch.Removed, "changed", ch.Changed)
	r.event(map[string]any{"trigger": trigger, "ok": true, "added": ch.Added, "removed": ch.Removed,
		"changed": ch.Changed, "settings": ch.Settings, "fixed": ch.Fixed})
}

// applyUpstreams stops removed upstreams, restarts changed ones and starts
// added ones; the others keep their processes and sessions. It does not
// wait for new upstreams: their tools appear when they connect, and
// clients are told with list_changed.
func (r *reloader) applyUpstreams(ctx context.Context, ch config.Changes, next *config.Config) {
	for _, name := range append(append([]string(nil), ch.Removed...), ch.Changed...) {
		if err := r.a.catalog.Remove(name); err != nil {
			r.a.log.Warn("config reload: stopping upstream", "upstream", name, "err", err)
		}
		if src := r.a.upSources[name]; src != nil {
			src.retire()
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
			r.a.log.Warn("upstream not ready; its tools will appear when it connects", "upstream", u.Name(), "err", err)
		}
		if r.addSources != nil {
			r.addSources(r.a.upstreamSource(u))
		}
	}
	cur := *r.cur // settings other than upstreams keep their values
	cur.Upstreams = next.Upstreams
	r.cur = &cur
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

// startReloader watches the configuration of a serve: files are the
// files it is read from.
//
// TODO(h7 upstreams_from): watch the upstreams_from files too, by adding
// them to files; load (config.Load) reads them again on each reload.
// TODO(h3 glob warnings): once the check of (config, tool names) lands,
// log its warnings after each successful reload.
func startReloader(ctx context.Context, a *app, srv *gateway.MCPServer, hup chan os.Signal, files []string, load func() (*config.Config, error)) (*reloader, error) {
	r := &reloader{a: a, load: load, cur: a.cfg, hup: hup, addSources: func(u *upstreamSource) {
		srv.AddPromptSource(u)
		srv.AddResourceSource(u)
	}}
	return r, r.watch(ctx, files)
}
