package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/server"
	"github.com/toolgate/toolgate/gateway"
)

// TestStdioUpstream covers listing and calling a stdio upstream (this test
// binary re-executed as an mcp-go server) through a gateway pipeline.
func TestStdioUpstream(t *testing.T) {
	log, logs := newLogger()
	t.Setenv("TG_TEST_SECRET", "s3cr3t-env-value")
	t.Setenv("TG_TEST_NOT_PASSED", "gateway-only")
	cfg := stdioConfig(t, "up")
	cfg.Env["API_KEY"] = "${TG_TEST_SECRET}"
	cfg.Dir = t.TempDir()
	cfg.Capabilities = []string{"test.cap"}
	u := start(t, cfg, log, true)
	g := newGW(t, u)
	ctx := context.Background()

	if st := u.Status(); st.State != StateReady {
		t.Fatalf("status %+v", st)
	}

	t.Run("listing", func(t *testing.T) {
		names := toolNames(u)
		for _, want := range []string{"up__echo", "up__rich", "up__progress", "up__weird_name"} {
			if !slices.Contains(names, want) {
				t.Errorf("%s missing from %v", want, names)
			}
		}
		// Pagination: the server pages by 3; every tool arrived (25
		// listed, bad_schema left out).
		if len(names) != 24 {
			t.Errorf("got %d tools: %v", len(names), names)
		}
		for _, n := range names {
			if !gateway.ValidToolName(n) {
				t.Errorf("invalid name %q", n)
			}
		}
		long := mapName("up", longToolName)
		if len(long) != 64 || !slices.Contains(names, long) {
			t.Errorf("long name %q not in %v", long, names)
		}
		var dotted string
		for _, n := range names {
			if strings.HasPrefix(n, "up__weird_name_") {
				dotted = n
			}
		}
		if dotted == "" {
			t.Fatalf("weird.name not renamed: %v", names)
		}
		if got := mustOK(t, g.call(ctx, dotted, `{}`)); got != "dotted" {
			t.Errorf("%s called %q", dotted, got)
		}
		if got := mustOK(t, g.call(ctx, "up__weird_name", `{}`)); got != "underscored" {
			t.Errorf("up__weird_name called %q", got)
		}
		if st := u.Status(); !strings.Contains(st.Detail, "name collision on up__weird_name") {
			t.Errorf("collision not reported: %s", st.Detail)
		}
	})

	t.Run("schema and metadata pass through", func(t *testing.T) {
		echo := findTool(u, "up__echo")
		if echo == nil {
			t.Fatal("no echo")
		}
		if string(echo.InputSchema) != echoSchema {
			t.Errorf("input schema changed:\n got %s\nwant %s", echo.InputSchema, echoSchema)
		}
		if echo.Title != "Echo" || echo.Description != "Echoes its raw arguments" {
			t.Errorf("title %q description %q", echo.Title, echo.Description)
		}
		h := echo.Permissions.Resolved()
		if !h.ReadOnly || h.Destructive || !h.Idempotent || h.OpenWorld {
			t.Errorf("hints %+v", h)
		}
		if !slices.Equal(echo.Permissions.Capabilities, []string{"test.cap"}) {
			t.Errorf("capabilities %v", echo.Permissions.Capabilities)
		}
		if string(echo.Meta["vendor/x"]) != `{"a":1}` {
			t.Errorf("meta %s", echo.Meta["vendor/x"])
		}
		rich := findTool(u, "up__rich")
		if string(rich.OutputSchema) != richOutputSchema {
			t.Errorf("output schema %s", rich.OutputSchema)
		}
		// The annotations are advertised as the upstream sent them (title
		// included); the tool's own title stays its own.
		if rich.Title != "" || !strings.Contains(string(rich.Annotations), `"title":"Rich from annotations"`) {
			t.Errorf("title %q, annotations %s", rich.Title, rich.Annotations)
		}
		// No annotation hints: the MCP defaults, destructive and open-world.
		if h := rich.Permissions.Resolved(); !h.Destructive || !h.OpenWorld || h.ReadOnly {
			t.Errorf("rich hints %+v", h)
		}
		// The schema that does not compile is left out, with a reason.
		if findTool(u, "up__bad_schema") != nil {
			t.Error("bad_schema offered")
		}
		if why := u.Unoffered()["up__bad_schema"]; !strings.Contains(why, "schema rejected") {
			t.Errorf("unoffered reason %q", why)
		}
		if st := u.Status(); !strings.Contains(st.Detail, "up__bad_schema (schema rejected") {
			t.Errorf("status detail %q", st.Detail)
		}
		if res := g.call(ctx, "up__bad_schema", `{}`); res.Kind != gateway.KindNotFound || !strings.Contains(res.Message, "schema rejected") {
			t.Errorf("calling bad_schema: %s %s", res.Kind, res.Message)
		}
	})

	t.Run("arguments pass unchanged", func(t *testing.T) {
		args := `{"n":12345678901234567890123,"text":"x"}`
		if got := mustOK(t, g.call(ctx, "up__echo", args)); got != args {
			t.Errorf("upstream got %s, want %s", got, args)
		}
		// The gateway validates against the upstream's own schema,
		// top-level anyOf included.
		if res := g.call(ctx, "up__echo", `{}`); res.Kind != gateway.KindInvalid {
			t.Errorf("invalid args: %s %s", res.Kind, res.Message)
		}
	})

	t.Run("results pass unchanged", func(t *testing.T) {
		res := g.call(ctx, "up__rich", `{}`)
		mustOK(t, res)
		types := []string{}
		for _, p := range res.Output {
			types = append(types, p.PartType())
		}
		if !slices.Equal(types, []string{"text", "image", "audio", "resource_link", "resource"}) {
			t.Fatalf("content types %v", types)
		}
		if img, _ := gateway.Typed(res.Output[1]).(gateway.ImagePart); !bytes.Equal(img.Data, tinyPNG) || img.MIMEType != "image/png" {
			t.Errorf("image %+v", img)
		}
		if string(res.Structured) != `{"temp":21.5,"city":"Oslo"}` {
			t.Errorf("structured %s", res.Structured)
		}
		if string(res.Meta["vendor/trace"]) != `"abc"` {
			t.Errorf("meta %v", res.Meta)
		}
		if _, ok := res.Meta[serverInfoMeta]; ok {
			t.Error("upstream serverInfo _meta passed on")
		}
	})

	t.Run("errors", func(t *testing.T) {
		res := g.call(ctx, "up__fail_rpc", `{}`)
		if !res.IsError || res.Kind != gateway.KindToolError || !strings.Contains(res.Message, "boom from upstream") || !strings.Contains(res.Message, "-32603") {
			t.Errorf("JSON-RPC error: %s %q", res.Kind, res.Message)
		}
		res = g.call(ctx, "up__tool_error", `{}`)
		if !res.IsError || res.Kind != gateway.KindToolError || !strings.Contains(res.OutputText(), "bad input, says upstream") {
			t.Errorf("isError: %s %q %q", res.Kind, res.Message, res.OutputText())
		}
	})

	t.Run("environment and directory", func(t *testing.T) {
		out := mustOK(t, g.call(ctx, "up__env", `{}`))
		var keys []string
		for _, line := range strings.Split(out, "\n") {
			k, _, _ := strings.Cut(line, "=")
			keys = append(keys, k)
		}
		for _, k := range keys {
			switch k {
			case "PATH", "HOME", "LANG", "TMPDIR", "API_KEY", envServerMode, "PWD":
			default:
				t.Errorf("child got %s; only PATH, HOME, LANG, TMPDIR and the configured env are passed", k)
			}
		}
		if !strings.Contains(out, "API_KEY=s3cr3t-env-value") {
			t.Error("API_KEY not expanded from ${TG_TEST_SECRET}")
		}
		if !strings.Contains(out, "PWD="+cfg.Dir) {
			t.Errorf("working directory: %s", out)
		}
	})

	t.Run("logs", func(t *testing.T) {
		mustOK(t, g.call(ctx, "up__log", `{}`))
		eventually(t, 10*time.Second, "upstream log message", func() bool {
			return strings.Contains(logs.String(), `level=WARN msg="hello from upstream" upstream=up mcp_level=warning logger=testlogger`)
		})
		if !strings.Contains(logs.String(), `msg="test upstream starting (mode stdio)" upstream=up stream=stderr`) {
			t.Errorf("stderr not logged:\n%s", logs.String())
		}
		if strings.Contains(logs.String(), "s3cr3t-env-value") {
			t.Error("an env value was logged")
		}
	})

	t.Run("prompts", func(t *testing.T) {
		ps, _ := u.Prompts(ctx)
		if len(ps) != 1 || ps[0].Name != "up__greet" || len(ps[0].Arguments) != 1 || !ps[0].Arguments[0].Required {
			t.Fatalf("prompts %+v", ps)
		}
		res, err := ps[0].Get(ctx, map[string]string{"name": "Ada"})
		if err != nil {
			t.Fatal(err)
		}
		if res.Description != "a greeting" || len(res.Messages) != 2 {
			t.Fatalf("prompt result %+v", res)
		}
		if tp, ok := res.Messages[0].Content.(gateway.TextPart); !ok || tp.Text != "Hello Ada" || res.Messages[0].Role != "user" {
			t.Errorf("message 0 %+v", res.Messages[0])
		}
		if ip, ok := res.Messages[1].Content.(gateway.ImagePart); !ok || !bytes.Equal(ip.Data, tinyPNG) {
			t.Errorf("message 1 %+v", res.Messages[1])
		}
	})

	t.Run("resources", func(t *testing.T) {
		rs, ts, _ := u.Resources(ctx)
		if len(rs) != 1 || rs[0].URI != "test://static" || len(ts) != 1 || ts[0].URITemplate != "test://item/{id}" {
			t.Fatalf("resources %+v templates %+v", rs, ts)
		}
		c, err := rs[0].Read(ctx)
		if err != nil || len(c) != 1 || c[0].Text == nil || *c[0].Text != "static text" {
			t.Fatalf("read: %+v %v", c, err)
		}
		c, err = ts[0].Read(ctx, "test://item/42")
		if err != nil || len(c) != 1 || string(c[0].Blob) != "item 42" || c[0].URI != "test://item/42" {
			t.Fatalf("template read: %+v %v", c, err)
		}
	})
}

// TestProgressAndCancellation: progress is asked for only when the caller
// listens and is forwarded in order; a cancelled call is cancelled
// upstream too; a hanging upstream gives a timeout result.
func TestProgressAndCancellation(t *testing.T) {
	st := &serverState{}
	url, _ := httpUpstream(t, st)
	ups := map[string]*Upstream{
		"stdio": start(t, stdioConfig(t, "s"), nil, true),
		"http":  start(t, Config{Name: "h", URL: url}, nil, true),
	}
	slow := start(t, Config{Name: "ht", URL: url, CallTimeout: 500 * time.Millisecond}, nil, true)
	slowStdio := stdioConfig(t, "st")
	slowStdio.CallTimeout = 500 * time.Millisecond
	slowChild := start(t, slowStdio, nil, true)
	g := newGW(t, ups["stdio"], ups["http"], slow, slowChild)
	for kind, u := range ups {
		t.Run(kind, func(t *testing.T) {
			p := u.Prefix() + "__"
			if out := mustOK(t, g.call(context.Background(), p+"progress", `{}`)); out != "token=absent" {
				t.Errorf("no listener, but the upstream got a progress token: %s", out)
			}
			sink := &progressSink{}
			ctx, stop := gateway.WithProgress(context.Background(), sink)
			out := mustOK(t, g.call(ctx, p+"progress", `{}`))
			stop()
			if !strings.HasPrefix(out, "token=tg-progress-") {
				t.Errorf("upstream token %q", out)
			}
			got := sink.all()
			if kind == "stdio" {
				if len(got) != 3 || got[0].Progress != 1 || got[2].Progress != 3 || got[2].Total != 3 || got[1].Message != "step 2" {
					t.Errorf("progress %+v", got)
				}
			} else {
				// mcp-go's HTTP server may send a session's notifications
				// out of order (over the POST and GET streams); reports
				// that do not advance are dropped, never renumbered.
				for i, p := range got {
					if p.Progress != float64(int(p.Progress)) || p.Progress < 1 || p.Progress > 3 || p.Total != 3 ||
						p.Message != "step "+strconv.Itoa(int(p.Progress)) || (i > 0 && p.Progress <= got[i-1].Progress) {
						t.Errorf("progress %+v", got)
					}
				}
				if len(got) == 0 || got[len(got)-1].Progress != 3 {
					t.Errorf("progress %+v", got)
				}
			}

			// Cancellation by the caller reaches the upstream handler.
			before := cancelledCount(t, g, p)
			ctx, cancel := context.WithCancel(context.Background())
			time.AfterFunc(200*time.Millisecond, cancel)
			res := g.call(ctx, p+"block", `{}`)
			if res.Kind != gateway.KindCancelled {
				t.Errorf("cancelled call: %s %s", res.Kind, res.Message)
			}
			eventually(t, 10*time.Second, "the upstream handler to be cancelled", func() bool {
				return cancelledCount(t, g, p) == before+1
			})
		})
	}
	// Over streamable HTTP and stdio every wait of a call honours its
	// context, so the call runs on the caller's goroutine and its
	// deadline holds through the context alone.
	for _, c := range []struct {
		kind, prefix string
		u            *Upstream
	}{{"http", "ht__", slow}, {"stdio", "st__", slowChild}} {
		t.Run("timeout "+c.kind, func(t *testing.T) {
			// The upstream's call_timeout is 500ms.
			tl := findTool(c.u, c.prefix+"block")
			if tl.Timeout != 500*time.Millisecond || !tl.HonoursContext {
				t.Fatalf("tool timeout %s, HonoursContext %v; want 500ms, true", tl.Timeout, tl.HonoursContext)
			}
			before := cancelledCount(t, g, c.prefix)
			start := time.Now()
			res := g.call(context.Background(), c.prefix+"block", `{}`)
			if res.Kind != gateway.KindTimeout || time.Since(start) > 5*time.Second {
				t.Errorf("hanging call: %s %s after %s", res.Kind, res.Message, time.Since(start))
			}
			eventually(t, 10*time.Second, "the upstream handler to be cancelled after the timeout", func() bool {
				return cancelledCount(t, g, c.prefix) == before+1
			})
		})
	}
}

func cancelledCount(t *testing.T, g *gw, prefix string) int {
	n, err := strconv.Atoi(mustOK(t, g.call(context.Background(), prefix+"cancelled_count", `{}`)))
	if err != nil {
		t.Fatal(err)
	}
	return n
}

type progressSink struct {
	mu  sync.Mutex
	got []gateway.Progress
}

func (s *progressSink) Report(p gateway.Progress) {
	s.mu.Lock()
	s.got = append(s.got, p)
	s.mu.Unlock()
}

func (s *progressSink) all() []gateway.Progress {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]gateway.Progress(nil), s.got...)
}

// TestListChanged: an upstream that adds a tool at run time sends
// tools/list_changed; the tools are listed again and the listeners told,
// over stdio, streamable HTTP and SSE.
func TestListChanged(t *testing.T) {
	st := &serverState{}
	url, _ := httpUpstream(t, st)
	sseURL := sseUpstream(t, &serverState{})
	slowDebounce := func(tu *tuning) { tu.debounce = 150 * time.Millisecond }
	ups := []*Upstream{
		startTuned(t, stdioConfig(t, "s"), nil, true, slowDebounce),
		startTuned(t, Config{Name: "h", URL: url}, nil, true, slowDebounce),
		startTuned(t, Config{Name: "e", Transport: "sse", URL: sseURL}, nil, true, slowDebounce),
		// 2026-07-28 only: its list changes come over subscriptions/listen.
		startTuned(t, stdio2026Config(t, "m"), nil, true, slowDebounce),
	}
	g := newGW(t, ups[0], ups[1], ups[2], ups[3])
	for _, u := range ups {
		t.Run(u.Name(), func(t *testing.T) {
			var mu sync.Mutex
			fired := 0
			u.OnToolsChanged(func() { mu.Lock(); fired++; mu.Unlock() })
			added := mustOK(t, g.call(context.Background(), u.Prefix()+"__add_tool", `{}`))
			want := u.Prefix() + "__" + added
			eventually(t, 10*time.Second, want+" to be listed", func() bool { return findTool(u, want) != nil })
			eventually(t, 10*time.Second, "the listeners to be told", func() bool { mu.Lock(); defer mu.Unlock(); return fired > 0 })
			// The catalog refreshed too: the new tool can be called.
			eventually(t, 10*time.Second, "the catalog to serve "+want, func() bool {
				_, _, ok := g.cat.Resolve(want)
				return ok
			})
			if out := mustOK(t, g.call(context.Background(), want, `{}`)); out != "I was added" {
				t.Errorf("new tool said %q", out)
			}

			// A burst of list_changed makes one re-listing.
			mu.Lock()
			fired = 0
			mu.Unlock()
			added = mustOK(t, g.call(context.Background(), u.Prefix()+"__add_tool", `{"n":5}`))
			last := u.Prefix() + "__" + added[strings.LastIndexByte(added, ',')+1:]
			eventually(t, 10*time.Second, last+" to be listed", func() bool { return findTool(u, last) != nil })
			time.Sleep(300 * time.Millisecond)
			mu.Lock()
			if fired < 1 || fired > 2 {
				t.Errorf("5 list_changed in a burst fired the listeners %d times", fired)
			}
			mu.Unlock()

			// prompts/list_changed likewise.
			before, _ := u.Prompts(context.Background())
			prompted := make(chan struct{}, 10)
			u.OnPromptsChanged(func() { prompted <- struct{}{} })
			mustOK(t, g.call(context.Background(), u.Prefix()+"__add_prompt", `{}`))
			select {
			case <-prompted:
			case <-time.After(5 * time.Second):
				t.Fatal("prompt listeners not told")
			}
			ps, _ := u.Prompts(context.Background())
			if len(ps) != len(before)+1 || ps[len(ps)-1].Name != u.Prefix()+"__late" {
				t.Errorf("prompts %+v", ps)
			}
		})
	}
}

// TestHTTPReconnect: an HTTP upstream that goes away is noticed (a failed
// call, a failed ping), reconnected when it is back (a new session on a
// server that forgot the old one), and listed again.
func TestHTTPReconnect(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	var handler atomic.Pointer[http.Handler]
	fresh := func() {
		var h http.Handler = server.NewStreamableHTTPServer(newTestMCPServer(&serverState{}), server.WithStateful(true))
		handler.Store(&h)
	}
	fresh()
	serve := func(l net.Listener) *httptest.Server {
		ts := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			(*handler.Load()).ServeHTTP(w, r)
		}))
		ts.Listener.Close()
		ts.Listener = l
		ts.Start()
		return ts
	}
	ts := serve(l)
	u := start(t, Config{Name: "h", URL: "http://" + addr + "/mcp"}, nil, true)
	g := newGW(t, u)
	mustOK(t, g.call(context.Background(), "h__echo", `{"n":1}`))

	ts.CloseClientConnections()
	ts.Close()
	res := g.call(context.Background(), "h__echo", `{"n":2}`)
	if res.Kind != gateway.KindUnavailable {
		t.Errorf("call to a server that is gone: %s %q", res.Kind, res.Message)
	}
	eventually(t, 10*time.Second, "the reconnecting state", func() bool { return u.Status().State == StateReconnecting })

	var l2 net.Listener
	eventually(t, 10*time.Second, "the port to be free again", func() bool {
		l2, err = net.Listen("tcp", addr)
		return err == nil
	})
	fresh() // a restarted server knows no sessions
	ts2 := serve(l2)
	defer func() { ts2.CloseClientConnections(); ts2.Close() }()
	eventually(t, 10*time.Second, "a reconnection", func() bool { return u.Status().State == StateReady })
	if got := mustOK(t, g.call(context.Background(), "h__echo", `{"n":3}`)); got != `{"n":3}` {
		t.Errorf("echo after reconnection: %s", got)
	}
	if u.Restarts() < 1 {
		t.Errorf("restarts %d", u.Restarts())
	}

	// The new server forgets the session on its own: a stateful server
	// answers 404, the session is over, and the upstream starts another.
	before := u.Restarts()
	fresh()
	eventually(t, 10*time.Second, "a new session", func() bool { return u.Restarts() > before && u.Status().State == StateReady })
	mustOK(t, g.call(context.Background(), "h__echo", `{"n":4}`))
}

// TestConcurrencyLimit: with max_concurrency 2 the third call waits until
// one of the first two ends, and a waiting call respects its context.
func TestConcurrencyLimit(t *testing.T) {
	st := &serverState{gate: make(chan struct{})}
	url, _ := httpUpstream(t, st)
	u := start(t, Config{Name: "h", URL: url, MaxConcurrency: 2}, nil, true)
	g := newGW(t, u)
	results := make(chan *gateway.Result, 3)
	for i := 0; i < 3; i++ {
		go func() { results <- g.call(context.Background(), "h__gate", `{}`) }()
	}
	eventually(t, 10*time.Second, "two calls at the gate", func() bool { return st.inGate.Load() == 2 })
	time.Sleep(200 * time.Millisecond)
	if n := st.inGate.Load(); n != 2 {
		t.Fatalf("%d calls in flight, limit 2", n)
	}
	// A fourth call waits too, and gives up when its context ends.
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
	res := g.call(ctx, "h__gate", `{}`)
	cancel()
	if res.Kind != gateway.KindCancelled && res.Kind != gateway.KindTimeout {
		t.Errorf("waiting call: %s %s", res.Kind, res.Message)
	}
	st.gate <- struct{}{} // one passes; the third enters
	eventually(t, 10*time.Second, "the third call to enter", func() bool { return st.inGate.Load() == 2 && len(results) == 1 })
	st.gate <- struct{}{}
	st.gate <- struct{}{}
	for i := 0; i < 3; i++ {
		select {
		case r := <-results:
			if mustOK(t, r) != "passed" {
				t.Error("gate")
			}
		case <-time.After(5 * time.Second):
			t.Fatal("calls did not finish")
		}
	}
	if m := st.maxInGate.Load(); m != 2 {
		t.Errorf("at most %d calls were in flight, want 2", m)
	}
}

// TestAllowDeny: globs filter both the listing and calls.
func TestAllowDeny(t *testing.T) {
	cfg := stdioConfig(t, "f")
	cfg.Allow = []string{"echo", "p*", "weird?name"}
	cfg.Deny = []string{"pid"}
	u := start(t, cfg, nil, true)
	got := toolNames(u)
	want := []string{"f__echo", "f__progress", "f__weird_name"}
	slices.Sort(got)
	// weird.name and weird_name both match weird?name; weird.name is renamed.
	if len(got) != 4 || !slices.Contains(got, want[0]) || !slices.Contains(got, want[1]) || !slices.Contains(got, want[2]) {
		t.Fatalf("tools %v", got)
	}
	g := newGW(t, u)
	for _, name := range []string{"f__pid", "f__rich"} {
		if res := g.call(context.Background(), name, `{}`); res.Kind != gateway.KindNotFound {
			t.Errorf("%s: %s %s", name, res.Kind, res.Message)
		}
	}
	// The handler itself refuses a filtered name too.
	res, _ := u.callTool(context.Background(), "pid", "", &gateway.Call{Name: "f__pid"})
	if res == nil || res.Kind != gateway.KindNotFound {
		t.Errorf("handler let a denied tool through: %+v", res)
	}
	if _, ok := u.Unoffered()["f__pid"]; ok {
		t.Error("filtered tools are not reported as unoffered")
	}
}

// TestTrustAnnotations: trust_annotations false treats every tool as
// destructive and open-world.
func TestTrustAnnotations(t *testing.T) {
	cfg := stdioConfig(t, "t")
	no := false
	cfg.TrustAnnotations = &no
	cfg.Allow = []string{"echo"}
	u := start(t, cfg, nil, true)
	h := findTool(u, "t__echo").Permissions.Resolved()
	if h.ReadOnly || !h.Destructive || !h.OpenWorld || h.Idempotent {
		t.Errorf("hints %+v", h)
	}
}

func TestDisabled(t *testing.T) {
	u, err := New(Config{Name: "off", Command: "/nonexistent", Disabled: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	u.Start(context.Background())
	if err := u.WaitReady(context.Background()); err != nil {
		t.Fatal(err)
	}
	if st := u.Status(); st.State != StateDisabled {
		t.Errorf("status %+v", st)
	}
	if tools, err := u.Tools(context.Background()); len(tools) != 0 || err != nil {
		t.Errorf("tools %v %v", tools, err)
	}
	u.Close()
}

var _ = json.Marshal
