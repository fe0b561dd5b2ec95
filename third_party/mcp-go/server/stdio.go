package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"os"
	"os/signal"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/mark3labs/mcp-go/mcp"
)

// StdioContextFunc is a function that takes an existing context and returns
// a potentially modified context.
// This can be used to inject context values from environment variables,
// for example.
type StdioContextFunc func(ctx context.Context) context.Context

// StdioServer wraps a MCPServer and handles stdio communication.
// It provides a simple way to create command-line MCP servers that
// communicate via standard input/output streams using JSON-RPC messages.
type StdioServer struct {
	server      *MCPServer
	errLogger   *log.Logger
	contextFunc StdioContextFunc

	// Thread-safe tool call processing
	toolCalls      *toolCallPool // toolgate patch (item 19): was toolCallQueue, a channel
	workerWg       sync.WaitGroup
	requestWg      sync.WaitGroup // Tracks in-flight request handlers
	workerPoolSize int
	queueSize      int
	maxLineBytes   int           // toolgate patch (item 46): 0, no bound
	requestSlots   chan struct{} // toolgate patch (item 58): requests being answered off the read loop
	writeMu        sync.Mutex    // Protects concurrent writes
}

// toolCallWork represents a queued tool call request
type toolCallWork struct {
	ctx     context.Context
	id      any // JSON-RPC id, so a recovered panic stays correlatable
	message json.RawMessage
	writer  io.Writer
}

// StdioOption defines a function type for configuring StdioServer
type StdioOption func(*StdioServer)

// WithErrorLogger sets the error logger for the server
func WithErrorLogger(logger *log.Logger) StdioOption {
	return func(s *StdioServer) {
		s.errLogger = logger
	}
}

// WithStdioContextFunc sets a function that will be called to customise the context
// to the server. Note that the stdio server uses the same context for all requests,
// so this function will only be called once per server instance.
func WithStdioContextFunc(fn StdioContextFunc) StdioOption {
	return func(s *StdioServer) {
		s.contextFunc = fn
	}
}

// WithWorkerPoolSize sets the number of workers for processing tool calls
func WithWorkerPoolSize(size int) StdioOption {
	return func(s *StdioServer) {
		const maxWorkerPoolSize = 100
		if size > 0 && size <= maxWorkerPoolSize {
			s.workerPoolSize = size
		} else if size > maxWorkerPoolSize {
			s.errLogger.Printf("Worker pool size %d exceeds maximum (%d), using maximum", size, maxWorkerPoolSize)
			s.workerPoolSize = maxWorkerPoolSize
		}
	}
}

// WithQueueSize sets the size of the tool call queue
func WithQueueSize(size int) StdioOption {
	return func(s *StdioServer) {
		const maxQueueSize = 10000
		if size > 0 && size <= maxQueueSize {
			s.queueSize = size
		} else if size > maxQueueSize {
			s.errLogger.Printf("Queue size %d exceeds maximum (%d), using maximum", size, maxQueueSize)
			s.queueSize = maxQueueSize
		}
	}
}

// WithMaxMessageBytes bounds the length of one input line (a message).
// toolgate patch, item 46: v1.2.1 read a line of any length whole, and a
// message of hundreds of megabytes cost the process about nine times its
// size in memory before it was even decoded. A longer line is skipped as
// it is read, never held, and answered with an Invalid Request error
// (id null: it was not read); the session goes on. 0, the default, is no
// bound, as in v1.2.1.
func WithMaxMessageBytes(n int) StdioOption {
	return func(s *StdioServer) {
		if n > 0 {
			s.maxLineBytes = n
		}
	}
}

// stdioMaxRequestsInFlight bounds the requests other than tools/call
// being answered at once off the read loop (toolgate patch, item 58): past
// it the read loop waits for one to be answered before it reads on, so a
// client that writes requests without reading the answers is held back by
// the pipe instead of costing a goroutine and an answer per line.
const stdioMaxRequestsInFlight = 1024

// stdioSession is a static client session, since stdio has only one client.
type stdioSession struct {
	clientInfoStore // provides Get/SetClientInfo and Get/SetClientCapabilities via method promotion

	notifications       chan mcp.JSONRPCNotification
	initialized         atomic.Bool
	loggingLevel        atomic.Value
	writer              io.Writer                           // for sending requests to client
	requestID           atomic.Int64                        // for generating unique request IDs
	mu                  sync.RWMutex                        // protects writer
	pendingRequests     map[int64]chan *samplingResponse    // for tracking pending sampling requests
	pendingElicitations map[int64]chan *elicitationResponse // for tracking pending elicitation requests
	pendingRoots        map[int64]chan *rootsResponse       // for tracking pending list roots requests
	pendingMu           sync.RWMutex                        // protects pendingRequests and pendingElicitations
}

// samplingResponse represents a response to a sampling request
type samplingResponse struct {
	result *mcp.CreateMessageResult
	err    error
}

// elicitationResponse represents a response to an elicitation request
type elicitationResponse struct {
	result *mcp.ElicitationResult
	err    error
}

// rootsResponse represents a response to an list root request
type rootsResponse struct {
	result *mcp.ListRootsResult
	err    error
}

func (s *stdioSession) SessionID() string {
	return "stdio"
}

func (s *stdioSession) NotificationChannel() chan<- mcp.JSONRPCNotification {
	return s.notifications
}

func (s *stdioSession) Initialize() {
	// set default logging level
	s.loggingLevel.Store(mcp.LoggingLevelError)
	s.initialized.Store(true)
}

func (s *stdioSession) Initialized() bool {
	return s.initialized.Load()
}

func (s *stdioSession) SetLogLevel(level mcp.LoggingLevel) {
	s.loggingLevel.Store(level)
}

func (s *stdioSession) GetLogLevel() mcp.LoggingLevel {
	level := s.loggingLevel.Load()
	if level == nil {
		return mcp.LoggingLevelError
	}
	return level.(mcp.LoggingLevel)
}

// RequestSampling sends a sampling request to the client and waits for the response.
func (s *stdioSession) RequestSampling(ctx context.Context, request mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	s.mu.RLock()
	writer := s.writer
	s.mu.RUnlock()

	if writer == nil {
		return nil, fmt.Errorf("no writer available for sending requests")
	}

	// Generate a unique request ID
	id := s.requestID.Add(1)

	// Create a response channel for this request
	responseChan := make(chan *samplingResponse, 1)
	s.pendingMu.Lock()
	s.pendingRequests[id] = responseChan
	s.pendingMu.Unlock()

	// Cleanup function to remove the pending request
	cleanup := func() {
		s.pendingMu.Lock()
		delete(s.pendingRequests, id)
		s.pendingMu.Unlock()
	}
	defer cleanup()

	// Create the JSON-RPC request
	jsonRPCRequest := struct {
		JSONRPC string                  `json:"jsonrpc"`
		ID      int64                   `json:"id"`
		Method  string                  `json:"method"`
		Params  mcp.CreateMessageParams `json:"params"`
	}{
		JSONRPC: mcp.JSONRPC_VERSION,
		ID:      id,
		Method:  string(mcp.MethodSamplingCreateMessage),
		Params:  request.CreateMessageParams,
	}

	// Marshal and send the request
	requestBytes, err := json.Marshal(jsonRPCRequest)
	if err != nil {
		return nil, fmt.Errorf("failed to marshal sampling request: %w", err)
	}
	requestBytes = append(requestBytes, '\n')

	if _, err := writer.Write(requestBytes); err != nil {
		return nil, fmt.Errorf("failed to write sampling request: %w", err)
	}

	// Wait for the response or context cancellation
	select {
	case <-ctx.Done():
		cancelAtClient(ctx, s, id) // toolgate patch, item 61
		return nil, ctx.Err()
	case response := <-responseChan:
		if response.err != nil {
			return nil, response.err
		}
		return response.result, nil
	}
}

// ListRoots sends an list roots request to the client and waits for the response.
func (s *stdioSession) ListRoots(ctx context.Context, request mcp.ListRootsRequest) (*mcp.ListRootsResult, error) {
	s.mu.RLock()
	writer := s.writer
	s.mu.RUnlock()

	if writer == nil {
		return nil, fmt.Errorf("no writer available for sending requests")
	}

	// Generate a unique request ID
	id := s.requestID.Add(1)

	// Create a response channel for this request
	responseChan := make(chan *rootsResponse, 1)
	s.pendingMu.Lock()
	s.pendingRoots[id] = responseChan
	s.pendingMu.Unlock()

	// Cleanup function to remove the pending request
	cleanup := func() {
		s.pendingMu.Lock()
		delete(s.pendingRoots, id)
		s.pendingMu.Unlock()
	}
	defer cleanup()

	// Create the JSON-RPC request
	jsonRPCRequest := struct {
		JSONRPC string `json:"jsonrpc"`
		ID      int64  `json:"id"`
		Method  string `json:"method"`
	}{
		JSONRPC: mcp.JSONRPC_VERSION,
		ID:      id,
		Method:  string(mcp.MethodListRoots),
	}

	// Marshal and send the request
	requestBytes, err := json.Marshal(jsonRPCRequest)
	if err != nil {
		return nil, fmt.Errorf("failed to marshal list roots request: %w", err)
	}
	requestBytes = append(requestBytes, '\n')

	if _, err := writer.Write(requestBytes); err != nil {
		return nil, fmt.Errorf("failed to write list roots request: %w", err)
	}

	// Wait for the response or context cancellation
	select {
	case <-ctx.Done():
		cancelAtClient(ctx, s, id) // toolgate patch, item 61
		return nil, ctx.Err()
	case response := <-responseChan:
		if response.err != nil {
			return nil, response.err
		}
		return response.result, nil
	}
}

// RequestElicitation sends an elicitation request to the client and waits for the response.
func (s *stdioSession) RequestElicitation(ctx context.Context, request mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	s.mu.RLock()
	writer := s.writer
	s.mu.RUnlock()

	if writer == nil {
		return nil, fmt.Errorf("no writer available for sending requests")
	}

	// Generate a unique request ID
	id := s.requestID.Add(1)

	// Create a response channel for this request
	responseChan := make(chan *elicitationResponse, 1)
	s.pendingMu.Lock()
	s.pendingElicitations[id] = responseChan
	s.pendingMu.Unlock()

	// Cleanup function to remove the pending request
	cleanup := func() {
		s.pendingMu.Lock()
		delete(s.pendingElicitations, id)
		s.pendingMu.Unlock()
	}
	defer cleanup()

	// Create the JSON-RPC request
	jsonRPCRequest := struct {
		JSONRPC string                `json:"jsonrpc"`
		ID      int64                 `json:"id"`
		Method  string                `json:"method"`
		Params  mcp.ElicitationParams `json:"params"`
	}{
		JSONRPC: mcp.JSONRPC_VERSION,
		ID:      id,
		Method:  string(mcp.MethodElicitationCreate),
		Params:  request.Params,
	}

	// Marshal and send the request
	requestBytes, err := json.Marshal(jsonRPCRequest)
	if err != nil {
		return nil, fmt.Errorf("failed to marshal elicitation request: %w", err)
	}
	requestBytes = append(requestBytes, '\n')

	if _, err := writer.Write(requestBytes); err != nil {
		return nil, fmt.Errorf("failed to write elicitation request: %w", err)
	}

	// Wait for the response or context cancellation
	select {
	case <-ctx.Done():
		cancelAtClient(ctx, s, id) // toolgate patch, item 61
		return nil, ctx.Err()
	case response := <-responseChan:
		if response.err != nil {
			return nil, response.err
		}
		return response.result, nil
	}
}

// SetWriter sets the writer for sending requests to the client.
func (s *stdioSession) SetWriter(writer io.Writer) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.writer = writer
}

var (
	_ ClientSession          = (*stdioSession)(nil)
	_ SessionWithLogging     = (*stdioSession)(nil)
	_ SessionWithClientInfo  = (*stdioSession)(nil)
	_ SessionWithSampling    = (*stdioSession)(nil)
	_ SessionWithElicitation = (*stdioSession)(nil)
	_ SessionWithRoots       = (*stdioSession)(nil)
)

var stdioSessionInstance = stdioSession{
	notifications:       make(chan mcp.JSONRPCNotification, 100),
	pendingRequests:     make(map[int64]chan *samplingResponse),
	pendingElicitations: make(map[int64]chan *elicitationResponse),
	pendingRoots:        make(map[int64]chan *rootsResponse),
}

// NewStdioServer creates a new stdio server wrapper around an MCPServer.
// It initializes the server with a default error logger that discards all output.
func NewStdioServer(server *MCPServer) *StdioServer {
	return &StdioServer{
		server: server,
		errLogger: log.New(
			os.Stderr,
			"",
			log.LstdFlags,
		), // Default to discarding logs
		workerPoolSize: 5,   // Default worker pool size
		queueSize:      100, // Default queue size
	}
}

// SetErrorLogger configures where error messages from the StdioServer are logged.
// The provided logger will receive all error messages generated during server operation.
func (s *StdioServer) SetErrorLogger(logger *log.Logger) {
	s.errLogger = logger
}

// SetContextFunc sets a function that will be called to customise the context
// to the server. Note that the stdio server uses the same context for all requests,
// so this function will only be called once per server instance.
func (s *StdioServer) SetContextFunc(fn StdioContextFunc) {
	s.contextFunc = fn
}

// handleNotifications continuously processes notifications from the session's notification channel
// and writes them to the provided output. It runs until the context is cancelled.
// Any errors encountered while writing notifications are logged but do not stop the handler.
func (s *StdioServer) handleNotifications(ctx context.Context, stdout io.Writer) {
	for {
		select {
		case notification := <-stdioSessionInstance.notifications:
			if err := s.writeResponse(notification, stdout); err != nil {
				s.errLogger.Printf("Error writing notification: %v", err)
			}
		case <-ctx.Done():
			return
		}
	}
}

// processInputStream continuously reads and processes messages from the input stream.
// It handles EOF gracefully as a normal termination condition.
// The function returns when either:
// - The context is cancelled (returns context.Err())
// - EOF is encountered (returns nil)
// - An error occurs while reading or processing messages (returns the error)
func (s *StdioServer) processInputStream(ctx context.Context, reader *bufio.Reader, stdout io.Writer) error {
	lines := readLines(ctx, reader, s.maxLineBytes)
	for {
		if err := ctx.Err(); err != nil {
			return err
		}

		line, over, err := nextLine(ctx, lines)
		if over > 0 && (err == nil || err == io.EOF) {
			msg := fmt.Sprintf("Invalid Request: a message of %d bytes is over the limit of %d bytes; it was skipped", over, s.maxLineBytes)
			if werr := s.writeResponse(createErrorResponse(nil, mcp.INVALID_REQUEST, msg), stdout); werr != nil {
				return werr
			}
		}
		if err != nil {
			if err == io.EOF {
				return nil
			}
			s.errLogger.Printf("Error reading input: %v", err)
			return err
		}

		if err := s.processMessage(ctx, line, stdout); err != nil {
			if err == io.EOF {
				return nil
			}
			s.errLogger.Printf("Error handling message: %v", err)
			return err
		}
	}
}

// toolCallWorker processes tool calls from the pool's queue.
func (s *StdioServer) toolCallWorker(ctx context.Context) {
	defer s.workerWg.Done()

	inbox := make(chan *toolCallWork, 1)
	for {
		work := s.toolCalls.next(ctx, inbox)
		if work == nil {
			return
		}
		// Process the tool call with panic recovery so a single
		// panicking handler does not kill the worker permanently.
		response := func() (resp mcp.JSONRPCMessage) {
			defer func() {
				if r := recover(); r != nil {
					s.errLogger.Printf("panic recovered in stdio tool call worker: %v", r)
					resp = createErrorResponse(work.id, mcp.INTERNAL_ERROR, fmt.Sprintf("internal panic: %v", r))
				}
			}()
			return s.server.HandleMessage(work.ctx, work.message)
		}()
		if response != nil {
			if err := s.writeResponse(response, work.writer); err != nil {
				s.errLogger.Printf("Error writing tool response: %v", err)
			}
		}
	}
}

// toolCallPool hands tool calls to the stdio server's workers. toolgate
// patch, for speed (item 19): the workers took calls from one channel,
// whose waiting receivers are served first come, first served, so each
// call went to the worker idle longest: with many workers (toolgate runs
// mcp-go's maximum, 100, so that slow tools hold up no others) every call
// ran on a cold goroutine whose stack the collector had shrunk since, and
// grew it again. Here a call goes to the worker idle least long; with none
// idle it waits in a queue of the same capacity, oldest first, and with
// the queue full the caller serves it itself, as before.
type toolCallPool struct {
	mu     sync.Mutex
	idle   []chan *toolCallWork // idle workers' inboxes, the latest last
	queue  []*toolCallWork      // calls waiting for a worker, oldest first
	limit  int                  // the queue's capacity
	closed bool
}

// submit hands w to the worker idle least long, or queues it; false when
// the queue is full or the pool closed.
func (p *toolCallPool) submit(w *toolCallWork) bool {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return false
	}
	if n := len(p.idle); n > 0 {
		inbox := p.idle[n-1]
		p.idle[n-1] = nil
		p.idle = p.idle[:n-1]
		p.mu.Unlock()
		inbox <- w // buffered, and handed one call per wait: never blocks
		return true
	}
	if len(p.queue) >= p.limit {
		p.mu.Unlock()
		return false
	}
	p.queue = append(p.queue, w)
	p.mu.Unlock()
	return true
}

// next returns a worker's next call: the oldest queued one, or the next
// one handed to its inbox. It returns nil when ctx ends or the pool is
// closed with nothing queued (calls still queued when ctx ends are left,
// as the channel's receivers left them).
func (p *toolCallPool) next(ctx context.Context, inbox chan *toolCallWork) *toolCallWork {
	p.mu.Lock()
	if len(p.queue) > 0 {
		w := p.queue[0]
		p.queue[0] = nil
		p.queue = p.queue[1:]
		p.mu.Unlock()
		return w
	}
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.idle = append(p.idle, inbox)
	p.mu.Unlock()
	select {
	case w := <-inbox:
		return w // nil once closed
	case <-ctx.Done():
	}
	// toolgate patch, item 45: a call handed to this worker as ctx ended
	// (select chose at random between the two) is served: it sees the
	// ended context, and is answered and recorded as such, not dropped
	// with no answer at all. A worker still on the idle list was handed
	// nothing; one that is not was taken off it by submit (or close),
	// whose send into the buffered inbox follows at once.
	p.mu.Lock()
	i := slices.Index(p.idle, inbox)
	if i >= 0 {
		p.idle = slices.Delete(p.idle, i, i+1)
	}
	p.mu.Unlock()
	if i >= 0 {
		return nil
	}
	return <-inbox
}

// close ends the pool: idle workers return, busy ones once the queue is
// empty.
func (p *toolCallPool) close() {
	p.mu.Lock()
	p.closed = true
	idle := p.idle
	p.idle = nil
	p.mu.Unlock()
	for _, inbox := range idle {
		inbox <- nil
	}
}

// readLines and nextLine read the input's lines. toolgate patch, for speed
// (item 20): readNextLine started a goroutine, and made a channel, for
// every line, so that a read could be given up when the context ended. One
// goroutine now reads the lines, and a line read once the context has ended
// is dropped, as the per-line goroutine dropped it.
type readResult struct {
	line string
	over int // the length of a line skipped as too long (item 46)
	err  error
}

// readLines reads reader's lines, each sent on the channel it returns,
// until a read fails (that result is the last sent) or ctx ends.
func readLines(ctx context.Context, reader *bufio.Reader, max int) <-chan readResult {
	lines := make(chan readResult)
	go func() {
		for {
			line, over, err := readLine(reader, max)
			select {
			case lines <- readResult{line: line, over: over, err: err}:
			case <-ctx.Done():
				return
			}
			if err != nil {
				return
			}
		}
	}()
	return lines
}

// readLine reads one line, as ReadString('\n') does, of at most max
// bytes before its line break (max 0: any). A longer one is read to its
// end and dropped as it goes (item 46): it returns "" and the line's
// length.
func readLine(reader *bufio.Reader, max int) (string, int, error) {
	if max <= 0 {
		line, err := reader.ReadString('\n')
		return line, 0, err
	}
	var buf []byte
	n := 0
	for {
		frag, err := reader.ReadSlice('\n')
		if n == 0 && err != bufio.ErrBufferFull && len(frag) <= max+1 && (len(frag) <= max || frag[len(frag)-1] == '\n') {
			return string(frag), 0, err // the whole line at once: one copy, as ReadString
		}
		n += len(frag)
		body := n
		if len(frag) > 0 && frag[len(frag)-1] == '\n' {
			body-- // the line break is not the message's
		}
		if body <= max {
			buf = append(buf, frag...)
		} else {
			buf = nil
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if body > max {
			return "", body, err
		}
		return string(buf), 0, err
	}
}

// nextLine is the next line readLines read, or "" once ctx has ended;
// over is the length of a line skipped as too long.
func nextLine(ctx context.Context, lines <-chan readResult) (line string, over int, err error) {
	select {
	case <-ctx.Done():
		return "", 0, nil
	case res := <-lines:
		return res.line, res.over, res.err
	}
}

// Listen starts listening for JSON-RPC messages on the provided input and writes responses to the provided output.
// It runs until the context is cancelled or an error occurs.
// Returns an error if there are issues with reading input or writing output.
func (s *StdioServer) Listen(
	ctx context.Context,
	stdin io.Reader,
	stdout io.Writer,
) error {
	// Initialize the tool call queue
	s.toolCalls = &toolCallPool{limit: s.queueSize}
	s.requestSlots = make(chan struct{}, stdioMaxRequestsInFlight)

	// Set a static client context since stdio only has one client
	if err := s.server.RegisterSession(ctx, &stdioSessionInstance); err != nil {
		return fmt.Errorf("register session: %w", err)
	}
	defer s.server.UnregisterSession(ctx, stdioSessionInstance.SessionID())
	ctx = s.server.WithContext(ctx, &stdioSessionInstance)

	// Set the writer for sending requests to the client
	stdioSessionInstance.SetWriter(stdout)

	// Add in any custom context.
	if s.contextFunc != nil {
		ctx = s.contextFunc(ctx)
	}

	// Requests are served on their own goroutines. Cancelling this context when
	// input processing ends releases any handler still blocked on it, so none
	// outlives the session it was registered against.
	ctx, cancelRequests := context.WithCancel(ctx)
	defer cancelRequests()

	reader := bufio.NewReader(stdin)

	// Start worker pool for tool calls
	for i := 0; i < s.workerPoolSize; i++ {
		s.workerWg.Add(1)
		go s.toolCallWorker(ctx)
	}

	// Start notification handler
	go s.handleNotifications(ctx, stdout)

	// Process input stream
	err := s.processInputStream(ctx, reader, stdout)

	// Shutdown workers gracefully
	cancelRequests()
	s.toolCalls.close()
	s.workerWg.Wait()
	s.requestWg.Wait()

	return err
}

// processMessage handles a single JSON-RPC message and writes the response.
// It parses the message, processes it through the wrapped MCPServer, and writes any response.
// Returns an error if there are issues with message processing or response writing.
func (s *StdioServer) processMessage(
	ctx context.Context,
	line string,
	writer io.Writer,
) error {
	// If line is empty, likely due to ctx cancellation
	if len(line) == 0 {
		return nil
	}

	// toolgate patch, for speed (item 18): the line was decoded once as
	// raw JSON, three times more as a response to each kind of request
	// this server sends, once more for its method and ID, then again by
	// HandleMessage. One decoding of its envelope now serves all of them
	// (envelope.go): a syntax error is the parse error the raw decoding
	// gave; the probes for a response run only for a message with a
	// result or an error member, without which each said no; and
	// HandleMessage gets the envelope, unless its method or its id could
	// not be decoded (which made it unparsed before as now). The method
	// and ID the routing reads are the envelope's, decoded as the
	// routing's own decoding did, partly so where the method's type was
	// wrong. The envelope is the HTTP transport's (postEnvelope), read the
	// same way (item 23).
	rawMessage := json.RawMessage(bytes.Trim([]byte(line), " \t\r\n"))
	var env postEnvelope
	envErr := decodePostEnvelope(rawMessage, &env)
	if _, syntax := envErr.(*json.SyntaxError); syntax {
		response := createErrorResponse(nil, mcp.PARSE_ERROR, "Parse error")
		return s.writeResponse(response, writer)
	}
	id, idOK := decodeID(env.ID)
	parsed := envErr == nil && idOK

	if !parsed || env.Result != nil || env.Error != nil {
		// Check if this is a response to a sampling request
		if s.handleSamplingResponse(rawMessage) {
			return nil
		}

		// Check if this is a response to an elicitation request
		if s.handleElicitationResponse(rawMessage) {
			return nil
		}

		// Check if this is a response to an list roots request
		if s.handleListRootsResponse(rawMessage) {
			return nil
		}

		// toolgate patch (item 59): a response to no request pending (an
		// error response, a late one, one with a null result) is dropped.
		// It fell through to HandleMessage, which answered it "Method not
		// found" under its id: an answer a client takes for one to its own
		// request of that id.
		if parsed && env.Method == "" && id != nil {
			return nil
		}
	}

	if parsed {
		ctx = withDecodedEnvelope(ctx, env.decoded(rawMessage, id))
	}

	// Check if this is a tool call that might need sampling (and thus should be processed concurrently)
	if parsed && env.Method == mcp.MethodToolsCall {
		// Queue tool calls for processing by workers
		if err := ctx.Err(); err != nil {
			return err
		}
		if s.toolCalls.submit(&toolCallWork{
			ctx:     ctx,
			id:      id,
			message: rawMessage,
			writer:  writer,
		}) {
			return nil
		}
		// Queue is full, process synchronously as fallback
		s.errLogger.Printf("Tool call queue full, processing synchronously")
		response := s.handleMessage(ctx, id, rawMessage)
		if response != nil {
			return s.writeResponse(response, writer)
		}
		return nil
	}

	// Serve requests off the read loop: a handler that blocks, such as
	// subscriptions/listen, must not stall it. writeMu serialises the writes.
	// toolgate patch (item 58): at most stdioMaxRequestsInFlight at once;
	// past it, the read loop waits for a slot (back-pressure on the client).
	if parsed && id != nil {
		select {
		case s.requestSlots <- struct{}{}:
		case <-ctx.Done():
			return nil // the loop ends on ctx, as for a line read after the end
		}
		s.requestWg.Go(func() {
			defer func() { <-s.requestSlots }()
			s.handleRequest(ctx, id, rawMessage, writer)
		})
		return nil
	}

	// Notifications carry no response and must not queue behind a request.
	response := s.handleMessage(ctx, id, rawMessage)

	// Only write response if there is one (not for notifications)
	if response != nil {
		if err := s.writeResponse(response, writer); err != nil {
			return fmt.Errorf("failed to write response: %w", err)
		}
	}

	return nil
}

// handleMessage runs HandleMessage, recovering a panicking handler so that
// it can't end the process. A request gets an INTERNAL_ERROR response
// carrying its id; a notification (nil id) gets no response at all.
func (s *StdioServer) handleMessage(ctx context.Context, id any, rawMessage json.RawMessage) (response mcp.JSONRPCMessage) {
	defer func() {
		if r := recover(); r != nil {
			s.errLogger.Printf("panic recovered in stdio message handler: %v", r)
			if id != nil {
				response = createErrorResponse(id, mcp.INTERNAL_ERROR, fmt.Sprintf("internal panic: %v", r))
			}
		}
	}()
	return s.server.HandleMessage(ctx, rawMessage)
}

// handleRequest serves one JSON-RPC request and writes its response. id is the
// request's JSON-RPC id, so a recovered panic stays correlatable by the client.
func (s *StdioServer) handleRequest(ctx context.Context, id any, rawMessage json.RawMessage, writer io.Writer) {
	response := s.handleMessage(ctx, id, rawMessage)
	if response != nil {
		if err := s.writeResponse(response, writer); err != nil {
			s.errLogger.Printf("Error writing response: %v", err)
		}
	}
}

// handleSamplingResponse checks if the message is a response to a sampling request
// and routes it to the appropriate pending request channel.
func (s *StdioServer) handleSamplingResponse(rawMessage json.RawMessage) bool {
	return stdioSessionInstance.handleSamplingResponse(rawMessage)
}

// handleSamplingResponse handles incoming sampling responses for this session
func (s *stdioSession) handleSamplingResponse(rawMessage json.RawMessage) bool {
	// Try to parse as a JSON-RPC response
	var response struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.Number     `json:"id"`
		Result  json.RawMessage `json:"result,omitempty"`
		Error   *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error,omitempty"`
	}

	if err := json.Unmarshal(rawMessage, &response); err != nil {
		return false
	}
	// Parse the ID as int64
	idInt64, err := response.ID.Int64()
	if err != nil || (response.Result == nil && response.Error == nil) {
		return false
	}

	// Look for a pending request with this ID
	s.pendingMu.RLock()
	responseChan, exists := s.pendingRequests[idInt64]
	s.pendingMu.RUnlock()

	if !exists {
		return false
	} // Parse and send the response
	samplingResp := &samplingResponse{}

	if response.Error != nil {
		samplingResp.err = fmt.Errorf("sampling request failed: %s", response.Error.Message)
	} else {
		var result mcp.CreateMessageResult
		if err := json.Unmarshal(response.Result, &result); err != nil {
			samplingResp.err = fmt.Errorf("failed to unmarshal sampling response: %w", err)
		} else {
			// Parse content from map[string]any to proper Content type (TextContent, ImageContent, AudioContent)
			content, err := mcp.ParseSamplingContent(result.Content)
			if err != nil {
				samplingResp.err = fmt.Errorf("failed to parse sampling response content: %w", err)
			} else {
				result.Content = content
				samplingResp.result = &result
			}
		}
	}

	// Send the response (non-blocking)
	select {
	case responseChan <- samplingResp:
	default:
		// Channel is full or closed, ignore
	}

	return true
}

// handleElicitationResponse checks if the message is a response to an elicitation request
// and routes it to the appropriate pending request channel.
func (s *StdioServer) handleElicitationResponse(rawMessage json.RawMessage) bool {
	return stdioSessionInstance.handleElicitationResponse(rawMessage)
}

// handleElicitationResponse handles incoming elicitation responses for this session
func (s *stdioSession) handleElicitationResponse(rawMessage json.RawMessage) bool {
	// Try to parse as a JSON-RPC response
	var response struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.Number     `json:"id"`
		Result  json.RawMessage `json:"result,omitempty"`
		Error   *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error,omitempty"`
	}

	if err := json.Unmarshal(rawMessage, &response); err != nil {
		return false
	}
	// Parse the ID as int64
	id, err := response.ID.Int64()
	if err != nil || (response.Result == nil && response.Error == nil) {
		return false
	}

	// Check if we have a pending elicitation request with this ID
	s.pendingMu.RLock()
	responseChan, exists := s.pendingElicitations[id]
	s.pendingMu.RUnlock()

	if !exists {
		return false
	}

	// Parse and send the response
	elicitationResp := &elicitationResponse{}

	if response.Error != nil {
		elicitationResp.err = fmt.Errorf("elicitation request failed: %s", response.Error.Message)
	} else {
		var result mcp.ElicitationResult
		if err := json.Unmarshal(response.Result, &result); err != nil {
			elicitationResp.err = fmt.Errorf("failed to unmarshal elicitation response: %w", err)
		} else {
			elicitationResp.result = &result
		}
	}

	// Send the response (non-blocking)
	select {
	case responseChan <- elicitationResp:
	default:
		// Channel is full or closed, ignore
	}

	return true
}

// handleListRootsResponse checks if the message is a response to an list roots request
// and routes it to the appropriate pending request channel.
func (s *StdioServer) handleListRootsResponse(rawMessage json.RawMessage) bool {
	return stdioSessionInstance.handleListRootsResponse(rawMessage)
}

// handleListRootsResponse handles incoming list root responses for this session
func (s *stdioSession) handleListRootsResponse(rawMessage json.RawMessage) bool {
	// Try to parse as a JSON-RPC response
	var response struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.Number     `json:"id"`
		Result  json.RawMessage `json:"result,omitempty"`
		Error   *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error,omitempty"`
	}

	if err := json.Unmarshal(rawMessage, &response); err != nil {
		return false
	}
	// Parse the ID as int64
	id, err := response.ID.Int64()
	if err != nil || (response.Result == nil && response.Error == nil) {
		return false
	}

	// Check if we have a pending list root request with this ID
	s.pendingMu.RLock()
	responseChan, exists := s.pendingRoots[id]
	s.pendingMu.RUnlock()

	if !exists {
		return false
	}

	// Parse and send the response
	rootsResp := &rootsResponse{}

	if response.Error != nil {
		rootsResp.err = fmt.Errorf("list root request failed: %s", response.Error.Message)
	} else {
		var result mcp.ListRootsResult
		if err := json.Unmarshal(response.Result, &result); err != nil {
			rootsResp.err = fmt.Errorf("failed to unmarshal list root response: %w", err)
		} else {
			rootsResp.result = &result
		}
	}

	// Send the response (non-blocking)
	select {
	case responseChan <- rootsResp:
	default:
		// Channel is full or closed, ignore
	}

	return true
}

// writeResponse marshals and writes a JSON-RPC response message followed by a newline.
// Returns an error if marshaling or writing fails.
func (s *StdioServer) writeResponse(
	response mcp.JSONRPCMessage,
	writer io.Writer,
) error {
	responseBytes, err := mcp.MarshalMessage(response) // toolgate patch
	if err != nil {
		return err
	}

	// Protect concurrent writes
	s.writeMu.Lock()
	defer s.writeMu.Unlock()

	// Write response followed by newline
	if _, err := fmt.Fprintf(writer, "%s\n", responseBytes); err != nil {
		return err
	}

	return nil
}

// ServeStdio is a convenience function that creates and starts a StdioServer with os.Stdin and os.Stdout.
// It sets up signal handling for graceful shutdown on SIGTERM and SIGINT.
// Returns an error if the server encounters any issues during operation.
func ServeStdio(server *MCPServer, opts ...StdioOption) error {
	s := NewStdioServer(server)

	for _, opt := range opts {
		opt(s)
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	// Set up signal handling
	sigChan := make(chan os.Signal, 1)
	signal.Notify(sigChan, syscall.SIGTERM, syscall.SIGINT)

	go func() {
		<-sigChan
		cancel()
	}()

	return s.Listen(ctx, os.Stdin, os.Stdout)
}
