package gateway

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Sealed session ids let 2025-era sessions survive the replica that
// created them. With session keys configured, a session id is not a
// random handle known to one process but a sealed token: the creating
// identity and the creation time, encrypted and authenticated with
// AES-256-GCM (the standard library's AEAD; no construction of our own)
// under a key every replica shares. Any replica that receives a request
// for a session it has never seen opens the id, checks that it is
// authentic, not older than SessionMaxAge, and that the caller is its
// owner, and adopts the session; mcp-go then serves it like any session
// whose state it does not hold (stateless requests need none). Keys
// rotate: the first key seals, every key opens, so a new key is added at
// the front, and the old one removed once sessions sealed with it have
// aged out.
//
// We chose this over a shared session store (Redis): nothing to run or
// reach on every request, no store to fail, and what a session needs
// across replicas is exactly who owns it. What is per replica stays per
// replica: a session's "allow for this session" approvals and its GET
// stream.

// SessionMaxAge bounds how long a sealed session id opens.
const SessionMaxAge = 24 * time.Hour

const sealedPrefix = "tg1."

type sealer struct {
	aeads []cipher.AEAD // the first seals
}

// newSealer builds the sealer of keys (32 bytes each), or nil for none.
func newSealer(keys [][]byte) (*sealer, error) {
	if len(keys) == 0 {
		return nil, nil
	}
	s := &sealer{}
	for i, k := range keys {
		if len(k) != 32 {
			return nil, fmt.Errorf("session key %d: %d bytes, want 32", i+1, len(k))
		}
		block, err := aes.NewCipher(k)
		if err != nil {
			return nil, err
		}
		a, err := cipher.NewGCM(block)
		if err != nil {
			return nil, err
		}
		s.aeads = append(s.aeads, a)
	}
	return s, nil
}

type sealedSession struct {
	Owner   string `json:"o"`
	Created int64  `json:"t"`
}

// seal makes a session id of owner: the AEAD's random nonce, which also
// makes every id unique, then the sealed owner and creation time.
func (s *sealer) seal(owner string) string {
	plain, _ := json.Marshal(sealedSession{Owner: owner, Created: time.Now().Unix()})
	a := s.aeads[0]
	nonce := make([]byte, a.NonceSize())
	_, _ = rand.Read(nonce)
	return sealedPrefix + base64.RawURLEncoding.EncodeToString(a.Seal(nonce, nonce, plain, []byte(sealedPrefix)))
}

var errNotSealed = errors.New("not a sealed session id")

// open authenticates a sealed id and returns what it holds.
func (s *sealer) open(id string) (sealedSession, error) {
	var out sealedSession
	body, ok := strings.CutPrefix(id, sealedPrefix)
	if !ok {
		return out, errNotSealed
	}
	raw, err := base64.RawURLEncoding.DecodeString(body)
	if err != nil {
		return out, errNotSealed
	}
	for _, a := range s.aeads {
		if len(raw) < a.NonceSize() {
			return out, errNotSealed
		}
		plain, err := a.Open(nil, raw[:a.NonceSize()], raw[a.NonceSize():], []byte(sealedPrefix))
		if err != nil {
			continue
		}
		if err := json.Unmarshal(plain, &out); err != nil {
			return out, errNotSealed
		}
		if time.Since(time.Unix(out.Created, 0)) > SessionMaxAge {
			return out, errors.New("sealed session id expired")
		}
		return out, nil
	}
	return out, errNotSealed
}
