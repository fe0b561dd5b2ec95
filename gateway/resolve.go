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
			if call.View != nil && call.View.Name() != "" {
				res.Message += fmt.Sprintf(" in profile %q", call.View.Name())
			}
			if w, ok := p.opts.Tools.(interface{ WhyNotFound(string) string }); ok && admitted {
				if why := w.WhyNotFound(call.Name); why != "" {
					res.Message += ": " + why
					return res
				}
			}
			if c, ok := p.opts.Tools.(interface{ Entries() []Entry }); ok {
				res.Message += suggestTools(c.Entries(), call.Name, call.View)
			}
			return res
		}
		call.Tool, call.Toolset = t, toolset
		p.stageEvent(ctx, "resolved")
		return next(ctx, call)
	}
}

// suggestTools is what a call of name, a tool the caller cannot reach, is
// told of the tools it may call instead ("; did you mean read_file?"): only
// those the caller's view admits, so the answer never names a tool beyond
// its profile. The pipeline's not-found results and MCP's tools/call
// errors say the same.
func suggestTools(entries []Entry, name string, view View) string {
	var names []string
	for _, e := range entries {
		if view == nil || view.Admits(e.Tool.Name) {
			names = append(names, e.Tool.Name)
		}
	}
	return DidYouMean(name, names)
}
