package upstream

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// countHandler counts records by message and sums dropped counts.
type countHandler struct {
	mu      sync.Mutex
	lines   int
	dropped int64
}

func (h *countHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *countHandler) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *countHandler) WithGroup(string) slog.Handler            { return h }
func (h *countHandler) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if r.Message == "upstream log lines dropped (over 50 a second)" {
		r.Attrs(func(a slog.Attr) bool {
			if a.Key == "dropped" {
				h.dropped += a.Value.Int64()
			}
			return true
		})
		return nil
	}
	h.lines++
	return nil
}

func (h *countHandler) counts() (int, int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.lines, h.dropped
}

// flooded is a limiter over a new countHandler that was just written an
// instant burst of 1000 lines.
func flooded() (*countHandler, *logLimiter) {
	h := &countHandler{}
	l := newLogLimiter(slog.New(h))
	for range 1000 {
		l.Log(slog.LevelInfo, "x")
	}
	return h, l
}

// TestLogLimiterRate: a burst passes, then 50 lines a second; what is
// dropped is reported every 10 s and on Flush, and adds up.
func TestLogLimiterRate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, l := flooded()
		if lines, _ := h.counts(); lines != logBurst {
			t.Errorf("%d lines of an instant burst of 1000 logged, want %d", lines, logBurst)
		}
		for range 20 { // 20 s at 100 lines a second
			for range 100 {
				l.Log(slog.LevelInfo, "x")
			}
			time.Sleep(time.Second)
		}
		// The last second ends on the instant the 10 s report is due: let
		// the timer's report finish logging before counting.
		synctest.Wait()
		l.Flush()
		lines, dropped := h.counts()
		if lines+int(dropped) != 3000 {
			t.Errorf("logged %d + dropped %d != 3000 written", lines, dropped)
		}
		if lines > logBurst+21*logRate {
			t.Errorf("%d lines logged in 20 s, over the rate", lines)
		}
	})
}

// TestLogLimiterReportsAfterFlood: a flood that ends is reported within
// logReportEvery without another line or a Flush: a child that floods
// and falls silent (or hangs) does not keep its count until the gateway
// stops.
func TestLogLimiterReportsAfterFlood(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, _ := flooded()
		time.Sleep(logReportEvery + time.Second)
		if lines, dropped := h.counts(); lines+int(dropped) != 1000 {
			t.Errorf("%d s after a flood of 1000 lines that ended: logged %d, reported dropped %d (want %d dropped reported)",
				int((logReportEvery + time.Second).Seconds()), lines, dropped, 1000-lines)
		}
	})
}

// TestStderrFloodBounded (issue 9): 100k stderr lines from a child become
// a bounded number of log records, and the dropped count makes up the rest.
func TestStderrFloodBounded(t *testing.T) {
	h := &countHandler{}
	log := slog.New(h)
	p := &process{log: log, relayed: newLogLimiter(log)}
	cmd, err := p.commandFunc(context.Background(), "/bin/sh", nil, []string{"-c", "seq 100000 >&2"})
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p.started()
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		p.relayed.Flush()
		lines, dropped := h.counts()
		if lines+int(dropped) == 100000 {
			if lines > 2*logBurst {
				t.Errorf("%d of 100000 stderr lines logged", lines)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("logged %d + dropped %d, want 100000 in all", lines, dropped)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
