package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
)

// ApprovalInput is the id of the approval form among a round's input
// requests.
const ApprovalInput = "approval"

// Approver asks a person whether a call may run: the approval channel
// (the calling client's elicitation, an operator). Approve blocks until
// an answer, ctx's end, or the channel's own timeout; it never panics.
type Approver interface {
	Approve(ctx context.Context, call *Call) Approval
}

// Approval is a person's answer about one call.
type Approval struct {
	Granted bool
	// Scope is "once" (this call) or "session" (this tool, for the rest
	// of the caller's session).
	Scope string
	// Channel is who answered: "client" (elicitation), "operator", or
	// "session" (an earlier approval for the session).
	Channel string
	// By, if set, says how the answer reached the channel (the
	// operator's "cli", "http" or "ui"), for the record.
	By string
	// Expired is set when nobody answered in time (a denial).
	Expired bool
	// Closed is set when the channel closed under the wait (the gateway
	// shuts down): nobody answered, the call is cancelled.
	Closed bool
	// Reason says why it was denied, for the model.
	Reason string
	// InputRequest, when set, asks the client in a round of its own call
	// (a 2026-07-28 client): the params of an elicitation/create, with the
	// state the client echoes back with its answer. The call ends this
	// round input-required; the client's retry carries the answer.
	InputRequest json.RawMessage
	RequestState string
}

// approveStage runs between authorize and summarize: a call the policy
// allows only with a person's approval (Decision.Ask) waits for it. An
// approval turns the call's decision into an allow by the "approval" layer
// that names the channel and scope; a refusal or no answer ends the call
// denied. Every step is an event: approval.requested, then
// approval.granted, approval.denied or approval.expired (or
// approval.cancelled when the gateway shuts down during the wait).
func (p *Pipeline) approveStage(next Handler) Handler {
	if p.opts.Policy == nil {
		return next
	}
	return func(ctx context.Context, call *Call) *Result {
		d := call.Decision
		if d == nil || d.Allow || !d.Ask {
			return next(ctx, call)
		}
		if p.opts.Approver == nil {
			denied := *d
			denied.Ask = false
			denied.Reason += "; but no approval channel is configured"
			call.Decision = &denied
			return DeniedResult(call.Name, denied)
		}
		if IsRoundState(call.RequestState) {
			// The repeat of a round the tool asked: the call passed this
			// stage before the tool ran (the round stage, next, refuses a
			// state that is not this call's). A refused state leaves the
			// call without its Round, and its record with the decision
			// that asked, not an approval it never had.
			call.Decision = approvedBy(d, "approval:round", "in an earlier round of this call")
			res := next(ctx, call)
			if call.Round == nil {
				call.Decision = d
			}
			return res
		}
		if call.RequestState == "" { // not the answering round of an earlier request
			p.event("approval.requested", call, map[string]any{"rule": d.Rule})
		}
		// When the shutdown grace ends, a call waiting for a person is
		// cancelled with the calls executing: an answer may take up to
		// policy.approval.timeout, far past the grace, and a supervisor's
		// SIGKILL meanwhile would lose the call's record.
		// Only the shutdown cancels actx without ending ctx.
		actx, cancel := context.WithCancel(ctx)
		key := p.execStart(cancelFunc(cancel))
		a := p.opts.Approver.Approve(actx, call)
		p.execEnd(key)
		shutdown := actx.Err() != nil && ctx.Err() == nil || a.Closed
		cancel()
		fields := map[string]any{"channel": a.Channel}
		if a.By != "" {
			fields["by"] = a.By
		}
		why := ""
		switch {
		case a.Granted || len(a.InputRequest) > 0:
		case shutdown:
			why = "the gateway shut down while the call waited for approval"
		case errors.Is(ctx.Err(), context.Canceled):
			// The client cancelled the call (or went away): nobody
			// refused it and no timeout passed.
			why = "the client cancelled the call while it waited for approval"
		}
		if why != "" {
			p.event("approval.cancelled", call, fields)
			denied := *d
			denied.Ask = false
			denied.Layer = "approval"
			denied.Rule = "approval:cancelled"
			denied.Reason = why
			call.Decision = &denied
			return CancelledResult(call.Name).WithMessage(fmt.Sprintf("Tool `%s` was cancelled: %s", call.Name, denied.Reason))
		}
		if len(a.InputRequest) > 0 {
			req, _ := json.Marshal(map[string]any{"method": MethodElicitation, "params": a.InputRequest})
			fields["round"] = "input_required"
			p.event("approval.asked", call, fields)
			return InputRequiredResult(map[string]json.RawMessage{ApprovalInput: req}, a.RequestState,
				"The call waits for a person's approval: answer the form and repeat the call.")
		}
		if a.Granted {
			if call.RequestState != "" {
				// The answer came in a round of the call: its state and
				// answers were the approval's, not the tool's.
				call.RequestState, call.InputResponses = "", nil
			}
			call.Decision = approvedBy(d, "approval:"+a.Channel+":"+a.Scope, scopeText(a.Scope)+" through "+a.Channel)
			fields["scope"] = a.Scope
			p.event("approval.granted", call, fields)
			p.stageEvent(ctx, "approved")
			return next(ctx, call)
		}
		denied := *d
		denied.Ask = false
		denied.Layer = "approval"
		if a.Expired {
			denied.Rule = "approval:expired"
			p.event("approval.expired", call, fields)
		} else {
			denied.Rule = "approval:denied:" + a.Channel
			p.event("approval.denied", call, fields)
		}
		denied.Reason = a.Reason
		call.Decision = &denied
		return DeniedResult(call.Name, denied)
	}
}

// approvedBy is decision d (which asked for approval) turned into an allow
// by the approval layer: rule names how, how says it in the reason.
func approvedBy(d *Decision, rule, how string) *Decision {
	approved := *d
	approved.Allow, approved.Ask = true, false
	approved.Layer = "approval"
	approved.Rule = rule
	approved.Reason = fmt.Sprintf("approved %s (approval asked by %s)", how, d.Rule)
	return &approved
}

func scopeText(scope string) string {
	if scope == "session" {
		return "for the session"
	}
	return "once"
}

// event records an event about a call when the recorder keeps events.
func (p *Pipeline) event(typ string, call *Call, fields map[string]any) {
	fields["call_id"], fields["tool"] = call.ID, call.Name
	p.callerEvent(typ, call, fields)
}

// callerEvent records an event with who made the call (callerFields of
// caller), when the recorder keeps events. Events about a call use
// [Pipeline.event]; this is for those that are no call's (a task's life,
// a round of prompts/get, a request relayed outside a call).
func (p *Pipeline) callerEvent(typ string, caller *Call, fields map[string]any) {
	er, ok := p.opts.Recorder.(EventRecorder)
	if !ok {
		return
	}
	callerFields(fields, caller)
	er.Event(typ, fields)
}
