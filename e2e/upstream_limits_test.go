package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
)

// bigUpstreamEnv makes the e2e test binary a stdio MCP server whose tool
// "big" answers with a result of the requested size (written as it goes,
// never held), and "small" with a short text.
const bigUpstreamEnv = "TOOLGATE_E2E_BIG_UPSTREAM"

// answerBig writes the JSON-RPC answer to one request to w.
func answerBig(w io.Writer, line []byte) {
	var req struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params struct {
			Name      string `json:"name"`
			Arguments struct {
				Bytes int `json:"bytes"`
			} `json:"arguments"`
		} `json:"params"`
	}
	if json.Unmarshal(line, &req) != nil || len(req.ID) == 0 {
		return // a notification
	}
	switch req.Method {
	case "initialize":
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"big","version":"1"}}}`+"\n", req.ID)
	case "tools/list":
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"tools":[`+
			`{"name":"big","inputSchema":{"type":"object","properties":{"bytes":{"type":"integer"}}},"annotations":{"readOnlyHint":true,"openWorldHint":false}},`+
			`{"name":"small","inputSchema":{"type":"object"},"annotations":{"readOnlyHint":true,"openWorldHint":false}}]}}`+"\n", req.ID)
	case "tools/call":
		if req.Params.Name == "small" {
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"small and fine"}]}}`+"\n", req.ID)
			return
		}
		// The id last, as the TypeScript SDK writes it.
		io.WriteString(w, `{"jsonrpc":"2.0","result":{"content":[{"type":"text","text":"`)
		chunk := strings.Repeat("x", 64<<10)
		for n := req.Params.Arguments.Bytes; n > 0; n -= len(chunk) {
			io.WriteString(w, chunk[:min(n, len(chunk))])
		}
		fmt.Fprintf(w, `"}]},"id":%s}`+"\n", req.ID)
	default:
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{}}`+"\n", req.ID)
	}
}

// serveBigUpstream serves answerBig over stdio.
func serveBigUpstream(in io.Reader, out io.Writer) {
	bw := bufio.NewWriterSize(out, 1<<20)
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		answerBig(bw, sc.Bytes())
		bw.Flush()
	}
}

// TestUpstreamResultBounded (issue 9): a 200 MB upstream result is refused
// as it streams in, over stdio and over HTTP: the call fails with an error
// naming upstreams[].max_result_bytes, the next call on the same upstream
// works, and the gateway's peak RSS stays far from the 1.23 GB it reached.
func TestUpstreamResultBounded(t *testing.T) {
	t.Parallel()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			http.Error(w, "no GET stream", http.StatusMethodNotAllowed)
			return
		}
		b, _ := io.ReadAll(r.Body)
		if !strings.Contains(string(b), `"id"`) {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		bw := bufio.NewWriterSize(w, 1<<20)
		answerBig(bw, b)
		bw.Flush()
	}))
	defer hs.Close()
	e := newEnv(t, set("upstreams", []any{
		map[string]any{"name": "bigstdio", "command": self, "env": map[string]string{bigUpstreamEnv: "1"}},
		map[string]any{"name": "bighttp", "url": hs.URL, "max_result_bytes": 8 << 20},
	}), set("log.level", "info"))
	s := e.StartHTTP(t)
	cs := s.Connect(t, era2025, nil)
	for _, up := range []string{"bigstdio", "bighttp"} {
		res := call(t, cs, up+"__big", map[string]any{"bytes": 200 << 20})
		if !res.IsError || !strings.Contains(textOf(res), "max_result_bytes") {
			t.Errorf("%s: a 200 MB result: %s", up, tail(textOf(res), 300))
		}
		if res := call(t, cs, up+"__small", map[string]any{}); res.IsError || !strings.Contains(textOf(res), "small and fine") {
			t.Errorf("%s: the next call: %s", up, textOf(res))
		}
		if res := call(t, cs, up+"__big", map[string]any{"bytes": 1 << 20}); res.IsError {
			t.Errorf("%s: a 1 MB result: %s", up, tail(textOf(res), 300))
		}
	}
	st := mustProcStats(t, s.Pid())
	if st.HWMKB > 300<<10 {
		t.Errorf("peak RSS %s after two 200 MB results", st)
	}
	t.Logf("after two 200 MB results: %s", st)
}
