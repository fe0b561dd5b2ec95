// Command taskfixture serves, over stdio, the tools the MCP conformance
// suite's tasks scenarios (io.modelcontextprotocol/tasks, SEP-2663) call
// on the server under test, as two upstreams of toolgate
// (e2e/conformance_test.go):
//
//   - taskfixture: greet, slow_compute, failing_job, protocol_error_job,
//     confirm_delete and multi_input, an ordinary MCP server built on the
//     official Go SDK, with no tasks of its own: toolgate's upstream
//     `tasks` setting offers the slow tools as tasks toolgate runs. The
//     tools that ask the client do so in rounds (SEP-2322), as a
//     2026-07-28 server does.
//   - taskfixture -modern: test_tool_with_task, from an upstream that
//     serves the extension and decides itself when a call becomes a task
//     (modern.go): toolgate relays its task.
package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "-modern" {
		serveModern()
		return
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "toolgate-task-fixture", Version: "1.0.0"}, nil)

	type greetIn struct {
		Name string `json:"name"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: "greet", Description: "Greets name."}, func(_ context.Context, _ *mcp.CallToolRequest, in greetIn) (*mcp.CallToolResult, any, error) {
		return text(fmt.Sprintf("Hello, %s!", in.Name)), nil, nil
	})

	type computeIn struct {
		Seconds float64 `json:"seconds"`
		Label   string  `json:"label,omitempty"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: "slow_compute", Description: "Works for seconds, then answers."}, func(ctx context.Context, _ *mcp.CallToolRequest, in computeIn) (*mcp.CallToolResult, any, error) {
		if err := sleep(ctx, time.Duration(in.Seconds*float64(time.Second))); err != nil {
			return nil, nil, err
		}
		return text(fmt.Sprintf("computed %q after %gs", in.Label, in.Seconds)), nil, nil
	})

	mcp.AddTool(s, &mcp.Tool{Name: "failing_job", Description: "Fails after a second (a tool error)."}, func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		if err := sleep(ctx, time.Second); err != nil {
			return nil, nil, err
		}
		res := text("failing_job failed, as it always does")
		res.IsError = true
		return res, nil, nil
	})

	// A raw handler's error is a JSON-RPC error: a protocol-level failure.
	s.AddTool(&mcp.Tool{Name: "protocol_error_job", Description: "Fails with a JSON-RPC error.", InputSchema: &jsonschema.Schema{Type: "object"}}, func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if err := sleep(ctx, 200*time.Millisecond); err != nil {
			return nil, err
		}
		return nil, errors.New("protocol_error_job: internal failure")
	})

	type deleteIn struct {
		Filename string `json:"filename"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: "confirm_delete", Description: "Asks for confirmation, then deletes (pretends to)."}, func(_ context.Context, req *mcp.CallToolRequest, in deleteIn) (*mcp.CallToolResult, any, error) {
		if c := accepted(req, "confirm"); c != nil {
			return text(fmt.Sprintf("deleted %s (confirm=%v)", in.Filename, c["confirm"])), nil, nil
		}
		return ask(map[string]string{"confirm": "Delete " + in.Filename + "?"}), nil, nil
	})

	mcp.AddTool(s, &mcp.Tool{Name: "multi_input", Description: "Asks two questions at once."}, func(_ context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		a, b := accepted(req, "first"), accepted(req, "second")
		if a == nil || b == nil {
			return ask(map[string]string{"first": "First name?", "second": "Second name?"}), nil, nil
		}
		return text(fmt.Sprintf("got %v and %v", a["name"], b["name"])), nil, nil
	})

	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		log.Printf("taskfixture: %v", err)
		os.Exit(1)
	}
}

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// ask ends the round input-required with an elicitation per key.
func ask(questions map[string]string) *mcp.CallToolResult {
	reqs := mcp.InputRequestMap{}
	for k, q := range questions {
		reqs[k] = &mcp.ElicitParams{Message: q, RequestedSchema: &jsonschema.Schema{
			Type:       "object",
			Properties: map[string]*jsonschema.Schema{"name": {Type: "string"}, "confirm": {Type: "boolean"}},
		}}
	}
	return &mcp.CallToolResult{InputRequests: reqs}
}

// accepted is the content of the accepted answer to key, or nil.
func accepted(req *mcp.CallToolRequest, key string) map[string]any {
	r, ok := req.Params.InputResponses[key].(*mcp.ElicitResult)
	if !ok || r == nil || r.Action != "accept" {
		return nil
	}
	if r.Content == nil {
		return map[string]any{}
	}
	return r.Content
}
