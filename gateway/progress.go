package gateway

import (
	"context"
	"sync"
)

// Progress is a running tool's report: how far it is, and optionally a
// partial message (seed 003's output channel). Total is 0 when unknown.
type Progress struct {
	Progress float64
	Total    float64
	Message  string
}

// ProgressSink receives a call's progress reports, in order. The MCP mirror
// installs one per call that turns reports into notifications/progress when
// the client asked for them (sent a progress token).
type ProgressSink interface {
	Report(Progress)
}

type progressKey struct{}

// WithProgress returns a context whose calls report progress to sink. The
// sink is wrapped so that reports from concurrent goroutines of one call are
// delivered one at a time, in the order they were made, with strictly
// increasing progress values (MCP requires progress to increase; a report
// that does not advance is moved just past the previous one), and so that
// nothing is delivered once the returned stop function has been called.
// Call stop when the call has finished.
func WithProgress(ctx context.Context, sink ProgressSink) (context.Context, func()) {
	s := &serialSink{sink: sink}
	return context.WithValue(ctx, progressKey{}, s), s.stop
}

// ProgressRequested reports whether anyone listens to the progress of the
// call ctx belongs to (the client sent a progress token). Adapters use it
// to ask an upstream for progress only when it will be passed on.
func ProgressRequested(ctx context.Context) bool {
	_, ok := ctx.Value(progressKey{}).(*serialSink)
	return ok
}

// ReportProgress reports progress for the call ctx belongs to. It does
// nothing when no one listens.
func ReportProgress(ctx context.Context, p Progress) {
	if s, ok := ctx.Value(progressKey{}).(*serialSink); ok {
		s.Report(p)
	}
}

// serialSink serializes one call's reports: a single speaker at a time,
// never interleaved, never after the call has ended.
type serialSink struct {
	mu      sync.Mutex
	sink    ProgressSink
	last    float64
	started bool
	stopped bool
}

func (s *serialSink) Report(p Progress) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return
	}
	if s.started && p.Progress <= s.last {
		p.Progress = s.last + 1
	}
	if p.Total > 0 && p.Progress > p.Total {
		p.Total = p.Progress
	}
	s.last, s.started = p.Progress, true
	s.sink.Report(p)
}

func (s *serialSink) stop() {
	s.mu.Lock()
	s.stopped = true
	s.mu.Unlock()
}
