package memory_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolgate/toolgate/gateway"
	"github.com/toolgate/toolgate/toolsets/memory"
)

// Seed 002, acceptance criterion 11 ("Memory write mode 显式，默认
// candidate"): the mode is explicit, parsed strictly, and defaults to
// candidate.
func TestAC11WriteModeExplicitDefaultCandidate(t *testing.T) {
	for in, want := range map[string]memory.Mode{
		"": memory.ModeCandidate, "candidate": memory.ModeCandidate, " External ": memory.ModeExternal, "disabled": memory.ModeDisabled,
	} {
		got, err := memory.ParseMode(in)
		if err != nil || got != want {
			t.Errorf("ParseMode(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"enabled", "true", "off", "candidates", "extern"} {
		_, err := memory.ParseMode(bad)
		if err == nil || !strings.Contains(err.Error(), "disabled, candidate (the default), external") {
			t.Errorf("ParseMode(%q) error %v, want one listing the modes", bad, err)
		}
	}
	if memory.DefaultMode != memory.ModeCandidate {
		t.Errorf("DefaultMode = %q", memory.DefaultMode)
	}
	// A toolset built without a mode is in candidate mode.
	e := newEnv(t, "")
	if e.ts.Mode() != memory.ModeCandidate {
		t.Errorf("default toolset mode %q", e.ts.Mode())
	}
	if _, err := memory.New(&memory.Options{Mode: "bogus", Store: e.store, CandidatesPath: e.cands}); err == nil {
		t.Error("New accepted mode bogus")
	}
	if _, err := memory.New(&memory.Options{Store: e.store}); err == nil || !strings.Contains(err.Error(), "CandidatesPath") {
		t.Errorf("candidate mode without a candidates path: %v", err)
	}
	if _, err := memory.New(&memory.Options{Mode: memory.ModeExternal}); err == nil {
		t.Error("New accepted no store")
	}
	if _, err := memory.New(nil); err == nil || !strings.Contains(err.Error(), "no store") {
		t.Errorf("nil options: %v", err)
	}
}

// AC 11, disabled mode: write_memory is not offered, Unoffered says why,
// and recall still works.
func TestModeDisabled(t *testing.T) {
	e := newEnv(t, memory.ModeDisabled)
	if got := toolNames(t, e.ts); !slices.Equal(got, []string{"recall_memory"}) {
		t.Errorf("tools %v, want only recall_memory", got)
	}
	un := e.ts.Unoffered()
	if un["write_memory"] != "memory writes are disabled (memory.write_mode: disabled)" || len(un) != 1 {
		t.Errorf("Unoffered() = %v", un)
	}
	un["x"] = "y" // a copy: the toolset's map is unchanged
	if len(e.ts.Unoffered()) != 1 {
		t.Error("Unoffered returned the toolset's own map")
	}
	res, _ := e.call("write_memory", map[string]any{"content": "x", "scope": "p"})
	if !res.IsError || res.Kind != gateway.KindNotFound {
		t.Errorf("calling write_memory in disabled mode: %+v", res)
	}
	if _, err := os.Stat(e.cands); !os.IsNotExist(err) {
		t.Errorf("candidate file exists in disabled mode: %v", err)
	}
	m := e.commit("an existing memory about zebras", "p")
	_, out := e.recall(map[string]any{"query": "zebras", "scope": "p"})
	if len(out.Hits) != 1 || out.Hits[0].ID != m.ID || !out.Hits[0].Committed {
		t.Errorf("recall in disabled mode: %+v", out)
	}
	for _, mode := range []memory.Mode{memory.ModeCandidate, memory.ModeExternal} {
		if un := newEnv(t, mode).ts.Unoffered(); len(un) != 0 {
			t.Errorf("%s mode: Unoffered() = %v", mode, un)
		}
	}
}

// AC 11, candidate mode (the default): write_memory appends a line to the
// run archive, the store is untouched, and recall returns the candidate
// marked as such.
func TestModeCandidate(t *testing.T) {
	e := newEnv(t, memory.ModeCandidate)
	res, callID := e.call("write_memory", map[string]any{"content": "The staging database is called orion.", "scope": "proj", "tags": []string{"db", " staging ", "db"}})
	if res.IsError {
		t.Fatal(res.Message)
	}
	for _, want := range []string{"candidate", "awaiting review", "not in the memory store", "toolgate memory promote " + testRunID} {
		if !strings.Contains(res.Message, want) {
			t.Errorf("message %q lacks %q", res.Message, want)
		}
	}
	lines := e.candidateLines()
	if len(lines) != 1 {
		t.Fatalf("%d candidate lines, want 1", len(lines))
	}
	l := lines[0]
	for _, k := range []string{"id", "content", "scope", "tags", "created", "call_id", "session"} {
		if _, ok := l[k]; !ok {
			t.Errorf("candidate line lacks %q: %v", k, l)
		}
	}
	if l["call_id"] != callID || l["session"] != "session-1" || l["scope"] != "proj" || l["content"] != "The staging database is called orion." {
		t.Errorf("candidate line %v (call %s)", l, callID)
	}
	if tags, _ := json.Marshal(l["tags"]); string(tags) != `["db","staging"]` {
		t.Errorf("tags %s", tags)
	}
	if _, err := time.Parse(time.RFC3339Nano, l["created"].(string)); err != nil {
		t.Errorf("created: %v", err)
	}
	if !strings.Contains(res.OutputText(), l["id"].(string)) {
		t.Errorf("output %q lacks the candidate id", res.OutputText())
	}
	if fi, err := os.Stat(e.cands); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("candidate file: %v %v", fi, err)
	}
	if n := e.count(""); n != 0 {
		t.Errorf("candidate mode wrote %d memories to the store", n)
	}

	committed := e.commit("The production database is called vega.", "proj")
	rres, out := e.recall(map[string]any{"query": "staging database", "scope": "proj"})
	if len(out.Hits) != 2 {
		t.Fatalf("hits %+v, want the candidate and the committed memory", out.Hits)
	}
	var cand memory.HitJSON
	for _, h := range out.Hits {
		if h.ID == l["id"] {
			cand = h
		}
	}
	if cand.ID == "" || cand.Committed || cand.Content != "The staging database is called orion." || cand.Score != 1 {
		t.Errorf("candidate hit %+v", cand)
	}
	text := rres.OutputText()
	if !strings.Contains(text, "[candidate] id="+cand.ID) || !strings.Contains(text, "[committed] id="+committed.ID) {
		t.Errorf("recall text lacks the marks:\n%s", text)
	}
	if !strings.Contains(rres.Message, "1 committed, 1 candidate of this run awaiting review") {
		t.Errorf("recall message %q", rres.Message)
	}
	// The candidate matches both terms, the committed one only "database":
	// the candidate comes first.
	if out.Hits[0].ID != cand.ID {
		t.Errorf("order %+v: the candidate matches more terms and should be first", out.Hits)
	}
	// Scopes isolate candidates too.
	if _, out := e.recall(map[string]any{"query": "staging", "scope": "other"}); len(out.Hits) != 0 {
		t.Errorf("other scope returned %+v", out.Hits)
	}
	// A candidate that matches no term is not returned.
	if _, out := e.recall(map[string]any{"query": "kubernetes", "scope": "proj"}); len(out.Hits) != 0 {
		t.Errorf("unrelated query returned %+v", out.Hits)
	}
}

// TestWriteWhatIsSaved: write_memory of what the scope holds already, a
// committed memory or (in candidate mode) a candidate of this run, saves
// nothing, says which memory has it, and succeeds; another scope's copy
// does not count.
func TestWriteWhatIsSaved(t *testing.T) {
	t.Run("candidate", func(t *testing.T) {
		e := newEnv(t, memory.ModeCandidate)
		first := e.write("Builds run at night.", "ops")
		candID, _ := first.Extras["candidate_id"].(string)
		committed := e.commit("Deploys happen on Tuesdays.", "ops")
		for _, tc := range []struct{ content, what string }{
			{"Builds run at night.", "candidate " + candID},
			{"Deploys happen on Tuesdays.", "memory " + committed.ID},
		} {
			res := e.write(tc.content, "ops", "new-tag")
			if !strings.Contains(res.Message, "Nothing new was saved: "+tc.what+` in scope "ops" has this content already`) || res.Extras["duplicate"] != true {
				t.Errorf("write of %q: %s %v", tc.content, res.Message, res.Extras)
			}
		}
		e.write("Builds run at night.", "ci")
		if n := len(e.candidateLines()); n != 2 {
			t.Errorf("%d candidate lines, want 2 (ops, ci)", n)
		}
	})
	t.Run("external", func(t *testing.T) {
		e := newEnv(t, memory.ModeExternal)
		first := e.write("Builds run at night.", "ops")
		id, _ := first.Extras["memory_id"].(string)
		again := e.write("Builds run at night.", "ops")
		if !strings.Contains(again.Message, "Nothing new was saved: memory "+id) || again.Extras["memory_id"] != id {
			t.Errorf("second write: %s %v", again.Message, again.Extras)
		}
		if n := e.count("ops"); n != 1 {
			t.Errorf("%d memories, want 1", n)
		}
	})
}

// Candidates rank after committed hits when they match as many terms, and
// an empty query merges both by recency.
func TestCandidateRankingTies(t *testing.T) {
	e := newEnv(t, memory.ModeCandidate)
	// Committed a minute ago: older than the candidate, whatever the clock's
	// resolution.
	committed, err := e.store.Write(context.Background(), memory.Memory{Content: "alpha beta in the store", Scope: "p", Created: time.Now().Add(-time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	e.write("alpha beta as a candidate", "p")
	_, out := e.recall(map[string]any{"query": "alpha beta", "scope": "p"})
	if len(out.Hits) != 2 || out.Hits[0].ID != committed.ID || out.Hits[1].Committed {
		t.Errorf("tie: %+v, want the committed memory first", out.Hits)
	}
	// Empty query: newest first, so the candidate leads.
	_, out = e.recall(map[string]any{"scope": "p"})
	if len(out.Hits) != 2 || out.Hits[0].Committed || !out.Hits[1].Committed {
		t.Errorf("empty query: %+v, want the newer candidate first", out.Hits)
	}
	// The limit bounds the merged list.
	_, out = e.recall(map[string]any{"scope": "p", "limit": 1})
	if len(out.Hits) != 1 {
		t.Errorf("limit 1: %d hits", len(out.Hits))
	}
}

// Seed 002, acceptance criterion 4 ("Memory tools 使用 external
// contract"), external mode: write_memory commits to the store, and
// recall returns it committed.
func TestAC4ModeExternal(t *testing.T) {
	e := newEnv(t, memory.ModeExternal)
	res := e.write("Use pnpm, not npm, in the web repo.", "proj", "tooling")
	if !strings.Contains(res.Message, "Committed memory") {
		t.Errorf("message %q", res.Message)
	}
	if n := e.count("proj"); n != 1 {
		t.Errorf("store has %d memories, want 1", n)
	}
	if _, err := os.Stat(e.cands); !os.IsNotExist(err) {
		t.Errorf("external mode wrote a candidate file: %v", err)
	}
	rres, out := e.recall(map[string]any{"query": "pnpm", "scope": "proj"})
	if len(out.Hits) != 1 || !out.Hits[0].Committed || out.Hits[0].Content != "Use pnpm, not npm, in the web repo." ||
		!slices.Equal(out.Hits[0].Tags, []string{"tooling"}) || out.Hits[0].Score <= 0 {
		t.Errorf("recall: %+v", out)
	}
	if !strings.Contains(rres.OutputText(), "[committed]") || strings.Contains(rres.OutputText(), "[candidate]") {
		t.Errorf("text %q", rres.OutputText())
	}
}

// AC 4: the tools depend only on the Store contract; any implementation
// (here an in-memory fake, not SQLite) serves them, and the toolset closes
// the store it was given.
func TestAC4ExternalContract(t *testing.T) {
	fake := &fakeStore{}
	ts, err := memory.New(&memory.Options{Mode: memory.ModeExternal, Store: fake})
	if err != nil {
		t.Fatal(err)
	}
	cat := gateway.NewCatalog(nil)
	if err := cat.Add(context.Background(), ts); err != nil {
		t.Fatal(err)
	}
	p := gateway.NewPipeline(&gateway.Options{Tools: cat})
	res := p.Call(context.Background(), &gateway.Call{Name: "write_memory", Arguments: json.RawMessage(`{"content":"via the contract","scope":"s"}`)})
	if res.IsError || fake.writes != 1 {
		t.Fatalf("write through the contract: %+v, %d writes", res, fake.writes)
	}
	id, _ := res.Extras["memory_id"].(string)
	res = p.Call(context.Background(), &gateway.Call{Name: "recall_memory", Arguments: json.RawMessage(`{"query":"contract","scope":"s"}`)})
	if res.IsError || id == "" || !strings.Contains(res.OutputText(), "[committed] id="+id) {
		t.Errorf("recall through the contract: %s %s", res.OutputText(), res.Message)
	}
	if err := ts.Close(); err != nil || !fake.closed {
		t.Errorf("Close: %v, store closed %v", err, fake.closed)
	}
	if err := ts.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

func TestToolMetadata(t *testing.T) {
	e := newEnv(t, memory.ModeCandidate)
	recall, _, _ := e.cat.Resolve("recall_memory")
	write, _, _ := e.cat.Resolve("write_memory")
	if recall == nil || write == nil {
		t.Fatal("tools missing")
	}
	if !slices.Equal(recall.Permissions.Capabilities, []string{"memory.read"}) {
		t.Errorf("recall capabilities %v", recall.Permissions.Capabilities)
	}
	if h := recall.Permissions.Resolved(); !h.ReadOnly || h.Destructive || !h.Idempotent || h.OpenWorld {
		t.Errorf("recall hints %+v", h)
	}
	if !slices.Equal(write.Permissions.Capabilities, []string{"memory.write"}) {
		t.Errorf("write capabilities %v", write.Permissions.Capabilities)
	}
	if h := write.Permissions.Resolved(); h.ReadOnly || h.Destructive || h.Idempotent || h.OpenWorld {
		t.Errorf("write hints %+v", h)
	}
	if len(recall.OutputSchema) == 0 {
		t.Error("recall has no output schema")
	}
	var schema struct {
		Properties map[string]map[string]any `json:"properties"`
		Required   []string                  `json:"required"`
	}
	if err := json.Unmarshal(recall.InputSchema, &schema); err != nil {
		t.Fatal(err)
	}
	if schema.Properties["limit"]["maximum"] != 50.0 || schema.Properties["limit"]["default"] != 5.0 {
		t.Errorf("limit schema %v", schema.Properties["limit"])
	}
	if !slices.Equal(schema.Required, []string{"scope"}) {
		t.Errorf("required %v", schema.Required)
	}
}

func TestRecallValidation(t *testing.T) {
	e := newEnv(t, memory.ModeCandidate)
	for _, tc := range []struct {
		args map[string]any
		want string
	}{
		{map[string]any{"scope": "p", "limit": 51}, "at '/limit': maximum 50, got 51"},
		{map[string]any{"scope": "p", "limit": 0}, "at '/limit': minimum 1, got 0"},
		{map[string]any{"query": "x"}, "missing required property 'scope'"},
		{map[string]any{"scope": "a b"}, "at '/scope'"},
		{map[string]any{"scope": ""}, "at '/scope': minimum length 1, got 0"},
		{map[string]any{"scope": strings.Repeat("s", 65)}, "at '/scope': maximum length 64, got 65"},
		{map[string]any{"scope": "p", "extra": 1}, "unknown properties not allowed: 'extra'"},
	} {
		res, _ := e.call("recall_memory", tc.args)
		if !res.IsError || res.Kind != gateway.KindInvalid || !strings.Contains(res.Message, tc.want) {
			t.Errorf("recall(%v): %s %q, want invalid_arguments with %q", tc.args, res.Kind, res.Message, tc.want)
		}
	}
	res, _ := e.call("write_memory", map[string]any{"content": "x", "scope": "p", "tags": []string{strings.Repeat("t", 65)}})
	if res.Kind != gateway.KindInvalid || !strings.Contains(res.Message, "at '/tags/0': maximum length 64") {
		t.Errorf("long tag: %s %q", res.Kind, res.Message)
	}
	// Hostile queries are plain words to the store.
	e.commit("NEAR the edge", "p")
	for _, q := range []string{`"`, `*`, `NEAR(`, `OR`, `-`, `:`, `🚀`, ``} {
		if res, _ := e.call("recall_memory", map[string]any{"query": q, "scope": "p"}); res.IsError {
			t.Errorf("query %q: %s", q, res.Message)
		}
	}
}

func TestRecallOutputFormat(t *testing.T) {
	e := newEnv(t, memory.ModeExternal)
	long := "first line about format\nsecond line\n" + strings.Repeat("é", 3000) // 6000+ bytes
	m := e.commit(long, "p", "a", "b")
	res, out := e.recall(map[string]any{"query": "format", "scope": "p"})
	text := res.OutputText()
	header := fmt.Sprintf("1. [committed] id=%s scope=p tags=a,b created=%s\n", m.ID, m.Created.UTC().Format(time.RFC3339))
	if !strings.HasPrefix(text, header) {
		t.Errorf("text starts %q, want %q", text[:min(len(text), 200)], header)
	}
	if !strings.Contains(text, "\n   first line about format\n   second line\n") {
		t.Errorf("content not indented:\n%s", text[:300])
	}
	if len(text) > 2<<10+400 || !strings.Contains(text, fmt.Sprintf("[content cut at 2 KiB of %d bytes", len(long))) {
		t.Errorf("text of %d bytes; cut note missing?", len(text))
	}
	if !strings.Contains(text, "é") || strings.Contains(text, "\ufffd") {
		t.Error("cut split a character")
	}
	if len(out.Hits) != 1 || out.Hits[0].Content != long || !out.Hits[0].Created.Equal(m.Created) {
		t.Errorf("structured content not whole: %d bytes", len(out.Hits[0].Content))
	}
	res, out = e.recall(map[string]any{"query": "nothing matches", "scope": "p"})
	if len(out.Hits) != 0 || !strings.Contains(res.OutputText(), `No memories in scope "p" matching "nothing matches"`) || string(res.Structured) != `{"hits":[]}` {
		t.Errorf("no hits: %q %s", res.OutputText(), res.Structured)
	}
}

func TestWriteLimits(t *testing.T) {
	for _, mode := range []memory.Mode{memory.ModeCandidate, memory.ModeExternal} {
		e := newEnv(t, mode, func(o *memory.Options) { o.MaxContentBytes = 100 })
		res, _ := e.call("write_memory", map[string]any{"content": strings.Repeat("x", 101), "scope": "p"})
		if !res.IsError || res.Kind != gateway.KindToolError || !strings.Contains(res.Message, "over the 100 B (100 bytes) limit") {
			t.Errorf("%s: oversized content: %s %q", mode, res.Kind, res.Message)
		}
		res, _ = e.call("write_memory", map[string]any{"content": "  \n ", "scope": "p"})
		if !res.IsError || !strings.Contains(res.Message, "empty") {
			t.Errorf("%s: blank content: %q", mode, res.Message)
		}
		e.write(strings.Repeat("x", 100), "p")
		if n := e.count("") + len(e.candidateLines()); n != 1 {
			t.Errorf("%s: %d memories saved, want 1", mode, n)
		}
	}
	e := newEnv(t, memory.ModeCandidate)
	res, _ := e.call("write_memory", map[string]any{"content": strings.Repeat("x", 16<<10+1), "scope": "p"})
	if !strings.Contains(res.Message, "16 KiB") {
		t.Errorf("default limit: %q", res.Message)
	}
}

// Candidate writes from many concurrent calls each produce one whole line.
func TestConcurrentCandidateWrites(t *testing.T) {
	e := newEnv(t, memory.ModeCandidate)
	var wg sync.WaitGroup
	for i := range 40 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e.write(fmt.Sprintf("concurrent candidate %d %s", i, strings.Repeat("y", 3000)), "p")
		}()
	}
	wg.Wait()
	cands, bad, err := memory.ReadCandidates(e.cands)
	if err != nil || len(bad) != 0 || len(cands) != 40 {
		t.Errorf("%d candidates, bad %v, err %v", len(cands), bad, err)
	}
	callIDs := map[string]bool{}
	for _, c := range cands {
		callIDs[c.CallID] = true
	}
	if len(callIDs) != 40 {
		t.Errorf("%d distinct call IDs, want 40", len(callIDs))
	}
}

// TestCandidateAppendAfterUnterminatedLine: a write after a last line that
// lacks its newline (torn by a failed or interrupted write, or a complete
// line whose newline an editor dropped) starts a line of its own, so the
// new candidate, and a complete previous one, are neither lost nor glued
// together.
func TestCandidateAppendAfterUnterminatedLine(t *testing.T) {
	for name, tail := range map[string]string{
		"torn":     `{"id":"torn","content":"cut sh`,
		"complete": `{"id":"kept","content":"kept memory","scope":"p","tags":[],"created":"2026-01-01T00:00:00Z"}`,
	} {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t, memory.ModeCandidate)
			if err := os.WriteFile(e.cands, []byte(tail), 0o600); err != nil {
				t.Fatal(err)
			}
			e.write("the deploy key rotates monthly", "p")
			cands, bad, err := memory.ReadCandidates(e.cands)
			if err != nil {
				t.Fatal(err)
			}
			var contents []string
			for _, c := range cands {
				contents = append(contents, c.Content)
			}
			want := []string{"the deploy key rotates monthly"}
			if name == "complete" {
				want = []string{"kept memory", "the deploy key rotates monthly"}
			}
			if strings.Join(contents, "|") != strings.Join(want, "|") {
				t.Errorf("candidates %q, want %q (bad lines %v)", contents, want, bad)
			}
			if wantBad := len(want) == 1; (len(bad) == 1) != wantBad {
				t.Errorf("bad lines %v", bad)
			}
			if _, out := e.recall(map[string]any{"query": "deploy", "scope": "p"}); len(out.Hits) != 1 {
				t.Errorf("recall after the write: %+v", out.Hits)
			}
		})
	}
}

// TestRecallUnspacedScriptCandidates: a candidate in Chinese is found by a
// word inside it, as the store finds it once promoted.
func TestRecallUnspacedScriptCandidates(t *testing.T) {
	e := newEnv(t, memory.ModeCandidate)
	e.write("我喜欢猫和狗", "p")
	e.commit("猫很可爱", "p")
	_, out := e.recall(map[string]any{"query": "猫", "scope": "p"})
	var got []string
	for _, h := range out.Hits {
		got = append(got, fmt.Sprintf("%s committed=%v", h.Content, h.Committed))
	}
	if len(got) != 2 || got[0] != "猫很可爱 committed=true" || got[1] != "我喜欢猫和狗 committed=false" {
		t.Errorf("recall 猫: %q", got)
	}
}
