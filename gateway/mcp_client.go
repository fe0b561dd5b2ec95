package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// mcpClient is the [Client] the mirror puts in the context of each request
// it serves: the request's own session and protocol information, so that
// whatever a toolset relays reaches the client that made the request and
// no other, with that client's log level and capabilities.
type mcpClient struct {
	m        *MCPServer
	ctx      context.Context // the request's: session, protocol info
	call     *Call           // the tools/call's call, or nil
	what     string          // what the request is, for records outside calls ("prompt x")
	lastSent atomic.Int64    // unix ns of the last notification queued to the client (logs, progress)
}

// withClient returns ctx with a client for the request it belongs to.
func (m *MCPServer) withClient(ctx context.Context, call *Call, what string) (context.Context, *mcpClient) {
	c := &mcpClient{m: m, ctx: ctx, call: call, what: what}
	return WithClient(ctx, c), c
}

func (c *mcpClient) SessionID() string {
	if s := server.ClientSessionFromContext(c.ctx); s != nil {
		return s.SessionID()
	}
	return ""
}

var logLevels = map[string]bool{
	"debug": true, "info": true, "notice": true, "warning": true,
	"error": true, "critical": true, "alert": true, "emergency": true,
}

func (c *mcpClient) Log(level, logger string, data any) error {
	if !logLevels[level] {
		level = string(mcp.LoggingLevelInfo)
	}
	err := c.m.srv.SendLogMessageToClient(c.ctx, mcp.NewLoggingMessageNotification(mcp.LoggingLevel(level), logger, data))
	if err == nil {
		c.lastSent.Store(time.Now().UnixNano())
	}
	return err
}

// Notify implements [Notifier]: to the session of a 2025-11-25 client (a
// 2026-07-28 one has no stream outside its requests).
func (c *mcpClient) Notify(method string, params map[string]any) error {
	s := server.ClientSessionFromContext(c.ctx)
	if c.Modern() || s == nil {
		return fmt.Errorf("%s: %w", method, ErrClientCannot)
	}
	return c.m.srv.SendNotificationToSpecificClient(s.SessionID(), method, params)
}

// capabilities returns what the client declared: for this request in
// 2026-07-28, at initialization before. modern is true for 2026-07-28
// requests, which cannot be sent server-to-client requests.
func (c *mcpClient) capabilities() (caps mcp.ClientCapabilities, modern bool) {
	if pi := modernRequest(c.ctx); pi != nil {
		if pi.ClientCapabilities != nil {
			caps = *pi.ClientCapabilities
		}
		return caps, true
	}
	if s, ok := server.ClientSessionFromContext(c.ctx).(server.SessionWithClientInfo); ok {
		caps = s.GetClientCapabilities()
	}
	return caps, false
}

// Modern implements [ModernClient].
func (c *mcpClient) Modern() bool { return modernRequest(c.ctx) != nil }

// CanAskInRounds implements the rounds check of [CanAskInRounds].
func (c *mcpClient) CanAskInRounds(method string) bool {
	if !c.Modern() { // before the capabilities: most calls stop here
		return false
	}
	caps, _ := c.capabilities()
	switch method {
	case MethodElicitation:
		return caps.Elicitation != nil
	case MethodSampling:
		return caps.Sampling != nil
	}
	return false
}

// Capabilities implements [ClientCapabilities].
func (c *mcpClient) Capabilities() json.RawMessage {
	caps, _ := c.capabilities()
	b, err := json.Marshal(caps)
	if err != nil {
		return json.RawMessage(`{}`)
	}
	return b
}

// typedCapabilities implements [typedCapsClient]: Capabilities, not
// marshalled.
func (c *mcpClient) typedCapabilities() (mcp.ClientCapabilities, bool) {
	caps, _ := c.capabilities()
	return caps, true
}

func (c *mcpClient) CanRequest(method string) bool {
	return c.canRequest(method, "")
}

// canRequest is CanRequest for an elicitation of the given mode ("" or
// "form", or "url").
func (c *mcpClient) canRequest(method, mode string) bool {
	caps, modern := c.capabilities()
	if modern {
		return false
	}
	s := server.ClientSessionFromContext(c.ctx)
	switch method {
	case MethodSampling:
		_, ok := s.(server.SessionWithSampling)
		return ok && caps.Sampling != nil
	case MethodElicitation:
		if _, ok := s.(server.SessionWithElicitation); !ok || caps.Elicitation == nil {
			return false
		}
		return elicitModeDeclared(caps, mode)
	}
	return false
}

// elicitModeDeclared reports whether caps, which declare elicitation,
// declare the mode ("" or "form", or "url").
func elicitModeDeclared(caps mcp.ClientCapabilities, mode string) bool {
	if caps.Elicitation == nil {
		return false
	}
	if mode == mcp.ElicitationModeURL {
		return caps.Elicitation.URL != nil
	}
	// An empty elicitation capability means form mode (2025-06-18).
	return caps.Elicitation.Form != nil || caps.Elicitation.URL == nil
}

func (c *mcpClient) Request(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	// The request goes out in the session of the client's own request and
	// ends when either that request or the caller's ctx ends; the cause
	// the caller's ctx ended with is the reason the client is given in
	// the notifications/cancelled of the request (mcp-go copy, item 61).
	rctx, cancel := context.WithCancelCause(c.ctx)
	defer cancel(nil)
	defer context.AfterFunc(ctx, func() { cancel(context.Cause(ctx)) })()

	start := time.Now()
	var out json.RawMessage
	var err error
	fields := map[string]any{}
	switch method {
	case MethodSampling:
		if !c.canRequest(method, "") {
			return nil, fmt.Errorf("%s: %w", method, ErrClientCannot)
		}
		var req mcp.CreateMessageRequest
		if req, err = samplingRequest(params); err != nil {
			return nil, err
		}
		req.CreateMessageParams.Meta = relayedMeta(req.CreateMessageParams.Meta, c.taskID())
		var res *mcp.CreateMessageResult
		resume := c.awaitingInput()
		//lint:ignore SA1019 sampling is relayed for clients on the 2025 revisions, where it is current
		res, err = c.m.srv.RequestSampling(rctx, req)
		resume()
		if err == nil {
			out, err = json.Marshal(res)
			fields["model"] = res.Model
		}
	case MethodElicitation:
		var req mcp.ElicitationRequest
		if req, err = elicitationRequest(params); err != nil {
			return nil, err
		}
		if !c.canRequest(method, req.Params.Mode) {
			return nil, fmt.Errorf("%s: %w", method, ErrClientCannot)
		}
		req.Params.Meta = relayedMeta(req.Params.Meta, c.taskID())
		var res *mcp.ElicitationResult
		resume := c.awaitingInput()
		res, err = c.m.srv.RequestElicitation(rctx, req)
		resume()
		if err == nil {
			out, err = json.Marshal(res)
			fields["action"] = string(res.Action)
		}
	default:
		return nil, fmt.Errorf("%s: %w", method, ErrClientCannot)
	}
	if err != nil {
		err = clientError(method, err)
		if errors.Is(err, server.ErrServerInitiatedRequestUnsupported) {
			err = fmt.Errorf("%s: %w", method, ErrClientCannot)
		}
	}
	c.record(method, fields, time.Since(start), err)
	return out, err
}

// awaitingInput moves the 2025-11-25 task the request is asked for, if
// any, to input_required until the returned function is called, when it
// is working again (MCP 2025-11-25, tasks: "Input Required Status"); the
// task's session is told of each change (mcp-go copy, item 62). A request
// of no task costs nothing.
func (c *mcpClient) awaitingInput() (resume func()) {
	id := c.taskID()
	if id == "" {
		return func() {}
	}
	return c.m.srv.TaskAwaitsInput(c.ctx, id)
}

// taskID is the 2025-11-25 task the request is asked for, or "".
func (c *mcpClient) taskID() string {
	if c.call == nil || c.call.Task == nil {
		return ""
	}
	return c.call.Task.ID
}

// relayedMeta is the _meta of a request passed on to the client, meta
// being the asker's: its members, but for the two that name things of the
// asker's, which the client cannot use: its progress token (toolgate does
// not relay progress of these requests) and its related-task (an
// upstream's own task). When the request is asked for a 2025-11-25 task of
// toolgate's (taskID), related-task names that task: MCP 2025-11-25
// (tasks) says such a request MUST carry it. Nil when nothing is left.
func relayedMeta(meta *mcp.Meta, taskID string) *mcp.Meta {
	fields := map[string]any{}
	if meta != nil {
		for k, v := range meta.AdditionalFields {
			if k != mcp.RelatedTaskMetaKey {
				fields[k] = v
			}
		}
	}
	if taskID != "" {
		fields[mcp.RelatedTaskMetaKey] = mcp.RelatedTaskMeta(taskID)
	}
	if len(fields) == 0 {
		return nil
	}
	return &mcp.Meta{AdditionalFields: fields}
}

// record writes relay.sampling or relay.elicitation to the run archive.
func (c *mcpClient) record(method string, fields map[string]any, elapsed time.Duration, err error) {
	if c.call == nil && c.what != "" {
		fields["request"] = c.what
	}
	typ := RelayEvent(method, c.call, fields, elapsed, err)
	c.m.opts.Pipeline.callerEvent(typ, withCaller(c.ctx, &Call{}), fields)
}

// RelayEvent completes the fields of the run archive's event for a request
// relayed to a client (a [Client]'s Request) and returns the event's type,
// relay.sampling or relay.elicitation: the call it was asked for (nil:
// none) and its caller, the wait and its outcome. fields holds the
// answer's own (model, action). Every client that relays records it so:
// the MCP mirror's, and toolgate call's at a terminal.
func RelayEvent(method string, call *Call, fields map[string]any, elapsed time.Duration, err error) string {
	typ := "relay.sampling"
	if method == MethodElicitation {
		typ = "relay.elicitation"
	}
	if call != nil {
		fields["call_id"] = call.ID
		fields["tool"] = call.Name
		fields["toolset"] = call.Toolset
		callerFields(fields, call)
	}
	fields["duration_ms"] = elapsed.Milliseconds()
	if err != nil {
		fields["status"] = "error"
		fields["error"] = err.Error()
	} else {
		fields["status"] = "ok"
	}
	return typ
}

// samplingRequest decodes sampling/createMessage params into mcp-go's
// type with the parts it would re-encode differently kept raw: message
// content, metadata and tool schemas pass through byte for byte.
func samplingRequest(params json.RawMessage) (mcp.CreateMessageRequest, error) {
	req := mcp.CreateMessageRequest{Request: mcp.Request{Method: MethodSampling}}
	if err := json.Unmarshal(params, &req.CreateMessageParams); err != nil {
		return req, fmt.Errorf("%s: decoding params: %w", MethodSampling, err)
	}
	var raw struct {
		Messages []struct {
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
		Metadata json.RawMessage `json:"metadata"`
		Tools    []struct {
			InputSchema  json.RawMessage `json:"inputSchema"`
			OutputSchema json.RawMessage `json:"outputSchema"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(params, &raw); err != nil {
		return req, fmt.Errorf("%s: decoding params: %w", MethodSampling, err)
	}
	p := &req.CreateMessageParams
	for i := range p.Messages {
		if i < len(raw.Messages) && len(raw.Messages[i].Content) > 0 {
			p.Messages[i].Content = raw.Messages[i].Content
		}
	}
	if len(raw.Metadata) > 0 && string(raw.Metadata) != "null" {
		p.Metadata = raw.Metadata
	}
	for i := range p.Tools {
		if i >= len(raw.Tools) {
			break
		}
		if s := raw.Tools[i].InputSchema; len(s) > 0 && string(s) != "null" {
			p.Tools[i].InputSchema, p.Tools[i].RawInputSchema = mcp.ToolInputSchema{}, s
		}
		if s := raw.Tools[i].OutputSchema; len(s) > 0 && string(s) != "null" {
			p.Tools[i].OutputSchema, p.Tools[i].RawOutputSchema = mcp.ToolOutputSchema{}, s
		}
	}
	return req, nil
}

// elicitationRequest decodes elicitation/create params, with the requested
// schema kept raw.
func elicitationRequest(params json.RawMessage) (mcp.ElicitationRequest, error) {
	req := mcp.ElicitationRequest{Request: mcp.Request{Method: MethodElicitation}}
	if err := json.Unmarshal(params, &req.Params); err != nil {
		return req, fmt.Errorf("%s: decoding params: %w", MethodElicitation, err)
	}
	var raw struct {
		RequestedSchema json.RawMessage `json:"requestedSchema"`
	}
	_ = json.Unmarshal(params, &raw)
	if len(raw.RequestedSchema) > 0 && string(raw.RequestedSchema) != "null" {
		req.Params.RequestedSchema = raw.RequestedSchema
	}
	if err := req.Params.Validate(); err != nil {
		return req, fmt.Errorf("%s: %w", MethodElicitation, err)
	}
	return req, nil
}

// mcp-go reports a client's JSON-RPC error as "<method> error <code>:
// <message>" (streamable HTTP) or "<kind> request failed: <message>"
// (stdio, SSE).
var clientErrorRE = regexp.MustCompile(`^(\S+) error (-?\d+): (.*)$`)

// clientError turns mcp-go's report of a client's JSON-RPC error back into
// a [*ClientError]; other errors are returned as they are.
func clientError(method string, err error) error {
	s := err.Error()
	if m := clientErrorRE.FindStringSubmatch(s); m != nil && m[1] == method {
		code, _ := strconv.Atoi(m[2])
		return &ClientError{Method: method, Code: code, Message: m[3]}
	}
	for _, p := range []string{"sampling request failed: ", "elicitation request failed: "} {
		if msg, ok := strings.CutPrefix(s, p); ok {
			return &ClientError{Method: method, Message: msg}
		}
	}
	return err
}
