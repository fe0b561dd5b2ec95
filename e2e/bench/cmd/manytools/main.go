// Command manytools is the scale benchmark's upstream: a stdio MCP server
// (mcp-go) with -n tools whose input schemas are small but realistic
// (2-5 properties: strings with patterns and lengths, bounded integers,
// enums, arrays, nested objects, required lists), cycling through eight
// shapes such as search_issues_007 or create_event_042. Every tool is
// annotated read-only and closed-world, so toolgate allows it by default.
// A call returns its arguments as text.
//
//	manytools -n 100 -name inventory
//
// It serves on stdin/stdout until stdin ends or SIGINT/SIGTERM; with
// -addr it serves streamable HTTP (stateful, with /healthz) instead, which
// the scale benchmark uses as its tools/list baseline: a bare mcp-go
// server listing as many tools as toolgate does.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// shape is a tool template: a verb-noun name, a description and an input
// schema.
type shape struct {
	name, desc, schema string
}

var shapes = []shape{
	{"search_issues", "Search the issue tracker for issues matching a query. Returns at most limit issues, newest first, with their number, title and state.",
		`{"type":"object","properties":{"query":{"type":"string","minLength":1,"maxLength":256,"description":"Free-text query; supports label:NAME and author:LOGIN"},"state":{"type":"string","enum":["open","closed","all"],"default":"open","description":"Issue state filter"},"limit":{"type":"integer","minimum":1,"maximum":100,"default":20,"description":"Maximum number of issues to return"}},"required":["query"],"additionalProperties":false}`},
	{"get_file", "Read one file of the repository at a given revision. Large files are truncated to max_bytes.",
		`{"type":"object","properties":{"path":{"type":"string","pattern":"^[^/].*$","description":"Path relative to the repository root"},"ref":{"type":"string","description":"Branch, tag or commit; default the default branch"},"max_bytes":{"type":"integer","minimum":1,"maximum":1048576,"description":"Truncate the content to this many bytes"}},"required":["path"]}`},
	{"create_event", "Create a calendar event. Times are RFC 3339; attendees are e-mail addresses and get an invitation.",
		`{"type":"object","properties":{"title":{"type":"string","minLength":1,"maxLength":200},"start":{"type":"string","format":"date-time","description":"Start time (RFC 3339)"},"end":{"type":"string","format":"date-time","description":"End time (RFC 3339)"},"attendees":{"type":"array","items":{"type":"string","format":"email"},"maxItems":50,"uniqueItems":true},"reminder_minutes":{"type":"integer","minimum":0,"maximum":10080}},"required":["title","start","end"],"additionalProperties":false}`},
	{"query_metrics", "Run a metrics query over a time range and return the series, downsampled to step.",
		`{"type":"object","properties":{"expr":{"type":"string","minLength":1,"description":"Query expression"},"range":{"type":"object","properties":{"from":{"type":"string"},"to":{"type":"string"}},"required":["from"],"description":"Time range; to defaults to now"},"step":{"type":"string","pattern":"^[0-9]+(s|m|h)$","default":"1m"}},"required":["expr","range"]}`},
	{"list_orders", "List a customer's orders, optionally filtered by status, with pagination.",
		`{"type":"object","properties":{"customer_id":{"type":"string","pattern":"^cus_[A-Za-z0-9]{8,24}$"},"status":{"type":"array","items":{"type":"string","enum":["pending","paid","shipped","refunded","cancelled"]}},"cursor":{"type":"string","description":"Opaque cursor from a previous page"},"page_size":{"type":"integer","minimum":1,"maximum":200,"default":50}},"required":["customer_id"]}`},
	{"translate_text", "Translate text between two languages. Detects the source language when from is omitted.",
		`{"type":"object","properties":{"text":{"type":"string","maxLength":5000},"from":{"type":"string","pattern":"^[a-z]{2}(-[A-Z]{2})?$"},"to":{"type":"string","pattern":"^[a-z]{2}(-[A-Z]{2})?$"},"formal":{"type":"boolean","default":false}},"required":["text","to"],"additionalProperties":false}`},
	{"lookup_user", "Look up a user by id or e-mail and return profile fields (name, team, timezone).",
		`{"type":"object","properties":{"id":{"type":"string"},"email":{"type":"string","format":"email"},"fields":{"type":"array","items":{"type":"string","enum":["name","team","timezone","manager","title"]},"minItems":1}},"oneOf":[{"required":["id"]},{"required":["email"]}]}`},
	{"get_weather", "Current conditions and a short forecast for a place, in metric or imperial units.",
		`{"type":"object","properties":{"location":{"type":"string","minLength":2,"description":"City name or lat,lon"},"units":{"type":"string","enum":["metric","imperial"],"default":"metric"},"days":{"type":"integer","minimum":0,"maximum":7,"default":1}},"required":["location"]}`},
}

func main() {
	n := flag.Int("n", 100, "number of tools (1-10000)")
	name := flag.String("name", "manytools", "server name (serverInfo)")
	addr := flag.String("addr", "", "serve streamable HTTP on this loopback address instead of stdio")
	flag.Parse()
	if *n < 1 || *n > 10000 {
		log.Fatal("manytools: -n must be 1-10000")
	}
	s := server.NewMCPServer(*name, "1.0.0", server.WithToolCapabilities(true))
	handler := func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		b, _ := json.Marshal(req.GetArguments())
		return mcp.NewToolResultText(req.Params.Name + " " + string(b)), nil
	}
	tools := make([]server.ServerTool, 0, *n)
	for i := range *n {
		sh := shapes[i%len(shapes)]
		t := mcp.NewToolWithRawSchema(fmt.Sprintf("%s_%03d", sh.name, i), sh.desc, json.RawMessage(sh.schema))
		t.Annotations = mcp.ToolAnnotation{
			Title:         fmt.Sprintf("%s #%d", sh.name, i),
			ReadOnlyHint:  mcp.ToBoolPtr(true),
			OpenWorldHint: mcp.ToBoolPtr(false),
		}
		tools = append(tools, server.ServerTool{Tool: t, Handler: handler})
	}
	s.AddTools(tools...)
	if *addr != "" {
		serveHTTP(s, *addr)
		return
	}
	if err := server.ServeStdio(s); err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, io.EOF) {
		log.Fatal(err)
	}
}

func serveHTTP(s *server.MCPServer, addr string) {
	streamable := server.NewStreamableHTTPServer(s, server.WithStateful(true), server.WithSessionIdleTTL(30*time.Minute))
	mux := http.NewServeMux()
	mux.Handle("/mcp", streamable)
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintln(w, `{"status":"ok"}`)
	})
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		log.Fatal(err)
	}
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = streamable.Shutdown(sctx)
		_ = hs.Shutdown(sctx)
	}()
	if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		log.Fatal(err)
	}
}
