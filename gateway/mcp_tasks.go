package gateway

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// MCP tasks (2025-11-25, experimental): a client may call a tool whose
// [Tool.TaskSupport] allows it as a task. mcp-go keeps the task (its
// status, its result for tasks/result, tasks/list, tasks/cancel) and runs
// the tool's handler, the mirror's handleCall, in the background: the call
// goes through the whole pipeline like any other, with [Call.Task] set, so
// its record spans the task from creation to end and names it. The task's
// own life (created, completed, failed, cancelled) is recorded as task.*
// events with its id.
//
// mcp-go derives the background run's context from the request that
// created the task, and that context ends as soon as the request is
// answered, that is at once. So the mirror runs a task's call on a context
// of its own, and [taskTable] ties that context to the task: mcp-go's hooks
// around tools/call see the request before (its task params) and after
// (the new task's id), the handler sees the same task params, and a
// tasks/cancel of that id (mcp-go's task-cancelled hook) cancels the call.
// Only tasks/cancel and the tool's deadline end it.
//
// Tasks of 2026-07-28 callers, an extension with another wire form, are
// served by mcp_taskext.go.

// DefaultMaxTasks bounds the tasks running at once when
// [MCPOptions.MaxTasks] is zero.
const DefaultMaxTasks = 64

// maxTasks is the bound on the tasks running at once, of each era.
func (m *MCPServer) maxTasks() int {
	if m.opts.MaxTasks > 0 {
		return m.opts.MaxTasks
	}
	return DefaultMaxTasks
}

// taskServerOptions are mcp-go's options for serving tasks, with hooks
// that record each task's life.
func (m *MCPServer) taskServerOptions() []server.ServerOption {
	max := m.maxTasks()
	hooks := &server.TaskHooks{}
	// mcp-go calls these with its task table locked: they write a line to
	// the run archive or cancel a context, and call nothing else.
	hooks.AddOnTaskCreated(m.taskEvent("task.created"))
	hooks.AddOnTaskCompleted(m.taskEvent("task.completed"))
	hooks.AddOnTaskFailed(m.taskEvent("task.failed"))
	hooks.AddOnTaskCancelled(m.taskEvent("task.cancelled"))
	hooks.AddOnTaskCancelled(func(_ context.Context, tm server.TaskMetrics) { m.tasks.cancel(tm.TaskID) })
	return []server.ServerOption{
		server.WithTaskCapabilities(true, true, true),
		server.WithMaxConcurrentTasks(max),
		server.WithTaskHooks(hooks),
	}
}

// taskEvent records one step of a task's life with its id, tool and
// session, so that tasks/get answers can be matched to the archive.
func (m *MCPServer) taskEvent(typ string) func(context.Context, server.TaskMetrics) {
	return func(ctx context.Context, tm server.TaskMetrics) {
		fields := map[string]any{"task_id": tm.TaskID, "tool": tm.ToolName, "status": string(tm.Status)}
		if tm.StatusMessage != "" {
			fields["message"] = Truncate(tm.StatusMessage, 1024)
		}
		if tm.Duration > 0 {
			fields["duration_ms"] = tm.Duration.Milliseconds()
		}
		if tm.Error != nil {
			fields["error"] = Truncate(tm.Error.Error(), 1024)
		}
		var caller *Call
		if typ == "task.created" {
			caller = withCaller(ctx, &Call{})
			m.tasks.callers.Store(tm.TaskID, caller)
		} else if c, ok := m.tasks.callers.LoadAndDelete(tm.TaskID); ok {
			// mcp-go calls the completed and failed hooks without the
			// request's context: the task's end is its creator's.
			caller = c.(*Call)
		} else {
			caller = withCaller(ctx, &Call{})
		}
		// The task itself names its session.
		if tm.SessionID != "" {
			caller.Session = tm.SessionID
		}
		m.opts.Pipeline.callerEvent(typ, caller, fields)
	}
}

// mcpExecution is a tool's execution member in tools/list.
func mcpExecution(t *Tool) *mcp.ToolExecution {
	if t.TaskSupport == "" {
		return nil
	}
	return &mcp.ToolExecution{TaskSupport: mcp.TaskSupport(t.TaskSupport)}
}

// taskTable ties the tasks mcp-go created to the calls running them:
// see the note at the top of this file. A slot lives from the tools/call
// request that asks for a task to the end of its call.
type taskTable struct {
	mu       sync.Mutex
	byParams map[*mcp.TaskParams]*taskSlot
	byID     map[string]*taskSlot

	// callers holds the caller of each task from its task.created event
	// to the event of its end (task id to *Call), which mcp-go reports
	// without the request's context.
	callers sync.Map
}

type taskSlot struct {
	ready chan struct{} // closed once id is known, or the task was not created
	id    string        // set before ready is closed

	// guarded by taskTable.mu
	cancelFn  context.CancelFunc
	cancelled bool
}

func newTaskTable() *taskTable {
	return &taskTable{byParams: map[*mcp.TaskParams]*taskSlot{}, byID: map[string]*taskSlot{}}
}

// before is mcp-go's before-tools/call hook: a request asking for a task
// gets a slot, found again by its task params.
func (t *taskTable) before(ctx context.Context, _ any, req *mcp.CallToolRequest) {
	if req.Params.Task == nil || modernRequest(ctx) != nil { // 2026-07-28: a legacy member, ignored
		return
	}
	// mcp-go keeps a task (and its result) until its TTL, and forever
	// without one: every task gets a TTL, at most [taskTTL].
	if p := req.Params.Task; p.TTL == nil || *p.TTL <= 0 || *p.TTL > taskTTL.Milliseconds() {
		ttl := taskTTL.Milliseconds()
		p.TTL = &ttl
	}
	t.mu.Lock()
	t.byParams[req.Params.Task] = &taskSlot{ready: make(chan struct{})}
	t.mu.Unlock()
}

// taskTTL is the longest a 2025-11-25 task is kept after its creation,
// and the TTL of a task whose caller asked for none (as for the tasks
// extension's).
const taskTTL = modernTaskTTL

// after is mcp-go's after-tools/call hook: the answer to a request that
// asked for a task names the task.
func (t *taskTable) after(_ context.Context, _ any, req *mcp.CallToolRequest, result any) {
	if req.Params.Task == nil {
		return
	}
	cr, ok := result.(*mcp.CreateTaskResult)
	if !ok {
		t.drop(req.Params.Task)
		return
	}
	t.mu.Lock()
	s := t.byParams[req.Params.Task]
	if s != nil {
		s.id = cr.Task.TaskId
		t.byID[s.id] = s
	}
	t.mu.Unlock()
	if s != nil {
		close(s.ready)
	}
}

// failed is mcp-go's error hook: a tools/call that asked for a task and
// was refused created none.
func (t *taskTable) failed(_ context.Context, _ any, method mcp.MCPMethod, message any, _ error) {
	if method != mcp.MethodToolsCall {
		return
	}
	if req, ok := message.(*mcp.CallToolRequest); ok && req.Params.Task != nil {
		t.drop(req.Params.Task)
	}
}

// drop forgets the slot of a request that created no task.
func (t *taskTable) drop(p *mcp.TaskParams) {
	t.mu.Lock()
	s := t.byParams[p]
	delete(t.byParams, p)
	t.mu.Unlock()
	if s != nil {
		close(s.ready)
	}
}

// start returns the context a task's call runs on: ctx's values, not its
// end, cancelled by tasks/cancel of the task or by the returned stop,
// which the call must call when it ends. It returns nil if p is not the
// params of a task being created.
func (t *taskTable) start(ctx context.Context, p *mcp.TaskParams) (context.Context, *CallTask, func()) {
	t.mu.Lock()
	s := t.byParams[p]
	t.mu.Unlock()
	if s == nil {
		return nil, nil, nil
	}
	// The hook that names the task runs as soon as mcp-go has answered
	// the request, which it does without waiting for this handler.
	timer := time.NewTimer(5 * time.Second)
	select {
	case <-s.ready:
	case <-timer.C:
	}
	timer.Stop()
	tctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	t.mu.Lock()
	s.cancelFn = cancel
	if s.cancelled {
		cancel()
	}
	id := s.id
	t.mu.Unlock()
	task := &CallTask{ID: id}
	if p.TTL != nil && *p.TTL > 0 {
		task.TTLMs = *p.TTL
	}
	return tctx, task, func() {
		cancel()
		t.mu.Lock()
		delete(t.byParams, p)
		if id != "" {
			delete(t.byID, id)
		}
		t.mu.Unlock()
	}
}

// cancel cancels the call running the task id (tasks/cancel).
func (t *taskTable) cancel(id string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if s := t.byID[id]; s != nil {
		s.cancelled = true
		if s.cancelFn != nil {
			s.cancelFn()
		}
	}
}

// checkTaskRequest refuses (-32601), before mcp-go handles it, a 2025-era
// task-augmented call of a tool that does not declare task support
// (mcp-go would run it as a plain call, answering something the client
// did not ask for). Requests of 2026-07-28 callers, whose requests name
// their protocol version in _meta, are the tasks extension's
// (mcp_taskext.go): a legacy "task" member there is tolerated.
func (m *MCPServer) checkTaskRequest(_ context.Context, _ any, message any) error {
	req, ok := hookHead(message, `"task`)
	if !ok || req.Method != string(mcp.MethodToolsCall) || !req.asTask() || req.modern() {
		return nil
	}
	if t, _, ok := m.opts.Catalog.Resolve(req.Params.Name); ok && t.TaskSupport == "" {
		// -32601, as MCP 2025-11-25 asks of a server ("Tool-Level
		// Negotiation"), and as mcp-go answers a required task's plain call.
		return &RequestError{Code: mcp.METHOD_NOT_FOUND,
			Message: fmt.Sprintf("tool %q cannot be called as a task (it declares no execution.taskSupport); call it without \"task\"", req.Params.Name)}
	}
	return nil
}
