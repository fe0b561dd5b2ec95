package e2e

// The operator page (/ui, issue 12 §3) in a real browser: headless
// Chromium from Debian's chromium package (which `make test` installs),
// driven from Go with chromedp. A person signs in with the admin token,
// sees a call waiting for approval appear without reloading, approves it,
// and the waiting MCP client gets the tool's result; the page's tables
// render (a screenshot of each is checked for content) with no script
// error and no Content Security Policy violation.

import (
	"bytes"
	"context"
	"image"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const uiToken = "ui-e2e-admin-token"

type css = chromedp.CSS

// browser starts headless Chromium for the test and returns a context for
// chromedp actions and a function that returns the page's script errors
// and console errors (CSP violations are console errors) so far.
func browser(t *testing.T) (context.Context, func() []string) {
	t.Helper()
	chromium := requireBinary(t, "chromium")
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium),
		chromedp.UserDataDir(t.TempDir()),
		// Chromium's own temporary files (its singleton socket's directory,
		// org.chromium.Chromium.*) go in the test's, which is removed after
		// it; in /tmp they stayed behind, one per run.
		chromedp.Env("TMPDIR="+t.TempDir()),
		chromedp.NoSandbox, // CI runs as root, where Chromium's sandbox cannot start
		chromedp.DisableGPU,
		chromedp.WindowSize(1400, 1000),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelBrowser := chromedp.NewContext(actx)
	ctx, cancelTimeout := context.WithTimeout(ctx, 90*time.Second)
	t.Cleanup(func() { cancelTimeout(); cancelBrowser(); cancelAlloc() })

	if err := chromedp.Do(ctx); err != nil { // starts the browser
		t.Fatalf("starting chromium: %v", err)
	}
	var mu sync.Mutex
	var problems []string
	messages := chromedp.Console(ctx) // subscribed now, before any page loads
	go func() {
		for m, err := range messages {
			if err != nil {
				return
			}
			if m.Type == chromedp.ConsoleError || m.IsException() {
				mu.Lock()
				problems = append(problems, m.String())
				mu.Unlock()
			}
		}
	}()
	return ctx, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), problems...)
	}
}

// uiEnv: echo needs the operator's approval, with the operator page behind
// a token (at the started server's Admin).
func uiEnv(t *testing.T) *Env {
	t.Helper()
	return newEnv(t,
		set("admin.addr", "127.0.0.1:0"),
		set("admin.tokens", []string{uiToken}),
		set("policy.approval.tools", []string{"echo"}),
		set("policy.approval.channel", "operator"),
		set("policy.approval.timeout", "60s"),
	)
}

// TestOperatorPageApproves: a person approves a pending call on the page
// and the waiting client gets the tool's result.
func TestOperatorPageApproves(t *testing.T) {
	t.Parallel()
	ctx, problems := browser(t)
	e := uiEnv(t)
	s := e.StartHTTP(t)
	base := s.Admin
	cs := s.Connect(t, era2025, nil)

	// Sign in first, then let a call start waiting: the row must appear
	// without a reload (the page's events stream).
	if err := chromedp.Do(ctx,
		chromedp.Navigate(base+"/ui"),
		chromedp.WaitVisible(css(`input[name=token]`)), // sent to sign in
		chromedp.SendKeys(css(`input[name=token]`), uiToken),
		chromedp.Submit(css(`input[name=token]`)),
		chromedp.WaitVisible(css(`#pending`)),
		chromedp.WaitVisible(css(`#live.on`)), // the events stream is open
	); err != nil {
		t.Fatalf("signing in: %v", err)
	}

	const text = "<b>approved by a person</b>"
	type outcome struct {
		res *mcp.CallToolResult
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		cctx, cancel := context.WithTimeout(context.Background(), 80*time.Second)
		defer cancel()
		res, err := cs.CallTool(cctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": text}})
		done <- outcome{res, err}
	}()

	row := `#pending tr.kind-approval`
	if err := chromedp.Do(ctx, chromedp.WaitVisible(css(row))); err != nil {
		t.Fatalf("the waiting call did not appear on the open page: %v", err)
	}
	rowText, err := chromedp.Run(ctx, chromedp.Text(css(row)))
	if err != nil {
		t.Fatal(err)
	}
	bold, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("#pending b").length`))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(rowText, "echo") || !strings.Contains(rowText, text) || !strings.Contains(rowText, "policy.approval.tools") {
		t.Errorf("the row does not show the tool, its arguments as text and the rule: %q", rowText)
	}
	if bold != 0 {
		t.Errorf("an argument's markup became part of the page (%d <b> elements)", bold)
	}
	select {
	case o := <-done:
		t.Fatalf("the call ended before anyone approved it: %+v %v", o.res, o.err)
	default:
	}

	if err := chromedp.Do(ctx, chromedp.Click(css(row+` button[value=allow_once]`))); err != nil {
		t.Fatalf("clicking Allow once: %v", err)
	}
	var o outcome
	select {
	case o = <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("the client did not get an answer after the approval")
	}
	if o.err != nil || o.res.IsError || textOf(o.res) != text {
		t.Fatalf("after approval on the page the client got %v %+v", o.err, o.res)
	}

	// The call shows in the latest calls, and its link leads to its record.
	if err := chromedp.Do(ctx, chromedp.WaitVisible(css(`#calls tr.status-ok a`))); err != nil {
		t.Fatalf("the finished call is not listed: %v", err)
	}
	href, err := chromedp.Run(ctx, chromedp.AttributeValue(css(`#calls tr.status-ok a`), "href"))
	if err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(base+href.Value), chromedp.WaitVisible(css(`#record`))); err != nil {
		t.Fatalf("the call's page: %v", err)
	}
	record, err := chromedp.Run(ctx, chromedp.Text(css(`#record`)))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(record, `"approval:operator:once"`) || !strings.Contains(record, `"tool": "echo"`) {
		t.Errorf("the record does not say the operator approved the call once:\n%s", record)
	}
	if p := problems(); len(p) > 0 {
		t.Errorf("the page had script or CSP errors:\n%s", strings.Join(p, "\n"))
	}
	events := e.Archive(t).eventTypes()
	if events["approval.granted"] != 1 {
		t.Errorf("approval.granted events: %d", events["approval.granted"])
	}
}

// TestOperatorPageScreenshot: the page renders its tables (waiting calls,
// latest calls, toolsets, tools): each has rows, and a screenshot of each
// has content (not a blank or one-colour box).
func TestOperatorPageScreenshot(t *testing.T) {
	t.Parallel()
	ctx, problems := browser(t)
	e := uiEnv(t)
	s := e.StartHTTP(t)
	base := s.Admin
	cs := s.Connect(t, era2025, nil)
	call(t, cs, "list_files", map[string]any{"path": "."})
	call(t, cs, "read_file", map[string]any{"path": "missing.txt"}) // an error row
	waitCtx, cancelWait := context.WithCancel(context.Background())
	t.Cleanup(cancelWait) // before the client and server close
	go func() {           // one call waiting for approval
		_, _ = cs.CallTool(waitCtx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "waiting"}})
	}()

	if err := chromedp.Do(ctx,
		chromedp.Navigate(base+"/ui/login"),
		chromedp.SendKeys(css(`input[name=token]`), uiToken),
		chromedp.Submit(css(`input[name=token]`)),
		chromedp.WaitVisible(css(`#pending tr.kind-approval`)),
	); err != nil {
		t.Fatalf("the page: %v", err)
	}
	dir := os.Getenv("TOOLGATE_SCREENSHOTS")
	if dir == "" {
		dir = t.TempDir()
	}
	full, err := chromedp.Run(ctx, chromedp.FullScreenshot(90))
	if err != nil {
		t.Fatal(err)
	}
	_ = os.WriteFile(filepath.Join(dir, "operator-page.jpg"), full, 0o644)
	for _, section := range []string{"pending", "calls", "toolsets", "tools"} {
		rows, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("#`+section+` table tbody tr").length`))
		if err != nil {
			t.Fatalf("%s: %v", section, err)
		}
		shot, err := chromedp.Run(ctx, chromedp.Screenshot(css(`#`+section+` table`)))
		if err != nil {
			t.Fatalf("%s: %v", section, err)
		}
		if rows == 0 {
			t.Errorf("the %s table has no rows", section)
		}
		_ = os.WriteFile(filepath.Join(dir, section+".png"), shot, 0o644)
		img, err := png.Decode(bytes.NewReader(shot))
		if err != nil {
			t.Fatalf("%s: the screenshot is not a PNG: %v", section, err)
		}
		if b := img.Bounds(); b.Dx() < 300 || b.Dy() < 40 {
			t.Errorf("the %s table renders %dx%d pixels", section, b.Dx(), b.Dy())
		}
		if n := colours(img); n < 8 {
			t.Errorf("the %s table's screenshot has %d colours: it renders nothing readable", section, n)
		}
	}
	if p := problems(); len(p) > 0 {
		t.Errorf("the page had script or CSP errors:\n%s", strings.Join(p, "\n"))
	}
}

// colours counts the distinct colours of an image (up to 1000).
func colours(img image.Image) int {
	seen := map[[3]uint32]bool{}
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y += 2 {
		for x := b.Min.X; x < b.Max.X; x += 2 {
			r, g, bl, _ := img.At(x, y).RGBA()
			seen[[3]uint32{r >> 8, g >> 8, bl >> 8}] = true
			if len(seen) >= 1000 {
				return len(seen)
			}
		}
	}
	return len(seen)
}
