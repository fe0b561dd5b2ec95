package upstream

import (
	"context"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/toolgate/toolgate/gateway"
)

// A stdio upstream that speaks both eras runs as two children, each with
// its own run-time state: toolgate lists the union and sends a call of a
// tool (or a get of a prompt) only one child has to that child, whatever
// the caller's era; when the sidecar child dies, what only it had goes.
func TestTwoChildrenOneListing(t *testing.T) {
	u := start(t, stdioConfig(t, "s"), nil, true)
	g := newGW(t, u)
	legacy := context.Background()
	modern := gateway.WithClient(context.Background(), modernClient{})
	// Listed where calls look it up: the catalog, which refreshes after
	// the upstream has installed its new listing.
	listed := func(name string) func() bool {
		return func() bool { _, _, ok := g.cat.Resolve(name); return ok }
	}

	// The main child (2025-11-25) gains added_1 and added_2.
	if got := mustOK(t, g.call(legacy, "s__add_tool", `{"n":2}`)); got != "added_1,added_2" {
		t.Fatalf("add_tool on the main child said %q", got)
	}
	eventually(t, 10*time.Second, "s__added_2 to be listed", listed("s__added_2"))

	// A 2026-07-28 caller opens the sidecar child, which gains its own
	// added_1: added_2 is now the main child's alone.
	if got := mustOK(t, g.call(modern, "s__add_tool", `{}`)); got != "added_1" {
		t.Fatalf("add_tool on the sidecar child said %q", got)
	}
	if sc := u.sidecar(); sc == nil {
		t.Fatal("no sidecar connection after a 2026-07-28 call")
	}
	eventually(t, 10*time.Second, "added_2 to be known as the main child's", func() bool {
		u.mu.Lock()
		defer u.mu.Unlock()
		side, only := u.split[listTools]["added_2"]
		return only && !side
	})
	if got := mustOK(t, g.call(modern, "s__added_2", `{}`)); got != "I was added" {
		t.Errorf("a 2026-07-28 call of the main child's tool said %q", got)
	}

	// The sidecar child gains added_2 and added_3: added_3 is its alone,
	// and a 2025-11-25 caller reaches it there.
	if got := mustOK(t, g.call(modern, "s__add_tool", `{"n":2}`)); got != "added_2,added_3" {
		t.Fatalf("add_tool on the sidecar child said %q", got)
	}
	eventually(t, 10*time.Second, "s__added_3 to be listed", listed("s__added_3"))
	if got := mustOK(t, g.call(legacy, "s__added_3", `{}`)); got != "I was added" {
		t.Errorf("a 2025-11-25 call of the sidecar child's tool said %q", got)
	}

	// Prompts likewise: the sidecar child's late prompt, got by a
	// 2025-11-25 caller.
	mustOK(t, g.call(modern, "s__add_prompt", `{}`))
	var late *gateway.Prompt
	eventually(t, 10*time.Second, "s__late to be listed", func() bool {
		ps, _ := u.Prompts(legacy)
		for i := range ps {
			if ps[i].Name == "s__late" {
				late = &ps[i]
				return true
			}
		}
		return false
	})
	if res, err := late.Get(legacy, nil); err != nil || len(res.Messages) != 1 {
		t.Errorf("getting the sidecar child's prompt: %+v, %v", res, err)
	}

	// The sidecar child dies: its own tool goes; the main child's stay.
	sc := u.sidecar()
	_ = syscall.Kill(sc.proc.cmd.Process.Pid, syscall.SIGKILL)
	eventually(t, 10*time.Second, "s__added_3 to be gone", func() bool { return findTool(u, "s__added_3") == nil })
	if findTool(u, "s__added_2") == nil {
		t.Error("the main child's added_2 went with the sidecar")
	}
}

// The upstream's list_changed reaches the listeners even when the list
// is the same (the server may have changed what a tool does); toolgate's
// own re-listing that finds nothing new does not.
func TestAnnouncedUnchangedList(t *testing.T) {
	u, err := New(stdioConfig(t, "s"), nil)
	if err != nil {
		t.Fatal(err)
	}
	u.tune = fastTuning()
	var fired atomic.Int32
	u.OnToolsChanged(func() { fired.Add(1) })
	t.Cleanup(func() { u.Close() })
	u.Start(context.Background())
	eventually(t, 20*time.Second, "the first listing to be installed", func() bool { return fired.Load() == 1 })
	g := newGW(t, u)

	// What the sidecar's opening and death schedule (sidecar.go), done
	// here at once.
	u.relist(listTools)
	if n := fired.Load(); n != 1 {
		t.Errorf("a re-listing that found nothing new told the listeners (%d times in all)", n)
	}

	mustOK(t, g.call(context.Background(), "s__announce_tools", `{}`))
	eventually(t, 10*time.Second, "the listeners to be told", func() bool { return fired.Load() == 2 })
}
