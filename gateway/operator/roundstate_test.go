package operator

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/gateway"
)

func TestRoundStates(t *testing.T) {
	rs := newRoundStates()
	call := func(name string, args map[string]any, client string) *gateway.Call {
		return &gateway.Call{Name: name, Args: args, Client: client}
	}
	orig := call("send", map[string]any{"to": "a", "n": 1}, "cli/1")
	state := rs.mint(orig, time.Minute)

	for _, c := range []struct {
		name  string
		state string
		call  *gateway.Call
		want  error
	}{
		{"another tool", state, call("rm", map[string]any{"to": "a", "n": 1}, "cli/1"), errStateOther},
		{"altered arguments", state, call("send", map[string]any{"to": "b", "n": 1}, "cli/1"), errStateOther},
		{"another client", state, call("send", map[string]any{"to": "a", "n": 1}, "other/1"), errStateOther},
		{"forged", "eyJ0Ijoic2VuZCJ9.AAAA", orig, errStateForged},
		{"altered payload", "x" + state, orig, errStateForged},
		{"no mac", strings.Split(state, ".")[0], orig, errStateForged},
		{"the call it was minted for", state, call("send", map[string]any{"n": 1, "to": "a"}, "cli/1"), nil},
		{"replayed", state, orig, errStateReused},
		{"expired", rs.mint(orig, -time.Second), orig, errStateExpired},
	} {
		if err := rs.verify(c.state, c.call); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
	}
	if other := newRoundStates(); other.verify(rs.mint(orig, time.Minute), orig) != errStateForged {
		t.Error("a state minted under another key was accepted")
	}
}
