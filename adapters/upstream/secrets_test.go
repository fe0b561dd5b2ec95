package upstream

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestSecrets: ${VAR} in env and headers is resolved from the gateway's
// environment, reaches the upstream, and never appears in logs or status,
// even at debug level and when the upstream fails.
func TestSecrets(t *testing.T) {
	const secret = "tgsecret-Zx81-value"
	t.Setenv("TG_TEST_TOKEN", secret)
	log, logs := newLogger()

	url, seen := httpUpstream(t, &serverState{})
	h := start(t, Config{Name: "h", URL: url, Headers: map[string]string{
		"Authorization": "Bearer ${TG_TEST_TOKEN}", "X-Plain": "plain",
	}}, log, true)
	g := newGW(t, h)
	mustOK(t, g.call(context.Background(), "h__echo", `{"n":1}`))
	if got := seen().Get("Authorization"); got != "Bearer "+secret {
		t.Errorf("Authorization header %q", got)
	}
	if got := seen().Get("X-Plain"); got != "plain" {
		t.Errorf("X-Plain header %q", got)
	}

	cfg := stdioConfig(t, "s")
	cfg.Env["TOKEN"] = "${TG_TEST_TOKEN}"
	s := start(t, cfg, log, true)
	g2 := newGW(t, s)
	if out := mustOK(t, g2.call(context.Background(), "s__env", `{}`)); !strings.Contains(out, "TOKEN="+secret) {
		t.Errorf("child env lacks TOKEN")
	}

	// A failing upstream with secrets logs its failures without them.
	bad := start(t, Config{Name: "bad", URL: "http://127.0.0.1:1/mcp?token=query-secret", StartupTimeout: time.Second,
		Headers: map[string]string{"Authorization": "Bearer ${TG_TEST_TOKEN}"}}, log, false)
	// With user info too, which net/http quotes as user:***@ (a form
	// neither the URL nor its parsed form matches).
	worse := start(t, Config{Name: "worse", URL: "http://alice:pw-secret@127.0.0.1:1/mcp?token=query-secret2", StartupTimeout: time.Second}, log, false)
	eventually(t, 10*time.Second, "a retry", func() bool {
		return strings.Contains(bad.Status().Detail, "2 failed attempts") && strings.Contains(worse.Status().Detail, "2 failed attempts")
	})
	res := newGW(t, worse).call(context.Background(), "worse__echo", `{}`)
	h.Close()
	s.Close()
	bad.Close()
	worse.Close()

	all := logs.String() + h.Status().Detail + s.Status().Detail + bad.Status().Detail + worse.Status().Detail + res.Message
	if strings.Contains(all, secret) {
		t.Errorf("a secret reached the logs:\n%s", all)
	}
	for _, leak := range []string{"query-secret", "alice", "pw-secret"} {
		if strings.Contains(all, leak) {
			t.Errorf("the URL's %s reached the logs, a status or a caller:\n%s", leak, all)
		}
	}
	if !strings.Contains(logs.String(), "upstream=bad") {
		t.Errorf("expected logs of the failing upstream:\n%s", logs.String())
	}

	// Unset variables are named, values never shown.
	_, err := New(Config{Name: "x", URL: "http://h/", Headers: map[string]string{"A": "${TG_TEST_TOKEN}${TG_TEST_UNSET}"}}, nil)
	if err == nil || !strings.Contains(err.Error(), "TG_TEST_UNSET is not set") || strings.Contains(err.Error(), secret) {
		t.Errorf("New: %v", err)
	}
}
