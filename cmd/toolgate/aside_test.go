package main

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"sync"
	"testing"
	"time"
)

// lineWatch is a log destination that signals the first record holding
// want (net/http logs from its connection's goroutine, after the client
// has seen the connection close).
type lineWatch struct {
	want []byte
	once sync.Once
	seen chan []byte
}

func (w *lineWatch) Write(p []byte) (int, error) {
	if bytes.Contains(p, w.want) {
		w.once.Do(func() { w.seen <- bytes.Clone(p) })
	}
	return len(p), nil
}

// A listener beside the MCP transport (metrics, the admin API) logs a
// handler's panic in toolgate's log as an error, as the MCP endpoint does,
// not on stderr past log.file.
func TestAsideListenerLogsPanics(t *testing.T) {
	w := &lineWatch{want: []byte(`"msg":"http: panic serving`), seen: make(chan []byte, 1)}
	a := &app{log: slog.New(slog.NewJSONHandler(w, nil))}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	addr, err := a.listenAside(ctx, "metrics.addr", "127.0.0.1:0", http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
		panic("boom")
	}))
	if err != nil {
		t.Fatal(err)
	}
	if resp, err := http.Get("http://" + addr + "/"); err == nil {
		resp.Body.Close()
		t.Fatalf("a panicking handler answered %d; want the connection closed", resp.StatusCode)
	}
	select {
	case rec := <-w.seen:
		if !bytes.Contains(rec, []byte(`"level":"ERROR"`)) || !bytes.Contains(rec, []byte("boom")) {
			t.Fatalf("the panic's record is not an error saying what panicked: %s", rec)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no record of the panic in toolgate's log")
	}
}
