package server

import "context"

// messageContext is the values HandleMessage adds to a message's context,
// in one allocation (toolgate patch, item 42). v1.2.1 made a
// context.WithValue for the server, another for the request's protocol
// information, and allocated that information on its own. They are still
// two nodes, as in v1.2.1: the server is in the context from the start
// (the request hooks see it), the protocol information only once it has
// been worked out. A lookup of any other key goes on to the parent, so
// context.WithCancel below them finds the transport's cancel context as
// it did.
type messageContext struct {
	server serverContext
	info   protocolInfoContext
}

// serverContext answers serverKey (ServerFromContext).
type serverContext struct {
	context.Context
	s *MCPServer
}

func (c *serverContext) Value(key any) any {
	if _, ok := key.(serverKey); ok {
		return c.s
	}
	return c.Context.Value(key)
}

// protocolInfoContext answers requestProtocolKey
// (RequestProtocolInfoFromContext) with its information.
type protocolInfoContext struct {
	context.Context
	info RequestProtocolInfo
}

func (c *protocolInfoContext) Value(key any) any {
	if _, ok := key.(requestProtocolKey); ok {
		return &c.info
	}
	return c.Context.Value(key)
}
