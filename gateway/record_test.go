package gateway

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestRecordArgumentsAreStrictAndBounded: what a record keeps of a call's
// arguments is strict JSON whatever the client sent, and bounded.
func TestRecordArgumentsAreStrictAndBounded(t *testing.T) {
	record := func(raw string) (json.RawMessage, map[string]any) {
		t.Helper()
		args, err := DecodeArguments(json.RawMessage(raw))
		if err != nil {
			t.Fatal(err)
		}
		got := RecordArguments(&Call{Arguments: json.RawMessage(raw), Args: args})
		if !json.Valid(got) || !utf8.Valid(got) {
			t.Fatalf("not strict JSON: %q", got)
		}
		var m map[string]any
		_ = json.Unmarshal(got, &m)
		return got, m
	}

	small := `{"path":"a.txt","content":"hello"}`
	if got, _ := record(small); string(got) != small {
		t.Errorf("small arguments changed: %s", got)
	}

	// Invalid UTF-8 is recorded as the tool received it: U+FFFD.
	_, m := record("{\"path\":\"caf\xe9.txt\"}")
	if m["path"] != "caf\uFFFD.txt" {
		t.Errorf("invalid UTF-8 recorded as %q", m["path"])
	}

	// A 5 MB content: its start, size and digest.
	content := strings.Repeat("x", 5<<20)
	got, m := record(`{"path":"big.txt","content":"` + content + `"}`)
	sum := sha256.Sum256([]byte(content))
	c, _ := m["content"].(string)
	if len(got) > 4<<10 || !strings.Contains(c, "5242880 bytes in all, sha256:"+hex.EncodeToString(sum[:])) || m["path"] != "big.txt" {
		t.Errorf("a 5 MB argument recorded in %d bytes: %.300s", len(got), got)
	}

	// Many strings under the per-string bound, over the whole bound.
	parts := make([]string, 100)
	for i := range parts {
		parts[i] = `"` + strings.Repeat("y", 2000) + `"`
	}
	raw := `{"items":[` + strings.Join(parts, ",") + `]}`
	got, m = record(raw)
	sum = sha256.Sum256([]byte(raw))
	if len(got) > 1<<10 || m["sha256"] != hex.EncodeToString(sum[:]) || m["bytes"] != float64(len(raw)) {
		t.Errorf("200 KB of arguments recorded as %.300s", got)
	}

	// Secrets are still redacted on the bounded path.
	_, m = record(`{"api_key":"sk-123","content":"` + content + `"}`)
	if m["api_key"] != Redacted {
		t.Errorf("api_key = %v", m["api_key"])
	}

	// A key spelled with escapes is the key it decodes to.
	got = RedactArguments(json.RawMessage(`{"\u0074oken":"s3cret"}`))
	if strings.Contains(string(got), "s3cret") {
		t.Errorf("an escaped token key kept its value: %s", got)
	}
}

// TestInvalidArgumentsNeverEchoAHugeValue: a multi-megabyte argument that
// fails its schema is not quoted back whole.
func TestInvalidArgumentsNeverEchoAHugeValue(t *testing.T) {
	tool, err := NewDynamicTool(ToolDef{Name: "t", InputSchema: json.RawMessage(`{"type":"object","properties":{"code":{"type":"string","pattern":"^[0-9]+$"},"kind":{"enum":["a","b"]}}}`)},
		func(context.Context, map[string]any) (*Result, error) { return OkText("ok"), nil })
	if err != nil {
		t.Fatal(err)
	}
	huge := strings.Repeat("z", 3<<20)
	msg := tool.Validate(map[string]any{"code": huge, "kind": huge})
	if msg == "" || len(msg) > 5000 {
		t.Errorf("the error is %d bytes", len(msg))
	}
}

// The prefilter that spares most argument records the redaction pass must
// never miss a secret-looking key, whatever its case, its length or its
// script.
func TestMayHoldSecretKey(t *testing.T) {
	long := `{"text":"` + strings.Repeat("x", 600) + `","API_KEY":"k"}`
	for _, tc := range []struct {
		raw  string
		want bool
	}{
		{`{"path":"a.txt"}`, false},
		{`{"Token":"x"}`, true},
		{`{"X-API-KEY":"x"}`, true},
		{`{"nested":{"PassWord":"x"}}`, true},
		{long, true},
		{strings.Replace(long, "API_KEY", "name", 1), false},
		{`{"COO\u212aIE":"x"}`, true},       // an escape may spell anything
		{`{"\u0074oken":"x"}`, true},        // "token"
		{`{"text":"a\nb"}`, false},          // escapes that spell no letter
		{"{\"COO\u212aIE\":\"x\"}", true},   // KELVIN SIGN lowers to k: "cookie"
		{"{\"n\u00e4me\":\"TOKEN\"}", true}, // non-ASCII text, secret-looking value
	} {
		if got := mayHoldSecretKey([]byte(tc.raw)); got != tc.want {
			t.Errorf("mayHoldSecretKey(%.60q) = %v, want %v", tc.raw, got, tc.want)
		}
	}
	// Against the plain rule (a part in the lowered text) on ASCII text
	// made of the parts' letters in both cases, cut and joined anyhow.
	for _, part := range secretKeyParts {
		if !strings.ContainsRune("acpst", rune(part[0])) || strings.ToLower(part) != part {
			t.Errorf("secret key part %q: mayHoldSecretKey's pass looks for lower-case parts beginning with a, c, p, s or t", part)
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	alphabet := []byte(`{}":,_-` + strings.Join(secretKeyParts, "") + strings.ToUpper(strings.Join(secretKeyParts, "")))
	for range 20000 {
		b := make([]byte, rng.IntN(40))
		for i := range b {
			b[i] = alphabet[rng.IntN(len(alphabet))]
		}
		if rng.IntN(4) == 0 { // a part in some case, somewhere
			part := []byte(secretKeyParts[rng.IntN(len(secretKeyParts))])
			for i := range part {
				if rng.IntN(2) == 0 {
					part[i] = bytes.ToUpper(part[i : i+1])[0]
				}
			}
			at := rng.IntN(len(b) + 1)
			b = append(b[:at], append(part, b[at:]...)...)
		}
		want := slices.ContainsFunc(secretKeyParts, func(p string) bool { return strings.Contains(strings.ToLower(string(b)), p) })
		if got := mayHoldSecretKey(b); got != want {
			t.Fatalf("mayHoldSecretKey(%q) = %v, the lowered text holds a part: %v", b, got, want)
		}
	}
}

// TestSecretKeysRedactedInAnySpelling: a key naming a secret is redacted
// whatever its case and word separator, and a key that names none is kept.
func TestSecretKeysRedactedInAnySpelling(t *testing.T) {
	for _, tc := range []struct {
		key    string
		secret bool
	}{
		{"api_key", true},
		{"apiKey", true},
		{"X-Api-Key", true},
		{"private_key", true},
		{"privateKey", true},
		{"PrivateKey", true},
		{"private-key", true},
		{"ssh_private_key", true},
		{"passphrase", true},
		{"keyPassphrase", true},
		{"access_token", true},
		{"path", false},
		{"key", false},
		{"private", false},
	} {
		if got := IsSecretKey(tc.key); got != tc.secret {
			t.Errorf("IsSecretKey(%q) = %v, want %v", tc.key, got, tc.secret)
		}
		c := &Call{Arguments: json.RawMessage(`{"` + tc.key + `":"S3CRET"}`), Args: map[string]any{tc.key: "S3CRET"}}
		if rec := string(RecordArguments(c)); strings.Contains(rec, "S3CRET") == tc.secret {
			t.Errorf("key %q recorded as %s", tc.key, rec)
		}
	}
}

// TestSecretsInValuesAreRedacted: a secret carried in a value rather than
// under a secret-looking key (a URL's user info or ?token=, a header line
// in a string, a flag) is redacted in the record too, while the rest of the
// value stays readable.
func TestSecretsInValuesAreRedacted(t *testing.T) {
	for _, c := range []struct{ args, secret, keep string }{
		{`{"url":"https://ann:hunter2pw@example.com/repo.git"}`, "hunter2pw", "https://ann:"},
		{`{"urls":["ftp://bob:Zq9s3cr3t@ftp.example.com"]}`, "Zq9s3cr3t", "ftp.example.com"},
		{`{"url":"https://api.example.com/v1?q=go&access_token=ya29A1b2c3&page=2"}`, "ya29A1b2c3", "page=2"},
		{`{"url":"https://api.example.com/v1?API_KEY=sk-live-77&x=1"}`, "sk-live-77", "x=1"},
		{`{"headers":["Accept: */*","Authorization: Bearer eyJhbGciOi.zzz"]}`, "eyJhbGciOi", "Accept: */*"},
		{`{"request":"GET / HTTP/1.1\r\nHost: x\r\nCookie: sid=abc123def\r\n\r\n"}`, "abc123def", "Host: x"},
		{`{"cmd":"deploy --token=tok_9f8e7d --verbose"}`, "tok_9f8e7d", "--verbose"},
	} {
		got := string(RecordArguments(&Call{Arguments: json.RawMessage(c.args), Args: map[string]any{}}))
		if strings.Contains(got, c.secret) || !strings.Contains(got, c.keep) || !json.Valid([]byte(got)) {
			t.Errorf("%s recorded as %s", c.args, got)
		}
	}
}

// TestCallLogLine: a failed call's log line names its session only when
// it has one (a `toolgate call` has none, and the line read session="").
func TestCallLogLine(t *testing.T) {
	var buf bytes.Buffer
	cat := NewCatalog(nil)
	ts, err := NewToolset("t", Must(NewTool(ToolDef{Name: "fail"},
		func(context.Context, *Call) (*Result, error) { return Error("no", "no"), nil })))
	if err != nil {
		t.Fatal(err)
	}
	if err := cat.Add(context.Background(), ts); err != nil {
		t.Fatal(err)
	}
	p := NewPipeline(&Options{Tools: cat, Logger: slog.New(slog.NewTextHandler(&buf, nil))})
	p.Call(context.Background(), &Call{Name: "fail"})
	p.Call(context.Background(), &Call{Name: "fail", Session: "abc"})
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 || strings.Contains(lines[0], "session=") || !strings.Contains(lines[1], "session="+SessionRef("abc")) {
		t.Errorf("the calls' log lines:\n%s", buf.String())
	}
}
