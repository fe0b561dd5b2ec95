package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

var update = flag.Bool("update", false, "rewrite golden files in testdata/")

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if string(want) != string(got) {
		t.Errorf("%s differs from golden file:\n--- got ---\n%s\n--- want ---\n%s", name, got, want)
	}
}

func TestNewToolRejectsBadSchemas(t *testing.T) {
	tests := []struct {
		name, schema, wantErr string
	}{
		{"not json", `{"type":`, "input schema is not JSON"},
		{"not an object", `["object"]`, "must be a JSON object, got array"},
		{"unknown type", `{"type":"invalid_type"}`, "not a valid JSON Schema"},
		{"bad minimum", `{"type":"object","properties":{"n":{"type":"integer","minimum":"one"}}}`, "not a valid JSON Schema"},
		{"remote ref over https", `{"$ref":"https://example.com/schema.json"}`, "remote $ref"},
		{"file ref", `{"$ref":"file:///etc/passwd"}`, "remote $ref"},
		{"relative ref", `{"$ref":"other.json"}`, "remote $ref"},
		{"dangling local ref", `{"$ref":"#/$defs/missing"}`, "input schema"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewTool(ToolDef{Name: "t", InputSchema: json.RawMessage(tc.schema)}, func(context.Context, *Call) (*Result, error) { return nil, nil })
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}

func TestNewToolAcceptsLocalRefsAndOtherDrafts(t *testing.T) {
	for _, schema := range []string{
		`{"type":"object","properties":{"a":{"$ref":"#/$defs/A"}},"$defs":{"A":{"type":"string"}}}`,
		`{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"a":{"type":"string"}}}`,
		`{"anyOf":[{"type":"object","required":["a"]},{"type":"object","required":["b"]}],"description":"top-level keywords pass through"}`,
	} {
		tool, err := NewTool(ToolDef{Name: "t", InputSchema: json.RawMessage(schema)}, func(context.Context, *Call) (*Result, error) { return nil, nil })
		if err != nil {
			t.Fatalf("%s: %v", schema, err)
		}
		if string(tool.InputSchema) != schema {
			t.Errorf("schema bytes changed: %s", tool.InputSchema)
		}
	}
}

func TestSchemasWithECMAEscapesAndSharing(t *testing.T) {
	schema := json.RawMessage(`{"type":"object","properties":{"s":{"type":"string","pattern":"^[^\\u0000]*$"}}}`)
	noop := func(context.Context, *Call) (*Result, error) { return nil, nil }
	a, err := NewTool(ToolDef{Name: "a", InputSchema: schema}, noop)
	if err != nil {
		t.Fatalf("a pattern with an ECMA \\u escape: %v", err)
	}
	if msg := a.Validate(map[string]any{"s": "ok"}); msg != "" {
		t.Errorf("valid string refused: %s", msg)
	}
	if msg := a.Validate(map[string]any{"s": "nul\x00here"}); msg == "" {
		t.Errorf("a string with NUL passed the pattern")
	}
	b, _ := NewTool(ToolDef{Name: "b", InputSchema: schema}, noop)
	if a.schema != b.schema {
		t.Errorf("tools with the same schema bytes compiled it twice")
	}
	if _, err := NewTool(ToolDef{Name: "c", InputSchema: json.RawMessage(`{"type":"object","properties":{"s":{"pattern":"(?=x)"}}}`)}, noop); err == nil {
		t.Errorf("a lookahead (not RE2) was accepted")
	}
}

func TestToolNames(t *testing.T) {
	for name, ok := range map[string]bool{"read_file": true, "a-b_C9": true, strings.Repeat("x", 64): true,
		"": false, strings.Repeat("x", 65): false, "a.b": false, "a b": false, "a/b": false, "é": false} {
		_, err := NewTool(ToolDef{Name: name}, func(context.Context, *Call) (*Result, error) { return nil, nil })
		if (err == nil) != ok {
			t.Errorf("name %q: err %v", name, err)
		}
	}
}

type address struct {
	Street string `json:"street" jsonschema:"description=Street and number"`
	Zip    string `json:"zip,omitempty" jsonschema:"pattern=^[0-9]{5}$"`
}

type weatherParams struct {
	City    string    `json:"city" jsonschema:"description=City name,minLength=1"`
	Days    int       `json:"days,omitempty" jsonschema:"description=Days ahead,minimum=1,maximum=7,default=1"`
	Unit    string    `json:"unit,omitempty" jsonschema:"enum=celsius,enum=fahrenheit"`
	Home    address   `json:"home"`
	Others  []address `json:"others,omitempty"`
	Verbose *bool     `json:"verbose,omitempty"`
}

func TestTypedToolSchemaGolden(t *testing.T) {
	tool, err := NewTypedTool(ToolDef{Name: "weather", Description: "Weather"}, func(ctx context.Context, p weatherParams) (*Result, error) {
		return OkText(p.City), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var pretty strings.Builder
	var v any
	dec := json.NewDecoder(strings.NewReader(string(tool.InputSchema)))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(tool.InputSchema), `"title"`) || strings.Contains(string(tool.InputSchema), `$ref`) || strings.Contains(string(tool.InputSchema), `$defs`) {
		t.Errorf("schema has titles or refs: %s", tool.InputSchema)
	}
	if !strings.HasPrefix(string(tool.InputSchema), `{"properties":{"city":`) {
		t.Errorf("properties are not in field order: %s", tool.InputSchema)
	}
	pretty.Write(tool.InputSchema)
	pretty.WriteByte('\n')
	golden(t, "typed_schema.json", []byte(pretty.String()))
}

type node struct {
	Name string `json:"name"`
	Kids []node `json:"kids,omitempty"`
}

func TestTypedToolRejectsRecursiveTypes(t *testing.T) {
	_, err := NewTypedTool(ToolDef{Name: "tree"}, func(ctx context.Context, p node) (*Result, error) { return nil, nil })
	if err == nil || !strings.Contains(err.Error(), "recursive") {
		t.Fatalf("err %v", err)
	}
}

func TestTypedToolDecodesStruct(t *testing.T) {
	var got weatherParams
	tool := Must(NewTypedTool(ToolDef{Name: "weather"}, func(ctx context.Context, p weatherParams) (*Result, error) {
		got = p
		return OkText("ok"), nil
	}))
	cat := NewCatalog(nil)
	ts, _ := NewToolset("w", tool)
	_ = cat.Add(context.Background(), ts)
	p := NewPipeline(&Options{Tools: cat})
	res := p.Call(context.Background(), &Call{Name: "weather", Arguments: json.RawMessage(`{"city":"Oslo","days":3,"unit":"celsius","home":{"street":"x 1"},"verbose":true}`)})
	if res.IsError {
		t.Fatal(res.Message)
	}
	if got.City != "Oslo" || got.Days != 3 || got.Home.Street != "x 1" || got.Verbose == nil || !*got.Verbose {
		t.Fatalf("decoded %+v", got)
	}
	res = p.Call(context.Background(), &Call{Name: "weather", Arguments: json.RawMessage(`{"city":"","days":9,"unit":"kelvin","home":{"street":"s","zip":"abc"}}`)})
	for _, want := range []string{"at '/city': minimum length 1, got 0", "at '/days': maximum 7, got 9", `at '/unit': one of ["celsius","fahrenheit"], got "kelvin"`, "at '/home/zip': 'abc' does not match pattern"} {
		if !strings.Contains(res.Message, want) {
			t.Errorf("message lacks %q: %s", want, res.Message)
		}
	}
}

func TestTypedToolIntegersWrittenAsNumbers(t *testing.T) {
	var got limitParams
	tool := Must(NewTypedTool(ToolDef{Name: "lim"}, func(ctx context.Context, p limitParams) (*Result, error) {
		got = p
		return OkText("ok"), nil
	}))
	ts, _ := NewToolset("t", tool)
	cat := NewCatalog(nil)
	_ = cat.Add(context.Background(), ts)
	p := NewPipeline(&Options{Tools: cat})
	for _, arg := range []string{"5.0", "5e0", "0.5e1"} {
		res := p.Call(context.Background(), &Call{Name: "lim", Arguments: json.RawMessage(`{"path":"a","limit":` + arg + `}`)})
		if res.IsError || got.Limit != 5 {
			t.Errorf("limit %s: %s (decoded %d)", arg, res.Message, got.Limit)
		}
	}
	// Beyond the Go type's range: invalid arguments, saying where.
	huge := Must(NewTypedTool(ToolDef{Name: "huge"}, func(ctx context.Context, p struct {
		N int8 `json:"n"`
	}) (*Result, error) {
		return OkText("ok"), nil
	}))
	_ = ts.Add(huge)
	res := p.Call(context.Background(), &Call{Name: "huge", Arguments: json.RawMessage(`{"n":1e3}`)})
	if res.Kind != KindInvalid || !strings.Contains(res.Message, "at '/n'") {
		t.Errorf("n=1e3 into int8: kind %q, %s", res.Kind, res.Message)
	}
}

func TestHintsResolved(t *testing.T) {
	if got := (Hints{}).Resolved(); got != (ResolvedHints{Destructive: true, OpenWorld: true}) {
		t.Errorf("absent hints resolve to %+v, want the MCP defaults", got)
	}
	if got := (Hints{ReadOnly: Bool(true)}).Resolved(); got.Destructive {
		t.Errorf("a read-only tool resolved as destructive")
	}
}

func TestCatalogConflictsAreDeterministic(t *testing.T) {
	mk := func(name string) *Tool {
		return Must(NewTool(ToolDef{Name: name}, func(context.Context, *Call) (*Result, error) { return OkText(name), nil }))
	}
	a, _ := NewToolset("a", mk("read"), mk("only_a"))
	b, _ := NewToolset("b", mk("read"))
	for i := 0; i < 2; i++ {
		cat := NewCatalog(nil)
		_ = cat.Add(context.Background(), a)
		_ = cat.Add(context.Background(), b)
		conf := cat.Conflicts()
		if len(conf) != 1 || conf[0].Kept != "a" || conf[0].Renamed != "b" || conf[0].ServedAs != conflictName("b", "read") {
			t.Fatalf("conflicts %+v", conf)
		}
		if _, ts, _ := cat.Resolve("read"); ts != "a" {
			t.Errorf("read served by %q", ts)
		}
		if _, ts, ok := cat.Resolve(conf[0].ServedAs); !ok || ts != "b" {
			t.Errorf("renamed tool not served")
		}
		if n := len(cat.Entries()); n != 3 {
			t.Errorf("%d entries, want 3 (nothing dropped)", n)
		}
	}
	if long := conflictName("x", strings.Repeat("n", 64)); len(long) != 64 || !ValidToolName(long) {
		t.Errorf("long conflict name %q", long)
	}
}

func TestCatalogRefreshOnChange(t *testing.T) {
	ts, _ := NewToolset("s")
	cat := NewCatalog(nil)
	changed := 0
	cat.OnChange(func() { changed++ })
	_ = cat.Add(context.Background(), ts)
	if _, _, ok := cat.Resolve("late"); ok {
		t.Fatal("tool before it was added")
	}
	_ = ts.Add(Must(NewTool(ToolDef{Name: "late"}, func(context.Context, *Call) (*Result, error) { return OkText(""), nil })))
	if _, _, ok := cat.Resolve("late"); !ok {
		t.Fatal("added tool not resolved")
	}
	if changed != 2 {
		t.Errorf("%d change notifications, want 2", changed)
	}
}

// brokenToolset is a toolset whose listing fails.
type brokenToolset struct{ name string }

func (b brokenToolset) Name() string { return b.name }
func (b brokenToolset) Tools(context.Context) ([]*Tool, error) {
	return nil, errors.New("not connected")
}

// TestCatalogAddAll: toolsets added together are served as if added one by
// one in order (the first keeps a contested name), each with its own error,
// in one rebuild the listeners hear of once, and each is followed after.
func TestCatalogAddAll(t *testing.T) {
	mk := func(name string) *Tool {
		return Must(NewTool(ToolDef{Name: name}, func(context.Context, *Call) (*Result, error) { return OkText(name), nil }))
	}
	a, _ := NewToolset("a", mk("read"), mk("only_a"))
	b, _ := NewToolset("b", mk("read"))
	one, _ := NewToolset("a", mk("other"))
	cat := NewCatalog(nil)
	changed := 0
	cat.OnChange(func() { changed++ })
	errs := cat.AddAll(context.Background(), []Toolset{a, brokenToolset{"down"}, b, one})
	if len(errs) != 4 || errs[0] != nil || errs[2] != nil {
		t.Fatalf("errors %v, want nil for a and b", errs)
	}
	if errs[1] == nil || !strings.Contains(errs[1].Error(), `listing tools of "down": not connected`) {
		t.Errorf("the broken toolset's error: %v", errs[1])
	}
	if errs[3] == nil || !strings.Contains(errs[3].Error(), `toolset "a" added twice`) {
		t.Errorf("the second toolset named a: %v", errs[3])
	}
	if changed != 1 {
		t.Errorf("%d change notifications, want 1 for the whole batch", changed)
	}
	if _, ts, _ := cat.Resolve("read"); ts != "a" {
		t.Errorf("read served by %q, want a (added first)", ts)
	}
	if _, ts, ok := cat.Resolve(conflictName("b", "read")); !ok || ts != "b" {
		t.Errorf("b's read not served under its conflict name")
	}
	if _, _, ok := cat.Resolve("other"); ok {
		t.Errorf("the tool of a toolset refused as a duplicate is served")
	}
	infos := cat.Toolsets()
	if len(infos) != 3 || infos[1].Name != "down" || infos[1].Status.State != "failed" {
		t.Errorf("toolsets %+v, want a, down (failed), b", infos)
	}
	_ = b.Add(mk("late"))
	if _, ts, ok := cat.Resolve("late"); !ok || ts != "b" {
		t.Errorf("a toolset added with others is not followed: late not served")
	}
	changed = 0
	if err := cat.Add(context.Background(), one); err == nil || changed != 0 {
		t.Errorf("adding a name taken again: error %v, %d change notifications; want an error and none", err, changed)
	}
}

// closeRecorder is a toolset that records whether it was closed and
// whether its tools were still resolvable then.
type closeRecorder struct {
	*SimpleToolset
	cat            *Catalog
	closed, served bool
}

func (c *closeRecorder) Close() error {
	_, _, c.served = c.cat.Resolve("gone")
	c.closed = true
	return nil
}

func TestCatalogRemove(t *testing.T) {
	mk := func(name string) *Tool {
		return Must(NewTool(ToolDef{Name: name}, func(context.Context, *Call) (*Result, error) { return OkText(name), nil }))
	}
	cat := NewCatalog(nil)
	keep, _ := NewToolset("keep", mk("kept"))
	inner, _ := NewToolset("up", mk("gone"))
	up := &closeRecorder{SimpleToolset: inner, cat: cat}
	_ = cat.Add(context.Background(), keep)
	_ = cat.Add(context.Background(), up)
	changed := 0
	cat.OnChange(func() { changed++ })
	if err := cat.Remove("up"); err != nil {
		t.Fatal(err)
	}
	if _, _, ok := cat.Resolve("gone"); ok {
		t.Error("a removed toolset's tool still resolves")
	}
	if _, _, ok := cat.Resolve("kept"); !ok {
		t.Error("another toolset's tool is gone")
	}
	if !up.closed || up.served {
		t.Errorf("closed=%v, tools served while closing=%v; want closed after its tools were gone", up.closed, up.served)
	}
	if changed != 1 {
		t.Errorf("%d change notifications, want 1", changed)
	}
	if err := cat.Remove("up"); err == nil {
		t.Error("removing twice: no error")
	}
	// The name can be added again (a changed upstream is replaced).
	again, _ := NewToolset("up", mk("back"))
	if err := cat.Add(context.Background(), again); err != nil {
		t.Fatal(err)
	}
	if _, ts, ok := cat.Resolve("back"); !ok || ts != "up" {
		t.Error("the re-added toolset's tool does not resolve")
	}
}

// slowCloser is a toolset whose Close takes a while (an upstream giving
// its child the grace after SIGTERM), or fails.
type slowCloser struct {
	*SimpleToolset
	err error
}

func (c *slowCloser) Close() error {
	time.Sleep(2 * time.Second)
	return c.err
}

// TestCatalogClosesAtOnce: closing the catalog closes its toolsets
// concurrently (twenty upstreams' graces in turn would hold a shutdown up
// forty seconds) and reports every error, in order of addition.
func TestCatalogClosesAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cat := NewCatalog(nil)
		for i := range 20 {
			name := fmt.Sprintf("up%02d", i)
			inner, _ := NewToolset(name)
			var err error
			if i == 3 || i == 7 {
				err = errors.New("boom " + name)
			}
			if err := cat.Add(context.Background(), &slowCloser{SimpleToolset: inner, err: err}); err != nil {
				t.Fatal(err)
			}
		}
		start := time.Now()
		err := cat.Close()
		if took := time.Since(start); took != 2*time.Second {
			t.Errorf("closing 20 toolsets of 2 s each took %s, want 2s", took)
		}
		if err == nil || err.Error() != "closing toolset \"up03\": boom up03\nclosing toolset \"up07\": boom up07" {
			t.Errorf("errors: %v", err)
		}
	})
}

// introspectiveToolset's Unoffered asks the catalog it is in, as other
// code called back by the catalog may.
type introspectiveToolset struct {
	*SimpleToolset
	cat *Catalog
}

func (i *introspectiveToolset) Unoffered() map[string]string {
	return map[string]string{"hidden": fmt.Sprintf("one of %d toolsets", len(i.cat.Toolsets()))}
}

// TestCatalogAsksToolsetsOutsideItsLock: the catalog asks a toolset what
// it does not offer with its listing, not while it holds its own lock (a
// toolset that called back into the catalog there would deadlock it), and
// keeps the answer across later rebuilds.
func TestCatalogAsksToolsetsOutsideItsLock(t *testing.T) {
	cat := NewCatalog(nil)
	done := make(chan error, 1)
	go func() {
		inner, _ := NewToolset("intro")
		err := cat.Add(context.Background(), &introspectiveToolset{SimpleToolset: inner, cat: cat})
		if err == nil {
			other, _ := NewToolset("other")
			err = cat.Add(context.Background(), other) // a rebuild without asking intro again
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the catalog deadlocked asking a toolset what it does not offer")
	}
	if why := cat.WhyNotFound("hidden"); !strings.Contains(why, "one of 1 toolsets") {
		t.Errorf("WhyNotFound(hidden) = %q", why)
	}
}

// TestCatalogRenamedToolTakesNoName: a tool renamed for a conflict is never
// served under a name another tool has (a toolset may list any name,
// conflictName's included): every name is served once, and each call
// reaches the tool it names.
func TestCatalogRenamedToolTakesNoName(t *testing.T) {
	mk := func(name, out string) *Tool {
		return Must(NewTool(ToolDef{Name: name}, func(context.Context, *Call) (*Result, error) { return OkText(out), nil }))
	}
	shadow := conflictName("c", "write_file")
	a, _ := NewToolset("a", mk("write_file", "a"))
	b, _ := NewToolset("b", mk(shadow, "b"))
	c, _ := NewToolset("c", mk("write_file", "c"))
	cat := NewCatalog(nil)
	for _, ts := range []Toolset{a, b, c} {
		if err := cat.Add(context.Background(), ts); err != nil {
			t.Fatal(err)
		}
	}
	served := map[string]string{}
	for _, e := range cat.Entries() {
		if prev, dup := served[e.Tool.Name]; dup {
			t.Errorf("%s is served twice, by %s and %s", e.Tool.Name, prev, e.Toolset)
		}
		served[e.Tool.Name] = e.Toolset
	}
	if served["write_file"] != "a" || served[shadow] != "b" || served[shadow+"_2"] != "c" {
		t.Errorf("served: %v; want write_file by a, %s by b, %s_2 by c", served, shadow, shadow)
	}
}

// TestCatalogReplace: a toolset replaced by one of the same name serves
// the new tools at once (one change for the listeners, never a catalog
// without the toolset), and the old one is handed back, not closed.
func TestCatalogReplace(t *testing.T) {
	mk := func(out string) *SimpleToolset {
		tl, _ := NewDynamicTool(ToolDef{Name: "t"}, func(context.Context, map[string]any) (*Result, error) { return OkText(out), nil })
		ts, _ := NewToolset("ts", tl)
		return ts
	}
	cat := NewCatalog(nil)
	first := mk("old")
	if err := cat.Add(context.Background(), first); err != nil {
		t.Fatal(err)
	}
	changes := 0
	cat.OnChange(func() {
		changes++
		if _, _, ok := cat.Resolve("t"); !ok {
			t.Error("a listener saw the catalog without the replaced toolset's tool")
		}
	})
	old, err := cat.Replace(context.Background(), mk("new"))
	if err != nil || old != Toolset(first) {
		t.Fatalf("Replace: %v, old %v", err, old)
	}
	tl, _, _ := cat.Resolve("t")
	res, _ := tl.Handler()(context.Background(), &Call{})
	if res.OutputText() != "new" || changes != 1 {
		t.Errorf("after Replace: %q, %d changes", res.OutputText(), changes)
	}
	other, _ := NewToolset("nope", Must(NewDynamicTool(ToolDef{Name: "x"}, func(context.Context, map[string]any) (*Result, error) { return OkText(""), nil })))
	if _, err := cat.Replace(context.Background(), other); err == nil {
		t.Error("replacing a toolset that is not there succeeded")
	}
}

// TestCatalogNoTakeover (issue 9): a toolset that starts offering a name
// another toolset already serves (an upstream re-listing after
// list_changed) does not take it over, even when it comes first in
// toolset order: the owner keeps the name, the newcomer is renamed, and
// the conflict is listed.
func TestCatalogNoTakeover(t *testing.T) {
	mk := func(name string) *Tool {
		return Must(NewTool(ToolDef{Name: name}, func(context.Context, *Call) (*Result, error) { return OkText(name), nil }))
	}
	attacker, _ := NewToolset("attacker", mk("attacker__x"))
	victim, _ := NewToolset("victim", mk("victim__ok"))
	cat := NewCatalog(nil)
	_ = cat.Add(context.Background(), attacker) // first in toolset order
	_ = cat.Add(context.Background(), victim)
	_ = attacker.Add(mk("victim__ok")) // re-lists with the victim's name
	if _, ts, _ := cat.Resolve("victim__ok"); ts != "victim" {
		t.Fatalf("victim__ok is served by %q after the attacker re-listed", ts)
	}
	conf := cat.Conflicts()
	if len(conf) != 1 || conf[0].Kept != "victim" || conf[0].Renamed != "attacker" {
		t.Fatalf("conflicts %+v", conf)
	}
	if _, ts, ok := cat.Resolve(conf[0].ServedAs); !ok || ts != "attacker" {
		t.Errorf("the newcomer's tool is not served as %s", conf[0].ServedAs)
	}
	// When the owner is gone, the name is free for the other.
	_ = cat.Remove("victim")
	if _, ts, _ := cat.Resolve("victim__ok"); ts != "attacker" {
		t.Errorf("after the owner dropped it, victim__ok is served by %q", ts)
	}
}

// TestValidationNeverQuotesASecretValue: a validation message goes into
// the same record line as the redacted arguments, so at a location whose
// key looks like a secret's it says [REDACTED] for the value, and keeps
// quoting values elsewhere (they help the model fix its call).
func TestValidationNeverQuotesASecretValue(t *testing.T) {
	tool := Must(NewTool(ToolDef{Name: "deploy", InputSchema: json.RawMessage(`{"type":"object","properties":{
		"api_key":{"type":"string","pattern":"^sk-[a-z0-9]{8}$"},
		"Password":{"enum":["a","b"]},
		"token":{"const":"t0"},
		"credentials":{"type":"array","items":{"type":"object","properties":{"value":{"pattern":"^x$"}}}},
		"pin_token":{"type":"integer","maximum":10},
		"name":{"type":"string","pattern":"^[a-z]+$"},
		"mode":{"enum":["fast","slow"]}}}`)},
		func(context.Context, *Call) (*Result, error) { return OkText("ok"), nil }))
	draft7 := Must(NewTool(ToolDef{Name: "deploy7", InputSchema: json.RawMessage(`{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{
		"client_secret":{"type":"string","format":"email"},
		"email":{"type":"string","format":"email"}}}`)},
		func(context.Context, *Call) (*Result, error) { return OkText("ok"), nil }))
	for _, tc := range []struct {
		args string
		want string // the clause, whole
		leak string // what must not appear, "" if the value may
	}{
		{`{"api_key":"sk_live_HUNTER2SECRET"}`, `at '/api_key': [REDACTED] does not match pattern '^sk-[a-z0-9]{8}$'`, "HUNTER2"},
		{`{"Password":"hunter2"}`, `at '/Password': one of ["a","b"], got [REDACTED]`, "hunter2"},
		{`{"token":"tok-123"}`, `at '/token': value "t0", got [REDACTED]`, "tok-123"},
		{`{"credentials":[{"value":"deep-secret"}]}`, `at '/credentials/0/value': [REDACTED] does not match pattern '^x$'`, "deep-secret"},
		{`{"pin_token":123456}`, `at '/pin_token': maximum 10, got [REDACTED]`, "123456"},
		{`{"name":"Ann"}`, `at '/name': 'Ann' does not match pattern '^[a-z]+$'`, ""},
		{`{"mode":"warp"}`, `at '/mode': one of ["fast","slow"], got "warp"`, ""},
		// Draft 7 asserts formats.
		{`{"client_secret":"s3cr3t"}`, `at '/client_secret': [REDACTED] is not valid email`, "s3cr3t"},
		{`{"email":"s3cr3t"}`, `at '/email': 's3cr3t' is not valid email: missing @`, ""},
	} {
		args, err := DecodeArguments(json.RawMessage(tc.args))
		if err != nil {
			t.Fatal(err)
		}
		msg := tool.Validate(args)
		if msg == "" {
			msg = draft7.Validate(args)
		}
		if msg != tc.want {
			t.Errorf("%s: message %q, want %q", tc.args, msg, tc.want)
		}
		if tc.leak != "" && strings.Contains(msg, tc.leak) {
			t.Errorf("%s: message quotes the secret: %s", tc.args, msg)
		}
	}
}

// TestRepeatedMemberIsRefused: arguments that give a name twice in one
// object are refused as invalid, flat or nested, before anything runs:
// validation saw the last (as encoding/json keeps it), while a typed
// handler's decoding merged nested objects of both (a maximum of 10 let
// 5000 through), and an upstream handed the same bytes may read the first.
func TestRepeatedMemberIsRefused(t *testing.T) {
	type opts struct {
		Limit int `json:"limit,omitempty" jsonschema:"minimum=1,maximum=10"`
	}
	type params struct {
		Name string `json:"name,omitempty"`
		Opts opts   `json:"opts"`
	}
	ran := 0
	tool := Must(NewTypedTool(ToolDef{Name: "t"}, func(_ context.Context, p params) (*Result, error) {
		ran++
		return OkText("ran"), nil
	}))
	ts, _ := NewToolset("x", tool)
	cat := NewCatalog(nil)
	_ = cat.Add(context.Background(), ts)
	p := NewPipeline(&Options{Tools: cat})
	for _, tc := range []struct{ args, want string }{
		{`{"opts":{"limit":5000},"opts":{}}`, `at '/': the member "opts" appears more than once`},
		{`{"name":"a","name":"b"}`, `at '/': the member "name" appears more than once`},
		{`{"opts":{"limit":1,"limit":5000}}`, `at '/opts': the member "limit" appears more than once`},
		{`{"name":"a","opts":{"limit":3}}`, ""},
		{`{"name":"a:b","opts":{}}`, ""}, // a colon in a string is no member
	} {
		ran = 0
		res := p.Call(context.Background(), &Call{Name: "t", Arguments: json.RawMessage(tc.args)})
		switch {
		case tc.want == "" && (res.IsError || ran != 1):
			t.Errorf("%s: %s %s (ran %d), want it run", tc.args, res.Kind, res.Message, ran)
		case tc.want != "" && (res.Kind != KindInvalid || !strings.Contains(res.Message, tc.want) || ran != 0):
			t.Errorf("%s: %s %q (ran %d), want invalid arguments naming the repeat", tc.args, res.Kind, res.Message, ran)
		}
	}
}

// TestValidationNeverQuotesASecretInsideAValue: an enum or const failure
// quotes the value it got; when that value is an object or array holding
// a member named like a secret's, the message (recorded and logged next
// to the redacted arguments) must not quote the secret.
func TestValidationNeverQuotesASecretInsideAValue(t *testing.T) {
	tool := Must(NewTool(ToolDef{Name: "login", InputSchema: json.RawMessage(`{"type":"object","properties":{
		"auth":{"enum":[{"user":"a"}]},
		"creds":{"const":[{"user":"a"}]}}}`)},
		func(context.Context, *Call) (*Result, error) { return OkText("ok"), nil }))
	for _, args := range []string{
		`{"auth":{"user":"ann","password":"hunter2pw"}}`,
		`{"creds":[{"user":"ann","api_key":"hunter2pw"}]}`,
	} {
		a, err := DecodeArguments(json.RawMessage(args))
		if err != nil {
			t.Fatal(err)
		}
		msg := tool.Validate(a)
		if msg == "" || strings.Contains(msg, "hunter2pw") || !strings.Contains(msg, "ann") {
			t.Errorf("%s: message %q quotes the secret (or not the rest)", args, msg)
		}
	}
}

// TestUnknownPropertyNamesWhatTheObjectTakes: an unknown property's clause
// names the properties its object takes, wherever that object is in the
// schema (nested, in an array, behind a $ref), so that a model that
// guessed a name learns the right one.
func TestUnknownPropertyNamesWhatTheObjectTakes(t *testing.T) {
	tool := Must(NewTool(ToolDef{Name: "deploy", InputSchema: json.RawMessage(`{"type":"object","additionalProperties":false,
		"properties":{
			"env":{"type":"string"},
			"opts":{"type":"object","additionalProperties":false,"properties":{"dry_run":{"type":"boolean"},"force":{"type":"boolean"}}},
			"steps":{"type":"array","items":{"$ref":"#/$defs/step"}},
			"labels":{"type":"object","additionalProperties":false,"properties":{"team":{}},"patternProperties":{"^x-":{}}},
			"none":{"type":"object","additionalProperties":false}},
		"$defs":{"step":{"type":"object","additionalProperties":false,"properties":{"run":{"type":"string"}}}}}`)},
		func(context.Context, *Call) (*Result, error) { return OkText("ok"), nil }))
	for _, tc := range []struct{ args, want string }{
		{`{"environment":"prod"}`, `at '/': unknown properties not allowed: 'environment' (takes 'env', 'labels', 'none', 'opts', 'steps')`},
		{`{"opts":{"dryrun":true}}`, `at '/opts': unknown properties not allowed: 'dryrun' (takes 'dry_run', 'force')`},
		{`{"steps":[{"run":"a"},{"cmd":"b"}]}`, `at '/steps/1': unknown properties not allowed: 'cmd' (takes 'run')`},
		{`{"labels":{"owner":"me"}}`, `at '/labels': unknown properties not allowed: 'owner' (takes 'team' and names that match its patternProperties)`},
		{`{"none":{"a":1}}`, `at '/none': unknown properties not allowed: 'a'`},
	} {
		args, err := DecodeArguments(json.RawMessage(tc.args))
		if err != nil {
			t.Fatal(err)
		}
		if msg := tool.Validate(args); msg != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.args, msg, tc.want)
		}
	}
}

// TestMissingPropertySaysWhatItIs: a missing required property's clause
// says what it is (its enum's values, else its type) with the first
// sentence of its description, in nested objects too; a property the
// schema says nothing of is named alone.
func TestMissingPropertySaysWhatItIs(t *testing.T) {
	tool := Must(NewTool(ToolDef{Name: "deploy", InputSchema: json.RawMessage(`{"type":"object",
		"required":["env","count"],
		"properties":{
			"env":{"enum":["staging","prod"],"description":"Where to deploy (e.g. prod). Staging first."},
			"count":{"type":"integer","description":"How many replicas."},
			"opts":{"type":"object","required":["reason"],"properties":{"reason":{"type":"string","description":"Why, for the \"audit\" log."}}},
			"bare":{"type":"object","required":["x"]}}}`)},
		func(context.Context, *Call) (*Result, error) { return OkText("ok"), nil }))
	for _, tc := range []struct{ args, want string }{
		{`{"count":1}`, `at '/': missing required property 'env' (one of "staging", "prod", "Where to deploy (e.g. prod).")`},
		{`{}`, `at '/': missing required properties 'env', 'count' ('env': one of "staging", "prod", "Where to deploy (e.g. prod)."; 'count': an integer, "How many replicas.")`},
		{`{"env":"prod","count":1,"opts":{}}`, `at '/opts': missing required property 'reason' (a string, "Why, for the 'audit' log.")`},
		{`{"env":"prod","count":1,"bare":{}}`, `at '/bare': missing required property 'x'`},
	} {
		args, err := DecodeArguments(json.RawMessage(tc.args))
		if err != nil {
			t.Fatal(err)
		}
		if msg := tool.Validate(args); msg != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.args, msg, tc.want)
		}
	}
}
