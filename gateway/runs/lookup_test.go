package runs

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestFindRecord(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tools.jsonl")
	// A line of 65 MiB (hand-made: toolgate bounds its own) does not
	// hide the records after it, as in Records; it is not held either.
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"call_id":"a","tool":"echo"}` + "\n" + `{"call_id":"b","tool":"echo","arguments":{"call_id":"c"}}` + "\n" + `{"call_id":"h","brief":"`)
	chunk := []byte(strings.Repeat("x", 1<<20))
	for range 65 {
		f.Write(chunk)
	}
	f.WriteString(`"}` + "\n" + `{"call_id":"c","tool":"list_files"}` + "\n")
	if err := f.Close(); err != nil {
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
