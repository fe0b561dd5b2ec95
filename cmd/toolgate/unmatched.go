package main

import (
	"sync"

	"github.com/toolgate/toolgate/policy"
)

// Globs that match no tool are valid configuration and almost certainly a
// mistake (`policy.tools.deny: ["writefile"]` leaves write_file allowed),
// so they are reported: a WARN line each at start and after a reload, once
// every toolset has settled (an upstream still starting has not listed its
// tools yet), and in `toolgate tools` and `toolgate policy`.

// unmatchedGlobs are the policy's globs that match no tool served now.
func (a *app) unmatchedGlobs() []policy.UnmatchedGlob {
	var names []string
	for _, e := range a.catalog.Entries() {
		names = append(names, e.Tool.Name)
	}
	return a.policy.Current().Unmatched(names)
}

// settled reports whether no toolset is still starting.
func (a *app) settled() bool {
	for _, ts := range a.catalog.Toolsets() {
		if ts.Status.State == "starting" {
			return false
		}
	}
	return true
}

// globWarner logs each unmatched glob once per policy version.
type globWarner struct {
	mu     sync.Mutex
	policy *policy.Effective
	warned map[string]bool
}

// check logs the globs that newly match nothing; called when the catalog
// or the policy changes (never under a lock of the caller's).
func (w *globWarner) check(a *app) {
	if !a.settled() {
		return
	}
	cur := a.policy.Current()
	found := a.unmatchedGlobs()
	w.mu.Lock()
	if w.policy != cur {
		w.policy, w.warned = cur, map[string]bool{}
	}
	var fresh []policy.UnmatchedGlob
	for _, u := range found {
		if k := u.Key + "\x00" + u.Glob; !w.warned[k] {
			w.warned[k] = true
			fresh = append(fresh, u)
		}
	}
	w.mu.Unlock()
	for _, u := range fresh {
		a.log.Warn("policy: "+u.String(), "key", u.Key, "glob", u.Glob)
	}
}
