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
