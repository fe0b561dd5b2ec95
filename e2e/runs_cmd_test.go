package e2e

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"
)

// TestRunsCommand (issue 10): a person browses the archive with `toolgate
// runs`: list (newest first, with the command, client and counts), show,
// open a call's whole record, and prune (a dry run first).
func TestRunsCommand(t *testing.T) {
	t.Parallel()
	e := newEnv(t, set("limits.max_output_bytes", 1024))
	s := e.StartHTTP(t)
	cs := s.Connect(t, era2025, nil)
	big := call(t, cs, "echo", map[string]any{"text": strings.Repeat("long output ", 200)}) // an artifact
	call(t, cs, "read_file", map[string]any{"path": "missing.txt"})                         // an error
	s.Stop(t)
	bigID := callIDOf(big)

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	run := func(args ...string) string {
		t.Helper()
		out, err := e.command(ctx, args...).Output()
		if err != nil {
			t.Fatalf("toolgate %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	var list []struct {
		ID        string   `json:"id"`
		Command   []string `json:"command"`
		Client    string   `json:"client"`
		Status    string   `json:"status"`
		Calls     int      `json:"calls"`
		Errors    int      `json:"errors"`
		Artifacts int      `json:"artifacts"`
	}
	if err := json.Unmarshal([]byte(run("runs", "list", "--json")), &list); err != nil || len(list) != 1 {
		t.Fatalf("runs list --json: %v %v", list, err)
	}
	r := list[0]
	if r.Calls != 2 || r.Errors != 1 || r.Artifacts != 1 || r.Client == "" || r.Status != "signal" || !strings.Contains(strings.Join(r.Command, " "), "serve --http") {
		t.Errorf("the run: %+v", r)
	}
	if out := run("runs", "list"); !strings.Contains(out, r.ID) || !strings.Contains(out, "serve --http") {
		t.Errorf("runs list:\n%s", out)
	}
	if out := run("runs", "show", "latest"); !strings.Contains(out, "echo") || !strings.Contains(out, "read_file") || !strings.Contains(out, "error") {
		t.Errorf("runs show latest:\n%s", out)
	}
	var opened struct {
		Record        map[string]any   `json:"record"`
		Events        []map[string]any `json:"events"`
		ArtifactFiles []string         `json:"artifact_files"`
	}
	if err := json.Unmarshal([]byte(run("runs", "open", r.ID[:12], bigID[:13], "--json")), &opened); err != nil {
		t.Fatal(err)
	}
	if opened.Record["call_id"] != bigID || len(opened.Events) < 2 || len(opened.ArtifactFiles) != 1 {
		t.Errorf("runs open: %+v", opened)
	} else if _, err := os.Stat(opened.ArtifactFiles[0]); err != nil {
		t.Errorf("the artifact file: %v", err)
	}

	// A second run, then prune to one: a dry run removes nothing.
	run("call", "list_files", `{"path":"."}`)
	if out := run("runs", "prune", "--keep", "1"); !strings.Contains(out, "would remove "+r.ID) || !strings.Contains(out, "\n1 run would be removed;") {
		t.Errorf("prune dry run:\n%s", out)
	}
	if n := strings.Count(run("runs", "list"), "\n"); n != 3 { // header + 2 runs
		t.Errorf("after a dry run: %d lines", n)
	}
	// Ages in days, as retention is said: both runs are younger than 2d.
	if out := run("runs", "prune", "--older-than", "2d"); strings.Contains(out, "would remove") {
		t.Errorf("prune --older-than 2d took runs of today:\n%s", out)
	}
	if out := run("runs", "prune", "--keep", "1", "--yes"); !strings.Contains(out, "removed "+r.ID) {
		t.Errorf("prune --yes:\n%s", out)
	}
	if out := run("runs", "list"); strings.Contains(out, r.ID) {
		t.Errorf("the pruned run is still listed:\n%s", out)
	}
}
