package main

import (
	"context"
	"maps"
	"slices"
	"sort"

	"github.com/spf13/pflag"

	"github.com/toolgate/toolgate/cmd/toolgate/internal/config"
	"github.com/toolgate/toolgate/gateway"
	"github.com/toolgate/toolgate/policy"
	"github.com/toolgate/toolgate/toolsets/discovery"
)

// Profiles (config profiles) and tool search (config discovery): the views
// of the catalog that clients connect through. Wiring only; a profile's
// rule is policy.Profile, the search and its listing rule are
// toolsets/discovery, and the pipeline's resolve stage enforces the view.

// addDiscovery adds the discovery toolset (find_tools, call_tool) unless
// discovery.mode is all.
func (a *app) addDiscovery(ctx context.Context) error {
	dc := a.cfg.Discovery
	if dc.Mode == discovery.ModeAll {
		return nil
	}
	pinned, err := policy.GlobSet("discovery.pinned", dc.Pinned)
	if err != nil {
		return usageError{err.Error()}
	}
	opts := discovery.Options{Catalog: a.catalog, Mode: dc.Mode, Threshold: dc.Threshold, Pinned: pinned}
	if a.hideDenied {
		opts.Visible = func(ctx context.Context, name string) bool {
			t, _, ok := a.catalog.Resolve(name)
			return ok && listable(a.policy.Decide(ctx, t))
		}
	}
	d, err := discovery.New(opts)
	if err != nil {
		return usageError{err.Error()}
	}
	a.discovery = d
	return a.catalog.Add(ctx, d)
}

// views returns the view of the plain endpoint (stdio, http.path) and the
// view of each profile by name. The plain endpoint is the profile named
// "default" if there is one, else the whole catalog; with tool search on,
// every view lists by its rule.
func (a *app) views() (plain gateway.View, named map[string]gateway.View, err error) {
	return a.viewsOf(a.cfg)
}

// viewsOf is [app.views] for a configuration.
func (a *app) viewsOf(cfg *config.Config) (plain gateway.View, named map[string]gateway.View, err error) {
	wrap := func(v gateway.View) gateway.View {
		if a.discovery != nil {
			return a.discovery.View(v)
		}
		return v
	}
	profiles, err := cfg.PolicyProfiles()
	if err != nil {
		return nil, nil, usageError{err.Error()}
	}
	named = map[string]gateway.View{}
	for name, prof := range profiles {
		named[name] = wrap(prof)
	}
	plain = named["default"]
	if plain == nil && a.discovery != nil {
		plain = wrap(nil)
	}
	return plain, named, nil
}

// profileView is the view a command serves: --profile NAME, else the
// plain endpoint's.
func (a *app) profileView(name string) (gateway.View, error) {
	plain, named, err := a.views()
	if err != nil || name == "" {
		return plain, err
	}
	if _, ok := named[name]; !ok {
		return nil, noProfile(name, slices.Collect(maps.Keys(named)))
	}
	return named[name], nil
}

// checkProfile refuses a --profile that the configuration does not
// define, before a command starts anything: serve and tools started every
// upstream (and serve made its run) before they said so.
func checkProfile(cfg *config.Config, fs *pflag.FlagSet) error {
	name, _ := fs.GetString("profile")
	if _, ok := cfg.Profiles[name]; name == "" || ok {
		return nil
	}
	return noProfile(name, slices.Collect(maps.Keys(cfg.Profiles)))
}

// noProfile is the usage error for a --profile not among those defined.
func noProfile(name string, have []string) error {
	sort.Strings(have)
	if len(have) == 0 {
		return usagef("--profile %s: no profiles are configured (config key profiles)", name)
	}
	return usagef("--profile %s: no such profile; configured: %v", name, have)
}

// viewLists says whether tools/list shows the tool through the view, and
// whether the view admits it at all.
func viewLists(v gateway.View, tool string) (admitted, listed bool) {
	if v == nil {
		return true, true
	}
	if !v.Admits(tool) {
		return false, false
	}
	if lv, ok := v.(gateway.ListingView); ok {
		return true, lv.Lists(tool)
	}
	return true, true
}

// viewSet is the views in force; a reload that changes profiles replaces
// it, and the serving endpoints look their view up per request.
type viewSet struct {
	plain gateway.View
	named map[string]gateway.View
	// live is a [liveView] of each profile in named, made once: what HTTP's
	// /mcp/NAME serves through.
	live map[string]gateway.View
}

// setViews builds the views of cfg and puts them in force.
func (a *app) setViews(cfg *config.Config) error {
	plain, named, err := a.viewsOf(cfg)
	if err != nil {
		return err
	}
	live := make(map[string]gateway.View, len(named))
	for name := range named {
		live[name] = liveView{a: a, name: name}
	}
	a.liveViews.Store(&viewSet{plain: plain, named: named, live: live})
	return nil
}

// profileLookup finds a profile in force, for HTTP's /mcp/NAME. Its view
// is a [liveView], not the profile's view of the moment: what a request
// keeps of it (a resource subscription, which outlives the request) then
// follows a later reload's edit of the profile, and its removal, which
// admits nothing.
func (a *app) profileLookup(name string) (gateway.View, bool) {
	vs := a.liveViews.Load()
	if vs == nil {
		return nil, false
	}
	v, ok := vs.live[name]
	return v, ok
}

// liveView is the view of a stdio serve (--profile NAME, or the plain
// endpoint's with name ""), looked up in the views in force at each use,
// so a reload's profiles apply to its next list and call.
type liveView struct {
	a    *app
	name string
}

func (v liveView) current() gateway.View {
	vs := v.a.liveViews.Load()
	if vs == nil {
		return nil
	}
	if v.name == "" {
		return vs.plain
	}
	return vs.named[v.name]
}

// Name is the profile's; the plain endpoint's is "default" when a profile
// of that name is in force, else "" (the whole catalog).
func (v liveView) Name() string {
	if v.name != "" {
		return v.name
	}
	if cur := v.current(); cur != nil {
		return cur.Name()
	}
	return ""
}

// Admits implements [gateway.View]. A reload cannot remove serve's own
// profile (app.servedProfile); should it be missing all the same, it
// admits nothing.
func (v liveView) Admits(tool string) bool {
	cur := v.current()
	if cur == nil {
		return v.name == ""
	}
	return cur.Admits(tool)
}

// Lists implements [gateway.ListingView].
func (v liveView) Lists(tool string) bool {
	if lv, ok := v.current().(gateway.ListingView); ok {
		return lv.Lists(tool)
	}
	return true
}
