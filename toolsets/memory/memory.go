// Package memory is the built-in memory toolset: recall_memory and
// write_memory over an external-store contract ([Store]), with the write
// modes of seed 002 ([Mode]):
//
//   - disabled: write_memory is not offered (see [Toolset.Unoffered]);
//     recall still works.
//   - candidate (the default): write_memory appends the memory to the run
//     archive (runs/<run-id>/archive/memory-candidates.jsonl) as a candidate
//     awaiting review; the store is not touched. An operator promotes a
//     run's candidates into the store with `toolgate memory promote RUN-ID`
//     ([Promote]).
//   - external: write_memory writes to the store.
//
// The store is an interface so that any memory system can sit behind the
// tools; package sqlitestore is the embedded default (SQLite with FTS5
// ranking, through a pure-Go driver).
//
// Recall is always scoped (scopes isolate memories: a recall in scope "a"
// never returns a memory of scope "b"), ranked best first and bounded
// (at most [MaxLimit] hits). In candidate mode it also returns the
// candidates of the current run, marked as such, so a model sees what it
// wrote earlier in the run even though it is not committed yet.
package memory

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/toolgate/toolgate/gateway"
)

// Store is the external-store contract (seed 002: "memory via external
// contract"). Implementations must be safe for concurrent use and durable:
// once Write returns nil, the memory survives a crash of the process.
type Store interface {
	// Write stores m and returns it as stored. It assigns ID and Created
	// when they are empty. It is idempotent on m.SourceID when that is set,
	// and on the scope and content: writing the same SourceID twice, or
	// the same content to the same scope (whatever its tags), stores one
	// memory, and the second Write returns the memory stored by the first
	// (whose ID therefore differs from the one the caller proposed, if
	// any). Recall is not filled with copies of one fact.
	Write(ctx context.Context, m Memory) (Memory, error)
	// Recall returns the memories of q.Scope that match q.Text, ranked best
	// first, at most q.Limit (see [ClampLimit]). An empty q.Text (or one
	// with no searchable words) returns the most recent memories of the
	// scope.
	Recall(ctx context.Context, q Query) ([]Hit, error)
	// Close releases the store.
	Close() error
}

// SourceLookup is implemented by stores that can find a memory by its
// SourceID. [Promote] uses it in a dry run to say which candidates are
// already present; without it a dry run cannot tell.
type SourceLookup interface {
	// FindSource returns the memory stored with sourceID, and whether
	// there is one.
	FindSource(ctx context.Context, sourceID string) (Memory, bool, error)
}

// ContentLookup is implemented by stores that can find a memory by its
// scope and content. write_memory in candidate mode uses it to say that
// the store has the memory already; [Promote] in a dry run, to say which
// candidates would add nothing.
type ContentLookup interface {
	// FindContent returns the memory of scope with exactly content, and
	// whether there is one.
	FindContent(ctx context.Context, scope, content string) (Memory, bool, error)
}

// Memory is one memory.
type Memory struct {
	ID      string
	Content string
	Scope   string
	Tags    []string
	Created time.Time
	// SourceID identifies where the memory came from, e.g.
	// "<run-id>/<candidate-id>" when a candidate was promoted. A store
	// keeps at most one memory per SourceID.
	SourceID string
}

// Query is a recall request.
type Query struct {
	// Text is free text from a model. Its words are searched for; any
	// query syntax in it is ignored (see [QueryTerms]).
	Text string
	// Scope is required and exact.
	Scope string
	// Limit bounds the hits: 0 means [DefaultLimit]; other values are
	// clamped to 1..[MaxLimit] (see [ClampLimit]).
	Limit int
}

// Hit is one recall result.
type Hit struct {
	Memory Memory
	// Score is the relevance, higher is better. A store's scale is its
	// own (the embedded store reports the negated FTS5 bm25 rank); a
	// candidate's score is the fraction of query terms it contains (0..1).
	// An empty query scores every hit 0.
	Score float64
	// Committed is true for a memory in the store and false for a
	// candidate of the current run.
	Committed bool
}

// Recall bounds.
const (
	DefaultLimit = 5
	MaxLimit     = 50
)

// ClampLimit returns the number of hits a recall with limit returns: 0 is
// [DefaultLimit], a negative limit is 1 and anything above [MaxLimit] is
// [MaxLimit].
func ClampLimit(limit int) int {
	switch {
	case limit == 0:
		return DefaultLimit
	case limit < 1:
		return 1
	case limit > MaxLimit:
		return MaxLimit
	}
	return limit
}

var scopeRE = regexp.MustCompile(`^[A-Za-z0-9._:-]+$`) // and up to 64 bytes, checked apart

// ValidScope reports whether s is a valid scope: 1 to 64 characters of
// [A-Za-z0-9._:-].
func ValidScope(s string) bool { return len(s) <= 64 && scopeRE.MatchString(s) }

// ErrInvalidScope is returned for a scope that [ValidScope] refuses.
var ErrInvalidScope = errors.New("invalid scope: must be 1-64 characters of [A-Za-z0-9._:-]")

// Tag bounds.
const (
	MaxTags      = 16
	MaxTagLength = 64
)

// NormalizeTags trims the tags, drops empty ones and duplicates (keeping
// the first), and returns a non-nil slice.
func NormalizeTags(tags []string) []string {
	out := make([]string, 0, len(tags))
	seen := make(map[string]bool, len(tags))
	for _, t := range tags {
		t = strings.TrimSpace(t)
		if t == "" || seen[t] {
			continue
		}
		seen[t] = true
		out = append(out, t)
	}
	return out
}

// Validate checks what every store requires of a memory: a valid scope,
// non-blank valid UTF-8 content, and at most [MaxTags] tags of at most
// [MaxTagLength] characters without line breaks.
func (m Memory) Validate() error {
	if !ValidScope(m.Scope) {
		return fmt.Errorf("%w (got %q)", ErrInvalidScope, gateway.Truncate(m.Scope, 80))
	}
	if strings.TrimSpace(m.Content) == "" {
		return errors.New("memory content is empty")
	}
	if !utf8.ValidString(m.Content) {
		return errors.New("memory content is not valid UTF-8")
	}
	if len(m.Tags) > MaxTags {
		return fmt.Errorf("too many tags: %d, at most %d", len(m.Tags), MaxTags)
	}
	for _, t := range m.Tags {
		if t == "" || utf8.RuneCountInString(t) > MaxTagLength || !utf8.ValidString(t) || strings.ContainsAny(t, "\r\n\x00") {
			return fmt.Errorf("invalid tag %q: must be 1-%d characters on one line", gateway.Truncate(t, 80), MaxTagLength)
		}
	}
	return nil
}

// Query term bounds.
const (
	maxTerms = 32
	// MaxTermLength bounds a query term, in characters (runes). A longer
	// word is cut to its first MaxTermLength characters, and a term that
	// long is a prefix: a store matches it against every word that starts
	// with it, so a long word (an identifier, a token) is still found.
	// It is above 64 bytes, the length past which SQLite's porter stemmer
	// leaves words as they are, so such a prefix is never stemmed into
	// something that is not a prefix of the stored word.
	MaxTermLength = 128
)

// QueryTerms splits free text into search terms: maximal runs of letters,
// digits and combining marks, lowercased, deduplicated, at most 32 terms of
// at most [MaxTermLength] characters (a longer word is cut, and the cut
// term is a prefix: see [MaxTermLength]). Everything else (quotes, operators such as `*`,
// `-`, `:`, `(`, `^`) is a separator, so the terms carry no query syntax;
// words like OR, AND, NOT and NEAR become plain terms. A run made only of
// combining marks is dropped.
func QueryTerms(text string) []string {
	var terms []string
	seen := map[string]bool{}
	isWord := func(r rune) bool { return unicode.IsLetter(r) || unicode.IsNumber(r) || unicode.IsMark(r) }
	for _, f := range strings.FieldsFunc(text, func(r rune) bool { return !isWord(r) }) {
		if strings.IndexFunc(f, func(r rune) bool { return unicode.IsLetter(r) || unicode.IsNumber(r) }) < 0 {
			continue
		}
		if utf8.RuneCountInString(f) > MaxTermLength {
			f = string([]rune(f)[:MaxTermLength])
		}
		f = strings.ToLower(f)
		if seen[f] {
			continue
		}
		seen[f] = true
		terms = append(terms, f)
		if len(terms) == maxTerms {
			break
		}
	}
	return terms
}

// maxGrams bounds the substrings [SubstringGrams] returns for one query.
const maxGrams = 32

// unspaced reports whether r belongs to a script written without spaces
// between words (Han, Hiragana, Katakana, Thai, Lao, Khmer, Myanmar), whose
// runs a word tokenizer takes for one word.
func unspaced(r rune) bool {
	return unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana, unicode.Thai, unicode.Lao, unicode.Khmer, unicode.Myanmar)
}

// SubstringGrams returns what a store searches as substrings for the terms
// in a script written without spaces (Chinese, Japanese, Thai, ...), where
// a tokenizer takes a whole run of text for one word, so that a query for
// a word inside it finds it: a term of one or two characters itself, a
// longer one its two-character grams (a common measure for such text).
// Other terms give nothing. The result is deduplicated and bounded.
func SubstringGrams(terms []string) []string {
	var out []string
	seen := map[string]bool{}
	add := func(g string) {
		if !seen[g] && len(out) < maxGrams {
			seen[g] = true
			out = append(out, g)
		}
	}
	for _, t := range terms {
		if strings.IndexFunc(t, unspaced) < 0 {
			continue
		}
		rs := []rune(t)
		if len(rs) <= 2 {
			add(t)
			continue
		}
		for i := 0; i+2 <= len(rs); i++ {
			add(string(rs[i : i+2]))
		}
	}
	return out
}
