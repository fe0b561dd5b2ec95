package gateway

import "context"

// authorizeStage asks the policy whether the resolved tool may be called.
// The decision is kept on the call (and so in its record) whatever it is; a
// refusal ends the call with a permission-denied result that names the tool,
// the missing capabilities and the deciding layer and rule. A call the
// policy allows only with approval goes on to the approve stage.
func (p *Pipeline) authorizeStage(next Handler) Handler {
	if p.opts.Policy == nil {
		return next
	}
	return func(ctx context.Context, call *Call) *Result {
		call.decision = p.opts.Policy.Decide(ctx, call.Tool)
		d := &call.decision
		call.Decision = d
		if !d.Allow && !d.Ask {
			return DeniedResult(call.Name, *d)
		}
		p.stageEvent(ctx, "authorized")
		return next(ctx, call)
	}
}
