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
	c.remove(id) // ended here (DELETE)
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
	for name, url := range map[string]string{"the replica that minted it": a, "another replica": b} {
		if st, _, body := postMCP(t, url, sid, "2025-11-25", answer); st != http.StatusBadRequest {
			t.Errorf("an answer to no waiting request, on %s: %d %s, want 400", name, st, body)
		}
	}
	if st, _, body := postMCP(t, b, sid, "2025-11-25", `{"jsonrpc":"2.0","id":2,"method":"ping"}`); st != http.StatusOK {
		t.Errorf("the session on B after the answer: %d %s", st, body)
	}
}
