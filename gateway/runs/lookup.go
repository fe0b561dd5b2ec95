package runs

import (
	"bytes"
	"encoding/json"
	"path/filepath"
)

// Record returns the call's line in this run's tools.jsonl (false if the
// call has none: unknown, or still in flight). It reads the file from the
// start; it is for a person looking at one call, not for a hot path.
func (r *Run) Record(callID string) (json.RawMessage, bool) {
	return FindRecord(filepath.Join(r.dir, "logs", "tools.jsonl"), callID)
}

// FindRecord returns the line of a tools.jsonl file whose call_id is
// callID. It reads lines as [Records] does: one over maxRecordLine is
// skipped, and the lines after it are still searched.
func FindRecord(path, callID string) (json.RawMessage, bool) {
	needle, _ := json.Marshal(callID)
	needle = append([]byte(`"call_id":`), needle...)
	var found json.RawMessage
	_ = scanLines(path, func(line []byte, tooLong, _ bool) bool {
		if tooLong || !bytes.Contains(line, needle) {
			return true
		}
		var head struct {
			CallID string `json:"call_id"`
		}
		if json.Unmarshal(line, &head) == nil && head.CallID == callID {
			found = json.RawMessage(bytes.TrimRight(bytes.Clone(line), "\r\n"))
			return false
		}
		return true
	})
	return found, found != nil
}
