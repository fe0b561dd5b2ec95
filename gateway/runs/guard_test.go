package runs

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/toolgate/toolgate/gateway"
)

// TestReplacedRecordFilesAreRestored: a record file renamed over (as an
// atomic write does) or deleted under the running gateway is restored
// with everything written to it, before and after; the foreign file is
// kept aside, and the replacement is an event and a count.
func TestReplacedRecordFilesAreRestored(t *testing.T) {
	dir := t.TempDir()
	r, err := Open(dir, &Options{Version: "test", CheckEvery: time.Hour}) // checked by hand below
	if err != nil {
		t.Fatal(err)
	}
	record := func(id string) {
		call := &gateway.Call{ID: id, Name: "echo", Started: time.Now()}
		if err := r.CallStarted(call); err != nil {
			t.Fatal(err)
		}
		r.CallFinished(call, gateway.OkText("ok"), time.Millisecond)
	}
	record("before")
	tools := filepath.Join(r.Dir(), "logs", "tools.jsonl")
	forged := filepath.Join(r.Dir(), "logs", ".tools.jsonl.tmp")
	if err := os.WriteFile(forged, []byte(`{"call_id":"forged"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(forged, tools); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(r.Dir(), "events.jsonl")); err != nil {
		t.Fatal(err)
	}
	record("between") // written to the files the gateway holds
	r.checkFiles()
	record("after")
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}

	var ids []string
	for _, l := range lines(t, tools) {
		ids = append(ids, l["call_id"].(string))
	}
	if strings.Join(ids, ",") != "before,between,after" {
		t.Errorf("tools.jsonl holds %v, want every call and no forged line", ids)
	}
	asides, _ := filepath.Glob(tools + ".replaced-*")
	if len(asides) != 1 {
		t.Fatalf("the forged file was not kept aside: %v", asides)
	}
	if b, _ := os.ReadFile(asides[0]); !strings.Contains(string(b), "forged") {
		t.Errorf("kept aside: %q", b)
	}
	var types []string
	replaced := 0
	for _, l := range lines(t, filepath.Join(r.Dir(), "events.jsonl")) {
		types = append(types, l["type"].(string))
		if l["type"] == "archive.file_replaced" {
			replaced++
		}
	}
	if types[0] != "run.started" || types[len(types)-1] != "run.stopped" || replaced != 2 {
		t.Errorf("events: %v (want the whole history, 2 archive.file_replaced)", types)
	}
	if r.ReplacedFiles() != 2 || r.WriteErrors() != 0 {
		t.Errorf("ReplacedFiles = %d, WriteErrors = %d", r.ReplacedFiles(), r.WriteErrors())
	}
}

// TestGuardRunsByItself: without anyone asking, a replaced file is
// restored at the next check.
func TestGuardRunsByItself(t *testing.T) {
	dir := t.TempDir()
	synctest.Test(t, func(t *testing.T) {
		r, err := Open(dir, &Options{CheckEvery: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		if err := os.Remove(filepath.Join(r.Dir(), "logs", "errors.jsonl")); err != nil {
			t.Fatal(err)
		}
		time.Sleep(500 * time.Millisecond)
		synctest.Wait()
		if r.ReplacedFiles() != 0 {
			t.Fatal("checked before its time")
		}
		time.Sleep(time.Second)
		synctest.Wait()
		if _, err := os.Stat(filepath.Join(r.Dir(), "logs", "errors.jsonl")); err != nil || r.ReplacedFiles() != 1 {
			t.Errorf("not restored: %v, replaced %d", err, r.ReplacedFiles())
		}
	})
}
