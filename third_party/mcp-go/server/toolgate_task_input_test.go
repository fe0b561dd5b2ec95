package server

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

// TestToolgateTaskAwaitsInput (item 62): a task is input_required while
// any wait for its requestor's input lasts, working again after the last,
// and each change is told to its session only; a wait of another session
// or of an ended task changes nothing.
func TestToolgateTaskAwaitsInput(t *testing.T) {
	s := NewMCPServer("t", "1", WithToolCapabilities(false), WithTaskCapabilities(true, true, true))
	release := make(chan struct{})
	s.AddTool(mcp.NewTool("wait", mcp.WithTaskSupport(mcp.TaskSupportOptional)), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		<-release
		return mcp.NewToolResultText("done"), nil
	})
	owner, other := NewInProcessSession("owner", nil), NewInProcessSession("other", nil)
	for _, sess := range []*InProcessSession{owner, other} {
		if err := s.RegisterSession(context.Background(), sess); err != nil {
			t.Fatal(err)
		}
		sess.Initialize()
	}
	ctx, otherCtx := s.WithContext(context.Background(), owner), s.WithContext(context.Background(), other)
	resp := s.HandleMessage(ctx, json.RawMessage(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"wait","task":{"ttl":60000}}}`))
	raw, _ := json.Marshal(resp)
	var cr struct {
		Result struct {
			Task struct {
				TaskID string `json:"taskId"`
			} `json:"task"`
		} `json:"result"`
	}
	if err := json.Unmarshal(raw, &cr); err != nil || cr.Result.Task.TaskID == "" {
		t.Fatalf("task call answered %s", raw)
	}
	id := cr.Result.Task.TaskID
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
