package gateway

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"
)

// Recorder keeps the record of calls. The run archive is the gateway's
// recorder. Both methods are called for every call that enters the pipeline,
// in that order, from the call's goroutine; they must be safe for concurrent
// use and must not block for long. They get no context: a call whose
// context was cancelled is still recorded (as slog's Handle does).
type Recorder interface {
	// CallStarted records that a call entered the pipeline (tool.started).
	// If it cannot (a full disk, say), the call is refused rather than
	// run unrecorded: it ends with an unavailable result, which is still
	// passed to CallFinished.
	CallStarted(call *Call) error
	// CallFinished records how it ended (tool.completed or tool.failed,
	// the call's line, and its error line if it failed).
	CallFinished(call *Call, res *Result, elapsed time.Duration)
}

// recordStage is outermost: it records the start of every call before
// anything else can fail, and its end whatever the stages inside decided
// (not found, invalid, denied, summarized, timed out...), and logs one line
// per call.
func (p *Pipeline) recordStage(next Handler) Handler {
	rec := p.opts.Recorder
	return func(ctx context.Context, call *Call) *Result {
		call.Started = time.Now()
		var res *Result
		if rec != nil {
			if err := rec.CallStarted(call); err != nil {
				res = UnavailableResult(call.Name, "the call cannot be recorded: "+err.Error())
			}
		}
		if res == nil {
			res = next(ctx, call)
		}
		if res == nil {
			res = RuntimeErrorResult(call.Name, errNoResult)
		}
		elapsed := time.Since(call.Started)
		if rec != nil {
			rec.CallFinished(call, res, elapsed)
		}
		// Every call is in the run archive; the log gets a line per call at
		// debug level, and per failed call at info.
		level := slog.LevelDebug
		if res.IsError {
			level = slog.LevelInfo
		}
		if p.log.Enabled(ctx, level) {
			attrs := []slog.Attr{
				slog.String("call_id", call.ID),
				slog.String("tool", call.Name),
				slog.String("toolset", call.Toolset),
				slog.String("status", res.Status()),
				slog.Int64("duration_ms", elapsed.Milliseconds()),
			}
			if ref := call.SessionRef(); ref != "" { // none for toolgate call
				attrs = append(attrs, slog.String("session", ref))
			}
			p.log.LogAttrs(context.WithoutCancel(ctx), level, "tool call", attrs...)
		}
		return res
	}
}

// errNoResult is the runtime error of a stage that returned nil.
var errNoResult = errors.New("no result")

// secretKeyParts are the substrings that mark an argument key as secret:
// lower-case ASCII, each beginning with a, c, p, s or t (mayHoldSecretKey
// looks for them from those letters; TestMayHoldSecretKey checks).
var secretKeyParts = []string{"token", "secret", "password", "passwd", "authorization", "api_key", "apikey", "api-key", "credential", "private_key", "privatekey", "private-key", "passphrase", "cookie"}

// Redacted is what a secret value is replaced with in records and logs.
const Redacted = "[REDACTED]"

// IsSecretKey reports whether an argument key looks like it holds a secret
// (token, secret, password, authorization, api_key...), case-insensitively.
func IsSecretKey(key string) bool {
	k := strings.ToLower(key)
	for _, s := range secretKeyParts {
		if strings.Contains(k, s) {
			return true
		}
	}
	return false
}

// Bounds of the arguments a record keeps, so that a line stays readable
// and small whatever a client sends: a string longer than
// recordStringMax is kept as its start with its size and SHA-256 digest
// (write_file's content among them: the archive keeps the previous
// version of a file, and the file has the new one), and arguments still
// longer than recordArgsMax are replaced by their size and digest.
const (
	recordStringMax = 2 << 10
	recordArgsMax   = 64 << 10
)

// RecordArguments returns a call's arguments as records keep them (see
// [RedactArguments]). Small arguments that decoded cleanly, are valid
// UTF-8 and contain no secret-like key text are returned as they are,
// with no further decoding.
func RecordArguments(c *Call) json.RawMessage {
	raw := bytes.TrimSpace(c.Arguments)
	if len(raw) == 0 {
		return json.RawMessage("{}")
	}
	if c.Args != nil && len(raw) <= recordStringMax && utf8.Valid(raw) && !mayHoldSecretKey(raw) && !mayHoldUserinfo(raw) {
		return raw
	}
	return RedactArguments(raw)
}

// RedactArguments returns the arguments as records keep them: strict JSON
// (invalid UTF-8 replaced by U+FFFD, as the tool itself received it), the
// value of every key that looks like a secret replaced by [Redacted] at
// any depth, long strings cut with their size and digest, and arguments
// over 64 KiB even so summarized by size and digest. Arguments that are
// not valid JSON are returned as a JSON string holding at most their first
// 256 bytes (cut between runes), so that a record never carries unbounded
// garbage.
func RedactArguments(raw json.RawMessage) json.RawMessage {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return json.RawMessage("{}")
	}
	if len(raw) <= recordStringMax && json.Valid(raw) && utf8.Valid(raw) && !mayHoldSecretKey(raw) && !mayHoldUserinfo(raw) {
		return raw // the common case: small, strict, no key could be a secret's
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		b, _ := json.Marshal(Truncate(strings.ToValidUTF8(string(raw), "\uFFFD"), 256)) // whole runes only
		return b
	}
	changed := redactValue(v)
	if s, ok := v.(string); ok {
		if r, ok := redactShort(s); ok {
			v, changed = r, true
		}
	}
	if s, ok := v.(string); ok && len(s) > recordStringMax {
		v, changed = boundString(s), true
	} else if boundStrings(v) {
		changed = true
	}
	if !changed && len(raw) <= recordArgsMax && utf8.Valid(raw) {
		return raw
	}
	b, err := marshalNoEscape(v)
	if err != nil {
		return json.RawMessage(`"[unencodable arguments]"`)
	}
	if len(b) > recordArgsMax {
		sum := sha256.Sum256(raw)
		b, _ = marshalNoEscape(map[string]any{
			"_summary": fmt.Sprintf("arguments of %d bytes, too large to keep in the record", len(raw)),
			"bytes":    len(raw),
			"sha256":   hex.EncodeToString(sum[:]),
		})
	}
	return b
}

// boundString is a long string as a record keeps it: its start, its size
// and its digest.
func boundString(s string) string {
	sum := sha256.Sum256([]byte(s)) // of what the tool got, secrets and all
	head, _ := redactString(Truncate(s, 256))
	return fmt.Sprintf("%s… [%d bytes in all, sha256:%s]", head, len(s), hex.EncodeToString(sum[:]))
}

// boundStrings replaces, in place, every string longer than
// recordStringMax inside maps and slices, and reports whether it did.
func boundStrings(v any) bool {
	changed := false
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			if s, ok := x.(string); ok && len(s) > recordStringMax {
				v[k], changed = boundString(s), true
			} else if boundStrings(x) {
				changed = true
			}
		}
	case []any:
		for i, x := range v {
			if s, ok := x.(string); ok && len(s) > recordStringMax {
				v[i], changed = boundString(s), true
			} else if boundStrings(x) {
				changed = true
			}
		}
	}
	return changed
}

func mayHoldSecretKey(raw []byte) bool {
	if bytes.Contains(raw, []byte(`\u`)) {
		return true // an escaped letter may spell a key ("\u0074oken")
	}
	if hasNonASCII(raw) { // Unicode case rules apply (K, the Kelvin sign, lowers to k)
		lower := bytes.ToLower(raw)
		for _, s := range secretKeyParts {
			if bytes.Contains(lower, []byte(s)) {
				return true
			}
		}
		return false
	}
	// ASCII: one pass, comparing the parts that begin with each letter
	// met (every part begins with one of a, c, p, s, t).
	for i, c := range raw {
		switch c | 0x20 {
		case 'a', 'c', 'p', 's', 't':
			for _, s := range secretKeyParts {
				if s[0] == c|0x20 && len(raw)-i >= len(s) && bytes.EqualFold(raw[i:i+len(s)], []byte(s)) {
					return true
				}
			}
		}
	}
	return false
}

// redactValue redacts secrets in place and reports whether it changed
// anything.
func redactValue(v any) bool {
	changed := false
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			if IsSecretKey(k) {
				if x != Redacted {
					v[k] = Redacted
					changed = true
				}
				continue
			}
			if str, ok := x.(string); ok {
				if r, ok := redactShort(str); ok {
					v[k], changed = r, true
				}
			} else if redactValue(x) {
				changed = true
			}
		}
	case []any:
		for i, x := range v {
			if str, ok := x.(string); ok {
				if r, ok := redactShort(str); ok {
					v[i], changed = r, true
				}
			} else if redactValue(x) {
				changed = true
			}
		}
	}
	return changed
}

// mayHoldUserinfo reports whether raw may hold a URL with user info
// (scheme://user:password@host), which carries no secret-looking key.
func mayHoldUserinfo(raw []byte) bool {
	return bytes.IndexByte(raw, '@') >= 0 && bytes.Contains(raw, []byte("://"))
}

// Secrets inside a string value: a URL's password (scheme://user:pw@),
// a parameter or flag named like a secret (?access_token=…, --token=…),
// and a header-like line named like one (Authorization: Bearer …).
var (
	userinfoRE    = regexp.MustCompile(`[A-Za-z][A-Za-z0-9+.\-]*://[^/?#@\s:"']*:([^/?#@\s"']*)@`)
	secretParamRE = regexp.MustCompile(`(?:^|[?&;\s])-{0,2}([A-Za-z0-9_.\-]+)=([^&#;\s"']*)`)
	secretLineRE  = regexp.MustCompile(`(?m)^[ \t]*([A-Za-z0-9_\-]+)[ \t]*:[ \t]*([^\r\n]*)`)
)

// RedactText returns a message (an error an upstream answered, say) as
// records keep it: the secrets it carries in its text (see
// [RedactArguments]) replaced by [Redacted].
func RedactText(s string) string {
	r, _ := redactString(s)
	return r
}

// redactShort redacts the secrets inside a string value the record keeps
// whole; a longer one is cut by boundString, which redacts the head it
// keeps and digests what the tool got.
func redactShort(s string) (string, bool) {
	if len(s) > recordStringMax {
		return s, false
	}
	return redactString(s)
}

// redactString returns s with the secrets it carries in its text replaced
// by [Redacted], and whether there were any.
func redactString(s string) (string, bool) {
	b := []byte(s)
	if !mayHoldSecretKey(b) && !mayHoldUserinfo(b) {
		return s, false
	}
	out := redactMatches(s, userinfoRE, -1)
	out = redactMatches(out, secretParamRE, 1)
	out = redactMatches(out, secretLineRE, 1)
	return out, out != s
}

// redactMatches replaces the value (the last group) of every match of re
// whose name (group nameGroup; -1 for none: every match) looks secret.
func redactMatches(s string, re *regexp.Regexp, nameGroup int) string {
	ms := re.FindAllStringSubmatchIndex(s, -1)
	if ms == nil {
		return s
	}
	var b strings.Builder
	last := 0
	for _, m := range ms {
		vs, ve := m[len(m)-2], m[len(m)-1]
		if vs < 0 || vs == ve || s[vs:ve] == Redacted {
			continue
		}
		if nameGroup >= 0 && !IsSecretKey(s[m[2*nameGroup]:m[2*nameGroup+1]]) {
			continue
		}
		b.WriteString(s[last:vs])
		b.WriteString(Redacted)
		last = ve
	}
	if last == 0 {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}
