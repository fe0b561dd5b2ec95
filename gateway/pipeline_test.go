package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// memRecorder keeps records in memory.
type memRecorder struct {
	failStart error // CallStarted's answer
	mu        sync.Mutex
	started   []string
	finished  map[string]*Result
	order     []string
}

func newMemRecorder() *memRecorder { return &memRecorder{finished: map[string]*Result{}} }

func (r *memRecorder) CallStarted(c *Call) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.started = append(r.started, c.ID)
	r.order = append(r.order, "started:"+c.ID)
	return r.failStart
}

func (r *memRecorder) CallFinished(c *Call, res *Result, _ time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.finished[c.ID] = res
	r.order = append(r.order, "finished:"+c.ID)
}

// memArtifacts keeps artifacts in memory.
type memArtifacts struct {
	mu     sync.Mutex
	saved  map[string][]byte
	owners map[string]string // by URI: the identity of the call it was saved for
	fail   error
}

// ArtifactOwner implements [ArtifactOwners].
func (a *memArtifacts) ArtifactOwner(uri string) (string, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.owners[uri], nil
}

func (a *memArtifacts) SaveArtifact(call *Call, name, mimeType string, data []byte) (Artifact, error) {
	if a.fail != nil {
		return Artifact{}, a.fail
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.saved == nil {
		a.saved = map[string][]byte{}
	}
	uri := ArtifactURIPrefix + "test/" + call.ID + "-" + name
	a.saved[uri] = append([]byte(nil), data...)
	if a.owners == nil {
		a.owners = map[string]string{}
	}
	a.owners[uri] = call.Identity
	return Artifact{URI: uri, Name: call.ID + "-" + name, MIMEType: mimeType, Size: int64(len(data))}, nil
}

func (a *memArtifacts) ReadArtifact(uri string) ([]byte, string, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	d, ok := a.saved[uri]
	if !ok {
		return nil, "", fmt.Errorf("%w: %q", ErrNoArtifact, uri) // as the run archive says it
	}
	return d, "text/plain", nil
}

type limitParams struct {
	Path  string `json:"path" jsonschema:"description=File to read"`
	Limit int    `json:"limit,omitempty" jsonschema:"minimum=1,maximum=1000"`
}

// testTools builds a toolset exercising every way a call can end.
func testTools(t *testing.T) *SimpleToolset {
	t.Helper()
	echo := Must(NewTypedTool(ToolDef{Name: "echo", Description: "echo", Permissions: Permissions{Capabilities: []string{"fs.read"}, Hints: ReadOnlyHints()}},
		func(ctx context.Context, in limitParams) (*Result, error) {
			return OkText(fmt.Sprintf("%s/%d", in.Path, in.Limit)).WithBrief("echoed"), nil
		}))
	sleep := Must(NewDynamicTool(ToolDef{Name: "sleep", InputSchema: json.RawMessage(`{"type":"object","properties":{"ms":{"type":"integer"}}}`), Permissions: Permissions{Hints: ReadOnlyHints()}},
		func(ctx context.Context, args map[string]any) (*Result, error) {
			ms, _ := args["ms"].(json.Number).Int64()
			select {
			case <-time.After(time.Duration(ms) * time.Millisecond):
				return OkText("slept"), nil
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}))
	stubborn := Must(NewTool(ToolDef{Name: "stubborn", Timeout: 30 * time.Millisecond, Permissions: Permissions{Hints: ReadOnlyHints()}},
		func(ctx context.Context, call *Call) (*Result, error) {
			time.Sleep(300 * time.Millisecond) // ignores ctx
			return OkText("late"), nil
		}))
	panics := Must(NewTool(ToolDef{Name: "panics", Permissions: Permissions{Hints: ReadOnlyHints()}},
		func(ctx context.Context, call *Call) (*Result, error) { panic("boom") }))
	nothing := Must(NewTool(ToolDef{Name: "nothing", Permissions: Permissions{Hints: ReadOnlyHints()}},
		func(ctx context.Context, call *Call) (*Result, error) { return nil, nil }))
	fails := Must(NewTool(ToolDef{Name: "fails", Permissions: Permissions{Hints: ReadOnlyHints()}},
		func(ctx context.Context, call *Call) (*Result, error) { return nil, errors.New("disk on fire") }))
	big := Must(NewTool(ToolDef{Name: "big", Permissions: Permissions{Hints: ReadOnlyHints()}},
		func(ctx context.Context, call *Call) (*Result, error) {
			var b strings.Builder
			for i := 0; b.Len() < 100_000; i++ {
				fmt.Fprintf(&b, "line %d\n", i)
			}
			return OkText(b.String()), nil
		}))
	shell := Must(NewTool(ToolDef{Name: "shell", Permissions: Permissions{Capabilities: []string{"shell.exec"}}},
		func(ctx context.Context, call *Call) (*Result, error) { return OkText("ran"), nil }))
	ts, err := NewToolset("test", echo, sleep, stubborn, panics, nothing, fails, big, shell)
	if err != nil {
		t.Fatal(err)
	}
	return ts
}

// denyShell allows everything but tools needing shell.exec.
var denyShell = PolicyFunc(func(_ context.Context, t *Tool) Decision {
	for _, c := range t.Permissions.Capabilities {
		if c == "shell.exec" {
			return Decision{Layer: "runtime", Rule: "deny-shell", Missing: []string{c}, Reason: "shell is off"}
		}
	}
	return Decision{Allow: true, Layer: "default", Rule: "allow"}
})

// inlineTools are handlers of testTools declaring that they honour their
// context, which the pipeline runs on the calling goroutine: their
// outcomes must be the same.
func inlineTools(t *testing.T, base *SimpleToolset) *SimpleToolset {
	t.Helper()
	all, _ := base.Tools(context.Background())
	var tools []*Tool
	for _, tl := range all {
		if !slices.Contains([]string{"sleep", "panics", "nothing", "fails"}, tl.Name) {
			continue
		}
		tools = append(tools, Must(NewTool(ToolDef{Name: tl.Name + "_inline", InputSchema: tl.InputSchema,
			Permissions: tl.Permissions, HonoursContext: true}, tl.Handler())))
	}
	ts, err := NewToolset("inline", tools...)
	if err != nil {
		t.Fatal(err)
	}
	return ts
}

func newTestPipeline(t *testing.T, rec Recorder, arts ArtifactStore, more ...Toolset) *Pipeline {
	t.Helper()
	cat := NewCatalog(nil)
	for _, ts := range append([]Toolset{testTools(t)}, more...) {
		if err := cat.Add(context.Background(), ts); err != nil {
			t.Fatal(err)
		}
	}
	return NewPipeline(&Options{Tools: cat, Policy: denyShell, Recorder: rec, Artifacts: arts, CallTimeout: 2 * time.Second, MaxOutputBytes: 4096})
}

func TestPipelineOutcomes(t *testing.T) {
	tests := []outcomeCase{
		{name: "ok", tool: "echo", args: `{"path":"a","limit":3}`, wantOut: "a/3"},
		{name: "ok without optional", tool: "echo", args: `{"path":"a"}`, wantOut: "a/0"},
		{name: "not found", tool: "nope", args: `{}`, wantError: true, wantKind: KindNotFound, wantInMsg: "Tool `nope` not found"},
		{name: "parse error", tool: "echo", args: `{"path":`, wantError: true, wantKind: KindParse, wantInMsg: "not valid JSON"},
		{name: "not an object", tool: "echo", args: `[1,2]`, wantError: true, wantKind: KindParse, wantInMsg: "must be a JSON object, got array"},
		{name: "form feed before the object", tool: "echo", args: "\f{\"path\":\"a\"}", wantError: true, wantKind: KindParse, wantInMsg: "not valid JSON"},
		{name: "trailing data", tool: "echo", args: `{"path":"a"} {}`, wantError: true, wantKind: KindParse, wantInMsg: "trailing data"},
		{name: "over maximum", tool: "echo", args: `{"path":"a","limit":5000}`, wantError: true, wantKind: KindInvalid, wantInMsg: "at '/limit': maximum 1000, got 5000"},
		{name: "missing required", tool: "echo", args: `{}`, wantError: true, wantKind: KindInvalid, wantInMsg: "at '/': missing required property 'path'"},
		{name: "wrong type", tool: "echo", args: `{"path":7}`, wantError: true, wantKind: KindInvalid, wantInMsg: "at '/path': type string, got number"},
		{name: "unknown property", tool: "echo", args: `{"path":"a","x":1}`, wantError: true, wantKind: KindInvalid, wantInMsg: "unknown properties not allowed: 'x'"},
		{name: "denied", tool: "shell", args: `{}`, wantError: true, wantKind: KindDenied, wantInMsg: "Permission denied: tool `shell` needs shell.exec (denied by runtime rule \"deny-shell\")"},
		{name: "timeout", tool: "sleep", args: `{"ms":5000}`, wantError: true, wantKind: KindTimeout, wantInMsg: "timed out after 2s (the deadline limits.call_timeout gives its calls)"},
		{name: "timeout of a handler that ignores ctx", tool: "stubborn", args: `{}`, wantError: true, wantKind: KindTimeout, wantInMsg: "timed out after 30ms"},
		{name: "panic", tool: "panics", args: `{}`, wantError: true, wantKind: KindRuntime, wantInMsg: "panic: boom"},
		{name: "nil result", tool: "nothing", args: `{}`, wantError: true, wantKind: KindRuntime, wantInMsg: "returned no result"},
		{name: "go error", tool: "fails", args: `{}`, wantError: true, wantKind: KindRuntime, wantInMsg: "disk on fire"},
		{name: "inline ok", tool: "sleep_inline", args: `{"ms":1}`, wantOut: "slept"},
		{name: "inline timeout", tool: "sleep_inline", args: `{"ms":5000}`, wantError: true, wantKind: KindTimeout, wantInMsg: "timed out after 2s (the deadline limits.call_timeout gives its calls)"},
		{name: "inline panic", tool: "panics_inline", args: `{}`, wantError: true, wantKind: KindRuntime, wantInMsg: "panic: boom"},
		{name: "inline nil result", tool: "nothing_inline", args: `{}`, wantError: true, wantKind: KindRuntime, wantInMsg: "returned no result"},
		{name: "inline go error", tool: "fails_inline", args: `{}`, wantError: true, wantKind: KindRuntime, wantInMsg: "disk on fire"},
	}
	rec := newMemRecorder()
	arts := &memArtifacts{}
	for _, tc := range tests {
		// In a bubble, the timeouts (2s, 30ms) pass in fake time, at once.
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				checkOutcome(t, newTestPipeline(t, rec, arts, inlineTools(t, testTools(t))), rec, tc)
				// Let a handler the pipeline gave up on (stubborn) end, in
				// fake time, so that the bubble ends with no goroutine left.
				time.Sleep(time.Hour)
			})
		})
	}
	if len(rec.started) != len(tests) || len(rec.finished) != len(tests) {
		t.Errorf("recorded %d starts and %d ends for %d calls", len(rec.started), len(rec.finished), len(tests))
	}
}

type outcomeCase struct {
	name      string
	tool      string
	args      string
	wantKind  Kind
	wantError bool
	wantInMsg string
	wantOut   string
}

func checkOutcome(t *testing.T, p *Pipeline, rec *memRecorder, tc outcomeCase) {
	call := &Call{Name: tc.tool, Arguments: json.RawMessage(tc.args)}
	res := p.Call(context.Background(), call)
	if res.IsError != tc.wantError || res.Kind != tc.wantKind {
		t.Fatalf("got is_error=%v kind=%q (%s), want %v %q", res.IsError, res.Kind, res.Message, tc.wantError, tc.wantKind)
	}
	if !strings.Contains(res.Message, tc.wantInMsg) {
		t.Errorf("message %q does not contain %q", res.Message, tc.wantInMsg)
	}
	if tc.wantOut != "" && res.OutputText() != tc.wantOut {
		t.Errorf("output %q, want %q", res.OutputText(), tc.wantOut)
	}
	if res.IsError && res.Brief() == "" {
		t.Errorf("error result has no brief")
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if rec.finished[call.ID] != res {
		t.Errorf("call %s not recorded with its result", call.ID)
	}
}

func TestCallsThatCannotBeRecordedAreRefused(t *testing.T) {
	rec := newMemRecorder()
	rec.failStart = errors.New("no space left on device")
	p := newTestPipeline(t, rec, nil)
	res := p.Call(context.Background(), &Call{Name: "echo", Arguments: json.RawMessage(`{"path":"x"}`)})
	if res.Kind != KindUnavailable || !strings.Contains(res.Message, "cannot be recorded: no space left on device") {
		t.Fatalf("got %q: %s", res.Kind, res.Message)
	}
	if len(rec.finished) != 1 {
		t.Errorf("the refusal was not passed on to the recorder")
	}
}

func TestPipelineDecisionIsOnTheCall(t *testing.T) {
	p := newTestPipeline(t, nil, nil)
	call := &Call{Name: "echo", Arguments: json.RawMessage(`{"path":"x"}`)}
	p.Call(context.Background(), call)
	if call.Decision == nil || !call.Decision.Allow || call.Toolset != "test" {
		t.Fatalf("decision %+v toolset %q", call.Decision, call.Toolset)
	}
}

func TestPipelineCancelledByCaller(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newTestPipeline(t, nil, nil)
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(20*time.Millisecond, cancel)
		start := time.Now()
		res := p.Call(ctx, &Call{Name: "sleep", Arguments: json.RawMessage(`{"ms":5000}`)})
		if res.Kind != KindCancelled {
			t.Fatalf("kind %q, want cancelled", res.Kind)
		}
		if d := time.Since(start); d != 20*time.Millisecond { // fake time: exact
			t.Fatalf("the call ended %v after it started, want at its cancellation (20ms)", d)
		}
	})
}

func TestSummarizeLargeOutput(t *testing.T) {
	arts := &memArtifacts{}
	rec := newMemRecorder()
	p := newTestPipeline(t, rec, arts)
	call := &Call{Name: "big"}
	res := p.Call(context.Background(), call)
	if res.IsError {
		t.Fatal(res.Message)
	}
	if n := outputSize(res.Output); n > 4096 {
		t.Errorf("summarized output is %d bytes, over the 4096 limit", n)
	}
	if len(call.Artifacts) != 1 {
		t.Fatalf("artifacts %v", call.Artifacts)
	}
	art := call.Artifacts[0]
	full := arts.saved[art.URI]
	if len(full) < 100_000 || !strings.HasPrefix(string(full), "line 0\n") || !strings.HasSuffix(string(full), "\n") {
		t.Fatalf("artifact holds %d bytes", len(full))
	}
	text := res.Output[0].(TextPart).Text
	for _, want := range []string{"output truncated", art.URI, "--- first", "line 0\nline 1\n", "--- last", "bytes omitted"} {
		if !strings.Contains(text, want) {
			t.Errorf("summary lacks %q:\n%s", want, text)
		}
	}
	link, ok := res.Output[1].(ResourceLinkPart)
	if !ok || link.URI != art.URI || *link.Size != int64(len(full)) {
		t.Fatalf("second part %#v", res.Output[1])
	}
	// The tail is the end of the output, cut on a line boundary.
	lastLine := strings.TrimSuffix(string(full), "\n")
	lastLine = lastLine[strings.LastIndexByte(lastLine, '\n')+1:]
	if !strings.HasSuffix(strings.TrimSpace(text), lastLine) {
		t.Errorf("summary does not end with the last line %q", lastLine)
	}
}

func TestSummarizeWhenArtifactCannotBeSaved(t *testing.T) {
	p := newTestPipeline(t, nil, &memArtifacts{fail: errors.New("disk full")})
	call := &Call{Name: "big"}
	res := p.Call(context.Background(), call)
	if n := outputSize(res.Output); n > 4096 {
		t.Errorf("output is %d bytes, over the limit", n)
	}
	if !strings.Contains(res.OutputText(), "could not be saved: disk full") {
		t.Errorf("summary does not say the save failed: %s", res.OutputText())
	}
}

func TestSummarizeBinaryParts(t *testing.T) {
	arts := &memArtifacts{}
	p := NewPipeline(&Options{Tools: resolverFunc(func(string) (*Tool, string, bool) {
		return Must(NewTool(ToolDef{Name: "img"}, func(context.Context, *Call) (*Result, error) {
			return Ok(Text("a picture"), ImagePart{Data: make([]byte, 10_000), MIMEType: "image/png"}), nil
		})), "t", true
	}), Artifacts: arts, MaxOutputBytes: 4096})
	call := &Call{Name: "img"}
	res := p.Call(context.Background(), call)
	if len(res.Output) != 2 || res.OutputText() != "a picture" {
		t.Fatalf("output %#v", res.Output)
	}
	if _, ok := res.Output[1].(ResourceLinkPart); !ok || len(call.Artifacts) != 1 || call.Artifacts[0].MIMEType != "image/png" {
		t.Fatalf("image not replaced by a link: %#v %v", res.Output[1], call.Artifacts)
	}
}

// TestSummarizeKeepsTextPartsWhole: only sizes change. Text under the
// limit beside large images stays as it was, part for part, in its place
// (each caption beside its image) with its annotations; text over it
// becomes one summary that keeps the annotations and _meta its parts
// share, and none when they differ.
func TestSummarizeKeepsTextPartsWhole(t *testing.T) {
	user := json.RawMessage(`{"audience":["user"]}`)
	meta := json.RawMessage(`{"k":"v"}`)
	big := strings.Repeat("x", 10_000)
	pipeline := func(out ...Part) *Pipeline {
		return NewPipeline(&Options{Tools: resolverFunc(func(string) (*Tool, string, bool) {
			return Must(NewTool(ToolDef{Name: "t"}, func(context.Context, *Call) (*Result, error) { return Ok(out...), nil })), "t", true
		}), Artifacts: &memArtifacts{}, MaxOutputBytes: 4096})
	}
	shape := func(parts []Part) string {
		var b strings.Builder
		for _, part := range parts {
			switch v := part.(type) {
			case TextPart:
				fmt.Fprintf(&b, "[text %.20q %s %s]", v.Text, v.Annotations, v.Meta)
			case ResourceLinkPart:
				b.WriteString("[link]")
			default:
				fmt.Fprintf(&b, "[%s]", part.PartType())
			}
		}
		return b.String()
	}
	for _, tc := range []struct {
		name string
		out  []Part
		want string
	}{
		{"captions beside large images", []Part{
			TextPart{Text: "Figure 1: cat"},
			ImagePart{Data: make([]byte, 10_000), MIMEType: "image/png"},
			TextPart{Text: "Figure 2: dog", Annotations: user},
			ImagePart{Data: make([]byte, 100), MIMEType: "image/png"},
		}, `[text "Figure 1: cat"  ][link][text "Figure 2: dog" {"audience":["user"]} ][image]`},
		{"one annotated text over the limit", []Part{TextPart{Text: big, Annotations: user, Meta: meta}},
			`[text "[output truncated: 1" {"audience":["user"]} {"k":"v"}][link]`},
		{"texts that share their annotations", []Part{TextPart{Text: big, Annotations: user}, TextPart{Text: "end", Annotations: user}},
			`[text "[output truncated: 1" {"audience":["user"]} ][link]`},
		{"texts whose annotations differ", []Part{TextPart{Text: big, Annotations: user}, TextPart{Text: "end"}},
			`[text "[output truncated: 1"  ][link]`},
	} {
		res := pipeline(tc.out...).Call(context.Background(), &Call{Name: "t"})
		if got := shape(res.Output); got != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.name, got, tc.want)
		}
	}
}

type resolverFunc func(string) (*Tool, string, bool)

func (f resolverFunc) Resolve(name string) (*Tool, string, bool) { return f(name) }

func TestBatchKeepsOrderAndCancelsPending(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newTestPipeline(t, nil, nil)
		calls := []*Call{
			{Name: "sleep", Arguments: json.RawMessage(`{"ms":60}`)},
			{Name: "echo", Arguments: json.RawMessage(`{"path":"fast"}`)},
			{Name: "sleep", Arguments: json.RawMessage(`{"ms":1}`)},
		}
		res := p.Batch(context.Background(), calls)
		if res[0].OutputText() != "slept" || res[1].OutputText() != "fast/0" || res[2].OutputText() != "slept" {
			t.Fatalf("results out of order: %q %q %q", res[0].OutputText(), res[1].OutputText(), res[2].OutputText())
		}

		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		start := time.Now()
		res = p.Batch(ctx, []*Call{
			{Name: "echo", Arguments: json.RawMessage(`{"path":"done"}`)},
			{Name: "sleep", Arguments: json.RawMessage(`{"ms":10000}`)},
			{Name: "sleep", Arguments: json.RawMessage(`{"ms":10000}`)},
		})
		if d := time.Since(start); d != 50*time.Millisecond { // fake time: exact
			t.Fatalf("batch ended after %v, want at its deadline (50ms): pending calls not cancelled", d)
		}
		if res[0].IsError || res[1].Kind != KindCancelled || res[2].Kind != KindCancelled {
			t.Fatalf("got %q %q %q", res[0].Status(), res[1].Status(), res[2].Status())
		}
	})
}

// waitingApprover answers like a channel nobody answers in time: it waits
// for ctx or its own two-minute timeout (policy.approval.timeout's default).
type waitingApprover struct{}

func (waitingApprover) Approve(ctx context.Context, _ *Call) Approval {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	<-ctx.Done()
	return Approval{Expired: true, Channel: "client"}
}

// TestShutdownCancelsCallsWaitingForApproval: when the grace period ends,
// a call waiting for a person is cancelled like one executing, so
// shutdown takes the grace and no longer, and the call's end is recorded
// (cancelled, saying why).
func TestShutdownCancelsCallsWaitingForApproval(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cat := NewCatalog(nil)
		if err := cat.Add(context.Background(), testTools(t)); err != nil {
			t.Fatal(err)
		}
		ask := PolicyFunc(func(context.Context, *Tool) Decision { return Decision{Ask: true, Layer: "config", Rule: "ask"} })
		rec := newMemRecorder()
		p := NewPipeline(&Options{Tools: cat, Policy: ask, Approver: waitingApprover{}, Recorder: rec})
		calls := []*Call{
			{Name: "echo", Arguments: json.RawMessage(`{"path":"x"}`)},
			{Name: "echo", Arguments: json.RawMessage(`{"path":"y"}`)},
		}
		var wg sync.WaitGroup
		for _, c := range calls {
			wg.Go(func() { p.Call(context.Background(), c) })
		}
		synctest.Wait() // both wait in Approve
		start := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		if err := p.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("shutdown: %v", err)
		}
		if d := time.Since(start); d != 50*time.Millisecond {
			t.Errorf("shutdown with a 50ms grace took %s", d)
		}
		wg.Wait()
		rec.mu.Lock()
		defer rec.mu.Unlock()
		for _, c := range calls {
			res := rec.finished[c.ID]
			if res == nil || res.Kind != KindCancelled || !strings.Contains(res.Message, "shut down while the call waited for approval") {
				t.Errorf("call %s recorded as %+v", c.ID, res)
			}
			if c.Decision == nil || c.Decision.Allow || c.Decision.Ask || c.Decision.Rule != "approval:cancelled" {
				t.Errorf("call %s decision %+v", c.ID, c.Decision)
			}
		}
	})
}

func TestShutdownRecordsEveryCall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := newMemRecorder()
		p := newTestPipeline(t, rec, nil)
		var wg sync.WaitGroup
		for i := 0; i < 20; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				p.Call(context.Background(), &Call{Name: "sleep", Arguments: json.RawMessage(`{"ms":10000}`)})
			}()
		}
		// Wait until all twenty are running (blocked in their handlers).
		synctest.Wait()
		rec.mu.Lock()
		n := len(rec.started)
		rec.mu.Unlock()
		if n != 20 {
			t.Fatalf("%d calls started, want 20", n)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		if err := p.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("shutdown: %v", err)
		}
		late := p.Call(context.Background(), &Call{Name: "echo", Arguments: json.RawMessage(`{"path":"x"}`)})
		wg.Wait()
		if late.Kind != KindUnavailable {
			t.Errorf("call after shutdown: %q", late.Kind)
		}
		rec.mu.Lock()
		defer rec.mu.Unlock()
		if len(rec.started) != 21 || len(rec.finished) != 21 {
			t.Fatalf("%d started, %d finished, want 21 each", len(rec.started), len(rec.finished))
		}
		for id, res := range rec.finished {
			if res.Kind != KindCancelled && res.Kind != KindUnavailable {
				t.Errorf("call %s ended %q", id, res.Kind)
			}
		}
	})
}

func TestProgressIsSerializedAndIncreasing(t *testing.T) {
	var mu sync.Mutex
	var got []Progress
	sink := sinkFunc(func(p Progress) {
		mu.Lock()
		got = append(got, p)
		mu.Unlock()
	})
	ctx, stop := WithProgress(context.Background(), sink)
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 50; i++ {
				ReportProgress(ctx, Progress{Progress: float64(i), Total: 50, Message: "step"})
			}
		}()
	}
	wg.Wait()
	stop()
	ReportProgress(ctx, Progress{Progress: 1e9})
	if len(got) != 400 {
		t.Fatalf("got %d reports, want 400 (and none after stop)", len(got))
	}
	for i := 1; i < len(got); i++ {
		if got[i].Progress <= got[i-1].Progress {
			t.Fatalf("report %d: progress %v after %v", i, got[i].Progress, got[i-1].Progress)
		}
		if got[i].Total != 0 && got[i].Progress > got[i].Total {
			t.Fatalf("report %d: progress %v over total %v", i, got[i].Progress, got[i].Total)
		}
	}
}

type sinkFunc func(Progress)

func (f sinkFunc) Report(p Progress) { f(p) }

func TestChainOrder(t *testing.T) {
	var trace []string
	stage := func(name string) Middleware {
		return func(next Handler) Handler {
			return func(ctx context.Context, c *Call) *Result {
				trace = append(trace, name+">")
				r := next(ctx, c)
				trace = append(trace, "<"+name)
				return r
			}
		}
	}
	h := Chain(func(context.Context, *Call) *Result { trace = append(trace, "h"); return OkText("") }, stage("a"), stage("b"))
	h(context.Background(), &Call{})
	if got := strings.Join(trace, " "); got != "a> b> h <b <a" {
		t.Fatalf("trace %q", got)
	}
}

// Overlaps tells calls that come one at a time from calls that overlap:
// no signal for calls in turn, one (and only one waiting) once a call
// starts while another runs; none is lost for a second overlap after the
// first was taken.
func TestPipelineOverlaps(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newTestPipeline(t, nil, nil)
		overlapped := func() bool {
			select {
			case <-p.Overlaps():
				return true
			default:
				return false
			}
		}
		for range 3 {
			p.Call(context.Background(), &Call{Name: "sleep", Arguments: json.RawMessage(`{"ms":10}`)})
		}
		if overlapped() {
			t.Fatal("calls in turn were taken for overlapping")
		}
		for round := range 2 {
			done := make(chan struct{})
			for range 3 {
				go func() {
					p.Call(context.Background(), &Call{Name: "sleep", Arguments: json.RawMessage(`{"ms":10}`)})
					done <- struct{}{}
				}()
			}
			synctest.Wait() // all three are in the pipeline
			for range 3 {
				<-done
			}
			if !overlapped() {
				t.Fatalf("round %d: three calls at once, no overlap signalled", round)
			}
			if overlapped() {
				t.Fatalf("round %d: more than one signal waiting", round)
			}
		}
		p.Call(context.Background(), &Call{Name: "sleep", Arguments: json.RawMessage(`{"ms":10}`)})
		if overlapped() {
			t.Fatal("a call after the others ended was taken for overlapping")
		}
	})
}

// TestCallsOverlap: a call says calls overlap (its record's writers then
// share writes, gateway/runs) from when one started while another ran
// until overlapWindow after; calls in turn, and a call outside a
// pipeline, do not.
func TestCallsOverlap(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newTestPipeline(t, nil, nil)
		sleep := func() *Call { return &Call{Name: "sleep", Arguments: json.RawMessage(`{"ms":10}`)} }
		c := sleep()
		p.Call(context.Background(), c)
		if c.CallsOverlap(time.Now()) {
			t.Fatal("a call alone says calls overlap")
		}
		if (&Call{}).CallsOverlap(time.Now()) {
			t.Fatal("a call outside a pipeline says calls overlap")
		}
		a, b := sleep(), sleep()
		done := p.Start(context.Background(), a)
		synctest.Wait() // a sleeps in the pipeline
		p.Call(context.Background(), b)
		<-done
		if !b.CallsOverlap(time.Now()) || !a.CallsOverlap(time.Now()) {
			t.Fatal("two calls at once: no overlap said")
		}
		time.Sleep(overlapWindow)
		if c := sleep(); p.Call(context.Background(), c) != nil && c.CallsOverlap(time.Now()) {
			t.Fatal("calls still said to overlap past the window")
		}
	})
}
