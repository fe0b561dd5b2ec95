package runs

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
)

// Record returns the call's line in this run's tools.jsonl (false if the
// call has none: unknown, or still in flight). It reads the file from the
// start; it is for a person looking at one call, not for a hot path.
func (r *Run) Record(callID string) (json.RawMessage, bool) {
	return FindRecord(filepath.Join(r.dir, "logs", "tools.jsonl"), callID)
}

// FindRecord returns the line of a tools.jsonl file whose call_id is
// callID.
func FindRecord(path, callID string) (json.RawMessage, bool) {
	f, err := os.Open(path)
	if err != nil {
		return nil, false
	}
	defer f.Close()
	needle, _ := json.Marshal(callID)
	needle = append([]byte(`"call_id":`), needle...)
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if !bytes.Contains(line, needle) {
			continue
		}
		var head struct {
			CallID string `json:"call_id"`
		}
		if json.Unmarshal(line, &head) == nil && head.CallID == callID {
			return json.RawMessage(bytes.Clone(line)), true
		}
	}
	return nil, false
}
