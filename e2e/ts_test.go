package e2e

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// runNode runs e2e/js/<script> with one JSON argument and decodes the JSON
// object it prints into v.
func runNode(t *testing.T, script string, arg any, v any) {
	t.Helper()
	requirePeers(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", filepath.Join(jsDir, script), mustJSON(arg))
	cmd.Dir = jsDir
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "TOOLGATE_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.WaitDelay = 2 * time.Second
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if ctx.Err() != nil {
		t.Fatalf("node %s did not finish within 90s; stderr:\n%s", script, tail(stderr.String(), 4000))
	}
	if err != nil {
		t.Fatalf("node %s: %v\nstdout: %s\nstderr:\n%s", script, err, out, tail(stderr.String(), 4000))
	}
	line := bytes.TrimSpace(out)
	if i := bytes.LastIndexByte(line, '\n'); i >= 0 {
		line = line[i+1:]
	}
	if err := json.Unmarshal(line, v); err != nil {
		t.Fatalf("node %s printed %q: %v\nstderr:\n%s", script, out, err, tail(stderr.String(), 4000))
	}
	t.Logf("node %s: %s", script, tail(string(line), 3000))
}

// tsObservations is what sdk-client.mjs prints.
type tsObservations struct {
	Connected       bool   `json:"connected"`
	ProtocolVersion string `json:"protocolVersion"`
	SessionID       string `json:"sessionId"`
	Error           any    `json:"error"`
	Steps           struct {
		List struct {
			Names          []string `json:"names"`
			ReadFileSchema struct {
				Properties map[string]struct {
					Maximum *float64 `json:"maximum"`
				} `json:"properties"`
			} `json:"readFileSchema"`
			ReadFileAnnotations map[string]any `json:"readFileAnnotations"`
			ReadFileMeta        map[string]any `json:"readFileMeta"`
		} `json:"list"`
		Write struct {
			IsError bool   `json:"isError"`
			Text    string `json:"text"`
			Diff    bool   `json:"diff"`
			CallID  string `json:"callId"`
		} `json:"write"`
		Read        tsStep `json:"read"`
		Validation  tsStep `json:"validation"`
		UnknownTool tsStep `json:"unknownTool"`
		Progress    struct {
			tsStep
			Progress []float64 `json:"progress"`
		} `json:"progress"`
		Cancel      tsStep `json:"cancel"`
		AfterCancel tsStep `json:"afterCancel"`
		Artifact    struct {
			tsStep
			Link         string `json:"link"`
			SummaryBytes int    `json:"summaryBytes"`
			Bytes        int    `json:"bytes"`
			SHA256       string `json:"sha256"`
		} `json:"artifact"`
	} `json:"steps"`
}

type tsStep struct {
	IsError  bool   `json:"isError"`
	Text     string `json:"text"`
	Resolved bool   `json:"resolved"`
	MS       int    `json:"ms"`
	Thrown   *struct {
		Name    string `json:"name"`
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"thrown"`
}

func (s tsStep) String() string { return mustJSON(s) }

// writeBigFile writes a file whose read_file output is over the output
// limit and returns the sha256 and size of that output.
func writeBigFile(t *testing.T, e *Env, name string) (string, int) {
	t.Helper()
	var file, numbered strings.Builder
	for i := 1; i <= 1600; i++ {
		line := fmt.Sprintf("line %04d %s", i, strings.Repeat("z", 117))
		file.WriteString(line + "\n")
		fmt.Fprintf(&numbered, "%6d\t%s\n", i, line)
	}
	if err := os.WriteFile(filepath.Join(e.Sandbox, name), []byte(file.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	want := strings.TrimSuffix(numbered.String(), "\n")
	sum := sha256.Sum256([]byte(want))
	return hex.EncodeToString(sum[:]), len(want)
}

// TestTypeScriptSDK: the TypeScript SDK 1.x client over stdio (spawning the
// binary) and streamable HTTP: listing, write/read, validation error as
// isError, progress, cancellation, an artifact read back.
func TestTypeScriptSDK(t *testing.T) {
	t.Parallel()
	requirePeers(t)
	for _, transport := range []string{"stdio", "http"} {
		t.Run(transport, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, set("filesystem.max_read_bytes", 1<<20))
			sum, size := writeBigFile(t, e, "big.txt")
			arg := map[string]any{"transport": transport, "bigFile": "big.txt"}
			var s *Server
			if transport == "stdio" {
				arg["bin"], arg["config"], arg["cwd"] = toolgateBin, e.ConfigPath, e.Dir
				arg["env"] = map[string]string{"XDG_STATE_HOME": filepath.Join(e.Dir, "state"), "HOME": e.Dir}
			} else {
				s = e.StartHTTP(t)
				arg["url"] = s.URL
			}
			var o tsObservations
			runNode(t, "sdk-client.mjs", arg, &o)
			if !o.Connected {
				t.Fatalf("the TypeScript client did not connect: %v", o.Error)
			}
			if transport == "http" && (o.ProtocolVersion != era2025 || o.SessionID == "") {
				t.Errorf("negotiated %q with session %q; want %s and a session", o.ProtocolVersion, o.SessionID, era2025)
			}
			st := o.Steps
			for _, name := range append(slices.Clone(fsTools), "echo", "sleep") {
				if !slices.Contains(st.List.Names, name) {
					t.Errorf("tools/list lacks %s: %v", name, st.List.Names)
				}
			}
			if m := st.List.ReadFileSchema.Properties["limit"].Maximum; m == nil || *m != 2000 {
				t.Errorf("read_file limit maximum %v, want 2000", m)
			}
			if st.List.ReadFileAnnotations["readOnlyHint"] != true {
				t.Errorf("read_file annotations %v", st.List.ReadFileAnnotations)
			}
			if caps, _ := st.List.ReadFileMeta["toolgate/capabilities"].([]any); !slices.Equal(caps, []any{"fs.read"}) {
				t.Errorf("read_file _meta %v", st.List.ReadFileMeta)
			}
			if st.Write.IsError || !st.Write.Diff {
				t.Errorf("write_file: %s", mustJSON(st.Write))
			}
			if got, _ := os.ReadFile(filepath.Join(e.Sandbox, "ts", "hello.txt")); string(got) != "hello from typescript\n" {
				t.Errorf("file written: %q", got)
			}
			if st.Read.IsError || !strings.Contains(st.Read.Text, "hello from typescript") {
				t.Errorf("read_file: %v", st.Read)
			}
			if !st.Validation.IsError || !strings.Contains(st.Validation.Text, "at '/limit': maximum 2000, got 5000") {
				t.Errorf("validation error: %v", st.Validation)
			}
			if st.UnknownTool.Thrown == nil || st.UnknownTool.Thrown.Code != -32602 {
				t.Errorf("unknown tool: %v; want a rejected call with code -32602", st.UnknownTool)
			}
			// The TS SDK 1.x client dispatches notifications on a microtask but
			// handles responses at once, so a progress notification read in the
			// same chunk as the response is dropped by the client itself
			// (protocol.js _onnotification). The gateway sends the last report
			// ahead of the result and waits (gateway/mcp.go settle), which makes
			// the loss rare but cannot rule it out; the Go SDK tests check the
			// wire order exactly.
			if p := st.Progress.Progress; st.Progress.IsError || !(slices.Equal(p, []float64{1, 2, 3, 4, 5}) || slices.Equal(p, []float64{1, 2, 3, 4})) {
				t.Errorf("progress: %v (isError %v), want [1 2 3 4 5] (or without the last, see above)", p, st.Progress.IsError)
			}
			if c := st.Cancel.Thrown; c == nil || c.Code != -32001 || !strings.Contains(c.Message, "user cancelled") || st.Cancel.MS > 5000 {
				t.Errorf("cancel: %v; want a rejection -32001 'user cancelled' soon after the abort", st.Cancel)
			}
			if st.AfterCancel.IsError || st.AfterCancel.Text != "still serving" {
				t.Errorf("echo after the cancellation: %v", st.AfterCancel)
			}
			if a := st.Artifact; a.Link == "" || a.Bytes != size || a.SHA256 != sum || a.SummaryBytes > 64<<10 {
				t.Errorf("artifact: %s; want a link whose content is %d bytes with sha256 %s", mustJSON(a), size, sum)
			}

			if s != nil {
				s.Stop(t)
			} else if !waitFor(10*time.Second, func() bool {
				return fileExists(filepath.Join(e.RunsDir)) && countEvents(e.liveEvents(t), "run.stopped", "") == 1
			}) {
				t.Fatal("the stdio server spawned by the TypeScript client did not stop after the client closed")
			}
			a := e.Archive(t)
			var sleeps []string
			for _, r := range a.Tools {
				if r.Tool == "sleep" {
					sleeps = append(sleeps, r.Status)
				}
			}
			if !slices.Equal(sleeps, []string{"ok", "cancelled"}) {
				t.Errorf("sleep records %v, want [ok cancelled]", sleeps)
			}
			if rec := a.toolsByCallID(t)[st.Write.CallID]; rec.Status != "ok" || rec.Tool != "write_file" {
				t.Errorf("write_file record %+v", rec)
			}
		})
	}
}

// TestTypeScriptClient2026: @modelcontextprotocol/client 2.4.0 pinned to
// 2026-07-28 lists tools and calls them statelessly over HTTP.
func TestTypeScriptClient2026(t *testing.T) {
	t.Parallel()
	requirePeers(t)
	e := newEnv(t)
	s := e.StartHTTP(t)
	var o struct {
		Connected       bool   `json:"connected"`
		ProtocolVersion string `json:"protocolVersion"`
		SessionID       string `json:"sessionId"`
		SessionIDAfter  string `json:"sessionIdAfter"`
		Error           any    `json:"error"`
		Steps           struct {
			List struct {
				Names  []string `json:"names"`
				Thrown any      `json:"thrown"`
			} `json:"list"`
			Echo struct {
				tsStep
				CallID string `json:"callId"`
			} `json:"echo"`
			Validation tsStep `json:"validation"`
			Progress   struct {
				tsStep
				Progress []float64 `json:"progress"`
			} `json:"progress"`
		} `json:"steps"`
	}
	runNode(t, "client2026.mjs", map[string]any{"url": s.URL}, &o)
	if !o.Connected {
		t.Fatalf("the 2026 client did not connect: %v", o.Error)
	}
	if o.ProtocolVersion != era2026 || o.SessionID != "" || o.SessionIDAfter != "" {
		t.Errorf("negotiated %q, session %q/%q; want %s and no session", o.ProtocolVersion, o.SessionID, o.SessionIDAfter, era2026)
	}
	if !slices.Contains(o.Steps.List.Names, "read_file") || !slices.Contains(o.Steps.List.Names, "echo") {
		t.Errorf("tools/list: %s", mustJSON(o.Steps.List))
	}
	if o.Steps.Echo.IsError || o.Steps.Echo.Text != "stateless 2026" || o.Steps.Echo.CallID == "" {
		t.Errorf("echo: %s", mustJSON(o.Steps.Echo))
	}
	if !o.Steps.Validation.IsError || !strings.Contains(o.Steps.Validation.Text, "at '/limit': maximum 2000, got 5000") {
		t.Errorf("validation: %v", o.Steps.Validation)
	}
	if !slices.Equal(o.Steps.Progress.Progress, []float64{1, 2, 3, 4, 5}) {
		t.Errorf("progress %v, want [1 2 3 4 5]", o.Steps.Progress.Progress)
	}
	s.Stop(t)
	rec := e.Archive(t).toolsByCallID(t)[o.Steps.Echo.CallID]
	if rec.Status != "ok" || rec.Session != "" {
		t.Errorf("echo record %+v; want ok and no session", rec)
	}
}

// elicitClientOut is what e2e/js/elicit-client.mjs prints: the messages
// it was asked (and the mode and URL of each), and the call's result, or
// its error with the JSON-RPC code and the elicitations of a -32042.
type elicitClientOut struct {
	Asked  []string `json:"asked"`
	Params []struct {
		Mode string `json:"mode"`
		URL  string `json:"url"`
	} `json:"params"`
	Error string `json:"error"`
	Code  int    `json:"code"`
	Data  struct {
		Elicitations []struct {
			Mode string `json:"mode"`
			URL  string `json:"url"`
		} `json:"elicitations"`
	} `json:"data"`
	Result struct {
		IsError bool `json:"isError"`
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
	} `json:"result"`
}

// Text is the text of the result's content.
func (r elicitClientOut) Text() string {
	var b strings.Builder
	for _, c := range r.Result.Content {
		b.WriteString(c.Text)
	}
	return b.String()
}

// runElicitClient runs the TypeScript SDK 1.x client (2025 era), which
// answers every elicitation/create with content (accepted), calling tool
// with args; the client's own failure fails the test.
func runElicitClient(t *testing.T, url, tool string, args, content map[string]any) elicitClientOut {
	t.Helper()
	var r elicitClientOut
	runNode(t, "elicit-client.mjs", map[string]any{"url": url, "tool": tool, "arguments": args,
		"answer": map[string]any{"action": "accept", "content": content}}, &r)
	if r.Error != "" {
		t.Fatalf("TypeScript client: %s", r.Error)
	}
	return r
}
