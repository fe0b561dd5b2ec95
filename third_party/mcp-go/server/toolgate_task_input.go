package server

// toolgate patch, item 62: a 2025-11-25 task whose execution waits for
// the requestor's input (an elicitation or sampling request sent to the
// client for it) is input_required meanwhile, and working again once
// every such request has its answer (MCP 2025-11-25, tasks, "Input
// Required Status": the receiver SHOULD move the task to input_required,
// and SHOULD move it out once it has the input). v1.2.1 defines the status
// but never sets it: the task said working while it waited for the client.

import (
	"context"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

// TaskAwaitsInput marks the task taskID, of the session of ctx, as waiting
// for its requestor's input until the returned function is called (once;
// later calls do nothing). The first of such waits at once moves the task
// to input_required, the end of the last moves it back to working; each
// change is told to the task's session (notifications/tasks/status), and
// to no other. An unknown task, another session's, or one that has ended
// is left alone.
func (s *MCPServer) TaskAwaitsInput(ctx context.Context, taskID string) (resume func()) {
	entry, err := s.getTaskEntry(ctx, taskID)
	if err != nil {
		return func() {}
	}
	s.taskInput(entry, +1)
	var once sync.Once
	return func() { once.Do(func() { s.taskInput(entry, -1) }) }
}

// taskInput counts a wait for input starting (+1) or ending (-1), and
// moves the task between working and input_required when the count
// leaves or reaches zero, telling the session under tasksMu, as v1.2.1's
// completeTask and cancelTask do: the order in which the session is told
// of a task's statuses is then the order in which they were set. Told
// after tasksMu is released, a working held between the two could reach
// the client after the completed of a task that completed meanwhile.
// Telling does not block: the notification is put on the session's
// channel if it has room, and dropped if not (sendNotificationToSpecificClient).
func (s *MCPServer) taskInput(entry *taskEntry, delta int) {
	s.tasksMu.Lock()
	defer s.tasksMu.Unlock()
	entry.awaiting += delta
	var status mcp.TaskStatus
	switch {
	case entry.completed:
	case entry.awaiting > 0 && entry.task.Status == mcp.TaskStatusWorking:
		status = mcp.TaskStatusInputRequired
	case entry.awaiting == 0 && entry.task.Status == mcp.TaskStatusInputRequired:
		status = mcp.TaskStatusWorking
	}
	if status == "" {
		return
	}
	entry.task.Status = status
	entry.task.LastUpdatedAt = time.Now().UTC().Format(time.RFC3339)
	s.sendTaskStatusNotification(entry)
}
