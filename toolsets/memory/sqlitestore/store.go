// Package sqlitestore is the embedded default [memory.Store]: one SQLite
// database file, through modernc.org/sqlite (pure Go, no cgo), with an FTS5
// full-text index ranked by bm25.
//
// # Durability and concurrency
//
// Every connection runs with journal_mode=WAL, synchronous=FULL (the WAL is
// fsynced at every commit, so a Write that returned nil survives a crash of
// the process, kill -9 included, and of the machine) and busy_timeout=5000
// (a writer waits up to 5 s for another one instead of failing), and write
// transactions begin IMMEDIATE (they take the write lock at BEGIN, so two
// writers never deadlock upgrading a read lock). Within one process, writes
// go through a single connection (they are serialized anyway; this avoids
// busy-waiting between goroutines) and reads through a pool of read-only
// (query_only) connections that WAL lets run alongside the writer. Several
// toolgate processes can therefore share one file.
//
// A new file is created with mode 0600, and missing parent directories with
// 0700, since memories may hold private data.
//
// # Schema
//
// schema_version holds the schema version (1); memories holds the rows
// (seq INTEGER PRIMARY KEY AUTOINCREMENT, id, scope, content, tags as a JSON
// array, created_ns, source_id with a unique index); memories_fts is an
// external-content FTS5 table over content and tags, kept in step by
// triggers, tokenized with "porter unicode61 remove_diacritics 2" (English
// stemming, case and accent folding). Opening a database written by a newer
// schema version is an error.
//
// # Ranking
//
// A query's words ([memory.QueryTerms]) are each quoted and joined with OR,
// so no input can be FTS5 syntax (a long word cut to
// [memory.MaxTermLength] characters is a prefix query, see [MatchExpr]); hits are ordered by bm25 with tags
// weighted twice as much as content (then newest first), and reported with
// Score = -bm25 (higher is better). Scope is an exact filter. The
// tokenizer takes a run of text in a script written without spaces
// (Chinese, Japanese, Thai, ...) for one word, so when the query has such
// terms and the index found fewer than the limit, the memories that
// contain them or their two-character grams as substrings
// ([memory.SubstringGrams]) follow, the most grams first, with Score 0. An empty
// query, or one without words, returns the newest memories of the scope
// with Score 0.
package sqlitestore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	_ "modernc.org/sqlite" // registers the "sqlite" driver

	"github.com/toolgate/toolgate/toolsets/memory"
)

// BusyTimeout is how long a write waits for another writer (another
// process, typically) before failing.
const BusyTimeout = 5 * time.Second

// schemaVersion is the schema this package writes.
const schemaVersion = 1

// Store is the embedded memory store. It is safe for concurrent use, and
// several Stores (in one process or many) may use the same file.
type Store struct {
	path string
	w    *sql.DB // one connection: all writes
	r    *sql.DB // read-only connections

	closeOnce sync.Once
	closeErr  error
}

var _ memory.Store = (*Store)(nil)
var _ memory.SourceLookup = (*Store)(nil)

// Open opens the store at path, creating the file (mode 0600) and its
// parent directories (0700) if needed, and the schema if the file is new.
func Open(path string) (*Store, error) {
	if path == "" {
		return nil, errors.New("memory store: empty path")
	}
	if strings.ContainsAny(path, "?#") {
		return nil, fmt.Errorf("memory store %q: the path may not contain '?' or '#'", path)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("memory store %q: %w", path, err)
	}
	if err := os.MkdirAll(filepath.Dir(abs), 0o700); err != nil {
		return nil, fmt.Errorf("memory store: creating directory: %w", err)
	}
	// Create the file ourselves so that it gets private permissions.
	f, err := os.OpenFile(abs, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("memory store: %w", err)
	}
	f.Close()

	busy := fmt.Sprint(BusyTimeout.Milliseconds())
	w, err := sql.Open("sqlite", abs+"?_busy_timeout="+busy+"&_journal_mode=WAL&_synchronous=FULL&_txlock=immediate")
	if err != nil {
		return nil, fmt.Errorf("memory store %s: %w", abs, err)
	}
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	w.SetConnMaxLifetime(0)
	w.SetConnMaxIdleTime(0)
	s := &Store{path: abs, w: w}
	ctx := context.Background()
	if err := s.init(ctx); err != nil {
		w.Close()
		return nil, fmt.Errorf("memory store %s: %w", abs, err)
	}
	r, err := sql.Open("sqlite", abs+"?_busy_timeout="+busy+"&_query_only=1")
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("memory store %s: %w", abs, err)
	}
	r.SetMaxIdleConns(4)
	s.r = r
	if err := r.PingContext(ctx); err != nil {
		s.Close()
		return nil, fmt.Errorf("memory store %s: %w", abs, err)
	}
	return s, nil
}

// Path is the database file.
func (s *Store) Path() string { return s.path }

// schemaV1 creates version 1 of the schema.
var schemaV1 = []string{
	`CREATE TABLE memories (
		seq        INTEGER PRIMARY KEY AUTOINCREMENT,
		id         TEXT    NOT NULL UNIQUE,
		scope      TEXT    NOT NULL,
		content    TEXT    NOT NULL,
		tags       TEXT    NOT NULL DEFAULT '[]',
		created_ns INTEGER NOT NULL,
		source_id  TEXT
	)`,
	`CREATE UNIQUE INDEX memories_source_id ON memories(source_id)`,
	`CREATE INDEX memories_scope_created ON memories(scope, created_ns DESC, seq DESC)`,
	`CREATE VIRTUAL TABLE memories_fts USING fts5(
		content, tags,
		content='memories', content_rowid='seq',
		tokenize='porter unicode61 remove_diacritics 2'
	)`,
	`CREATE TRIGGER memories_ai AFTER INSERT ON memories BEGIN
		INSERT INTO memories_fts(rowid, content, tags) VALUES (new.seq, new.content, new.tags);
	END`,
	`CREATE TRIGGER memories_ad AFTER DELETE ON memories BEGIN
		INSERT INTO memories_fts(memories_fts, rowid, content, tags) VALUES ('delete', old.seq, old.content, old.tags);
	END`,
	`CREATE TRIGGER memories_au AFTER UPDATE ON memories BEGIN
		INSERT INTO memories_fts(memories_fts, rowid, content, tags) VALUES ('delete', old.seq, old.content, old.tags);
		INSERT INTO memories_fts(rowid, content, tags) VALUES (new.seq, new.content, new.tags);
	END`,
}

// init checks the journal mode and creates or checks the schema, in one
// IMMEDIATE transaction so that processes opening a new file at the same
// time do not race.
func (s *Store) init(ctx context.Context) error {
	var mode string
	if err := s.w.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil {
		return err
	}
	if !strings.EqualFold(mode, "wal") {
		return fmt.Errorf("cannot use WAL journal mode (got %q); is the file on a network file system?", mode)
	}
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)`); err != nil {
		return err
	}
	var nv sql.NullInt64
	if err := tx.QueryRowContext(ctx, `SELECT max(version) FROM schema_version`).Scan(&nv); err != nil {
		return err
	}
	v := int(nv.Int64)
	switch {
	case v == schemaVersion:
		return tx.Commit()
	case v > schemaVersion:
		return fmt.Errorf("the database has schema version %d, newer than this toolgate understands (%d); upgrade toolgate", v, schemaVersion)
	}
	// v == 0: a new database.
	for _, stmt := range schemaV1 {
		if _, err := tx.ExecContext(ctx, stmt); err != nil {
			if strings.Contains(err.Error(), "no such module: fts5") {
				return fmt.Errorf("the SQLite driver lacks FTS5: %w", err)
			}
			return fmt.Errorf("creating schema: %w", err)
		}
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO schema_version(version) VALUES (?)`, schemaVersion); err != nil {
		return err
	}
	return tx.Commit()
}

// Write implements [memory.Store]. It validates m ([memory.Memory.Validate],
// tags normalized), keeps a proposed ID and Created (assigning a UUIDv7 and
// the current time when they are empty), and is idempotent on SourceID and
// on scope and content: if a memory with m.SourceID exists, or one of
// m.Scope with m.Content, it is returned unchanged and nothing is written.
// When Write returns nil the memory is committed and synced.
func (s *Store) Write(ctx context.Context, m memory.Memory) (memory.Memory, error) {
	m.Tags = memory.NormalizeTags(m.Tags)
	if err := m.Validate(); err != nil {
		return memory.Memory{}, err
	}
	if m.ID == "" {
		id, err := uuid.NewV7()
		if err != nil {
			return memory.Memory{}, err
		}
		m.ID = id.String()
	}
	if m.Created.IsZero() {
		m.Created = time.Now()
	}
	m.Created = m.Created.UTC()
	tags, err := json.Marshal(m.Tags)
	if err != nil {
		return memory.Memory{}, err
	}
	var source any
	if m.SourceID != "" {
		source = m.SourceID
	}
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return memory.Memory{}, fmt.Errorf("memory store: %w", err)
	}
	defer tx.Rollback()
	// One memory per scope and content: what the scope already holds is
	// returned, as for a SourceID already present. A promoted candidate
	// is looked for by its SourceID first, so that promoting it again
	// reports it as itself.
	got, ok, err := findSource(ctx, tx, m.SourceID)
	if err == nil && !ok {
		got, ok, err = findContent(ctx, tx, m.Scope, m.Content)
	}
	if err != nil {
		return memory.Memory{}, err
	}
	if ok {
		return got, tx.Commit()
	}
	// The transaction is IMMEDIATE (_txlock): no other writer can store
	// the same memory between the lookups and the insert.
	if _, err := tx.ExecContext(ctx,
		`INSERT INTO memories(id, scope, content, tags, created_ns, source_id) VALUES (?, ?, ?, ?, ?, ?)`,
		m.ID, m.Scope, m.Content, string(tags), m.Created.UnixNano(), source); err != nil {
		return memory.Memory{}, fmt.Errorf("memory store: writing memory: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return memory.Memory{}, fmt.Errorf("memory store: committing: %w", err)
	}
	return m, nil
}

const columns = `m.id, m.scope, m.content, m.tags, m.created_ns, m.source_id`

type scanner interface {
	Scan(dest ...any) error
}

func scanMemory(row scanner, extra ...any) (memory.Memory, error) {
	var (
		m       memory.Memory
		tags    string
		created int64
		source  sql.NullString
	)
	dest := append([]any{&m.ID, &m.Scope, &m.Content, &tags, &created, &source}, extra...)
	if err := row.Scan(dest...); err != nil {
		return m, err
	}
	if err := json.Unmarshal([]byte(tags), &m.Tags); err != nil || m.Tags == nil {
		m.Tags = []string{}
	}
	m.Created = time.Unix(0, created).UTC()
	m.SourceID = source.String
	return m, nil
}

type querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

func findSource(ctx context.Context, q querier, sourceID string) (memory.Memory, bool, error) {
	if sourceID == "" {
		return memory.Memory{}, false, nil
	}
	m, err := scanMemory(q.QueryRowContext(ctx, `SELECT `+columns+` FROM memories m WHERE m.source_id = ?`, sourceID))
	if errors.Is(err, sql.ErrNoRows) {
		return memory.Memory{}, false, nil
	}
	if err != nil {
		return memory.Memory{}, false, fmt.Errorf("memory store: %w", err)
	}
	return m, true, nil
}

func findContent(ctx context.Context, q querier, scope, content string) (memory.Memory, bool, error) {
	// memories_scope_created narrows the scan to the scope.
	m, err := scanMemory(q.QueryRowContext(ctx, `SELECT `+columns+` FROM memories m WHERE m.scope = ? AND m.content = ? ORDER BY m.seq LIMIT 1`, scope, content))
	if errors.Is(err, sql.ErrNoRows) {
		return memory.Memory{}, false, nil
	}
	if err != nil {
		return memory.Memory{}, false, fmt.Errorf("memory store: %w", err)
	}
	return m, true, nil
}

// FindContent implements [memory.ContentLookup].
func (s *Store) FindContent(ctx context.Context, scope, content string) (memory.Memory, bool, error) {
	return findContent(ctx, s.r, scope, content)
}

// FindSource implements [memory.SourceLookup].
func (s *Store) FindSource(ctx context.Context, sourceID string) (memory.Memory, bool, error) {
	return findSource(ctx, s.r, sourceID)
}

// Get returns the memory with the given ID, and whether there is one.
func (s *Store) Get(ctx context.Context, id string) (memory.Memory, bool, error) {
	m, err := scanMemory(s.r.QueryRowContext(ctx, `SELECT `+columns+` FROM memories m WHERE m.id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return memory.Memory{}, false, nil
	}
	if err != nil {
		return memory.Memory{}, false, fmt.Errorf("memory store: %w", err)
	}
	return m, true, nil
}

// Count returns the number of memories in scope, or in every scope when
// scope is empty.
func (s *Store) Count(ctx context.Context, scope string) (int, error) {
	var n int
	var err error
	if scope == "" {
		err = s.r.QueryRowContext(ctx, `SELECT count(*) FROM memories`).Scan(&n)
	} else {
		err = s.r.QueryRowContext(ctx, `SELECT count(*) FROM memories WHERE scope = ?`, scope).Scan(&n)
	}
	if err != nil {
		return 0, fmt.Errorf("memory store: %w", err)
	}
	return n, nil
}

// Recall implements [memory.Store].
func (s *Store) Recall(ctx context.Context, q memory.Query) ([]memory.Hit, error) {
	if !memory.ValidScope(q.Scope) {
		return nil, fmt.Errorf("%w (got %q)", memory.ErrInvalidScope, q.Scope)
	}
	limit := memory.ClampLimit(q.Limit)
	var (
		rows *sql.Rows
		err  error
	)
	terms := memory.QueryTerms(q.Text)
	match := MatchExpr(terms)
	if match == "" {
		rows, err = s.r.QueryContext(ctx,
			`SELECT `+columns+`, 0.0 FROM memories m WHERE m.scope = ?
			 ORDER BY m.created_ns DESC, m.seq DESC LIMIT ?`, q.Scope, limit)
	} else {
		rows, err = s.r.QueryContext(ctx,
			`SELECT `+columns+`, -bm25(memories_fts, 1.0, 2.0) AS score
			 FROM memories_fts JOIN memories m ON m.seq = memories_fts.rowid
			 WHERE memories_fts MATCH ? AND m.scope = ?
			 ORDER BY bm25(memories_fts, 1.0, 2.0), m.created_ns DESC, m.seq DESC LIMIT ?`, match, q.Scope, limit)
	}
	if err != nil {
		return nil, fmt.Errorf("memory store: recall: %w", err)
	}
	hits, err := scanHits(rows)
	if err != nil {
		return nil, err
	}
	if grams := memory.SubstringGrams(terms); len(grams) > 0 && len(hits) < limit {
		more, err := s.recallGrams(ctx, q.Scope, grams, hits, limit-len(hits))
		if err != nil {
			return nil, err
		}
		hits = append(hits, more...)
	}
	return hits, nil
}

// recallGrams returns up to n memories of scope, not among have, whose
// content or tags contain some of grams as substrings, the most grams
// first, then the newest, with Score 0. It finds the words that the
// tokenizer cannot isolate in a script written without spaces (see
// [memory.SubstringGrams]).
func (s *Store) recallGrams(ctx context.Context, scope string, grams []string, have []memory.Hit, n int) ([]memory.Hit, error) {
	var (
		matched []string
		args    []any
	)
	for _, g := range grams {
		pat := "%" + likeEscaper.Replace(g) + "%"
		matched = append(matched, `(m.content LIKE ? ESCAPE '\' OR m.tags LIKE ? ESCAPE '\')`)
		args = append(args, pat, pat)
	}
	args = append(args, scope)
	var exclude string
	if len(have) > 0 {
		exclude = " AND m.id NOT IN (" + strings.TrimSuffix(strings.Repeat("?,", len(have)), ",") + ")"
		for _, h := range have {
			args = append(args, h.Memory.ID)
		}
	}
	args = append(args, n)
	rows, err := s.r.QueryContext(ctx,
		`SELECT `+columns+`, 0.0 FROM (SELECT *, (`+strings.Join(matched, " + ")+`) AS grams FROM memories m) m
		 WHERE m.grams > 0 AND m.scope = ?`+exclude+`
		 ORDER BY m.grams DESC, m.created_ns DESC, m.seq DESC LIMIT ?`, args...)
	if err != nil {
		return nil, fmt.Errorf("memory store: recall: %w", err)
	}
	return scanHits(rows)
}

// scanHits reads a recall's rows (the memory's columns, then its score) as
// hits, and closes them.
func scanHits(rows *sql.Rows) ([]memory.Hit, error) {
	defer rows.Close()
	hits := []memory.Hit{}
	for rows.Next() {
		var score float64
		m, err := scanMemory(rows, &score)
		if err != nil {
			return nil, fmt.Errorf("memory store: recall: %w", err)
		}
		hits = append(hits, memory.Hit{Memory: m, Score: score, Committed: true})
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("memory store: recall: %w", err)
	}
	return hits, nil
}

// likeEscaper escapes LIKE's wildcards for ESCAPE '\'.
var likeEscaper = strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)

// MatchExpr turns search terms into an FTS5 MATCH expression that cannot be
// a syntax error: every term is a double-quoted string (a `"` inside is
// doubled, as FTS5 requires), and the strings are joined with OR. A term of
// [memory.MaxTermLength] characters or more (a long word that
// [memory.QueryTerms] cut) is a prefix query ("term"*), so that it finds
// the whole word. No terms give "".
func MatchExpr(terms []string) string {
	var b strings.Builder
	for _, t := range terms {
		if t == "" {
			continue
		}
		if b.Len() > 0 {
			b.WriteString(" OR ")
		}
		b.WriteByte('"')
		b.WriteString(strings.ReplaceAll(t, `"`, `""`))
		b.WriteByte('"')
		if utf8.RuneCountInString(t) >= memory.MaxTermLength {
			b.WriteByte('*')
		}
	}
	return b.String()
}

// IntegrityCheck runs PRAGMA integrity_check (which includes the FTS5
// index's own check) and the FTS5 'integrity-check' command with rank=1
// (the index agrees with the memories table), and returns nil when both
// pass. Nothing is modified.
//
// It runs on a new connection, closed afterwards: with SQLite 3.54.1 (the
// version in modernc.org/sqlite v1.61.1), PRAGMA integrity_check on a
// connection that ran FTS5 queries before another connection wrote
// reports a false "fts5: corruption found reading blob" (its cached index
// structure is not refreshed for the check), although queries on that
// connection see the current index and a fresh connection finds no fault.
func (s *Store) IntegrityCheck(ctx context.Context) error {
	db, err := sql.Open("sqlite", s.path+"?_busy_timeout="+fmt.Sprint(BusyTimeout.Milliseconds()))
	if err != nil {
		return err
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	rows, err := db.QueryContext(ctx, `PRAGMA integrity_check`)
	if err != nil {
		return err
	}
	defer rows.Close()
	var msgs []string
	for rows.Next() {
		var m string
		if err := rows.Scan(&m); err != nil {
			return err
		}
		msgs = append(msgs, m)
	}
	if err := rows.Err(); err != nil {
		return err
	}
	rows.Close()
	if len(msgs) != 1 || msgs[0] != "ok" {
		return fmt.Errorf("memory store %s: integrity check failed: %s", s.path, strings.Join(msgs, "; "))
	}
	if _, err := db.ExecContext(ctx, `INSERT INTO memories_fts(memories_fts, rank) VALUES ('integrity-check', 1)`); err != nil {
		return fmt.Errorf("memory store %s: full-text index check failed: %w", s.path, err)
	}
	return nil
}

// Close implements [memory.Store]. It is safe to call more than once.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		var errs []error
		if s.r != nil {
			errs = append(errs, s.r.Close())
		}
		errs = append(errs, s.w.Close())
		s.closeErr = errors.Join(errs...)
	})
	return s.closeErr
}
