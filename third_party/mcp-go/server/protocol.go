package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"

	"github.com/mark3labs/mcp-go/jsonscan"
	"github.com/mark3labs/mcp-go/mcp"
)

// RequestProtocolInfo describes the protocol era and per-request metadata of
// an incoming request.
//
// Protocol version 2026-07-28 removed the initialize handshake: every request
// carries its own protocol version, client identity, client capabilities, and
// desired log level in _meta (SEP-2575). This type normalizes that
// information so the rest of the server can treat both eras uniformly.
type RequestProtocolInfo struct {
	// Modern reports whether the request declared a protocol version of
	// 2026-07-28 or later in its _meta.
	Modern bool

	// ProtocolVersion is the version declared in _meta. It is empty for legacy
	// requests, whose version was fixed by the initialize handshake.
	ProtocolVersion string

	// ClientInfo identifies the client software, when it chose to say.
	ClientInfo *mcp.Implementation

	// ClientCapabilities are the capabilities the client declared for this
	// request. Servers MUST NOT infer capabilities from prior requests.
	ClientCapabilities *mcp.ClientCapabilities

	// LogLevel is the log level requested for this request. When empty, the
	// server MUST NOT emit notifications/message for the request.
	LogLevel mcp.LoggingLevel
}

type requestProtocolKey struct{}

// WithRequestProtocolInfo returns a context carrying the per-request protocol
// information.
func WithRequestProtocolInfo(ctx context.Context, info *RequestProtocolInfo) context.Context {
	return context.WithValue(ctx, requestProtocolKey{}, info)
}

// RequestProtocolInfoFromContext returns the per-request protocol information
// stored in ctx, or nil when the request did not carry any (that is, when it
// used a protocol version earlier than 2026-07-28).
func RequestProtocolInfoFromContext(ctx context.Context) *RequestProtocolInfo {
	info, _ := ctx.Value(requestProtocolKey{}).(*RequestProtocolInfo)
	return info
}

// IsModernRequest reports whether the request being handled uses the
// stateless protocol core introduced in 2026-07-28.
func IsModernRequest(ctx context.Context) bool {
	info := RequestProtocolInfoFromContext(ctx)
	return info != nil && info.Modern
}

// RequestProtocolVersion returns the protocol version in effect for the
// request being handled.
//
// For modern requests this is the version declared in _meta. For legacy
// requests it falls back to the version negotiated during initialize, when the
// session records one.
func RequestProtocolVersion(ctx context.Context) string {
	if info := RequestProtocolInfoFromContext(ctx); info != nil && info.ProtocolVersion != "" {
		return info.ProtocolVersion
	}
	if session := ClientSessionFromContext(ctx); session != nil {
		if versioned, ok := session.(SessionWithProtocolVersion); ok {
			return versioned.ProtocolVersion()
		}
	}
	return ""
}

// SessionWithProtocolVersion is implemented by sessions that remember the
// protocol version negotiated during initialize.
type SessionWithProtocolVersion interface {
	ClientSession
	// ProtocolVersion returns the negotiated protocol version, or "" when the
	// session has not been initialized.
	ProtocolVersion() string
}

// extractRequestProtocolInfo performs a lightweight partial unmarshal of the
// _meta field of a JSON-RPC request and reports what protocol era it belongs
// to.
//
// A request belongs to the modern era only when it declares a protocol version
// of 2026-07-28 or later. Anything else - including a request with no _meta at
// all - is legacy, and is served through the initialize-handshake path.
//
// The returned error is non-nil only when a modern request is malformed: the
// required client capabilities are missing, or a well-known key holds a value
// of the wrong shape.
//
// toolgate patch, for speed (item 26): params is the message's "params" as
// its envelope's decoding kept it; _meta is found in it by [paramsMeta]
// rather than by decoding the whole message again, the arguments included.
//
// toolgate patch, for speed (item 42): the information is written to *info,
// which the caller holds in its message context, rather than to an
// allocation of its own; info is the zero value on entry, and is left so
// for a legacy request without a version.
func extractRequestProtocolInfo(message json.RawMessage, params paramsMember, info *RequestProtocolInfo) error {
	// toolgate patch, for speed: the envelope's members are decoded from
	// the message into their types, not through mcp.Meta's generic map and
	// a re-encoding per member (same values: absent, null or malformed is
	// the zero value, as with Meta's accessors).
	// A message that cannot spell the protocol version's key has no
	// version: the legacy era, as the decoding below would find, without a
	// pass over the whole message.
	mayHold, raw, found := params.envelopeMeta(message)
	if !mayHold {
		return nil
	}
	var env envelopeMembers
	if !found || raw != nil && !scanEnvelopeMembers(raw, &env) {
		var wrapper struct {
			Params struct {
				Meta map[string]json.RawMessage `json:"_meta"`
			} `json:"params"`
		}
		if found { // _meta found, but not an object of plain names
			if json.Unmarshal(raw, &wrapper.Params.Meta) != nil {
				return nil
			}
		} else if err := json.Unmarshal(message, &wrapper); err != nil {
			// A malformed body is reported by the per-method unmarshal, which
			// produces a better error message.
			return nil
		}
		meta := wrapper.Params.Meta
		env = envelopeMembers{
			version:    meta[mcp.MetaKeyProtocolVersion],
			clientInfo: meta[mcp.MetaKeyClientInfo],
			clientCaps: meta[mcp.MetaKeyClientCapabilities],
			logLevel:   meta[mcp.MetaKeyLogLevel],
		}
	}
	version := metaMember[string](env.version)
	if !mcp.IsModernProtocol(version) {
		// Either no version at all, or an older one: legacy era.
		info.ProtocolVersion = version
		return nil
	}

	*info = RequestProtocolInfo{
		Modern:          true,
		ProtocolVersion: version,
		ClientInfo:      metaMember[*mcp.Implementation](env.clientInfo),
		LogLevel:        metaMember[mcp.LoggingLevel](env.logLevel),
	}

	// Client capabilities are required on every modern request. An empty
	// object is valid and means "no optional capabilities". A request without
	// them, or with a value that does not decode as capabilities, is malformed
	// and is rejected as invalid params (-32602).
	// MissingRequiredClientCapabilityError is for a request that needs a
	// capability the client did not declare.
	caps := metaMember[*mcp.ClientCapabilities](env.clientCaps)
	if caps == nil {
		return errors.New("missing or invalid _meta field " + mcp.MetaKeyClientCapabilities)
	}
	info.ClientCapabilities = caps

	return nil
}

// mayHoldProtocolVersion reports whether a message's bytes can spell
// [mcp.MetaKeyProtocolVersion] (toolgate patch, for speed). The key is a
// member of _meta's map, matched exactly (the "_meta" and "params" around
// it are matched case-insensitively, so they are not what is looked
// for), and of JSON's escapes only \u and \/ can write its characters. A
// message that cannot spell it states no protocol version in _meta, and
// need not be decoded to learn that.
func mayHoldProtocolVersion(message []byte) bool {
	return bytes.Contains(message, []byte(mcp.MetaKeyProtocolVersion)) ||
		bytes.Contains(message, []byte(`\u`)) || bytes.Contains(message, []byte(`\/`))
}

// paramsMeta finds the "_meta" member of a request's params (as its
// envelope's decoding kept them) where json.Unmarshal of the whole message
// into a struct of params._meta finds it (toolgate patch, for speed, item
// 26): its bytes, or nil when there is none (no params, params null, no
// "_meta" member), and true. It is false when it cannot tell exactly what
// json would decode, which is then left to json.Unmarshal: params met more
// than once (json decodes each into the same value), not an object, with a
// member json would match to "_meta" in another case, escaped or folded
// from a non-ASCII letter ([jsonscan.Member] refuses those), or with
// "_meta" twice. FuzzToolgateParamsMeta holds it to json.Unmarshal.
//
// Whatever is not "_meta" is skipped, not decoded: a tool call's arguments,
// most of a request, are passed over once, without reflection.
func paramsMeta(params paramsMember) (meta []byte, ok bool) {
	switch {
	case params.n == 0:
		return nil, true
	case params.n > 1:
		return nil, false
	case string(params.raw) == "null":
		return nil, true
	}
	start, end, n, ok := jsonscan.Member(params.raw, "_meta")
	switch {
	case !ok || n > 1:
		return nil, false
	case n == 0:
		return nil, true
	}
	return params.raw[start:end], true
}

// envelopeMeta is where the 2026-07-28 envelope of the message whose
// params p are can be: whether the message can spell the version's key at
// all (mayHoldProtocolVersion), and if it can, params' _meta (paramsMeta).
// It looks once per params (toolgate patch, for speed, item 26): a copy
// made after that, the one the transport hands HandleMessage, has the
// answer, so that the era's look and the envelope's pass over a large
// message (a call's arguments) once.
func (p *paramsMember) envelopeMeta(message []byte) (mayHold bool, meta []byte, ok bool) {
	if !p.looked {
		p.looked = true
		if p.mayHold = mayHoldProtocolVersion(message); p.mayHold {
			p.meta, p.metaOK = paramsMeta(*p)
		}
	}
	return p.mayHold, p.meta, p.metaOK
}

// envelopeMembers are the members of a request's _meta that carry its
// 2026-07-28 envelope, raw, as json.Unmarshal into a map keeps them: the
// last of each, nil when absent (toolgate patch).
type envelopeMembers struct {
	version, clientInfo, clientCaps, logLevel json.RawMessage
}

// scanEnvelopeMembers reads env from _meta's bytes as json.Unmarshal into
// a map[string]json.RawMessage would (toolgate patch, for speed, item 26):
// false when meta is not an object whose member names are plain ASCII (an
// escaped name is one json unescapes before it is a key), left to json.
func scanEnvelopeMembers(meta []byte, env *envelopeMembers) bool {
	return jsonscan.Object(meta, func(name []byte, start, end int) bool {
		switch string(name) {
		case mcp.MetaKeyProtocolVersion:
			env.version = meta[start:end]
		case mcp.MetaKeyClientInfo:
			env.clientInfo = meta[start:end]
		case mcp.MetaKeyClientCapabilities:
			env.clientCaps = meta[start:end]
		case mcp.MetaKeyLogLevel:
			env.logLevel = meta[start:end]
		}
		return true
	})
}

// numbersFitFloat64 reports whether every number in the valid JSON value v
// decodes into a float64 without an error, as json.Unmarshal into an
// interface decodes numbers (toolgate patch, item 26): none has an exponent
// or an integer part of more than 300 digits. It may say no for numbers
// that fit (1e5); never yes for one that does not (1e400).
func numbersFitFloat64(v []byte) bool {
	inString, digits := false, 0
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case inString:
			if c == '\\' {
				i++
			} else if c == '"' {
				inString = false
			}
		case '0' <= c && c <= '9':
			if digits++; digits > 300 {
				return false
			}
		case (c == 'e' || c == 'E') && digits > 0:
			return false
		default: // true and false have an e after a letter, not a digit
			inString, digits = c == '"', 0
		}
	}
	return true
}

// metaMember decodes a member of a request's _meta: the zero value when
// the member is absent (nil), or does not decode (toolgate patch). A
// plain string is taken as it is (item 26), client info and capabilities
// scanned where they can be (item 29, protocol_scan.go).
func metaMember[T any](raw json.RawMessage) T {
	var v T
	if raw == nil {
		return v
	}
	switch p := any(&v).(type) {
	case *string:
		if s, ok := jsonscan.PlainString(raw); ok {
			*p = s
			return v
		}
	case *mcp.LoggingLevel:
		if s, ok := jsonscan.PlainString(raw); ok {
			*p = mcp.LoggingLevel(s)
			return v
		}
	case **mcp.Implementation: // item 29
		if impl, ok := scanImplementation(raw); ok {
			*p = impl
			return v
		}
	case **mcp.ClientCapabilities: // item 29
		if caps, ok := scanClientCapabilities(raw); ok {
			*p = caps
			return v
		}
	}
	if json.Unmarshal(raw, &v) != nil {
		var zero T
		return zero
	}
	return v
}
