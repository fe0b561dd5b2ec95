package operator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

func waitListed(t *testing.T, q *Queue, n int) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		changed := q.Changed() // before looking, so no change is missed
		if len(q.List()) == n {
			return
		}
		select {
		case <-changed:
		case <-deadline:
			t.Fatalf("queue holds %d items, want %d", len(q.List()), n)
		}
	}
}

// waitingCall puts call c1 in q, waiting for an answer check takes, and
// returns where its answer arrives once it is listed.
func waitingCall(t *testing.T, q *Queue, check func(Answer) error) <-chan Answer {
	t.Helper()
	got := make(chan Answer, 1)
	go func() {
		a, _ := q.Wait(context.Background(), Item{ID: "c1"}, check)
		got <- a
	}()
	waitListed(t, q, 1)
	return got
}

func TestSubmitAnswersTheWaitingCall(t *testing.T) {
	q := NewQueue()
	got := make(chan Answer, 1)
	go func() {
		a, err := q.Wait(context.Background(), Item{ID: "c1", Tool: "ask"}, nil)
		if err != nil {
			t.Error(err)
		}
		got <- a
	}()
	waitListed(t, q, 1)
	if err := q.Submit("c1", Answer{Output: json.RawMessage(`"yes"`), By: "cli"}); err != nil {
		t.Fatal(err)
	}
	if a := <-got; string(a.Output) != `"yes"` || a.By != "cli" {
		t.Errorf("the call got %+v", a)
	}
	if err := q.Submit("c1", Answer{Output: json.RawMessage(`"again"`)}); !errors.Is(err, ErrUnknown) {
		t.Errorf("a second submission: %v, want ErrUnknown", err)
	}
	if len(q.List()) != 0 {
		t.Error("an answered call is still listed")
	}
}

func TestRefusedAnswerKeepsTheCallWaiting(t *testing.T) {
	q := NewQueue()
	check := func(a Answer) error {
		if string(a.Output) != `42` {
			return fmt.Errorf("want 42")
		}
		return nil
	}
	got := waitingCall(t, q, check)
	if err := q.Submit("c1", Answer{Output: json.RawMessage(`41`)}); err == nil || !strings.Contains(err.Error(), "want 42") {
		t.Fatalf("a refused answer: %v", err)
	}
	if len(q.List()) != 1 {
		t.Fatal("a refused answer took the call out of the queue")
	}
	if err := q.Submit("c1", Answer{Output: json.RawMessage(`42`)}); err != nil {
		t.Fatal(err)
	}
	if a := <-got; string(a.Output) != "42" {
		t.Errorf("got %s", a.Output)
	}
}

// TestSecondAnswerWhileOneIsChecked: an answer that comes while another
// is being checked is told to retry (409 from the API), not that the call
// is gone, and once the first is refused the call takes the retry.
func TestSecondAnswerWhileOneIsChecked(t *testing.T) {
	q := NewQueue()
	checking, release := make(chan struct{}), make(chan struct{})
	check := func(a Answer) error {
		if string(a.Output) == `"bad"` {
			close(checking)
			<-release // a long schema check
			return fmt.Errorf("does not match the output schema")
		}
		return nil
	}
	got := waitingCall(t, q, check)
	first := make(chan error, 1)
	go func() { first <- q.Submit("c1", Answer{Output: json.RawMessage(`"bad"`)}) }()
	<-checking
	if err := q.Submit("c1", Answer{Output: json.RawMessage(`"good"`)}); !errors.Is(err, ErrBusy) {
		t.Errorf("an answer while another is checked: %v, want ErrBusy", err)
	}
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodPost, "http://127.0.0.1/v1/pending/c1/submit", strings.NewReader(`{"output":"good"}`))
	req.Header.Set("Content-Type", "application/json")
	Handler(q, HTTPOptions{}).ServeHTTP(rec, req)
	if rec.Code != http.StatusConflict {
		t.Errorf("the API answered %d %s, want 409", rec.Code, rec.Body)
	}
	close(release)
	if err := <-first; err == nil {
		t.Fatal("the bad answer was taken")
	}
	if err := q.Submit("c1", Answer{Output: json.RawMessage(`"good"`)}); err != nil {
		t.Fatal(err)
	}
	if a := <-got; string(a.Output) != `"good"` {
		t.Errorf("the call got %s", a.Output)
	}
}

func TestDeadlineAndClose(t *testing.T) {
	q := NewQueue()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if _, err := q.Wait(ctx, Item{ID: "late"}, nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("past its deadline: %v", err)
	}
	if err := q.Submit("late", Answer{Output: json.RawMessage(`1`)}); !errors.Is(err, ErrUnknown) {
		t.Errorf("submitting to a call that gave up: %v", err)
	}

	errs := make(chan error, 3)
	for i := range 3 {
		go func() {
			_, err := q.Wait(context.Background(), Item{ID: fmt.Sprint("w", i)}, nil)
			errs <- err
		}()
	}
	waitListed(t, q, 3)
	q.Close()
	for range 3 {
		if err := <-errs; !errors.Is(err, ErrClosed) {
			t.Errorf("a wait at close: %v, want ErrClosed", err)
		}
	}
	if _, err := q.Wait(context.Background(), Item{ID: "after"}, nil); !errors.Is(err, ErrClosed) {
		t.Errorf("a wait after close: %v", err)
	}
}

// TestManyWaitingCalls: 100 calls wait at once; half are answered, half
// reach their deadline; every one ends exactly once, with its own answer.
func TestManyWaitingCalls(t *testing.T) {
	q := NewQueue()
	var wg sync.WaitGroup
	results := make([]string, 100)
	expire, expireAll := context.WithCancel(context.Background())
	defer expireAll()
	for i := range 100 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx := context.Background()
			if i%2 == 1 {
				ctx = expire // their deadline, reached once all wait
			}
			a, err := q.Wait(ctx, Item{ID: fmt.Sprint("c", i)}, nil)
			if err != nil {
				results[i] = "expired"
				return
			}
			results[i] = string(a.Output)
		}()
	}
	waitListed(t, q, 100)
	expireAll()
	for i := 0; i < 100; i += 2 {
		if err := q.Submit(fmt.Sprint("c", i), Answer{Output: json.RawMessage(fmt.Sprint(i))}); err != nil {
			t.Errorf("submit c%d: %v", i, err)
		}
	}
	wg.Wait()
	for i, r := range results {
		want := fmt.Sprint(i)
		if i%2 == 1 {
			want = "expired"
		}
		if r != want {
			t.Errorf("call %d ended with %q, want %q", i, r, want)
		}
	}
	if n := len(q.List()); n != 0 {
		t.Errorf("%d calls still listed", n)
	}
}

func TestAdminAPI(t *testing.T) {
	q := NewQueue()
	done := make(chan Answer, 1)
	go func() {
		a, _ := q.Wait(context.Background(), Item{ID: "c1", Tool: "ask", Created: time.Now()}, func(a Answer) error {
			if !strings.Contains(string(a.Output), "ok") {
				return errors.New("the answer must say ok")
			}
			return nil
		})
		done <- a
	}()
	waitListed(t, q, 1)
	srv := httptest.NewServer(Handler(q, HTTPOptions{Tokens: []string{"s3cret"}}))
	defer srv.Close()
	req := func(method, path, body string, hdr map[string]string) (int, string) {
		r, _ := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
		for k, v := range hdr {
			r.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b := new(strings.Builder)
		_, _ = fmt.Fprint(b, mustRead(resp))
		return resp.StatusCode, b.String()
	}
	auth := map[string]string{"Authorization": "Bearer s3cret", "Content-Type": "application/json"}
	for _, c := range []struct {
		name, method, path, body string
		hdr                      map[string]string
		code                     int
		why                      string // in the body
	}{
		{"no token", "GET", "/v1/pending", "", nil, 401, "no admin token: send the header Authorization: Bearer TOKEN"},
		{"wrong token", "GET", "/v1/pending", "", map[string]string{"Authorization": "Bearer nope"}, 401, "the admin token is not one this gateway accepts"},
		{"from a browser page", "GET", "/v1/pending", "", map[string]string{"Authorization": "Bearer s3cret", "Origin": "http://evil.example"}, 403, ""},
		{"a form post", "POST", "/v1/pending/c1/submit", "output=1", map[string]string{"Authorization": "Bearer s3cret", "Content-Type": "application/x-www-form-urlencoded"}, 415, ""},
		{"unknown call", "POST", "/v1/pending/nope/submit", `{"output":"ok"}`, auth, 404, ""},
		{"refused answer", "POST", "/v1/pending/c1/submit", `{"output":"no"}`, auth, 422, ""},
		{"list", "GET", "/v1/pending", "", auth, 200, ""},
		{"answer", "POST", "/v1/pending/c1/submit", `{"output":"ok then"}`, auth, 200, ""},
		{"answered twice", "POST", "/v1/pending/c1/submit", `{"output":"ok"}`, auth, 404, ""},
	} {
		if code, body := req(c.method, c.path, c.body, c.hdr); code != c.code || !strings.Contains(body, c.why) {
			t.Errorf("%s: %d %s, want %d with %q", c.name, code, body, c.code, c.why)
		}
	}
	if a := <-done; string(a.Output) != `"ok then"` || a.By != "http" {
		t.Errorf("the call got %+v", a)
	}
}

func mustRead(resp *http.Response) string {
	b := new(strings.Builder)
	buf := make([]byte, 4096)
	for {
		n, err := resp.Body.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			return b.String()
		}
	}
}
