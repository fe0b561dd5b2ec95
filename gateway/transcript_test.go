package gateway

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"golang.org/x/tools/txtar"
)

// Wire transcripts of the MCP mirror: each testdata/transcripts/*.txtar
// holds the JSON-RPC messages a client sends over stdio ("request", one per
// line) and the responses the gateway must answer with ("response", one per
// line, in request order, notifications left out). The gateway is the test
// pipeline's catalog (echo, shell denied, sleep...) served by ServeStdio,
// the real wire path. Values that change from run to run (call IDs, run
// times) are replaced by placeholders before comparing.
//
// After a deliberate change of the wire form, rewrite the files with
//
//	go test ./gateway -run TestTranscripts -update

func TestTranscripts(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "transcripts", "*.txtar"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no transcripts: %v", err)
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txtar"), func(t *testing.T) {
			ar, err := txtar.ParseFile(file)
			if err != nil {
				t.Fatal(err)
			}
			var requests, want []byte
			for _, f := range ar.Files {
				switch f.Name {
				case "request":
					requests = f.Data
				case "response":
					want = f.Data
				}
			}
			got := replay(t, requests)
			if *update {
				for i := range ar.Files {
					if ar.Files[i].Name == "response" {
						ar.Files[i].Data = got
					}
				}
				if err := os.WriteFile(file, txtar.Format(ar), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			if !bytes.Equal(got, want) {
				t.Errorf("responses differ from %s (run with -update after a deliberate change):\ngot:\n%s\nwant:\n%s", file, got, want)
			}
		})
	}
}

// volatile matches values that differ between runs.
var volatile = []struct {
	re   *regexp.Regexp
	with string
}{
	{regexp.MustCompile(`"toolgate/call_id":"[^"]*"`), `"toolgate/call_id":"CALL-ID"`},
	{regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`), `UUID`},
}

// replay serves a fresh test gateway over in-process stdio pipes, sends each
// request line in turn, waits for the response to each request that has an
// id, and returns the responses, normalized, one per line.
func replay(t *testing.T, requests []byte) []byte {
	t.Helper()
	p := newTestPipeline(t, newMemRecorder(), nil)
	m := NewMCPServer(&MCPOptions{Name: "toolgate-test", Version: "1", Catalog: p.opts.Tools.(*Catalog), Pipeline: p})
	inW, outR := serveMCPStdio(t, m)
	lines := make(chan []byte)
	go func() {
		sc := bufio.NewScanner(outR)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			lines <- append([]byte(nil), sc.Bytes()...)
		}
		close(lines)
	}()

	var out bytes.Buffer
	for _, req := range bytes.Split(bytes.TrimSpace(requests), []byte("\n")) {
		if len(bytes.TrimSpace(req)) == 0 {
			continue
		}
		if _, err := inW.Write(append(req, '\n')); err != nil {
			t.Fatal(err)
		}
		var head struct {
			ID json.RawMessage `json:"id"`
		}
		if json.Unmarshal(req, &head) == nil && len(head.ID) == 0 {
			continue // a notification: no answer expected
		}
		for {
			var line []byte
			select {
			case l, ok := <-lines:
				if !ok {
					t.Fatalf("the server stopped before answering %s", req)
				}
				line = l
			case <-time.After(10 * time.Second):
				t.Fatalf("no answer to %s", req)
			}
			var msg struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
			}
			if json.Unmarshal(line, &msg) != nil || msg.Method != "" {
				continue // a notification from the server
			}
			for _, v := range volatile {
				line = v.re.ReplaceAll(line, []byte(v.with))
			}
			out.Write(line)
			out.WriteByte('\n')
			break
		}
	}
	return out.Bytes()
}
