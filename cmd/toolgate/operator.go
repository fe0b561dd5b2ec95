package main

import (
	"context"
	"encoding/json"

	"github.com/toolgate/toolgate/gateway"
	"github.com/toolgate/toolgate/gateway/operator"
	"github.com/toolgate/toolgate/policy"
	"github.com/toolgate/toolgate/toolsets/definitions"
)

// The operator channel (config admin, definitions): wiring only; the queue
// and the admin API are gateway/operator's, the tools toolsets/definitions'.

// addDefinitions adds the definition-only tools, whose calls wait for an
// operator in a.queue (none where no operator can answer).
func (a *app) addDefinitions(ctx context.Context) error {
	if len(a.cfg.Definitions) == 0 {
		return nil
	}
	defs := make([]definitions.Definition, len(a.cfg.Definitions))
	for i, d := range a.cfg.Definitions {
		defs[i] = definitions.Definition{Name: d.Name, Description: d.Description, Answer: d.Answer, Timeout: d.Timeout}
		var err error
		if defs[i].InputSchema, err = schemaJSON(d.InputSchema); err != nil {
			return usagef("definitions[%d].input_schema: %v", i, err)
		}
		if defs[i].OutputSchema, err = schemaJSON(d.OutputSchema); err != nil {
			return usagef("definitions[%d].output_schema: %v", i, err)
		}
	}
	opts := definitions.Options{Definitions: defs}
	if a.queue != nil { // not a nil *Queue in the interface
		opts.Waiter = a.queue
	}
	if a.run != nil {
		opts.Events = a.run
	}
	ts, err := definitions.New(opts)
	if err != nil {
		return usageError{err.Error()}
	}
	return a.catalog.Add(ctx, ts)
}

func schemaJSON(m map[string]any) (json.RawMessage, error) {
	if m == nil {
		return nil, nil
	}
	return json.Marshal(m)
}

// serveAdmin starts the admin API on admin.addr (beside stdio or HTTP)
// until ctx ends.
func (a *app) serveAdmin(ctx context.Context) error {
	if a.cfg.Admin.Addr == "" {
		if len(a.cfg.Definitions) > 0 {
			a.log.Warn("definition-only tools are configured but admin.addr is not: only answer: person tools can be answered, by clients that show forms; calls that need an operator are refused")
		}
		if why := unanswerableApprovals(a.policy); why != "" {
			a.log.Warn(why)
		}
		return nil
	}
	tokens, err := a.cfg.AdminTokens()
	if err != nil {
		return usageError{err.Error()}
	}
	bound, err := a.listenAside(ctx, "admin.addr", a.cfg.Admin.Addr, operator.Handler(a.queue, operator.HTTPOptions{Tokens: tokens, Logger: a.log, Status: a.operatorStatus()}))
	if err != nil {
		return err
	}
	a.log.Info("serving the admin API and the operator page", "api", "http://"+bound+"/v1/pending", "page", "http://"+bound+"/ui")
	return nil
}

// unanswerableApprovals says, when the policy asks for approval and no
// admin API is configured (the operator's only way to answer), which of
// the calls it asks about will be denied without anyone being asked; ""
// when the policy asks for none. Each such call is denied at once with
// the same reason; this says it when the gateway starts, before a call.
func unanswerableApprovals(p *policy.Live) string {
	switch {
	case !p.NeedsApproval():
		return ""
	case p.ApprovalChannel() == "operator":
		return "the policy asks for approval through the operator (policy.approval.channel: operator) but admin.addr is not set: every call that needs approval will be denied; set admin.addr to answer them (toolgate approvals, the operator page)"
	}
	return "the policy asks for approval but admin.addr is not set: only clients that show elicitation forms can approve a call; calls from the others that need approval will be denied (set admin.addr to answer them as the operator)"
}

// approver is the approval channel: always there, so that a reload that
// makes the policy ask has a channel to ask through (a call the policy
// does not ask about never reaches it). Without a queue (no admin API) a
// call that would wait for the operator's approval is denied at once.
func (a *app) approver() gateway.Approver {
	a.approvals = operator.NewApprovals(operator.ApprovalOptions{
		Queue: a.queue, Channel: a.policy.ApprovalChannel(), Timeout: a.policy.ApprovalTimeout(),
		RoundSecrets: roundSecrets(a.cfg),
	})
	return a.approvals
}

// forgetSession drops what a session held: skill grants and approvals for
// the session.
func (a *app) forgetSession(session string) {
	a.policy.ForgetSession(session)
	if a.approvals != nil {
		a.approvals.ForgetSession(session)
	}
}
