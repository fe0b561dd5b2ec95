package main

import (
	"context"
	"os"
	"path/filepath"
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
