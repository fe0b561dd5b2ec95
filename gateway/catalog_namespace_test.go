package gateway

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
)

// nsToolset is a toolset whose tools are named in a namespace, as an
// upstream with a prefix.
type nsToolset struct {
	*SimpleToolset
	ns string
}

func (t nsToolset) Namespace() string { return t.ns }

// A tool of a toolset without a namespace (an upstream with prefix: "")
// whose name falls in another toolset's namespace is not served, whatever
// the order, also when the toolset that owns the namespace comes later (a
// reload that adds it) and the tool was served until then; it is served
// again once that toolset is gone. It is never renamed into the
// namespace either (kg__wipe_<hash> would still match kg__*).
func TestCatalogRefusesToolInForeignNamespace(t *testing.T) {
	mk := func(name string) *Tool {
		return Must(NewTool(ToolDef{Name: name}, func(context.Context, *Call) (*Result, error) { return OkText(name), nil }))
	}
	ctx := context.Background()
	flat, _ := NewToolset("flat", mk("kg__wipe"), mk("hello"), mk("kgx__y"))
	inner, _ := NewToolset("knowledge", mk("kg__wipe"), mk("kg__read"))
	kg := nsToolset{inner, "kg"}
	cat := NewCatalog(nil)
	_ = cat.Add(ctx, flat)
	if _, ts, _ := cat.Resolve("kg__wipe"); ts != "flat" {
		t.Fatalf("before kg: kg__wipe served by %q", ts)
	}
	var told []Conflict
	cat.OnConflict(func(c Conflict) { told = append(told, c) })
	_ = cat.Add(ctx, kg) // a reload adds it
	check := func(when string) {
		t.Helper()
		if _, ts, _ := cat.Resolve("kg__wipe"); ts != "knowledge" {
			t.Errorf("%s: kg__wipe served by %q, want knowledge", when, ts)
		}
		for _, e := range cat.Entries() {
			if e.Toolset == "flat" && strings.HasPrefix(e.Tool.Name, "kg__") {
				t.Errorf("%s: flat's tool served as %s, in kg's namespace", when, e.Tool.Name)
			}
		}
		if _, ts, _ := cat.Resolve("hello"); ts != "flat" {
			t.Errorf("%s: hello served by %q", when, ts)
		}
		if _, ts, _ := cat.Resolve("kgx__y"); ts != "flat" {
			t.Errorf("%s: kgx__y (not in kg's namespace) served by %q", when, ts)
		}
		want := Conflict{Name: "kg__wipe", Kept: "knowledge", Renamed: "flat", Namespace: "kg"}
		if c := cat.Conflicts(); len(c) != 1 || c[0] != want {
			t.Errorf("%s: conflicts %+v, want %+v", when, c, want)
		}
	}
	check("kg added after")
	if len(told) != 1 {
		t.Errorf("conflict listeners told %+v, want the refusal once", told)
	}

	// Not served by kg either: the caller is told why.
	_ = inner
	only, _ := NewToolset("knowledge", mk("kg__read"))
	if _, err := cat.Replace(ctx, nsToolset{only, "kg"}); err != nil {
		t.Fatal(err)
	}
	if _, _, ok := cat.Resolve("kg__wipe"); ok {
		t.Error("kg__wipe served once kg no longer lists it")
	}
	if why := cat.WhyNotFound("kg__wipe"); !strings.Contains(why, "namespace kg__ of knowledge") || !strings.Contains(why, "flat") {
		t.Errorf("WhyNotFound: %q", why)
	}

	// In either order from the start.
	for _, order := range [][]Toolset{{flat, kg}, {kg, flat}} {
		cat := NewCatalog(nil)
		for _, ts := range order {
			_ = cat.Add(ctx, ts)
		}
		if _, ts, _ := cat.Resolve("kg__wipe"); ts != "knowledge" {
			t.Errorf("%s first: kg__wipe served by %q", order[0].Name(), ts)
		}
		if n := len(cat.Entries()); n != 4 {
			t.Errorf("%s first: %d tools served, want 4", order[0].Name(), n)
		}
	}

	// The namespace's toolset gone, the name is flat's again.
	if err := cat.Remove("knowledge"); err != nil {
		t.Fatal(err)
	}
	if _, ts, _ := cat.Resolve("kg__wipe"); ts != "flat" {
		t.Errorf("after kg left: kg__wipe served by %q", ts)
	}
	if c := cat.Conflicts(); len(c) != 0 {
		t.Errorf("after kg left: conflicts %+v", c)
	}
	// /healthz and toolgate tools --json show none as [], not null.
	if b, _ := json.Marshal(cat.Conflicts()); string(b) != "[]" {
		t.Errorf("no conflicts in JSON: %s, want []", b)
	}
}

// Two toolsets of one namespace (an upstream and a disabled entry of the
// same prefix, which the catalog also holds): each one's own tools are
// served, whichever comes last; neither's namespace is foreign to it.
func TestCatalogSharedNamespaceIsNotForeign(t *testing.T) {
	mk := func(name string) *Tool {
		return Must(NewTool(ToolDef{Name: name}, func(context.Context, *Call) (*Result, error) { return OkText(name), nil }))
	}
	ctx := context.Background()
	on, _ := NewToolset("kg", mk("kg__read"))
	off, _ := NewToolset("kg-old") // disabled: lists nothing
	cat := NewCatalog(nil)
	_ = cat.Add(ctx, nsToolset{on, "kg"})
	_ = cat.Add(ctx, nsToolset{off, "kg"})
	if _, ts, ok := cat.Resolve("kg__read"); !ok || ts != "kg" {
		t.Errorf("kg__read of kg, with a second toolset of namespace kg added after it: served by %q (%v)", ts, ok)
	}
	if c := cat.Conflicts(); len(c) != 0 {
		t.Errorf("conflicts: %+v", c)
	}
}
