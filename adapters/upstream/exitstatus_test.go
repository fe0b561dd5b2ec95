package upstream

import (
	"context"
	"strings"
	"testing"
)

// TestExitAtOnceReportsExitStatus: a child that exits as soon as it
// starts (a missing module, a bad flag) fails its connection attempt with
// its exit status, every time, never with a bare "transport closed" (the
// end of its stdout may be seen before its exit).
func TestExitAtOnceReportsExitStatus(t *testing.T) {
	requireProc(t)
	for i := 0; i < 40; i++ {
		u := start(t, Config{Name: "x", Command: "sh", Args: []string{"-c", "echo boom >&2; exit 3"}}, nil, false)
		err := u.WaitReady(context.Background())
		if err == nil || !strings.Contains(err.Error(), "exited with status 3") {
			t.Fatalf("attempt %d: WaitReady: %v", i, err)
		}
		if d := u.Status().Detail; !strings.Contains(d, "last error: initialize: upstream process exited with status 3") {
			t.Fatalf("attempt %d: status %q", i, d)
		}
		u.Close()
	}
}
