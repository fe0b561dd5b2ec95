package main

import (
	"context"
	"slices"

	"github.com/toolgate/toolgate/gateway"
	"github.com/toolgate/toolgate/gateway/operator"
	"github.com/toolgate/toolgate/gateway/telemetry"
	"github.com/toolgate/toolgate/policy"
	"github.com/toolgate/toolgate/toolsets/definitions"
	"github.com/toolgate/toolgate/toolsets/discovery"
)

// withRecent adds the operator's list of latest calls to the call
// recorders when the admin API is on (off, calls carry nothing for it).
func (a *app) withRecent(rec gateway.Recorder) gateway.Recorder {
	if a.cfg.Admin.Addr == "" {
		return rec
	}
	a.recent = operator.NewRecent(200)
	if rec == nil {
		return a.recent
	}
	return telemetry.Recorders(rec, a.recent)
}

// operatorStatus is what the admin API and page show of the gateway.
func (a *app) operatorStatus() *operator.Status {
	builtin := []string{definitions.Name, discovery.Name}
	for _, b := range builtins {
		builtin = append(builtin, b.name)
	}
	st := &operator.Status{
		Calls: a.recent,
		Toolsets: func() []operator.ToolsetView {
			var out []operator.ToolsetView
			for _, ts := range a.catalog.Toolsets() {
				kind := "upstream"
				if slices.Contains(builtin, ts.Name) {
					kind = "builtin"
				}
				out = append(out, operator.ToolsetView{Name: ts.Name, Kind: kind, State: ts.Status.State, Detail: ts.Status.Detail, Tools: ts.Tools})
			}
			return out
		},
		Tools: func(ctx context.Context) []operator.ToolView {
			var out []operator.ToolView
			for _, en := range a.catalog.Entries() {
				out = append(out, operator.ToolView{
					Name: en.Tool.Name, Toolset: en.Toolset, Description: en.Tool.Description,
					Capabilities: nonNil(policy.NeededCapabilities(en.Tool)), Hints: nonNil(en.Tool.Permissions.Resolved().Names()),
					Decision: a.policy.Decide(ctx, en.Tool),
				})
			}
			return out
		},
	}
	if a.run != nil {
		st.Record = a.run.Record
		st.Artifact = a.run.ReadArtifact
	}
	return st
}
