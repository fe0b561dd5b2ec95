package memory

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/toolgate/toolgate/gateway"
	"github.com/toolgate/toolgate/policy"
)

type writeParams struct {
	Content string   `json:"content" jsonschema:"minLength=1" jsonschema_description:"What to remember: a self-contained fact, decision or preference, written so that it makes sense without this conversation."`
	Scope   string   `json:"scope" jsonschema:"minLength=1,maxLength=64,pattern=^[A-Za-z0-9._:-]+$" jsonschema_description:"Scope the memory belongs to (e.g. a project or user name); recall only searches one scope. 1-64 characters of [A-Za-z0-9._:-]."`
	Tags    []string `json:"tags,omitempty" jsonschema:"maxItems=16,minLength=1,maxLength=64" jsonschema_description:"Optional keywords that help recall find the memory."`
}

func (t *Toolset) writeTool() (*gateway.Tool, error) {
	var where string
	switch t.opts.Mode {
	case ModeCandidate:
		where = "Memories are saved as candidates in this run's archive, awaiting review by an operator; " +
			"recall_memory in this run returns them marked [candidate], and they become committed memories once promoted."
	case ModeExternal:
		where = "Memories are committed to the memory store at once."
	}
	return gateway.NewTypedTool(gateway.ToolDef{
		Name:  WriteTool,
		Title: "Write memory",
		Description: fmt.Sprintf("Save a memory for later recall with recall_memory. `scope` is required and isolates memories; "+
			"`tags` are optional keywords. Content is at most %s. This only adds a memory: it never changes or deletes one. %s",
			sizeText(t.opts.MaxContentBytes), where),
		Permissions: gateway.Permissions{
			Capabilities: []string{policy.MemoryWrite},
			Hints: gateway.Hints{
				ReadOnly:    gateway.Bool(false),
				Destructive: gateway.Bool(false), // only adds
				Idempotent:  gateway.Bool(false),
				OpenWorld:   gateway.Bool(false),
			},
		},
	}, t.write)
}

func (t *Toolset) write(ctx context.Context, in writeParams) (*gateway.Result, error) {
	if n := len(in.Content); n > t.opts.MaxContentBytes {
		return gateway.Error(
			fmt.Sprintf("Memory content is %s (%d bytes), over the %s (%d bytes) limit per memory; nothing was saved. Save a shorter, more focused memory, or split it into several.",
				sizeText(n), n, sizeText(t.opts.MaxContentBytes), t.opts.MaxContentBytes),
			fmt.Sprintf("Memory too large (%s > %s)", sizeText(n), sizeText(t.opts.MaxContentBytes))), nil
	}
	m := Memory{Content: in.Content, Scope: in.Scope, Tags: NormalizeTags(in.Tags)}
	if err := m.Validate(); err != nil {
		return gateway.Errorf("Invalid memory: %v; nothing was saved.", err), nil
	}
	switch t.opts.Mode {
	case ModeCandidate:
		return t.writeCandidate(ctx, m)
	case ModeExternal:
		return t.writeExternal(ctx, m)
	default: // not offered; reached only if someone calls the handler directly
		return gateway.Error(t.unoffered[WriteTool], "Memory writes are disabled"), nil
	}
}

func (t *Toolset) writeCandidate(ctx context.Context, m Memory) (*gateway.Result, error) {
	id, err := uuid.NewV7()
	if err != nil {
		return nil, err
	}
	c := Candidate{ID: id.String(), Content: m.Content, Scope: m.Scope, Tags: m.Tags, Created: time.Now().UTC()}
	if call := gateway.CallFrom(ctx); call != nil {
		c.CallID, c.Session = call.ID, call.Session
	}
	// Content the store or this run has in the scope already is not saved
	// again: promoted, it would add nothing (Store.Write keeps one).
	if lookup, ok := t.opts.Store.(ContentLookup); ok {
		old, found, err := lookup.FindContent(ctx, m.Scope, m.Content)
		if err != nil {
			t.log.Warn("memory: looking for the same memory in the store failed", "err", err)
		} else if found {
			return duplicateResult(ModeCandidate, "memory "+old.ID, "committed", old.Scope, "memory_id", old.ID), nil
		}
	}
	t.candMu.Lock()
	oldID, found := t.sameCandidate(m)
	if !found {
		if err = appendCandidate(t.opts.CandidatesPath, c); err == nil {
			t.candIDs[memoryKey(m)] = c.ID
		}
	}
	t.candMu.Unlock()
	if found {
		return duplicateResult(ModeCandidate, "candidate "+oldID, "candidate", m.Scope, "candidate_id", oldID), nil
	}
	if err != nil {
		t.log.Error("memory: saving candidate failed", "path", t.opts.CandidatesPath, "err", err)
		return gateway.Errorf("Saving the candidate memory failed: %v; nothing was saved.", err), nil
	}
	t.log.Debug("memory: candidate saved", "id", c.ID, "scope", c.Scope, "path", t.opts.CandidatesPath)
	run := t.opts.RunID
	if run == "" {
		run = "<run-id>"
	}
	res := gateway.OkText(fmt.Sprintf("candidate %s saved in scope %s%s", c.ID, c.Scope, tagsSuffix(c.Tags)))
	res.Message = fmt.Sprintf("Saved as candidate memory %s in scope %q, awaiting review: it is in this run's archive, not in the memory store yet. "+
		"recall_memory in this run returns it marked [candidate]. An operator commits this run's candidates with `toolgate memory promote %s` "+
		"(`--dry-run` shows what would be promoted).", c.ID, c.Scope, run)
	res.Extras = map[string]any{"mode": string(ModeCandidate), "candidate_id": c.ID, "candidates_path": t.opts.CandidatesPath}
	return res.WithBrief(fmt.Sprintf("Candidate memory saved (scope %s)", c.Scope)), nil
}

// sameCandidate returns the ID of this run's candidate of m's scope and
// content, if there is one. Callers hold candMu.
func (t *Toolset) sameCandidate(m Memory) (string, bool) {
	if t.candIDs == nil {
		t.candIDs = map[string]string{}
		cands, _, _ := ReadCandidates(t.opts.CandidatesPath) // none yet, or unreadable: none
		for _, c := range cands {
			if k := memoryKey(c.Memory()); t.candIDs[k] == "" {
				t.candIDs[k] = c.ID // the first of copies written before
			}
		}
	}
	id, ok := t.candIDs[memoryKey(m)]
	return id, ok
}

// memoryKey is what makes two memories the same: scope and content.
func memoryKey(m Memory) string { return m.Scope + "\x00" + m.Content }

// duplicateResult answers a write of what the scope holds already (what:
// "memory ID" or "candidate ID", marked as recall marks it): a success that
// saved nothing, with the existing entry's ID in Extras under key.
func duplicateResult(mode Mode, what, mark, scope, key, id string) *gateway.Result {
	res := gateway.OkText(fmt.Sprintf("already saved as %s in scope %s", what, scope))
	res.Message = fmt.Sprintf("Nothing new was saved: %s in scope %q has this content already; recall_memory returns it marked [%s].", what, scope, mark)
	res.Extras = map[string]any{"mode": string(mode), key: id, "duplicate": true}
	return res.WithBrief(fmt.Sprintf("Memory already saved (scope %s)", scope))
}

func (t *Toolset) writeExternal(ctx context.Context, m Memory) (*gateway.Result, error) {
	id, err := uuid.NewV7()
	if err != nil {
		return nil, err
	}
	m.ID = id.String()
	got, err := t.opts.Store.Write(ctx, m)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		t.log.Error("memory: store write failed", "err", err)
		return gateway.Errorf("Writing the memory to the store failed: %v; it may not have been saved.", err), nil
	}
	if got.ID != m.ID {
		return duplicateResult(ModeExternal, "memory "+got.ID, "committed", got.Scope, "memory_id", got.ID), nil
	}
	res := gateway.OkText(fmt.Sprintf("memory %s committed in scope %s%s", got.ID, got.Scope, tagsSuffix(got.Tags)))
	res.Message = fmt.Sprintf("Committed memory %s to the memory store in scope %q; recall_memory returns it marked [committed].", got.ID, got.Scope)
	res.Extras = map[string]any{"mode": string(ModeExternal), "memory_id": got.ID}
	return res.WithBrief(fmt.Sprintf("Memory committed (scope %s)", got.Scope)), nil
}

func tagsSuffix(tags []string) string {
	if len(tags) == 0 {
		return ""
	}
	return " with tags " + strings.Join(tags, ", ")
}

// sizeText renders a byte count: "16 KiB", "1.5 KiB", "900 B".
func sizeText(n int) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
