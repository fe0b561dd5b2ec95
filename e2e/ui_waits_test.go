package e2e

// The operator page when calls wait more than once, end elsewhere, or many
// wait at once: what the page shows must always be the call's current
// wait, and an answer must go to the wait it was given for.

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// reviewerUIEnv: a definition-only tool (ask_reviewer) that also needs the
// operator's approval, with the operator page behind a token (at the
// started server's Admin).
func reviewerUIEnv(t *testing.T, opts ...Opt) *Env {
	t.Helper()
	return newEnv(t, append([]Opt{
		set("admin.addr", "127.0.0.1:0"),
		set("admin.tokens", []string{uiToken}),
		set("policy.approval.tools", []string{"ask_reviewer"}),
		set("policy.approval.channel", "operator"),
		set("policy.approval.timeout", "60s"),
		set("definitions", []map[string]any{{
			"name": "ask_reviewer", "description": "Ask the on-call reviewer for a verdict on a release.",
			"input_schema":  map[string]any{"type": "object", "properties": map[string]any{"release": map[string]any{"type": "string"}}, "required": []string{"release"}},
			"output_schema": map[string]any{"type": "object", "properties": map[string]any{"verdict": map[string]any{"type": "string", "enum": []string{"approve", "reject"}}}, "required": []string{"verdict"}},
			"timeout":       "60s",
		}}),
	}, opts...)...)
}

// signIn opens the page, signs in with the admin token and waits for the
// events stream to be open.
func signIn(t *testing.T, ctx context.Context, base string) {
	t.Helper()
	if err := chromedp.Do(ctx,
		chromedp.Navigate(base+"/ui/login"),
		chromedp.WaitVisible(css(`input[name=token]`)),
		chromedp.SendKeys(css(`input[name=token]`), uiToken),
		chromedp.Submit(css(`input[name=token]`)),
		chromedp.WaitVisible(css(`#pending`)),
		chromedp.WaitVisible(css(`#live.on`)),
	); err != nil {
		t.Fatalf("signing in: %v", err)
	}
}

// signedIn starts e's gateway over HTTP, connects a client of era to it
// and signs in on its operator page in the browser ctx.
func signedIn(t *testing.T, ctx context.Context, e *Env, era string) (*Server, *mcp.ClientSession) {
	t.Helper()
	s := e.StartHTTP(t)
	cs := s.Connect(t, era, nil)
	signIn(t, ctx, s.Admin)
	return s, cs
}

// clientGets waits up to 30 s for the client's answer on res, and fails t
// unless it comes, is not an error, and its text is one ok accepts.
func clientGets(t *testing.T, res <-chan *mcp.CallToolResult, ok func(text string) bool) {
	t.Helper()
	select {
	case r := <-res:
		if r.IsError || !ok(textOf(r)) {
			t.Errorf("the client got %q (error %v)", textOf(r), r.IsError)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the client got no answer")
	}
}

// noPageProblems fails t if the page had script or CSP errors, leaving
// out those that contain expected (when it is not "").
func noPageProblems(t *testing.T, problems func() []string, expected string) {
	t.Helper()
	var other []string
	for _, p := range problems() {
		if expected == "" || !strings.Contains(p, expected) {
			other = append(other, p)
		}
	}
	if len(other) > 0 {
		t.Errorf("the page had script or CSP errors:\n%s", strings.Join(other, "\n"))
	}
}

// pageEval evaluates a script on the page.
func pageEval[T any](t *testing.T, ctx context.Context, js string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](js))
	if err != nil {
		t.Fatalf("%s: %v", js, err)
	}
	return v
}

// pageDo runs a person's action on the page as a script: it finds its
// element when it runs, so the page's own updates (which move the answer
// forms) cannot leave it holding a node that is gone.
func pageDo(t *testing.T, ctx context.Context, js string) {
	t.Helper()
	pageEval[bool](t, ctx, "(() => { "+js+"; return true })()")
}

// TestOperatorPageSameCallWaitsAgain: a call approved elsewhere (the CLI)
// then waits for its output under the same call ID; the open page must
// show the output form for it, not keep the approval's buttons.
func TestOperatorPageSameCallWaitsAgain(t *testing.T) {
	t.Parallel()
	ctx, problems := browser(t)
	e := reviewerUIEnv(t)
	_, cs := signedIn(t, ctx, e, era2025)

	res := asyncCall(t, cs, "ask_reviewer", map[string]any{"release": "v1.2"})
	if err := chromedp.Do(ctx, chromedp.WaitVisible(css(`#pending tr.kind-approval button[value=allow_once]`))); err != nil {
		t.Fatalf("the approval did not appear: %v", err)
	}
	id := pageEval[string](t, ctx, `document.querySelector("#pending tr.kind-approval").dataset.id`)
	if out, err := e.command(callCtx(t), "approve", id).CombinedOutput(); err != nil {
		t.Fatalf("toolgate approve: %v %s", err, out)
	}
	if err := chromedp.Do(ctx, chromedp.WaitVisible(css(`#pending tr.kind-output[data-id="`+id+`"]`))); err != nil {
		t.Fatalf("the call's wait for its output did not appear: %v", err)
	}
	// No time need pass for a refresh under way to land: the page's
	// refreshes run one at a time, each showing the state it fetched, and
	// a row is swapped in with its form in one step (ui.js merge). Once
	// the output's row is shown, no later refresh can bring the approval's
	// buttons back, and the row must be right now, not in a while.
	buttons := pageEval[int](t, ctx, `document.querySelectorAll('#pending tr[data-id="`+id+`"] button[name=decision]').length`)
	boxes := pageEval[int](t, ctx, `document.querySelectorAll('#pending tr[data-id="`+id+`"] textarea[name=output]').length`)
	if buttons != 0 || boxes != 1 {
		t.Fatalf("the call waits for its output, but its row shows %d approval buttons and %d output boxes", buttons, boxes)
	}
	pageDo(t, ctx, `const b = document.querySelector('#pending tr[data-id="`+id+`"] textarea'); b.value = '{"verdict":"approve"}'; b.form.requestSubmit()`)
	clientGets(t, res, func(text string) bool { return strings.Contains(text, `"verdict":"approve"`) })
	noPageProblems(t, problems, "")
}

// TestOperatorPageKeepsTyping: a person types an output while the page
// updates (another call starts waiting): the text box keeps its text and
// the keyboard's focus, so what is typed next goes on into it.
func TestOperatorPageKeepsTyping(t *testing.T) {
	t.Parallel()
	ctx, problems := browser(t)
	e := reviewerUIEnv(t, set("policy.approval.tools", []string{"echo"}))
	_, cs := signedIn(t, ctx, e, era2025)

	res := asyncCall(t, cs, "ask_reviewer", map[string]any{"release": "v2"})
	box := `#pending tr.kind-output textarea`
	if err := chromedp.Do(ctx,
		chromedp.WaitVisible(css(box)),
	); err != nil {
		t.Fatal(err)
	}
	pageDo(t, ctx, `document.querySelector("`+box+`").focus()`)
	if err := chromedp.Do(ctx, chromedp.KeyEvent(`{"verdict":`)); err != nil {
		t.Fatalf("typing: %v", err)
	}
	other := asyncCall(t, cs, "echo", map[string]any{"text": "meanwhile"}) // the page updates
	if err := chromedp.Do(ctx, chromedp.WaitVisible(css(`#pending tr.kind-approval`))); err != nil {
		t.Fatalf("the second call did not appear: %v", err)
	}
	// The update that shows the second call (one step: ui.js merge) gave
	// the box back its text and the keyboard's focus: that holds now,
	// before typing on, with no time to wait.
	value := pageEval[string](t, ctx, `document.querySelector("`+box+`").value`)
	focused := pageEval[bool](t, ctx, `document.activeElement === document.querySelector("`+box+`")`)
	if value != `{"verdict":` || !focused {
		t.Fatalf("as the page updated, the text box holds %q (focused: %v)", value, focused)
	}
	if err := chromedp.Do(ctx, chromedp.KeyEvent(`"approve"}`)); err != nil {
		t.Fatal(err)
	}
	value = pageEval[string](t, ctx, `document.querySelector("`+box+`").value`)
	focused = pageEval[bool](t, ctx, `document.activeElement === document.querySelector("`+box+`")`)
	if value != `{"verdict":"approve"}` || !focused {
		t.Fatalf("after the page updated, the text box holds %q (focused: %v)", value, focused)
	}
	pageDo(t, ctx, `document.querySelector("`+box+`").form.requestSubmit()`)
	clientGets(t, res, func(text string) bool { return strings.Contains(text, `"verdict":"approve"`) })
	if err := chromedp.Do(ctx, chromedp.WaitVisible(css(`#pending tr.kind-approval button[value=deny]`))); err != nil {
		t.Fatal(err)
	}
	pageDo(t, ctx, `document.querySelector("#pending tr.kind-approval button[value=deny]").click()`)
	select {
	case <-other:
	case <-time.After(30 * time.Second):
		t.Fatal("the denied call got no answer")
	}
	noPageProblems(t, problems, "")
}

// TestOperatorPageGatewayRestarts: the gateway restarts under an open page.
// The call that waited is gone from it, and the page, whose session the
// restart ended, sends the person to sign in again instead of showing the
// old state for ever; signed in, it is live again.
func TestOperatorPageGatewayRestarts(t *testing.T) {
	t.Parallel()
	ctx, problems := browser(t)
	e := reviewerUIEnv(t)
	s, cs := signedIn(t, ctx, e, era2026) // its answer comes on the call's own stream (see TestWaitingCallsOnShutdown)
	base := s.Admin
	res := asyncCall(t, cs, "ask_reviewer", map[string]any{"release": "v3"})
	if err := chromedp.Do(ctx, chromedp.WaitVisible(css(`#pending tr.kind-approval`))); err != nil {
		t.Fatalf("the approval did not appear: %v", err)
	}
	s.Stop(t)
	select {
	case <-res:
	case <-time.After(30 * time.Second):
		t.Fatal("the waiting call got no answer when the gateway stopped")
	}
	if again := e.StartHTTP(t); again.Admin != base { // the env gives the restart the admin address it had
		t.Fatalf("the restarted gateway serves its page at %s, not %s", again.Admin, base)
	}
	if !waitFor(20*time.Second, func() bool {
		loc, err := chromedp.Run(ctx, chromedp.Location())
		return err == nil && strings.HasSuffix(loc, "/ui/login")
	}) {
		loc, _ := chromedp.Run(ctx, chromedp.Location())
		rows := pageEval[int](t, ctx, `document.querySelectorAll("#pending tr[data-id]").length`)
		live := pageEval[string](t, ctx, `(document.getElementById("live")||{}).className`)
		t.Fatalf("after the restart the page stays at %s (live: %q, %d waiting calls shown)", loc, live, rows)
	}
	signIn(t, ctx, base)
	if rows := pageEval[int](t, ctx, `document.querySelectorAll("#pending tr[data-id]").length`); rows != 0 {
		t.Errorf("after the restart the page shows %d waiting calls", rows)
	}
	if p := problems(); len(p) > 0 {
		t.Logf("console (a restart makes the stream fail for a while): %s", strings.Join(p, "\n"))
	}
}

// TestOperatorPageRefusedOutput: an output the schema refuses is shown
// with the schema's error beside the call it was for, and the box still
// holds what was typed, to correct rather than type again; the address is
// /ui again, so a reload does not send the refused answer a second time.
func TestOperatorPageRefusedOutput(t *testing.T) {
	t.Parallel()
	ctx, problems := browser(t)
	e := reviewerUIEnv(t, set("policy.approval.tools", []string{"echo"}))
	_, cs := signedIn(t, ctx, e, era2025)

	res := asyncCall(t, cs, "ask_reviewer", map[string]any{"release": "v4"})
	box := `#pending tr.kind-output textarea`
	const typed = "{\n  \"verdict\": \"maybe\",\n  \"note\": \"long text the person wrote\"\n}"
	if err := chromedp.Do(ctx, chromedp.WaitVisible(css(box))); err != nil {
		t.Fatal(err)
	}
	pageDo(t, ctx, `const b = document.querySelector("`+box+`"); b.value = `+strconv.Quote(typed)+`; b.form.requestSubmit()`)
	if err := chromedp.Do(ctx, chromedp.WaitVisible(css(`.error`))); err != nil {
		t.Fatalf("submitting a refused output: %v", err)
	}
	shown := pageEval[string](t, ctx, `Array.from(document.querySelectorAll("#pending tr.kind-output .error")).map(e => e.textContent).join(" ")`)
	if !strings.Contains(shown, "output schema") || !strings.Contains(shown, "/verdict") {
		t.Errorf("the row of the call does not show the schema's error: %q (page: %q)", shown,
			pageEval[string](t, ctx, `document.body.innerText`))
	}
	if got := pageEval[string](t, ctx, `document.querySelector("`+box+`").value`); got != typed {
		t.Fatalf("the refused output is gone from the box: %q", got)
	}
	// The address is the page's again, not the form's: a reload asks the
	// page anew rather than sending the refused answer a second time.
	if got := pageEval[string](t, ctx, `location.pathname`); got != "/ui" {
		t.Errorf("after a refused answer the address is %q, want /ui", got)
	}
	if err := chromedp.Do(ctx, chromedp.Reload(), chromedp.WaitVisible(css(box)), chromedp.WaitVisible(css(`#live.on`))); err != nil {
		t.Fatalf("reloading: %v", err)
	}
	if n := pageEval[int](t, ctx, `document.querySelectorAll(".error").length`); n != 0 {
		t.Errorf("the reload sent the refused answer again: %d errors shown", n)
	}
	pageDo(t, ctx, `const b = document.querySelector("`+box+`"); b.value = '{"verdict":"reject"}'; b.form.requestSubmit()`)
	clientGets(t, res, func(text string) bool { return strings.Contains(text, `"verdict":"reject"`) })
	noPageProblems(t, problems, "status of 422") // the refused answer's page is a 422, which the console notes
}

// TestOperatorPageTextOutputLines: a plain-text output of several lines
// typed on the page reaches the client with the lines as typed ("\n"),
// not with the "\r\n" a browser sends a form's text in.
func TestOperatorPageTextOutputLines(t *testing.T) {
	t.Parallel()
	ctx, _ := browser(t)
	e := reviewerUIEnv(t,
		set("policy.approval.tools", []string{"echo"}),
		set("definitions", []map[string]any{{"name": "ask_note", "description": "Ask for a note.", "timeout": "60s"}}))
	_, cs := signedIn(t, ctx, e, era2025)
	res := asyncCall(t, cs, "ask_note", map[string]any{})
	box := `#pending tr.kind-output textarea`
	if err := chromedp.Do(ctx, chromedp.WaitVisible(css(box))); err != nil {
		t.Fatal(err)
	}
	pageDo(t, ctx, `const b = document.querySelector("`+box+`"); b.value = "first line\nsecond line"; b.form.requestSubmit()`)
	clientGets(t, res, func(text string) bool { return text == "first line\nsecond line" })
}

// TestOperatorPageErrorDismissed: an answer to a call that stopped waiting
// (approved elsewhere first) is refused with an error at the top of the
// page; the error can be dismissed, without a reload, once read.
func TestOperatorPageErrorDismissed(t *testing.T) {
	t.Parallel()
	ctx, problems := browser(t)
	e := uiEnv(t)
	_, cs := signedIn(t, ctx, e, era2025)

	res := asyncCall(t, cs, "echo", map[string]any{"text": "hi"})
	row := `#pending tr.kind-approval`
	if err := chromedp.Do(ctx, chromedp.WaitVisible(css(row+` button[value=allow_once]`))); err != nil {
		t.Fatalf("the approval did not appear: %v", err)
	}
	id := pageEval[string](t, ctx, `document.querySelector("`+row+`").dataset.id`)
	// The person's copy of the form, kept as it was before the call ended.
	pageDo(t, ctx, `window.stale = document.querySelector("`+row+` form").cloneNode(true)`)
	if out, err := e.command(callCtx(t), "approve", id).CombinedOutput(); err != nil {
		t.Fatalf("toolgate approve: %v %s", err, out)
	}
	select {
	case <-res:
	case <-time.After(30 * time.Second):
		t.Fatal("the client got no answer")
	}
	pageDo(t, ctx, `document.body.append(window.stale); window.stale.requestSubmit(window.stale.querySelector("button[value=allow_once]"))`)
	top := `body > .error`
	if err := chromedp.Do(ctx, chromedp.WaitVisible(css(top)), chromedp.WaitVisible(css(`#live.on`))); err != nil {
		t.Fatalf("the late answer's error is not shown: %v", err)
	}
	if got := pageEval[string](t, ctx, `document.querySelector("`+top+`").textContent`); !strings.Contains(got, "no call with that ID is waiting") {
		t.Errorf("the error at the top: %q", got)
	}
	if err := chromedp.Do(ctx, chromedp.Click(css(top+` button.close`)), chromedp.WaitNotPresent(css(top))); err != nil {
		t.Fatalf("dismissing the error: %v", err)
	}
	noPageProblems(t, problems, "status of 404") // the refused answer's page is a 404, which the console notes
}
