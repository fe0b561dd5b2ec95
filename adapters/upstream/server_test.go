package upstream

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"github.com/toolgate/toolgate/gateway"
)

// The test binary doubles as a stdio upstream: run with
// TOOLGATE_UPSTREAM_TEST_SERVER=stdio it serves the test server on
// stdin/stdout instead of running tests (as go-sdk's mcp/cmd_test.go does).
const envServerMode = "TOOLGATE_UPSTREAM_TEST_SERVER"

func TestMain(m *testing.M) {
	if mode := os.Getenv(envServerMode); mode != "" {
		runChildServer(mode)
		return
	}
	os.Exit(m.Run())
}

func runChildServer(mode string) {
	fmt.Fprintf(os.Stderr, "test upstream starting (mode %s)\n", mode)
	if marker := os.Getenv(envTermMarker); marker != "" {
		// Shut down cleanly on SIGTERM, and say so in the marker file.
		term := make(chan os.Signal, 1)
		signal.Notify(term, syscall.SIGTERM)
		go func() {
			<-term
			_ = os.WriteFile(marker, []byte("SIGTERM\n"), 0o600)
			os.Exit(0)
		}()
	}
	if banner := os.Getenv(envStdoutBanner); banner != "" {
		fmt.Println(banner) // what a server that logs to stdout does
	}
	if mode == "serial" {
		runSerialServer()
		return
	}
	srv := server.NewStdioServer(newTestMCPServer(&serverState{modernOnly: mode == "stdio-2026"}))
	srv.SetErrorLogger(log.New(os.Stderr, "", 0))
	err := srv.Listen(context.Background(), os.Stdin, os.Stdout)
	if err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintln(os.Stderr, "listen:", err)
	}
	if marker := os.Getenv(envEOFMarker); marker != "" {
		// Its input ended: shut down cleanly, and say so.
		_ = os.WriteFile(marker, []byte("EOF\n"), 0o600)
	}
	if os.Getenv(envIgnoreEOF) != "" {
		time.Sleep(time.Hour) // a server that does not end with its input
	}
	os.Exit(0)
}

// envTermMarker names a file the child server writes "SIGTERM" to when it
// gets that signal, before it exits.
const envTermMarker = "TG_TEST_TERM_MARKER"

// envStdoutBanner is text the child server prints on its stdout before
// it serves, as a server that logs there does.
const envStdoutBanner = "TG_TEST_STDOUT_BANNER"

// envEOFMarker names a file the child server writes "EOF" to when its
// input ends, before it exits (unless envIgnoreEOF is set: then it runs
// on, as a server that ignores the end of its input does).
const (
	envEOFMarker = "TG_TEST_EOF_MARKER"
	envIgnoreEOF = "TG_TEST_IGNORE_EOF"
)

// runSerialServer is a minimal 2025-11-25 server that handles one message
// at a time, as many simple servers do (a synchronous tool blocks their
// loop), and ignores methods it does not know (server/discover among
// them), as older SDKs do. Its tools: echo, and slow, which takes ms
// milliseconds.
func runSerialServer() {
	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	reply := func(id json.RawMessage, result string) {
		fmt.Fprintf(os.Stdout, `{"jsonrpc":"2.0","id":%s,"result":%s}`+"\n", id, result)
	}
	for sc.Scan() {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Name      string `json:"name"`
				Arguments struct {
					MS int `json:"ms"`
				} `json:"arguments"`
			} `json:"params"`
		}
		if json.Unmarshal(sc.Bytes(), &m) != nil || m.ID == nil {
			continue
		}
		fmt.Fprintf(os.Stderr, "serial: %s\n", m.Method)
		switch m.Method {
		case "initialize":
			reply(m.ID, `{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"serial","version":"1"}}`)
		case "tools/list":
			reply(m.ID, `{"tools":[{"name":"echo","inputSchema":{"type":"object"}},{"name":"slow","inputSchema":{"type":"object"}},{"name":"abandon","inputSchema":{"type":"object"}}]}`)
		case "ping":
			reply(m.ID, `{}`)
		case "tools/call":
			if m.Params.Name != "abandon" {
				time.Sleep(time.Duration(m.Params.Arguments.MS) * time.Millisecond)
				reply(m.ID, `{"content":[{"type":"text","text":"`+m.Params.Name+` done"}]}`)
				continue
			}
			// Asks the client, gives up on the question at once (as an
			// SDK whose request timed out does), and answers ms later.
			fmt.Fprintln(os.Stdout, `{"jsonrpc":"2.0","id":"q1","method":"elicitation/create","params":{"message":"name?","requestedSchema":{"type":"object"}}}`)
			fmt.Fprintln(os.Stdout, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"q1","reason":"timed out"}}`)
			time.Sleep(time.Duration(m.Params.Arguments.MS) * time.Millisecond)
			reply(m.ID, `{"content":[{"type":"text","text":"abandon done"}]}`)
		}
	}
	os.Exit(0)
}

// serialConfig is an upstream running runSerialServer.
func serialConfig(t *testing.T, name string) Config {
	return Config{Name: name, Command: testBinary(t), Env: map[string]string{envServerMode: "serial"}}
}

// serverState is what an in-process test upstream lets a test observe.
type serverState struct {
	cancelled atomic.Int32 // handlers of "block" whose ctx was cancelled
	inGate    atomic.Int32 // handlers inside "gate"
	maxInGate atomic.Int32
	gate      chan struct{} // "gate" handlers wait for a value (or ctx)
	added     atomic.Int32
	subs      atomic.Int32 // resources/subscribe minus resources/unsubscribe
	srv       *server.MCPServer
	// modernOnly makes a server that speaks only 2026-07-28: it refuses
	// initialize, and has a tool that asks in rounds (ask_name).
	modernOnly bool
	// refuse answers requests of these methods with a JSON-RPC error.
	refuse map[string]bool
}

// namesCompleter completes any prompt argument from a fixed list of names.
type namesCompleter struct{}

func (namesCompleter) CompletePromptArgument(_ context.Context, prompt string, arg mcp.CompleteArgument, _ mcp.CompleteContext) (*mcp.Completion, error) {
	var out []string
	for _, n := range []string{"alice", "albert", "bob"} {
		if strings.HasPrefix(n, arg.Value) {
			out = append(out, prompt+"/"+arg.Name+"/"+n)
		}
	}
	return &mcp.Completion{Values: out, Total: len(out)}, nil
}

// The raw schema of "echo": top-level keywords mcp-go's typed client
// would drop (description, anyOf, additionalProperties, $comment).
const echoSchema = `{"type":"object","description":"top-level description kept","$comment":"raw","properties":{"text":{"type":"string"},"n":{"type":"integer"}},"anyOf":[{"required":["text"]},{"required":["n"]}],"additionalProperties":false}`

const richOutputSchema = `{"type":"object","properties":{"temp":{"type":"number"},"city":{"type":"string"}},"required":["temp"]}`

const longToolName = "a_tool_with_a_really_long_name_that_goes_on_and_on_past_the_limit_of_64"

var tinyPNG = []byte("\x89PNG\r\n\x1a\nfake")

func newTestMCPServer(st *serverState) *server.MCPServer {
	hooks := &server.Hooks{}
	hooks.AddAfterSubscribe(func(context.Context, any, *mcp.SubscribeRequest, *mcp.EmptyResult) { st.subs.Add(1) })
	hooks.AddAfterUnsubscribe(func(context.Context, any, *mcp.UnsubscribeRequest, *mcp.EmptyResult) { st.subs.Add(-1) })
	if len(st.refuse) > 0 {
		hooks.AddOnRequestInitialization(func(_ context.Context, _ any, message any) error {
			var head struct {
				Method string `json:"method"`
			}
			if raw, ok := message.(json.RawMessage); ok && json.Unmarshal(raw, &head) == nil && st.refuse[head.Method] {
				return errors.New("not today: " + head.Method)
			}
			return nil
		})
	}
	if st.modernOnly {
		hooks.AddOnRequestInitialization(func(_ context.Context, _ any, message any) error {
			var head struct {
				Method string `json:"method"`
			}
			if raw, ok := message.(json.RawMessage); ok && json.Unmarshal(raw, &head) == nil && head.Method == string(mcp.MethodInitialize) {
				return errors.New("this server speaks only protocol 2026-07-28: use server/discover")
			}
			return nil
		})
	}
	s := server.NewMCPServer("testup", "1.2.3",
		server.WithToolCapabilities(true),
		server.WithLogging(),
		server.WithPromptCapabilities(true),
		server.WithResourceCapabilities(true, true),
		server.WithElicitation(),
		server.WithCompletions(),
		server.WithPromptCompletionProvider(namesCompleter{}),
		server.WithHooks(hooks),
		server.WithPaginationLimit(3),
	)
	st.srv = s
	text := func(s string) *mcp.CallToolResult { return mcp.NewToolResultText(s) }
	plain := func(name, desc string) mcp.Tool {
		return mcp.NewToolWithRawSchema(name, desc, json.RawMessage(`{"type":"object"}`))
	}

	echo := mcp.NewToolWithRawSchema("echo", "Echoes its raw arguments", json.RawMessage(echoSchema))
	echo.Title = "Echo"
	echo.Annotations = mcp.ToolAnnotation{ReadOnlyHint: mcp.ToBoolPtr(true), DestructiveHint: mcp.ToBoolPtr(false), IdempotentHint: mcp.ToBoolPtr(true), OpenWorldHint: mcp.ToBoolPtr(false)}
	echo.Meta = &mcp.Meta{AdditionalFields: map[string]any{"vendor/x": map[string]any{"a": 1}}}
	s.AddTool(echo, func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		raw, _ := req.GetRawArguments().(json.RawMessage)
		return text(string(raw)), nil
	})

	rich := plain("rich", "Returns every kind of content")
	rich.RawOutputSchema = json.RawMessage(richOutputSchema)
	rich.Annotations = mcp.ToolAnnotation{Title: "Rich from annotations"}
	s.AddTool(rich, func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		res := &mcp.CallToolResult{
			Content: []mcp.Content{
				mcp.NewTextContent("hello"),
				mcp.NewImageContent(base64.StdEncoding.EncodeToString(tinyPNG), "image/png"),
				mcp.NewAudioContent(base64.StdEncoding.EncodeToString([]byte("RIFF")), "audio/wav"),
				mcp.NewResourceLink("test://static", "static", "a link", "text/plain"),
				mcp.NewEmbeddedResource(mcp.TextResourceContents{URI: "test://embedded", MIMEType: "text/plain", Text: "embedded"}),
			},
			RawStructuredContent: json.RawMessage(`{"temp":21.5,"city":"Oslo"}`),
		}
		res.Meta = &mcp.Meta{AdditionalFields: map[string]any{
			"vendor/trace": "abc",
			serverInfoMeta: map[string]any{"name": "testup"},
		}}
		return res, nil
	})

	s.AddTool(plain("progress", "Sends progress notifications"), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if req.Params.Meta == nil || req.Params.Meta.ProgressToken == nil {
			return text("token=absent"), nil
		}
		for i := 1; i <= 3; i++ {
			_ = server.ServerFromContext(ctx).SendNotificationToClient(ctx, string(mcp.MethodNotificationProgress), map[string]any{
				"progressToken": req.Params.Meta.ProgressToken, "progress": i, "total": 3, "message": "step " + strconv.Itoa(i),
			})
		}
		// mcp-go's server queues notifications and writes the response
		// directly, so without a pause they can arrive after it.
		time.Sleep(100 * time.Millisecond)
		return text(fmt.Sprintf("token=%v", req.Params.Meta.ProgressToken)), nil
	})

	s.AddTool(plain("block", "Blocks until cancelled"), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		_ = server.ServerFromContext(ctx).SendLogMessageToClient(ctx, mcp.NewLoggingMessageNotification(mcp.LoggingLevelInfo, "testlogger", "block entered"))
		select {
		case <-ctx.Done():
			st.cancelled.Add(1)
			return text("cancelled"), nil
		case <-time.After(60 * time.Second):
			return text("not cancelled"), nil
		}
	})

	s.AddTool(plain("cancelled_count", "How many block calls were cancelled"), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return text(strconv.Itoa(int(st.cancelled.Load()))), nil
	})

	s.AddTool(plain("gate", "Waits at a gate"), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		n := st.inGate.Add(1)
		defer st.inGate.Add(-1)
		for {
			m := st.maxInGate.Load()
			if n <= m || st.maxInGate.CompareAndSwap(m, n) {
				break
			}
		}
		select {
		case <-st.gate:
			return text("passed"), nil
		case <-ctx.Done():
			return text("cancelled"), nil
		}
	})

	if st.modernOnly {
		s.AddTool(plain("ask_name", "Asks the caller's name in a round, then greets it"), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if r, ok := req.Params.InputResponses["name"]; ok && req.Params.RequestState == "asked" {
				if err := r.DecodeFor(mcp.MethodElicitationCreate); err == nil && r.Elicitation != nil {
					return text(fmt.Sprintf("hello %v", r.Elicitation.Content)), nil
				}
			}
			res := &mcp.CallToolResult{}
			res.ResultType = mcp.ResultTypeInputRequired
			res.RequestState = "asked"
			res.InputRequests = mcp.InputRequests{"name": {Method: mcp.MethodElicitationCreate, Elicitation: &mcp.ElicitationParams{
				Message: "Your name?", RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}},
			}}}
			return res, nil
		})
	}
	if st.modernOnly {
		// ask_roots asks the caller's roots in a round whatever the
		// caller declared (as an upstream that ignores the envelope
		// would), and says which it got.
		s.AddTool(plain("ask_roots", "Asks the caller's roots in a round, then says them"), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if got, ok := rootsAnswer(req.Params.InputResponses, req.Params.RequestState); ok {
				return text("got roots: " + got), nil
			}
			res := &mcp.CallToolResult{}
			res.ResultType = mcp.ResultTypeInputRequired
			res.RequestState = "roots asked"
			res.InputRequests = mcp.InputRequests{"roots": mcp.NewRootsInputRequest()}
			return res, nil
		})
		// client_caps says the client capabilities its request carried.
		s.AddTool(plain("client_caps", "Says the client capabilities of the request"), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var caps *mcp.ClientCapabilities
			if pi := server.RequestProtocolInfoFromContext(ctx); pi != nil {
				caps = pi.ClientCapabilities
			}
			b, _ := json.Marshal(caps)
			return text(string(b)), nil
		})
		s.AddPrompt(mcp.NewPrompt("ask_roots", mcp.WithPromptDescription("Asks the caller's roots in a round")),
			func(ctx context.Context, req mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
				if got, ok := rootsAnswer(req.Params.InputResponses, req.Params.RequestState); ok {
					return mcp.NewGetPromptResult("roots", []mcp.PromptMessage{mcp.NewPromptMessage(mcp.RoleUser, mcp.NewTextContent("got roots: "+got))}), nil
				}
				res := &mcp.GetPromptResult{Messages: []mcp.PromptMessage{}}
				res.ResultType = mcp.ResultTypeInputRequired
				res.RequestState = "roots asked"
				res.InputRequests = mcp.InputRequests{"roots": mcp.NewRootsInputRequest()}
				return res, nil
			})
	}
	s.AddTool(plain("add_tool", "Adds tools at run time, one at a time (n, default 1)"), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var names []string
		for i := 0; i < max(1, req.GetInt("n", 1)); i++ {
			name := fmt.Sprintf("added_%d", st.added.Add(1))
			// Each AddTool sends its own tools/list_changed.
			s.AddTool(plain(name, "added at run time"), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return text("I was added"), nil
			})
			names = append(names, name)
		}
		return text(strings.Join(names, ",")), nil
	})
	s.AddTool(plain("announce_tools", "Sends tools/list_changed, changing nothing"), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		s.SendNotificationToAllClients(string(mcp.MethodNotificationToolsListChanged), nil)
		return text("announced"), nil
	})
	s.AddTool(plain("add_prompt", "Adds a prompt at run time"), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		s.AddPrompt(mcp.NewPrompt("late", mcp.WithPromptDescription("added at run time")),
			func(context.Context, mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
				return mcp.NewGetPromptResult("late", []mcp.PromptMessage{mcp.NewPromptMessage(mcp.RoleUser, mcp.NewTextContent("late"))}), nil
			})
		return text("late"), nil
	})

	s.AddTool(plain("fail_rpc", "Fails with a JSON-RPC error"), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return nil, errors.New("boom from upstream")
	})
	s.AddTool(plain("tool_error", "Fails with isError"), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultError("bad input, says upstream"), nil
	})
	s.AddTool(plain("log", "Sends a log message"), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		err := server.ServerFromContext(ctx).SendLogMessageToClient(ctx, mcp.NewLoggingMessageNotification(mcp.LoggingLevelWarning, "testlogger", "hello from upstream"))
		return text(fmt.Sprint(err)), nil
	})
	s.AddTool(plain("log_wait", "Sends a log message, then waits a little"), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		err := server.ServerFromContext(ctx).SendLogMessageToClient(ctx, mcp.NewLoggingMessageNotification(mcp.LoggingLevelWarning, "testlogger", "hello from upstream"))
		time.Sleep(100 * time.Millisecond) // mcp-go's HTTP server may write it on the GET stream
		return text(fmt.Sprint(err)), nil
	})
	s.AddTool(plain("sample", "Asks the client for a sampling"), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if cs, ok := server.ClientSessionFromContext(ctx).(server.SessionWithClientInfo); ok && cs.GetClientCapabilities().Sampling == nil {
			return text("no sampling capability"), nil
		}
		//lint:ignore SA1019 the fake upstream speaks the 2025 revisions, where sampling is current
		res, err := server.ServerFromContext(ctx).RequestSampling(ctx, mcp.CreateMessageRequest{CreateMessageParams: mcp.CreateMessageParams{
			Messages:  []mcp.SamplingMessage{{Role: mcp.RoleUser, Content: mcp.NewTextContent("capital of France?")}},
			MaxTokens: 20,
			Metadata:  map[string]any{"k": "v"},
		}})
		if err != nil {
			return text("sampling failed: " + err.Error()), nil
		}
		tc, _ := res.Content.(mcp.TextContent)
		return text(fmt.Sprintf("model=%s text=%s", res.Model, tc.Text)), nil
	})
	s.AddTool(plain("elicit", "Asks the client for a name"), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if cs, ok := server.ClientSessionFromContext(ctx).(server.SessionWithClientInfo); ok && cs.GetClientCapabilities().Elicitation == nil {
			return text("no elicitation capability"), nil
		}
		res, err := server.ServerFromContext(ctx).RequestElicitation(ctx, mcp.ElicitationRequest{Params: mcp.ElicitationParams{
			Message: "Who are you?",
			// Its fields out of alphabetical order: a relay keeps the order
			// the server wrote them in.
			RequestedSchema: json.RawMessage(`{"type":"object","properties":{"zeta":{"type":"string"},"name":{"type":"string","default":"x"}},"required":["name"]}`),
		}})
		if err != nil {
			return text("elicitation failed: " + err.Error()), nil
		}
		b, _ := json.Marshal(res.Content)
		return text(fmt.Sprintf("action=%s content=%s", res.Action, b)), nil
	})
	s.AddTool(plain("url_flow", "Asks the client to open a URL, then says the flow is complete"), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		res, err := server.ServerFromContext(ctx).RequestElicitation(ctx, mcp.ElicitationRequest{Params: mcp.ElicitationParams{
			Mode: mcp.ElicitationModeURL, Message: "Sign in", URL: "https://auth.example/start", ElicitationID: "e-9"}})
		if err != nil {
			return text("elicitation failed: " + err.Error()), nil
		}
		_ = server.ServerFromContext(ctx).SendNotificationToClient(ctx, string(mcp.MethodNotificationElicitationComplete), map[string]any{"elicitationId": "e-9"})
		return text("action=" + string(res.Action)), nil
	})
	s.AddTool(plain("needs_url", "Needs the user to open a URL first (-32042)"), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return nil, mcp.URLElicitationRequiredError{Elicitations: []mcp.ElicitationParams{{
			Mode: mcp.ElicitationModeURL, Message: "Sign in first", URL: "https://auth.example/start", ElicitationID: "e-1"}}}
	})
	s.AddTool(plain("touch", "Says resource uri changed"), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		s.SendNotificationToAllClients(string(mcp.MethodNotificationResourceUpdated), map[string]any{"uri": req.GetString("uri", "")})
		return text("touched"), nil
	})
	s.AddTool(plain("subs", "How many resource subscriptions it holds"), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return text(strconv.Itoa(int(st.subs.Load()))), nil
	})
	s.AddTool(plain("env", "Lists its environment"), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		env := os.Environ()
		sort.Strings(env)
		wd, _ := os.Getwd()
		return text(strings.Join(env, "\n") + "\nPWD=" + wd), nil
	})
	s.AddTool(plain("pid", "Its process ID"), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return text(strconv.Itoa(os.Getpid())), nil
	})
	s.AddTool(mcp.NewToolWithRawSchema("bad_schema", "Its schema does not compile",
		json.RawMessage(`{"type":"object","properties":{"x":{"type":"nonsense"}}}`)),
		func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return text("unreachable"), nil
		})
	// Two names that map to one gateway name, and one too long.
	s.AddTool(plain("weird.name", "maps to weird_name"), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return text("dotted"), nil
	})
	s.AddTool(plain("weird_name", "already weird_name"), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return text("underscored"), nil
	})
	s.AddTool(plain(longToolName, "long"), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return text("long"), nil
	})

	s.AddPrompt(mcp.NewPrompt("greet", mcp.WithPromptDescription("Greets"), mcp.WithArgument("name", mcp.RequiredArgument())),
		func(ctx context.Context, req mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return mcp.NewGetPromptResult("a greeting", []mcp.PromptMessage{
				mcp.NewPromptMessage(mcp.RoleUser, mcp.NewTextContent("Hello "+req.Params.Arguments["name"])),
				mcp.NewPromptMessage(mcp.RoleAssistant, mcp.NewImageContent(base64.StdEncoding.EncodeToString(tinyPNG), "image/png")),
			}), nil
		})
	s.AddResource(mcp.NewResource("test://static", "static", mcp.WithMIMEType("text/plain")),
		func(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
			return []mcp.ResourceContents{mcp.TextResourceContents{URI: "test://static", MIMEType: "text/plain", Text: "static text"}}, nil
		})
	s.AddResourceTemplate(mcp.NewResourceTemplate("test://item/{id}", "item"),
		func(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
			return []mcp.ResourceContents{mcp.BlobResourceContents{URI: req.Params.URI, MIMEType: "application/octet-stream",
				Blob: base64.StdEncoding.EncodeToString([]byte("item " + strings.TrimPrefix(req.Params.URI, "test://item/")))}}, nil
		})
	return s
}

// rootsAnswer reads the answer to ask_roots' round: the root URIs it
// was given.
func rootsAnswer(responses mcp.InputResponses, state string) (string, bool) {
	r, ok := responses["roots"]
	if !ok || state != "roots asked" || r.DecodeFor(mcp.MethodListRoots) != nil || r.Roots == nil {
		return "", false
	}
	var uris []string
	for _, root := range r.Roots.Roots {
		uris = append(uris, root.URI)
	}
	return strings.Join(uris, ","), true
}

// --- helpers ---

// logBuf collects log output for assertions.
type logBuf struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuf) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuf) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func newLogger() (*slog.Logger, *logBuf) {
	b := &logBuf{}
	return slog.New(slog.NewTextHandler(b, &slog.HandlerOptions{Level: slog.LevelDebug})), b
}

func fastTuning() tuning {
	return tuning{
		pingInterval: 300 * time.Millisecond,
		pingTimeout:  5 * time.Second,
		backoffMin:   20 * time.Millisecond,
		backoffMax:   200 * time.Millisecond,
		stableAfter:  time.Hour,
		killGrace:    time.Second,
		debounce:     20 * time.Millisecond,
		lateWindow:   200 * time.Millisecond,
		modernProbe:  5 * time.Second,
	}
}

func testBinary(t *testing.T) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return exe
}

// stdioConfig is an upstream running this test binary as its server.
func stdioConfig(t *testing.T, name string) Config {
	return Config{Name: name, Command: testBinary(t), Env: map[string]string{envServerMode: "stdio"}}
}

// stdio2026Config is stdioConfig for a server that speaks only 2026-07-28.
func stdio2026Config(t *testing.T, name string) Config {
	return Config{Name: name, Command: testBinary(t), Env: map[string]string{envServerMode: "stdio-2026"}}
}

// httpUpstream serves a fresh test server over streamable HTTP on
// 127.0.0.1. seen records the request headers.
func httpUpstream(t *testing.T, st *serverState) (url string, seen func() http.Header) {
	t.Helper()
	h := server.NewStreamableHTTPServer(newTestMCPServer(st), server.WithStateful(true),
		server.WithStreamableHTTPLogger(slog.New(slog.DiscardHandler)))
	var mu sync.Mutex
	var last http.Header
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		last = r.Header.Clone()
		mu.Unlock()
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		ts.CloseClientConnections()
		ts.Close()
	})
	return ts.URL + "/mcp", func() http.Header {
		mu.Lock()
		defer mu.Unlock()
		return last
	}
}

// sseUpstream serves a fresh test server over legacy SSE on 127.0.0.1.
func sseUpstream(t *testing.T, st *serverState) string {
	t.Helper()
	s := server.NewSSEServer(newTestMCPServer(st))
	ts := httptest.NewServer(s)
	server.WithBaseURL(ts.URL)(s)
	t.Cleanup(func() {
		ts.CloseClientConnections()
		ts.Close()
	})
	return ts.URL + "/sse"
}

// start creates and starts an upstream and waits for its first attempt.
func start(t *testing.T, cfg Config, log *slog.Logger, wantReady bool) *Upstream {
	t.Helper()
	return startTuned(t, cfg, log, wantReady, nil)
}

// startTuned is start with the fast test timings changed by tune.
func startTuned(t *testing.T, cfg Config, log *slog.Logger, wantReady bool, tune func(*tuning)) *Upstream {
	t.Helper()
	u, err := New(cfg, &Options{Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	u.tune = fastTuning()
	if tune != nil {
		tune(&u.tune)
	}
	t.Cleanup(func() { u.Close() })
	u.Start(context.Background())
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	err = u.WaitReady(ctx)
	if wantReady && err != nil {
		t.Fatalf("upstream %s not ready: %v (status %+v)", cfg.Name, err, u.Status())
	}
	if !wantReady && err == nil {
		t.Fatalf("upstream %s became ready, want a failure", cfg.Name)
	}
	return u
}

// gw is a gateway over the given toolsets: catalog and pipeline, no policy.
type gw struct {
	cat  *gateway.Catalog
	pipe *gateway.Pipeline
}

func newGW(t *testing.T, toolsets ...gateway.Toolset) *gw {
	t.Helper()
	cat := gateway.NewCatalog(nil)
	for _, ts := range toolsets {
		_ = cat.Add(context.Background(), ts)
	}
	return &gw{cat: cat, pipe: gateway.NewPipeline(&gateway.Options{Tools: cat, CallTimeout: 20 * time.Second})}
}

func (g *gw) call(ctx context.Context, name, args string) *gateway.Result {
	return g.pipe.Call(ctx, &gateway.Call{Name: name, Arguments: json.RawMessage(args)})
}

func mustOK(t *testing.T, res *gateway.Result) string {
	t.Helper()
	if res.IsError {
		t.Fatalf("call failed: kind %s: %s", res.Kind, res.Message)
	}
	return res.OutputText()
}

// eventually polls cond every 10ms until it holds or d passes.
func eventually(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", d, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func toolNames(u *Upstream) []string {
	tools, _ := u.Tools(context.Background())
	var names []string
	for _, t := range tools {
		names = append(names, t.Name)
	}
	return names
}

func findTool(u *Upstream, name string) *gateway.Tool {
	tools, _ := u.Tools(context.Background())
	for _, t := range tools {
		if t.Name == name {
			return t
		}
	}
	return nil
}

// groupMembers lists the live (not zombie) processes of process group
// pgid, from /proc.
func groupMembers(pgid int) []string {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:]) // state ppid pgrp ...
		if len(f) < 3 {
			continue
		}
		if g, _ := strconv.Atoi(f[2]); g == pgid && f[0] != "Z" {
			out = append(out, fmt.Sprintf("%d(%s %s)", pid, f[0], s[strings.IndexByte(s, '(')+1:i]))
		}
	}
	return out
}

// markedProcs lists the live processes whose environment contains
// TG_TEST_MARKER=<marker>.
func markedProcs(marker string) []string {
	ents, _ := os.ReadDir("/proc")
	var out []string
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil || !bytes.Contains(env, []byte("TG_TEST_MARKER="+marker+"\x00")) {
			continue
		}
		stat, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if i := bytes.LastIndexByte(stat, ')'); i > 0 && len(stat) > i+2 && stat[i+2] == 'Z' {
			continue
		}
		cmd, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		out = append(out, e.Name()+":"+strings.ReplaceAll(string(cmd), "\x00", " "))
	}
	return out
}

// procOf is the PID (and process group) of a stdio upstream's child.
func procOf(u *Upstream) int {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.conn == nil || u.conn.proc == nil {
		return 0
	}
	return u.conn.proc.PID()
}

func requireProc(t *testing.T) {
	t.Helper()
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("needs /proc")
	}
}

// killPID sends SIGKILL to one process (not its group).
func killPID(t *testing.T, pid int) {
	t.Helper()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatalf("kill %d: %v", pid, err)
	}
}

// childPID asks a test upstream for its process ID.
func childPID(t *testing.T, g *gw, tool string) int {
	t.Helper()
	out := mustOK(t, g.call(context.Background(), tool, `{}`))
	pid, err := strconv.Atoi(out)
	if err != nil {
		t.Fatalf("pid: %q", out)
	}
	return pid
}

var _ = exec.Command
