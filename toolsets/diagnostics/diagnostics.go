// Package diagnostics is a small toolset for checking how a client is
// wired to the gateway, off by default (config diagnostics.enabled): echo
// returns its input, sleep waits while reporting progress, so that
// progress notifications, cancellation and timeouts can be seen working
// end to end without any real workload. The project's own end-to-end
// tests, load tests and benchmarks use it as their trivial tool.
package diagnostics

import (
	"context"
	"fmt"
	"time"

	"github.com/toolgate/toolgate/gateway"
)

// Name is the toolset's name.
const Name = "diagnostics"

type echoParams struct {
	Text string `json:"text" jsonschema:"description=Text to return unchanged,maxLength=1048576"`
}

type sleepParams struct {
	Milliseconds int `json:"ms" jsonschema:"description=How long to sleep in milliseconds,minimum=0,maximum=600000"`
	Steps        int `json:"steps,omitempty" jsonschema:"description=How many progress reports to send while sleeping (default 10),minimum=1,maximum=1000"`
}

// New returns the diagnostics toolset: echo and sleep.
func New() (*gateway.SimpleToolset, error) {
	hints := gateway.Hints{ReadOnly: gateway.Bool(true), Destructive: gateway.Bool(false), Idempotent: gateway.Bool(true), OpenWorld: gateway.Bool(false)}
	echo, err := gateway.NewTypedTool(gateway.ToolDef{
		Name:        "echo",
		Description: "Return the given text unchanged. For checking that calls reach the gateway.",
		Permissions: gateway.Permissions{Hints: hints},
		// It returns at once, and sleep waits on its context: both run on
		// the calling goroutine.
		HonoursContext: true,
	}, func(ctx context.Context, p echoParams) (*gateway.Result, error) {
		return gateway.OkText(p.Text).WithBrief("Echoed " + gateway.Plural(len(p.Text), "byte", "bytes")), nil
	})
	if err != nil {
		return nil, err
	}
	sleep, err := gateway.NewTypedTool(gateway.ToolDef{
		Name:           "sleep",
		Description:    "Sleep for the given time, reporting progress in steps; stops early when cancelled. For checking progress, cancellation and timeouts.",
		Permissions:    gateway.Permissions{Hints: hints},
		HonoursContext: true,
		// A long sleep is what tasks are for: a client may call it as one.
		TaskSupport: gateway.TaskOptional,
	}, func(ctx context.Context, p sleepParams) (*gateway.Result, error) {
		steps := p.Steps
		if steps <= 0 {
			steps = 10
		}
		total := time.Duration(p.Milliseconds) * time.Millisecond
		step := total / time.Duration(steps)
		start := time.Now()
		timer := time.NewTimer(step)
		defer timer.Stop()
		for i := 1; i <= steps; i++ {
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-timer.C:
			}
			gateway.ReportProgress(ctx, gateway.Progress{Progress: float64(i), Total: float64(steps), Message: fmt.Sprintf("step %d of %d", i, steps)})
			timer.Reset(step)
		}
		slept := time.Since(start).Round(time.Millisecond)
		return gateway.OkText(fmt.Sprintf("slept %s in %d steps", slept, steps)).WithBrief("Slept " + slept.String()), nil
	})
	if err != nil {
		return nil, err
	}
	return gateway.NewToolset(Name, echo, sleep)
}
