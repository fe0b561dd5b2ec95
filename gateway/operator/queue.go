// Package operator is the operator channel: the calls that wait for a
// person (or an outside worker) and the ways to answer them. A
// definition-only tool's call waits here until its output is submitted;
// the admin HTTP API ([Handler]) lists what waits and takes the answers,
// and `toolgate pending` / `toolgate submit` use that API.
//
// It is an edge like the MCP mirror: it imports gateway, and only cmd wires
// it. The queue itself knows nothing of HTTP; the toolsets that wait on it
// own the small interfaces they need of it.
package operator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"
)

// Kind says what a waiting call needs.
type Kind string

// Kinds of waiting calls.
const (
	// KindOutput: a definition-only tool's call waits for its output.
	KindOutput Kind = "output"
	// KindApproval: a call waits for a person's approval.
	KindApproval Kind = "approval"
)

// Item is a call waiting for an answer, as the operator sees it.
type Item struct {
	// ID is the waiting call's ID (its call ID in the run archive).
	ID      string    `json:"id"`
	Kind    Kind      `json:"kind"`
	Tool    string    `json:"tool"`
	Toolset string    `json:"toolset"`
	Session string    `json:"session,omitempty"`
	Client  string    `json:"client,omitempty"`
	Created time.Time `json:"created"`
	// Deadline is when the call gives up waiting (a timeout result).
	Deadline time.Time `json:"deadline"`
	// Arguments are the call's arguments as records keep them (secrets
	// redacted).
	Arguments json.RawMessage `json:"arguments"`
	// Description is the tool's description: what the answer is for.
	Description string `json:"description,omitempty"`
	// OutputSchema, if any, is the schema a submitted output must match.
	OutputSchema json.RawMessage `json:"output_schema,omitempty"`
	// Reason says why an approval is needed (the policy's rule).
	Reason string `json:"reason,omitempty"`
}

// Answer is what an operator submits.
type Answer struct {
	// Output is the tool's output (KindOutput): any JSON value; a string
	// is the output text.
	Output json.RawMessage `json:"output,omitempty"`
	// Decision answers an approval (KindApproval): allow_once,
	// allow_session or deny.
	Decision string `json:"decision,omitempty"`
	// By names the channel that answered ("cli", "http", "ui"), for the
	// record.
	By string `json:"by,omitempty"`
}

// ErrNoOperator says why a call that would wait for an operator is
// refused at once where none can answer, as no admin API serves the
// gateway (toolgate call; serve without admin.addr).
var ErrNoOperator = errors.New("an operator answers this tool, and none can here: only toolgate serve with admin.addr takes an operator's answers (toolgate submit, the operator page)")

// Errors of [Queue.Submit].
var (
	ErrUnknown = errors.New("no call with that ID is waiting")
	ErrClosed  = errors.New("the gateway is shutting down")
	// ErrBusy: another answer to the call is being checked; the call
	// still waits if that one is refused, so retry.
	ErrBusy = errors.New("another answer to this call is being checked; retry in a moment")
)

// Queue holds the waiting calls. It is safe for concurrent use.
type Queue struct {
	mu      sync.Mutex
	waiting map[string]*waiter
	closed  bool
	seq     uint64 // the last wait's number
	// changed is closed and replaced on every change, for watchers.
	changed chan struct{}
}

type waiter struct {
	item  Item
	seq   uint64 // this wait's number: a call that waits again has a new one
	check func(Answer) error
	done  chan Answer // buffered: the answer, or closed by Close
	// Guarded by the queue's mu: a submission being checked holds taken;
	// a wait that ended without an answer sets gone.
	taken, gone bool
}

// NewQueue returns an empty queue.
func NewQueue() *Queue {
	return &Queue{waiting: map[string]*waiter{}, changed: make(chan struct{})}
}

// changedLocked wakes the watchers. Callers hold q.mu.
func (q *Queue) changedLocked() {
	close(q.changed)
	q.changed = make(chan struct{})
}

// Wait puts the item in the queue and waits for its answer, until ctx ends
// (the call's deadline, cancellation, or shutdown) or the queue closes.
// check, if set, vets a submitted answer: an answer it refuses is not
// taken (the submitter gets the error, the call keeps waiting).
func (q *Queue) Wait(ctx context.Context, it Item, check func(Answer) error) (Answer, error) {
	w := &waiter{item: it, check: check, done: make(chan Answer, 1)}
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return Answer{}, ErrClosed
	}
	if _, dup := q.waiting[it.ID]; dup {
		q.mu.Unlock()
		return Answer{}, fmt.Errorf("call %s is already waiting", it.ID)
	}
	q.seq++
	w.seq = q.seq
	q.waiting[it.ID] = w
	q.changedLocked()
	q.mu.Unlock()

	select {
	case a, ok := <-w.done:
		if !ok {
			return Answer{}, ErrClosed
		}
		return a, nil
	case <-ctx.Done():
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	select {
	case a, ok := <-w.done: // an answer came in as the wait ended: it wins
		if !ok {
			return Answer{}, ErrClosed
		}
		return a, nil
	default:
	}
	w.gone = true
	if q.waiting[it.ID] == w {
		delete(q.waiting, it.ID)
		q.changedLocked()
	}
	return Answer{}, ctx.Err()
}

// Submit answers a waiting call. It fails with [ErrUnknown] for an ID that
// is not waiting (never was, already answered, or gave up), with
// [ErrBusy] while another answer to it is being checked, and with the
// check's error for an answer the call cannot take (the call keeps
// waiting for a good one).
func (q *Queue) Submit(id string, a Answer) error { return q.submit(id, 0, a) }

// errOtherWait: an answer given for one wait of a call that has since
// ended, while the call waits again (an approval, then its output).
var errOtherWait = errors.New("that call is waiting for something else now")

// submit is [Queue.Submit] for the wait numbered seq (any wait of the call
// when seq is 0): an answer given for a wait that ended is refused with
// errOtherWait even though the call waits again, for something else.
func (q *Queue) submit(id string, seq uint64, a Answer) error {
	q.mu.Lock()
	w, ok := q.waiting[id]
	if !ok {
		q.mu.Unlock()
		return fmt.Errorf("%w: %s", ErrUnknown, id)
	}
	if seq != 0 && w.seq != seq {
		q.mu.Unlock()
		return fmt.Errorf("%w (%s): the answer was for its earlier wait, which ended", errOtherWait, w.item.Kind)
	}
	if w.taken { // not ErrUnknown: the call may well go on waiting
		q.mu.Unlock()
		return fmt.Errorf("%w (%s)", ErrBusy, id)
	}
	w.taken = true // one submission at a time is checked
	q.mu.Unlock()

	var bad error
	if w.check != nil {
		bad = w.check(a) // outside the lock: it is the waiter's code
	}

	q.mu.Lock()
	defer q.mu.Unlock()
	w.taken = false
	switch {
	case w.gone || q.closed:
		return fmt.Errorf("%w: %s (it stopped waiting)", ErrUnknown, id)
	case bad != nil:
		return bad
	}
	delete(q.waiting, id)
	w.done <- a // buffered, and only one answer is ever sent
	q.changedLocked()
	return nil
}

// List returns the waiting calls, oldest first.
func (q *Queue) List() []Item {
	ws := q.waits()
	items := make([]Item, len(ws))
	for i, w := range ws {
		items[i] = w.Item
	}
	return items
}

// wait is a waiting call and the number of its wait.
type wait struct {
	Item
	Wait uint64
}

// waits is [Queue.List] with each wait's number.
func (q *Queue) waits() []wait {
	q.mu.Lock()
	ws := make([]wait, 0, len(q.waiting))
	for _, w := range q.waiting {
		ws = append(ws, wait{w.item, w.seq})
	}
	q.mu.Unlock()
	sort.Slice(ws, func(i, j int) bool {
		if !ws[i].Created.Equal(ws[j].Created) {
			return ws[i].Created.Before(ws[j].Created)
		}
		return ws[i].ID < ws[j].ID
	})
	return ws
}

// Changed returns a channel closed at the next change of the queue.
func (q *Queue) Changed() <-chan struct{} {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.changed
}

// Close ends every wait with [ErrClosed] (shutdown: each waiting call
// returns at once, cancelled, and is recorded so) and refuses new ones.
func (q *Queue) Close() {
	q.mu.Lock()
	q.closed = true
	ws := make([]*waiter, 0, len(q.waiting))
	for id, w := range q.waiting {
		ws = append(ws, w)
		delete(q.waiting, id)
	}
	q.changedLocked()
	for _, w := range ws {
		close(w.done) // under the lock: Submit sends only under it, after checking closed
	}
	q.mu.Unlock()
}
