package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolgate/toolgate/gateway"
)

// TestDeepSchemaNotOffered: a tool whose input or output schema nests
// deeper than maxSchemaDepth is left out and reported, before its schema
// is compiled (which would take seconds at this depth); the others,
// one at the bound among them, are offered. Braces inside strings do not
// count.
func TestDeepSchemaNotOffered(t *testing.T) {
	u, err := New(Config{Name: "d", Command: "x"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	nest := func(levels int) string {
		return strings.Repeat(`{"items":`, levels-1) + `{"description":"}]{[\"{"}` + strings.Repeat(`}`, levels-1)
	}
	raws := []json.RawMessage{
		json.RawMessage(`{"name":"deep_in","inputSchema":` + nest(2000) + `}`),
		json.RawMessage(`{"name":"deep_out","inputSchema":{"type":"object"},"outputSchema":{"type":"object","properties":{"x":` + nest(maxSchemaDepth) + `}}}`),
		json.RawMessage(`{"name":"at_bound","inputSchema":` + nest(maxSchemaDepth) + `}`),
		json.RawMessage(`{"name":"plain","inputSchema":{"type":"object","description":"{{{{"}}`),
	}
	t0 := time.Now()
	tools, unoffered, _, _ := u.buildTools(raws)
	if d := time.Since(t0); d > 5*time.Second {
		t.Errorf("buildTools took %s", d)
	}
	var names []string
	for _, tl := range tools {
		names = append(names, tl.Name)
	}
	if want := []string{"d__at_bound", "d__plain"}; !slices.Equal(names, want) {
		t.Errorf("offered %v, want %v (unoffered %v)", names, want, unoffered)
	}
	for name, what := range map[string]string{"d__deep_in": "input", "d__deep_out": "output"} {
		if why := unoffered[name]; !strings.Contains(why, what+" schema nests objects and arrays more than 128 levels deep") {
			t.Errorf("%s not offered because %q; want its %s schema's depth", name, why, what)
		}
	}
}

// TestAnnotationsDecodedOnce: a tool's annotations are advertised as the
// upstream sent them and read for the policy's hints from one decoding of
// the entry; annotations that are not an object leave the tool out, saying
// why, and null or absent ones leave the hints to the MCP defaults.
func TestAnnotationsDecodedOnce(t *testing.T) {
	u, err := New(Config{Name: "a", Command: "x"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	tools, unoffered, _, _ := u.buildTools([]json.RawMessage{
		json.RawMessage(`{"name":"ro","annotations":{"readOnlyHint":true, "x-extra":1}}`),
		json.RawMessage(`{"name":"plain","annotations":null}`),
		json.RawMessage(`{"name":"bad","annotations":"read-only"}`),
	})
	byName := map[string]int{}
	for i, tl := range tools {
		byName[tl.Name] = i
	}
	ro, ok := byName["a__ro"]
	if !ok {
		t.Fatalf("a__ro not offered (unoffered %v)", unoffered)
	}
	if h := tools[ro].Permissions.Hints; h.ReadOnly == nil || !*h.ReadOnly || h.Destructive != nil {
		t.Errorf("a__ro hints %+v, want read-only and nothing else said", h)
	}
	if got := string(tools[ro].Annotations); got != `{"readOnlyHint":true, "x-extra":1}` {
		t.Errorf("a__ro advertises annotations %s, want them as sent", got)
	}
	if i, ok := byName["a__plain"]; !ok {
		t.Errorf("a__plain not offered (unoffered %v)", unoffered)
	} else if tools[i].Annotations != nil || tools[i].Permissions.Hints != (gateway.Hints{}) {
		t.Errorf("a__plain: annotations %s, hints %+v; want none", tools[i].Annotations, tools[i].Permissions.Hints)
	}
	if why := unoffered["a#2"]; !strings.Contains(why, "malformed tools/list entry") {
		t.Errorf("the tool with string annotations: unoffered %q, want it malformed", why)
	}
}

// TestCallParamsAsMembers holds a tools/call request's params, encoded
// from the struct, to what the map of the same members (what they were
// before, and what a 2026-07-28 request still gets) encodes to: the same
// JSON object, the task present when set even if empty, _meta only when
// it has members.
func TestCallParamsAsMembers(t *testing.T) {
	args := json.RawMessage(`{"text":"hi","n":12345678901234567890}`)
	for _, p := range []callParams{
		{Name: "echo", Arguments: args},
		{Name: "echo", Arguments: json.RawMessage(`{}`), Meta: map[string]any{}},
		{Name: "echo", Arguments: args, Meta: map[string]any{"progressToken": "tg-progress-1"}},
		{Name: "echo", Arguments: args, Task: map[string]any{}},
		{Name: "echo", Arguments: args, Meta: map[string]any{"traceparent": "00-x"}, Task: map[string]any{"ttl": int64(5000)}},
	} {
		got, err := json.Marshal(&p)
		if err != nil {
			t.Fatal(err)
		}
		want, err := json.Marshal(p.members())
		if err != nil {
			t.Fatal(err)
		}
		g, w := decodeNumbers(t, got), decodeNumbers(t, want)
		if !reflect.DeepEqual(g, w) {
			t.Errorf("params %s, as a map %s", got, want)
		}
		if _, ok := g.(map[string]any)["task"]; ok != (p.Task != nil) {
			t.Errorf("%s: task sent %v, set %v", got, ok, p.Task != nil)
		}
	}
}

// decodeNumbers decodes JSON with its numbers kept as written.
func decodeNumbers(t *testing.T, b []byte) any {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

// BenchmarkBuildTools: turning one upstream's tools/list of 100 tools
// (small object schemas, annotations) into gateway tools, which start-up
// does for every upstream.
func BenchmarkBuildTools(b *testing.B) {
	u, err := New(Config{Name: "a", Command: "x"}, nil)
	if err != nil {
		b.Fatal(err)
	}
	raws := make([]json.RawMessage, 100)
	for i := range raws {
		raws[i] = json.RawMessage(fmt.Sprintf(`{"name":"tool_%d","description":"Does thing %d.","inputSchema":{"type":"object",`+
			`"properties":{"path":{"type":"string","description":"where"},"limit":{"type":"integer","minimum":1,"maximum":1000},`+
			`"mode":{"type":"string","enum":["a","b","c"]}},"required":["path"]},"annotations":{"readOnlyHint":true,"openWorldHint":false}}`, i, i))
	}
	b.ReportAllocs()
	for b.Loop() {
		if tools, _, _, _ := u.buildTools(raws); len(tools) != len(raws) {
			b.Fatalf("%d tools built, want %d", len(tools), len(raws))
		}
	}
}

// reentrantLog is a log handler that asks the upstream for its tools at
// each warning, as a handler that reports state might: it deadlocks if the
// upstream logs while holding its own lock.
type reentrantLog struct {
	slog.Handler
	up *atomic.Pointer[Upstream]
}

func (h reentrantLog) Handle(ctx context.Context, r slog.Record) error {
	if u := h.up.Load(); u != nil && r.Level >= slog.LevelWarn {
		_, _ = u.Tools(ctx)
		_ = u.Status()
	}
	return h.Handler.Handle(ctx, r)
}

func (h reentrantLog) WithAttrs(as []slog.Attr) slog.Handler {
	return reentrantLog{h.Handler.WithAttrs(as), h.up}
}

// TestToolChangesLoggedOnce: an allow glob that matches no tool is logged
// when the upstream is first listed and not again at each re-listing that
// still finds it unmatched; the warning is written after the upstream let
// go of its lock (the handler here calls back into it).
func TestToolChangesLoggedOnce(t *testing.T) {
	buf := &logBuf{}
	var up atomic.Pointer[Upstream]
	log := slog.New(reentrantLog{slog.NewTextHandler(buf, nil), &up})
	cfg := stdioConfig(t, "s")
	cfg.Allow = []string{"*", "zzqq_*"}
	u, err := New(cfg, &Options{Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	u.tune = fastTuning()
	up.Store(u)
	t.Cleanup(func() { u.Close() })
	u.Start(context.Background())
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := u.WaitReady(ctx); err != nil {
		t.Fatalf("not ready: %v", err)
	}
	const unmatched = `allow glob \"zzqq_*\" matches no tool`
	if n := strings.Count(buf.String(), unmatched); n != 1 {
		t.Fatalf("the unmatched glob logged %d times at the first listing, want 1:\n%s", n, buf)
	}
	g := newGW(t, u)
	relisted := func() int { return strings.Count(buf.String(), "upstream tools re-listed") }
	mustOK(t, g.call(ctx, "s__announce_tools", `{}`))
	eventually(t, 10*time.Second, "a re-listing", func() bool { return relisted() == 1 })
	mustOK(t, g.call(ctx, "s__add_tool", `{}`))
	eventually(t, 10*time.Second, "a second re-listing", func() bool { return relisted() == 2 })
	if n := strings.Count(buf.String(), unmatched); n != 1 {
		t.Errorf("the unmatched glob logged %d times after two re-listings, want 1:\n%s", n, buf)
	}
}
