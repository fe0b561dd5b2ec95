package upstream

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"sort"
	"strings"
)

// newRedactor replaces, in text bound for logs, errors and status, the
// configured URL by its logged form (no query, no user info) and each of
// secrets (values substituted for ${VAR}, and env and header values of 8
// or more characters) of 4 or more characters by "[redacted]". Values are
// never logged on purpose; this catches the ones that come back in error
// messages (a URL quoted by net/http, a child echoing its environment).
func newRedactor(rawURL, target string, secrets []string) *strings.Replacer {
	type pair struct{ old, new string }
	var pairs []pair
	if rawURL != "" && rawURL != target {
		pairs = append(pairs, pair{rawURL, target})
		if p, err := url.Parse(rawURL); err == nil {
			if p.String() != rawURL {
				pairs = append(pairs, pair{p.String(), target})
			}
			// net/http quotes a URL with user info as user:***@host…,
			// which matches neither form: its parts go wherever they are.
			if p.User != nil {
				pairs = append(pairs, pair{p.User.String() + "@", ""})
				if _, has := p.User.Password(); has {
					pairs = append(pairs, pair{p.User.Username() + ":***@", ""})
				}
			}
			if p.RawQuery != "" {
				pairs = append(pairs, pair{"?" + p.RawQuery, ""})
			}
		}
	}
	for _, v := range secrets {
		if len(v) >= 4 {
			pairs = append(pairs, pair{v, "[redacted]"})
		}
	}
	// Longer first, so that a value containing another is replaced whole.
	sort.SliceStable(pairs, func(i, j int) bool { return len(pairs[i].old) > len(pairs[j].old) })
	args := make([]string, 0, 2*len(pairs))
	for _, p := range pairs {
		args = append(args, p.old, p.new)
	}
	return strings.NewReplacer(args...)
}

// redactHandler redacts the message and the string, error and other
// values of every record.
type redactHandler struct {
	h slog.Handler
	r *strings.Replacer
}

func (h redactHandler) Enabled(ctx context.Context, l slog.Level) bool { return h.h.Enabled(ctx, l) }

func (h redactHandler) Handle(ctx context.Context, r slog.Record) error {
	out := slog.NewRecord(r.Time, r.Level, h.r.Replace(r.Message), r.PC)
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(h.attr(a))
		return true
	})
	return h.h.Handle(ctx, out)
}

func (h redactHandler) attr(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		return slog.String(a.Key, h.r.Replace(v.String()))
	case slog.KindGroup:
		as := v.Group()
		out := make([]any, len(as))
		for i, g := range as {
			out[i] = h.attr(g)
		}
		return slog.Group(a.Key, out...)
	case slog.KindAny:
		s := fmt.Sprint(v.Any())
		if red := h.r.Replace(s); red != s {
			return slog.String(a.Key, red)
		}
	}
	return a
}

func (h redactHandler) WithAttrs(as []slog.Attr) slog.Handler {
	out := make([]slog.Attr, len(as))
	for i, a := range as {
		out[i] = h.attr(a)
	}
	return redactHandler{h.h.WithAttrs(out), h.r}
}

func (h redactHandler) WithGroup(g string) slog.Handler { return redactHandler{h.h.WithGroup(g), h.r} }
