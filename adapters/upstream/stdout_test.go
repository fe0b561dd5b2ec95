package upstream

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// TestStrayStdoutLines: a line of a child's stdout that cannot be a
// JSON-RPC message (text, or JSON without "jsonrpc": a JSON log line) is
// not passed on but handed to onStray (the first flagged), blank lines and messages pass as before (a message after a
// byte order mark without it), and a failure to connect names the stray
// lines only while no message came.
func TestStrayStdoutLines(t *testing.T) {
	in := "\uFEFFStarting server v1.2...\n\n\uFEFF{\"jsonrpc\":\"2.0\",\"id\":1}\n  [{\"jsonrpc\":\"2.0\",\"id\":2}]\nDEBUG: \xffgot it\r\n" +
		`{"level":30,"time":1764410000,"msg":"listening"}` + "\n{\"id\":3,\"jsonrpc\":\"2.0\"}\nlast words"
	for _, how := range []string{"Read", "ReadLine"} {
		t.Run(how, func(t *testing.T) {
			type stray struct {
				text  string
				first bool
			}
			var strays []stray
			l := newLineLimiter(strings.NewReader(in), 1<<20, "up", nil)
			l.r = bufioSmall(in)
			l.watch = newStdoutWatch(func(text string, first bool) { strays = append(strays, stray{text, first}) })
			var lines []string
			if how == "Read" {
				lines = readAllLines(t, l)
			} else {
				lines = readEachLine(t, l)
			}
			if got, want := strings.Join(lines, ""), "\n{\"jsonrpc\":\"2.0\",\"id\":1}\n  [{\"jsonrpc\":\"2.0\",\"id\":2}]\n{\"id\":3,\"jsonrpc\":\"2.0\"}\n"; got != want {
				t.Errorf("passed on %q, want %q", got, want)
			}
			want := []stray{{"Starting server v1.2...", true}, {"DEBUG: \uFFFDgot it", false}, {`{"level":30,"time":1764410000,"msg":"listening"}`, false}, {"last words", false}}
			if len(strays) != len(want) {
				t.Fatalf("strays %+v, want %+v", strays, want)
			}
			for i := range want {
				if strays[i] != want[i] {
					t.Errorf("stray %d: %+v, want %+v", i, strays[i], want[i])
				}
			}
			select {
			case <-l.watch.ended:
			default:
				t.Error("the end of stdout not recorded")
			}
			base := errors.New("startup timed out after 3s")
			if err := l.watch.explain(base, nil); err != base {
				t.Errorf("messages came, yet the failure names the stray lines: %v", err)
			}
		})
	}

	w := newStdoutWatch(nil)
	base := errors.New("startup timed out after 3s")
	if err := w.explain(base, nil); err != base {
		t.Errorf("nothing printed, yet: %v", err)
	}
	w.keep([]byte("Usage: srv --port N\n"))
	err := w.explain(base, nil)
	if want := `startup timed out after 3s; it wrote a line to stdout that is not JSON-RPC: "Usage: srv --port N" (a stdio server's stdout carries only protocol messages; its logs belong on stderr)`; err.Error() != want || !errors.Is(err, base) {
		t.Errorf("explain:\n got %v\nwant %s", err, want)
	}
	w.keep([]byte(strings.Repeat("é", 300) + "\n"))
	if got := w.explain(base, nil).Error(); !strings.Contains(got, `it wrote 2 lines to stdout that are not JSON-RPC, the first "Usage: srv --port N"`) {
		t.Errorf("explain of two: %s", got)
	}
	long := newStdoutWatch(nil)
	long.keep([]byte(strings.Repeat("é", 300)))
	if got := long.explain(base, nil).Error(); !strings.Contains(got, `"`+strings.Repeat("é", 100)+`…"`) {
		t.Errorf("a long first line is not cut to 200 bytes: %s", got)
	}
}

// TestStrayStdoutNamedOnFailure: a stdio server that prints its usage on
// stdout instead of answering fails its attempt with what it printed, both
// when it waits (the startup timeout) and when it exits (its status), and
// the lines are in the log.
func TestStrayStdoutNamedOnFailure(t *testing.T) {
	requireProc(t)
	t.Run("waits", func(t *testing.T) {
		log, logs := newLogger()
		u := start(t, Config{Name: "usage", Command: "sh", StartupTimeout: 500 * time.Millisecond,
			Args: []string{"-c", `echo "Usage: srv --port N"; echo "error: --port is required"; exec sleep 300`}}, log, false)
		err := u.WaitReady(context.Background())
		want := `initialize: startup timed out after 500ms; it wrote 2 lines to stdout that are not JSON-RPC, the first "Usage: srv --port N"`
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("WaitReady: %v\nwant %s", err, want)
		}
		if d := u.Status().Detail; !strings.Contains(d, want) {
			t.Errorf("status %q", d)
		}
		for _, line := range []string{
			`level=WARN msg="upstream wrote a line to stdout that is not JSON-RPC; it is logged here and not passed on`,
			`line="Usage: srv --port N"`,
			`level=INFO msg="error: --port is required" upstream=usage stream=stdout`,
		} {
			if !strings.Contains(logs.String(), line) {
				t.Errorf("log lacks %s:\n%s", line, logs.String())
			}
		}
	})
	t.Run("exits", func(t *testing.T) {
		for i := 0; i < 20; i++ { // what it printed is read before the failure is told, every time
			u := start(t, Config{Name: "usage", Command: "sh", Args: []string{"-c", `echo "Usage: srv --port N"; exit 2`}}, nil, false)
			err := u.WaitReady(context.Background())
			want := `upstream process exited with status 2; it wrote a line to stdout that is not JSON-RPC: "Usage: srv --port N"`
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Fatalf("attempt %d: WaitReady: %v\nwant %s", i, err, want)
			}
			u.Close()
		}
	})
}

// TestStdoutBannerServes: a server that prints a banner on its stdout
// before it serves works as one that does not, and its banner is logged.
func TestStdoutBannerServes(t *testing.T) {
	requireProc(t)
	log, logs := newLogger()
	cfg := stdioConfig(t, "up")
	cfg.Env[envStdoutBanner] = "Example MCP server v1.2 listening on stdio\nready."
	u := start(t, cfg, log, true)
	g := newGW(t, u)
	mustOK(t, g.call(context.Background(), "up__echo", `{"text":"hi"}`))
	for _, line := range []string{
		`msg="upstream wrote a line to stdout that is not JSON-RPC; it is logged here and not passed on`,
		`line="Example MCP server v1.2 listening on stdio"`,
		`msg=ready. upstream=up stream=stdout`,
	} {
		if !strings.Contains(logs.String(), line) {
			t.Errorf("log lacks %s:\n%s", line, logs.String())
		}
	}
}
