package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// The tasks extension of 2026-07-28 (io.modelcontextprotocol/tasks,
// SEP-2663): tasks for 2026-07-28 callers.
//
// The server decides: a tools/call of a tool that declares task support
// ([Tool.TaskSupport]) by a caller that declared the extension (in the
// request's clientCapabilities) is answered with a flat CreateTaskResult,
// and the call runs on in toolgate, through the whole pipeline like any
// other, with [Call.Task] set on every round of it. For most tools that
// answer comes at once; a tool that decides itself ([Tool.TaskDirected],
// an upstream's) runs as a plain call until it calls [BecomeTask], and
// the call's end before that is the caller's answer. The caller follows
// it with tasks/get (the DetailedTask: status, and the
// result, the error or the pending input requests inlined), answers input
// with tasks/update and stops it with tasks/cancel. A round of the call
// that needs the caller's input (an upstream's input_required result, or
// a server-to-client request the pipeline turns into one) parks the task
// in input_required; once every pending request is answered, the call is
// repeated with the answers and the round's sealed state, so the round
// stage binds every round to the task's caller as for a plain call.
//
// Tool errors (the tool ran and said isError; validation and policy
// refusals, which the model must see) complete the task with that result;
// a failure of the call itself (a runtime error such as an upstream's
// JSON-RPC error or its death, a timeout, an unavailable toolset, a
// refused request) fails it with a JSON-RPC error. A task is private to
// the identity that created it (HTTP callers are stateless in this era),
// is kept for its TTL after creation, and lives in the replica that
// created it. The mcp-go server knows nothing of it: toolgate answers the
// extension's requests through the request interceptor of its local
// mcp-go patch (third_party/README.md), before mcp-go's own dispatch.

// TasksExtension is the tasks extension's identifier.
const TasksExtension = "io.modelcontextprotocol/tasks"

const (
	// modernTaskTTL is how long a task is kept after its creation.
	modernTaskTTL = time.Hour
	// modernTaskPoll is the poll interval suggested to callers.
	modernTaskPoll = 500 * time.Millisecond
	// modernTaskKept bounds the tasks kept (running or ended); past it
	// the oldest ended tasks are forgotten before their TTL.
	modernTaskKept = 4096
)

// Task statuses.
const (
	taskWorking       = "working"
	taskInputRequired = "input_required"
	taskCompleted     = "completed"
	taskFailed        = "failed"
	taskCancelled     = "cancelled"
)

type modernTasks struct {
	m  *MCPServer
	mu sync.Mutex
	// guarded by mu
	byID    map[string]*modernTask
	running int
}

type modernTask struct {
	id, tool, owner string
	created         time.Time
	cancel          context.CancelFunc
	call            *Call // the first round's, for the task's events

	// guarded by modernTasks.mu
	status  string
	message string
	updated time.Time
	result  json.RawMessage // completed: the call's result
	err     *RequestError   // failed
	pending map[string]json.RawMessage
	answers map[string]json.RawMessage
	wake    chan struct{} // closed when every pending request is answered
}

// intercept is the mcp-go request interceptor: it answers the tasks
// extension's requests of 2026-07-28 callers and leaves everything else
// to mcp-go.
func (x *modernTasks) intercept(ctx context.Context, _ any, method mcp.MCPMethod, message json.RawMessage) (any, error, bool) {
	pi := modernRequest(ctx)
	if pi == nil {
		return nil, nil, false
	}
	switch method {
	case mcp.MethodTasksResult, mcp.MethodTasksList:
		return nil, &RequestError{Code: mcp.METHOD_NOT_FOUND, Message: fmt.Sprintf("%s was removed in protocol version 2026-07-28: tasks/get inlines a task's result", method)}, true
	case mcp.MethodTasksGet, mcp.MethodTasksCancel, mcp.MethodTasksUpdate:
		if !declaresTasks(pi) {
			return nil, missingTasksExtension(string(method)), true
		}
		res, err := x.handle(ctx, method, message)
		return res, err, true
	case mcp.MethodToolsCall:
		return x.call(ctx, pi, message)
	}
	return nil, nil, false
}

// modernRequest is the protocol information of a 2026-07-28 request, or
// nil for a 2025-era one.
func modernRequest(ctx context.Context) *server.RequestProtocolInfo {
	if pi := server.RequestProtocolInfoFromContext(ctx); pi != nil && pi.Modern {
		return pi
	}
	return nil
}

// declaresTasks reports whether the request's caller declared the
// extension.
func declaresTasks(pi *server.RequestProtocolInfo) bool {
	if pi.ClientCapabilities == nil {
		return false
	}
	_, ok := pi.ClientCapabilities.Extensions[TasksExtension]
	return ok
}

// requiresTasks is the data of a refusal for want of the extension.
var requiresTasks = json.RawMessage(`{"requiredCapabilities":{"extensions":{"` + TasksExtension + `":{}}}}`)

func missingTasksExtension(what string) *RequestError {
	return &RequestError{Code: mcp.MISSING_REQUIRED_CLIENT_CAPABILITY, Data: requiresTasks,
		Message: fmt.Sprintf("%s needs the %s extension: declare it in the request's clientCapabilities.extensions", what, TasksExtension)}
}

// call answers a tools/call that makes a task, and leaves the others to
// mcp-go.
func (x *modernTasks) call(ctx context.Context, pi *server.RequestProtocolInfo, message json.RawMessage) (any, error, bool) {
	// Most calls are of tools without task support, left to mcp-go
	// (which ignores a legacy "task" member on them) without decoding
	// anything here.
	if l := x.m.listing.Load(); l != nil && !l.mayCallTaskTool(message) {
		return nil, nil, false
	}
	var req mcp.CallToolRequest
	if mcp.UnmarshalCallToolRequest(message, &req, true) != nil {
		return nil, nil, false // mcp-go says what is wrong with it
	}
	t, _, ok := x.m.opts.Catalog.Resolve(req.Params.Name)
	if !ok || t.TaskSupport == "" {
		return nil, nil, false
	}
	// Answered here, the call never reaches mcp-go's call filter: asked
	// now, a tool it hides is left to mcp-go, which asks it again and
	// answers "not found" as for any hidden tool.
	ctx, ok = x.m.admitsCall(ctx, req.Params.Name)
	if !ok {
		return nil, nil, false
	}
	if !declaresTasks(pi) {
		if t.TaskSupport == string(mcp.TaskSupportRequired) {
			return nil, missingTasksExtension(fmt.Sprintf("tool %q runs only as a task; calling it", req.Params.Name)), true
		}
		// Served as a plain call (mcp-go would make a 2025-style task
		// of a legacy "task" member: tolerated, never a reason for one).
		req.Params.Task = nil
		res, err := x.m.handleCall(ctx, req)
		return res, err, true
	}
	req.Params.Task = nil
	res, err := x.start(ctx, req, t.TaskDirected)
	return res, err, true
}

// start starts the call of req as a task: at once (the answer is the
// task), or, for a tool that decides itself (directed), as a call that
// becomes a task when the tool says so ([BecomeTask]); until then the
// caller waits for it as for a plain call, and gets its answer if it
// ends first.
func (x *modernTasks) start(ctx context.Context, req mcp.CallToolRequest, directed bool) (any, error) {
	call := x.m.mcpCall(ctx, req)
	tctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	// Its times are set when its caller can see it (register).
	t := &modernTask{id: uuid.NewString(), tool: req.Params.Name, owner: call.Identity, cancel: cancel, call: call, status: taskWorking}
	info := &CallTask{ID: t.id, TTLMs: modernTaskTTL.Milliseconds()}
	if !directed {
		if !x.takePlace() {
			cancel()
			return nil, &RequestError{Code: mcp.INTERNAL_ERROR, Message: fmt.Sprintf("too many tasks running (%d); try again when one has ended", x.m.maxTasks())}
		}
		if req.Params.Meta != nil {
			req.Params.Meta.ProgressToken = nil // the request is answered at once
		}
		created := x.register(t)
		go x.run(tctx, t, req, info, nil, nil)
		return created, nil
	}
	// A call that may become a task takes a place among the tasks running
	// only when it becomes one: until then it is a plain call (call_tool's
	// calls of plain tools among them), and with every place taken it
	// stays one.
	var created *taskCreated
	tctx, offer := withTaskOffer(tctx, info, func() bool {
		if !x.takePlace() {
			return false
		}
		created = x.register(t)
		return true
	})
	plain := make(chan plainAnswer, 1)
	go x.run(tctx, t, req, info, offer, plain)
	select {
	case <-offer.taken:
		return created, nil
	case a := <-plain:
		return x.m.mcpAnswer(a.callID, a.res, false)
	case <-ctx.Done(): // the caller went away
		cancel()
		return nil, ctx.Err()
	}
}

// takePlace takes a place among the tasks running; false when every
// place is taken ([MCPServer.maxTasks]).
func (x *modernTasks) takePlace() bool {
	max := x.m.maxTasks()
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.running >= max {
		return false
	}
	x.running++
	return true
}

// plainAnswer is how a call that did not become a task ended.
type plainAnswer struct {
	callID string
	res    *Result
}

// register makes t a task its caller can see.
func (x *modernTasks) register(t *modernTask) *taskCreated {
	x.mu.Lock()
	t.created = time.Now()
	t.updated = t.created
	x.sweepLocked(t.created)
	if x.byID == nil {
		x.byID = map[string]*modernTask{}
	}
	x.byID[t.id] = t
	created := t.createdLocked()
	x.mu.Unlock()
	x.event("task.created", t, nil)
	return created
}

// run runs the task's call, round after round, to its end. A call that
// may become a task (offer) runs its rounds as a plain call until it
// does: a round that ends first is the caller's answer, sent to plain.
func (x *modernTasks) run(ctx context.Context, t *modernTask, req mcp.CallToolRequest, info *CallTask, offer *taskOffer, plain chan<- plainAnswer) {
	defer func() {
		t.cancel()
		x.mu.Lock()
		if offer == nil || offer.accepted() {
			x.running-- // its place (takePlace)
		}
		// A task that ends without a result (its caller left before it
		// learned the task's id, say) is not left working forever.
		orphan := t.liveLocked() && x.byID[t.id] == t
		if orphan {
			t.status, t.updated, t.pending, t.answers = taskCancelled, time.Now(), nil, nil
		}
		x.mu.Unlock()
		if orphan {
			x.event("task.cancelled", t, map[string]any{"reason": "the call ended without a result"})
		}
	}()
	var (
		answers map[string]json.RawMessage // the previous round's requests, answered
		state   string                     // and its (sealed) request state
	)
	for {
		call := x.m.mcpCall(ctx, req)
		if offer == nil || offer.accepted() {
			call.Task = info
		} else {
			offer.call = call
		}
		if answers != nil {
			call.InputResponses, call.RequestState = answers, state
		}
		res := x.m.runCall(ctx, req, call, taskProgress{x, t})
		if offer != nil && !offer.settle() {
			plain <- plainAnswer{call.ID, res}
			return
		}
		if ctx.Err() != nil {
			return // cancelled: tasks/cancel set the status
		}
		if res.Kind != KindInputRequired {
			x.finish(t, call, res)
			return
		}
		wake := x.park(t, res.InputRequests)
		// Answers are awaited as long as the round's state is good.
		expire := time.NewTimer(RoundTTL)
		select {
		case <-wake:
			expire.Stop()
		case <-res.withdrawn:
			// The tool gave up on its question, or ended (exchange.go):
			// the call goes on without the answers, with those given.
			expire.Stop()
			x.mu.Lock()
			if t.status == taskInputRequired {
				t.status, t.updated, t.pending, t.wake = taskWorking, time.Now(), nil, nil
			}
			x.mu.Unlock()
			if ctx.Err() != nil {
				return // cancelled: tasks/cancel set the status
			}
		case <-ctx.Done():
			expire.Stop()
			return
		case <-x.m.opts.Pipeline.Closing():
			// No round can run any more: the task ends, cancelled, and
			// says so in the archive before it closes.
			expire.Stop()
			res := CancelledResult(req.Params.Name)
			res.Message = "the gateway shut down while the task waited for its caller's input"
			x.finish(t, call, res)
			return
		case <-expire.C:
			x.finish(t, call, RequestErrorResult(&RequestError{Code: mcp.INVALID_PARAMS,
				Message: fmt.Sprintf("no answer to the task's input requests within %s", RoundTTL)}))
			return
		}
		x.mu.Lock()
		answers, state = t.answers, res.RequestState
		t.answers = nil
		x.mu.Unlock()
	}
}

// park puts the task in input_required with the round's requests, and
// returns the channel closed once they are all answered.
func (x *modernTasks) park(t *modernTask, requests map[string]json.RawMessage) chan struct{} {
	x.mu.Lock()
	defer x.mu.Unlock()
	t.status, t.updated = taskInputRequired, time.Now()
	t.pending, t.answers, t.wake = requests, map[string]json.RawMessage{}, make(chan struct{})
	return t.wake
}

// finish ends the task with the call's result: completed with it, or
// failed when the call itself failed.
func (x *modernTasks) finish(t *modernTask, call *Call, res *Result) {
	var (
		out    json.RawMessage
		failed *RequestError
	)
	switch res.Kind {
	case KindRequestError:
		failed = res.Refusal
	case KindRuntime, KindTimeout, KindUnavailable:
		failed = &RequestError{Code: mcp.INTERNAL_ERROR, Message: res.Message}
	}
	if res.Cause != nil {
		failed = res.Cause
	}
	if failed == nil {
		r := ToMCPResult(call.ID, res)
		r.ResultType = mcp.ResultTypeComplete
		b, err := json.Marshal(r)
		if err != nil {
			failed = &RequestError{Code: mcp.INTERNAL_ERROR, Message: fmt.Sprintf("the tool's result does not encode: %v", err)}
		}
		out = b
	}
	x.mu.Lock()
	if t.status == taskCancelled {
		x.mu.Unlock()
		return
	}
	if res.Kind == KindCancelled {
		// Cancelled other than by tasks/cancel (shutdown, a person's
		// queue closed): the task is cancelled, not completed.
		t.status, t.updated, t.pending, t.answers = taskCancelled, time.Now(), nil, nil
		x.mu.Unlock()
		x.event("task.cancelled", t, map[string]any{"reason": Truncate(res.Message, 1024)})
		return
	}
	t.updated = time.Now()
	if failed != nil {
		t.status, t.err = taskFailed, failed
	} else {
		t.status, t.result = taskCompleted, out
	}
	x.mu.Unlock()
	if failed != nil {
		x.event("task.failed", t, map[string]any{"error": Truncate(failed.Message, 1024)})
	} else {
		x.event("task.completed", t, map[string]any{"is_error": res.IsError})
	}
}

// taskProgress keeps a task's call's progress messages as its status
// message (the request that created the task has been answered).
type taskProgress struct {
	x *modernTasks
	t *modernTask
}

func (p taskProgress) Report(pr Progress) {
	if pr.Message == "" {
		return
	}
	p.x.mu.Lock()
	p.t.message, p.t.updated = Truncate(pr.Message, 1024), time.Now()
	p.x.mu.Unlock()
}

// taskParams are the params of tasks/get, tasks/update and tasks/cancel.
type taskParams struct {
	TaskID         string          `json:"taskId"`
	InputResponses json.RawMessage `json:"inputResponses"`
}

// handle answers tasks/get, tasks/update and tasks/cancel.
func (x *modernTasks) handle(ctx context.Context, method mcp.MCPMethod, message json.RawMessage) (any, error) {
	var req struct {
		Params taskParams `json:"params"`
	}
	if err := json.Unmarshal(message, &req); err != nil || req.Params.TaskID == "" {
		return nil, &RequestError{Code: mcp.INVALID_PARAMS, Message: fmt.Sprintf("%s needs params.taskId (a string)", method)}
	}
	owner := withCaller(ctx, &Call{}).Identity
	x.mu.Lock()
	t := x.byID[req.Params.TaskID]
	if t == nil || t.owner != owner || t.expiredLocked(time.Now()) {
		x.mu.Unlock()
		return nil, &RequestError{Code: mcp.INVALID_PARAMS, Message: fmt.Sprintf("no task %q (unknown, expired, or another caller's)", req.Params.TaskID)}
	}
	switch method {
	case mcp.MethodTasksGet:
		detail := t.detailLocked()
		x.mu.Unlock()
		return detail, nil
	case mcp.MethodTasksUpdate:
		err := x.answerLocked(t, req.Params.InputResponses)
		x.mu.Unlock()
		if err != nil {
			return nil, err
		}
		return taskAck(), nil
	default: // tasks/cancel
		live := t.liveLocked()
		if live {
			t.status, t.updated = taskCancelled, time.Now()
			t.pending, t.answers = nil, nil
		}
		x.mu.Unlock()
		if live {
			t.cancel()
			x.event("task.cancelled", t, nil)
		}
		return taskAck(), nil
	}
}

// answerLocked takes a tasks/update's answers: those to pending requests
// are kept, and the task resumes once none is left.
func (x *modernTasks) answerLocked(t *modernTask, raw json.RawMessage) *RequestError {
	var answers map[string]json.RawMessage
	if len(raw) == 0 || json.Unmarshal(raw, &answers) != nil || answers == nil {
		return &RequestError{Code: mcp.INVALID_PARAMS, Message: "tasks/update needs params.inputResponses, an object of answers by input request id"}
	}
	if t.status != taskInputRequired {
		return nil // nothing is waiting: the answers are late, or early
	}
	for k, v := range answers {
		if _, ok := t.pending[k]; ok {
			t.answers[k] = v
		}
	}
	t.updated = time.Now()
	if len(t.answers) == len(t.pending) {
		// Every request is answered: the task resumes (run takes the
		// answers).
		t.status, t.pending = taskWorking, nil
		close(t.wake)
		t.wake = nil
	}
	return nil
}

// liveLocked reports whether the task has not ended yet.
func (t *modernTask) liveLocked() bool {
	return t.status == taskWorking || t.status == taskInputRequired
}

// expiredLocked reports whether the task ended and is past its TTL.
func (t *modernTask) expiredLocked(now time.Time) bool {
	return !t.liveLocked() && now.Sub(t.created) > modernTaskTTL
}

// sweepLocked forgets tasks past their TTL, and the oldest ended ones
// past modernTaskKept. It runs when a task is created.
func (x *modernTasks) sweepLocked(now time.Time) {
	var ended []*modernTask
	for id, t := range x.byID {
		switch {
		case t.expiredLocked(now):
			delete(x.byID, id)
		case !t.liveLocked():
			ended = append(ended, t)
		}
	}
	if over := len(x.byID) - modernTaskKept; over > 0 {
		sort.Slice(ended, func(i, j int) bool { return ended[i].created.Before(ended[j].created) })
		for _, t := range ended[:min(over, len(ended))] {
			delete(x.byID, t.id)
		}
	}
}

func (x *modernTasks) event(typ string, t *modernTask, more map[string]any) {
	fields := map[string]any{"task_id": t.id, "tool": t.tool, "protocol": "2026-07-28"}
	for k, v := range more {
		fields[k] = v
	}
	x.m.opts.Pipeline.callerEvent(typ, t.call, fields)
}

// The wire forms (SEP-2663). mcp.Result gives them the resultType and
// _meta mcp-go decorates 2026-07-28 results with.

// taskFields are a task's fields in CreateTaskResult and DetailedTask.
type taskFields struct {
	TaskID         string `json:"taskId"`
	Status         string `json:"status"`
	StatusMessage  string `json:"statusMessage,omitempty"`
	CreatedAt      string `json:"createdAt"`
	LastUpdatedAt  string `json:"lastUpdatedAt"`
	TTLMs          int64  `json:"ttlMs"`
	PollIntervalMs int64  `json:"pollIntervalMs"`
}

type taskCreated struct {
	mcp.Result
	taskFields
}

type taskDetail struct {
	mcp.Result
	taskFields
	InputRequests map[string]json.RawMessage `json:"inputRequests,omitempty"`
	Output        json.RawMessage            `json:"result,omitempty"`
	Error         *RequestError              `json:"error,omitempty"`
}

func taskAck() *mcp.Result { return &mcp.Result{ResultType: mcp.ResultTypeComplete} }

func (t *modernTask) fieldsLocked() taskFields {
	return taskFields{
		TaskID: t.id, Status: t.status, StatusMessage: t.message,
		CreatedAt: t.created.UTC().Format(time.RFC3339Nano), LastUpdatedAt: t.updated.UTC().Format(time.RFC3339Nano),
		TTLMs: modernTaskTTL.Milliseconds(), PollIntervalMs: modernTaskPoll.Milliseconds(),
	}
}

func (t *modernTask) createdLocked() *taskCreated {
	return &taskCreated{Result: mcp.Result{ResultType: "task"}, taskFields: t.fieldsLocked()}
}

func (t *modernTask) detailLocked() *taskDetail {
	d := &taskDetail{Result: mcp.Result{ResultType: mcp.ResultTypeComplete}, taskFields: t.fieldsLocked()}
	switch t.status {
	case taskCompleted:
		d.Output = t.result
	case taskFailed:
		d.Error = t.err
	case taskInputRequired:
		d.InputRequests = make(map[string]json.RawMessage, len(t.pending))
		for k, v := range t.pending {
			if _, answered := t.answers[k]; !answered {
				d.InputRequests[k] = v
			}
		}
	}
	return d
}
