package upstream

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// attemptLog is a slog handler that keeps the time of each failed
// connection attempt (fake time inside a bubble).
type attemptLog struct {
	mu    sync.Mutex
	times []time.Time
}

func (h *attemptLog) Enabled(context.Context, slog.Level) bool { return true }
func (h *attemptLog) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *attemptLog) WithGroup(string) slog.Handler            { return h }
func (h *attemptLog) Handle(_ context.Context, r slog.Record) error {
	if r.Message == "upstream connection attempt failed" {
		h.mu.Lock()
		h.times = append(h.times, time.Now())
		h.mu.Unlock()
	}
	return nil
}

func (h *attemptLog) attempts() []time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]time.Time(nil), h.times...)
}

// TestReconnectBackoff: an upstream that cannot be reached is retried
// with exponential backoff and jitter: the n-th wait lies in
// [b/2, b] with b = backoffMin doubled n times, capped at backoffMax; and
// nothing is retried after Close. Fake time (synctest): the minutes of
// waiting pass at once and the bounds are exact.
func TestReconnectBackoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := &attemptLog{}
		u, err := New(Config{Name: "gone", Command: "/nonexistent/toolgate-test-upstream"}, &Options{Logger: slog.New(h)})
		if err != nil {
			t.Fatal(err)
		}
		u.Start(context.Background())
		const n = 12 // enough to reach the cap (250ms doubled 7 times > 30s)
		for len(h.attempts()) < n {
			time.Sleep(time.Second)
		}
		u.Close()
		at := h.attempts()
		b := u.tune.backoffMin
		for i := 1; i < n; i++ {
			gap := at[i].Sub(at[i-1])
			if gap < b/2 || gap > b {
				t.Errorf("wait %d: %v, want within [%v, %v]", i, gap, b/2, b)
			}
			b = min(b*2, u.tune.backoffMax)
		}
		if b != u.tune.backoffMax {
			t.Errorf("backoff reached %v, want the cap %v", b, u.tune.backoffMax)
		}
		// After Close, no more attempts.
		closed := len(h.attempts())
		time.Sleep(10 * u.tune.backoffMax)
		if got := len(h.attempts()); got != closed {
			t.Errorf("%d attempts after Close", got-closed)
		}
	})
}
