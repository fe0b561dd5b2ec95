package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/toolgate/toolgate/gateway"
)

// fakeClient is a downstream client as the MCP mirror would put it in a
// call's context.
type fakeClient struct {
	session string
	cannot  bool // declared no capability

	mu       sync.Mutex
	logs     []string
	requests []string // method + " " + params
	notes    []string // notifications: method + " " + params
}

// Notify implements gateway.Notifier.
func (c *fakeClient) Notify(method string, params map[string]any) error {
	b, _ := json.Marshal(params)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.notes = append(c.notes, method+" "+string(b))
	return nil
}

func (c *fakeClient) notified() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.notes)
}

func (c *fakeClient) SessionID() string { return c.session }

func (c *fakeClient) Log(level, logger string, data any) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.logs = append(c.logs, fmt.Sprintf("%s %s %v", level, logger, data))
	return nil
}

func (c *fakeClient) CanRequest(string) bool { return !c.cannot }

func (c *fakeClient) Request(_ context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	c.mu.Lock()
	c.requests = append(c.requests, method+" "+string(params))
	c.mu.Unlock()
	switch method {
	case gateway.MethodSampling:
		return json.RawMessage(`{"role":"assistant","content":{"type":"text","text":"Paris, says ` + c.session + `"},"model":"fake-model"}`), nil
	default:
		return json.RawMessage(`{"action":"accept","content":{"name":"` + c.session + `"}}`), nil
	}
}

func (c *fakeClient) got() (logs, requests []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.logs), slices.Clone(c.requests)
}

// inFlight is how many caller requests are in flight on u's connection.
func inFlight(u *Upstream) int {
	c, _ := u.liveConn()
	if c == nil {
		return -1
	}
	c.callsMu.Lock()
	defer c.callsMu.Unlock()
	return len(c.calls)
}

// holdCall keeps a "gate" call of client cl in flight until the returned
// function is called.
func holdCall(t *testing.T, g *gw, u *Upstream, cl gateway.Client) func() {
	t.Helper()
	before := inFlight(u)
	ctx, cancel := context.WithCancel(gateway.WithClient(context.Background(), cl))
	done := make(chan struct{})
	go func() {
		defer close(done)
		g.call(ctx, u.Prefix()+"__gate", `{}`)
	}()
	eventually(t, 10*time.Second, "the held call to be in flight", func() bool { return inFlight(u) == before+1 })
	return func() {
		cancel()
		<-done
	}
}

// relayUpstreams are the test server over stdio and streamable HTTP.
func relayUpstreams(t *testing.T, mod func(*Config)) (map[string]*Upstream, *logBuf) {
	t.Helper()
	log, logs := newLogger()
	url, _ := httpUpstream(t, &serverState{})
	s, h := stdioConfig(t, "s"), Config{Name: "h", URL: url}
	for _, c := range []*Config{&s, &h} {
		c.RelaySampling, c.RelayElicitation = true, true
	}
	if mod != nil {
		mod(&s)
		mod(&h)
	}
	return map[string]*Upstream{"stdio": start(t, s, log, true), "http": start(t, h, log, true)}, logs
}

// TestRelayLogs: an upstream log message sent while one call is in flight
// goes to that call's client; while two are, only to toolgate's log.
func TestRelayLogs(t *testing.T) {
	ups, logs := relayUpstreams(t, nil)
	for kind, u := range ups {
		t.Run(kind, func(t *testing.T) {
			g := newGW(t, u)
			p := u.Prefix() + "__"
			a, b := &fakeClient{session: "A"}, &fakeClient{session: "B"}
			mustOK(t, g.call(gateway.WithClient(context.Background(), a), p+"log_wait", `{}`))
			eventually(t, 5*time.Second, "the log message at a", func() bool {
				l, _ := a.got()
				return len(l) == 1
			})
			if l, _ := a.got(); l[0] != "warning testlogger hello from upstream" {
				t.Errorf("a got %q", l)
			}

			// Another client's call in flight: ambiguous.
			release := holdCall(t, g, u, b)
			n := strings.Count(logs.String(), "hello from upstream")
			mustOK(t, g.call(gateway.WithClient(context.Background(), a), p+"log_wait", `{}`))
			eventually(t, 5*time.Second, "the log message in toolgate's log", func() bool {
				return strings.Count(logs.String(), "hello from upstream") == n+1
			})
			release()
			time.Sleep(100 * time.Millisecond)
			if l, _ := a.got(); len(l) != 1 {
				t.Errorf("a got %d log messages, want 1 (the second was ambiguous)", len(l))
			}
			if l, _ := b.got(); len(l) != 0 {
				t.Errorf("b got another client's log messages: %q", l)
			}
		})
	}
}

// TestRelaySampling: sampling and elicitation requests of the upstream
// reach the client of the call they belong to, with their params as sent;
// they are refused when they cannot be attributed to one call, when that
// call's client cannot answer, and when relaying is off.
func TestRelaySampling(t *testing.T) {
	ups, _ := relayUpstreams(t, nil)
	for kind, u := range ups {
		t.Run(kind, func(t *testing.T) {
			g := newGW(t, u)
			p := u.Prefix() + "__"
			a, b := &fakeClient{session: "A"}, &fakeClient{session: "B"}
			actx := gateway.WithClient(context.Background(), a)
			if out := mustOK(t, g.call(actx, p+"sample", `{}`)); out != "model=fake-model text=Paris, says A" {
				t.Errorf("sample: %q", out)
			}
			if out := mustOK(t, g.call(actx, p+"elicit", `{}`)); out != `action=accept content={"name":"A"}` {
				t.Errorf("elicit: %q", out)
			}
			_, reqs := a.got()
			if len(reqs) != 2 || !strings.HasPrefix(reqs[0], "sampling/createMessage ") || !strings.Contains(reqs[0], `"metadata":{"k":"v"}`) ||
				!strings.Contains(reqs[0], `"text":"capital of France?"`) ||
				!strings.Contains(reqs[1], `"properties":{"zeta":{"type":"string"},"name":{"type":"string","default":"x"}}`) {
				t.Errorf("a was asked %q", reqs)
			}

			// Over streamable HTTP, a message that comes after another
			// session's request ended is ambiguous for a moment.
			quiet := func() {
				if kind == "http" {
					time.Sleep(u.tune.lateWindow)
				}
			}
			// A client that did not declare the capability.
			quiet()
			no := gateway.WithClient(context.Background(), &fakeClient{session: "N", cannot: true})
			if out := mustOK(t, g.call(no, p+"sample", `{}`)); !strings.Contains(out, "sampling failed") || !strings.Contains(out, "did not declare") {
				t.Errorf("sample for a client without the capability: %q", out)
			}
			// No client at all (toolgate call, say).
			quiet()
			if out := mustOK(t, g.call(context.Background(), p+"sample", `{}`)); !strings.Contains(out, "sampling failed") {
				t.Errorf("sample without a client: %q", out)
			}

			// Another client's call in flight: a request that comes on
			// the one pipe (stdio) cannot be attributed.
			quiet()
			release := holdCall(t, g, u, b)
			if kind == "http" {
				// Over HTTP, sampling and elicitation come on the call's
				// own POST stream (the copy of mcp-go, items 65 and before
				// it v1.2.1 for elicitation), with the call's context:
				// they are attributed even with b's call in flight. (A
				// server that sends sampling on its GET stream, as v1.2.1
				// did, is attributed only to a sole call.)
				if out := mustOK(t, g.call(actx, p+"sample", `{}`)); out != "model=fake-model text=Paris, says A" {
					t.Errorf("sample on the call's stream: %q", out)
				}
				if out := mustOK(t, g.call(actx, p+"elicit", `{}`)); out != `action=accept content={"name":"A"}` {
					t.Errorf("elicit on the call's stream: %q", out)
				}
			} else {
				if out := mustOK(t, g.call(actx, p+"sample", `{}`)); !strings.Contains(out, "sampling failed") || !strings.Contains(out, "cannot be attributed") {
					t.Errorf("ambiguous sample: %q", out)
				}
				if out := mustOK(t, g.call(actx, p+"elicit", `{}`)); !strings.Contains(out, "cannot be attributed") {
					t.Errorf("ambiguous elicit: %q", out)
				}
			}
			release()
			if _, reqs := b.got(); len(reqs) != 0 {
				t.Errorf("b was asked another client's requests: %q", reqs)
			}
		})
	}
}

// urlClient is a 2025-11-25 client that declared URL-mode elicitation.
type urlClient struct{ fakeClient }

func (*urlClient) Modern() bool               { return false }
func (*urlClient) CanAskInRounds(string) bool { return false }
func (*urlClient) Capabilities() json.RawMessage {
	return json.RawMessage(`{"elicitation":{"url":{}}}`)
}

// TestURLElicitationRequired: an upstream's -32042 (the user must open a
// URL first) reaches a 2025-11-25 caller that declared URL-mode elicitation
// as that protocol error, its elicitations in the data, for its client to
// start the flow; any other caller gets a tool error that says it, URL
// included.
func TestURLElicitationRequired(t *testing.T) {
	ups, _ := relayUpstreams(t, nil)
	for kind, u := range ups {
		t.Run(kind, func(t *testing.T) {
			g := newGW(t, u)
			res := g.call(gateway.WithClient(context.Background(), &urlClient{fakeClient{session: "U"}}), u.Prefix()+"__needs_url", `{}`)
			var rerr *gateway.RequestError
			if res.Kind != gateway.KindRequestError || !errors.As(res.Refusal, &rerr) || rerr.Code != mcp.URL_ELICITATION_REQUIRED ||
				!strings.Contains(string(rerr.Data), `"url":"https://auth.example/start"`) || !strings.Contains(string(rerr.Data), `"elicitationId":"e-1"`) {
				t.Errorf("a client that takes URL elicitations got %s %q (%+v)", res.Kind, res.Message, res.Refusal)
			}
			res = g.call(gateway.WithClient(context.Background(), &fakeClient{session: "F"}), u.Prefix()+"__needs_url", `{}`)
			if !res.IsError || res.Kind == gateway.KindRequestError || !strings.Contains(res.Message, "-32042") || !strings.Contains(res.Message, "https://auth.example/start") {
				t.Errorf("a client without URL elicitation got %s %q", res.Kind, res.Message)
			}
		})
	}
}

// TestElicitationCompleteRelay: an upstream's
// notifications/elicitation/complete reaches the client that was asked the
// URL-mode elicitation it completes, and no other.
func TestElicitationCompleteRelay(t *testing.T) {
	ups, _ := relayUpstreams(t, nil)
	for kind, u := range ups {
		t.Run(kind, func(t *testing.T) {
			g := newGW(t, u)
			a, b := &urlClient{fakeClient{session: "A"}}, &urlClient{fakeClient{session: "B"}}
			mustOK(t, g.call(gateway.WithClient(context.Background(), b), u.Prefix()+"__echo", `{"n":1}`))
			if out := mustOK(t, g.call(gateway.WithClient(context.Background(), a), u.Prefix()+"__url_flow", `{}`)); out != "action=accept" {
				t.Fatalf("url_flow: %q", out)
			}
			if _, reqs := a.got(); len(reqs) != 1 || !strings.Contains(reqs[0], `"url":"https://auth.example/start"`) {
				t.Errorf("a was asked %q", reqs)
			}
			eventually(t, 10*time.Second, "the completion to reach a", func() bool {
				n := a.notified()
				return len(n) == 1 && n[0] == `notifications/elicitation/complete {"elicitationId":"e-9"}`
			})
			if n := b.notified(); len(n) != 0 {
				t.Errorf("b, another client of the upstream, was told %q", n)
			}
		})
	}
}

// TestRelayOff: with relay_sampling and relay_elicitation false (the
// default), the upstream is told of neither capability.
func TestRelayOff(t *testing.T) {
	ups, _ := relayUpstreams(t, func(c *Config) { c.RelaySampling, c.RelayElicitation = false, false })
	for kind, u := range ups {
		t.Run(kind, func(t *testing.T) {
			g := newGW(t, u)
			ctx := gateway.WithClient(context.Background(), &fakeClient{session: "A"})
			if out := mustOK(t, g.call(ctx, u.Prefix()+"__sample", `{}`)); out != "no sampling capability" {
				t.Errorf("sample: %q", out)
			}
			if out := mustOK(t, g.call(ctx, u.Prefix()+"__elicit", `{}`)); out != "no elicitation capability" {
				t.Errorf("elicit: %q", out)
			}
		})
	}
}

// TestResourceSubscriptionRelay: subscribe and unsubscribe reach the
// upstream; its updates of subscribed URIs reach the listeners; a new
// connection is subscribed again (and the listeners told the resource may
// have changed meanwhile).
func TestResourceSubscriptionRelay(t *testing.T) {
	u := start(t, stdioConfig(t, "s"), nil, true)
	g := newGW(t, u)
	ctx := context.Background()
	var mu sync.Mutex
	var updates []string
	u.OnResourceUpdated(func(uri string, params map[string]any) {
		mu.Lock()
		updates = append(updates, uri)
		mu.Unlock()
	})
	got := func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(updates)
	}
	subs := func() int {
		n, err := strconv.Atoi(mustOK(t, g.call(ctx, "s__subs", `{}`)))
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	if err := u.SubscribeResource(ctx, "test://static"); err != nil {
		t.Fatal(err)
	}
	if n := subs(); n != 1 {
		t.Errorf("upstream holds %d subscriptions, want 1", n)
	}
	mustOK(t, g.call(ctx, "s__touch", `{"uri":"test://other"}`))
	mustOK(t, g.call(ctx, "s__touch", `{"uri":"test://static"}`))
	eventually(t, 5*time.Second, "the update", func() bool { return len(got()) == 1 })
	if u := got(); u[0] != "test://static" {
		t.Errorf("updates %q (test://other is not subscribed)", u)
	}

	// The child dies; the new one is subscribed again.
	pid := childPID(t, g, "s__pid")
	killPID(t, pid)
	eventually(t, 20*time.Second, "a new child", func() bool {
		out := g.call(ctx, "s__pid", `{}`)
		return !out.IsError && out.OutputText() != strconv.Itoa(pid)
	})
	eventually(t, 5*time.Second, "the update after reconnecting", func() bool { return len(got()) == 2 })
	if n := subs(); n != 1 {
		t.Errorf("new upstream holds %d subscriptions, want 1", n)
	}
	mustOK(t, g.call(ctx, "s__touch", `{"uri":"test://static"}`))
	eventually(t, 5*time.Second, "an update from the new child", func() bool { return len(got()) == 3 })

	if err := u.UnsubscribeResource(ctx, "test://static"); err != nil {
		t.Fatal(err)
	}
	if n := subs(); n != 0 {
		t.Errorf("after unsubscribing the upstream holds %d subscriptions", n)
	}
	mustOK(t, g.call(ctx, "s__touch", `{"uri":"test://static"}`))
	time.Sleep(100 * time.Millisecond)
	if u := got(); len(u) != 3 {
		t.Errorf("updates after unsubscribing: %q", u)
	}
}

// TestCompletionRelay: completion/complete goes to the upstream under its
// own prompt name.
func TestCompletionRelay(t *testing.T) {
	u := start(t, stdioConfig(t, "s"), nil, true)
	ctx := context.Background()
	res, err := u.CompletePrompt(ctx, "s__greet", gateway.CompletionRequest{Argument: "name", Value: "al"})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"greet/name/alice", "greet/name/albert"}; !slices.Equal(res.Values, want) || res.Total != 2 {
		t.Errorf("completion %+v, want %q", res, want)
	}
	if _, err := u.CompletePrompt(ctx, "s__nope", gateway.CompletionRequest{Argument: "name"}); err == nil {
		t.Error("an unknown prompt completed")
	}
	// mcp-go's default resource completer answers with no values.
	res, err = u.CompleteResource(ctx, "test://item/{id}", gateway.CompletionRequest{Argument: "id", Value: "1"})
	if err != nil || len(res.Values) != 0 {
		t.Errorf("resource completion %+v %v", res, err)
	}
}

// TestSoleRequest: the attribution rule itself.
func TestSoleRequest(t *testing.T) {
	// In a bubble: the late window passes in fake time.
	synctest.Test(t, func(t *testing.T) {
		c := &conn{calls: map[*inflight]struct{}{}, lateWindow: 100 * time.Millisecond}
		a := gateway.WithClient(context.Background(), &fakeClient{session: "A"})
		b := gateway.WithClient(context.Background(), &fakeClient{session: "B"})
		if ctx, why := c.soleRequest(); ctx != nil || !strings.Contains(why, "0 requests") {
			t.Errorf("none in flight: %v %q", ctx, why)
		}
		endA := c.track(a)
		if ctx, _ := c.soleRequest(); ctx != a {
			t.Error("the only request was not chosen")
		}
		endB := c.track(b)
		if ctx, why := c.soleRequest(); ctx != nil || !strings.Contains(why, "2 requests") {
			t.Errorf("two in flight: %v %q", ctx, why)
		}
		endA()
		// A (another session) ended just now: a late message may be A's.
		if ctx, why := c.soleRequest(); ctx != nil || !strings.Contains(why, "another session") {
			t.Errorf("just after A ended: %v %q", ctx, why)
		}
		time.Sleep(c.lateWindow - time.Nanosecond) // fake time: exact
		if ctx, why := c.soleRequest(); ctx != nil || !strings.Contains(why, "another session") {
			t.Errorf("just before A's window passed: %v %q", ctx, why)
		}
		time.Sleep(time.Nanosecond)
		if ctx, _ := c.soleRequest(); ctx != b {
			t.Error("B not chosen once A's window passed")
		}
		endB()
		// The same session's requests do not make each other ambiguous.
		endB2 := c.track(b)
		if ctx, _ := c.soleRequest(); ctx != b {
			t.Error("B's own ended request made B's next one ambiguous")
		}
		endB2()
		// A ends, then B ends (later, more than once): B's next request is
		// still ambiguous for the rest of A's window, and A's for B's.
		time.Sleep(time.Second)
		endA = c.track(a)
		endA()
		time.Sleep(50 * time.Millisecond)
		for range 3 {
			c.track(b)()
		}
		endB3 := c.track(b)
		if ctx, why := c.soleRequest(); ctx != nil || !strings.Contains(why, "another session") {
			t.Errorf("B after A and B ended: %v %q", ctx, why)
		}
		time.Sleep(50 * time.Millisecond) // A's window has passed, B's own ends do not count
		if ctx, _ := c.soleRequest(); ctx != b {
			t.Error("B not chosen once A's window passed, after B's own ends")
		}
		endB3()
		endA4 := c.track(a)
		if ctx, why := c.soleRequest(); ctx != nil || !strings.Contains(why, "another session") {
			t.Errorf("A just after B ended: %v %q", ctx, why)
		}
		endA4()
		// A request without a client cannot receive anything.
		endN := c.track(context.Background())
		if ctx, why := c.soleRequest(); ctx != nil || !strings.Contains(why, "no MCP client") {
			t.Errorf("no client: %v %q", ctx, why)
		}
		endN()
		// 2026-07-28 callers over HTTP have no session ID: each is a
		// session of its own, so one's late message is never another's.
		time.Sleep(time.Second)
		m1 := gateway.WithClient(context.Background(), &fakeClient{session: ""})
		m2 := gateway.WithClient(context.Background(), &fakeClient{session: ""})
		endM1, endM2 := c.track(m1), c.track(m2)
		endM1()
		if ctx, why := c.soleRequest(); ctx != nil || !strings.Contains(why, "another session") {
			t.Errorf("a session-less caller just after another ended: %v %q", ctx, why)
		}
		time.Sleep(c.lateWindow)
		if ctx, _ := c.soleRequest(); ctx != m2 {
			t.Error("the session-less caller not chosen once the other's window passed")
		}
		endM2()
	})
}

// askedClient is a client that never answers a request: it holds each
// until its context ends, and says when that was.
type askedClient struct {
	fakeClient
	asked, ended chan struct{}
	why          error // the cause the request's context ended with
}

func (c *askedClient) Request(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	close(c.asked)
	<-ctx.Done()
	c.why = context.Cause(ctx)
	close(c.ended)
	return nil, ctx.Err()
}

// TestRelayedRequestCancelledByUpstream: an upstream that gives up on a
// question it relayed (notifications/cancelled with its request ID, as an
// SDK whose request timed out sends) takes it back from the client at
// once, not when the call ends, and says why (the cause of the wait's end
// is the reason the client is given in its notifications/cancelled).
func TestRelayedRequestCancelledByUpstream(t *testing.T) {
	log, _ := newLogger()
	cfg := serialConfig(t, "ab")
	cfg.RelayElicitation = true
	u := start(t, cfg, log, true)
	g := newGW(t, u)
	cl := &askedClient{fakeClient: fakeClient{session: "a"}, asked: make(chan struct{}), ended: make(chan struct{})}
	done := make(chan *gateway.Result, 1)
	go func() {
		done <- g.call(gateway.WithClient(context.Background(), cl), "ab__abandon", `{"ms":3000}`)
	}()
	select {
	case <-cl.asked:
	case <-time.After(10 * time.Second):
		t.Fatal("the elicitation never reached the client")
	}
	select {
	case <-cl.ended:
		if want := `the upstream server "ab" cancelled its request: timed out`; cl.why == nil || cl.why.Error() != want {
			t.Errorf("the client's wait ended with %v; want %q", cl.why, want)
		}
	case res := <-done:
		t.Fatalf("the client was asked until the call ended (%q); want the question taken back when the upstream cancelled it", res.Status())
	case <-time.After(10 * time.Second):
		t.Fatal("the client was never told the question ended")
	}
	if res := <-done; mustOK(t, res) != "abandon done" {
		t.Errorf("result %q", mustOK(t, res))
	}
}
