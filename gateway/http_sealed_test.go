package gateway

import (
	"bytes"
	"net/http"
	"strings"
	"testing"
)

// TestSealedSessions: a sealed id opens on any table sharing a key, for
// its owner only; keys rotate (the new key first, the old still opens);
// a tampered id, an id under an unknown key, and an ended id do not open.
func TestSealedSessions(t *testing.T) {
	oldKey, newKey, otherKey := bytes.Repeat([]byte{1}, 32), bytes.Repeat([]byte{2}, 32), bytes.Repeat([]byte{3}, 32)
	mk := func(keys ...[]byte) *sessionTable {
		s, err := newSealer(keys)
		if err != nil {
			t.Fatal(err)
		}
		return newSessionTable(10, s)
	}
	a := mk(oldKey)
	id := a.mint("token:alice", nil)
	if !strings.HasPrefix(id, sealedPrefix) {
		t.Fatalf("id %q is not sealed", id)
	}
	if again := a.mint("token:alice", nil); again == id {
		t.Errorf("two sessions of one owner in one second got the same id %q", id)
	}
	b := mk(newKey, oldKey) // rotated: seals with the new key, opens both
	if _, err := b.acquire(id, "token:alice"); err != nil {
		t.Errorf("another replica, rotated keys: %v", err)
	}
	if _, err := b.acquire(id, "token:bob"); err != errNotYourSession {
		t.Errorf("another identity: %v, want errNotYourSession", err)
	}
	if _, err := mk(otherKey).acquire(id, "token:alice"); err != errUnknownSession {
		t.Errorf("a replica without the key: %v", err)
	}
	tampered := id[:len(id)-2] + map[bool]string{true: "AA", false: "BB"}[!strings.HasSuffix(id, "AA")]
	if _, err := b.acquire(tampered, "token:alice"); err != errUnknownSession {
		t.Errorf("a tampered id: %v", err)
	}
	c := mk(oldKey)
	c.remove(id, false) // ended here (DELETE)
	if _, err := c.acquire(id, "token:alice"); err != errUnknownSession {
		t.Errorf("an id ended on this replica: %v", err)
	}
	if _, err := newSealer([][]byte{[]byte("short")}); err == nil {
		t.Error("a short key accepted")
	}
}

// TestAnswerOnAnotherReplicaKeepsTheSession: a client's answer to a
// server request (elicitation, sampling, roots) that a load balancer
// sends to a replica other than the one that asked is refused 400 there,
// not 404: 404 tells a 2025-era client that its session ended, and it
// must start a new one, though the session lives on every replica.
func TestAnswerOnAnotherReplicaKeepsTheSession(t *testing.T) {
	key := [][]byte{bytes.Repeat([]byte{7}, 32)}
	a := httpTestServer(t, HTTPOptions{SessionKeys: key})
	b := httpTestServer(t, HTTPOptions{SessionKeys: key})
	st, h, body := postMCP(t, a, "", "", initialize2025)
	if st != http.StatusOK {
		t.Fatalf("initialize on A: %d %s", st, body)
	}
	sid := h.Get("Mcp-Session-Id")
	const answer = `{"jsonrpc":"2.0","id":1,"result":{"action":"accept","content":{}}}`
	// On the replica that minted it, the session is active there: an
	// answer to no waiting request is a late one, dropped (mcp-go copy
	// item 60). On another, nothing of it waits there: 400, not 404.
	for name, c := range map[string]struct {
		url  string
		want int
	}{"the replica that minted it": {a, http.StatusAccepted}, "another replica": {b, http.StatusBadRequest}} {
		if st, _, body := postMCP(t, c.url, sid, "2025-11-25", answer); st != c.want {
			t.Errorf("an answer to no waiting request, on %s: %d %s, want %d", name, st, body, c.want)
		}
	}
	if st, _, body := postMCP(t, b, sid, "2025-11-25", `{"jsonrpc":"2.0","id":2,"method":"ping"}`); st != http.StatusOK {
		t.Errorf("the session on B after the answer: %d %s", st, body)
	}
}

// TestForgottenSessionIsTakenUpAgain: a replica that took up another's
// sealed session and frees it for its own reasons (idle there: mcp-go's
// sweeper; its table full: eviction) only forgets it, for the session
// may be in use on another replica all along: the next request takes it
// up again. The replica that initialized a session, which alone holds
// what the client declared, ends it so (the client initializes again);
// a DELETE ends it on any replica that gets it.
func TestForgottenSessionIsTakenUpAgain(t *testing.T) {
	key := [][]byte{bytes.Repeat([]byte{9}, 32)}
	s, _ := newSealer(key)
	a, b := newSessionTable(10, s), newSessionTable(10, s)
	id := a.mint("token:alice", nil)
	take := func(tab *sessionTable) error {
		sess, err := tab.acquire(id, "token:alice")
		if err == nil {
			tab.release(sess)
		}
		return err
	}
	if err := take(b); err != nil {
		t.Fatalf("B takes up A's session: %v", err)
	}
	// B's sweeper ends it there (idle on B, in use on A).
	_, _ = b.ResolveSessionIdManager(nil).Terminate(id)
	if err := take(b); err != nil {
		t.Errorf("B after its sweeper freed the session: %v, want it taken up again", err)
	}
	_, _ = a.ResolveSessionIdManager(nil).Terminate(id)
	if err := take(a); err != errUnknownSession {
		t.Errorf("A after its sweeper ended the session it initialized: %v, want errUnknownSession", err)
	}

	// Eviction, through the HTTP transport: B holds one session; a new
	// client's initialize on B ends A's session there to make room.
	srvA := httpTestServer(t, HTTPOptions{SessionKeys: key})
	srvB := httpTestServer(t, HTTPOptions{SessionKeys: key, MaxSessions: 1})
	_, h, _ := postMCP(t, srvA, "", "", initialize2025)
	sid := h.Get("Mcp-Session-Id")
	const ping = `{"jsonrpc":"2.0","id":2,"method":"ping"}`
	if st, _, body := postMCP(t, srvB, sid, "2025-11-25", ping); st != http.StatusOK {
		t.Fatalf("B serves A's session: %d %s", st, body)
	}
	if st, _, body := postMCP(t, srvB, "", "", initialize2025); st != http.StatusOK {
		t.Fatalf("another client's initialize on B: %d %s", st, body)
	}
	if st, _, body := postMCP(t, srvB, sid, "2025-11-25", ping); st != http.StatusOK {
		t.Errorf("B after evicting A's session: %d %s, want it served", st, body)
	}
	if st, _, body := postMCP(t, srvA, sid, "2025-11-25", ping); st != http.StatusOK {
		t.Errorf("A: %d %s", st, body)
	}

	// A replica's own session, evicted there, ends there.
	srvC := httpTestServer(t, HTTPOptions{SessionKeys: key, MaxSessions: 1})
	_, h, _ = postMCP(t, srvC, "", "", initialize2025)
	own := h.Get("Mcp-Session-Id")
	if st, _, body := postMCP(t, srvC, "", "", initialize2025); st != http.StatusOK {
		t.Fatalf("another client's initialize on C: %d %s", st, body)
	}
	if st, _, _ := postMCP(t, srvC, own, "2025-11-25", ping); st != http.StatusNotFound {
		t.Errorf("C after evicting a session it initialized: %d, want 404", st)
	}

	// A DELETE ends it on the replica that gets it.
	if st, _, body := postWith(t, http.MethodDelete, srvB, map[string]string{"Mcp-Session-Id": sid, "Mcp-Protocol-Version": "2025-11-25"}, ""); st != http.StatusOK {
		t.Fatalf("DELETE on B: %d %s", st, body)
	}
	if st, _, _ := postMCP(t, srvB, sid, "2025-11-25", ping); st != http.StatusNotFound {
		t.Errorf("B after the client's DELETE: %d, want 404", st)
	}
}
