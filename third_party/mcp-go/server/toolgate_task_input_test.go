package server

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

// TestToolgateTaskAwaitsInput (item 62): a task is input_required while
// any wait for its requestor's input lasts, working again after the last,
// and each change is told to its session only; a wait of another session
// or of an ended task changes nothing.
func TestToolgateTaskAwaitsInput(t *testing.T) {
	s, release := newWaitTaskServer()
	owner, other := NewInProcessSession("owner", nil), NewInProcessSession("other", nil)
	for _, sess := range []*InProcessSession{owner, other} {
		if err := s.RegisterSession(context.Background(), sess); err != nil {
			t.Fatal(err)
		}
		sess.Initialize()
	}
	ctx, otherCtx := s.WithContext(context.Background(), owner), s.WithContext(context.Background(), other)
	id := startWaitTask(t, s, ctx)
	status := func() mcp.TaskStatus {
		task, _, err := s.getTask(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		return task.Status
	}
	told := func(want mcp.TaskStatus) {
		t.Helper()
		select {
		case n := <-owner.ClientNotifications():
			if n.Method != string(mcp.MethodNotificationTasksStatus) || n.Params.AdditionalFields["status"] != want {
				b, _ := json.Marshal(n)
				t.Fatalf("owner told %s; want status %s", b, want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("the owner was not told the task is %s", want)
		}
	}

	s.TaskAwaitsInput(otherCtx, id)() // another session's: nothing
	if st := status(); st != mcp.TaskStatusWorking {
		t.Fatalf("after another session's wait: %s", st)
	}
	first := s.TaskAwaitsInput(ctx, id)
	told(mcp.TaskStatusInputRequired)
	second := s.TaskAwaitsInput(ctx, id)
	first()
	first() // once only
	if st := status(); st != mcp.TaskStatusInputRequired {
		t.Fatalf("one of two waits ended: %s, want input_required", st)
	}
	second()
	told(mcp.TaskStatusWorking)
	if st := status(); st != mcp.TaskStatusWorking {
		t.Fatalf("both waits ended: %s, want working", st)
	}
	late := s.TaskAwaitsInput(ctx, id)
	told(mcp.TaskStatusInputRequired)
	close(release)
	told(mcp.TaskStatusCompleted)
	late() // the task ended: it stays completed
	if st := status(); st != mcp.TaskStatusCompleted {
		t.Fatalf("after a wait that outlived the task: %s", st)
	}
	select {
	case n := <-other.ClientNotifications():
		b, _ := json.Marshal(n)
		t.Fatalf("another session was told of the task: %s", b)
	case <-time.After(100 * time.Millisecond):
	}
}

// heldSession is an in-process session whose first fetch of its
// notification channel waits for the test: it holds a status notification
// between the change it tells and its delivery.
type heldSession struct {
	*InProcessSession
	calls   atomic.Int32
	entered chan int32    // each fetch's number, as it starts
	proceed chan struct{} // lets the first fetch go on
}

func (h *heldSession) NotificationChannel() chan<- mcp.JSONRPCNotification {
	n := h.calls.Add(1)
	h.entered <- n
	if n == 1 {
		<-h.proceed
	}
	return h.InProcessSession.NotificationChannel()
}

// TestToolgateTaskInputToldInOrder (item 62): the session is told a task's
// statuses in the order they were set. The end of a wait for input sets
// working and, held while it is being told (the session's first channel
// fetch waits for the test), the task completes: completed must not be told
// before working, or the client is left believing the ended task works.
// Sent after tasksMu was released, the completion's notification overtook
// the held one.
func TestToolgateTaskInputToldInOrder(t *testing.T) {
	s, release := newWaitTaskServer()
	inner := NewInProcessSession("owner", nil)
	owner := &heldSession{InProcessSession: inner, entered: make(chan int32, 4), proceed: make(chan struct{})}
	if err := s.RegisterSession(context.Background(), owner); err != nil {
		t.Fatal(err)
	}
	owner.Initialize()
	ctx := s.WithContext(context.Background(), owner)
	taskID := startWaitTask(t, s, ctx)
	// The wait starts before the notifications are held: input_required is
	// told at once (the first fetch is then the one of working).
	owner.calls.Store(-1)
	resume := s.TaskAwaitsInput(ctx, taskID)
	<-owner.entered
	owner.calls.Store(0)

	resumed := make(chan struct{})
	go func() { resume(); close(resumed) }()
	select {
	case <-owner.entered: // working is being told, and held
	case <-time.After(30 * time.Second):
		t.Fatal("the end of the wait told nothing")
	}
	close(release) // the task completes meanwhile
	// Sent under tasksMu, the completion cannot be told (nor even set)
	// while working is held; sent after it, it is told now. The grace
	// period only gives a wrong order the time to show: the right one
	// passes whatever the machine's speed.
	select {
	case <-owner.entered:
	case <-time.After(300 * time.Millisecond):
	}
	close(owner.proceed)
	<-resumed
	var got []any
	for len(got) < 3 {
		select {
		case n := <-inner.ClientNotifications():
			got = append(got, n.Params.AdditionalFields["status"])
		case <-time.After(30 * time.Second):
			t.Fatalf("told %v; want input_required, working, completed", got)
		}
	}
	if got[0] != mcp.TaskStatusInputRequired || got[1] != mcp.TaskStatusWorking || got[2] != mcp.TaskStatusCompleted {
		t.Fatalf("told %v; want input_required, working, completed", got)
	}
}
