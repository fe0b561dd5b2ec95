package upstream

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/toolgate/toolgate/gateway"
	"go.opentelemetry.io/otel/trace"
)

// What an upstream sends is bounded per message (upstreams[].max_result_bytes):
// a 200 MB tool result once took the gateway to 1.23 GB, as mcp-go reads
// each message whole and decodes it more than once. Over stdio, the
// gateway reads the child's stdout through [lineLimiter]: a line (one
// JSON-RPC message) longer than the limit is skipped as it streams in, and
// in its place the transport sees an error response to the same request,
// so the call fails at once with a clear error and the connection goes on.
// Over HTTP, the client's transport reads response bodies through
// [limitedBody]: per body for JSON, per event for an event stream. A legacy
// SSE upstream's event stream carries every answer of the connection, so
// there an oversized event is skipped as it streams in and replaced by an
// error response to the same request, as over stdio, instead of ending
// the stream (and with it every call in flight).

// resultTooLarge is the message of the error that replaces an oversized
// message.
func resultTooLarge(upstream string, size, max int64) string {
	return fmt.Sprintf("upstream %q sent a message of more than %d bytes (at least %d), over its limit: upstreams[].max_result_bytes raises it", upstream, max, size)
}

// tooLargeResponse is the JSON-RPC error response that takes the place of
// an oversized message answering the request id.
func tooLargeResponse(id, upstream string, size, max int64) []byte {
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": json.RawMessage(id),
		"error": map[string]any{"code": -32001, "message": resultTooLarge(upstream, size, max)}})
	return b
}

// lineLimiter passes the lines of r through, each at most max bytes
// (newline included); an oversized line is replaced by a JSON-RPC error
// response with the line's id (found by scanning the line as it is
// skipped), or dropped when it has none. Memory stays within max.
type lineLimiter struct {
	r        *bufio.Reader
	max      int64
	upstream string
	onRefuse func(size int64, id string)
	watch    *stdoutWatch // nil passes every line
	out      []byte
	line     []byte
}

func newLineLimiter(r io.Reader, max int64, upstream string, onRefuse func(size int64, id string)) *lineLimiter {
	return &lineLimiter{r: bufio.NewReaderSize(r, 64<<10), max: max, upstream: upstream, onRefuse: onRefuse}
}

var utf8BOM = []byte("\uFEFF")

// lineKeep bounds the line buffer a lineLimiter keeps between messages.
// A larger message gets a buffer of its own, let go once it has been
// passed on: one large result (up to max_result_bytes, 16 MiB by default)
// does not keep its size in memory for the life of the connection.
const lineKeep = 64 << 10

func (l *lineLimiter) Read(p []byte) (int, error) {
	for len(l.out) == 0 {
		if err := l.next(); err != nil {
			l.watch.end()
			return 0, err
		}
	}
	n := copy(p, l.out)
	l.out = l.out[n:]
	if len(l.out) == 0 && cap(l.line) > lineKeep {
		l.line = nil
	}
	return n, nil
}

var _ transport.LineReader = (*lineLimiter)(nil)

// ReadLine implements mcp-go's transport.LineReader (third_party item
// 73): the next line, in a slice of its own. The transport reads lines
// this way: a line is copied once more here at most, where a
// bufio.Reader on top of Read copied it three times. A line in a buffer
// too large to keep is handed over as it is.
func (l *lineLimiter) ReadLine() ([]byte, error) {
	for len(l.out) == 0 {
		if err := l.next(); err != nil {
			l.watch.end()
			return nil, err
		}
	}
	line := l.out
	l.out = nil
	switch {
	case cap(l.line) > lineKeep:
		l.line = nil
	case len(l.line) > 0 && &line[0] == &l.line[0]: // the kept buffer
		line = bytes.Clone(line)
	}
	return line, nil
}

// next reads the next line into l.out, which stays empty when the line
// is not passed on (watch).
func (l *lineLimiter) next() error {
	l.line = l.line[:0]
	for {
		chunk, err := l.r.ReadSlice('\n')
		if int64(len(l.line)+len(chunk)) > l.max {
			return l.skip(chunk, err)
		}
		l.line = append(l.line, chunk...)
		switch err {
		case nil:
			l.pass()
			return nil
		case bufio.ErrBufferFull:
			continue
		default:
			if len(l.line) > 0 && err == io.EOF {
				l.pass() // a last line without a newline
				return nil
			}
			return err
		}
	}
}

// pass passes the line read on, unless it is a stray line (stdout.go).
// A byte order mark before a message (some Windows runtimes write one
// first) is dropped: the message passes, where the decoder refused it.
func (l *lineLimiter) pass() {
	l.line = bytes.TrimPrefix(l.line, utf8BOM)
	switch {
	case l.watch == nil || l.watch.keep(l.line):
		l.out = l.line
	case cap(l.line) > lineKeep:
		l.line = nil
	}
}

// skip discards the rest of an oversized line, scanning it for its id.
func (l *lineLimiter) skip(chunk []byte, err error) error {
	var sc idScanner
	sc.feed(l.line)
	sc.feed(chunk)
	size := int64(len(l.line) + len(chunk))
	l.line = l.line[:0]
	for err == bufio.ErrBufferFull {
		chunk, err = l.r.ReadSlice('\n')
		sc.feed(chunk)
		size += int64(len(chunk))
	}
	if err != nil && err != io.EOF {
		return err
	}
	id := sc.id()
	if l.onRefuse != nil {
		l.onRefuse(size, id)
	}
	if id != "" {
		l.out = append(tooLargeResponse(id, l.upstream, size, l.max), '\n')
	}
	if err == io.EOF {
		if len(l.out) > 0 {
			return nil
		}
		return io.EOF
	}
	return nil
}

// idScanner finds the value of the top-level "id" member of a JSON object
// fed to it in pieces, keeping nothing else: the id may come after a
// result of any size.
type idScanner struct {
	depth         int
	inStr, esc    bool
	keyNext       bool // at depth 1, the next string is a member name
	inKey         bool
	afterKey      bool
	key           []byte
	capturing     bool
	value         []byte
	found, broken bool
}

func (s *idScanner) feed(b []byte) {
	for _, c := range b {
		if s.found || s.broken {
			return
		}
		if s.capturing && s.captureByte(c) {
			continue
		}
		if s.inStr {
			switch {
			case s.esc:
				s.esc = false
			case c == '\\':
				s.esc = true
			case c == '"':
				s.inStr = false
				if s.inKey {
					s.inKey, s.afterKey = false, true
				}
				continue
			}
			if s.inKey && len(s.key) < 8 {
				s.key = append(s.key, c)
			}
			continue
		}
		switch c {
		case '"':
			s.inStr = true
			if s.depth == 1 && s.keyNext {
				s.inKey, s.keyNext, s.key = true, false, s.key[:0]
			}
		case '{', '[':
			s.depth++
			if s.depth == 1 && c == '{' {
				s.keyNext = true
			}
		case '}', ']':
			s.depth--
		case ',':
			if s.depth == 1 {
				s.keyNext = true
			}
		case ':':
			if s.depth == 1 && s.afterKey {
				s.afterKey = false
				if string(s.key) == "id" {
					s.capturing, s.value = true, s.value[:0]
				}
			}
		}
	}
}

// captureByte takes one byte of the id's value. It returns false when
// the byte ends a bare value and must be scanned as structure too.
func (s *idScanner) captureByte(c byte) bool {
	if len(s.value) == 0 && (c == ' ' || c == '\t' || c == '\r' || c == '\n') {
		return true
	}
	if len(s.value) > 0 && s.value[0] == '"' {
		s.value = append(s.value, c)
		switch {
		case s.esc:
			s.esc = false
		case c == '\\':
			s.esc = true
		case c == '"':
			s.capturing, s.found = false, true
		}
	} else if c == ',' || c == '}' || c == ' ' || c == '\t' || c == '\r' || c == '\n' {
		s.capturing, s.found = false, len(s.value) > 0
		return false
	} else {
		s.value = append(s.value, c)
	}
	if len(s.value) > 256 {
		s.capturing, s.broken = false, true
	}
	return true
}

// id is the id's JSON text, or "" when the object had none (or a value
// that is not a number or a string).
func (s *idScanner) id() string {
	if !s.found || !json.Valid(s.value) || len(s.value) == 0 || (s.value[0] != '"' && s.value[0] != '-' && (s.value[0] < '0' || s.value[0] > '9')) {
		return ""
	}
	return string(s.value)
}

// limitTransport bounds the bodies of the upstream's HTTP responses.
type limitTransport struct {
	base     http.RoundTripper
	max      int64
	upstream string
	sse      bool // a legacy SSE connection: its GET stream's oversized events are replaced
}

func (t limitTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if trace.SpanContextFromContext(req.Context()).IsValid() {
		req = req.Clone(req.Context()) // a RoundTripper must not change the caller's request
		gateway.InjectTraceHeaders(req.Context(), req.Header)
	}
	resp, err := t.base.RoundTrip(req)
	if err != nil || resp.Body == nil {
		return resp, err
	}
	stream := strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream")
	resp.Body = &limitedBody{rc: resp.Body, max: t.max, stream: stream, upstream: t.upstream,
		replace: stream && t.sse && req.Method == http.MethodGet}
	return resp, nil
}

// CloseIdleConnections lets http.Client.CloseIdleConnections reach the
// pool.
func (t limitTransport) CloseIdleConnections() {
	if ci, ok := t.base.(interface{ CloseIdleConnections() }); ok {
		ci.CloseIdleConnections()
	}
}

// limitedBody fails a read once more than max bytes came in one message:
// the whole body for JSON, one event (up to a blank line) for an event
// stream.
type limitedBody struct {
	rc       io.ReadCloser
	max      int64
	stream   bool
	upstream string
	n        int64 // bytes of the current message
	lineLen  int   // bytes of the current line so far (stream)
	last     byte  // the last byte before the current position (stream)

	// replace: an oversized event is not an error but skipped, and an
	// error response to its request put in its place (readReplacing).
	replace  bool
	buf, out []byte
	pend     []byte // out's backing array
	err      error  // the underlying body's, once it came
	skipping bool   // within an oversized event
	open     bool   // the reader got part of a line and not its end
	size     int64  // bytes of the oversized event
	sc       idScanner
}

func (b *limitedBody) Read(p []byte) (int, error) {
	if b.replace {
		return b.readReplacing(p)
	}
	n, err := b.rc.Read(p)
	if !b.stream {
		b.n += int64(n)
	} else {
		for chunk := p[:n]; len(chunk) > 0 && b.n <= b.max; {
			i := bytes.IndexByte(chunk, '\n')
			if i < 0 {
				b.n += int64(len(chunk))
				b.lineLen += len(chunk)
				b.last = chunk[len(chunk)-1]
				break
			}
			if i > 0 {
				b.last = chunk[i-1]
			}
			b.lineLen += i
			if b.lineLen == 0 || b.lineLen == 1 && b.last == '\r' {
				b.n = 0 // a blank line ends the event
			} else {
				b.n += int64(i + 1)
			}
			b.lineLen, b.last = 0, '\n'
			chunk = chunk[i+1:]
		}
	}
	if b.n > b.max {
		return n, fmt.Errorf("%s", resultTooLarge(b.upstream, b.n, b.max))
	}
	return n, err
}

func (b *limitedBody) Close() error { return b.rc.Close() }

// readReplacing reads an event stream whose events are passed on as they
// come while they are within the limit. An event that grows past it is
// ended for the reader with an event type no reader handles (so what it
// already got of the event is dropped), the rest of the event is skipped
// without being held, scanning it for the request's id, and in its place
// comes an error response to that request (nothing when it had no id).
func (b *limitedBody) readReplacing(p []byte) (int, error) {
	for len(b.out) == 0 {
		if b.err != nil {
			return 0, b.err
		}
		if b.buf == nil {
			b.buf = make([]byte, 32<<10)
		}
		n, err := b.rc.Read(b.buf)
		b.pend = b.process(b.pend[:0], b.buf[:n])
		if err != nil {
			if b.skipping && err == io.EOF {
				b.pend = b.endSkip(b.pend)
			}
			b.err = err
		}
		b.out = b.pend
	}
	n := copy(p, b.out)
	b.out = b.out[n:]
	return n, nil
}

// process appends to dst what the reader gets of chunk.
func (b *limitedBody) process(dst, chunk []byte) []byte {
	for len(chunk) > 0 {
		seg := chunk
		i := bytes.IndexByte(chunk, '\n')
		if i >= 0 {
			seg = chunk[:i+1]
		}
		chunk = chunk[len(seg):]
		blank := false
		if i >= 0 {
			last := b.last
			if i > 0 {
				last = seg[i-1]
			}
			ll := b.lineLen + i
			blank = ll == 0 || ll == 1 && last == '\r'
			b.lineLen, b.last = 0, '\n'
		} else {
			b.lineLen += len(seg)
			b.last = seg[len(seg)-1]
		}
		switch {
		case b.skipping:
			b.sc.feed(seg)
			b.size += int64(len(seg))
			if blank {
				dst = b.endSkip(dst)
			}
		case blank:
			dst = append(dst, seg...)
			b.n, b.sc, b.open = 0, idScanner{}, false
		case b.n+int64(len(seg)) > b.max:
			// What the reader got of this line ends here; the event is
			// dispatched as a type no reader handles.
			if b.open {
				dst = append(dst, '\n')
				b.open = false
			}
			dst = append(dst, "event: toolgate-oversized\n\n"...)
			b.skipping, b.size = true, b.n+int64(len(seg))
			b.sc.feed(seg)
			if blank {
				dst = b.endSkip(dst)
			}
		default:
			b.n += int64(len(seg))
			b.sc.feed(seg)
			dst = append(dst, seg...)
			b.open = i < 0
		}
	}
	return dst
}

// endSkip ends an oversized event: in its place, an error response to its
// request.
func (b *limitedBody) endSkip(dst []byte) []byte {
	if id := b.sc.id(); id != "" {
		dst = append(dst, "event: message\ndata: "...)
		dst = append(dst, tooLargeResponse(id, b.upstream, b.size, b.max)...)
		dst = append(dst, "\n\n"...)
	}
	b.skipping, b.size, b.n, b.sc = false, 0, 0, idScanner{}
	return dst
}
