package gateway

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"
)

type deadlineKey struct{}

// TestCallDeadline checks that a call's context behaves as the
// context.WithDeadlineCause it stands for, whether or not its timer was
// armed, in the fake time of a synctest bubble.
func TestCallDeadline(t *testing.T) {
	parentCause := errors.New("client went away")
	for _, c := range []struct {
		name string
		// run acts on the call's context (and may cancel the parent or
		// the call); it returns what the context must then report.
		run       func(ctx context.Context, cancelParent func(), cancelCall func()) (err, cause error)
		wantArmed bool
	}{
		{"returns at once: never armed", func(ctx context.Context, _, _ func()) (error, error) {
			return nil, nil
		}, false},
		{"deadline passes unwatched: Err then Cause", func(ctx context.Context, _, _ func()) (error, error) {
			time.Sleep(time.Second)
			return context.DeadlineExceeded, errCallDeadline
		}, true},
		{"deadline passes unwatched: Cause first", func(ctx context.Context, _, _ func()) (error, error) {
			time.Sleep(time.Second)
			if got := context.Cause(ctx); !errors.Is(got, errCallDeadline) {
				t.Errorf("Cause before Err = %v, want %v", got, errCallDeadline)
			}
			return context.DeadlineExceeded, errCallDeadline
		}, true},
		{"waited on: Done closes at the deadline", func(ctx context.Context, _, _ func()) (error, error) {
			start := time.Now()
			<-ctx.Done()
			if d := time.Since(start); d != 100*time.Millisecond {
				t.Errorf("Done closed after %v, want 100ms", d)
			}
			return context.DeadlineExceeded, errCallDeadline
		}, true},
		{"derived context ends at the deadline", func(ctx context.Context, _, _ func()) (error, error) {
			child, cancel := context.WithCancel(ctx)
			defer cancel()
			<-child.Done()
			if !errors.Is(context.Cause(child), errCallDeadline) {
				t.Errorf("child's cause %v", context.Cause(child))
			}
			return context.DeadlineExceeded, errCallDeadline
		}, true},
		{"parent cancelled before anything waits", func(ctx context.Context, cancelParent, _ func()) (error, error) {
			cancelParent()
			return context.Canceled, parentCause
		}, true},
		{"parent cancelled while waiting", func(ctx context.Context, cancelParent, _ func()) (error, error) {
			time.AfterFunc(10*time.Millisecond, cancelParent)
			<-ctx.Done()
			return context.Canceled, parentCause
		}, true},
		{"cancelled by the gateway before anything waits", func(ctx context.Context, _, cancelCall func()) (error, error) {
			cancelCall()
			<-ctx.Done()
			return context.Canceled, context.Canceled
		}, true},
		{"cancelled by the gateway while waiting", func(ctx context.Context, _, cancelCall func()) (error, error) {
			time.AfterFunc(10*time.Millisecond, cancelCall)
			<-ctx.Done()
			return context.Canceled, context.Canceled
		}, true},
		{"context.AfterFunc runs at the deadline", func(ctx context.Context, _, _ func()) (error, error) {
			ran := make(chan struct{})
			context.AfterFunc(ctx, func() { close(ran) })
			<-ran
			return context.DeadlineExceeded, errCallDeadline
		}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				parent, cancelParent := context.WithCancelCause(context.WithValue(context.Background(), deadlineKey{}, "v"))
				defer cancelParent(nil)
				call := &Call{}
				ctx := startDeadline(call, parent, 100*time.Millisecond)
				if ctx != &call.deadline {
					t.Fatal("the first deadline of a call does not live in the call")
				}
				if d, ok := ctx.Deadline(); !ok || d != time.Now().Add(100*time.Millisecond) {
					t.Errorf("Deadline() = %v %v", d, ok)
				}
				if ctx.Value(deadlineKey{}) != "v" {
					t.Error("the parent's values are not seen")
				}
				wantErr, wantCause := c.run(ctx, func() { cancelParent(parentCause) }, ctx.cancel)
				if err := ctx.Err(); err != wantErr {
					t.Errorf("Err() = %v, want %v", err, wantErr)
				}
				if cause := context.Cause(ctx); cause != wantCause {
					t.Errorf("Cause = %v, want %v", cause, wantCause)
				}
				if armed := ctx.armed.Load() != nil; armed != c.wantArmed {
					t.Errorf("armed = %v, want %v", armed, c.wantArmed)
				}
				if wantErr != nil {
					select {
					case <-ctx.Done():
					default:
						t.Error("Err reports the end but Done is open")
					}
				}
				ctx.cancel() // as execute does when the call returns
				if ctx.Value(deadlineKey{}) != "v" {
					t.Error("the parent's values are not seen after the end")
				}
				// A call executed again gets a deadline of its own.
				again := startDeadline(call, parent, time.Hour)
				if again == ctx {
					t.Fatal("a spent deadline was reused")
				}
				if wantErr == nil && parent.Err() == nil && again.Err() != nil {
					t.Errorf("a call executed again starts ended: %v", again.Err())
				}
				again.cancel()
			})
		})
	}
}

// TestCallDeadlineEarlierParent: a parent with an earlier deadline bounds
// the call, as under context.WithDeadline.
func TestCallDeadlineEarlierParent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		parent, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
		defer cancel()
		ctx := startDeadline(&Call{}, parent, time.Hour)
		if d, _ := ctx.Deadline(); d != time.Now().Add(10*time.Millisecond) {
			t.Errorf("Deadline() = %v, want the parent's", d)
		}
		time.Sleep(20 * time.Millisecond)
		if ctx.Err() != context.DeadlineExceeded || context.Cause(ctx) != context.DeadlineExceeded {
			t.Errorf("Err %v Cause %v; want the parent's deadline exceeded", ctx.Err(), context.Cause(ctx))
		}
		ctx.cancel()
	})
}

// TestCallContext: a call's context carries the call and its parent's
// values; a call that passes the pipeline again gets a context of its own,
// and the first one stays as it was.
func TestCallContext(t *testing.T) {
	call := &Call{}
	first := call.inContext(context.WithValue(context.Background(), deadlineKey{}, "first"))
	if CallFrom(first) != call || first.Value(deadlineKey{}) != "first" {
		t.Fatalf("first context: call %p value %v", CallFrom(first), first.Value(deadlineKey{}))
	}
	second := call.inContext(context.WithValue(context.Background(), deadlineKey{}, "second"))
	if CallFrom(second) != call || second.Value(deadlineKey{}) != "second" {
		t.Fatalf("second context: call %p value %v", CallFrom(second), second.Value(deadlineKey{}))
	}
	if first.Value(deadlineKey{}) != "first" {
		t.Errorf("the first context changed with the second: %v", first.Value(deadlineKey{}))
	}
}
