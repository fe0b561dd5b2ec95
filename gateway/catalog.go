package gateway

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
)

// Catalog aggregates toolsets into the one list of tools the gateway
// serves, and resolves tool names for the pipeline.
//
// Names are unique across the catalog. When two toolsets offer the same
// name, the toolset added first keeps it and the other tool is served under
// a deterministic new name, `<name>_<6 hex digits>` (a hash of its toolset
// and name, shortened to fit 64 characters); the conflict is logged and
// listed by [Catalog.Conflicts]. No tool is ever dropped or overwritten,
// with one exception: a tool whose name falls in the namespace of another
// toolset (see [Namespacer]) is not served at all, whichever toolset came
// first, since the policy written for that namespace would reach it; the
// refusal is logged and listed as a conflict too.
//
// Resolve reads an immutable snapshot and takes no lock, so it costs
// nothing on the call path; refreshes build a new snapshot and swap it in.
type Catalog struct {
	log *slog.Logger

	mu           sync.Mutex // serializes changes
	toolsets     []Toolset
	refreshMu    map[string]*sync.Mutex // one refresh of a toolset at a time
	lists        map[string][]*Tool
	unoffered    map[string]map[string]string // per toolset, taken with its list
	namespaces   map[string]string            // per toolset, its [Namespacer] namespace
	errs         map[string]error
	subs         []func()
	conflictSubs []func(Conflict)

	snap      atomic.Pointer[snapshot]
	announced atomic.Uint64
}

// Entry is one tool as the catalog serves it.
type Entry struct {
	Tool    *Tool
	Toolset string
	// Original is the tool's own name when a conflict made the catalog
	// serve it under another; otherwise it is empty.
	Original string
}

// Conflict records two toolsets offering the same tool name, or a tool
// refused because its name falls in another toolset's namespace.
type Conflict struct {
	Name     string `json:"name"`
	Kept     string `json:"kept_by"`
	Renamed  string `json:"renamed_in"`
	ServedAs string `json:"served_as"`
	// Namespace is set when the tool of Renamed is not served at all
	// (ServedAs is empty): Name is in Namespace, the namespace of toolset
	// Kept ([Namespacer]).
	Namespace string `json:"namespace,omitempty"`
}

// ToolsetInfo describes a toolset in the catalog.
type ToolsetInfo struct {
	Name   string        `json:"name"`
	Tools  int           `json:"tools"`
	Status ToolsetStatus `json:"status"`
}

type snapshot struct {
	entries   []Entry // sorted by served name
	byName    map[string]Entry
	byToolset map[string][]*Tool // served tools of each toolset, sorted by served name
	conflicts []Conflict
	unoffered map[string]string // tool name -> why it is not offered
	// emptyPrefixes are "<namespace>__" of the toolsets that serve no
	// tools (an upstream not connected): a call of a name that starts so
	// is told why ([Catalog.WhyNotFound]).
	emptyPrefixes []string
}

// NewCatalog returns an empty catalog. A nil logger discards logs.
func NewCatalog(logger *slog.Logger) *Catalog {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	c := &Catalog{log: logger, lists: map[string][]*Tool{}, unoffered: map[string]map[string]string{}, namespaces: map[string]string{},
		errs: map[string]error{}, refreshMu: map[string]*sync.Mutex{}}
	c.snap.Store(&snapshot{byName: map[string]Entry{}})
	return c
}

// Add adds a toolset, lists its tools, and subscribes to its changes if it
// is a [ChangeNotifier]. Toolset names must be unique. A toolset that fails
// to list its tools is still added (with no tools, and its error reported);
// Add returns that error for the caller to log.
func (c *Catalog) Add(ctx context.Context, ts Toolset) error {
	return c.AddAll(ctx, []Toolset{ts})[0]
}

// AddAll adds toolsets as [Catalog.Add] does, in order (the first keeps a
// contested name), but builds the catalog once for all of them and tells
// its listeners once: start-up adds its upstreams so, where adding them
// one by one would rebuild the whole catalog once per upstream (with 20
// upstreams of 100 tools, 21,000 entries built and thrown away to serve
// 2,000). It returns each toolset's error, in order: nil when it was added
// and listed.
func (c *Catalog) AddAll(ctx context.Context, tss []Toolset) []error {
	errs := make([]error, len(tss))
	nss := make([]string, len(tss))
	for i, ts := range tss {
		nss[i] = namespaceOf(ts) // outside c.mu: other code
	}
	// Each new toolset's refresh lock is held until its first listing is
	// installed, so a change it announces meanwhile is listed after it.
	rmus := make([]*sync.Mutex, len(tss))
	c.mu.Lock()
	for i, ts := range tss {
		if slices.ContainsFunc(c.toolsets, func(have Toolset) bool { return have.Name() == ts.Name() }) {
			errs[i] = fmt.Errorf("toolset %q added twice", ts.Name())
			continue
		}
		c.toolsets = append(c.toolsets, ts)
		rmus[i] = new(sync.Mutex)
		rmus[i].Lock()
		c.refreshMu[ts.Name()] = rmus[i]
		c.namespaces[ts.Name()] = nss[i]
	}
	c.mu.Unlock()
	if !slices.ContainsFunc(rmus, func(m *sync.Mutex) bool { return m != nil }) {
		return errs // nothing added: nothing changed
	}

	type listing struct {
		tools     []*Tool
		unoffered map[string]string
		err       error
	}
	lists := make([]listing, len(tss))
	for i, ts := range tss {
		if rmus[i] == nil {
			continue
		}
		c.follow(ts)
		tools, err := ts.Tools(ctx) // outside c.mu: an upstream may be slow
		lists[i] = listing{tools, unofferedOf(ts), err}
	}
	c.mu.Lock()
	for i, ts := range tss {
		if rmus[i] != nil && c.refreshMu[ts.Name()] == rmus[i] { // not removed meanwhile
			c.setListingLocked(ts.Name(), lists[i].tools, lists[i].unoffered, lists[i].err)
		}
	}
	prev, next, subs := c.rebuildLocked()
	c.mu.Unlock()
	for i, ts := range tss {
		if rmus[i] != nil {
			rmus[i].Unlock()
			errs[i] = c.listingError(ts.Name(), lists[i].err)
		}
	}
	c.announce(prev, next, subs)
	return errs
}

// follow refreshes ts whenever it announces a change, if it is a
// [ChangeNotifier].
func (c *Catalog) follow(ts Toolset) {
	if n, ok := ts.(ChangeNotifier); ok {
		name := ts.Name()
		n.OnToolsChanged(func() {
			c.announced.Add(1)
			_ = c.Refresh(context.Background(), name)
		})
	}
}

// Announcements counts the changes toolsets announced (the callbacks of
// [ChangeNotifier]s): the MCP mirror tells clients of each, even when the
// tools it serves look the same after it.
func (c *Catalog) Announcements() uint64 { return c.announced.Load() }

// Remove takes a toolset out of the catalog, tells the change listeners
// and then closes it (if it is a [Closer]): its tools are gone before it
// stops. Removing a name the catalog does not have is an error.
func (c *Catalog) Remove(toolset string) error {
	ts, err := c.Detach(toolset)
	if err != nil {
		return err
	}
	if cl, ok := ts.(Closer); ok {
		if err := cl.Close(); err != nil {
			return fmt.Errorf("closing toolset %q: %w", toolset, err)
		}
	}
	return nil
}

// Detach takes a toolset out of the catalog and tells the change
// listeners, as [Catalog.Remove] does, but leaves it open and returns it:
// calls in flight may still be using it, and the caller closes it once
// they are done. Detaching a name the catalog does not have is an error.
func (c *Catalog) Detach(toolset string) (Toolset, error) {
	c.mu.Lock()
	i, ts := c.toolsetLocked(toolset)
	if ts == nil {
		c.mu.Unlock()
		return nil, fmt.Errorf("no toolset %q", toolset)
	}
	c.toolsets = slices.Delete(c.toolsets, i, i+1)
	delete(c.refreshMu, toolset)
	delete(c.lists, toolset)
	delete(c.unoffered, toolset)
	delete(c.namespaces, toolset)
	delete(c.errs, toolset)
	prev, next, subs := c.rebuildLocked()
	c.mu.Unlock()

	c.announce(prev, next, subs)
	return ts, nil
}

// Replace puts ts in the place of the toolset of the same name, in one
// step: clients see the new tools take the old ones' place in one list
// change, never a list without them. It returns the old toolset, which
// calls in flight may still be using: the caller closes it once they are
// done (at shutdown, say). A toolset that fails to list its tools is still
// put in place, with its error reported, as with [Catalog.Add].
func (c *Catalog) Replace(ctx context.Context, ts Toolset) (old Toolset, err error) {
	name := ts.Name()
	tools, listErr := ts.Tools(ctx) // outside c.mu: it may be slow
	unoffered := unofferedOf(ts)
	ns := namespaceOf(ts)
	c.mu.Lock()
	i, old := c.toolsetLocked(name)
	if old == nil {
		c.mu.Unlock()
		return nil, fmt.Errorf("no toolset %q to replace", name)
	}
	c.toolsets[i] = ts
	c.namespaces[name] = ns
	c.refreshMu[name] = new(sync.Mutex) // a refresh of the old toolset in flight is dropped
	c.setListingLocked(name, tools, unoffered, listErr)
	prev, next, subs := c.rebuildLocked()
	c.mu.Unlock()

	c.follow(ts)
	c.announce(prev, next, subs)
	return old, c.listingError(name, listErr)
}

// setListingLocked records a toolset's listing: its tools and those it
// does not offer, or why there are none. Callers hold c.mu, and rebuild.
func (c *Catalog) setListingLocked(toolset string, tools []*Tool, unoffered map[string]string, err error) {
	c.unoffered[toolset] = unoffered
	if err != nil {
		c.errs[toolset] = err
		delete(c.lists, toolset)
	} else {
		delete(c.errs, toolset)
		c.lists[toolset] = tools
	}
}

// rebuildLocked builds and installs a new snapshot from the lists, and
// returns the previous and new snapshots and the listeners to tell (by
// [Catalog.announce]) once c.mu is released. Callers hold c.mu.
func (c *Catalog) rebuildLocked() (prev, next *snapshot, subs []func()) {
	prev = c.snap.Load()
	next = c.build(prev)
	c.snap.Store(next)
	return prev, next, append([]func(){}, c.subs...)
}

// announce reports the conflicts new in next and tells the change
// listeners. Callers do not hold c.mu.
func (c *Catalog) announce(prev, next *snapshot, subs []func()) {
	c.reportNewConflicts(prev.conflicts, next.conflicts)
	for _, f := range subs {
		f()
	}
}

// Refresh lists one toolset's tools again and rebuilds the catalog. It
// returns the toolset's listing error, if any (its tools are then left out
// until a later refresh succeeds).
func (c *Catalog) Refresh(ctx context.Context, toolset string) error {
	c.mu.Lock()
	_, ts := c.toolsetLocked(toolset)
	rmu := c.refreshMu[toolset]
	c.mu.Unlock()
	if ts == nil {
		return fmt.Errorf("no toolset %q", toolset)
	}
	// Refreshes of one toolset run one at a time, so an older listing never
	// replaces a newer one; other toolsets are not held up.
	rmu.Lock()
	defer rmu.Unlock()
	tools, err := ts.Tools(ctx) // outside c.mu: an upstream may be slow
	unoffered := unofferedOf(ts)

	c.mu.Lock()
	if c.refreshMu[toolset] != rmu { // removed (or replaced) meanwhile
		c.mu.Unlock()
		return nil
	}
	c.setListingLocked(toolset, tools, unoffered, err)
	prev, next, subs := c.rebuildLocked()
	c.mu.Unlock()

	c.announce(prev, next, subs)
	return c.listingError(toolset, err)
}

// listingError is the error a toolset's failed listing is reported as.
// It is logged at debug only: the toolset says why itself (an upstream
// logs each failed connection once), and the caller gets the error.
func (c *Catalog) listingError(toolset string, err error) error {
	if err == nil {
		return nil
	}
	c.log.Debug("toolset unavailable", "toolset", toolset, "err", err)
	return fmt.Errorf("listing tools of %q: %w", toolset, err)
}

// build makes a snapshot from the current lists, in toolset order. A name
// served in prev keeps its owner while the owner still offers the tool:
// a toolset that lists a tool of that name later (an upstream re-listing
// after list_changed, a toolset added by a reload) is the newcomer and is
// renamed, whatever the toolset order, so that no toolset can take over
// another's tool name at runtime. Callers hold c.mu.
func (c *Catalog) build(prev *snapshot) *snapshot {
	s := &snapshot{byName: map[string]Entry{}, unoffered: map[string]string{}}
	owners := c.namespaceOwners()
	// foreign are the tools named in another toolset's namespace, with
	// that namespace and its owner, worked out once for both passes.
	type inNamespace struct{ owner, ns string }
	foreign := map[*Tool]inNamespace{}
	if len(owners) > 0 {
		for _, ts := range c.toolsets {
			for _, t := range c.lists[ts.Name()] {
				if owner, ns := inForeignNamespace(owners, ts.Name(), c.namespaces[ts.Name()], t.Name); owner != "" {
					foreign[t] = inNamespace{owner, ns}
				}
			}
		}
	}
	// The owners of names already served keep them.
	for _, ts := range c.toolsets {
		for _, t := range c.lists[ts.Name()] {
			if _, refused := foreign[t]; refused {
				continue
			}
			if old, ok := prev.byName[t.Name]; ok && old.Toolset == ts.Name() && old.Original == "" {
				s.byName[t.Name] = Entry{Tool: t, Toolset: ts.Name()}
			}
		}
	}
	refused := map[string]string{} // tool name -> why
	for _, ts := range c.toolsets {
		maps.Copy(s.unoffered, c.unoffered[ts.Name()])
		for _, t := range c.lists[ts.Name()] {
			if f, ok := foreign[t]; ok {
				s.conflicts = append(s.conflicts, Conflict{Name: t.Name, Kept: f.owner, Renamed: ts.Name(), Namespace: f.ns})
				refused[t.Name] = fmt.Sprintf("the tool %s of %s is not served: its name is in the namespace %s__ of %s, whose policy would apply to it", t.Name, ts.Name(), f.ns, f.owner)
				continue
			}
			e := Entry{Tool: t, Toolset: ts.Name()}
			if kept, taken := s.byName[t.Name]; taken && kept.Toolset == ts.Name() && kept.Original == "" && kept.Tool == t {
				s.entries = append(s.entries, e) // an owner's, claimed above
				continue
			} else if taken {
				renamed, err := t.Renamed(freeConflictName(s, ts.Name(), t.Name))
				if err != nil { // cannot happen: conflictName fits the rules
					c.log.Error("renaming conflicting tool", "tool", t.Name, "toolset", ts.Name(), "err", err)
					continue
				}
				s.conflicts = append(s.conflicts, Conflict{Name: t.Name, Kept: kept.Toolset, Renamed: ts.Name(), ServedAs: renamed.Name})
				e = Entry{Tool: renamed, Toolset: ts.Name(), Original: t.Name}
			}
			s.byName[e.Tool.Name] = e
			s.entries = append(s.entries, e)
		}
	}
	for name, why := range refused {
		if _, served := s.byName[name]; !served {
			s.unoffered[name] = why
		}
	}
	sort.Slice(s.entries, func(i, j int) bool { return s.entries[i].Tool.Name < s.entries[j].Tool.Name })
	s.byToolset = map[string][]*Tool{}
	for _, e := range s.entries {
		s.byToolset[e.Toolset] = append(s.byToolset[e.Toolset], e.Tool)
	}
	for ns, owner := range owners {
		if len(s.byToolset[owner]) == 0 {
			s.emptyPrefixes = append(s.emptyPrefixes, ns+"__")
		}
	}
	return s
}

// toolsetLocked finds the toolset named name and its index in
// c.toolsets; nil and -1 when there is none. Callers hold c.mu.
func (c *Catalog) toolsetLocked(name string) (int, Toolset) {
	i := slices.IndexFunc(c.toolsets, func(t Toolset) bool { return t.Name() == name })
	if i < 0 {
		return -1, nil
	}
	return i, c.toolsets[i]
}

// namespaceOwners maps each toolset namespace to its toolset. Callers
// hold c.mu.
func (c *Catalog) namespaceOwners() map[string]string {
	owners := map[string]string{}
	for _, ts := range c.toolsets {
		if ns := c.namespaces[ts.Name()]; ns != "" {
			owners[ns] = ts.Name()
		}
	}
	return owners
}

// inForeignNamespace returns the toolset and namespace that a tool of
// toolset (whose own namespace is own) named name falls in
// ("<namespace>__..."), when that is another toolset's; the longest
// namespace decides. A namespace the toolset has itself is never foreign,
// also when another toolset claims it too (a disabled upstream of the
// same prefix, which owners may name instead).
func inForeignNamespace(owners map[string]string, toolset, own, name string) (owner, namespace string) {
	owner, namespace, ok := namespaceOfName(owners, name)
	if !ok || owner == toolset || namespace == own {
		return "", ""
	}
	return owner, namespace
}

// namespaceOfName finds the longest namespace of owners that name is in
// ("<namespace>__..."), and its owner.
func namespaceOfName[T any](owners map[string]T, name string) (owner T, namespace string, ok bool) {
	if len(owners) == 0 {
		return owner, "", false
	}
	for i := strings.Index(name, "__"); i >= 0; {
		if o, found := owners[name[:i]]; found {
			owner, namespace, ok = o, name[:i], true
		}
		j := strings.Index(name[i+1:], "__")
		if j < 0 {
			break
		}
		i += 1 + j
	}
	return owner, namespace, ok
}

// namespaceOf asks a toolset its namespace (if it has one), outside c.mu.
func namespaceOf(ts Toolset) string {
	if n, ok := ts.(Namespacer); ok {
		return n.Namespace()
	}
	return ""
}

// unofferedOf asks a toolset what it does not offer (if it says), with
// its listing and outside c.mu: a toolset's method is other code, which
// may take locks of its own.
func unofferedOf(ts Toolset) map[string]string {
	if u, ok := ts.(Unofferer); ok {
		return u.Unoffered()
	}
	return nil
}

// freeConflictName is the name a tool that lost a name conflict is served
// under: conflictName, or, should another tool already be served under
// that (a toolset may list any name), the first of it with _2, _3... that
// is free, so that every name is served once and a renamed tool never
// takes another's place.
func freeConflictName(s *snapshot, toolset, name string) string {
	base := conflictName(toolset, name)
	for i, n := 1, base; ; i++ {
		if _, taken := s.byName[n]; !taken {
			return n
		}
		n = fmt.Sprintf("%s_%d", base, i+1)
	}
}

// conflictName is the deterministic name of a tool that lost a name
// conflict.
func conflictName(toolset, name string) string {
	sum := sha256.Sum256([]byte(toolset + "\x00" + name))
	suffix := "_" + hex.EncodeToString(sum[:3])
	if len(name)+len(suffix) > 64 {
		name = name[:64-len(suffix)]
	}
	return name + suffix
}

// reportNewConflicts logs each conflict in now that was not in old and
// tells the conflict listeners. Callers do not hold c.mu.
func (c *Catalog) reportNewConflicts(old, now []Conflict) {
	seen := map[Conflict]bool{}
	for _, cf := range old {
		seen[cf] = true
	}
	c.mu.Lock()
	subs := c.conflictSubs
	c.mu.Unlock()
	for _, cf := range now {
		if !seen[cf] {
			if cf.Namespace != "" {
				c.log.Warn("tool not served: its name is in another toolset's namespace", "name", cf.Name, "toolset", cf.Renamed,
					"namespace", cf.Namespace+"__", "namespace_of", cf.Kept)
			} else {
				c.log.Warn("tool name conflict", "name", cf.Name, "kept_by", cf.Kept, "renamed_in", cf.Renamed, "served_as", cf.ServedAs)
			}
			for _, f := range subs {
				f(cf)
			}
		}
	}
}

// OnConflict registers f to be told of every new name conflict (after the
// catalog that has it is in place), for the run's records.
func (c *Catalog) OnConflict(f func(Conflict)) {
	c.mu.Lock()
	c.conflictSubs = append(slices.Clip(c.conflictSubs), f)
	c.mu.Unlock()
}

// Resolve implements [Resolver].
func (c *Catalog) Resolve(name string) (*Tool, string, bool) {
	e, ok := c.snap.Load().byName[name]
	return e.Tool, e.Toolset, ok
}

// WhyNotFound says why a name that is not served is not offered (a toolset
// chose not to offer it), or "" for a name nobody knows.
func (c *Catalog) WhyNotFound(name string) string {
	s := c.snap.Load()
	if _, served := s.byName[name]; served {
		return ""
	}
	if why := s.unoffered[name]; why != "" {
		return why
	}
	return c.whyNamespaceEmpty(name)
}

// whyNamespaceEmpty says why a name in a toolset's namespace
// ("<namespace>__...") is not served when that toolset has no tools to
// serve: an upstream that never connected, or whose listing failed. A
// call of one of its tools was "not found", as if no such server were
// configured. "" when the name is in no such namespace.
func (c *Catalog) whyNamespaceEmpty(name string) string {
	s := c.snap.Load()
	if !slices.ContainsFunc(s.emptyPrefixes, func(p string) bool { return strings.HasPrefix(name, p) }) {
		return ""
	}
	c.mu.Lock()
	owner, _, ok := namespaceOfName(c.namespaceOwners(), name)
	var ts Toolset
	var listErr error
	if ok && len(s.byToolset[owner]) == 0 {
		listErr = c.errs[owner]
		_, ts = c.toolsetLocked(owner)
	}
	c.mu.Unlock()
	if ts == nil {
		return ""
	}
	// Its status is asked outside c.mu: the toolset takes its own locks.
	if sr, ok := ts.(StatusReporter); ok {
		if st := sr.Status(); st.State != "ready" {
			return fmt.Sprintf("toolset %q serves no tools now (%s: %s)", owner, st.State, st.Detail)
		}
	}
	if listErr != nil {
		return fmt.Sprintf("toolset %q serves no tools now (listing them failed: %v)", owner, listErr)
	}
	return ""
}

// ToolsOf returns the tools served of the toolset named toolset (under
// their served names), sorted by name; none for a toolset the catalog
// does not hold. The slice is the catalog's: do not change it.
func (c *Catalog) ToolsOf(toolset string) []*Tool {
	return c.snap.Load().byToolset[toolset]
}

// Entries returns the tools served, sorted by name.
func (c *Catalog) Entries() []Entry {
	return append([]Entry(nil), c.snap.Load().entries...)
}

// Conflicts returns the name conflicts of the current catalog.
func (c *Catalog) Conflicts() []Conflict {
	return append([]Conflict{}, c.snap.Load().conflicts...) // [] in JSON, never null
}

// Toolsets describes every toolset in the order they were added.
func (c *Catalog) Toolsets() []ToolsetInfo {
	c.mu.Lock()
	toolsets := slices.Clone(c.toolsets)
	infos := make([]ToolsetInfo, 0, len(toolsets))
	for _, ts := range toolsets {
		info := ToolsetInfo{Name: ts.Name(), Tools: len(c.lists[ts.Name()]), Status: ToolsetStatus{State: "ready"}}
		if err := c.errs[ts.Name()]; err != nil {
			info.Status = ToolsetStatus{State: "failed", Detail: err.Error()}
		}
		infos = append(infos, info)
	}
	c.mu.Unlock()
	// A toolset's own status is asked outside c.mu: it takes its locks.
	for i, ts := range toolsets {
		if sr, ok := ts.(StatusReporter); ok {
			infos[i].Status = sr.Status()
		}
	}
	return infos
}

// RootsFollower is a toolset that passes the client's roots on (an
// upstream with forward_roots): it is told when the client says its roots
// changed, or the client whose roots are passed on changed
// ([MCPServer.ClientRoots]), to tell those it passed them to.
type RootsFollower interface {
	RootsChanged()
}

// RootsChanged tells every toolset that follows the client's roots that
// they changed (notifications/roots/list_changed from a client, or another
// client to ask). The toolsets are told outside c.mu.
func (c *Catalog) RootsChanged() {
	c.mu.Lock()
	toolsets := slices.Clone(c.toolsets)
	c.mu.Unlock()
	for _, ts := range toolsets {
		if f, ok := ts.(RootsFollower); ok {
			f.RootsChanged()
		}
	}
}

// OnChange registers f to be called after every rebuild of the catalog.
func (c *Catalog) OnChange(f func()) {
	c.mu.Lock()
	c.subs = append(c.subs, f)
	c.mu.Unlock()
}

// Close closes every toolset that is a [Closer], concurrently, and returns
// their errors joined, in order of addition.
func (c *Catalog) Close() error {
	c.mu.Lock()
	toolsets := append([]Toolset(nil), c.toolsets...)
	c.mu.Unlock()
	// All at once: an upstream's Close gives its child a grace to exit
	// after SIGTERM (2 s), and twenty of them one after another would
	// hold the gateway's exit up to forty seconds.
	errs := make([]error, len(toolsets))
	var wg sync.WaitGroup
	for i, ts := range toolsets {
		if cl, ok := ts.(Closer); ok {
			wg.Go(func() {
				if err := cl.Close(); err != nil {
					errs[i] = fmt.Errorf("closing toolset %q: %w", ts.Name(), err)
				}
			})
		}
	}
	wg.Wait()
	return errors.Join(errs...)
}
