package runs

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/gateway"
)

// TestManifestAndBrowse (issue 10): run.json has the command, config,
// first client, stop time and status; List is newest first with counts;
// Prunable never names a live run; artifacts create archive/ when used.
func TestManifestAndBrowse(t *testing.T) {
	dir := t.TempDir()
	var ids []string
	for i := range 3 {
		r, err := Open(dir, &Options{Version: "v1", Command: []string{"toolgate", "serve", "--token=abc"}, Config: "/etc/toolgate.yaml"})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, r.ID())
		call := &gateway.Call{ID: "c1", Name: "echo", Client: "claude-code 1.0", Arguments: json.RawMessage(`{"text":"x"}`), Started: time.Now()}
		_ = r.CallStarted(call)
		r.CallFinished(call, gateway.Errorf("boom"), time.Millisecond)
		if i == 0 {
			if _, err := r.SaveArtifact(call, "out.txt", "text/plain", []byte("data")); err != nil {
				t.Fatal(err)
			}
		}
		if i < 2 {
			r.SetStatus("signal")
			if err := r.Close(); err != nil {
				t.Fatal(err)
			}
		} else {
			defer r.Close() // live: this process
		}
	}
	list, err := List(dir)
	if err != nil || len(list) != 3 {
		t.Fatalf("List: %v %v", list, err)
	}
	if list[0].ID != ids[2] || list[2].ID != ids[0] {
		t.Errorf("not newest first: %s %s %s", list[0].ID, list[1].ID, list[2].ID)
	}
	old := list[2]
	if old.Client != "claude-code 1.0" || old.Config != "/etc/toolgate.yaml" || old.Status != "signal" || old.Stopped == "" ||
		len(old.Command) != 3 || old.Command[2] != "--token=[REDACTED]" || old.Calls != 1 || old.Errors != 1 || old.Artifacts != 1 || old.Live {
		t.Errorf("summary of a stopped run: %+v", old)
	}
	if !list[0].Live || list[0].Stopped != "" {
		t.Errorf("the open run is not live: %+v", list[0])
	}
	errs, _ := Records(filepath.Join(old.Dir, "logs", "errors.jsonl"))
	if len(errs) != 1 || errs[0].Fields["client"] != "claude-code 1.0" || errs[0].Fields["arguments"] == nil {
		t.Errorf("errors.jsonl line: %v", errs)
	}
	if _, err := os.Stat(filepath.Join(list[1].Dir, "archive")); err == nil {
		t.Error("archive/ exists in a run that saved no artifact")
	}
	gone, _ := Prunable(dir, 0, 0, time.Now())
	if len(gone) != 2 {
		t.Errorf("keep 0 prunes %d runs, want the 2 stopped ones (never the live one)", len(gone))
	}
	gone, _ = Prunable(dir, 1, 0, time.Now())
	if len(gone) != 1 || gone[0].ID != ids[0] {
		t.Errorf("keep 1: %v", gone)
	}
	if got, err := Resolve(dir, "latest"); err != nil || filepath.Base(got) != ids[2] {
		t.Errorf("latest: %s %v", got, err)
	}
	for _, s := range gone {
		if err := Remove(dir, s); err != nil {
			t.Fatal(err)
		}
	}
	if list, _ := List(dir); len(list) != 2 {
		t.Errorf("%d runs after removing one", len(list))
	}
}

// TestRecordsSkipsOnlyTheBadLines: a line that is not JSON, one longer
// than Records reads, or a last line not whole yet is skipped; the
// records around it are all read.
func TestRecordsSkipsOnlyTheBadLines(t *testing.T) {
	for _, tc := range []struct {
		name   string
		middle string
	}{
		{"not JSON", "{\"torn\n"},
		{"over the longest line", `{"brief":"` + strings.Repeat("x", maxRecordLine) + "\"}\n"},
		{"just under it", `{"brief":"` + strings.Repeat("x", maxRecordLine-14) + "\"}\n"},
		{"last, not whole yet", ""},
	} {
		path := filepath.Join(t.TempDir(), "tools.jsonl")
		data := `{"call_id":"a"}` + "\n" + tc.middle + `{"call_id":"b"}` + "\n"
		want := 2
		if tc.middle == "" {
			data += `{"call_id":"c"`
		} else if len(tc.middle) <= maxRecordLine && strings.HasSuffix(tc.middle, "}\n") {
			want = 3
		}
		if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		recs, err := Records(path)
		if err != nil || len(recs) != want || recs[0].Fields["call_id"] != "a" || recs[len(recs)-1].Fields["call_id"] != "b" {
			t.Errorf("%s: %d records, err %v; want %d, a first and b last", tc.name, len(recs), err, want)
		}
	}
}

// TestSummaryCountsWhatRecordsReads: a run's call and error counts are the
// records Records yields, never its lines: a torn or hand-edited line is
// counted as skipped instead (runs show's header said more calls than its
// table listed). A last line not ended yet is neither: it may be being
// written.
func TestSummaryCountsWhatRecordsReads(t *testing.T) {
	for _, tc := range []struct {
		name        string
		tools       string
		calls, skip int
	}{
		{"whole", `{"call_id":"a"}` + "\n" + `{"call_id":"b"}` + "\n", 2, 0},
		{"torn line", `{"call_id":"a"}` + "\n" + `{"call_id":"b","sta` + "\n" + `{"call_id":"c"}` + "\n", 2, 1},
		{"hand-edited", `{"call_id":"a"}` + "\n" + "# checked by hand\n" + "null\n" + "[1]\n" + "\n", 1, 3},
		{"over the longest line", `{"brief":"` + strings.Repeat("x", maxRecordLine) + "\"}\n" + `{"call_id":"b"}` + "\n", 1, 1},
		{"last, not whole yet", `{"call_id":"a"}` + "\n" + `{"call_id":"b"`, 1, 0},
		{"last, whole without its newline", `{"call_id":"a"}` + "\n" + `{"call_id":"b"}`, 2, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "20261124T025132Z-def8a7")
			if err := os.MkdirAll(filepath.Join(dir, "logs"), 0o755); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(dir, "logs", "tools.jsonl")
			if err := os.WriteFile(path, []byte(tc.tools), 0o644); err != nil {
				t.Fatal(err)
			}
			// errors.jsonl: one record, one torn line.
			if err := os.WriteFile(filepath.Join(dir, "logs", "errors.jsonl"), []byte(`{"call_id":"a"}`+"\n{\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			recs, err := Records(path)
			if err != nil {
				t.Fatal(err)
			}
			s := Summarize(dir)
			if s.Calls != len(recs) || s.Calls != tc.calls || s.Errors != 1 || s.Skipped != tc.skip+1 {
				t.Errorf("calls %d, errors %d, skipped %d; Records yields %d; want %d calls, 1 error, %d skipped", s.Calls, s.Errors, s.Skipped, len(recs), tc.calls, tc.skip+1)
			}
			for _, r := range recs {
				if r.Fields == nil || !json.Valid(r.Line) {
					t.Errorf("Records yields a record without its members or its line: %+v", r)
				}
			}
		})
	}
}

// TestLiveIsTheRunsLock: a run is live while it holds its directory's
// lock, whatever its run.json says (not written yet, emptied), and over
// once it no longer does, whatever process now has its PID (a container's
// gateway is PID 1, which always exists). A run of a version without the
// lock is told by its PID, as before.
func TestLiveIsTheRunsLock(t *testing.T) {
	if !runtimeHasFlock {
		t.Skip("no flock(2) here")
	}
	dir := t.TempDir()
	r, err := Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if s := Summarize(r.Dir()); !s.Live || !s.Locked {
		t.Errorf("an open run: live %v, locked %v", s.Live, s.Locked)
	}
	if err := os.WriteFile(filepath.Join(r.Dir(), "run.json"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if !Summarize(r.Dir()).Live {
		t.Error("an open run with an empty run.json is not live (prune would remove it)")
	}
	r.Close()
	if Summarize(r.Dir()).Live {
		t.Error("a closed run is live")
	}
	fake := func(name string, m Manifest) string {
		d := filepath.Join(dir, name)
		_ = os.MkdirAll(d, 0o755)
		b, _ := json.Marshal(m)
		_ = os.WriteFile(filepath.Join(d, "run.json"), b, 0o644)
		return d
	}
	// Killed (no stop written), and its PID now another live process's.
	if Summarize(fake("20260101T000000Z-aaaaaa", Manifest{PID: os.Getpid(), Locked: true})).Live {
		t.Error("a killed run whose PID is alive again counts as live")
	}
	if !Summarize(fake("20260101T000000Z-bbbbbb", Manifest{PID: os.Getpid()})).Live {
		t.Error("a run without the lock (an older version) with a live PID is not live")
	}
}

// A Follower yields each record once, as Records reads them: a line not
// ended yet waits for its newline (or the run's end), and a file cut short
// is read again from its start, also when it was written again past where
// the follower was.
func TestFollower(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tools.jsonl")
	write := func(flag int, s string) {
		t.Helper()
		f, err := os.OpenFile(path, flag|os.O_WRONLY|os.O_CREATE, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteString(s); err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	f := NewFollower(path)
	next := func(final bool, want string, wantRestart bool) {
		t.Helper()
		recs, restarted, err := f.Next(final)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, r := range recs {
			ids = append(ids, r.String("id"))
		}
		if got := strings.Join(ids, ","); got != want || restarted != wantRestart {
			t.Errorf("Next(%v) = %q restarted %v, want %q %v", final, got, restarted, want, wantRestart)
		}
	}
	next(false, "", false) // no file yet
	write(os.O_APPEND, `{"id":"a"}`+"\n"+`{"id":"b"}`+"\n"+`{"id":"c`)
	next(false, "a,b", false)
	write(os.O_APPEND, `"}`+"\n"+"torn\n"+`{"id":"d"}`+"\n")
	next(false, "c,d", false)
	next(false, "", false)
	// Truncated and written again, longer than before.
	write(os.O_TRUNC, `{"id":"e-long-enough-to-pass-the-old-offset-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"}`+"\n")
	next(false, "e-long-enough-to-pass-the-old-offset-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx", true)
	// Truncated shorter.
	write(os.O_TRUNC, `{"id":"f"}`+"\n")
	next(false, "f", true)
	// The run is over: its last line without a newline is a record.
	write(os.O_APPEND, `{"id":"g"}`)
	next(false, "", false)
	next(true, "g", false)
}

// A run that closes keeps its records' counts in run.json, and `runs
// list` (Summarize) takes them from there while each file is the one
// counted: the same size, modified at the same time. A file changed since
// is counted again.
func TestClosedRunKeepsItsCounts(t *testing.T) {
	r := closedRun(t, t.TempDir(), 5, func(i int) bool { return i%2 == 0 })
	m, _ := Live(r.Dir())
	if m.Counted == nil || m.Counted.Tools == nil || m.Counted.Tools.Records != 5 || m.Counted.Errors == nil || m.Counted.Errors.Records != 3 {
		t.Fatalf("run.json counts: %+v", m.Counted)
	}
	if s := Summarize(r.Dir()); s.Calls != 5 || s.Errors != 3 || s.Skipped != 0 {
		t.Errorf("summary: %d calls, %d errors, %d skipped; want 5, 3, 0", s.Calls, s.Errors, s.Skipped)
	}

	// The kept count is used, not the file: the same size and time with
	// other bytes (no record at all) still reads 5.
	tools := filepath.Join(r.Dir(), "logs", "tools.jsonl")
	b, err := os.ReadFile(tools)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(tools, []byte(strings.Repeat(" ", len(b))), 0o644); err != nil {
		t.Fatal(err)
	}
	kept := time.Unix(0, m.Counted.Tools.Modified)
	if err := os.Chtimes(tools, kept, kept); err != nil {
		t.Fatal(err)
	}
	if s := Summarize(r.Dir()); s.Calls != 5 {
		t.Errorf("with the kept count: %d calls, want 5", s.Calls)
	}

	// A file changed since is counted: one record appended to the
	// original lines reads 6.
	if err := os.WriteFile(tools, append(b, `{"call_id":"by-hand"}`+"\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	if s := Summarize(r.Dir()); s.Calls != 6 {
		t.Errorf("after an edit: %d calls, want 6", s.Calls)
	}
	if recs, _ := Records(tools); len(recs) != 6 {
		t.Errorf("Records reads %d, want 6", len(recs))
	}
}

// BenchmarkSummarize: `runs list` of a closed run of 4,000 calls, with the
// counts kept in run.json (kept) and counted from the files (counted: a
// run closed by a version that kept none, or killed).
func BenchmarkSummarize(b *testing.B) {
	r := closedRun(b, b.TempDir(), 4000, nil)
	b.Run("kept", func(b *testing.B) {
		for b.Loop() {
			if s := Summarize(r.Dir()); s.Calls != 4000 {
				b.Fatalf("%d calls", s.Calls)
			}
		}
	})
	b.Run("counted", func(b *testing.B) {
		m, _ := Live(r.Dir())
		m.Counted = nil
		buf, _ := json.Marshal(m)
		if err := os.WriteFile(filepath.Join(r.Dir(), "run.json"), buf, 0o644); err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			if s := Summarize(r.Dir()); s.Calls != 4000 {
				b.Fatalf("%d calls", s.Calls)
			}
		}
	})
}

// closedRun opens a run in dir, records calls calls of echo (those failed
// says failed as errors) and closes it.
func closedRun(tb testing.TB, dir string, calls int, failed func(i int) bool) *Run {
	tb.Helper()
	r, err := Open(dir, &Options{Version: "v1"})
	if err != nil {
		tb.Fatal(err)
	}
	for i := range calls {
		call := &gateway.Call{ID: fmt.Sprintf("c%d", i), Name: "echo", Arguments: json.RawMessage(`{"text":"hello, toolgate"}`), Started: time.Now()}
		_ = r.CallStarted(call)
		res := gateway.OkText("hello, toolgate").WithBrief("Echoed 15 bytes")
		if failed != nil && failed(i) {
			res = gateway.Errorf("boom")
		}
		r.CallFinished(call, res, time.Millisecond)
	}
	if err := r.Close(); err != nil {
		tb.Fatal(err)
	}
	return r
}

// TestResolve: a run is found by its id, a unique prefix of it, "latest",
// or its random part (or a unique prefix of that); an ambiguous or
// unknown reference is an error that says which.
func TestResolve(t *testing.T) {
	dir := t.TempDir()
	ids := []string{"20261121T201530Z-4f2a9c", "20261121T201530Z-4f7d01", "20261121T201531Z-bcc835"}
	for _, id := range ids {
		if err := os.MkdirAll(filepath.Join(dir, id), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct{ ref, want, err string }{
		{ref: ids[0], want: ids[0]},
		{ref: "latest", want: ids[2]},
		{ref: "20261121T201531", want: ids[2]},
		{ref: "bcc835", want: ids[2]},
		{ref: "bc", want: ids[2]},
		{ref: "4f2", want: ids[0]},
		{ref: "4f", err: `"4f" matches 2 runs`},
		{ref: "20261121T201530Z", err: `matches 2 runs`},
		{ref: "zzz", err: `no run "zzz"`},
	} {
		got, err := Resolve(dir, tc.ref)
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%s: %s %v, want the error %s", tc.ref, got, err, tc.err)
		case tc.err == "" && (err != nil || filepath.Base(got) != tc.want):
			t.Errorf("%s: %s %v, want %s", tc.ref, got, err, tc.want)
		}
	}
}
