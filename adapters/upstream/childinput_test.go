package upstream

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
	"testing"
	"time"
)

// frames are n messages of size bytes each, every one different.
func frames(n, size int) [][]byte {
	out := make([][]byte, n)
	for i := range out {
		f := bytes.Repeat([]byte{byte('a' + i%26)}, size)
		copy(f, fmt.Sprintf("%06d", i))
		f[size-1] = '\n'
		out[i] = f
	}
	return out
}

// within runs f and fails the test if it has not returned after d (it
// would be blocked on the pipe).
func within(t *testing.T, d time.Duration, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("%s: still blocked after %s", what, d)
	}
}

func newTestInput(t *testing.T, max int) (*childInput, *os.File) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	in, err := newChildInput(w, max)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { in.Close(); r.Close() })
	return in, r
}

// A child that does not read does not hold up its writers: messages far
// beyond what the pipe holds are taken at once, and reach the child whole
// and in order once it reads.
func TestChildInputNeverBlocks(t *testing.T) {
	in, r := newTestInput(t, 4<<20)
	msgs := frames(64, 8<<10) // 512 KiB; a pipe holds 64 KiB
	within(t, 10*time.Second, "writing to a child that does not read", func() {
		for i, m := range msgs {
			if n, err := in.Write(m); n != len(m) || err != nil {
				t.Errorf("message %d: wrote %d of %d: %v", i, n, len(m), err)
			}
		}
	})
	got := make([]byte, len(msgs)*len(msgs[0]))
	if _, err := io.ReadFull(r, got); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, bytes.Join(msgs, nil)) {
		t.Error("the child read the messages out of order or torn")
	}
}

// A message the queue has no room for is refused whole, saying why; what
// was taken before it arrives whole, and writing goes on once the child
// reads.
func TestChildInputBounded(t *testing.T) {
	in, r := newTestInput(t, 256<<10)
	msgs := frames(200, 8<<10)
	var taken [][]byte
	var refused error
	within(t, 10*time.Second, "writing to a child that does not read", func() {
		for _, m := range msgs {
			if _, err := in.Write(m); err != nil {
				refused = err
				break
			}
			taken = append(taken, m)
		}
	})
	if !errors.Is(refused, errNotReading) {
		t.Fatalf("over the bound: %v, want %v", refused, errNotReading)
	}
	want := bytes.Join(taken, nil)
	got := make([]byte, len(want))
	if _, err := io.ReadFull(r, got); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("the messages taken did not arrive whole and in order")
	}
	// Drained: the next message is taken again, and arrives.
	eventually(t, 10*time.Second, "the queue to drain", func() bool {
		in.mu.Lock()
		defer in.mu.Unlock()
		return !in.draining
	})
	if _, err := in.Write(msgs[len(msgs)-1]); err != nil {
		t.Fatalf("after draining: %v", err)
	}
	last := make([]byte, len(msgs[0]))
	if _, err := io.ReadFull(r, last); err != nil || !bytes.Equal(last, msgs[len(msgs)-1]) {
		t.Fatalf("after draining the child read %q (%v)", last[:8], err)
	}
}

// A child that has exited makes writes fail with EPIPE (not a signal that
// would end the gateway); closing ends a queue that waits.
func TestChildInputEnds(t *testing.T) {
	t.Run("child gone", func(t *testing.T) {
		in, r := newTestInput(t, 1<<20)
		r.Close()
		_, err := in.Write([]byte("{}\n"))
		if !errors.Is(err, syscall.EPIPE) {
			t.Fatalf("write to a closed pipe: %v, want EPIPE", err)
		}
		if _, again := in.Write([]byte("{}\n")); again == nil {
			t.Fatal("the stream went on after EPIPE")
		}
	})
	t.Run("closed while queued", func(t *testing.T) {
		in, _ := newTestInput(t, 1<<20)
		within(t, 10*time.Second, "filling the queue", func() {
			for _, m := range frames(16, 8<<10) {
				if _, err := in.Write(m); err != nil {
					t.Fatal(err)
				}
			}
		})
		in.Close()
		eventually(t, 10*time.Second, "the queue's writer to end", func() bool {
			in.mu.Lock()
			defer in.mu.Unlock()
			return !in.draining
		})
		if _, err := in.Write([]byte("{}\n")); err == nil {
			t.Fatal("a write after Close succeeded")
		}
	})
}
