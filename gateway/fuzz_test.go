package gateway_test

// Fuzz targets for hostile input at the gateway's edges: JSON-RPC frames on
// stdio and on streamable HTTP, and tool arguments against real schemas.
// The seeds below and in testdata/fuzz/<FuzzName>/ run with `go test`;
// longer runs:
//
//	go test -run='^$' -fuzz='^FuzzJSONRPCStdio$' -fuzztime=60s ./gateway
//	go test -run='^$' -fuzz='^FuzzJSONRPCHTTP$' -fuzztime=60s ./gateway
//	go test -run='^$' -fuzz='^FuzzToolArguments$' -fuzztime=60s ./gateway

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolgate/toolgate/gateway"
	"github.com/toolgate/toolgate/policy"
	"github.com/toolgate/toolgate/toolsets/diagnostics"
	"github.com/toolgate/toolgate/toolsets/filesystem"
)

// fuzzExitTimeout bounds how long a server may take to finish once its
// input has ended (or a request has been handled). Calls are bounded by the
// pipeline's CallTimeout below, so a server that takes longer is stuck.
const fuzzExitTimeout = 10 * time.Second

// countingRecorder counts records, to check that every call that started
// also finished.
type countingRecorder struct{ started, finished atomic.Int64 }

func (r *countingRecorder) CallStarted(*gateway.Call) error { r.started.Add(1); return nil }
func (r *countingRecorder) CallFinished(*gateway.Call, *gateway.Result, time.Duration) {
	r.finished.Add(1)
}

// fuzzGateway is an MCP server over the diagnostics toolset and a
// filesystem toolset on a small temporary sandbox, behind the default
// policy (so write_file is denied: a fuzzer cannot fill the disk).
type fuzzGateway struct {
	srv *gateway.MCPServer
	rec *countingRecorder
}

func newFuzzGateway(tb testing.TB) *fuzzGateway {
	tb.Helper()
	// Not tb.TempDir: a write_file the 1 s call deadline ended (the
	// pipeline answered timeout; the write goes on, as a tool that does
	// not honour its context may) can still be renaming its file into the
	// root as the test ends, and TempDir's cleanup then fails the test
	// ("directory not empty"). The root is removed once such writes are
	// done, for at most 10 s.
	root, err := os.MkdirTemp("", "toolgate-fuzz-")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		for deadline := time.Now().Add(10 * time.Second); os.RemoveAll(root) != nil && time.Now().Before(deadline); {
			time.Sleep(50 * time.Millisecond)
		}
	})
	for name, content := range map[string]string{
		"a.txt":         "alpha\nbeta\ngamma\n",
		"dir/b.go":      "package b\n\nfunc B() int { return 42 }\n",
		"dir/sub/c.md":  "# C\n\nneedle here\n",
		"bin/blob.data": "\x00\x01\x02binary",
	} {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	sb, err := policy.NewSandbox([]string{root})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { sb.Close() })
	fsTools, err := filesystem.New(sb, nil)
	if err != nil {
		tb.Fatal(err)
	}
	diag, err := diagnostics.New()
	if err != nil {
		tb.Fatal(err)
	}
	cat := gateway.NewCatalog(nil)
	for _, ts := range []gateway.Toolset{diag, fsTools} {
		if err := cat.Add(context.Background(), ts); err != nil {
			tb.Fatal(err)
		}
	}
	pol, err := policy.New(policy.Config{}, &policy.Options{SandboxRoots: sb.Roots()})
	if err != nil {
		tb.Fatal(err)
	}
	rec := &countingRecorder{}
	p := gateway.NewPipeline(&gateway.Options{Tools: cat, Policy: pol, Recorder: rec, CallTimeout: time.Second})
	srv := gateway.NewMCPServer(&gateway.MCPOptions{Name: "toolgate", Version: "fuzz", Catalog: cat, Pipeline: p})
	return &fuzzGateway{srv: srv, rec: rec}
}

// syncBuffer is a bytes.Buffer safe for concurrent writers.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) Bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return bytes.Clone(b.buf.Bytes())
}

// Seed messages shared by the stdio and HTTP targets.
var (
	seedInitialize  = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"fuzz","version":"1"}}}`
	seedInitialized = `{"jsonrpc":"2.0","method":"notifications/initialized"}`
	seedMessages    = []string{
		seedInitialize,
		seedInitialized,
		`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}`,
		`{"jsonrpc":"2.0","id":"s","method":"tools/call","params":{"name":"echo","arguments":{"text":7}}}`,
		`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"grep_files","arguments":{"pattern":"needle","path":"."}}}`,
		`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"read_file","arguments":{"path":"../../etc/passwd"}}}`,
		`{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"list_files","arguments":{"path":"dir"}}}`,
		`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"write_file","arguments":{"path":"x","content":"y"}}}`,
		`{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"nope","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"echo","arguments":"not an object"}}`,
		`{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"echo","arguments":{"text":"p"},"_meta":{"progressToken":"t1"}}}`,
		`{"jsonrpc":"2.0","id":11,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":12,"method":"resources/read","params":{"uri":"toolgate://artifacts/20260101T000000Z-abcdef/x-output.txt"}}`,
		`{"jsonrpc":"2.0","id":13,"method":"resources/templates/list"}`,
		`{"jsonrpc":"2.0","id":14,"method":"prompts/list"}`,
		`{"jsonrpc":"2.0","id":15,"method":"logging/setLevel","params":{"level":"debug"}}`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3,"reason":"x"}}`,
		`{"jsonrpc":"2.0","id":16,"result":{}}`,
		`{"jsonrpc":"2.0","id":17,"method":"tools/call","params":{"name":"echo","arguments":{"text":"new"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"c","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}}}`,
		`[{"jsonrpc":"2.0","id":18,"method":"ping"},{"jsonrpc":"2.0","id":19,"method":"tools/list"}]`,
		`{"jsonrpc":"1.0","id":20,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":null,"method":"tools/call"}`,
		`{"jsonrpc":"2.0","id":{},"method":"tools/call","params":null}`,
		`{}`,
		`null`,
		`{"jsonrpc":"2.0","id":21,"method":"tools/call","params":{"name":"grep_files","arguments":{"pattern":"(","path":"."}}}`,
		`{"jsonrpc":"2.0","id":22,"method":"tools/call","params":{"name":"echo","arguments":{"text":"\u0000\ud800"}}}`,
	}
)

// FuzzJSONRPCStdio feeds arbitrary bytes, as lines, to the stdio
// transport: it must not panic, must return once its input ends, must write
// only whole JSON lines to stdout, and every call that started must have
// finished (and so been recorded) by then.
func FuzzJSONRPCStdio(f *testing.F) {
	for _, m := range seedMessages {
		f.Add([]byte(m + "\n"))
	}
	f.Add([]byte(seedInitialize + "\n" + seedInitialized + "\n" + strings.Join(seedMessages[2:12], "\n") + "\n"))
	f.Add([]byte("not json\n\n   \n{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}")) // last line without newline
	f.Add([]byte("\xff\xfe\x00\n{\"a\":[1,2,{\"b\":null}]}\n"))

	g := newFuzzGateway(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		out := &syncBuffer{}
		done := make(chan error, 1)
		go func() { done <- g.srv.ServeStdio(context.Background(), bytes.NewReader(data), out) }()
		select {
		case <-done:
		case <-time.After(fuzzExitTimeout):
			t.Fatalf("ServeStdio did not return within %v after its input ended", fuzzExitTimeout)
		}
		if s, e := g.rec.started.Load(), g.rec.finished.Load(); s != e {
			t.Fatalf("after the server returned: %d calls started, %d finished", s, e)
		}
		sc := bufio.NewScanner(bytes.NewReader(out.Bytes()))
		sc.Buffer(make([]byte, 0, 64<<10), 64<<20)
		for n := 1; sc.Scan(); n++ {
			if !json.Valid(sc.Bytes()) {
				t.Fatalf("stdout line %d is not JSON: %q", n, sc.Bytes())
			}
		}
		if err := sc.Err(); err != nil {
			t.Fatal(err)
		}
	})
}

// fuzzHTTP is an HTTP handler over a fuzz gateway with one initialized
// session. The handler (and its sessions) is rebuilt now and then, so that
// sessions the fuzzer opens do not pile up.
type fuzzHTTP struct {
	g       *fuzzGateway
	h       http.Handler
	close   func(context.Context) error
	session string
	uses    int
}

const fuzzHTTPRebuildEvery = 2000

func (f *fuzzHTTP) handler(tb testing.TB) (http.Handler, string) {
	if f.h != nil && f.uses < fuzzHTTPRebuildEvery {
		f.uses++
		return f.h, f.session
	}
	if f.close != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_ = f.close(ctx)
		cancel()
	}
	f.h, f.close = f.g.srv.HTTPHandler(gateway.HTTPOptions{})
	f.uses = 0
	rec := httptest.NewRecorder()
	f.h.ServeHTTP(rec, fuzzRequest(seedInitialize, "", ""))
	f.session = rec.Header().Get("Mcp-Session-Id")
	if rec.Code != http.StatusOK || f.session == "" {
		tb.Fatalf("initialize: %d %q, session %q", rec.Code, rec.Body.String(), f.session)
	}
	rec = httptest.NewRecorder()
	f.h.ServeHTTP(rec, fuzzRequest(seedInitialized, f.session, "2025-06-18"))
	return f.h, f.session
}

func fuzzRequest(body, session, version string) *http.Request {
	r := httptest.NewRequest(http.MethodPost, "http://127.0.0.1/mcp", strings.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Accept", "application/json, text/event-stream")
	if session != "" {
		r.Header.Set("Mcp-Session-Id", session)
	}
	if version != "" {
		r.Header.Set("Mcp-Protocol-Version", version)
	}
	return r
}

// validHeaderValue reports whether net/http would accept v as a received
// header value (no control bytes but tab); others never reach a handler.
func validHeaderValue(v string) bool {
	for i := 0; i < len(v); i++ {
		if c := v[i]; (c < ' ' && c != '\t') || c == 0x7f {
			return false
		}
	}
	return true
}

// FuzzJSONRPCHTTP posts arbitrary bodies with arbitrary Mcp-Session-Id and
// Mcp-Protocol-Version headers (or the ID of a live session) to the
// streamable HTTP endpoint: never a 5xx, never a panic, always a
// well-formed response (a JSON body, or server-sent events whose data are
// JSON, or an empty body).
func FuzzJSONRPCHTTP(f *testing.F) {
	for _, m := range seedMessages {
		f.Add([]byte(m), "", "", uint8(0))
		f.Add([]byte(m), "", "2025-06-18", uint8(2))
	}
	f.Add([]byte(seedMessages[3]), "not-a-session", "2025-06-18", uint8(1))
	f.Add([]byte(seedMessages[3]), "", "1999-01-01", uint8(2))
	f.Add([]byte(seedMessages[19]), "", "2026-07-28", uint8(0))
	f.Add([]byte(""), "", "", uint8(0))
	f.Add([]byte("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\",\"arguments\":{\"text\":\"\xff\"}}}"), "", "", uint8(2))

	fh := &fuzzHTTP{g: newFuzzGateway(f)}
	f.Fuzz(func(t *testing.T, body []byte, session, version string, mode uint8) {
		h, live := fh.handler(t)
		switch mode % 3 {
		case 0:
			session = ""
		case 2:
			session = live
		}
		if !validHeaderValue(session) || !validHeaderValue(version) {
			return
		}
		req := fuzzRequest(string(body), session, version)
		rec := httptest.NewRecorder()
		done := make(chan struct{})
		go func() {
			defer close(done)
			h.ServeHTTP(rec, req)
		}()
		select {
		case <-done:
		case <-time.After(fuzzExitTimeout):
			t.Fatalf("no response within %v", fuzzExitTimeout)
		}
		res := rec.Result()
		if res.StatusCode >= 500 || res.StatusCode < 200 {
			t.Fatalf("status %d for %q (session %q, version %q): %s", res.StatusCode, body, session, version, rec.Body.Bytes())
		}
		checkHTTPBody(t, res.StatusCode, res.Header.Get("Content-Type"), rec.Body.Bytes())
	})
}

// checkHTTPBody checks that a response body is well formed for its type.
func checkHTTPBody(t *testing.T, status int, contentType string, body []byte) {
	t.Helper()
	if len(bytes.TrimSpace(body)) == 0 {
		return
	}
	mt, _, _ := mime.ParseMediaType(contentType)
	switch mt {
	case "application/json":
		if !json.Valid(body) {
			t.Fatalf("status %d: JSON response is not valid JSON: %q", status, body)
		}
	case "text/event-stream":
		sc := bufio.NewScanner(bytes.NewReader(body))
		sc.Buffer(make([]byte, 0, 64<<10), 64<<20)
		for sc.Scan() {
			line := sc.Bytes()
			if data, ok := bytes.CutPrefix(line, []byte("data:")); ok && !json.Valid(bytes.TrimSpace(data)) {
				t.Fatalf("status %d: event data is not JSON: %q", status, line)
			}
		}
	case "text/plain":
		// net/http's own errors (http.Error) for requests refused before
		// JSON-RPC applies: only for 4xx.
		if status < 400 {
			t.Fatalf("status %d with a text/plain body %q", status, body)
		}
	default:
		t.Fatalf("status %d: unexpected content type %q, body %q", status, contentType, body)
	}
}

// fuzzTyped is the parameter struct of the typed tool: the kinds of fields
// real tools use.
type fuzzTyped struct {
	Pattern string   `json:"pattern" jsonschema:"minLength=1,maxLength=64"`
	Path    string   `json:"path,omitempty" jsonschema:"default=."`
	Limit   int      `json:"limit,omitempty" jsonschema:"minimum=1,maximum=1000"`
	Offset  int64    `json:"offset,omitempty" jsonschema:"minimum=0"`
	Ratio   float64  `json:"ratio,omitempty" jsonschema:"minimum=0,maximum=1"`
	Mode    string   `json:"mode,omitempty" jsonschema:"enum=fast,enum=full"`
	Strict  *bool    `json:"strict,omitempty"`
	Tags    []string `json:"tags,omitempty" jsonschema:"maxItems=8"`
	Where   *struct {
		Zip   string `json:"zip" jsonschema:"pattern=^[0-9]{5}$"`
		Lines []int  `json:"lines,omitempty"`
	} `json:"where,omitempty"`
	Labels map[string]string `json:"labels,omitempty"`
}

// fuzzSchema is a hand-written schema with anyOf, oneOf, pattern, enum,
// const, nested objects and arrays.
const fuzzSchema = `{
  "type": "object",
  "properties": {
    "query": {"anyOf": [
      {"type": "string", "pattern": "^[a-z][a-z0-9_]*$", "maxLength": 32},
      {"type": "array", "items": {"type": "string", "enum": ["a", "b", "c"]}, "minItems": 1, "uniqueItems": true}
    ]},
    "scope": {"enum": ["user", "project", null, 3]},
    "limit": {"type": "integer", "minimum": 1, "maximum": 50, "multipleOf": 5},
    "filter": {
      "type": "object",
      "properties": {
        "since": {"type": "string", "format": "date-time"},
        "tags": {"type": "array", "items": {"type": "string", "minLength": 1}, "maxItems": 4},
        "range": {"type": "object", "properties": {"lo": {"type": "number"}, "hi": {"type": "number", "exclusiveMaximum": 1e9}}, "required": ["lo"]}
      },
      "additionalProperties": false
    },
    "kind": {"oneOf": [{"const": "x"}, {"type": "integer"}]}
  },
  "required": ["query"],
  "additionalProperties": {"type": "boolean"}
}`

// FuzzToolArguments checks argument decoding and validation against real
// schemas with arbitrary argument bytes: DecodeArguments and Tool.Validate
// never panic, and arguments that pass the typed tool's schema always
// decode into its parameter struct.
func FuzzToolArguments(f *testing.F) {
	for _, s := range []string{
		`{"pattern":"x"}`,
		`{"pattern":"a.*b","path":"dir","limit":10,"offset":5,"ratio":0.5,"mode":"fast","strict":true,"tags":["a","b"],"where":{"zip":"12345","lines":[1,2]},"labels":{"k":"v"}}`,
		`{"pattern":"x","limit":1000}`,
		`{"pattern":"x","limit":0}`,
		`{"pattern":"x","mode":"slow"}`,
		`{"pattern":"x","where":{"zip":"1234"}}`,
		`{"pattern":"x","strict":null,"where":null,"tags":null}`,
		`{"pattern":"x","offset":9223372036854775807}`,
		`{"pattern":"x","ratio":1e-300}`,
		`{"query":"abc","scope":"user","limit":10,"filter":{"since":"2026-01-01T00:00:00Z","tags":["t"],"range":{"lo":1,"hi":2}},"kind":"x","extra":true}`,
		`{"query":["a","b"],"scope":null,"kind":7}`,
		`{"query":["a","a"]}`,
		`{"query":"ABC","limit":7}`,
		`{"query":"abc","filter":{"range":{}}}`,
		`{"query":"abc","extra":"no"}`,
		`{}`,
		`null`,
		``,
		`[]`,
		`"x"`,
		`{"pattern":"x"} trailing`,
		`{"pattern":"x","pattern":"y"}`,
		`{"pattern":"\ud800"}`,
		`{"pattern":"x","limit":1.5}`,
	} {
		f.Add([]byte(s))
	}

	typed := gateway.Must(gateway.NewTypedTool(gateway.ToolDef{Name: "typed", Description: "typed"},
		func(ctx context.Context, in fuzzTyped) (*gateway.Result, error) { return gateway.OkText("ok"), nil }))
	dynamic := gateway.Must(gateway.NewDynamicTool(gateway.ToolDef{Name: "dynamic", Description: "dynamic", InputSchema: json.RawMessage(fuzzSchema)},
		func(ctx context.Context, args map[string]any) (*gateway.Result, error) {
			return gateway.OkText("ok"), nil
		}))
	ctx := context.Background()

	f.Fuzz(func(t *testing.T, raw []byte) {
		args, err := gateway.DecodeArguments(raw)
		// Decoders are pooled and reused across inputs: each decoding
		// must equal one with a decoder of its own.
		ref, refErr := referenceDecode(raw)
		if (err == nil) != (refErr == nil) || err == nil && !reflect.DeepEqual(args, ref) {
			t.Fatalf("DecodeArguments(%q) = %v, %v; a fresh decoder gives %v, %v", raw, args, err, ref, refErr)
		}
		if err != nil {
			if args != nil {
				t.Fatalf("DecodeArguments returned both arguments and an error: %v", err)
			}
			return
		}
		if args == nil {
			t.Fatal("DecodeArguments returned nil arguments and no error")
		}
		_ = dynamic.Validate(args)
		if msg := typed.Validate(args); msg != "" {
			return
		}
		res, err := typed.Handler()(ctx, &gateway.Call{Name: "typed", Arguments: raw, Args: args})
		if err != nil {
			t.Fatalf("arguments %q pass the typed tool's schema but the handler failed: %v", raw, err)
		}
		if res != nil && res.Kind == gateway.KindInvalid && knownDecodeGap(raw) {
			return // an integer outside the Go field's range: refused as invalid
		}
		if res == nil || res.IsError {
			t.Fatalf("typed handler: %+v", res)
		}
	})
}

// knownDecodeGap reports whether raw gives one of the struct's integer
// fields a number that JSON Schema counts as an integer but encoding/json
// will not decode into a Go integer: one written with a fraction or an
// exponent (1.0, 1e2), or one outside int64 (the typed schema has no bound
// for the Go type's range). Such arguments pass validation; the typed
// tool accepts the integral ones (1.0, 1e2) and refuses the
// out-of-range ones as invalid arguments. Every other decode failure fails
// the target.
func knownDecodeGap(raw []byte) bool {
	var v struct {
		Limit  json.Number `json:"limit"`
		Offset json.Number `json:"offset"`
		Where  *struct {
			Lines []json.Number `json:"lines"`
		} `json:"where"`
	}
	if json.Unmarshal(raw, &v) != nil {
		return false
	}
	nums := []json.Number{v.Limit, v.Offset}
	if v.Where != nil {
		nums = append(nums, v.Where.Lines...)
	}
	for _, n := range nums {
		if n == "" {
			continue
		}
		if strings.ContainsAny(string(n), ".eE") {
			return true
		}
		if _, err := strconv.ParseInt(string(n), 10, 64); err != nil {
			return true
		}
	}
	return false
}

// The fuzz gateway must answer the seeds sensibly: a guard against a
// target that passes because nothing reaches the tools.
func TestFuzzGatewaySeeds(t *testing.T) {
	g := newFuzzGateway(t)
	out := &syncBuffer{}
	// Input stays open until the answers are in: calls still running when
	// stdin ends are cancelled.
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- g.srv.ServeStdio(context.Background(), pr, out) }()
	_, _ = io.WriteString(pw, seedInitialize+"\n"+seedInitialized+"\n"+seedMessages[3]+"\n"+seedMessages[5]+"\n")
	wants := []string{`"id":3`, `"text":"hi"`, `"id":4`, `needle here`}
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		got, all := string(out.Bytes()), true
		for _, w := range wants {
			all = all && strings.Contains(got, w)
		}
		if all {
			break
		}
	}
	pw.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	got := string(out.Bytes())
	for _, want := range wants {
		if !strings.Contains(got, want) {
			t.Errorf("stdout lacks %s:\n%s", want, got)
		}
	}
	fh := &fuzzHTTP{g: g}
	h, session := fh.handler(t)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, fuzzRequest(seedMessages[3], session, "2025-06-18"))
	if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `"text":"hi"`) {
		t.Fatalf("HTTP tools/call: %d %s", rec.Code, rec.Body.String())
	}
}

// referenceDecode is DecodeArguments as its contract states it, with a
// decoder of its own for every input.
func referenceDecode(raw []byte) (map[string]any, error) {
	raw = bytes.Trim(raw, " \t\r\n")
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return map[string]any{}, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("trailing data")
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, errors.New("not an object")
	}
	if memberNames(raw) != keptMembers(v) {
		return nil, errors.New("a member name repeated") // what a repeat leaves out of the decoding
	}
	return obj, nil
}

// memberNames counts the member names in raw, token by token. Numbers
// are read as json.Number: as float64, one out of its range (1e700) would
// end the count early.
func memberNames(raw []byte) int {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var objects []bool // per open value: an object?
	key := false       // the next string is a name
	n := 0
	for {
		tok, err := dec.Token()
		if err != nil {
			return n
		}
		switch tok {
		case json.Delim('{'):
			objects = append(objects, true)
			key = true
			continue
		case json.Delim('['):
			objects = append(objects, false)
		case json.Delim('}'), json.Delim(']'):
			objects = objects[:len(objects)-1]
		default:
			if _, ok := tok.(string); ok && key {
				n++
				key = false
				continue
			}
		}
		key = len(objects) > 0 && objects[len(objects)-1]
	}
}

// keptMembers counts the members of every object in a decoded value.
func keptMembers(v any) int {
	n := 0
	switch v := v.(type) {
	case map[string]any:
		n += len(v)
		for _, e := range v {
			n += keptMembers(e)
		}
	case []any:
		for _, e := range v {
			n += keptMembers(e)
		}
	}
	return n
}
