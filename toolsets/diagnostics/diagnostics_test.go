package diagnostics

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/toolgate/toolgate/gateway"
)

func pipeline(t *testing.T) *gateway.Pipeline {
	ts, err := New()
	if err != nil {
		t.Fatal(err)
	}
	cat := gateway.NewCatalog(nil)
	if err := cat.Add(context.Background(), ts); err != nil {
		t.Fatal(err)
	}
	return gateway.NewPipeline(&gateway.Options{Tools: cat, CallTimeout: 5 * time.Second})
}

func TestEcho(t *testing.T) {
	res := pipeline(t).Call(context.Background(), &gateway.Call{Name: "echo", Arguments: json.RawMessage(`{"text":"héllo <x>"}`)})
	if res.IsError || res.OutputText() != "héllo <x>" {
		t.Fatalf("%+v", res)
	}
}

type sink struct {
	mu  sync.Mutex
	got []gateway.Progress
}

func (s *sink) Report(p gateway.Progress) { s.mu.Lock(); s.got = append(s.got, p); s.mu.Unlock() }

func TestSleepReportsProgress(t *testing.T) {
	s := &sink{}
	ctx, stop := gateway.WithProgress(context.Background(), s)
	defer stop()
	res := pipeline(t).Call(ctx, &gateway.Call{Name: "sleep", Arguments: json.RawMessage(`{"ms":50,"steps":5}`)})
	if res.IsError {
		t.Fatal(res.Message)
	}
	if len(s.got) != 5 || s.got[4].Progress != 5 || s.got[4].Total != 5 {
		t.Fatalf("progress %+v", s.got)
	}
}

func TestSleepStopsWhenCancelled(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	start := time.Now()
	res := pipeline(t).Call(ctx, &gateway.Call{Name: "sleep", Arguments: json.RawMessage(`{"ms":60000}`)})
	if res.Kind != gateway.KindCancelled || time.Since(start) > 2*time.Second {
		t.Fatalf("kind %q after %v", res.Kind, time.Since(start))
	}
}
