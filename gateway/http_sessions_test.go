package gateway

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"
)

// TestSessionRef: a session's reference is "s-" and the first six bytes
// of its id's SHA-256 in hex, for ids of every length (one longer than
// the stack buffer it is hashed from included), none for no session, and
// one allocation, the string itself.
func TestSessionRef(t *testing.T) {
	if got := SessionRef(""); got != "" {
		t.Errorf(`SessionRef("") = %q, want ""`, got)
	}
	for _, id := range []string{"a", "tg-0123456789abcdef0123456789abcdef", strings.Repeat("x", 127), strings.Repeat("y", 128), strings.Repeat("z", 500)} {
		sum := sha256.Sum256([]byte(id))
		if got, want := SessionRef(id), "s-"+hex.EncodeToString(sum[:6]); got != want {
			t.Errorf("SessionRef(%d bytes) = %q, want %q", len(id), got, want)
		}
	}
	id := "tg-0123456789abcdef0123456789abcdef0123456789abcdef"
	if n := testing.AllocsPerRun(100, func() { _ = SessionRef(id) }); n > 1 {
		t.Errorf("%v allocations, want 1", n)
	}
}
