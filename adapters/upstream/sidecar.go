package upstream

import (
	"context"
	"encoding/json"
	"slices"
)

// Two children, one listing.
//
// An upstream that speaks both eras has two connections (modern.go): the
// main one, of 2025-11-25, and the 2026-07-28 sidecar opened for the
// callers of that era. Over stdio each is a process of its own, and what
// a process changes at run time (a tool or prompt it adds or removes) is
// its own: the other child does not have it.
//
// So while the sidecar is open, toolgate follows both. The sidecar has
// its own subscriptions/listen stream, whose list_changed notifications
// re-list like the main connection's; a re-listing of tools or prompts
// asks both children and serves the union (the main child's entry where
// both list a name). A tool or prompt only one child lists is routed to
// that child whatever the caller's era: a 2025-11-25 caller calling a
// tool only the sidecar has goes over the sidecar (its questions come
// back as input_required rounds, which the MCP mirror asks the caller
// with elicitation/create and the like), and a 2026-07-28 caller calling
// a tool only the main child has goes over the main connection (the
// upstream's server-to-client requests are asked of it in rounds). What
// both list follows the caller's era, as before ([Upstream.connFor]).
//
// When the sidecar opens, the lists are taken again (the main child may
// have changed since it started); when it dies with entries of its own,
// again, without it. Resources stay the main child's: a resource read or
// subscription names a URI, which a template may match on either side.

// sidecar returns the open, live 2026-07-28 connection beside a
// 2025-11-25 main one, or nil; it never opens one.
func (u *Upstream) sidecar() *conn {
	u.modernMu.Lock()
	s := u.modern
	u.modernMu.Unlock()
	if s == nil {
		return nil
	}
	select {
	case <-s.done:
	default:
		return nil // being opened
	}
	if s.c == nil || s.c.isDead() {
		return nil
	}
	return s.c
}

// followSidecar follows the sidecar c for its lifetime: its list changes
// (listen), and the listing when it opens and, if the two children's
// lists differed, when it dies.
func (u *Upstream) followSidecar(c *conn) {
	u.relistBoth(c)
	c.listen()
	<-c.dead
	if u.splitOn.Load() {
		u.relistBoth(c)
	}
}

// relistBoth schedules a re-listing of the tools and prompts c serves.
func (u *Upstream) relistBoth(c *conn) {
	if c.caps.Tools != nil {
		u.scheduleRelist(listTools)
	}
	if c.caps.Prompts != nil {
		u.scheduleRelist(listPrompts)
	}
}

// listBoth lists one kind on the main connection and, when the sidecar
// side is open, on it too. It returns the union, and the names only one
// of them lists (true for the sidecar's); a sidecar whose listing fails
// is left out.
func (u *Upstream) listBoth(ctx context.Context, main, side *conn, list func(*conn, context.Context) ([]json.RawMessage, error)) ([]json.RawMessage, map[string]bool, error) {
	raw, err := list(main, ctx)
	if err != nil || side == nil {
		return raw, nil, err
	}
	sideRaw, err := list(side, ctx)
	if err != nil {
		u.log.Warn("listing on the 2026-07-28 connection failed; serving the main connection's list", "err", u.errText(err))
		return raw, nil, nil
	}
	mainNames, sideNames := entryNames(raw), entryNames(sideRaw)
	split := map[string]bool{}
	for _, n := range mainNames {
		if !slices.Contains(sideNames, n) {
			split[n] = false
		}
	}
	for i, n := range sideNames {
		if n != "" && !slices.Contains(mainNames, n) {
			split[n] = true
			raw = append(raw, sideRaw[i])
		}
	}
	return raw, split, nil
}

// entryNames are the names of a list's entries ("" for one without).
func entryNames(raws []json.RawMessage) []string {
	out := make([]string, len(raws))
	for i, b := range raws {
		var e struct {
			Name string `json:"name"`
		}
		if json.Unmarshal(b, &e) == nil {
			out[i] = e.Name
		}
	}
	return out
}

// setSplit records which names of kind k only one child lists. Callers
// hold u.mu.
func (u *Upstream) setSplit(k listKind, split map[string]bool) {
	if len(split) == 0 {
		delete(u.split, k)
	} else {
		if u.split == nil {
			u.split = map[listKind]map[string]bool{}
		}
		u.split[k] = split
	}
	u.splitOn.Store(len(u.split) > 0)
}

// connForName is [Upstream.connFor] for a request about one tool or
// prompt (kind k, the upstream's name for it; "" for none): one that only
// one child lists goes to that child's connection, whatever the caller's
// era (pinned).
func (u *Upstream) connForName(ctx context.Context, main *conn, k listKind, name string) (c *conn, caps json.RawMessage, pinned bool) {
	if u.splitOn.Load() {
		u.mu.Lock()
		side, only := u.split[k][name]
		u.mu.Unlock()
		switch {
		case only && !side:
			return main, nil, true
		case only:
			if sc := u.sidecar(); sc != nil {
				return sc, u.callerCaps(ctx), true
			}
		}
	}
	c, caps = u.connFor(ctx, main)
	return c, caps, false
}
