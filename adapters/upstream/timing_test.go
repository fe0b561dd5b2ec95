package upstream

import (
	"context"
	"log/slog"
	"strings"
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
	// Each attempt, logged at WARN or, repeating the last failure after
	// the first few, at DEBUG ("... as before").
	if strings.HasPrefix(r.Message, "upstream connection attempt failed") {
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

// TestRelistDebounce: list_changed notifications in a burst make one
// re-listing, debounce after the last of them, not before. The upstream is
// not started, so a re-listing finds no live connection and marks the list
// pending (what a connection being set up installs again): that mark is
// the re-listing seen from outside. Fake time (synctest): exact.
func TestRelistDebounce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		u, err := New(Config{Name: "d", Command: "/nonexistent/toolgate-test-upstream"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer u.Close()
		relisted := func() bool {
			synctest.Wait()
			u.mu.Lock()
			defer u.mu.Unlock()
			return u.pending[listTools]
		}
		d := u.tune.debounce
		for range 5 { // a burst: each notification within debounce of the last
			u.scheduleRelist(listTools)
			time.Sleep(d / 2)
			if relisted() {
				t.Fatal("re-listed during the burst")
			}
		}
		time.Sleep(d/2 - time.Nanosecond)
		if relisted() {
			t.Fatal("re-listed before debounce passed since the last notification")
		}
		time.Sleep(time.Nanosecond)
		if !relisted() {
			t.Fatal("not re-listed debounce after the last notification")
		}
		// Exactly once: no second re-listing follows.
		u.mu.Lock()
		u.pending[listTools] = false
		u.mu.Unlock()
		time.Sleep(10 * d)
		if relisted() {
			t.Error("re-listed twice for one burst")
		}
	})
}
