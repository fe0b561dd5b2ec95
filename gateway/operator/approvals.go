package operator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/toolgate/toolgate/gateway"
)

// Decisions a person can give about a call.
const (
	AllowOnce    = "allow_once"
	AllowSession = "allow_session"
	Deny         = "deny"
)

// ApprovalOptions configure [NewApprovals].
type ApprovalOptions struct {
	// Queue is the operator channel; nil when there is none (no admin API).
	Queue *Queue
	// Channel is "client" (ask the calling client through elicitation when
	// it can, else the operator) or "operator" (always the operator).
	Channel string
	// Timeout bounds the wait for an answer; no answer is a denial.
	Timeout time.Duration
	// RoundSecrets are the replicas' shared session keys, if any: an
	// approval asked in a round of a 2026-07-28 call can then be answered
	// to any replica ([gateway.NewRoundStates]). Read by NewApprovals only.
	RoundSecrets [][]byte
}

// approvalPrefix marks the request state of an approval asked in a round.
const approvalPrefix = "tga1."

// Approvals is the gateway's approval channel ([gateway.Approver]): it asks
// the calling client's user (2025-era elicitation/create, form mode) or the
// operator (the queue), and remembers "allow for this session" answers per
// session until the session ends.
//
// An answer is bound to its call: an elicitation is answered within the
// call's own request, and an operator's answer names the waiting call's ID,
// is taken once, and only while the call waits; anything else is refused
// as "no call with that ID is waiting".
type Approvals struct {
	optsMu sync.Mutex
	opts   ApprovalOptions
	rounds *gateway.RoundStates

	mu      sync.Mutex
	session map[string]map[string]bool // session -> tools allowed for it
	// asking counts the approvals being asked per session; ended holds
	// the sessions that ended while one was, so that an "allow for this
	// session" answered after the end is not remembered (for ever).
	asking map[string]int
	ended  map[string]bool
}

var _ gateway.Approver = (*Approvals)(nil)

// NewApprovals returns the approval channel.
func NewApprovals(opts ApprovalOptions) *Approvals {
	if opts.Timeout <= 0 {
		opts.Timeout = 2 * time.Minute
	}
	return &Approvals{opts: opts, rounds: gateway.NewRoundStates(approvalPrefix, opts.RoundSecrets), session: map[string]map[string]bool{},
		asking: map[string]int{}, ended: map[string]bool{}}
}

// SetOptions changes the channel and timeout for the approvals asked from
// now on (a reload); approvals being asked keep theirs.
func (ap *Approvals) SetOptions(channel string, timeout time.Duration) {
	if timeout <= 0 {
		timeout = 2 * time.Minute
	}
	ap.optsMu.Lock()
	ap.opts.Channel, ap.opts.Timeout = channel, timeout
	ap.optsMu.Unlock()
}

func (ap *Approvals) options() ApprovalOptions {
	ap.optsMu.Lock()
	defer ap.optsMu.Unlock()
	return ap.opts
}

// ForgetSession drops a session's "allow for this session" answers.
func (ap *Approvals) ForgetSession(session string) {
	ap.mu.Lock()
	delete(ap.session, session)
	if ap.asking[session] > 0 {
		ap.ended[session] = true
	}
	ap.mu.Unlock()
}

// asked marks an approval of session being asked until the function it
// returns is called.
func (ap *Approvals) asked(session string) func() {
	if session == "" {
		return func() {}
	}
	ap.mu.Lock()
	ap.asking[session]++
	ap.mu.Unlock()
	return func() {
		ap.mu.Lock()
		if ap.asking[session]--; ap.asking[session] <= 0 {
			delete(ap.asking, session)
			delete(ap.ended, session)
		}
		ap.mu.Unlock()
	}
}

func (ap *Approvals) remembered(session, tool string) bool {
	ap.mu.Lock()
	defer ap.mu.Unlock()
	return session != "" && ap.session[session][tool]
}

// remember keeps an "allow for this session" answer, and reports whether
// it could (not without a session, nor for one that ended meanwhile).
func (ap *Approvals) remember(session, tool string) bool {
	if session == "" {
		return false
	}
	ap.mu.Lock()
	defer ap.mu.Unlock()
	if ap.ended[session] {
		return false
	}
	if ap.session[session] == nil {
		ap.session[session] = map[string]bool{}
	}
	ap.session[session][tool] = true
	return true
}

// Approve implements [gateway.Approver].
func (ap *Approvals) Approve(ctx context.Context, call *gateway.Call) gateway.Approval {
	opts := ap.options()
	if ap.remembered(call.Session, call.Name) {
		return gateway.Approval{Granted: true, Scope: "session", Channel: "session"}
	}
	if call.RequestState != "" {
		return ap.answered(call) // the answering round of a 2026-07-28 call
	}
	defer ap.asked(call.Session)()
	if opts.Channel != "operator" && gateway.CanElicitInRounds(ctx, "form") {
		// A 2026-07-28 client that can show a form: ask in a round of its
		// own call, which ends input-required; its retry carries the
		// answer and the state. One that declared URL mode only cannot:
		// the operator decides, as for a client without elicitation.
		return gateway.Approval{Channel: "client", InputRequest: approvalForm(call), RequestState: ap.rounds.Seal(call, "", opts.Timeout)}
	}
	ctx, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()

	if opts.Channel != "operator" {
		decision, err := askClient(ctx, call)
		switch {
		case err == nil:
			return ap.answer(call, decision, "client")
		case errors.Is(err, gateway.ErrClientCannot), errors.Is(err, gateway.ErrNoClient):
			// The client cannot ask its user: the operator decides.
		case ctx.Err() != nil:
			return expired(opts)
		default:
			return gateway.Approval{Channel: "client", Reason: "the client could not ask for approval: " + err.Error()}
		}
	}
	if opts.Queue == nil {
		return gateway.Approval{Channel: "operator", Reason: "the call needs a person's approval, and there is no way to ask: " +
			"the client cannot show an elicitation form (or policy.approval.channel is operator) and no admin API is configured (admin.addr)"}
	}
	deadline, _ := ctx.Deadline()
	item := Item{
		ID: call.ID, Kind: KindApproval, Tool: call.Name, Toolset: call.Toolset, Session: call.SessionRef(), Client: call.Client,
		Created: time.Now(), Deadline: deadline, Arguments: gateway.RecordArguments(call), Reason: reasonOf(call),
	}
	if call.Tool != nil {
		item.Description = call.Tool.Description
	}
	a, err := opts.Queue.Wait(ctx, item, func(a Answer) error {
		switch a.Decision {
		case AllowOnce, AllowSession, Deny:
			return nil
		}
		if a.Decision == "" && len(a.Output) > 0 {
			return fmt.Errorf(`this call of %s waits for approval, not for an output: answer {"decision": %q | %q | %q} (toolgate approve CALL-ID [--session], toolgate deny CALL-ID)`,
				call.Name, AllowOnce, AllowSession, Deny)
		}
		return fmt.Errorf("an approval's decision is one of %s, %s, %s; got %q", AllowOnce, AllowSession, Deny, a.Decision)
	})
	switch {
	case err == nil:
		res := ap.answer(call, a.Decision, "operator")
		res.By = a.By
		return res
	case errors.Is(err, ErrClosed):
		return gateway.Approval{Channel: "operator", Closed: true, Reason: "the gateway is shutting down"}
	default:
		return expired(opts)
	}
}

func expired(opts ApprovalOptions) gateway.Approval {
	return gateway.Approval{Expired: true, Channel: "none", Reason: fmt.Sprintf("no approval within %s (policy.approval.timeout), so the call is denied", opts.Timeout)}
}

func (ap *Approvals) answer(call *gateway.Call, decision, channel string) gateway.Approval {
	switch decision {
	case AllowOnce:
		return gateway.Approval{Granted: true, Scope: "once", Channel: channel}
	case AllowSession:
		if !ap.remember(call.Session, call.Name) {
			// No session to remember it for (a 2026-07-28 client, or one
			// that ended while the call waited): once it is, and the
			// record says so.
			return gateway.Approval{Granted: true, Scope: "once", Channel: channel}
		}
		return gateway.Approval{Granted: true, Scope: "session", Channel: channel}
	}
	return gateway.Approval{Channel: channel, Reason: "a person denied this call (through the " + channel + ")"}
}

func reasonOf(call *gateway.Call) string {
	if call.Decision != nil {
		return call.Decision.Reason
	}
	return ""
}

// answered takes the answer a 2026-07-28 client sent with the state of an
// earlier round: the state must be one the gateway minted for this very
// call (tool, arguments, caller), unexpired and unused.
func (ap *Approvals) answered(call *gateway.Call) gateway.Approval {
	if _, err := ap.rounds.Open(call.RequestState, call); err != nil {
		return gateway.Approval{Channel: "client", Reason: "the approval's " + strings.TrimPrefix(err.Error(), "the ") + ", so the call is denied"}
	}
	raw, ok := call.InputResponses[gateway.ApprovalInput]
	if !ok {
		return gateway.Approval{Channel: "client", Reason: "the client repeated the call without answering the approval form"}
	}
	decision, err := decisionOf(raw)
	if err != nil {
		return gateway.Approval{Channel: "client", Reason: err.Error()}
	}
	if decision == AllowSession {
		decision = AllowOnce // a 2026-07-28 client has no session to remember it in
	}
	return ap.answer(call, decision, "client")
}

// decisionOf reads the decision from an elicitation result: declined or
// dismissed is a denial, as is an answer that is not one of the choices.
func decisionOf(raw json.RawMessage) (string, error) {
	var res struct {
		Action  string `json:"action"`
		Content struct {
			Decision string `json:"decision"`
		} `json:"content"`
	}
	if err := json.Unmarshal(raw, &res); err != nil {
		return "", fmt.Errorf("the client's answer does not decode: %w", err)
	}
	if res.Action != "accept" {
		return Deny, nil
	}
	switch res.Content.Decision {
	case AllowOnce, AllowSession, Deny:
		return res.Content.Decision, nil
	}
	return Deny, nil
}

// approvalForm is the elicitation/create params (form mode) that ask a
// person about a call.
func approvalForm(call *gateway.Call) json.RawMessage {
	var b strings.Builder
	fmt.Fprintf(&b, "Allow the tool %s (toolset %s) to run?\n", call.Name, call.Toolset)
	if call.Tool != nil {
		if d := strings.TrimSpace(call.Tool.Description); d != "" {
			fmt.Fprintf(&b, "\nWhat it does: %s\n", gateway.Truncate(d, 500))
		}
		if hints := call.Tool.Permissions.Resolved().Names(); len(hints) > 0 {
			fmt.Fprintf(&b, "Hints: %s\n", strings.Join(hints, ", "))
		}
	}
	fmt.Fprintf(&b, "Arguments: %s\n", gateway.Truncate(string(gateway.RecordArguments(call)), 1500))
	if r := reasonOf(call); r != "" {
		fmt.Fprintf(&b, "\nWhy approval is needed: %s\n", r)
	}
	params, _ := json.Marshal(map[string]any{
		"mode":    "form",
		"message": b.String(),
		"requestedSchema": map[string]any{
			"type": "object",
			"properties": map[string]any{
				"decision": map[string]any{
					"type": "string", "title": "Decision",
					"enum":      []string{AllowOnce, AllowSession, Deny},
					"enumNames": []string{"Allow once", "Allow this tool for this session", "Deny"},
				},
			},
			"required": []string{"decision"},
		},
	})
	return params
}

// askClient asks the calling client's user with an elicitation form.
func askClient(ctx context.Context, call *gateway.Call) (string, error) {
	raw, err := gateway.RequestFromClient(ctx, gateway.MethodElicitation, approvalForm(call))
	if err != nil {
		return "", err
	}
	return decisionOf(raw)
}
