package e2e

import (
	"strings"
	"testing"
	"time"
)

// TestURLElicitationRelay: an upstream's URL-mode elicitation (MCP
// 2025-11-25) reaches the caller whose client declared that mode, through
// toolgate: server-everything's trigger-url-elicitation, which it offers
// only to a client that declares it (toolgate does, for its callers, with
// relay_elicitation), asks the TypeScript SDK client to open a URL, by a
// request or by the -32042 error, which the client gets as the protocol
// error with its elicitations. A client that declared forms only is not
// sent it.
func TestURLElicitationRelay(t *testing.T) {
	t.Parallel()
	up := everythingStdio(t, "ev")
	up["relay_elicitation"] = true
	env := newEnv(t, upstreams(up))
	srv := env.StartHTTP(t)
	confWaitUpstreamReady(t, srv, "ev", 20*time.Second)

	call := func(elicitation map[string]any, args map[string]any) elicitClientOut {
		var o elicitClientOut
		runNode(t, "elicit-client.mjs", map[string]any{"url": srv.URL, "tool": "ev__trigger-url-elicitation", "arguments": args,
			"answer": map[string]any{"action": "accept"}, "elicitation": elicitation}, &o)
		return o
	}
	both := map[string]any{"form": map[string]any{}, "url": map[string]any{}}
	// The mirror lists an upstream's tools moments after it is ready.
	var o elicitClientOut
	if !waitFor(10*time.Second, func() bool {
		o = call(both, map[string]any{"url": "https://example.com/auth"})
		return !strings.Contains(o.Error+o.Text(), "not found")
	}) {
		t.Fatalf("trigger-url-elicitation is not served: %+v", o)
	}
	if o.Error != "" || o.Result.IsError || !strings.Contains(o.Text(), "User completed the URL elicitation flow") ||
		len(o.Params) != 1 || o.Params[0].Mode != "url" || o.Params[0].URL != "https://example.com/auth" {
		t.Errorf("the request path: %+v", o)
	}

	o = call(both, map[string]any{"url": "https://example.com/auth", "errorPath": true})
	if o.Code != -32042 || len(o.Data.Elicitations) != 1 || o.Data.Elicitations[0].Mode != "url" || o.Data.Elicitations[0].URL == "" {
		t.Errorf("the error path: %+v; want -32042 with the elicitation to start", o)
	}

	// A 2026-07-28 client (the code is reserved there) is asked the
	// pages in a round of its call, whose repeat calls the upstream again.
	// (server-everything answers -32042 once per URL asked: another one.)
	var rounds roundsClientOut
	runNode(t, "rounds-client.mjs", map[string]any{"url": srv.URL, "tools": []string{"ev__trigger-url-elicitation"}, "elicitation": both,
		"arguments": map[string]any{"ev__trigger-url-elicitation": map[string]any{"url": "https://example.com/again", "errorPath": true}}}, &rounds)
	if c := rounds.Calls["ev__trigger-url-elicitation"]; rounds.Error != nil || c.IsError || !strings.Contains(c.Text, "User completed the URL elicitation flow") ||
		len(rounds.URLs) != 2 || rounds.URLs[0] != "https://modelcontextprotocol.io" || rounds.URLs[1] != "https://example.com/again" {
		t.Errorf("the error path, for a 2026-07-28 client: %+v; want the page asked in a round, then the call's own", rounds)
	}

	o = call(map[string]any{}, map[string]any{"url": "https://example.com/auth"})
	if len(o.Params) != 0 || !o.Result.IsError || !strings.Contains(o.Text(), "did not declare URL-mode elicitation") {
		t.Errorf("a client of forms only: %+v; want it not asked, and the call failed saying why", o)
	}
}
