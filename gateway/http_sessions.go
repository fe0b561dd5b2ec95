package gateway

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/server"
)

// HTTP sessions (2025-era streamable HTTP) are tracked here rather than by
// mcp-go's own session-id manager, for three reasons mcp-go does not
// cover: a session belongs to the identity that created it (another
// bearer token gets 403 on every method), an unknown session id gets 404
// on every method (mcp-go opens a GET stream for any id), and the number
// of sessions is bounded (the least recently used idle session is ended
// to make room; with none idle, initialize gets 503).
//
// The table is mcp-go's SessionIdManager (through a resolver, which sees
// the request and so the identity creating the session), so the two never
// disagree: mcp-go asks the table to mint, validate and end ids, and its
// idle sweeper ends sessions through it.

// SessionRef is how a session id appears in logs, events and records: a
// short digest, enough to tell sessions apart and correlate lines, and of
// no use to anyone who would replay the id.
func SessionRef(id string) string {
	if id == "" {
		return ""
	}
	var buf [128]byte // the id's bytes on the stack (ids are shorter)
	sum := sha256.Sum256(append(buf[:0], id...))
	var ref [2 + 12]byte // made here and copied once, into the string
	ref[0], ref[1] = 's', '-'
	hex.Encode(ref[2:], sum[:6])
	return string(ref[:])
}

type httpSession struct {
	owner    string // the identity that created it
	adopted  bool   // a sealed id initialized on another replica
	lastUsed time.Time
	active   int // requests and streams in progress
	calls    int // POST requests in progress
}

// sessionTable is the set of live 2025-era sessions. Its lock is never
// held while calling out (to mcp-go, to a listener).
type sessionTable struct {
	max    int
	sealer *sealer // nil: ids are random and known only here

	mu       sync.Mutex
	byID     map[string]*httpSession
	reserved int // initialize requests admitted, not yet minted
	// ended are sealed ids ended here (a DELETE; the idle expiry or
	// eviction of a session initialized here), so that this replica does
	// not adopt them again. Other replicas cannot know: a sealed id stays
	// usable there, by its owner only, until it ages out. An adopted
	// session that is idle here or evicted is only forgotten: it may be in
	// use on another replica all along.
	ended map[string]bool
}

func newSessionTable(max int, sealer *sealer) *sessionTable {
	return &sessionTable{max: max, sealer: sealer, byID: map[string]*httpSession{}}
}

var (
	errUnknownSession = errors.New("unknown session")
	errNotYourSession = errors.New("session belongs to another identity")
)

// acquire marks a request of owner on session id in progress. A sealed
// id this replica has not seen is adopted when it opens (http_sealed.go).
func (t *sessionTable) acquire(id, owner string) (*httpSession, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	s, ok := t.byID[id]
	if !ok && t.sealer != nil && !t.ended[id] {
		if sealed, err := t.sealer.open(id); err == nil {
			s = &httpSession{owner: sealed.Owner, adopted: true, lastUsed: time.Now()}
			if sealed.Owner == owner && len(t.byID)+t.reserved < t.max {
				t.byID[id] = s // adopted; past max_sessions it is served without being kept
			}
			ok = true
		}
	}
	if !ok {
		return nil, errUnknownSession
	}
	if s.owner != owner {
		return nil, errNotYourSession
	}
	s.active++
	s.lastUsed = time.Now()
	return s, nil
}

func (t *sessionTable) release(s *httpSession) {
	t.mu.Lock()
	s.active--
	s.lastUsed = time.Now()
	t.mu.Unlock()
}

// startCall counts a POST request on s, unless max are in progress.
func (t *sessionTable) startCall(s *httpSession, max int) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if s.calls >= max {
		return false
	}
	s.calls++
	return true
}

func (t *sessionTable) endCall(s *httpSession) {
	t.mu.Lock()
	s.calls--
	t.mu.Unlock()
}

// admit makes room for one new session. It returns the id of an idle
// session to end first (empty if there was room), or ok false when the
// table is full of sessions in use. An admitted slot is reserved until
// mint or unreserve.
func (t *sessionTable) admit() (evict string, ok bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.byID)+t.reserved < t.max {
		t.reserved++
		return "", true
	}
	var oldest time.Time
	for id, s := range t.byID {
		if s.active == 0 && (evict == "" || s.lastUsed.Before(oldest)) {
			evict, oldest = id, s.lastUsed
		}
	}
	if evict == "" {
		return "", false
	}
	if !t.byID[evict].adopted {
		t.endLocked(evict) // before endSession's Terminate, which finds it gone
	}
	delete(t.byID, evict) // its slot is now this request's
	t.reserved++
	return evict, true
}

func (t *sessionTable) unreserve() {
	t.mu.Lock()
	if t.reserved > 0 {
		t.reserved--
	}
	t.mu.Unlock()
}

// mint registers a new session of owner, in the slot res holds (if any).
func (t *sessionTable) mint(owner string, res *reservation) string {
	var id string
	if t.sealer != nil {
		id = t.sealer.seal(owner)
	} else {
		b := make([]byte, 24)
		_, _ = rand.Read(b)
		id = "tg-" + hex.EncodeToString(b)
	}
	t.mu.Lock()
	if res != nil && res.minted.CompareAndSwap(false, true) && t.reserved > 0 {
		t.reserved--
	}
	t.byID[id] = &httpSession{owner: owner, lastUsed: time.Now()}
	t.mu.Unlock()
	return id
}

// remove ends session id here, or only forgets it when this replica
// frees it for its own reasons (local: idle, evicted) and it was not
// initialized here (adopted, or served without being kept).
func (t *sessionTable) remove(id string, local bool) {
	t.mu.Lock()
	s := t.byID[id]
	delete(t.byID, id)
	if !(local && (s == nil || s.adopted)) {
		t.endLocked(id)
	}
	t.mu.Unlock()
}

// endLocked records a sealed id ended here. t.mu is held.
func (t *sessionTable) endLocked(id string) {
	if t.sealer == nil {
		return
	}
	if t.ended == nil || len(t.ended) > 4*t.max {
		t.ended = map[string]bool{} // bounded; older ids may come back only to their owner
	}
	t.ended[id] = true
}

func (t *sessionTable) len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.byID)
}

// ResolveSessionIdManager implements server.SessionIdManagerResolver: the
// manager of a request mints ids owned by the request's identity. mcp-go's
// sweeper passes nil, for which only Terminate matters: it frees idle
// sessions, as eviction does ([httpGuard.endSession]), for this replica's
// own reasons (local).
func (t *sessionTable) ResolveSessionIdManager(r *http.Request) server.SessionIdManager {
	m := ownedManager{t: t, local: r == nil}
	if r != nil {
		m.owner = identityFrom(r.Context())
		m.res, _ = r.Context().Value(reservationKey{}).(*reservation)
		m.local = r.Context().Value(evictionKey{}) != nil
	}
	return m
}

// evictionKey marks the DELETE that ends a session to make room.
type evictionKey struct{}

type ownedManager struct {
	t     *sessionTable
	owner string
	res   *reservation
	local bool // Terminate frees the session for this replica's own reasons
}

func (m ownedManager) Generate() string { return m.t.mint(m.owner, m.res) }

func (m ownedManager) Validate(id string) (bool, error) {
	m.t.mu.Lock()
	_, ok := m.t.byID[id]
	ended := m.t.ended[id]
	m.t.mu.Unlock()
	if !ok && m.t.sealer != nil && !ended {
		_, err := m.t.sealer.open(id) // the guard checked its owner
		ok = err == nil
	}
	if !ok {
		return false, errUnknownSession
	}
	return false, nil
}

func (m ownedManager) Terminate(id string) (bool, error) {
	m.t.remove(id, m.local)
	return false, nil
}

type identityKey struct{}

// principalKey carries an OAuth caller's [Principal].
type principalKey struct{}

func principalFrom(ctx context.Context) *Principal {
	p, _ := ctx.Value(principalKey{}).(*Principal)
	return p
}

// identityFrom is the identity of a request: "token:NAME" or "anonymous"
// as the HTTP guard found it, "local" for stdio, "" when none was set.
func identityFrom(ctx context.Context) string {
	s, _ := ctx.Value(identityKey{}).(string)
	return s
}

// sessionRefHandler is a slog.Handler that writes session ids as their
// [SessionRef], for the logger handed to mcp-go (which logs raw ids).
type sessionRefHandler struct{ slog.Handler }

func (h sessionRefHandler) Handle(ctx context.Context, r slog.Record) error {
	out := slog.NewRecord(r.Time, r.Level, r.Message, r.PC)
	r.Attrs(func(a slog.Attr) bool {
		switch a.Key {
		case "session", "sessionID", "sessionId", "session_id":
			a = slog.String("session", SessionRef(a.Value.String()))
		}
		out.AddAttrs(a)
		return true
	})
	return h.Handler.Handle(ctx, out)
}

func (h sessionRefHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return sessionRefHandler{h.Handler.WithAttrs(as)}
}

func (h sessionRefHandler) WithGroup(g string) slog.Handler {
	return sessionRefHandler{h.Handler.WithGroup(g)}
}
