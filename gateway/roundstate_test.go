package gateway

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestRoundStates(t *testing.T) {
	rs := NewRoundStates("tgt.", nil)
	call := func(name string, args map[string]any, client, identity string) *Call {
		return &Call{ID: "c1", Name: name, Args: args, Client: client, Identity: identity}
	}
	orig := call("send", map[string]any{"to": "a", "n": 1}, "cli/1", "token:a")
	state := rs.Seal(orig, "inner", time.Minute)
	if state == "inner" || !rs.Owns(state) {
		t.Fatalf("state %q is the inner state, or is not marked as ours", state)
	}
	for _, c := range []struct {
		name  string
		state string
		call  *Call
		want  error
	}{
		{"another tool", state, call("rm", map[string]any{"to": "a", "n": 1}, "cli/1", "token:a"), ErrRoundOther},
		{"altered arguments", state, call("send", map[string]any{"to": "b", "n": 1}, "cli/1", "token:a"), ErrRoundOther},
		{"another client", state, call("send", map[string]any{"to": "a", "n": 1}, "other/1", "token:a"), ErrRoundOther},
		{"another identity", state, call("send", map[string]any{"to": "a", "n": 1}, "cli/1", "token:b"), ErrRoundOther},
		{"forged", "tgt.eyJ0Ijoic2VuZCJ9.AAAA", orig, ErrRoundForged},
		{"altered payload", "tgt.x" + strings.TrimPrefix(state, "tgt."), orig, ErrRoundForged},
		{"no mac", strings.Split(state, ".")[0] + "." + strings.Split(state, ".")[1], orig, ErrRoundForged},
		{"another prefix", "tgx." + strings.TrimPrefix(state, "tgt."), orig, ErrRoundForged},
		{"the call it was minted for", state, call("send", map[string]any{"n": 1, "to": "a"}, "cli/1", "token:a"), nil},
		{"replayed", state, orig, ErrRoundReused},
		{"expired", rs.Seal(orig, "", -time.Second), orig, ErrRoundExpired},
		{"another key", NewRoundStates("tgt.", nil).Seal(orig, "", time.Minute), orig, ErrRoundForged},
	} {
		if _, err := rs.Open(c.state, c.call); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
	}
	fresh := rs.Seal(orig, "inner", time.Minute)
	if got, err := rs.Open(fresh, orig); err != nil || got.State != "inner" || got.N != 1 || got.Of != "c1" {
		t.Errorf("opened %+v, %v; want the inner state, round 1 of c1", got, err)
	}
}

// Replicas that share session keys open each other's round states; key
// rotation keeps the old key opening; another secret does not.
func TestRoundStatesAcrossReplicas(t *testing.T) {
	oldKey, newKey, other := []byte(strings.Repeat("o", 32)), []byte(strings.Repeat("n", 32)), []byte(strings.Repeat("x", 32))
	call := &Call{ID: "c1", Name: "t", Identity: "token:a"}
	sealed := NewRoundStates("tgt.", [][]byte{oldKey}).Seal(call, "s", time.Minute)
	for _, c := range []struct {
		name    string
		secrets [][]byte
		want    error
	}{
		{"same key", [][]byte{oldKey}, nil},
		{"rotated", [][]byte{newKey, oldKey}, nil},
		{"another secret", [][]byte{other}, ErrRoundForged},
		{"no secret", nil, ErrRoundForged},
	} {
		if _, err := NewRoundStates("tgt.", c.secrets).Open(sealed, call); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
	}
	// The same secret, another prefix (the approvals' and the round
	// stage's): a state relabelled from one to the other does not open.
	relabelled := "tgu." + strings.TrimPrefix(sealed, "tgt.")
	if _, err := NewRoundStates("tgu.", [][]byte{oldKey}).Open(relabelled, call); !errors.Is(err, ErrRoundForged) {
		t.Errorf("a state relabelled to another prefix of the same secret: %v, want %v", err, ErrRoundForged)
	}
}

// FuzzRoundStateOpen: a request state is untrusted input. Open never
// panics, and accepts only what Seal minted for that very call, once.
func FuzzRoundStateOpen(f *testing.F) {
	rs := NewRoundStates("tgt.", nil)
	call := &Call{ID: "c1", Name: "send", Args: map[string]any{"to": "a"}, Identity: "token:a", Client: "cli/1"}
	f.Add(rs.Seal(call, "inner", time.Minute))
	f.Add("tgt.")
	f.Add("tgt..")
	f.Add("tgt.e30.AAAA")
	f.Add("tga1.x.y")
	f.Fuzz(func(t *testing.T, state string) {
		got, err := rs.Open(state, call)
		if err == nil && (got == nil || got.State != "inner") {
			t.Fatalf("opened a state toolgate did not mint for this call: %q -> %+v", state, got)
		}
	})
}
