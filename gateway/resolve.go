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
		admitted := call.View == nil || call.View.Admits(call.Name)
		if !ok || !admitted {
			// A tool outside the caller's profile is as unknown as one that
			// does not exist: the same answer (suffix and suggestions
			// alike), so that the answer does not tell which tools exist
			// beyond the profile, and recorded like one.
			res := NotFoundResult(call.Name)
			if call.View != nil {
				res.Message += fmt.Sprintf(" in profile %q", call.View.Name())
			}
			if w, ok := p.opts.Tools.(interface{ WhyNotFound(string) string }); ok && admitted {
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
