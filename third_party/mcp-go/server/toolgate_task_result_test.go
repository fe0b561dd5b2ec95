package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

// TestToolgateTaskRequestsOnTasksResult (item 77): over streamable HTTP,
// with no GET stream open, a 2025-11-25 task's elicitation reaches the
// client on the stream of its tasks/result, whether the task asked before
// tasks/result came or after; the client's answer reaches the task, whose
// result then ends that stream; and the copy queued for the GET stream is
// neither sent there again nor kept when the queue needs its place.
// Before the patch the request went to the GET stream only, and the task
// waited in input_required until its deadline.
func TestToolgateTaskRequestsOnTasksResult(t *testing.T) {
	for _, askFirst := range []bool{true, false} {
		t.Run(fmt.Sprintf("askedBeforeTasksResult=%v", askFirst), func(t *testing.T) {
			s := NewMCPServer("t", "1", WithToolCapabilities(false), WithTaskCapabilities(true, true, true), WithElicitation())
			ask := make(chan struct{})
			s.AddTool(mcp.NewTool("ask", mcp.WithTaskSupport(mcp.TaskSupportOptional)), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				// The task outlives the POST that created it (item 81):
				// ctx is not cancelled by the POST's end.
				<-ask
				res, err := s.RequestElicitation(ctx, mcp.ElicitationRequest{Params: mcp.ElicitationParams{
					Message:         "name?",
					RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}},
				}})
				if err != nil {
					return nil, err
				}
				return mcp.NewToolResultText(fmt.Sprint("hello ", res.Content.(map[string]any)["name"])), nil
			})
			h := NewStreamableHTTPServer(s)
			ts := httptest.NewServer(h)
			defer ts.Close()
			sessionID := initializeSession(t, h)
			v, _ := h.activeSessions.Load(sessionID)
			session := v.(*streamableHttpSession)
			header := http.Header{}
			header.Set("Mcp-Session-Id", sessionID)
			header.Set("Mcp-Protocol-Version", "2025-11-25")

			taskID := startTask(t, ts.URL, header, 1, "ask")
			entry, err := s.getTaskEntry(s.WithContext(context.Background(), session), taskID)
			if err != nil {
				t.Fatal(err)
			}
			if askFirst {
				close(ask)
				for deadline := time.Now().Add(5 * time.Second); queuedRequests(session, mcp.MethodElicitationCreate) != 1; time.Sleep(time.Millisecond) {
					if time.Now().After(deadline) {
						t.Fatal("the task's request did not wait for a stream")
					}
				}
			}

			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			// Its answer's headers come with the first message on its stream.
			posted := make(chan *http.Response, 1)
			go func() {
				resp, err := http.DefaultClient.Do(mcpPost(ctx, ts.URL, `{"jsonrpc":"2.0","id":2,"method":"tasks/result","params":{"taskId":"`+taskID+`"}}`, header))
				if err != nil {
					t.Error(err)
				}
				posted <- resp
			}()
			if !askFirst {
				for deadline := time.Now().Add(5 * time.Second); waitingResults(entry) != 1; time.Sleep(time.Millisecond) {
					if time.Now().After(deadline) {
						t.Fatal("tasks/result did not wait for the task")
					}
				}
				close(ask)
			}
			result := <-posted
			if result == nil {
				t.FailNow()
			}
			defer result.Body.Close()
			lines := lineStream(result.Body)
			asked := nextMessage(t, lines, string(mcp.MethodElicitationCreate))
			answer := postMCP(t, ts.URL, `{"jsonrpc":"2.0","id":`+string(asked.ID)+`,"result":{"action":"accept","content":{"name":"ada"}}}`, header)
			answer.Body.Close()
			if answer.StatusCode/100 != 2 {
				t.Fatalf("the client's answer was refused: %s", answer.Status)
			}
			var final string
			for line := range lines {
				if data, ok := strings.CutPrefix(line, "data: "); ok && strings.Contains(data, `"id":2`) {
					final = data
					break
				}
			}
			if !strings.Contains(final, "hello ada") {
				t.Fatalf("tasks/result answered %q; want the task's result with the client's answer", final)
			}
			// The request was queued for the GET stream too: it must not be
			// sent there again, nor keep a place there that a live request
			// needs.
			q := session.requestQueues().elicitation
			if q.len() != 1 {
				t.Fatalf("%d requests wait for the GET stream; want the one sent, not yet dropped", q.len())
			}
			for i := range serverRequestQueueCap {
				if !q.push(elicitationRequestItem{requestID: int64(100 + i), claim: &serverRequestClaim{}}) {
					t.Fatalf("live request %d refused: the GET queue kept the request tasks/result sent", i+1)
				}
			}
			if queued, ok := q.pop(); !ok || queued.requestID != 100 {
				t.Fatalf("the GET queue's first request is %d; want the first live one", queued.requestID)
			}
		})
	}
}

// TestToolgateTaskRequestOutlivesItsTasksResultStream (item 84): a
// task's request whose write on a tasks/result stream fails, its client
// gone mid-message, is not lost: the next tasks/result gets it, and the
// client's answer there completes the task. The first stream's writer is
// stalled inside the request (4 MiB, a small send buffer, a client that
// reads only its start) when the client closes it. Before the patch the
// failed write counted as sent: no later tasks/result was offered it, and
// the task waited in input_required until its deadline.
func TestToolgateTaskRequestOutlivesItsTasksResultStream(t *testing.T) {
	s := NewMCPServer("t", "1", WithToolCapabilities(false), WithTaskCapabilities(true, true, true), WithElicitation())
	ask := make(chan struct{})
	s.AddTool(mcp.NewTool("ask", mcp.WithTaskSupport(mcp.TaskSupportOptional)), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		<-ask
		res, err := s.RequestElicitation(ctx, mcp.ElicitationRequest{Params: mcp.ElicitationParams{
			Message:         strings.Repeat("x", 4<<20),
			RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}},
		}})
		if err != nil {
			return nil, err
		}
		return mcp.NewToolResultText(fmt.Sprint("hello ", res.Content.(map[string]any)["name"])), nil
	})
	h := NewStreamableHTTPServer(s)
	ts := httptest.NewUnstartedServer(h)
	ts.Listener = smallBufferListener{ts.Listener}
	ts.Start()
	defer ts.Close()
	sessionID := initializeSession(t, h)
	v, _ := h.activeSessions.Load(sessionID)
	session := v.(*streamableHttpSession)
	header := http.Header{"Mcp-Session-Id": {sessionID}, "Mcp-Protocol-Version": {"2025-11-25"}}

	taskID := startTask(t, ts.URL, header, 1, "ask")
	entry, err := s.getTaskEntry(s.WithContext(context.Background(), session), taskID)
	if err != nil {
		t.Fatal(err)
	}
	// tasksResult posts tasks/result as id and returns its answer, whose
	// headers come with the first message on its stream.
	tasksResult := func(ctx context.Context, id int) *http.Response {
		t.Helper()
		posted := make(chan *http.Response, 1)
		go func() {
			resp, err := http.DefaultClient.Do(mcpPost(ctx, ts.URL, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tasks/result","params":{"taskId":"%s"}}`, id, taskID), header))
			if err != nil {
				t.Error(err)
			}
			posted <- resp
		}()
		select {
		case resp := <-posted:
			if resp == nil {
				t.FailNow()
			}
			return resp
		case <-time.After(10 * time.Second):
			t.Fatalf("tasks/result %d sent nothing within 10 s", id)
		}
		return nil
	}

	firstCtx, closeFirst := context.WithCancel(context.Background())
	defer closeFirst()
	go func() {
		for deadline := time.Now().Add(10 * time.Second); waitingResults(entry) != 1 && time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		}
		close(ask) // the task asks once its first tasks/result waits
	}()
	first := tasksResult(firstCtx, 2)
	readUntil(t, first.Body, strings.Repeat("x", 64), "the first tasks/result") // inside the request
	closeFirst()
	first.Body.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	second := tasksResult(ctx, 3)
	defer second.Body.Close()
	lines := lineStream(second.Body)
	asked := nextMessage(t, lines, string(mcp.MethodElicitationCreate))
	answer := postMCP(t, ts.URL, `{"jsonrpc":"2.0","id":`+string(asked.ID)+`,"result":{"action":"accept","content":{"name":"ada"}}}`, header)
	answer.Body.Close()
	if answer.StatusCode/100 != 2 {
		t.Fatalf("the client's answer was refused: %s", answer.Status)
	}
	var final string
	for line := range lines {
		if data, ok := strings.CutPrefix(line, "data: "); ok && strings.Contains(data, `"id":3`) {
			final = data
			break
		}
	}
	if !strings.Contains(final, "hello ada") {
		t.Fatalf("the second tasks/result answered %q; want the task's result with the client's answer", final)
	}
}

// TestToolgateGivenBackTaskRequestIsOfferedAgain (item 84): a task's
// request that a stream claimed stays parked on its task until written;
// given back, it is offered to the tasks/result that came meanwhile, and
// queued again, once, for the GET stream, which dropped it as sent.
func TestToolgateGivenBackTaskRequestIsOfferedAgain(t *testing.T) {
	route := &taskRoute{}
	ctx := taskContext{Context: context.Background(), route: route, id: "task-1"}
	q := newServerRequestQueue[rootsRequestItem]()
	claim := &serverRequestClaim{}
	if err := sendServerRequest(ctx, q, rootsRequestItem{requestID: 7, claim: claim}, "list roots"); err != nil {
		t.Fatal(err)
	}
	if !claim.send() { // a tasks/result stream claims it
		t.Fatal("the parked request could not be claimed")
	}
	if _, ok := q.pop(); !ok || claim.send() { // the GET stream drops it: sent
		t.Fatal("the request was not queued for the GET stream, or was claimed twice")
	}
	stream := &requestScopedSSE{done: make(chan struct{}), sessions: &sync.Map{}}
	defer route.wait(ctx, stream)()
	if n := len(stream.channel()); n != 0 {
		t.Fatalf("a tasks/result was offered %d requests another stream holds", n)
	}
	if !claim.unsend() { // the claiming stream's write failed
		t.Fatal("the claim was not given back")
	}
	claim.offerAgain(ctx)
	claim.offerAgain(ctx) // twice: queued once
	if n := q.len(); n != 1 {
		t.Fatalf("the GET queue holds the request given back %d times; want once", n)
	}
	select {
	case sr := <-stream.channel():
		if sr.claim != claim || !sr.claim.send() {
			t.Fatal("the tasks/result stream cannot send the request given back")
		}
	default:
		t.Fatal("the request given back was not offered to the waiting tasks/result")
	}
	claim.written()
	route.mu.Lock()
	defer route.mu.Unlock()
	route.parkLocked(mcp.JSONRPCRequest{}, &serverRequestClaim{})
	if len(route.parked) != 1 {
		t.Fatalf("%d requests parked; want the written one dropped", len(route.parked))
	}
}

// startTask calls tool as a 2025-11-25 task (a tools/call with id) in the
// session of header, and returns the task's id.
func startTask(t *testing.T, url string, header http.Header, id int, tool string) string {
	t.Helper()
	resp := postMCP(t, url, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"task":{"ttl":60000}}}`, id, tool), header)
	var created struct {
		Result struct {
			Task struct {
				TaskID string `json:"taskId"`
			} `json:"task"`
		} `json:"result"`
	}
	if body := answerOf(t, resp); json.Unmarshal(body, &created) != nil || created.Result.Task.TaskID == "" {
		t.Fatalf("the task call answered %s", body)
	}
	return created.Result.Task.TaskID
}

// waitingResults is how many tasks/result requests wait for entry's task
// on a stream of theirs.
func waitingResults(entry *taskEntry) int {
	entry.route.mu.Lock()
	defer entry.route.mu.Unlock()
	return len(entry.route.streams)
}

// answerOf is the JSON-RPC answer of a POST, as JSON or as the first data
// line of an event stream that is no notification.
func answerOf(t *testing.T, resp *http.Response) []byte {
	t.Helper()
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.SplitSeq(string(body), "\n") {
		var m struct {
			Method string `json:"method"`
		}
		// The answer, not a notification of the session's that the
		// stream carried before it.
		if data, ok := strings.CutPrefix(line, "data: "); ok && json.Unmarshal([]byte(data), &m) == nil && m.Method == "" {
			return []byte(data)
		}
	}
	return body
}

// TestToolgateTaskOutlivesItsRequest (item 81): a 2025-11-25 task's
// handler runs on after the POST that created it is answered, with its
// context live, until it returns; tasks/cancel still cancels it. v1.2.1
// ran it under the POST's context, which ended with the answer.
func TestToolgateTaskOutlivesItsRequest(t *testing.T) {
	s := NewMCPServer("t", "1", WithToolCapabilities(false), WithTaskCapabilities(true, true, true))
	proceed := make(chan struct{})
	seen := make(chan error, 2)
	s.AddTool(mcp.NewTool("wait", mcp.WithTaskSupport(mcp.TaskSupportOptional)), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		select {
		case <-proceed:
			seen <- ctx.Err()
			return mcp.NewToolResultText("done"), nil
		case <-ctx.Done():
			seen <- ctx.Err()
			return nil, ctx.Err()
		}
	})
	h := NewStreamableHTTPServer(s)
	ts := httptest.NewServer(h)
	defer ts.Close()
	sessionID := initializeSession(t, h)
	header := http.Header{"Mcp-Session-Id": {sessionID}, "Mcp-Protocol-Version": {"2025-11-25"}}
	status := func(taskID string) string {
		t.Helper()
		body := answerOf(t, postMCP(t, ts.URL, `{"jsonrpc":"2.0","id":9,"method":"tasks/get","params":{"taskId":"`+taskID+`"}}`, header))
		var got struct {
			Result struct {
				Status string `json:"status"`
			} `json:"result"`
		}
		if json.Unmarshal(body, &got) != nil || got.Result.Status == "" {
			return "(tasks/get answered " + string(body) + ")"
		}
		return got.Result.Status
	}
	waitStatus := func(taskID, want string) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); status(taskID) != want; time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("task %s: status %q, want %q", taskID, status(taskID), want)
			}
		}
	}

	// The POST is answered (answerOf read it to its end): the task works on.
	first := startTask(t, ts.URL, header, 1, "wait")
	if got := status(first); got != string(mcp.TaskStatusWorking) {
		t.Fatalf("after its POST was answered the task is %q; want working", got)
	}
	proceed <- struct{}{}
	if err := <-seen; err != nil {
		t.Fatalf("the task's context ended with its POST: %v", err)
	}
	waitStatus(first, string(mcp.TaskStatusCompleted))

	// tasks/cancel still ends it.
	second := startTask(t, ts.URL, header, 2, "wait")
	answerOf(t, postMCP(t, ts.URL, `{"jsonrpc":"2.0","id":3,"method":"tasks/cancel","params":{"taskId":"`+second+`"}}`, header))
	select {
	case err := <-seen:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("tasks/cancel: the task's context ended with %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("tasks/cancel did not cancel the task's context")
	}
	waitStatus(second, string(mcp.TaskStatusCancelled))
}

// TestToolgateTaskCancelledBeforeItRuns (item 86): tasks/cancel that
// comes before the task's goroutine has run still ends the context its
// handler gets, for a task tool and for a tool run as a task. v1.2.1's
// executors registered the task's cancel function on that goroutine, so a
// cancel in between found none, marked the task cancelled, and the
// handler then ran on a context nothing would end (CI met it once, in
// TestToolgateTaskOutlivesItsRequest). With one processor the task's
// goroutine runs only when this one blocks, which puts the cancel in that
// window every time.
func TestToolgateTaskCancelledBeforeItRuns(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	for _, asTaskTool := range []bool{false, true} {
		s := NewMCPServer("t", "1", WithToolCapabilities(false), WithTaskCapabilities(true, true, true))
		seen := make(chan error, 1)
		wait := func(ctx context.Context) error {
			select {
			case <-ctx.Done():
				seen <- ctx.Err()
			case <-time.After(10 * time.Second):
				seen <- nil
			}
			return ctx.Err()
		}
		tool := mcp.NewTool("wait", mcp.WithTaskSupport(mcp.TaskSupportOptional))
		if asTaskTool {
			s.AddTaskTool(tool, func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CreateTaskResult, error) {
				return nil, wait(ctx)
			})
		} else {
			s.AddTool(tool, func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return nil, wait(ctx)
			})
		}
		req := mcp.CallToolRequest{}
		req.Params.Name = "wait"
		req.Params.Task = &mcp.TaskParams{}
		created, rerr := s.handleTaskAugmentedToolCall(context.Background(), 1, req)
		if rerr != nil {
			t.Fatalf("task tool %v: creating the task: %v", asTaskTool, rerr.err)
		}
		if err := s.cancelTask(context.Background(), created.Task.TaskId); err != nil {
			t.Fatalf("task tool %v: tasks/cancel: %v", asTaskTool, err)
		}
		if err := <-seen; !errors.Is(err, context.Canceled) {
			t.Fatalf("task tool %v: cancelled before it ran, the handler's context ended with %v; want %v", asTaskTool, err, context.Canceled)
		}
	}
}

// TestToolgateTaskNotificationsNameTheirTask (item 82): a notification
// sent from a 2025-11-25 task's context (a progress report, a log message)
// carries the task's related-task beside its own _meta, which is copied,
// not changed; one sent from another context carries none.
func TestToolgateTaskNotificationsNameTheirTask(t *testing.T) {
	s := NewMCPServer("t", "1", WithLogging())
	session := NewInProcessSession("s", nil)
	session.Initialize()
	ctx := s.WithContext(context.Background(), session)
	task, cancel := context.WithCancel(taskContext{ctx, &taskRoute{}, "t1"}) // derived, as a handler's is
	defer cancel()
	own := map[string]any{"example.com/k": "v"}
	sent := func(ctx context.Context) []string {
		t.Helper()
		if err := s.SendNotificationToClient(ctx, string(mcp.MethodNotificationProgress), map[string]any{"progressToken": "p", "progress": 1}); err != nil {
			t.Fatal(err)
		}
		log := mcp.NewLoggingMessageNotification(mcp.LoggingLevelError, "l", "hello")
		if err := s.SendLogMessageToClient(ctx, log); err != nil {
			t.Fatal(err)
		}
		var got []string
		for range 2 {
			n := <-session.ClientNotifications()
			b, _ := json.Marshal(n.Params.Meta)
			got = append(got, n.Method+" "+string(b))
		}
		return got
	}
	want := `{"io.modelcontextprotocol/related-task":{"taskId":"t1"}}`
	if got := sent(task); got[0] != "notifications/progress "+want || got[1] != "notifications/message "+want {
		t.Errorf("a task's notifications: %q; want each with %s", got, want)
	}
	if got := sent(ctx); got[0] != "notifications/progress null" || got[1] != "notifications/message null" {
		t.Errorf("notifications of no task: %q; want no _meta", got)
	}
	n := mcp.JSONRPCNotification{Notification: mcp.Notification{Method: "m", Params: mcp.NotificationParams{Meta: own}}}
	if got, _ := json.Marshal(withTaskMeta(task, n).Params.Meta); string(got) != `{"example.com/k":"v","io.modelcontextprotocol/related-task":{"taskId":"t1"}}` || len(own) != 1 {
		t.Errorf("with the notification's own _meta: sent %s, its own map now %v", got, own)
	}
}
