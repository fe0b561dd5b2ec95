package discovery

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"unicode"

	_ "modernc.org/sqlite" // registers the "sqlite" driver (FTS5 built in)
)

// Doc is one tool as the index sees it: what a person might search for.
type Doc struct {
	// Name is the tool's served name (what call_tool takes).
	Name string
	// Toolset is the toolset serving it (an upstream's name, "filesystem", ...).
	Toolset     string
	Title       string
	Description string
	// InputSchema is the tool's JSON Schema; the names and descriptions of
	// its top-level properties are indexed.
	InputSchema json.RawMessage
}

// Hit is one search result, best first.
type Hit struct {
	Name    string
	Toolset string
	// Score is SQLite FTS5's BM25 rank, negated so that higher is better;
	// +Inf for the tool a query names exactly.
	Score float64
}

// Index ranks tools for a free-text query with BM25, through SQLite's FTS5
// extension (the modernc.org/sqlite driver the memory store already uses),
// in memory. Ranking is FTS5's own: the index only decides what text each
// column holds and how much each column weighs.
//
// The documents come from a function (the catalog's current tools) and are
// re-read lazily: [Index.Invalidate] marks the index stale (the catalog
// calls it on every change), and the next search rebuilds it. A search
// therefore costs nothing extra on the call path of other tools, and a
// burst of catalog changes costs one rebuild.
type Index struct {
	docs func() []Doc

	stale atomic.Bool
	mu    sync.Mutex // one rebuild or search at a time on the one connection
	db    *sql.DB
	n     int
	// toolsets maps each indexed tool's name to its toolset's, as of the
	// last rebuild.
	toolsets map[string]string
}

// Column weights for bm25(): a word in the tool's name says the most about
// what it does, then its title and its toolset's name, then the
// description; parameter names and descriptions say the least (they
// mention many things a tool only touches). Chosen on the task set in
// e2e/testdata/discovery (see docs/discovery.md), not tuned per query.
const bm25Weights = "5.0, 3.0, 1.0, 1.5, 0.5"

var dbSeq atomic.Int64

// NewIndex returns an index over docs(), built at the first search.
func NewIndex(docs func() []Doc) (*Index, error) {
	// A private in-memory database: one connection, so every statement sees
	// the same database (each new connection to ":memory:" would be empty).
	db, err := sql.Open("sqlite", fmt.Sprintf("file:toolgate-discovery-%d?mode=memory", dbSeq.Add(1)))
	if err != nil {
		return nil, fmt.Errorf("tool search index: %w", err)
	}
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	db.SetConnMaxLifetime(0)
	if _, err := db.Exec(`CREATE VIRTUAL TABLE tools USING fts5(
		name, title, toolset, description, params,
		tokenize = 'porter unicode61 remove_diacritics 2')`); err != nil {
		db.Close()
		return nil, fmt.Errorf("tool search index (SQLite FTS5): %w", err)
	}
	// The column weights as the table's default rank, so that ORDER BY
	// rank LIMIT n lets FTS5 keep only the best n rows as it scores.
	if _, err := db.Exec(`INSERT INTO tools(tools, rank) VALUES('rank', 'bm25(` + bm25Weights + `)')`); err != nil {
		db.Close()
		return nil, fmt.Errorf("tool search index (SQLite FTS5): %w", err)
	}
	x := &Index{docs: docs, db: db}
	x.stale.Store(true)
	return x, nil
}

// Invalidate marks the index stale; the next search rebuilds it.
func (x *Index) Invalidate() { x.stale.Store(true) }

// Close releases the index.
func (x *Index) Close() error { return x.db.Close() }

// Len is the number of tools indexed at the last rebuild.
func (x *Index) Len() int {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.n
}

// rebuild replaces the index's rows with docs(). Callers hold x.mu.
func (x *Index) rebuild(ctx context.Context) error {
	docs := x.docs()
	tx, err := x.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `DELETE FROM tools`); err != nil {
		return err
	}
	ins, err := tx.PrepareContext(ctx, `INSERT INTO tools(name, title, toolset, description, params) VALUES (?, ?, ?, ?, ?)`)
	if err != nil {
		return err
	}
	defer ins.Close()
	toolsets := make(map[string]string, len(docs))
	for _, d := range docs {
		toolsets[d.Name] = d.Toolset
		if _, err := ins.ExecContext(ctx, d.Name+" "+words(d.Name), d.Title, words(d.Toolset), d.Description, paramText(d.InputSchema)); err != nil {
			return err
		}
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	x.n = len(docs)
	x.toolsets = toolsets
	return nil
}

// Search returns up to limit tools for the query, best first, keeping only
// those keep admits (nil keeps all). A query that is a tool's name returns
// that tool first, then the tools ranked for the name's words. A query
// with no searchable word that names no tool returns no hits.
func (x *Index) Search(ctx context.Context, query string, limit int, keep func(name string) bool) ([]Hit, error) {
	match := matchExpr(query)
	name := strings.TrimSpace(query)
	if match == "" && name == "" || limit <= 0 {
		return nil, nil
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.stale.Swap(false) {
		if err := x.rebuild(ctx); err != nil {
			x.stale.Store(true)
			return nil, fmt.Errorf("rebuilding the tool search index: %w", err)
		}
	}
	var hits []Hit
	if ts, ok := x.toolsets[name]; ok && (keep == nil || keep(name)) {
		// The caller knows the tool it wants: BM25 alone can rank it
		// behind tools with more of its words (kubectl_get behind
		// kubectl_reconnect, "get" being no word to search by).
		hits = append(hits, Hit{Name: name, Toolset: ts, Score: math.Inf(1)})
		if match == "" || limit == 1 {
			return hits, nil
		}
		admit := keep
		keep = func(n string) bool { return n != name && (admit == nil || admit(n)) }
	}
	if match == "" {
		return hits, nil
	}
	// Fetch more than asked when some hits may be filtered out, and page
	// on while the caller's filter leaves too few: a small profile's
	// tools can rank behind hundreds of others.
	fetch := limit
	if keep != nil {
		fetch = limit * 20
	}
	for offset := 0; ; offset += fetch {
		n, err := x.page(ctx, match, fetch, offset, limit, keep, &hits)
		if err != nil {
			return nil, err
		}
		if keep == nil || len(hits) >= limit || n < fetch {
			return hits, nil
		}
	}
}

// page appends to hits the rows [offset, offset+fetch) of the ranking that
// keep admits, up to limit hits in all, and says how many rows it read.
func (x *Index) page(ctx context.Context, match string, fetch, offset, limit int, keep func(string) bool, hits *[]Hit) (int, error) {
	rows, err := x.db.QueryContext(ctx,
		`SELECT name, rank FROM tools WHERE tools MATCH ? ORDER BY rank LIMIT ? OFFSET ?`, match, fetch, offset)
	if err != nil {
		return 0, fmt.Errorf("tool search: %w", err)
	}
	defer rows.Close()
	n := 0
	for len(*hits) < limit && rows.Next() {
		n++
		var h Hit
		var nameCol string
		if err := rows.Scan(&nameCol, &h.Score); err != nil {
			return n, err
		}
		// The name column holds the name, then its words; the toolset
		// column only the toolset's words ("chrome devtools").
		h.Name, _, _ = strings.Cut(nameCol, " ")
		h.Toolset = x.toolsets[h.Name]
		h.Score = -h.Score
		if keep == nil || keep(h.Name) {
			*hits = append(*hits, h)
		}
	}
	return n, rows.Err()
}

// words splits an identifier into lower-case words: "API-post-page" ->
// "api post page", "getFileInfo" -> "get file info".
func words(s string) string {
	var b strings.Builder
	prevLower := false
	for _, r := range s {
		switch {
		case unicode.IsUpper(r):
			if prevLower {
				b.WriteByte(' ')
			}
			b.WriteRune(unicode.ToLower(r))
			prevLower = false
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
			prevLower = true
		default:
			b.WriteByte(' ')
			prevLower = false
		}
	}
	return strings.Join(strings.Fields(b.String()), " ")
}

// paramText is the names and descriptions of a schema's top-level
// properties.
func paramText(schema json.RawMessage) string {
	var s struct {
		Properties map[string]struct {
			Description string `json:"description"`
		} `json:"properties"`
	}
	if json.Unmarshal(schema, &s) != nil {
		return ""
	}
	var b strings.Builder
	for name, p := range s.Properties {
		b.WriteString(words(name))
		b.WriteString(". ")
		b.WriteString(p.Description)
		b.WriteString(" ")
	}
	return b.String()
}

// stopWords are words of a request that say nothing about which tool
// does it.
var stopWords = map[string]bool{
	"a": true, "an": true, "the": true, "and": true, "or": true, "of": true, "to": true, "in": true,
	"on": true, "for": true, "from": true, "with": true, "by": true, "at": true, "into": true, "over": true,
	"my": true, "our": true, "me": true, "i": true, "we": true, "you": true, "your": true, "it": true, "its": true,
	"this": true, "that": true, "these": true, "those": true, "is": true, "are": true, "be": true, "do": true,
	"please": true, "can": true, "could": true, "would": true, "should": true, "will": true, "now": true,
	"all": true, "some": true, "any": true, "what": true, "which": true, "how": true, "give": true, "show": true,
	"want": true, "need": true, "let": true, "us": true, "there": true, "here": true, "then": true, "so": true,
	"tool": true, "tools": true, "use": true, "using": true, "about": true, "new": true, "get": true,
}

// synonyms widen a request's words with the words tools use for the same
// thing. The list is short and generic (file systems, code hosting, data
// stores), not tuned per task: tools describe themselves in a developer's
// words and people ask in their own.
var synonyms = map[string][]string{
	"make":     {"create"},
	"folder":   {"directory"},
	"folders":  {"directory"},
	"dir":      {"directory"},
	"bug":      {"issue"},
	"bugs":     {"issue"},
	"ticket":   {"issue"},
	"pr":       {"pull", "request"},
	"repo":     {"repository"},
	"repos":    {"repository"},
	"remove":   {"delete"},
	"erase":    {"delete"},
	"rename":   {"move"},
	"remember": {"memory", "store"},
	"recall":   {"memory"},
	"lookup":   {"search"},
	"find":     {"search"},
	"website":  {"site", "url"},
	"webpage":  {"page", "url"},
}

// matchExpr turns free text into an FTS5 query: every word that can say
// something, quoted (so no word is read as FTS5 syntax), joined with OR
// (BM25 then ranks tools matching more and rarer words first).
func matchExpr(q string) string {
	var terms []string
	seen := map[string]bool{}
	for _, w := range strings.Fields(words(q)) {
		if len(w) < 2 || stopWords[w] || seen[w] {
			continue
		}
		seen[w] = true
		terms = append(terms, `"`+w+`"`)
		for _, s := range synonyms[w] {
			if !seen[s] {
				seen[s] = true
				terms = append(terms, `"`+s+`"`)
			}
		}
		if len(terms) >= 32 {
			break
		}
	}
	return strings.Join(terms, " OR ")
}
