package memory

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"slices"
	"sort"
	"strings"
	"time"
	"unicode"

	"github.com/toolgate/toolgate/gateway"
	"github.com/toolgate/toolgate/policy"
)

// maxHitTextBytes bounds each hit's content in the text output; the
// structured output carries it whole.
const maxHitTextBytes = 2 << 10

type recallParams struct {
	Query string `json:"query,omitempty" jsonschema:"maxLength=1000" jsonschema_description:"Free text: the words to look for. Any search syntax is ignored. Empty returns the most recent memories of the scope."`
	Scope string `json:"scope" jsonschema:"minLength=1,maxLength=64,pattern=^[A-Za-z0-9._:-]+$" jsonschema_description:"Scope to search (e.g. a project or user name); only memories of this scope are returned. 1-64 characters of [A-Za-z0-9._:-]."`
	Limit int    `json:"limit,omitempty" jsonschema:"minimum=1,maximum=50,default=5" jsonschema_description:"Maximum number of memories to return."`
}

// HitJSON is one hit of recall_memory's structured output.
type HitJSON struct {
	ID        string    `json:"id"`
	Scope     string    `json:"scope"`
	Tags      []string  `json:"tags"`
	Content   string    `json:"content" jsonschema_description:"The whole content (the text output cuts it at 2 KiB)."`
	Created   time.Time `json:"created"`
	Committed bool      `json:"committed" jsonschema_description:"true: in the memory store; false: a candidate of the current run awaiting review."`
	Score     float64   `json:"score" jsonschema_description:"Relevance, higher is better: the store's rank for committed memories, the fraction of query terms found for candidates; 0 for an empty query."`
}

// RecallOutput is recall_memory's structured output.
type RecallOutput struct {
	Hits []HitJSON `json:"hits" jsonschema_description:"Memories, best first."`
}

func (t *Toolset) recallTool() (*gateway.Tool, error) {
	var cands string
	if t.opts.Mode == ModeCandidate {
		cands = " Memories written in this run are candidates awaiting review: they are returned too, marked [candidate] " +
			"(a candidate ranks after committed memories that contain as many of the query's words)."
	}
	return gateway.NewTypedToolOut(gateway.ToolDef{
		Name:  RecallTool,
		Title: "Recall memory",
		Description: fmt.Sprintf("Recall memories saved earlier, ranked by full-text relevance, best first. `scope` is required: "+
			"only memories of that scope are searched. `query` is free text whose words are matched (any search syntax is ignored); "+
			"an empty query returns the most recent memories. `limit` defaults to %d, at most %d. "+
			"Each hit is one block: `[committed]` or `[candidate]`, its id, scope, tags and creation time, then its content "+
			"(cut at 2 KiB in the text; the structured output has it whole).%s", DefaultLimit, MaxLimit, cands),
		Permissions: gateway.Permissions{Capabilities: []string{policy.MemoryRead}, Hints: gateway.ReadOnlyHints()},
	}, t.recall)
}

func (t *Toolset) recall(ctx context.Context, in recallParams) (*gateway.Result, RecallOutput, error) {
	if !ValidScope(in.Scope) {
		return gateway.Errorf("Invalid scope %q: %v", gateway.Truncate(in.Scope, 80), ErrInvalidScope), RecallOutput{}, nil
	}
	limit := ClampLimit(in.Limit)
	terms := QueryTerms(in.Query)
	hits, err := t.opts.Store.Recall(ctx, Query{Text: in.Query, Scope: in.Scope, Limit: limit})
	if err != nil {
		if ctx.Err() != nil {
			return nil, RecallOutput{}, ctx.Err()
		}
		t.log.Error("memory: recall failed", "scope", in.Scope, "err", err)
		return gateway.Errorf("Recalling memories failed: %v", err), RecallOutput{}, nil
	}
	for i := range hits {
		hits[i].Committed = true
	}
	if t.opts.Mode == ModeCandidate {
		cands, err := t.unpromoted(ctx, hits, t.candidateHits(in.Scope, terms), limit)
		if err != nil {
			if ctx.Err() != nil {
				return nil, RecallOutput{}, ctx.Err()
			}
			t.log.Error("memory: recall failed", "scope", in.Scope, "err", err)
			return gateway.Errorf("Recalling memories failed: %v", err), RecallOutput{}, nil
		}
		hits = mergeHits(hits, cands, terms, limit)
	}
	if len(hits) > limit {
		hits = hits[:limit]
	}
	res, out := recallResult(in, terms, hits)
	return res, out, nil
}

// candidateHits returns the candidates of the current run in scope that
// contain at least one query term (all of them for an empty query), best
// first: more of the query's terms first, then the most recent.
func (t *Toolset) candidateHits(scope string, terms []string) []Hit {
	cands, bad, err := ReadCandidates(t.opts.CandidatesPath)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			t.log.Warn("memory: reading candidates failed", "path", t.opts.CandidatesPath, "err", err)
		}
		return nil
	}
	for _, e := range bad {
		t.log.Warn("memory: skipping candidate line", "path", t.opts.CandidatesPath, "err", e)
	}
	var hits []Hit
	for _, c := range cands {
		if c.Scope != scope {
			continue
		}
		score := 0.0
		if len(terms) > 0 {
			if score = overlap(terms, c.Content, c.Tags); score == 0 {
				continue
			}
		}
		hits = append(hits, Hit{Memory: c.Memory(), Score: score})
	}
	sort.SliceStable(hits, func(i, j int) bool {
		if hits[i].Score != hits[j].Score {
			return hits[i].Score > hits[j].Score
		}
		return hits[i].Memory.Created.After(hits[j].Memory.Created)
	})
	return hits
}

// unpromoted drops the candidates that were already promoted into the
// store (their SourceID, "<run-id>/<candidate id>", is among the committed
// hits or, when the store is a [SourceLookup], in the store), so that a
// memory is not shown twice when a running run's candidates are promoted.
// It keeps at most limit candidates.
func (t *Toolset) unpromoted(ctx context.Context, committed, cands []Hit, limit int) ([]Hit, error) {
	if t.opts.RunID == "" || len(cands) == 0 {
		return cands, nil
	}
	sources := make(map[string]bool, len(committed))
	for _, h := range committed {
		if h.Memory.SourceID != "" {
			sources[h.Memory.SourceID] = true
		}
	}
	lookup, _ := t.opts.Store.(SourceLookup)
	out := cands[:0:0]
	for _, c := range cands {
		if len(out) == limit {
			break
		}
		src := t.opts.RunID + "/" + c.Memory.ID
		if sources[src] {
			continue
		}
		if lookup != nil {
			_, ok, err := lookup.FindSource(ctx, src)
			if err != nil {
				return nil, err
			}
			if ok {
				continue
			}
		}
		out = append(out, c)
	}
	return out, nil
}

// mergeHits merges the store's hits (in the store's order) with the
// candidates (best first), keeping the order within each list and at most
// limit hits.
//
// With query terms, both lists are compared on the same simple measure, the
// fraction of query terms a memory contains (see [overlap]); a committed
// hit counts at least one term, since the store matched it (its stemming
// can match words the simple measure misses). A candidate goes before the
// next committed hit only when it contains strictly more of the terms, so
// committed memories win ties. Without terms (an empty query), the lists
// are merged by creation time, newest first, committed first on equal
// times.
func mergeHits(committed, cands []Hit, terms []string, limit int) []Hit {
	if len(cands) == 0 {
		return committed
	}
	// candFirst reports whether candidate k goes before committed hit i.
	candFirst := func(i int, k Hit) bool { return k.Memory.Created.After(committed[i].Memory.Created) }
	if len(terms) > 0 {
		floor := 1 / float64(len(terms))
		keys := make([]float64, len(committed))
		for i, h := range committed {
			keys[i] = math.Max(floor, overlap(terms, h.Memory.Content, h.Memory.Tags))
		}
		candFirst = func(i int, k Hit) bool { return k.Score > keys[i] }
	}
	out := make([]Hit, 0, min(limit, len(committed)+len(cands)))
	i, j := 0, 0
	for len(out) < limit && (i < len(committed) || j < len(cands)) {
		if j < len(cands) && (i == len(committed) || candFirst(i, cands[j])) {
			out = append(out, cands[j])
			j++
		} else {
			out = append(out, committed[i])
			i++
		}
	}
	return out
}

// overlap is the fraction of terms that content or tags contain: a term
// counts when a word of the text equals it or starts with it ("deploy"
// finds "deployment"), case-insensitively; a term in a script written
// without spaces counts when the text contains it or one of its
// [SubstringGrams].
func overlap(terms []string, content string, tags []string) float64 {
	if len(terms) == 0 {
		return 0
	}
	words := map[string]bool{}
	add := func(s string) {
		for _, w := range strings.FieldsFunc(s, func(r rune) bool {
			return !unicode.IsLetter(r) && !unicode.IsNumber(r) && !unicode.IsMark(r)
		}) {
			words[strings.ToLower(w)] = true
		}
	}
	add(content)
	for _, tg := range tags {
		add(tg)
	}
	text := "" // lower-cased, made for the first term of an unspaced script
	found := 0
	for _, term := range terms {
		if words[term] {
			found++
			continue
		}
		if grams := SubstringGrams([]string{term}); len(grams) > 0 {
			// A script written without spaces: the term counts when the
			// text contains one of its grams (the term itself if short),
			// as in the store.
			if text == "" {
				text = strings.ToLower(content + "\n" + strings.Join(tags, "\n"))
			}
			if slices.ContainsFunc(grams, func(g string) bool { return strings.Contains(text, g) }) {
				found++
			}
			continue
		}
		for w := range words {
			if strings.HasPrefix(w, term) {
				found++
				break
			}
		}
	}
	return float64(found) / float64(len(terms))
}

func recallResult(in recallParams, terms []string, hits []Hit) (*gateway.Result, RecallOutput) {
	out := RecallOutput{Hits: make([]HitJSON, 0, len(hits))}
	var committed, candidates int
	var b strings.Builder
	what := fmt.Sprintf("in scope %q", in.Scope)
	if len(terms) > 0 {
		what += fmt.Sprintf(" matching %q", gateway.Truncate(in.Query, 200))
	} else {
		what += " (most recent first)"
	}
	for i, h := range hits {
		m := h.Memory
		tags := m.Tags
		if tags == nil {
			tags = []string{}
		}
		out.Hits = append(out.Hits, HitJSON{
			ID: m.ID, Scope: m.Scope, Tags: tags, Content: m.Content,
			Created: m.Created.UTC(), Committed: h.Committed, Score: h.Score,
		})
		mark := "[candidate]"
		if h.Committed {
			mark = "[committed]"
			committed++
		} else {
			candidates++
		}
		if i > 0 {
			b.WriteString("\n")
		}
		fmt.Fprintf(&b, "%d. %s id=%s scope=%s tags=%s created=%s\n", i+1, mark, m.ID, m.Scope,
			strings.Join(tags, ","), m.Created.UTC().Format(time.RFC3339))
		content := m.Content
		cut := len(content) > maxHitTextBytes
		if cut {
			content = gateway.Truncate(content, maxHitTextBytes)
		}
		for _, line := range strings.Split(strings.TrimRight(content, "\n"), "\n") {
			b.WriteString("   ")
			b.WriteString(line)
			b.WriteString("\n")
		}
		if cut {
			fmt.Fprintf(&b, "   [content cut at 2 KiB of %d bytes; the structured output has it whole]\n", len(m.Content))
		}
	}
	var res *gateway.Result
	if len(hits) == 0 {
		res = gateway.OkText(fmt.Sprintf("No memories %s.", what))
		res.Message = fmt.Sprintf("No memories %s.", what)
	} else {
		res = gateway.OkText(b.String())
		msg := fmt.Sprintf("%s %s, best first: %d committed", gateway.Plural(len(hits), "memory", "memories"), what, committed)
		if candidates > 0 {
			msg += fmt.Sprintf(", %s of this run awaiting review (not committed yet)", gateway.Plural(candidates, "candidate", "candidates"))
		}
		res.Message = msg + "."
	}
	return res.WithBrief(fmt.Sprintf("Recalled %s (scope %s)", gateway.Plural(len(hits), "memory", "memories"), in.Scope)), out
}
