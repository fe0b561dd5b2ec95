package runs

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/toolgate/toolgate/gateway"
)

func openRun(t *testing.T) *Run {
	t.Helper()
	r, err := Open(t.TempDir(), &Options{Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// lines parses every line of a JSONL file, failing on any that is not
// whole JSON.
func lines(t *testing.T, path string) []map[string]any {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []map[string]any
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for n := 1; sc.Scan(); n++ {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("%s line %d is not whole JSON: %v: %q", path, n, err, sc.Text())
		}
		out = append(out, m)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestLayoutAndIDs(t *testing.T) {
	dir := t.TempDir()
	r, err := Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if !runIDRE.MatchString(r.ID()) {
		t.Errorf("run ID %q does not match %s", r.ID(), runIDRE)
	}
	for _, p := range []string{"run.json", "events.jsonl", "logs/tools.jsonl", "logs/errors.jsonl"} {
		if _, err := os.Stat(filepath.Join(r.Dir(), p)); err != nil {
			t.Errorf("missing %s: %v", p, err)
		}
	}
	for _, p := range []string{"workspace", "deliverables", "archive"} { // not until used
		if _, err := os.Stat(filepath.Join(r.Dir(), p)); err == nil {
			t.Errorf("an empty %s/ was created", p)
		}
	}
	a, b := NewID(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)), NewID(time.Date(2026, 1, 2, 3, 4, 6, 0, time.UTC))
	if !(a < b) {
		t.Errorf("run IDs do not sort by time: %s, %s", a, b)
	}
}

func TestConcurrentRecordsAreWholeAndComplete(t *testing.T) {
	r := openRun(t)
	const calls = 2000
	var wg sync.WaitGroup
	for i := 0; i < calls; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			c := &gateway.Call{ID: fmt.Sprintf("c%05d", i), Name: "echo", Toolset: "t", Started: time.Now(),
				Arguments: json.RawMessage(fmt.Sprintf(`{"text":%q}`, strings.Repeat("x", i%3000)))}
			r.CallStarted(c)
			res := gateway.OkText("ok")
			if i%7 == 0 {
				res = gateway.Errorf("failed %d", i)
			}
			r.CallFinished(c, res, time.Millisecond)
		}(i)
	}
	wg.Wait()
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	tools := lines(t, filepath.Join(r.Dir(), "logs", "tools.jsonl"))
	errs := lines(t, filepath.Join(r.Dir(), "logs", "errors.jsonl"))
	events := lines(t, filepath.Join(r.Dir(), "events.jsonl"))
	if len(tools) != calls {
		t.Errorf("tools.jsonl has %d lines for %d calls", len(tools), calls)
	}
	wantErrs := (calls + 6) / 7
	if len(errs) != wantErrs {
		t.Errorf("errors.jsonl has %d lines, want %d", len(errs), wantErrs)
	}
	seen := map[string]int{}
	for _, e := range events {
		if id, ok := e["call_id"].(string); ok {
			seen[id+"/"+e["type"].(string)]++
		}
	}
	for i := 0; i < calls; i++ {
		id := fmt.Sprintf("c%05d", i)
		end := "tool.completed"
		if i%7 == 0 {
			end = "tool.failed"
		}
		if seen[id+"/tool.started"] != 1 || seen[id+"/"+end] != 1 {
			t.Fatalf("call %s: %d started, %d %s events", id, seen[id+"/tool.started"], seen[id+"/"+end], end)
		}
	}
	if first, last := events[0]["type"], events[len(events)-1]["type"]; first != "run.started" || last != "run.stopped" {
		t.Errorf("events begin with %v and end with %v", first, last)
	}
}

// TestWritersReadyToRunShareAWrite: lines written at once by goroutines
// ready to run share a write(2) when the leader yields (with more than
// one processor), and each is its own write when it does not (on one).
// The test runs on one processor, where nothing else interleaves the
// writers, and sets the rule's answer: without the yield each line is
// its own batch, as most were in the served process.
func TestWritersReadyToRunShareAWrite(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	defer func(f func() bool) { yieldToWriters = f }(yieldToWriters)
	const n = 16
	for _, yield := range []bool{true, false} {
		yieldToWriters = func() bool { return yield }
		l, err := openLineFile(filepath.Join(t.TempDir(), "r.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		var batches, lines int
		l.testWrite = func(b []byte) (int, error) {
			batches++
			lines += bytes.Count(b, []byte("\n"))
			return len(b), nil
		}
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				if err := l.write(fmt.Appendf(nil, "{\"i\":%d}\n", i), true); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		l.close()
		if lines != n {
			t.Fatalf("yield %v: %d lines written of %d", yield, lines, n)
		}
		if yield && batches > 2 {
			t.Errorf("with the yield: %d lines in %d writes, want at most 2", n, batches)
		}
		if !yield && batches != n {
			t.Errorf("without the yield: %d lines in %d writes, want one each", n, batches)
		}
	}
}

// TestWriteErrorIsTheWritersOwnBatch: under group commit each writer gets
// the result of the write(2) that carried its line, not of a later or
// earlier batch: nil exactly when its line is in the file. (CallStarted
// returns it: nil for a start record never written would let a call run
// unrecorded.) Batches holding a "bad" line fail as a full disk would.
func TestWriteErrorIsTheWritersOwnBatch(t *testing.T) {
	errFull := errors.New("no space left on device")
	for round := range 200 {
		l, err := openLineFile(filepath.Join(t.TempDir(), "r.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex
		var file []byte
		l.testWrite = func(b []byte) (int, error) {
			if bytes.Contains(b, []byte("bad")) {
				return 0, errFull
			}
			mu.Lock()
			file = append(file, b...)
			mu.Unlock()
			runtime.Gosched() // let waiters of an earlier batch run late
			return len(b), nil
		}
		const n = 64
		errs := make([]error, n)
		lines := make([][]byte, n)
		var wg sync.WaitGroup
		for i := range n {
			kind := "ok"
			if i%4 == 0 {
				kind = "bad"
			}
			lines[i] = fmt.Appendf(nil, "{\"i\":%d,\"k\":%q}\n", i, kind)
			wg.Go(func() { errs[i] = l.write(lines[i], i%2 == 0) })
		}
		wg.Wait()
		for i := range n {
			if in := bytes.Contains(file, lines[i]); in != (errs[i] == nil) {
				t.Fatalf("round %d: line %d in the file: %v, its write returned %v", round, i, in, errs[i])
			}
		}
		if len(l.failed) != 0 {
			t.Fatalf("round %d: %d failed batches kept after every writer returned", round, len(l.failed))
		}
		l.close()
	}
}

func TestArgumentsAreRedacted(t *testing.T) {
	r := openRun(t)
	c := &gateway.Call{ID: "c1", Name: "login", Started: time.Now(),
		Arguments: json.RawMessage(`{"user":"ann","Password":"hunter2","nested":{"api_key":"sk-live-1","list":[{"Authorization":"Bearer abc"}]},"client_secret":"s3","token_count":5}`)}
	r.CallStarted(c)
	r.CallFinished(c, gateway.Errorf("bad login"), time.Millisecond)
	r.Close()
	for _, f := range []string{"events.jsonl", "logs/tools.jsonl", "logs/errors.jsonl"} {
		b, _ := os.ReadFile(filepath.Join(r.Dir(), f))
		for _, secret := range []string{"hunter2", "sk-live-1", "Bearer abc", `"s3"`} {
			if bytes.Contains(b, []byte(secret)) {
				t.Errorf("%s contains the secret %q", f, secret)
			}
		}
	}
	line := lines(t, filepath.Join(r.Dir(), "logs", "tools.jsonl"))[0]
	args := line["arguments"].(map[string]any)
	if args["user"] != "ann" || args["Password"] != gateway.Redacted {
		t.Errorf("arguments recorded as %v", args)
	}
	// A key that merely contains "token" is treated as secret too: better a
	// redacted count than a leaked token.
	if args["token_count"] != gateway.Redacted {
		t.Errorf("token_count recorded as %v", args["token_count"])
	}
}

// TestInvalidSecretArgumentNotInMessage: a call refused by validation is
// recorded with its message next to its arguments; the message must not
// give back in clear the secret the arguments redact.
func TestInvalidSecretArgumentNotInMessage(t *testing.T) {
	r := openRun(t)
	tool := gateway.Must(gateway.NewTool(gateway.ToolDef{Name: "deploy",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"api_key":{"type":"string","pattern":"^sk-[a-z0-9]{8}$"}}}`)},
		func(context.Context, *gateway.Call) (*gateway.Result, error) { return gateway.OkText("ok"), nil }))
	ts, err := gateway.NewToolset("up", tool)
	if err != nil {
		t.Fatal(err)
	}
	cat := gateway.NewCatalog(nil)
	if err := cat.Add(context.Background(), ts); err != nil {
		t.Fatal(err)
	}
	p := gateway.NewPipeline(&gateway.Options{Tools: cat, Recorder: r})
	res := p.Call(context.Background(), &gateway.Call{Name: "deploy", Arguments: json.RawMessage(`{"api_key":"sk_live_HUNTER2SECRET"}`)})
	r.Close()
	if res.Kind != gateway.KindInvalid {
		t.Fatalf("kind %q: %s", res.Kind, res.Message)
	}
	for _, f := range []string{"events.jsonl", "logs/tools.jsonl", "logs/errors.jsonl"} {
		b, _ := os.ReadFile(filepath.Join(r.Dir(), f))
		if bytes.Contains(b, []byte("HUNTER2SECRET")) {
			t.Errorf("%s holds the secret in clear:\n%s", f, b)
		}
	}
	line := lines(t, filepath.Join(r.Dir(), "logs", "errors.jsonl"))[0]
	if msg, _ := line["message"].(string); !strings.Contains(msg, "at '/api_key': [REDACTED] does not match pattern") {
		t.Errorf("errors.jsonl message %q", msg)
	}
}

// TestArtifactOwnerRecorded: an artifact keeps the identity of the call
// it was saved for, across a restart, for the MCP mirror to serve it to
// that identity only (gateway.ArtifactOwners); no artifact URI names the
// record, and a run's artifact count leaves it out.
func TestArtifactOwnerRecorded(t *testing.T) {
	dir := t.TempDir()
	r, err := Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	art, err := r.SaveArtifact(&gateway.Call{ID: "0193abc", Identity: "sub:alice"}, "output.txt", "text/plain; charset=utf-8", []byte("alice's"))
	if err != nil {
		t.Fatal(err)
	}
	anon, err := r.SaveArtifact(&gateway.Call{ID: "0193abd"}, "output.txt", "text/plain; charset=utf-8", []byte("no one's"))
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
	r2, err := Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r2.Close()
	for uri, want := range map[string]string{art.URI: "sub:alice", anon.URI: ""} {
		if got, err := r2.ArtifactOwner(uri); err != nil || got != want {
			t.Errorf("owner of %s: %q, %v; want %q", uri, got, err, want)
		}
	}
	if _, err := r2.ArtifactOwner(gateway.ArtifactURIPrefix + r.ID() + "/../run.json"); !errors.Is(err, ErrNoArtifact) {
		t.Errorf("owner of a URI that names no artifact: %v, want ErrNoArtifact", err)
	}
	for _, uri := range []string{
		gateway.ArtifactURIPrefix + r.ID() + "/" + ownersDir + "/" + art.Name,
		gateway.ArtifactURIPrefix + r.ID() + "/" + ownersDir,
	} {
		if data, _, err := r2.ReadArtifact(uri); !errors.Is(err, ErrNoArtifact) {
			t.Errorf("ReadArtifact(%q) = %q, %v; want ErrNoArtifact", uri, data, err)
		}
	}
	if s := Summarize(r.Dir()); s.Artifacts != 2 {
		t.Errorf("the run counts %d artifacts, want 2", s.Artifacts)
	}
}

func TestArtifactsRoundTripAndRefuseTraversal(t *testing.T) {
	dir := t.TempDir()
	r, err := Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	call := &gateway.Call{ID: "0193abc"}
	art, err := r.SaveArtifact(call, "output.txt", "text/plain; charset=utf-8", []byte("full output"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(art.URI, gateway.ArtifactURIPrefix+r.ID()+"/") {
		t.Fatalf("URI %s", art.URI)
	}
	data, mime, err := r.ReadArtifact(art.URI)
	if err != nil || string(data) != "full output" || !strings.HasPrefix(mime, "text/plain") {
		t.Fatalf("read back %q %q %v", data, mime, err)
	}
	img, err := r.SaveArtifact(call, "part-1.img", "image/png", []byte{0x89, 'P', 'N', 'G'})
	if err != nil || !strings.HasSuffix(img.Name, ".png") {
		t.Fatalf("image artifact %+v %v", img, err)
	}
	if _, mime, _ := r.ReadArtifact(img.URI); mime != "image/png" {
		t.Errorf("image artifact served as %q", mime)
	}
	// A second run in the same directory can read the first one's artifacts.
	r2, err := Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r2.Close()
	if data, _, err := r2.ReadArtifact(art.URI); err != nil || string(data) != "full output" {
		t.Errorf("artifact of an earlier run: %q %v", data, err)
	}
	for _, uri := range []string{
		gateway.ArtifactURIPrefix + r.ID() + "/../run.json",
		gateway.ArtifactURIPrefix + r.ID() + "/..%2frun.json",
		gateway.ArtifactURIPrefix + "../../etc/passwd",
		gateway.ArtifactURIPrefix + r.ID() + "/sub/file",
		gateway.ArtifactURIPrefix + r.ID() + "/.hidden",
		gateway.ArtifactURIPrefix + r.ID() + "/missing.txt",
		"file:///etc/passwd",
	} {
		if _, _, err := r.ReadArtifact(uri); !errors.Is(err, ErrNoArtifact) {
			t.Errorf("ReadArtifact(%q) = %v, want ErrNoArtifact", uri, err)
		}
	}
}

// TestReadArtifactRefusesSymlinks: a symbolic link planted in the runs
// directory (in a run's archive, as its archive, as a run) is never
// followed: the file it points to, outside the run's archive, is not
// served (the admin API and resources/read would hand it out).
func TestReadArtifactRefusesSymlinks(t *testing.T) {
	const other = "20261124T025132Z-def8a7"
	tests := []struct {
		name  string
		uri   string // under the run's ID ("ID") or other's
		plant func(t *testing.T, runsDir, id, outside string)
	}{
		{"file is a link", "ID/0193abc-output.txt", func(t *testing.T, runsDir, id, outside string) {
			symlink(t, filepath.Join(outside, "secret.txt"), filepath.Join(runsDir, id, "archive", "0193abc-output.txt"))
		}},
		{"link to the run's own record", "ID/0193abc-tools.txt", func(t *testing.T, runsDir, id, outside string) {
			symlink(t, "../logs/tools.jsonl", filepath.Join(runsDir, id, "archive", "0193abc-tools.txt"))
		}},
		{"archive is a link", other + "/secret.txt", func(t *testing.T, runsDir, id, outside string) {
			mkdir(t, filepath.Join(runsDir, other))
			symlink(t, outside, filepath.Join(runsDir, other, "archive"))
		}},
		{"run is a link", other + "/secret.txt", func(t *testing.T, runsDir, id, outside string) {
			mkdir(t, filepath.Join(outside, "archive"))
			os.WriteFile(filepath.Join(outside, "archive", "secret.txt"), []byte("secret"), 0o600)
			symlink(t, outside, filepath.Join(runsDir, other))
		}},
		{"file is a directory", "ID/0193abc-dir", func(t *testing.T, runsDir, id, outside string) {
			mkdir(t, filepath.Join(runsDir, id, "archive", "0193abc-dir"))
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			runsDir, outside := t.TempDir(), t.TempDir()
			if err := os.WriteFile(filepath.Join(outside, "secret.txt"), []byte("secret"), 0o600); err != nil {
				t.Fatal(err)
			}
			r, err := Open(runsDir, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			// A real artifact first: the archive directory exists.
			if _, err := r.SaveArtifact(&gateway.Call{ID: "0193abc"}, "real.txt", "", []byte("real")); err != nil {
				t.Fatal(err)
			}
			tc.plant(t, runsDir, r.ID(), outside)
			uri := gateway.ArtifactURIPrefix + strings.Replace(tc.uri, "ID", r.ID(), 1)
			data, _, err := r.ReadArtifact(uri)
			if !errors.Is(err, ErrNoArtifact) || data != nil {
				t.Errorf("ReadArtifact(%q) = %q, %v; want ErrNoArtifact", uri, data, err)
			}
			if data, _, err := r.ReadArtifact(gateway.ArtifactURIPrefix + r.ID() + "/0193abc-real.txt"); err != nil || string(data) != "real" {
				t.Errorf("the real artifact: %q %v", data, err)
			}
		})
	}
}

func symlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Skipf("symbolic links: %v", err)
	}
}

func mkdir(t *testing.T, dir string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
}

func TestOpenFailsClearlyOnUnwritableDir(t *testing.T) {
	if os.Geteuid() == 0 {
		// root writes anywhere; use a path under a regular file instead.
		f := filepath.Join(t.TempDir(), "file")
		os.WriteFile(f, nil, 0o644)
		_, err := Open(filepath.Join(f, "runs"), nil)
		if err == nil || !strings.Contains(err.Error(), "run archive") {
			t.Fatalf("err %v", err)
		}
		return
	}
	dir := t.TempDir()
	os.Chmod(dir, 0o500)
	defer os.Chmod(dir, 0o700)
	_, err := Open(filepath.Join(dir, "runs"), nil)
	if err == nil || !strings.Contains(err.Error(), "run archive") {
		t.Fatalf("err %v", err)
	}
}

func TestWritesAfterCloseAreCounted(t *testing.T) {
	r := openRun(t)
	r.Close()
	if err := r.CallStarted(&gateway.Call{ID: "late", Name: "x"}); err == nil {
		t.Error("CallStarted after Close returned no error")
	}
	if r.WriteErrors() != 1 {
		t.Errorf("write errors %d, want 1", r.WriteErrors())
	}
}

// TestWritableAfterAFullDisk: while record writes fail, Writable says why
// (the health check's 503) and the failure is logged once, with the count,
// not once per line; once the disk has room, Writable's own try succeeds
// and says so in events.jsonl (records.resumed).
func TestWritableAfterAFullDisk(t *testing.T) {
	var logged bytes.Buffer
	dir := t.TempDir()
	r, err := Open(dir, &Options{Version: "test", Logger: slog.New(slog.NewTextHandler(&logged, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if err := r.Writable(); err != nil {
		t.Fatalf("a fresh run: %v", err)
	}
	full := func([]byte) (int, error) { return 0, syscall.ENOSPC }
	r.events.testWrite, r.tools.testWrite, r.errs.testWrite = full, full, full
	for i := range 20 {
		call := &gateway.Call{ID: fmt.Sprint("c", i), Name: "echo", Started: time.Now()}
		if err := r.CallStarted(call); err == nil {
			t.Fatal("CallStarted on a full disk returned no error")
		}
	}
	if err := r.Writable(); !errors.Is(err, syscall.ENOSPC) {
		t.Errorf("Writable on a full disk: %v", err)
	}
	if n := strings.Count(logged.String(), "run archive write failed"); n != 1 {
		t.Errorf("%d failure lines logged for %d failed writes, want 1:\n%s", n, r.WriteErrors(), logged.String())
	}
	r.events.testWrite, r.tools.testWrite, r.errs.testWrite = nil, nil, nil
	r.probedAt.Store(0) // past the once-a-second bound on tries
	if err := r.Writable(); err != nil {
		t.Fatalf("Writable once the disk has room: %v", err)
	}
	if err := r.Writable(); err != nil {
		t.Fatalf("Writable after that: %v", err)
	}
	var resumed int
	for _, l := range lines(t, filepath.Join(r.Dir(), "events.jsonl")) {
		if l["type"] == "records.resumed" && l["write_errors"] == float64(r.WriteErrors()) {
			resumed++
		}
	}
	if resumed != 1 {
		t.Errorf("%d records.resumed events with write_errors %d, want 1", resumed, r.WriteErrors())
	}
}

// CallFinished builds the tools.jsonl and errors.jsonl lines partly from
// the event's bytes (the members they share); each line must be, byte for
// byte, the one encoded member by member in its documented order,
// whatever the call carries.
func TestToolsLineAsEncodedMemberByMember(t *testing.T) {
	r, err := Open(t.TempDir(), &Options{Version: "test", Replica: "replica-1"})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		call *gateway.Call
		res  *gateway.Result
	}{
		{&gateway.Call{ID: "c1", Name: "echo", Toolset: "diagnostics", Client: "bench/1", Identity: "anonymous",
			Arguments: json.RawMessage(`{"text":"hé \"quoted\""}`),
			Decision:  &gateway.Decision{Allow: true, Layer: "runtime", Rule: "runtime.no_capabilities", Reason: "no capability"}},
			gateway.OkText("ok").WithBrief("Echoed 2 bytes")},
		{&gateway.Call{ID: "c2", Name: "write_file", Toolset: "fs", Session: "sess-1", Identity: "alice",
			Principal: &gateway.Principal{ClientID: "app", Scopes: []string{"tools"}},
			Task:      &gateway.CallTask{ID: "task-1", TTLMs: 1000},
			Round:     &gateway.Round{N: 2, Of: "c0"},
			Arguments: json.RawMessage(`{"path":"a.txt","token":"s3cret"}`),
			Artifacts: []gateway.Artifact{{URI: "toolgate://artifacts/c2/out.txt", Name: "out.txt", MIMEType: "text/plain", Size: 3}},
			Decision:  &gateway.Decision{Allow: false, Layer: "policy", Rule: "deny.fs", Capabilities: []string{"fs.write"}, Missing: []string{"fs.write"}}},
			gateway.Errorf("permission denied")},
		{&gateway.Call{ID: "c3", Name: "nothing"}, gateway.OkText("")},
	}
	for _, c := range cases {
		r.CallFinished(c.call, c.res, 1500*time.Microsecond)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	read := func(name string) [][]byte {
		b, err := os.ReadFile(filepath.Join(r.Dir(), name))
		if err != nil {
			t.Fatal(err)
		}
		lines := bytes.SplitAfter(b, []byte("\n"))
		return lines[:len(lines)-1] // after the last newline
	}
	var finished [][]byte // the tool.completed / tool.failed events
	for _, ev := range read("events.jsonl") {
		if bytes.Contains(ev, []byte(`"type":"tool.`)) {
			finished = append(finished, ev)
		}
	}
	got := read(filepath.Join("logs", "tools.jsonl"))
	if len(got) != len(cases) || len(finished) != len(cases) {
		t.Fatalf("%d tools.jsonl lines and %d events for %d calls", len(got), len(finished), len(cases))
	}
	var errLines [][]byte
	for i, c := range cases {
		var ev struct{ Time time.Time }
		if err := json.Unmarshal(finished[i], &ev); err != nil {
			t.Fatal(err)
		}
		// Both lines begin alike: time, run_id through the caller, arguments.
		begin := func() *line {
			l := newLine()
			l.time("time", ev.Time)
			l.str("run_id", r.id)
			l.strOmit("replica", r.replica)
			l.str("call_id", c.call.ID)
			l.str("tool", c.call.Name)
			l.strOmit("toolset", c.call.Toolset)
			l.caller(c.call)
			l.raw("arguments", gateway.RecordArguments(c.call))
			return l
		}
		l := begin()
		l.str("status", c.res.Status())
		l.boolean("is_error", c.res.IsError)
		l.num("duration_ms", 1.5)
		l.strOmit("brief", c.res.Brief())
		l.decision(c.call.Decision)
		if len(c.call.Artifacts) > 0 {
			l.value("artifacts", c.call.Artifacts)
		}
		if want := l.done(); !bytes.Equal(got[i], want) {
			t.Errorf("call %s: tools.jsonl has\n%s\nencoded member by member:\n%s", c.call.ID, got[i], want)
		}
		if c.res.IsError {
			el := begin()
			el.str("status", c.res.Status())
			el.str("message", c.res.Message)
			el.num("duration_ms", 1.5)
			errLines = append(errLines, el.done())
		}
	}
	gotErrs := read(filepath.Join("logs", "errors.jsonl"))
	if len(gotErrs) != len(errLines) {
		t.Fatalf("errors.jsonl has %d lines; %d calls failed", len(gotErrs), len(errLines))
	}
	for i := range errLines {
		if !bytes.Equal(gotErrs[i], errLines[i]) {
			t.Errorf("errors.jsonl has\n%s\nencoded member by member:\n%s", gotErrs[i], errLines[i])
		}
	}
}

// TestHugeBriefIsCutInTheRecord: an upstream's brief may be megabytes
// (here 6 MiB of bytes that are not UTF-8, or of 2-byte runes); the
// tools.jsonl line keeps its start, cut with "…" like the message, and
// the run reads back whole.
func TestHugeBriefIsCutInTheRecord(t *testing.T) {
	r := openRun(t)
	for _, tc := range []struct{ id, brief string }{
		{"small", "found 3 files"},
		{"huge", strings.Repeat("\xff", 6<<20)},
		{"huge-text", strings.Repeat("é", 3<<20)},
	} {
		c := &gateway.Call{ID: tc.id, Name: "t", Started: time.Now()}
		r.CallStarted(c)
		r.CallFinished(c, gateway.OkText("x").WithBrief(tc.brief), time.Millisecond)
	}
	r.Close()
	recs, err := Records(filepath.Join(r.Dir(), "logs", "tools.jsonl"))
	if err != nil || len(recs) != 3 {
		t.Fatalf("%d records, err %v", len(recs), err)
	}
	if b := recs[0].Fields["brief"]; b != "found 3 files" {
		t.Errorf("small brief recorded as %q", b)
	}
	for _, rec := range recs[1:] {
		b, _ := rec.Fields["brief"].(string)
		// Cut to recordTextMax bytes; a byte that is not UTF-8 is then
		// recorded as U+FFFD, 3 bytes.
		if len(b) > 3*recordTextMax+len("…") || !strings.HasSuffix(b, "…") || !utf8.ValidString(b) {
			t.Errorf("%s: brief of %d bytes recorded, ending %q", rec.Fields["call_id"], len(b), b[max(0, len(b)-8):])
		}
	}
}

// TestSecretInErrorMessageIsRedacted: an upstream's error that echoes
// back a secret it was given (a URL with its token, a header) is recorded
// in errors.jsonl with the secret redacted, as the arguments are.
func TestSecretInErrorMessageIsRedacted(t *testing.T) {
	r := openRun(t)
	c := &gateway.Call{ID: "c1", Name: "fetch", Started: time.Now(), Arguments: json.RawMessage(`{}`)}
	r.CallStarted(c)
	r.CallFinished(c, gateway.Errorf("GET https://ann:pw-HUNTER2@api.example.com/x?api_key=sk-LIVE-9 failed: 401\nAuthorization: Bearer TOKEN-XYZ"), time.Millisecond)
	r.Close()
	b, _ := os.ReadFile(filepath.Join(r.Dir(), "logs", "errors.jsonl"))
	for _, secret := range []string{"HUNTER2", "sk-LIVE-9", "TOKEN-XYZ"} {
		if bytes.Contains(b, []byte(secret)) {
			t.Errorf("errors.jsonl holds %q: %s", secret, b)
		}
	}
	if !bytes.Contains(b, []byte("api.example.com/x?api_key=[REDACTED] failed: 401")) {
		t.Errorf("errors.jsonl message lost its readable part: %s", b)
	}
}

// A secret across the point where a long error message is cut is
// redacted all the same: the message is redacted before it is cut, so the
// pattern sees the whole secret (a URL's password needs its "@").
func TestSecretAcrossTheCutIsRedacted(t *testing.T) {
	r := openRun(t)
	c := &gateway.Call{ID: "c1", Name: "fetch", Started: time.Now(), Arguments: json.RawMessage(`{}`)}
	r.CallStarted(c)
	pad := strings.Repeat("x", recordTextMax-len("GET https://ann:pw-HUNT"))
	r.CallFinished(c, gateway.Errorf("%s", pad+"GET https://ann:pw-HUNTER2@api.example.com/x failed"), time.Millisecond)
	r.Close()
	b, _ := os.ReadFile(filepath.Join(r.Dir(), "logs", "errors.jsonl"))
	if bytes.Contains(b, []byte("pw-HUNT")) {
		t.Errorf("errors.jsonl holds the head of the password cut at %d bytes: %s", recordTextMax, b[len(b)-200:])
	}
}

// TestUnsavableArtifactIsInTheRecord: when an output over the limit
// cannot be saved (a read-only or full archive), the call still answers
// with its summary saying so, and its record says that the output was cut
// and not kept, rather than looking like any call that returned it whole.
func TestUnsavableArtifactIsInTheRecord(t *testing.T) {
	r := openRun(t)
	// archive/ cannot be created: a file sits at its path.
	if err := os.WriteFile(r.ArchiveDir(), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	tool := gateway.Must(gateway.NewTool(gateway.ToolDef{Name: "dump", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *gateway.Call) (*gateway.Result, error) {
			return gateway.OkText(strings.Repeat("line of output\n", 1000)), nil
		}))
	ts, err := gateway.NewToolset("t", tool)
	if err != nil {
		t.Fatal(err)
	}
	cat := gateway.NewCatalog(nil)
	if err := cat.Add(context.Background(), ts); err != nil {
		t.Fatal(err)
	}
	p := gateway.NewPipeline(&gateway.Options{Tools: cat, Recorder: r, Artifacts: r, MaxOutputBytes: 1024})
	res := p.Call(context.Background(), &gateway.Call{Name: "dump", Arguments: json.RawMessage(`{}`)})
	r.Close()
	if !strings.Contains(res.OutputText(), "could not be saved") {
		t.Fatalf("answer: %s", res.OutputText())
	}
	rec := lines(t, filepath.Join(r.Dir(), "logs", "tools.jsonl"))[0]
	errs, _ := rec["artifact_errors"].([]any)
	if len(errs) != 1 || !strings.Contains(fmt.Sprint(errs[0]), "output.txt") {
		t.Errorf("tools.jsonl line does not say the output was lost: %v", rec)
	}
	ev := lines(t, filepath.Join(r.Dir(), "events.jsonl"))
	if last := ev[len(ev)-2]; last["type"] != "tool.completed" || last["artifact_errors"] == nil {
		t.Errorf("tool.completed event does not say the output was lost: %v", last)
	}
}

// TestHugeNamesAreCutInTheRecord: the tool name and the client's name
// come from the client (an unknown tool is recorded too) and may be as
// long as a request; every record line stays bounded all the same.
func TestHugeNamesAreCutInTheRecord(t *testing.T) {
	r := openRun(t)
	huge := strings.Repeat("n", 3<<20)
	c := &gateway.Call{ID: "c1", Name: huge, Client: huge + "/" + huge, Identity: "local", Started: time.Now(), Arguments: json.RawMessage(`{}`)}
	r.CallStarted(c)
	r.CallFinished(c, gateway.NotFoundResult(c.Name), time.Millisecond)
	r.Close()
	for _, f := range []string{"events.jsonl", "logs/tools.jsonl", "logs/errors.jsonl"} {
		recs := lines(t, filepath.Join(r.Dir(), f))
		b, _ := os.ReadFile(filepath.Join(r.Dir(), f))
		if len(recs) == 0 || len(b) > 64<<10 {
			t.Errorf("%s: %d lines, %d bytes", f, len(recs), len(b))
		}
	}
}

// The count a closed file keeps (for run.json) is of the lines whose
// writes succeeded, and only when the file holds exactly those bytes: a
// batch that failed, or failed part way and was cut off, is not counted;
// bytes the writer did not write (here a line added behind its back), or
// another file put at its path (a copy of the same bytes), leave the file
// to be counted by a reader.
func TestFileCountIsOfTheLinesWritten(t *testing.T) {
	errFull := errors.New("no space left on device")
	for _, how := range []string{"written", "behind", "replaced"} {
		behind := how != "written"
		l, err := openLineFile(filepath.Join(t.TempDir(), "r.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		l.testWrite = func(b []byte) (int, error) {
			switch {
			case bytes.Contains(b, []byte("bad")):
				return 0, errFull
			case bytes.Contains(b, []byte("half")):
				n, _ := l.f.Write(b[:len(b)/2]) // part of it, then the disk is full
				return n, errFull
			}
			return l.f.Write(b)
		}
		for i, kind := range []string{"ok", "bad", "ok", "half", "ok"} {
			_ = l.write(fmt.Appendf(nil, "{\"i\":%d,\"k\":%q}\n", i, kind), false)
		}
		switch how {
		case "behind":
			if _, err := l.f.Write([]byte("{\"by\":\"hand\"}\n")); err != nil {
				t.Fatal(err)
			}
		case "replaced":
			b, err := os.ReadFile(l.path)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(l.path+".new", b, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(l.path+".new", l.path); err != nil {
				t.Fatal(err)
			}
		}
		if err := l.close(); err != nil {
			t.Fatal(err)
		}
		recs, _ := Records(l.path)
		fi, _ := os.Stat(l.path)
		switch {
		case behind && l.final != nil:
			t.Errorf("%s: count kept %+v", how, l.final)
		case !behind && (l.final == nil || l.final.Records != 3 || len(recs) != 3 || l.final.Size != fi.Size()):
			t.Errorf("count kept %+v, file %d bytes with %d records; want 3 records", l.final, fi.Size(), len(recs))
		}
	}
}
