package operator

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/toolgate/toolgate/gateway"
)

// roundStates mints and verifies the request state of an approval asked in
// a round of a 2026-07-28 call (SEP-2322). The state is opaque to the
// client and binds the answer to what was asked: the tool, a digest of its
// validated arguments, the client, an expiry and a nonce, authenticated with
// HMAC-SHA256 under a key drawn at start. A state is taken once; altered,
// forged, replayed or expired states are refused.
//
// The key lives in the process: an approval asked by one replica is
// answered to the same one (replicas behind a load balancer need a shared
// key; see issue 14).
type roundStates struct {
	key []byte

	mu   sync.Mutex
	used map[string]time.Time // nonce -> expiry, until it passes
}

type roundState struct {
	Tool    string `json:"t"`
	Args    string `json:"a"` // sha256 of the validated arguments, canonical JSON
	Client  string `json:"c"`
	Expires int64  `json:"e"` // unix seconds
	Nonce   string `json:"n"`
}

func newRoundStates() *roundStates {
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	return &roundStates{key: key, used: map[string]time.Time{}}
}

// argsDigest is the digest of a call's validated arguments in canonical
// JSON (object keys sorted, as encoding/json writes maps).
func argsDigest(call *gateway.Call) string {
	b, _ := json.Marshal(call.Args)
	sum := sha256.Sum256(b)
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

func (rs *roundStates) mac(payload string) string {
	m := hmac.New(sha256.New, rs.key)
	m.Write([]byte(payload))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// mint returns the state for an approval of call asked now, valid for ttl.
func (rs *roundStates) mint(call *gateway.Call, ttl time.Duration) string {
	nonce := make([]byte, 16)
	_, _ = rand.Read(nonce)
	b, _ := json.Marshal(roundState{
		Tool: call.Name, Args: argsDigest(call), Client: call.Client,
		Expires: time.Now().Add(ttl).Unix(), Nonce: base64.RawURLEncoding.EncodeToString(nonce),
	})
	payload := base64.RawURLEncoding.EncodeToString(b)
	return payload + "." + rs.mac(payload)
}

// Errors of verify, for records and the model.
var (
	errStateForged  = errors.New("the approval's request state is not one toolgate minted (forged or altered)")
	errStateOther   = errors.New("the approval's request state was minted for another call (tool, arguments or client differ)")
	errStateExpired = errors.New("the approval's request state has expired")
	errStateReused  = errors.New("the approval's request state was already used")
)

// verify checks a state echoed by the client with its answer and takes it
// (a state is good once).
func (rs *roundStates) verify(state string, call *gateway.Call) error {
	payload, mac, ok := strings.Cut(state, ".")
	if !ok || !hmac.Equal([]byte(mac), []byte(rs.mac(payload))) {
		return errStateForged
	}
	b, err := base64.RawURLEncoding.DecodeString(payload)
	if err != nil {
		return errStateForged
	}
	var st roundState
	if err := json.Unmarshal(b, &st); err != nil {
		return errStateForged
	}
	if st.Tool != call.Name || st.Args != argsDigest(call) || st.Client != call.Client {
		return errStateOther
	}
	now := time.Now()
	if now.Unix() > st.Expires {
		return errStateExpired
	}
	rs.mu.Lock()
	defer rs.mu.Unlock()
	for n, exp := range rs.used { // forget nonces whose states have expired anyway
		if now.After(exp) {
			delete(rs.used, n)
		}
	}
	if _, seen := rs.used[st.Nonce]; seen {
		return errStateReused
	}
	rs.used[st.Nonce] = time.Unix(st.Expires+1, 0)
	return nil
}
