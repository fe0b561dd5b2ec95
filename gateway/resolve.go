package gateway

import "context"

// resolveStage finds the tool a call names. An unknown name ends the call
// with a not-found result.
func (p *Pipeline) resolveStage(next Handler) Handler {
	return func(ctx context.Context, call *Call) *Result {
		t, toolset, ok := p.opts.Tools.Resolve(call.Name)
		if !ok {
			return NotFoundResult(call.Name)
		}
		call.Tool, call.Toolset = t, toolset
		return next(ctx, call)
	}
}
