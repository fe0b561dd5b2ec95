package transport

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/mark3labs/mcp-go/mcp"
)

// HTTPHeaderFunc is a function that extracts header entries from the given context
// and returns them as key-value pairs. This is typically used to add context values
// as HTTP headers in outgoing requests.
type HTTPHeaderFunc func(context.Context) map[string]string

// Interface for the transport layer.
type Interface interface {
	// Start the connection. Start should only be called once.
	Start(ctx context.Context) error

	// SendRequest sends a json RPC request and returns the response synchronously.
	SendRequest(ctx context.Context, request JSONRPCRequest) (*JSONRPCResponse, error)

	// SendNotification sends a json RPC Notification to the server.
	SendNotification(ctx context.Context, notification mcp.JSONRPCNotification) error

	// SetNotificationHandler sets the handler for notifications.
	// Any notification before the handler is set will be discarded.
	SetNotificationHandler(handler func(notification mcp.JSONRPCNotification))

	// Close the connection.
	Close() error

	// GetSessionId returns the session ID of the transport.
	GetSessionId() string
}

// RequestHandler defines a function that handles incoming requests from the server.
type RequestHandler func(ctx context.Context, request JSONRPCRequest) (*JSONRPCResponse, error)

// BidirectionalInterface extends Interface to support incoming requests from the server.
// This is used for features like sampling where the server can send requests to the client.
type BidirectionalInterface interface {
	Interface

	// SetRequestHandler sets the handler for incoming requests from the server.
	// The handler should process the request and return a response.
	SetRequestHandler(handler RequestHandler)
}

// HTTPConnection is a Transport that runs over HTTP and supports
// protocol version headers.
type HTTPConnection interface {
	Interface
	SetProtocolVersion(version string)
}

type JSONRPCRequest struct {
	JSONRPC string        `json:"jsonrpc"`
	ID      mcp.RequestId `json:"id"`
	Method  string        `json:"method"`
	Params  any           `json:"params,omitempty"`
	Header  http.Header   `json:"-"`
}

// UnmarshalJSON decodes a request a server sent, keeping its params as
// the server wrote them (a json.RawMessage), not as a map: a relay passes
// them on unchanged, and an elicitation form's fields keep their order.
// toolgate patch, for fidelity (item 91); every reader of Params encodes
// it again before decoding it into its own type.
func (r *JSONRPCRequest) UnmarshalJSON(b []byte) error {
	var w struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      mcp.RequestId   `json:"id"`
		Method  string          `json:"method"`
		Params  json.RawMessage `json:"params"`
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	r.JSONRPC, r.ID, r.Method, r.Params = w.JSONRPC, w.ID, w.Method, nil
	if len(w.Params) > 0 && string(w.Params) != "null" {
		r.Params = w.Params
	}
	return nil
}

// encodeRequest is json.Marshal(request), except that params that are
// mcp.PreEncoded are written as they encode themselves (mcp.AppendRequest).
// toolgate patch, for speed (item 36); the stdio and streamable HTTP
// transports encode every request through it.
func encodeRequest(request JSONRPCRequest) ([]byte, error) {
	if pe, ok := request.Params.(mcp.PreEncoded); ok {
		return mcp.AppendRequest(make([]byte, 0, 256), request.JSONRPC, request.ID, request.Method, pe)
	}
	return json.Marshal(request)
}

// JSONRPCResponse represents a JSON-RPC 2.0 response message.
// Use NewJSONRPCResultResponse to create a JSONRPCResponse with a result.
// Use NewJSONRPCErrorResponse to create a JSONRPCResponse with an error.
type JSONRPCResponse struct {
	JSONRPC string                   `json:"jsonrpc"`
	ID      mcp.RequestId            `json:"id"`
	Result  json.RawMessage          `json:"result,omitempty"`
	Error   *mcp.JSONRPCErrorDetails `json:"error,omitempty"`
}
