package gateway

import (
	"context"
	"sync"
)

// A call that may become a task: the 2026-07-28 tasks extension lets the
// server decide, per call, whether it answers with a result or with a
// task. For a tool that decides itself ([Tool.TaskDirected]: an upstream
// that serves the extension), the MCP mirror starts the call of a caller
// of the extension and waits for either: the call's end (the caller gets
// its result, or its input_required round, as for any call) or the tool's
// [BecomeTask] (the caller gets a task at once, and the call goes on as
// that task; see mcp_taskext.go).

type becomeTaskKey struct{}

// taskOffer is a call's offer to become a task.
type taskOffer struct {
	once  sync.Once
	taken chan struct{} // closed by BecomeTask
	task  *CallTask     // the task it becomes
	// call is the call that makes the offer, set by modernTasks.run
	// before it runs: the one that becomes the task, whichever call made
	// on its behalf (call_tool's of the tool it names) says so.
	call *Call
	// onTake runs in BecomeTask, before it returns: the task exists
	// before the call goes on (and can end it). It reports whether the
	// call may become the task (a free place among the tasks running);
	// if not, the call stays a plain call.
	onTake func() bool
}

func withTaskOffer(ctx context.Context, task *CallTask, onTake func() bool) (context.Context, *taskOffer) {
	o := &taskOffer{taken: make(chan struct{}), task: task, onTake: onTake}
	return context.WithValue(ctx, becomeTaskKey{}, o), o
}

// accepted reports whether the call became a task.
func (o *taskOffer) accepted() bool {
	select {
	case <-o.taken:
		return true
	default:
		return false
	}
}

// settle ends the offer once the call's round has ended: a BecomeTask
// after it changes nothing (a handler left running past its deadline
// cannot make a call that was answered a task). It reports whether the
// call became one.
func (o *taskOffer) settle() bool {
	o.once.Do(func() {})
	return o.accepted()
}

// CanBecomeTask reports whether the call of ctx may become a task of its
// caller's: its caller waits for it as for a call that may.
func CanBecomeTask(ctx context.Context) bool {
	_, ok := ctx.Value(becomeTaskKey{}).(*taskOffer)
	return ok
}

// BecomeTask makes the call of ctx a task of its caller's (an upstream
// answered it with a task): the caller gets the task now, and the call
// goes on as it, its record naming the task. It reports whether the call
// became one: not when it could not ([CanBecomeTask]), nor when as many
// tasks run as the server allows, nor once its round was answered; the
// call then goes on as a plain call, which its caller waits for. A second
// call changes nothing.
func BecomeTask(ctx context.Context) bool {
	o, ok := ctx.Value(becomeTaskKey{}).(*taskOffer)
	if !ok {
		return false
	}
	o.once.Do(func() {
		if !o.onTake() {
			return
		}
		o.call.became.Store(o.task)
		if c := CallFrom(ctx); c != nil && c != o.call {
			c.became.Store(o.task) // a call made on its behalf, which goes on as the task too
		}
		close(o.taken)
	})
	return o.accepted()
}
