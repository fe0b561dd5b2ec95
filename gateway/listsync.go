package gateway

import "sync/atomic"

// listSync is the state of one served list (tools, prompts, resources)
// between its syncs. Each sync takes a generation before it reads its
// sources, so that overlapping syncs install in order (an older listing
// never replaces a newer one), and clients are told of a listing when it
// differs from the one they have (its digest) or when a source announced
// a change since the last one they were told of: an upstream that sends
// list_changed may have changed what a tool does without changing how it
// is described, so its word is passed on even then. A reload, a
// reconnection or toolgate's own re-listing tells clients only of a
// difference.
type listSync struct {
	gen       atomic.Int64
	announced atomic.Uint64 // the sources' announcements (their change callbacks)

	// guarded by MCPServer.installMu
	installed int64
	digest    [32]byte
	told      uint64 // the announcements the installed listing covers
}

// announce counts a source's announcement of a change.
func (l *listSync) announce() { l.announced.Add(1) }

// begin starts a sync; external counts announcements made elsewhere (the
// catalog's, for tools). It returns the sync's generation, which carries
// the announcements it covers.
func (l *listSync) begin(external uint64) syncGen {
	return syncGen{l.gen.Add(1), l.announced.Load() + external}
}

// syncGen is a sync's generation and the announcements it covers.
type syncGen struct {
	n         int64
	announced uint64
}

// install reports whether a sync is current (no later one installed) and
// whether clients must be told of its listing of the given digest.
// Callers hold MCPServer.installMu.
func (l *listSync) install(g syncGen, digest [32]byte) (current, tell bool) {
	if g.n < l.installed {
		return false, false
	}
	l.installed = g.n
	tell = digest != l.digest || g.announced != l.told
	l.digest, l.told = digest, g.announced
	return true, tell
}
