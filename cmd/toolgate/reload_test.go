package main

import (
	"context"
	"testing"
	"testing/synctest"
	"time"
)

func TestDebounce(t *testing.T) {
	tests := []struct {
		name   string
		events []time.Duration // when each event arrives, from the start
		want   []time.Duration // when f is called
	}{
		{"one event", []time.Duration{0}, []time.Duration{300 * time.Millisecond}},
		{"a burst is one call", []time.Duration{0, 100 * time.Millisecond, 250 * time.Millisecond}, []time.Duration{550 * time.Millisecond}},
		{"two bursts are two calls", []time.Duration{0, 50 * time.Millisecond, time.Second}, []time.Duration{350 * time.Millisecond, 1300 * time.Millisecond}},
		{"no event, no call", nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				start := time.Now()
				events := make(chan struct{})
				var calls []time.Duration
				go debounce(ctx, events, 300*time.Millisecond, func() { calls = append(calls, time.Since(start)) })
				for _, at := range tt.events {
					time.Sleep(at - time.Since(start))
					events <- struct{}{}
				}
				time.Sleep(5 * time.Second)
				synctest.Wait()
				if len(calls) != len(tt.want) {
					t.Fatalf("calls at %v, want %v", calls, tt.want)
				}
				for i := range calls {
					if calls[i] != tt.want[i] {
						t.Errorf("calls at %v, want %v", calls, tt.want)
					}
				}
			})
		})
	}
}
