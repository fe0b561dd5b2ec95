// Package upstream wraps upstream MCP servers (a stdio command, a
// streamable HTTP URL or a legacy SSE URL) as gateway toolsets, so that
// toolgate aggregates them behind its own endpoint and every upstream call
// passes through the gateway's pipeline.
//
// # Connection
//
// Each [Upstream] has a supervisor ([Upstream.Start]) that connects with
// the mcp-go client, pinned to the last protocol revision with the
// initialize handshake (mcp.LATEST_LEGACY_PROTOCOL_VERSION: no 5 s
// server/discover probe, sessions and the GET stream work with every
// server). It reconnects with exponential backoff (250 ms doubling to
// 30 s, with jitter; reset after a connection stayed up 30 s) when the
// child exits, the transport closes, the HTTP session ends, or a ping
// fails (after 15 s without a word from the upstream and with no request
// awaiting its answer, and at once after a call fails on the connection).
// An unanswered ping is not taken as death while a request awaits an
// answer or the upstream speaks meanwhile: a server that handles one
// message at a time is busy, not dead, and the call is bounded by its
// own deadline.
// While reconnecting, the last known tools stay listed and calls are
// answered with an unavailable result; an upstream that never connected
// has no tools, state "failed" and keeps retrying.
//
// A stdio child runs in its own process group, with only PATH, HOME, LANG
// and TMPDIR of the gateway's environment plus the configured env, in the
// configured directory; its stderr is logged line by line. On close and
// before every reconnection the whole group gets SIGTERM, then SIGKILL
// after a 2 s grace, and the child is reaped, so wrappers (npx, uvx, sh)
// leave no descendants behind, unless a descendant moved itself to another
// process group or session (daemons do). On Linux the child's exit is
// seen at once (waitid with WNOWAIT) even when a grandchild keeps its
// stdout open.
//
// # Tools
//
// tools/list is sent raw through the transport and paginated, so input
// and output schemas, title and _meta reach the gateway byte for byte
// (mcp-go's typed ListTools drops top-level schema keywords). Tools are
// named "<prefix>__<name>" (see [Config.Prefix]); names are kept within
// [A-Za-z0-9_-]{1,64}: other characters become "_", long names are cut
// and end with a hash of the original, and upstream names that map to the
// same name get deterministic suffixes (reported in Status and the log).
// Allow and deny globs on the upstream's own names filter both the
// listing and calls. A tool whose schema does not compile, or nests
// deeper than 128 levels (maxSchemaDepth), is left out and reported
// ([Upstream.Unoffered], Status); the others load. A tool
// the upstream runs as a task is offered to callers as one they may call
// as a task or not (tasks.go). Hints come from the annotations (absent hints
// are destructive and open-world) unless trust_annotations is false.
//
// Calls forward the raw arguments and return the raw result through
// gateway.ResultFromMCP (content of any type, structuredContent, isError
// and _meta unchanged; the upstream's serverInfo _meta is dropped). When
// the caller listens to progress, a string token is sent upstream and the
// upstream's notifications/progress are passed on with
// gateway.ReportProgress. When the call's context ends, the request is
// dropped and the upstream is sent notifications/cancelled with the
// upstream request ID, on every transport. A JSON-RPC error becomes a
// tool error result quoting it; a connection lost mid-call becomes an
// unavailable result.
//
// # Notifications
//
// Notification handlers run on mcp-go's read loop and never call the
// upstream: tools/, prompts/ and resources/list_changed schedule a
// debounced (100 ms) re-listing in another goroutine, which then tells the
// listeners; notifications/message goes to the logger (level mapped,
// upstream=<name>) and, when it can be attributed to a single request, to
// that request's client too (gateway.ReportLog: the client's own log
// level applies); notifications/resources/updated goes to the gateway's
// subscription listeners.
//
// # Relaying to the caller's client
//
// The connection is shared by every downstream client, so what the
// upstream sends on its own is passed to a client only when it can be
// attributed to exactly one request made for that client (relay.go): a
// request that arrived on a call's own response stream (streamable HTTP)
// belongs to that call; otherwise a message belongs to the only request in
// flight on the connection, and over streamable HTTP (whose several
// streams can deliver a message late) only if no other session's request
// ended in the last second either. Anything ambiguous goes to toolgate's
// log only, or is refused with a JSON-RPC error; nothing is ever delivered
// to another client. With relay_sampling and relay_elicitation (default
// off), the sampling and elicitation capabilities are declared, and
// sampling/createMessage and elicitation/create are passed, params and
// result as raw JSON as far as mcp-go allows, to the attributed call's
// client through gateway.RequestFromClient (refused when that client did
// not declare the capability, or speaks 2026-07-28, which has no
// server-to-client requests). mcp-go's streamable HTTP client gives such
// a request 30 s. The gateway's mirror records each relay in the run
// archive (relay.sampling, relay.elicitation).
//
// Roots are never offered unless forward_roots is set; then the roots
// capability is declared and roots/list is answered with [Options.Roots]
// (an empty list when nil). The upstream's roots/list does not say which
// call it is for, so the roots cannot be those of a particular downstream
// client; a Roots function should return the roots the operator intends
// every client to share. Without forward_roots, a 2026-07-28 request's
// envelope leaves the caller's roots capability out, and a round that
// asks for roots (roots/list in an input_required result) is refused
// rather than asked of the caller (modern.go, refusedAsk).
//
// # Prompts and resources
//
// Prompts are served as "<prefix>__<name>"; getting one forwards
// prompts/get with the arguments and passes message content of any type
// through gateway.UnmarshalPart. Resources and resource templates keep
// their URIs; each one's Read forwards resources/read with the URI to the
// upstream that listed it (read-through, no caching). Lists are refreshed
// on connection and on list_changed. When two upstreams list the same
// resource URI, the gateway's mirror serves the one whose source was added
// first and logs the conflict; overlapping templates are matched in the
// order the mirror holds them.
//
// An Upstream is a gateway.ResourceSubscriber: the mirror subscribes it to
// a URI when the first client subscribes (resources/subscribe is forwarded;
// an upstream that does not offer subscriptions refuses) and unsubscribes
// it after the last; every new connection is subscribed again to those
// URIs, and their listeners told they may have changed meanwhile. It is
// also a gateway.PromptCompleter and gateway.ResourceCompleter:
// completion/complete is forwarded under the upstream's own prompt name
// (an upstream without the completions capability completes to nothing).
package upstream
