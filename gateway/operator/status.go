package operator

import (
	"context"
	"encoding/json"
	"sort"
	"sync"
	"time"

	"github.com/toolgate/toolgate/gateway"
)

// Status is the gateway's state that the admin API and the page show
// beside the waiting calls. cmd fills it from the catalog, the policy and
// the run archive; a nil field shows as an empty list.
type Status struct {
	// Toolsets lists the toolsets (built-in ones and upstreams) with their
	// state.
	Toolsets func() []ToolsetView
	// Tools lists the tools with the policy's decision for each (as
	// `toolgate tools` shows them).
	Tools func(ctx context.Context) []ToolView
	// Calls keeps the latest calls of this gateway.
	Calls *Recent
	// Record returns a call's line in the run archive's tools.jsonl
	// (false if there is none).
	Record func(callID string) (json.RawMessage, bool)
	// Artifact reads an artifact by its URI, as resources/read does.
	Artifact func(uri string) (data []byte, mimeType string, err error)
}

// ToolsetView is a toolset as the operator sees it.
type ToolsetView struct {
	Name string `json:"name"`
	// Kind is "upstream" or "builtin".
	Kind   string `json:"kind"`
	State  string `json:"state"`
	Detail string `json:"detail,omitempty"`
	Tools  int    `json:"tools"`
}

// ToolView is a tool with the policy's decision for it.
type ToolView struct {
	Name         string           `json:"name"`
	Toolset      string           `json:"toolset"`
	Description  string           `json:"description,omitempty"`
	Capabilities []string         `json:"capabilities"`
	Hints        []string         `json:"hints"`
	Decision     gateway.Decision `json:"decision"`
}

// Verdict is the decision in one word: allow, ask or deny.
func (t ToolView) Verdict() string {
	switch {
	case t.Decision.Allow:
		return "allow"
	case t.Decision.Ask:
		return "ask"
	}
	return "deny"
}

// CallView is one call as the operator's list shows it.
type CallView struct {
	ID         string             `json:"call_id"`
	Tool       string             `json:"tool"`
	Toolset    string             `json:"toolset,omitempty"`
	Client     string             `json:"client,omitempty"`
	Started    time.Time          `json:"started"`
	Status     string             `json:"status"` // "running" until it ends
	IsError    bool               `json:"is_error"`
	DurationMS float64            `json:"duration_ms"`
	Brief      string             `json:"brief,omitempty"`
	Artifacts  []gateway.Artifact `json:"artifacts,omitempty"`
}

// Recent is a [gateway.Recorder] that keeps the calls in flight and the
// last finished ones in memory, for the operator's list; the run archive
// keeps them all. Wire it beside the archive (telemetry.Recorders) only
// when the admin API is on, so calls carry nothing for it otherwise.
type Recent struct {
	mu      sync.Mutex
	max     int
	running map[string]CallView
	done    []CallView // ring, oldest overwritten first
	next    int
	changed chan struct{}
}

// NewRecent keeps the last max finished calls (100 when max <= 0).
func NewRecent(max int) *Recent {
	if max <= 0 {
		max = 100
	}
	return &Recent{max: max, running: map[string]CallView{}, changed: make(chan struct{})}
}

var _ gateway.Recorder = (*Recent)(nil)

// CallStarted implements [gateway.Recorder].
func (r *Recent) CallStarted(call *gateway.Call) error {
	v := CallView{ID: call.ID, Tool: call.Name, Toolset: call.Toolset, Client: call.Client, Started: call.Started, Status: "running"}
	r.mu.Lock()
	r.running[call.ID] = v
	r.ringLocked()
	r.mu.Unlock()
	return nil
}

// CallFinished implements [gateway.Recorder].
func (r *Recent) CallFinished(call *gateway.Call, res *gateway.Result, elapsed time.Duration) {
	v := CallView{
		ID: call.ID, Tool: call.Name, Toolset: call.Toolset, Client: call.Client, Started: call.Started,
		Status: res.Status(), IsError: res.IsError, DurationMS: float64(elapsed.Microseconds()) / 1000,
		Brief: gateway.Truncate(res.Brief(), 300), Artifacts: call.Artifacts,
	}
	r.mu.Lock()
	delete(r.running, call.ID)
	if len(r.done) < r.max {
		r.done = append(r.done, v)
	} else {
		r.done[r.next] = v
		r.next = (r.next + 1) % r.max
	}
	r.ringLocked()
	r.mu.Unlock()
}

// ringLocked wakes the watchers. Callers hold r.mu.
func (r *Recent) ringLocked() {
	close(r.changed)
	r.changed = make(chan struct{})
}

// List returns up to n calls, newest first: those in flight, then the
// finished ones.
func (r *Recent) List(n int) []CallView {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]CallView, 0, min(n, len(r.running)+len(r.done)))
	for _, v := range r.running {
		out = append(out, v)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Started.After(out[j].Started) })
	for i := len(r.done) - 1; i >= 0 && len(out) < n; i-- {
		out = append(out, r.done[(r.next+i)%len(r.done)])
	}
	if len(out) > n {
		out = out[:n]
	}
	return out
}

// Find returns a call by ID if it is among those kept.
func (r *Recent) Find(id string) (CallView, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if v, ok := r.running[id]; ok {
		return v, true
	}
	for _, v := range r.done {
		if v.ID == id {
			return v, true
		}
	}
	return CallView{}, false
}

// Changed returns a channel closed at the next change.
func (r *Recent) Changed() <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.changed
}
