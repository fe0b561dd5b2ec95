package gateway

import (
	"context"
	"fmt"
)

// resolveStage finds the tool a call names. An unknown name ends the call
// with a not-found result.
func (p *Pipeline) resolveStage(next Handler) Handler {
	return func(ctx context.Context, call *Call) *Result {
		t, toolset, ok := p.opts.Tools.Resolve(call.Name)
		if ok && call.View != nil && !call.View.Admits(call.Name) {
			// Outside the caller's profile: as unknown as a tool that does
			// not exist, and recorded like one.
			res := NotFoundResult(call.Name)
			res.Message += fmt.Sprintf(" in profile %q", call.View.Name())
			return res
		}
		if !ok {
			res := NotFoundResult(call.Name)
			if w, ok := p.opts.Tools.(interface{ WhyNotFound(string) string }); ok {
				if why := w.WhyNotFound(call.Name); why != "" {
					res.Message += ": " + why
					return res
				}
			}
			if c, ok := p.opts.Tools.(interface{ Entries() []Entry }); ok {
				var names []string // only those the caller may see
				for _, e := range c.Entries() {
					if call.View == nil || call.View.Admits(e.Tool.Name) {
						names = append(names, e.Tool.Name)
					}
				}
				res.Message += DidYouMean(call.Name, names)
			}
			return res
		}
		call.Tool, call.Toolset = t, toolset
		p.stageEvent(ctx, "resolved")
		return next(ctx, call)
	}
}
