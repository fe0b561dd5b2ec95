package server

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
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
				// The task outlives the POST that created it, whose end
				// cancels ctx (toolgate's handlers detach as this one does).
				ctx = context.WithoutCancel(ctx)
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

			resp := postMCP(t, ts.URL, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"ask","task":{"ttl":60000}}}`, header)
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
			taskID := created.Result.Task.TaskID
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

// waitingResults is how many tasks/result requests wait for entry's task
// on a stream of theirs.
func waitingResults(entry *taskEntry) int {
	entry.route.mu.Lock()
	defer entry.route.mu.Unlock()
	return len(entry.route.streams)
}

// answerOf is the JSON-RPC message of a POST's answer, as JSON or as the
// first data line of an event stream.
func answerOf(t *testing.T, resp *http.Response) []byte {
	t.Helper()
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.SplitSeq(string(body), "\n") {
		if data, ok := strings.CutPrefix(line, "data: "); ok {
			return []byte(data)
		}
	}
	return body
}
