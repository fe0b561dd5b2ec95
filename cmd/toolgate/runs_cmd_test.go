package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolgate/toolgate/gateway"
	"github.com/toolgate/toolgate/gateway/runs"
)

// lockedBuffer is an io.Writer read while written.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestRunsTail: runs tail follows a live run's calls, survives its
// tools.jsonl being cut short (it panicked), and prints the calls recorded
// as the run stops before it ends (it could miss them).
func TestRunsTail(t *testing.T) {
	dir := t.TempDir()
	r, err := runs.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	record := func(id string) {
		c := &gateway.Call{ID: id, Name: "echo", Started: time.Now()}
		_ = r.CallStarted(c)
		r.CallFinished(c, gateway.OkText(id), time.Millisecond)
	}
	var stdout, stderr lockedBuffer
	done := make(chan error, 1)
	go func() {
		done <- runsTail(&env{ctx: context.Background(), stdout: &stdout, stderr: &stderr}, dir, r.ID())
	}()
	waitOut := func(want string) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); !strings.Contains(stdout.String(), want); time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("runs tail did not print %s; stdout:\n%s\nstderr:\n%s", want, stdout.String(), stderr.String())
			}
		}
	}
	record("call-1")
	record("call-2")
	waitOut("call-2")
	if err := os.Truncate(filepath.Join(r.Dir(), "logs", "tools.jsonl"), 0); err != nil {
		t.Fatal(err)
	}
	record("call-3")
	waitOut("call-3")
	record("call-last") // recorded as the run stops
	r.Close()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("runs tail did not end with the run")
	}
	if !strings.Contains(stdout.String(), "call-last") {
		t.Errorf("the run's last call is missing:\n%s", stdout.String())
	}
}

// TestRunsShowCountsItsTable: runs show's header counts the calls its table
// lists, and names the lines of a torn or hand-edited tools.jsonl it skips
// (it counted lines: 3 calls over a table of 2); runs list counts alike.
func TestRunsShowCountsItsTable(t *testing.T) {
	dir := t.TempDir()
	r, err := runs.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"call-1", "call-2"} {
		c := &gateway.Call{ID: id, Name: "echo", Started: time.Now()}
		_ = r.CallStarted(c)
		r.CallFinished(c, gateway.OkText(id), time.Millisecond)
	}
	r.Close()
	f, err := os.OpenFile(filepath.Join(r.Dir(), "logs", "tools.jsonl"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"call_id":"call-3","tool":"ec` + "\n") // torn
	f.Close()
	var stdout, stderr strings.Builder
	e := &env{ctx: context.Background(), stdout: &stdout, stderr: &stderr}
	if err := runsShow(e, dir, r.ID(), false); err != nil {
		t.Fatal(err)
	}
	out := stdout.String()
	if rows := strings.Count(out, "call-"); rows != 2 || !strings.Contains(out, " 2 calls, 0 errors (1 unreadable line skipped: not whole JSON records)\n") {
		t.Errorf("runs show: %d calls in the table; want the header to say 2 and the skipped line:\n%s", rows, out)
	}
	stdout.Reset()
	if err := runsList(e, dir, false); err != nil {
		t.Fatal(err)
	}
	if fields := strings.Fields(strings.Split(stdout.String(), "\n")[1]); len(fields) < 4 || fields[len(fields)-4] != "2" {
		t.Errorf("runs list: want 2 calls:\n%s", stdout.String())
	}
}

// TestRunsShowOneCall: the header counts in words that agree ("1 call,
// 1 error", not "1 calls, 1 errors").
func TestRunsShowOneCall(t *testing.T) {
	dir := t.TempDir()
	r, err := runs.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	c := &gateway.Call{ID: "call-1", Name: "echo", Started: time.Now()}
	_ = r.CallStarted(c)
	r.CallFinished(c, gateway.Error("it failed", "Failed"), time.Millisecond)
	r.Close()
	var stdout, stderr strings.Builder
	e := &env{ctx: context.Background(), stdout: &stdout, stderr: &stderr}
	if err := runsShow(e, dir, r.ID(), false); err != nil {
		t.Fatal(err)
	}
	if out := stdout.String(); !strings.Contains(out, " 1 call, 1 error\n") {
		t.Errorf("runs show of one failed call: want the header to say \"1 call, 1 error\":\n%s", out)
	}
}

// TestRunsOpenShowsTheRecordAsWritten: `runs open` shows a call's record
// as its line was written, not as decoding it into a map would: a number
// beyond float64's precision, the members' order and a name given twice
// (the arguments a refusal records) stay as the caller sent them. A
// failed call shows its errors.jsonl message too, in open and in show:
// why it failed.
func TestRunsOpenShowsTheRecordAsWritten(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	t.Setenv("XDG_STATE_HOME", filepath.Join(dir, "state"))
	main := func(args ...string) (int, string, string) {
		var stdout, stderr bytes.Buffer
		code := Main(context.Background(), args, strings.NewReader(""), &stdout, &stderr)
		return code, stdout.String(), stderr.String()
	}
	args := `{"path":"a.txt","limit":12345678901234567890123,"path":"b.txt"}`
	code, _, errOut := main("call", "read_file", args)
	if code != exitFailure {
		t.Fatalf("call: exit %d: %s", code, errOut)
	}
	id := regexp.MustCompile(`call (\S+) recorded`).FindStringSubmatch(errOut)
	if id == nil {
		t.Fatalf("no call id in %q", errOut)
	}

	code, out, errOut := main("runs", "open", "latest", id[1][:13])
	if code != exitOK {
		t.Fatalf("runs open: exit %d: %s", code, errOut)
	}
	for _, want := range []string{
		"\"arguments\": {\n      \"path\": \"a.txt\",\n      \"limit\": 12345678901234567890123,\n      \"path\": \"b.txt\"\n    },",
		"\"status\": \"invalid_arguments\"",
		"error (errors.jsonl):\n  Invalid arguments for tool `read_file`: at '/': the member \"path\" appears more than once",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("runs open lacks %q:\n%s", want, out)
		}
	}

	// runs show gives a failed call's message where others give their brief.
	code, out, errOut = main("runs", "show", "latest")
	if code != exitOK || !strings.Contains(out, "invalid_arguments") || !strings.Contains(out, `Invalid arguments for tool `+"`read_file`"+`: at '/': the member "path" appears more than once`) {
		t.Errorf("runs show: exit %d %s\n%s", code, errOut, out)
	}
	// Without a run, as runs tail: the latest.
	if code, bare, errOut := main("runs", "show"); code != exitOK || bare != out {
		t.Errorf("runs show without a run: exit %d %s\n%s\nwant the latest's:\n%s", code, errOut, bare, out)
	}

	code, out, errOut = main("runs", "open", "latest", id[1], "--json")
	if code != exitOK {
		t.Fatalf("runs open --json: exit %d: %s", code, errOut)
	}
	var opened struct {
		Record, Error json.RawMessage
		Events        []json.RawMessage
	}
	if err := json.Unmarshal([]byte(out), &opened); err != nil {
		t.Fatalf("runs open --json: %v\n%s", err, out)
	}
	var compact bytes.Buffer
	_ = json.Compact(&compact, opened.Record)
	if !strings.Contains(compact.String(), `"arguments":`+args) {
		t.Errorf("--json record %s, want its arguments as sent: %s", compact.String(), args)
	}
	var failure struct{ Message string }
	if err := json.Unmarshal(opened.Error, &failure); err != nil || !strings.Contains(failure.Message, "appears more than once") {
		t.Errorf("--json error %s (%v)", opened.Error, err)
	}
	if len(opened.Events) != 2 {
		t.Errorf("--json events %s", opened.Events)
	}

	// A call that succeeded has no error section.
	if err := os.WriteFile("a.txt", []byte("hi\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, _, errOut = main("call", "write_file", `{"path":"c.txt","content":"x"}`)
	id = regexp.MustCompile(`call (\S+) recorded`).FindStringSubmatch(errOut)
	if id == nil {
		t.Fatalf("no call id in %q", errOut)
	}
	if _, out, _ = main("runs", "open", "latest", id[1]); strings.Contains(out, "error (errors.jsonl)") || !strings.Contains(out, `"status": "ok"`) {
		t.Errorf("runs open of a call that succeeded:\n%s", out)
	}
	if _, out, _ = main("runs", "open", "latest", id[1], "--json"); strings.Contains(out, `"error"`) {
		t.Errorf("runs open --json of a call that succeeded has an error:\n%s", out)
	}
}
