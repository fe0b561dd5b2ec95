package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"

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
func extractRequestProtocolInfo(message json.RawMessage) (*RequestProtocolInfo, error) {
	// toolgate patch, for speed: the envelope's members are decoded from
	// the message into their types, not through mcp.Meta's generic map and
	// a re-encoding per member (same values: absent, null or malformed is
	// the zero value, as with Meta's accessors).
	// A message that cannot spell the protocol version's key has no
	// version: the legacy era, as the decoding below would find, without a
	// pass over the whole message.
	if !mayHoldProtocolVersion(message) {
		return &RequestProtocolInfo{}, nil
	}
	var wrapper struct {
		Params struct {
			Meta map[string]json.RawMessage `json:"_meta"`
		} `json:"params"`
	}
	if err := json.Unmarshal(message, &wrapper); err != nil {
		// A malformed body is reported by the per-method unmarshal, which
		// produces a better error message.
		return &RequestProtocolInfo{}, nil
	}

	meta := wrapper.Params.Meta
	version := metaMember[string](meta, mcp.MetaKeyProtocolVersion)
	if !mcp.IsModernProtocol(version) {
		// Either no version at all, or an older one: legacy era.
		return &RequestProtocolInfo{ProtocolVersion: version}, nil
	}

	info := &RequestProtocolInfo{
		Modern:          true,
		ProtocolVersion: version,
		ClientInfo:      metaMember[*mcp.Implementation](meta, mcp.MetaKeyClientInfo),
		LogLevel:        metaMember[mcp.LoggingLevel](meta, mcp.MetaKeyLogLevel),
	}

	// Client capabilities are required on every modern request. An empty
	// object is valid and means "no optional capabilities". A request without
	// them, or with a value that does not decode as capabilities, is malformed
	// and is rejected as invalid params (-32602).
	// MissingRequiredClientCapabilityError is for a request that needs a
	// capability the client did not declare.
	caps := metaMember[*mcp.ClientCapabilities](meta, mcp.MetaKeyClientCapabilities)
	if caps == nil {
		return nil, errors.New("missing or invalid _meta field " + mcp.MetaKeyClientCapabilities)
	}
	info.ClientCapabilities = caps

	return info, nil
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

// metaMember decodes the member key of a request's _meta: the zero value
// when the member is absent, null or does not decode (toolgate patch).
// It allocates only for a member that is there (a request without _meta,
// of 2025-11-25, costs nothing).
func metaMember[T any](meta map[string]json.RawMessage, key string) T {
	var zero T
	raw, ok := meta[key]
	if !ok {
		return zero
	}
	v := new(T)
	if json.Unmarshal(raw, v) != nil {
		return zero
	}
	return *v
}
