package jsonschema

import (
	"errors"
	"strings"
	"sync"
	"testing"
)

// metaschemasChecked: TestToolgateMetaschemasOnFirstUse has run in this
// process.
var metaschemasChecked bool

// TestToolgateMetaschemasOnFirstUse checks toolgate's patch (a
// draft's metaschema compiled when first needed, not at init): nothing is
// compiled before a schema is, each draft's metaschema is compiled by the
// first schema of that draft (however many goroutines compile at once),
// and a schema is checked against it as before: a valid one compiles, an
// invalid one is refused.
//
// It must stay the only test in this package that compiles a schema: the
// drafts are package state. For the same reason it runs once per process:
// with -count above 1, the later runs are skipped.
func TestToolgateMetaschemasOnFirstUse(t *testing.T) {
	if metaschemasChecked {
		t.Skip("the drafts' metaschemas were compiled by an earlier run in this process")
	}
	metaschemasChecked = true
	drafts := map[string]*Draft{"draft-04": Draft4, "draft-06": Draft6, "draft-07": Draft7, "2019-09": Draft2019, "2020-12": Draft2020}
	for name, d := range drafts {
		if d.sch != nil || d.vocabs != nil {
			t.Fatalf("%s's metaschema compiled before any schema", name)
		}
	}

	compile := func(draftURL, schema string) error {
		c := NewCompiler()
		doc, err := UnmarshalJSON(strings.NewReader(`{"$schema":"` + draftURL + `",` + schema[1:]))
		if err != nil {
			t.Fatal(err)
		}
		if err := c.AddResource("mem://s.json", doc); err != nil {
			return err
		}
		_, err = c.Compile("mem://s.json")
		return err
	}

	// 2020-12 first, from 16 goroutines at once: only its metaschema.
	var wg sync.WaitGroup
	errs := make([]error, 16)
	for i := range errs {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			if i%2 == 0 {
				errs[i] = compile(Draft2020.url, `{"type":"object","properties":{"a":{"minimum":1}}}`)
			} else if compile(Draft2020.url, `{"type":"object","properties":{"a":{"minimum":"one"}}}`) == nil {
				errs[i] = errors.New("an invalid schema compiled")
			}
		}(i)
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("goroutine %d: %v", i, err)
		}
	}
	if Draft2020.sch == nil || Draft2020.vocabs["applicator"] == nil {
		t.Fatal("2020-12's metaschema not compiled by a 2020-12 schema")
	}
	for name, d := range drafts {
		if d != Draft2020 && d.sch != nil {
			t.Fatalf("%s's metaschema compiled by a 2020-12 schema", name)
		}
	}

	// Every other draft: a valid schema compiles, an invalid one does not.
	for name, d := range drafts {
		if err := compile(d.url, `{"type":"object","properties":{"a":{"maxLength":2}}}`); err != nil {
			t.Errorf("%s: a valid schema: %v", name, err)
		}
		if err := compile(d.url, `{"type":"object","properties":{"a":{"maxLength":-2}}}`); err == nil {
			t.Errorf("%s: a schema with maxLength -2 compiled", name)
		}
		if d.sch == nil {
			t.Errorf("%s's metaschema not compiled by a %s schema", name, name)
		}
	}
}
