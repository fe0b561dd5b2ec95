package gateway

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"maps"
	"strings"
	"sync"
	"time"
)

// RoundStates mints and opens the request states a 2026-07-28 client
// echoes back when it answers a round of its call (SEP-2322): the round
// stage's (rounds.go) and the approvals' asked in rounds (package
// operator). A state is opaque to the client and binds the answer to what
// was asked: the tool, a digest of its validated arguments, the caller
// (identity, client name, OAuth client), the round and the call that began
// the exchange, an expiry and a nonce, with the inner state of whoever
// asked, authenticated with HMAC-SHA256. A state is good once; altered,
// forged, replayed, expired states and states of another call or caller
// are refused.
//
// Each user has a prefix of its own, so that one can tell its states from
// another's without opening them.
type RoundStates struct {
	prefix string
	keys   [][]byte // the first seals; all open

	mu   sync.Mutex
	used map[string]time.Time // nonce -> when it may be forgotten
}

// NewRoundStates returns the states of prefix, with keys derived from
// secrets (the replicas' shared session keys: replicas sharing them open
// each other's states; the first seals), or a key drawn now when there
// are none. The key is derived for the prefix too: the prefix is not
// under the MAC, and the users of two prefixes (the round stage's and the
// approvals') must not open each other's states, or an approval's state
// relabelled as a round's would pass the approval unanswered.
func NewRoundStates(prefix string, secrets [][]byte) *RoundStates {
	k := &RoundStates{prefix: prefix, used: map[string]time.Time{}}
	for _, s := range secrets {
		m := hmac.New(sha256.New, s)
		m.Write([]byte("toolgate round state key\x00" + prefix))
		k.keys = append(k.keys, m.Sum(nil))
	}
	if len(k.keys) == 0 {
		key := make([]byte, 32)
		_, _ = rand.Read(key)
		k.keys = [][]byte{key}
	}
	return k
}

// Round says which round of a multi round-trip exchange a call is.
type Round struct {
	// N is the round number: 2 for the first repeat.
	N int
	// Of is the ID of the call that began the exchange.
	Of string
}

// Sealed is what an opened state holds.
type Sealed struct {
	Round
	// State is the inner state of whoever asked (the tool's own).
	State string
}

type roundSeal struct {
	Tool    string `json:"t"`
	Args    string `json:"a"`
	Caller  string `json:"c"`
	Of      string `json:"o,omitempty"`
	N       int    `json:"r"`
	State   string `json:"s,omitempty"`
	Expires int64  `json:"e"`
	Nonce   string `json:"n"`
}

// Errors of Open: the client is told which.
var (
	ErrRoundForged  = errors.New("the request state is not one toolgate minted (forged or altered)")
	ErrRoundOther   = errors.New("the request state was minted for another call or caller (tool, arguments or caller differ)")
	ErrRoundExpired = errors.New("the request state has expired")
	ErrRoundReused  = errors.New("the request state was already used")
)

// Owns reports whether state carries this user's prefix (not whether it
// is valid: Open checks that).
func (k *RoundStates) Owns(state string) bool { return strings.HasPrefix(state, k.prefix) }

// Seal mints the state of the round call ends, holding inner, valid for
// ttl.
func (k *RoundStates) Seal(call *Call, inner string, ttl time.Duration) string {
	n, of := 1, call.ID
	if call.Round != nil {
		n, of = call.Round.N, call.Round.Of
	}
	nonce := make([]byte, 12)
	_, _ = rand.Read(nonce)
	b, _ := json.Marshal(roundSeal{
		Tool: call.Name, Args: roundArgs(call), Caller: roundCaller(call), Of: of, N: n, State: inner,
		Expires: time.Now().Add(ttl).Unix(), Nonce: base64.RawURLEncoding.EncodeToString(nonce),
	})
	payload := base64.RawURLEncoding.EncodeToString(b)
	return k.prefix + payload + "." + macWith(k.keys[0], payload)
}

// Open verifies a state the client echoed with the repeat of call, and
// takes it.
func (k *RoundStates) Open(state string, call *Call) (*Sealed, error) {
	payload, mac, ok := strings.Cut(strings.TrimPrefix(state, k.prefix), ".")
	if !ok || !k.Owns(state) || !k.authentic(payload, mac) {
		return nil, ErrRoundForged
	}
	b, err := base64.RawURLEncoding.DecodeString(payload)
	if err != nil {
		return nil, ErrRoundForged
	}
	var st roundSeal
	if err := json.Unmarshal(b, &st); err != nil {
		return nil, ErrRoundForged
	}
	if st.Tool != call.Name || st.Args != roundArgs(call) || st.Caller != roundCaller(call) {
		return nil, ErrRoundOther
	}
	now := time.Now()
	if now.Unix() > st.Expires {
		return nil, ErrRoundExpired
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	maps.DeleteFunc(k.used, func(_ string, until time.Time) bool { return now.After(until) })
	if _, seen := k.used[st.Nonce]; seen {
		return nil, ErrRoundReused
	}
	k.used[st.Nonce] = time.Unix(st.Expires+1, 0)
	return &Sealed{Round: Round{N: st.N, Of: st.Of}, State: st.State}, nil
}

func macWith(key []byte, payload string) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(payload))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// authentic reports whether mac is payload's under one of the keys.
func (k *RoundStates) authentic(payload, mac string) bool {
	for _, key := range k.keys {
		if hmac.Equal([]byte(mac), []byte(macWith(key, payload))) {
			return true
		}
	}
	return false
}

// roundCaller is who a state is bound to.
func roundCaller(c *Call) string {
	s := c.Identity + "\x00" + c.Client
	if c.Principal != nil {
		s += "\x00" + c.Principal.ClientID
	}
	return s
}

// roundArgs is the digest of a call's validated arguments in canonical
// JSON (object keys sorted, as encoding/json writes maps).
func roundArgs(c *Call) string {
	b, _ := json.Marshal(c.Args)
	sum := sha256.Sum256(b)
	return base64.RawURLEncoding.EncodeToString(sum[:])
}
