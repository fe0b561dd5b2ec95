package memory_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/toolsets/memory"
)

func appendRaw(t *testing.T, path, s string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(s); err != nil {
		t.Fatal(err)
	}
}

// The candidates of a run are promoted into the store after review: a dry
// run writes nothing, a real run promotes each valid candidate once, a
// second run promotes nothing, and a torn last line is reported by line
// number without stopping the others (AC 11: candidate writes only reach
// the store through this explicit step).
func TestPromote(t *testing.T) {
	e := newEnv(t, memory.ModeCandidate)
	e.write("Deploys happen on Tuesdays.", "ops", "deploy")
	e.write("The on-call rotation changes on Mondays.", "ops")
	e.write("Alice prefers short answers.", "user.alice")
	appendRaw(t, e.cands, "this is not json\n")
	appendRaw(t, e.cands, `{"id":"torn-1","content":"cut sh`) // a crash mid-write
	ctx := context.Background()

	dry, err := memory.Promote(ctx, e.store, e.cands, e.runID, true)
	if err != nil {
		t.Fatal(err)
	}
	if !dry.DryRun || dry.Candidates != 3 || dry.Promoted != 3 || dry.AlreadyPresent != 0 || dry.Invalid != 2 || len(dry.Outcomes) != 5 {
		t.Errorf("dry run report %+v", dry)
	}
	if n := e.count(""); n != 0 {
		t.Errorf("dry run wrote %d memories", n)
	}
	for i, o := range dry.Outcomes[:3] {
		if o.Outcome != memory.OutcomeWouldPromote || o.Line != i+1 || o.SourceID != e.runID+"/"+o.CandidateID || o.MemoryID != "" {
			t.Errorf("dry outcome %d: %+v", i, o)
		}
	}
	if o := dry.Outcomes[3]; o.Outcome != memory.OutcomeInvalid || o.Line != 4 || o.Torn {
		t.Errorf("bad JSON line outcome %+v", o)
	}
	if o := dry.Outcomes[4]; o.Outcome != memory.OutcomeInvalid || o.Line != 5 || !o.Torn || !strings.Contains(o.Error, "torn last line") {
		t.Errorf("torn line outcome %+v", o)
	}
	var text strings.Builder
	if err := dry.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Dry run", "nothing was written", "would promote", "line 5", "torn last line", "3 candidates: 3 would be promoted, 0 already present; 2 invalid lines skipped."} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("dry run text lacks %q:\n%s", want, text.String())
		}
	}

	rep, err := memory.Promote(ctx, e.store, e.cands, e.runID, false)
	if err != nil {
		t.Fatal(err)
	}
	if rep.DryRun || rep.Promoted != 3 || rep.AlreadyPresent != 0 || rep.Invalid != 2 {
		t.Errorf("promote report %+v", rep)
	}
	if n := e.count("ops"); n != 2 {
		t.Errorf("ops has %d memories, want 2", n)
	}
	if n := e.count("user.alice"); n != 1 {
		t.Errorf("user.alice has %d memories, want 1", n)
	}
	cands, _, _ := memory.ReadCandidates(e.cands)
	for i, o := range rep.Outcomes[:3] {
		m, ok, err := e.store.FindSource(ctx, e.runID+"/"+cands[i].ID)
		if o.Outcome != memory.OutcomePromoted || !ok || err != nil || m.ID != o.MemoryID || m.Content != cands[i].Content ||
			!m.Created.Equal(cands[i].Created) || m.Scope != cands[i].Scope {
			t.Errorf("outcome %+v, stored %+v %v %v", o, m, ok, err)
		}
	}
	// The promoted memories are now committed: recall in this (still
	// running) run returns each once, committed, although the candidate
	// file still holds them.
	_, out := e.recall(map[string]any{"query": "Tuesdays", "scope": "ops"})
	if len(out.Hits) != 1 || !out.Hits[0].Committed {
		t.Errorf("after promotion, matching: %+v", out.Hits)
	}
	_, out = e.recall(map[string]any{"scope": "ops"})
	if len(out.Hits) != 2 || !out.Hits[0].Committed || !out.Hits[1].Committed {
		t.Errorf("after promotion, recent: %+v", out.Hits)
	}

	again, err := memory.Promote(ctx, e.store, e.cands, e.runID, false)
	if err != nil {
		t.Fatal(err)
	}
	if again.Promoted != 0 || again.AlreadyPresent != 3 || e.count("") != 3 {
		t.Errorf("second promotion %+v; store has %d", again, e.count(""))
	}
	for i, o := range again.Outcomes[:3] {
		if o.Outcome != memory.OutcomeAlreadyPresent || o.MemoryID != rep.Outcomes[i].MemoryID {
			t.Errorf("second promotion outcome %+v, first %+v", o, rep.Outcomes[i])
		}
	}
	// A dry run after promotion knows they are present (the store is a
	// SourceLookup).
	dry2, err := memory.Promote(ctx, e.store, e.cands, e.runID, true)
	if err != nil || dry2.AlreadyPresent != 3 || dry2.Promoted != 0 {
		t.Errorf("dry run after promotion: %+v %v", dry2, err)
	}
	text.Reset()
	if err := again.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "3 candidates: 0 promoted, 3 already present; 2 invalid lines skipped.") {
		t.Errorf("text:\n%s", text.String())
	}
	// The report is JSON for --json.
	raw, err := json.Marshal(again)
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{`"run_id":`, `"dry_run":false`, `"already_present":3`, `"outcomes":[`, `"line":5`, `"torn":true`, `"candidate_id":`, `"memory_id":`} {
		if !strings.Contains(string(raw), key) {
			t.Errorf("report JSON lacks %s: %s", key, raw)
		}
	}
}

func TestPromoteErrors(t *testing.T) {
	e := newEnv(t, memory.ModeCandidate)
	ctx := context.Background()
	_, err := memory.Promote(ctx, e.store, filepath.Join(t.TempDir(), "none.jsonl"), "run-x", false)
	if err == nil || !os.IsNotExist(unwrapAll(err)) || !strings.Contains(err.Error(), "run run-x has no memory candidates file") {
		t.Errorf("missing file: %v", err)
	}
	e.write("x", "p")
	for _, bad := range []string{"", "a/b", "a b"} {
		if _, err := memory.Promote(ctx, e.store, e.cands, bad, false); err == nil {
			t.Errorf("run ID %q accepted", bad)
		}
	}
	// Duplicate candidate lines (same id) are promoted once.
	data, _ := os.ReadFile(e.cands)
	appendRaw(t, e.cands, string(data))
	rep, err := memory.Promote(ctx, e.store, e.cands, "run-y", true)
	if err != nil || rep.Promoted != 1 || rep.AlreadyPresent != 1 {
		t.Errorf("dry run with a duplicate: %+v %v", rep, err)
	}
	rep, err = memory.Promote(ctx, e.store, e.cands, "run-y", false)
	if err != nil || rep.Promoted != 1 || rep.AlreadyPresent != 1 || e.count("") != 1 {
		t.Errorf("promote with a duplicate: %+v %v", rep, err)
	}
	// A store without SourceLookup: a dry run cannot tell, a real run can.
	fake := &fakeStore{}
	rep, _ = memory.Promote(ctx, fake, e.cands, "run-z", false)
	rep2, _ := memory.Promote(ctx, fake, e.cands, "run-z", false)
	if rep.Promoted != 1 || rep2.Promoted != 0 || rep2.AlreadyPresent != 2 || len(fake.mems) != 1 {
		t.Errorf("fake store: %+v then %+v, %d stored", rep, rep2, len(fake.mems))
	}
}

func unwrapAll(err error) error {
	for {
		u, ok := err.(interface{ Unwrap() error })
		if !ok {
			return err
		}
		next := u.Unwrap()
		if next == nil {
			return err
		}
		err = next
	}
}

func TestReadCandidatesTolerant(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.jsonl")
	good := `{"id":"a","content":"one","scope":"s","tags":[],"created":"2026-01-01T00:00:00Z"}`
	content := good + "\n" +
		"\n" + // blank: skipped
		`{"id":"b","content":"two","scope":"bad scope","tags":[],"created":"2026-01-01T00:00:00Z"}` + "\n" +
		`{"content":"no id","scope":"s"}` + "\n" +
		`{"id":"c","content":"three","scope":"s","created":"2026-01-01T00:00:00Z"} trailing` + "\n" +
		strings.Replace(good, `"a"`, `"d"`, 1) + "\n" +
		`{"id":"e","content":"cut`
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	cands, bad, err := memory.ReadCandidates(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(cands) != 2 || cands[0].ID != "a" || cands[0].Line != 1 || cands[1].ID != "d" || cands[1].Line != 6 {
		t.Errorf("candidates %+v", cands)
	}
	var lines []int
	var torn []bool
	for _, e := range bad {
		le, ok := e.(*memory.LineError)
		if !ok {
			t.Fatalf("%T", e)
		}
		lines = append(lines, le.Line)
		torn = append(torn, le.Torn)
	}
	if len(lines) != 4 || lines[0] != 3 || lines[1] != 4 || lines[2] != 5 || lines[3] != 7 || torn[2] || !torn[3] {
		t.Errorf("bad lines %v torn %v: %v", lines, torn, bad)
	}
	// A complete last line without its newline is accepted.
	if err := os.WriteFile(path, []byte(good), 0o600); err != nil {
		t.Fatal(err)
	}
	if cands, bad, _ := memory.ReadCandidates(path); len(cands) != 1 || len(bad) != 0 {
		t.Errorf("unterminated complete line: %v %v", cands, bad)
	}
}

// TestPromoteDuplicates: a candidate that says what a memory of its scope
// says, committed before or on an earlier line of the run, is reported as a
// duplicate of it and adds nothing, in a dry run as in a promotion.
func TestPromoteDuplicates(t *testing.T) {
	e := newEnv(t, memory.ModeCandidate)
	ctx := context.Background()
	committed := e.commit("Deploys happen on Tuesdays.", "ops")
	// Written by hand: write_memory itself refuses to save these again.
	for i, c := range []struct{ content, scope string }{
		{"Deploys happen on Tuesdays.", "ops"},   // the committed memory
		{"Builds run at night.", "ops"},          // new
		{"Builds run at night.", "ops"},          // line 2 again
		{"Deploys happen on Tuesdays.", "infra"}, // another scope: new
	} {
		appendRaw(t, e.cands, fmt.Sprintf(`{"id":"c%d","content":%q,"scope":%q,"created":"2026-01-01T00:00:00Z"}`+"\n", i+1, c.content, c.scope))
	}
	for _, dry := range []bool{true, false} {
		rep, err := memory.Promote(ctx, e.store, e.cands, e.runID, dry)
		if err != nil {
			t.Fatal(err)
		}
		got := make([]string, len(rep.Outcomes))
		for i, o := range rep.Outcomes {
			got[i] = o.Outcome
		}
		want := []string{memory.OutcomeDuplicate, memory.OutcomePromoted, memory.OutcomeDuplicate, memory.OutcomePromoted}
		if dry {
			want[1], want[3] = memory.OutcomeWouldPromote, memory.OutcomeWouldPromote
		}
		if !slices.Equal(got, want) || rep.Duplicates != 2 || rep.Promoted != 2 || rep.Outcomes[0].MemoryID != committed.ID {
			t.Errorf("dry run %v: outcomes %v (want %v), report %+v", dry, got, want, rep)
		}
		if !dry && rep.Outcomes[2].MemoryID != rep.Outcomes[1].MemoryID {
			t.Errorf("line 3 repeats memory %s, want line 2's %s", rep.Outcomes[2].MemoryID, rep.Outcomes[1].MemoryID)
		}
		var text strings.Builder
		if err := rep.WriteText(&text); err != nil {
			t.Fatal(err)
		}
		for _, w := range []string{"candidate c1 says what memory " + committed.ID, "0 already present, 2 duplicates."} {
			if !strings.Contains(text.String(), w) {
				t.Errorf("dry run %v: the report lacks %q:\n%s", dry, w, text.String())
			}
		}
	}
	if n := e.count("ops"); n != 2 {
		t.Errorf("ops has %d memories, want 2", n)
	}
}
