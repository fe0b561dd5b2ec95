package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"
)

// A request's client. Toolsets that relay an upstream server's log
// messages and requests (sampling, elicitation) reach the MCP client the
// request came from through the request's context, as they report progress
// ([ReportProgress]): the MCP mirror puts a [Client] in the context of every
// tools/call, prompts/get, resources/read and completion/complete it serves,
// and nothing else can reach that client. Whether a relayed message belongs
// to a request is the toolset's call (an upstream adapter, say, relays only
// what it can attribute to exactly one request); the Client only delivers.

// Client is the MCP client a request came from, as the MCP mirror exposes
// it to the toolset serving the request.
type Client interface {
	// SessionID identifies the client's session ("" when unknown; a
	// 2026-07-28 client gets a new one per request).
	SessionID() string
	// Log sends a notifications/message to the client, if the client's log
	// level (logging/setLevel, or the request's _meta logLevel in
	// 2026-07-28) lets it through. level is an MCP level ("debug" …
	// "emergency"); logger may be empty; data is any JSON value.
	Log(level, logger string, data any) error
	// CanRequest reports whether the client can be sent the request method
	// now: it declared the capability (sampling, elicitation) and its
	// protocol revision has server-to-client requests (2026-07-28 has not).
	CanRequest(method string) bool
	// Request sends the client a request (sampling/createMessage or
	// elicitation/create) with the given params and returns its result.
	// It fails with [ErrClientCannot] when CanRequest is false, and with a
	// [*ClientError] when the client answered with an error.
	Request(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error)
}

// Notifier is a [Client] that can be sent a notification after the
// request it came with has ended: to its session (2025-11-25). An
// upstream's notifications/elicitation/complete goes to the client that
// was asked the elicitation it completes.
type Notifier interface {
	Notify(method string, params map[string]any) error
}

// Methods a [Client] can be sent.
const (
	MethodSampling    = "sampling/createMessage"
	MethodElicitation = "elicitation/create"
)

// ErrClientCannot is returned by [Client.Request] (and [RequestFromClient])
// when the client did not declare the capability the request needs, or its
// protocol revision has no server-to-client requests.
var ErrClientCannot = errors.New("the client cannot be sent this request")

// ClientError is a JSON-RPC error the client answered a request with.
// Code is 0 when the client's transport did not pass the code on.
type ClientError struct {
	Method  string
	Code    int
	Message string
}

func (e *ClientError) Error() string {
	if e.Code == 0 {
		return fmt.Sprintf("the client answered %s with an error: %s", e.Method, e.Message)
	}
	return fmt.Sprintf("the client answered %s with error %d: %s", e.Method, e.Code, e.Message)
}

type clientKey struct{}

// WithClient returns a context whose requests are answered for c.
func WithClient(ctx context.Context, c Client) context.Context {
	return context.WithValue(ctx, clientKey{}, c)
}

// ClientFrom returns the client of the request ctx belongs to, or nil.
func ClientFrom(ctx context.Context) Client {
	c, _ := ctx.Value(clientKey{}).(Client)
	return c
}

// ReportLog sends a log message to the client of the request ctx belongs
// to and reports whether it was handed over (a client whose level filters
// it out counts as handed over). It does nothing when there is no client.
func ReportLog(ctx context.Context, level, logger string, data any) bool {
	c := ClientFrom(ctx)
	if c == nil {
		return false
	}
	return c.Log(level, logger, data) == nil
}

// RequestFromClient sends a request (sampling/createMessage or
// elicitation/create) to the client of the request ctx belongs to: ctx
// bounds the wait. It fails with [ErrNoClient] when there is no client and
// with [ErrClientCannot] when the client cannot be sent it.
func RequestFromClient(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	c := ClientFrom(ctx)
	if c == nil {
		return nil, ErrNoClient
	}
	if !c.CanRequest(method) {
		return nil, fmt.Errorf("%s: %w", method, ErrClientCannot)
	}
	return c.Request(ctx, method, params)
}

// EventRecorder is implemented by recorders that keep events other than
// calls (the run archive writes them to events.jsonl). The MCP mirror
// records every request it relays to a client through the pipeline's
// recorder when it is one: relay.sampling and relay.elicitation, with the
// call ID.
type EventRecorder interface {
	Event(typ string, fields map[string]any)
}

// roundsClient is implemented by clients that can be asked through the
// results of their own requests (2026-07-28 multi round-trip).
type roundsClient interface {
	// Modern reports whether the request is of 2026-07-28.
	Modern() bool
	CanAskInRounds(method string) bool
	// Capabilities are the capabilities the client declared, as JSON.
	Capabilities() json.RawMessage
}

// typedCapsClient is a roundsClient that holds its capabilities typed
// (the MCP mirror's, and the asking client over one), so that they need
// not go through their JSON.
type typedCapsClient interface {
	// typedCapabilities are Capabilities as [mcp.ClientCapabilities];
	// ok is false when Capabilities would not decode.
	typedCapabilities() (caps mcp.ClientCapabilities, ok bool)
}

// capabilitiesOf returns the capabilities c declared, typed: its own when
// it holds them so, else its Capabilities decoded (ok is false when they
// do not decode; caps are then what decoded).
func capabilitiesOf(c roundsClient) (caps mcp.ClientCapabilities, ok bool) {
	if t, typed := c.(typedCapsClient); typed {
		return t.typedCapabilities()
	}
	err := json.Unmarshal(c.Capabilities(), &caps)
	return caps, err == nil
}

// ModernClient reports whether the client of the request ctx belongs to
// speaks 2026-07-28: it declares its capabilities with every request, and
// is asked through rounds.
func ModernClient(ctx context.Context) bool {
	c, ok := ClientFrom(ctx).(roundsClient)
	return ok && c.Modern()
}

// ClientCapabilities returns the capabilities the client of the request
// ctx belongs to declared, as JSON (with the request on 2026-07-28, at
// initialization before), or nil when there is no such client. An
// upstream relay forwards them to a 2026-07-28 upstream, so that it asks
// only what the caller can answer.
func ClientCapabilities(ctx context.Context) json.RawMessage {
	if c, ok := ClientFrom(ctx).(roundsClient); ok {
		return c.Capabilities()
	}
	return nil
}

// CanAskInRounds reports whether the client of the request ctx belongs to
// speaks 2026-07-28 and declared the capability method needs
// (elicitation/create, sampling/createMessage): it cannot be sent a
// request, but a round of its call can end input-required, asking it.
func CanAskInRounds(ctx context.Context, method string) bool {
	c, ok := ClientFrom(ctx).(roundsClient)
	return ok && c.CanAskInRounds(method)
}

// TakesURLElicitationError reports whether the client of the request ctx
// can be answered a call's -32042 (URL elicitation required, with the
// elicitations to start in its data): a 2025-11-25 client that declared
// URL-mode elicitation. (2026-07-28 reserves the code: such a client is
// asked in a round.)
func TakesURLElicitationError(ctx context.Context) bool {
	c, ok := ClientFrom(ctx).(roundsClient)
	if !ok || c.Modern() {
		return false
	}
	caps, ok := capabilitiesOf(c)
	return ok && elicitModeDeclared(caps, mcp.ElicitationModeURL)
}

// CanElicitInRounds is CanAskInRounds for an elicitation of the given mode
// ("" or "form", or "url"): the client must also have declared that mode
// (a client that declared URL mode only cannot be shown a form).
func CanElicitInRounds(ctx context.Context, mode string) bool {
	c, ok := ClientFrom(ctx).(roundsClient)
	if !ok || !c.CanAskInRounds(MethodElicitation) {
		return false
	}
	caps, ok := capabilitiesOf(c)
	return ok && elicitModeDeclared(caps, mode)
}
