package gateway

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// callDeadline is the context of a call whose tool honours its context
// and runs on the calling goroutine (execute): the caller's context with
// the call's deadline, whose timer is armed only when something waits.
//
// Most such calls return before anything waits on their context, and for
// them context.WithDeadline's timer (plus, under a cancellable parent such
// as an HTTP request's, the parent's done channel and a children entry) is
// most of what the deadline costs: four to seven allocations and a
// runtime timer set and stopped per call. Here the deadline is kept as a
// time until one of these needs a channel:
//
//   - Done (a select on the context, a context derived from it, and
//     context.AfterFunc all call it) arms it: from then on the context is
//     a context.WithDeadlineCause of the parent and every method is that
//     context's;
//   - Err before arming reads the parent, a cancellation by the gateway
//     (shutdown) and the clock; a context found ended is armed, so that
//     what follows agrees with Err: Done is closed, and context.Cause
//     (which calls Err before it looks for the cause through Value) finds
//     errCallDeadline, or the parent's cause, as under
//     context.WithDeadlineCause;
//   - Value is the armed context's, else the parent's.
//
// A handler that never waits therefore costs no allocation for its
// deadline (it lives in its Call) and no timer, and one that waits gets
// exactly the context it would have had.
// TestCallDeadline checks both against the clock of testing/synctest.
type callDeadline struct {
	parent    context.Context
	deadline  time.Time
	armed     atomic.Pointer[armedDeadline]
	cancelled atomic.Bool // by cancel, before or after arming

	mu sync.Mutex // serializes arming with cancel
}

type armedDeadline struct {
	ctx    context.Context
	cancel context.CancelFunc
}

// startDeadline begins the deadline of call under parent: in the call
// itself (no allocation of its own), or in a fresh callDeadline if the call
// has been executed before (a spent one stays cancelled for whatever still
// holds it).
func startDeadline(call *Call, parent context.Context, timeout time.Duration) *callDeadline {
	c := &call.deadline
	if c.parent != nil {
		c = new(callDeadline)
	}
	c.parent, c.deadline = parent, time.Now().Add(timeout)
	return c
}

// arm makes the context a context.WithDeadlineCause of the parent, once.
func (c *callDeadline) arm() *armedDeadline {
	if a := c.armed.Load(); a != nil {
		return a
	}
	c.mu.Lock()
	a := c.armed.Load()
	if a == nil {
		ctx, cancel := context.WithDeadlineCause(c.parent, c.deadline, errCallDeadline)
		a = &armedDeadline{ctx: ctx, cancel: cancel}
		c.armed.Store(a)
	}
	c.mu.Unlock()
	if c.cancelled.Load() {
		a.cancel()
	}
	return a
}

// cancel cancels the call (the gateway's shutdown grace ended), or
// releases an armed context's timer when the call is over.
func (c *callDeadline) cancel() {
	c.mu.Lock()
	c.cancelled.Store(true)
	a := c.armed.Load()
	c.mu.Unlock()
	if a != nil {
		a.cancel()
	}
}

func (c *callDeadline) Deadline() (time.Time, bool) {
	if d, ok := c.parent.Deadline(); ok && d.Before(c.deadline) {
		return d, true
	}
	return c.deadline, true
}

func (c *callDeadline) Done() <-chan struct{} { return c.arm().ctx.Done() }

func (c *callDeadline) Err() error {
	if a := c.armed.Load(); a != nil {
		return a.ctx.Err()
	}
	if !c.cancelled.Load() && time.Now().Before(c.deadline) && c.parent.Err() == nil {
		return nil
	}
	return c.arm().ctx.Err()
}

func (c *callDeadline) Value(key any) any {
	if a := c.armed.Load(); a != nil {
		return a.ctx.Value(key)
	}
	return c.parent.Value(key)
}

func (c *callDeadline) String() string { return "gateway.callDeadline" }
