package runs

import (
	"os"
	"path/filepath"
	"testing"
)

func TestFindRecord(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tools.jsonl")
	lines := `{"call_id":"a","tool":"echo"}
{"call_id":"b","tool":"echo","arguments":{"call_id":"c"}}
{"call_id":"c","tool":"list_files"}
`
	if err := os.WriteFile(path, []byte(lines), 0o600); err != nil {
		t.Fatal(err)
	}
	for id, want := range map[string]string{
		"a": `{"call_id":"a","tool":"echo"}`,
		"c": `{"call_id":"c","tool":"list_files"}`, // not the line that merely mentions it
	} {
		got, ok := FindRecord(path, id)
		if !ok || string(got) != want {
			t.Errorf("FindRecord(%s) = %s, %v", id, got, ok)
		}
	}
	if _, ok := FindRecord(path, "zzz"); ok {
		t.Error("found an unknown call")
	}
	if _, ok := FindRecord(filepath.Join(t.TempDir(), "none.jsonl"), "a"); ok {
		t.Error("found a call in a missing file")
	}
}
