package gateway

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"time"
)

// errCallDeadline is the cause of a call's context when its deadline passes,
// telling a timeout apart from a cancellation by the client.
var errCallDeadline = errors.New("call deadline exceeded")

// NoDeadline, as a [Tool.Timeout], gives the tool's calls no deadline of
// their own; they still end when the client cancels or the shutdown grace
// ends.
const NoDeadline time.Duration = -1

// execute runs the tool's handler: the terminal handler of the pipeline.
//
// The handler runs under a context with the call's deadline (the tool's
// Timeout, else the pipeline's CallTimeout), which is also cancelled when
// the client cancels (notifications/cancelled, an HTTP disconnect) or the
// gateway's shutdown grace ends. Only this stage can wait; the stages
// before it decide at once and need no cancellation.
//
// A handler that does not declare [Tool.HonoursContext] runs in a
// goroutine of its own, and execute returns as soon as the handler returns
// or the context ends, whichever is first, so a handler that ignores its
// context cannot hold the call past its deadline; its eventual result is
// dropped. A handler that honours its context runs on the calling
// goroutine: no goroutine, channel or fresh stack per call, and no timer
// unless it waits on its context ([callDeadline]). A panic in the
// handler becomes a runtime error result, as does a nil result.
func (p *Pipeline) execute(ctx context.Context, call *Call) *Result {
	timeout := p.limitsOf(call).CallTimeout
	if call.Tool.Timeout > 0 {
		timeout = call.Tool.Timeout
	}
	if call.Tool.HonoursContext && call.Tool.Timeout != NoDeadline {
		// Its deadline's timer is armed only if it waits (deadline.go).
		dctx := startDeadline(call, ctx, timeout)
		defer dctx.cancel()
		// When the shutdown grace period ends, calls still running are cancelled.
		defer p.execEnd(p.execStart(dctx))
		return p.runHandler(dctx, call, timeout)
	}
	var cancel context.CancelFunc
	if call.Tool.Timeout == NoDeadline {
		ctx, cancel = context.WithCancel(ctx)
	} else {
		ctx, cancel = context.WithTimeoutCause(ctx, timeout, errCallDeadline)
	}
	defer cancel()
	defer p.execEnd(p.execStart(cancelFunc(cancel)))
	done := make(chan *Result, 1)
	go func() { done <- p.runHandler(ctx, call, timeout) }()
	select {
	case res := <-done:
		return res
	case <-ctx.Done():
		// Prefer a result that is already there.
		select {
		case res := <-done:
			return res
		default:
		}
		return ctxResult(ctx, call, timeout)
	}
}

// runHandler runs the tool's handler and turns what it returns (an error,
// nothing, a panic) into a result.
func (p *Pipeline) runHandler(ctx context.Context, call *Call, timeout time.Duration) (res *Result) {
	defer func() {
		if r := recover(); r != nil {
			p.log.Error("tool panicked", "call_id", call.ID, "tool", call.Name, "panic", r, "stack", string(debug.Stack()))
			res = RuntimeErrorResult(call.Name, fmt.Errorf("panic: %v", r))
		}
	}()
	res, err := call.Tool.handler(ctx, call)
	switch {
	case err != nil && ctx.Err() != nil:
		return ctxResult(ctx, call, timeout)
	case err != nil:
		return RuntimeErrorResult(call.Name, err)
	case res == nil:
		return RuntimeErrorResult(call.Name, errors.New("the tool returned no result"))
	}
	return res
}

// ctxResult is the result of a call whose context ended.
func ctxResult(ctx context.Context, call *Call, timeout time.Duration) *Result {
	if errors.Is(context.Cause(ctx), errCallDeadline) {
		return TimeoutResult(call.Name, timeout, timeoutSetting(call.Tool))
	}
	return CancelledResult(call.Name)
}

// timeoutSetting names the setting that gave tool's calls their deadline.
func timeoutSetting(tool *Tool) string {
	if tool.Timeout > 0 {
		return tool.TimeoutSetting
	}
	return "limits.call_timeout"
}
