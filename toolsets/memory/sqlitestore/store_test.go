package sqlitestore

import (
	"bufio"
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/toolgate/toolgate/toolsets/memory"
)

// crashChildEnv makes the test binary run crashChild instead of the tests
// (see TestCrashDurability).
const crashChildEnv = "TOOLGATE_SQLITESTORE_CRASH_CHILD"

func TestMain(m *testing.M) {
	if path := os.Getenv(crashChildEnv); path != "" {
		os.Exit(crashChild(path))
	}
	os.Exit(m.Run())
}

// crashChild writes memories to the store at path until it is killed,
// printing each ID to stdout once Write has returned (acknowledged).
func crashChild(path string) int {
	s, err := Open(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, "open:", err)
		return 2
	}
	ctx := context.Background()
	for i := 0; i < 100000; i++ {
		m, err := s.Write(ctx, memory.Memory{
			Scope:   "crash",
			Content: fmt.Sprintf("crash memory number %d %s", i, strings.Repeat("padding ", i%50)),
			Tags:    []string{"crash", fmt.Sprint(i)},
		})
		if err != nil {
			fmt.Fprintln(os.Stderr, "write:", err)
			return 3
		}
		fmt.Println(m.ID)
	}
	return 0
}

func open(t testing.TB, path string) *Store {
	t.Helper()
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func newStore(t testing.TB) *Store {
	t.Helper()
	return open(t, filepath.Join(t.TempDir(), "sub", "dir", "memory.db"))
}

func write(t testing.TB, s *Store, scope, content string, tags ...string) memory.Memory {
	t.Helper()
	m, err := s.Write(context.Background(), memory.Memory{Scope: scope, Content: content, Tags: tags})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func recall(t testing.TB, s *Store, scope, text string, limit int) []memory.Hit {
	t.Helper()
	hits, err := s.Recall(context.Background(), memory.Query{Text: text, Scope: scope, Limit: limit})
	if err != nil {
		t.Fatalf("Recall(%q, %q): %v", scope, text, err)
	}
	return hits
}

func ids(hits []memory.Hit) []string {
	var out []string
	for _, h := range hits {
		out = append(out, h.Memory.ID)
	}
	return out
}

// TestFTS5Available checks that the driver has FTS5, which the store needs
// (modernc.org/sqlite is built with SQLITE_ENABLE_FTS5).
func TestFTS5Available(t *testing.T) {
	db, err := sql.Open("sqlite", ":memory:")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var on int
	if err := db.QueryRow(`SELECT sqlite_compileoption_used('ENABLE_FTS5')`).Scan(&on); err != nil {
		t.Fatal(err)
	}
	if on != 1 {
		t.Fatal("modernc.org/sqlite was built without FTS5")
	}
	if _, err := db.Exec(`CREATE VIRTUAL TABLE t USING fts5(x, tokenize='porter unicode61 remove_diacritics 2')`); err != nil {
		t.Fatal(err)
	}
}

func TestOpenCreatesPrivateFileInWALMode(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "a", "b", "memory.db")
	s := open(t, path)
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if perm := fi.Mode().Perm(); perm != 0o600 {
		t.Errorf("file mode %v, want 0600", perm)
	}
	var mode string
	var sync, busy int
	if err := s.w.QueryRow(`PRAGMA journal_mode`).Scan(&mode); err != nil {
		t.Fatal(err)
	}
	if err := s.w.QueryRow(`PRAGMA synchronous`).Scan(&sync); err != nil {
		t.Fatal(err)
	}
	if err := s.w.QueryRow(`PRAGMA busy_timeout`).Scan(&busy); err != nil {
		t.Fatal(err)
	}
	if mode != "wal" || sync != 2 || busy != 5000 {
		t.Errorf("journal_mode=%s synchronous=%d busy_timeout=%d, want wal 2 (FULL) 5000", mode, sync, busy)
	}
	var v int
	if err := s.r.QueryRow(`SELECT version FROM schema_version`).Scan(&v); err != nil || v != schemaVersion {
		t.Errorf("schema version %d, %v", v, err)
	}
	// The read pool cannot write.
	if _, err := s.r.Exec(`DELETE FROM memories`); err == nil {
		t.Error("read connection accepted a write")
	}
	if _, err := Open(filepath.Join(dir, "x?mode=ro")); err == nil {
		t.Error("Open accepted a path with '?'")
	}
}

func TestNewerSchemaIsRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "memory.db")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.w.Exec(`UPDATE schema_version SET version = 99`); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if _, err := Open(path); err == nil || !strings.Contains(err.Error(), "schema version 99") {
		t.Fatalf("Open of a newer schema: %v", err)
	}
}

func TestRankingMoreMatchingTermsFirst(t *testing.T) {
	s := newStore(t)
	one := write(t, s, "p", "The deploy script lives in the ops repository.")
	three := write(t, s, "p", "To deploy to staging, run the canary script and watch the dashboard.")
	two := write(t, s, "p", "Staging uses a separate database from production.")
	write(t, s, "p", "Lunch is at noon.")

	hits := recall(t, s, "p", "deploy staging canary", 10)
	if got := ids(hits); len(got) != 3 || got[0] != three.ID {
		t.Fatalf("hits %v, want %s (3 terms) first of 3", got, three.ID)
	}
	for i := 1; i < len(hits); i++ {
		if hits[i].Score > hits[i-1].Score {
			t.Errorf("scores not descending: %v", hits)
		}
	}
	if hits[0].Score <= 0 || !hits[0].Committed {
		t.Errorf("hit %+v: want a positive score, committed", hits[0])
	}
	_ = one
	_ = two

	// Stemming: "deploying" finds "deploy".
	if got := recall(t, s, "p", "deploying", 10); len(got) != 2 {
		t.Errorf("stemmed query found %d, want 2", len(got))
	}
	// Tags are searched too.
	tagged := write(t, s, "p", "Remember this.", "kubernetes")
	if got := ids(recall(t, s, "p", "Kubernetes", 10)); len(got) != 1 || got[0] != tagged.ID {
		t.Errorf("tag search: %v", got)
	}
}

func TestScopeIsolation(t *testing.T) {
	s := newStore(t)
	a := write(t, s, "a", "shared secret word zebra")
	b := write(t, s, "b", "shared secret word zebra")
	write(t, s, "a.b", "zebra in a look-alike scope")
	for _, q := range []string{"zebra", "", "shared secret word"} {
		if got := ids(recall(t, s, "a", q, 50)); len(got) != 1 || got[0] != a.ID {
			t.Errorf("scope a, query %q: %v, want only %s", q, got, a.ID)
		}
		if got := ids(recall(t, s, "b", q, 50)); len(got) != 1 || got[0] != b.ID {
			t.Errorf("scope b, query %q: %v, want only %s", q, got, b.ID)
		}
	}
	if got := recall(t, s, "c", "zebra", 50); len(got) != 0 {
		t.Errorf("empty scope c returned %v", got)
	}
	for _, bad := range []string{"", "a b", strings.Repeat("x", 65), "a/b", "%"} {
		if _, err := s.Recall(context.Background(), memory.Query{Scope: bad}); err == nil {
			t.Errorf("Recall accepted scope %q", bad)
		}
		if _, err := s.Write(context.Background(), memory.Memory{Scope: bad, Content: "x"}); err == nil {
			t.Errorf("Write accepted scope %q", bad)
		}
	}
}

func TestLimitClamp(t *testing.T) {
	s := newStore(t)
	for i := range 60 {
		write(t, s, "p", fmt.Sprintf("note %d about limits", i))
	}
	for _, tc := range []struct{ limit, want int }{
		{0, memory.DefaultLimit}, {-3, 1}, {1, 1}, {7, 7}, {50, 50}, {51, 50}, {1000, 50},
	} {
		for _, q := range []string{"", "limits"} {
			if got := len(recall(t, s, "p", q, tc.limit)); got != tc.want {
				t.Errorf("limit %d, query %q: %d hits, want %d", tc.limit, q, got, tc.want)
			}
		}
	}
}

func TestEmptyQueryReturnsMostRecent(t *testing.T) {
	s := newStore(t)
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var want []string
	for i := range 5 {
		m, err := s.Write(context.Background(), memory.Memory{Scope: "p", Content: fmt.Sprint("memory ", i), Created: base.Add(time.Duration(i) * time.Hour)})
		if err != nil {
			t.Fatal(err)
		}
		want = append([]string{m.ID}, want...)
	}
	for _, q := range []string{"", "   ", `"*"`, "-:"} {
		if got := ids(recall(t, s, "p", q, 3)); strings.Join(got, ",") != strings.Join(want[:3], ",") {
			t.Errorf("query %q: %v, want newest first %v", q, got, want[:3])
		}
	}
}

func TestHostileQueriesNeverError(t *testing.T) {
	s := newStore(t)
	write(t, s, "p", `He said "NEAR(a b)" OR -x: café naïve 日本語 emoji 🚀 col:val a*b ^start`, "tag:x")
	queries := []string{
		``, ` `, `"`, `""`, `"""`, `*`, `**`, `a*`, `*a`, `NEAR(`, `NEAR(a b`, `NEAR(a b, 2)`, `NEAR`,
		`OR`, `AND`, `NOT`, `a OR`, `OR a`, `a AND NOT b`, `-`, `--x`, `-x`, `:`, `a:b`, `content:x`, `tags:`,
		`{content tags}: x`, `^`, `^x`, `(`, `)`, `(a`, `a)`, `+`, `a + b`, `'`, `'; DROP TABLE memories; --`,
		`\`, `\"`, `%`, `_`, `[a]`, `{}`, `café`, `CAFE`, `naïve`, `日本語`, `🚀`, `🚀🚀 rocket`, "e\u0301",
		"\u0301", "\u0301\u0302", "\x00", "a\x00b", "\xff\xfe", "\u202eevil", "\u202e", "ﷺ", strings.Repeat("x", 5000),
		strings.Repeat("a ", 500), strings.Repeat(`"`, 100), `NEAR("a" "b")`, `"a" "b"`, `a NEAR/2 b`,
	}
	for _, q := range queries {
		if _, err := s.Recall(context.Background(), memory.Query{Text: q, Scope: "p", Limit: 5}); err != nil {
			t.Errorf("Recall(%q): %v", q, err)
		}
	}
	// Terms with characters that are FTS5 syntax are quoted safely even if
	// a caller builds them by hand.
	for _, terms := range [][]string{{`a"b`}, {`"`}, {`NEAR(`}, {`*`, `-`, `:`}, {""}} {
		expr := MatchExpr(terms)
		if expr == "" {
			continue
		}
		rows, err := s.r.Query(`SELECT rowid FROM memories_fts WHERE memories_fts MATCH ?`, expr)
		if err != nil {
			t.Errorf("MATCH %q: %v", expr, err)
			continue
		}
		rows.Close()
	}
	if got := recall(t, s, "p", `café`, 5); len(got) != 1 {
		t.Errorf("café: %d hits", len(got))
	}
	if got := recall(t, s, "p", `CAFE`, 5); len(got) != 1 {
		t.Errorf("CAFE (diacritics folded): %d hits", len(got))
	}
}

func TestSurvivesReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "memory.db")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	m := write(t, s, "p", "the answer is forty-two", "answer")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal("second Close:", err)
	}
	s = open(t, path)
	hits := recall(t, s, "p", "answer", 5)
	if len(hits) != 1 {
		t.Fatalf("after reopen: %v", hits)
	}
	got := hits[0].Memory
	if got.ID != m.ID || got.Content != m.Content || !got.Created.Equal(m.Created) || strings.Join(got.Tags, ",") != "answer" {
		t.Errorf("after reopen got %+v, want %+v", got, m)
	}
	if err := s.IntegrityCheck(context.Background()); err != nil {
		t.Error(err)
	}
}

func TestSourceIDIdempotent(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	first, err := s.Write(ctx, memory.Memory{Scope: "p", Content: "promoted once", SourceID: "run-1/cand-1"})
	if err != nil {
		t.Fatal(err)
	}
	second, err := s.Write(ctx, memory.Memory{ID: "proposed", Scope: "p", Content: "promoted once", SourceID: "run-1/cand-1"})
	if err != nil {
		t.Fatal(err)
	}
	if second.ID != first.ID || second.SourceID != "run-1/cand-1" {
		t.Errorf("second write of the same source returned %+v, want the first %+v", second, first)
	}
	if n, _ := s.Count(ctx, ""); n != 1 {
		t.Errorf("%d memories stored, want 1", n)
	}
	got, ok, err := s.FindSource(ctx, "run-1/cand-1")
	if err != nil || !ok || got.ID != first.ID {
		t.Errorf("FindSource: %+v %v %v", got, ok, err)
	}
	if _, ok, _ := s.FindSource(ctx, "run-1/nope"); ok {
		t.Error("FindSource found a missing source")
	}
	// Without a source, one memory per scope and content: the second
	// write returns the first; another scope keeps its own.
	same := write(t, s, "p", "same")
	again, err := s.Write(ctx, memory.Memory{ID: "proposed-2", Scope: "p", Content: "same", Tags: []string{"new"}})
	if err != nil || again.ID != same.ID || len(again.Tags) != 0 {
		t.Errorf("the same content again: %+v %v, want the first %+v", again, err, same)
	}
	write(t, s, "q", "same")
	if n, _ := s.Count(ctx, "p"); n != 2 {
		t.Errorf("%d memories in p, want 2", n)
	}
	if n, _ := s.Count(ctx, "q"); n != 1 {
		t.Errorf("%d memories in q, want 1", n)
	}
	if got, ok, err := s.FindContent(ctx, "p", "same"); err != nil || !ok || got.ID != same.ID {
		t.Errorf("FindContent: %+v %v %v", got, ok, err)
	}
	if _, ok, _ := s.FindContent(ctx, "p", "Same"); ok {
		t.Error("FindContent found other content")
	}
	// A proposed ID is kept; a duplicate ID is an error.
	m, err := s.Write(ctx, memory.Memory{ID: "my-id", Scope: "p", Content: "x"})
	if err != nil || m.ID != "my-id" {
		t.Fatalf("proposed ID: %+v %v", m, err)
	}
	if _, err := s.Write(ctx, memory.Memory{ID: "my-id", Scope: "p", Content: "y"}); err == nil {
		t.Error("duplicate ID accepted")
	}
}

func TestWriteValidation(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	for _, m := range []memory.Memory{
		{Scope: "p", Content: ""},
		{Scope: "p", Content: "  \n "},
		{Scope: "p", Content: "bad \xff utf8"},
		{Scope: "p", Content: "x", Tags: []string{strings.Repeat("t", 65)}},
		{Scope: "p", Content: "x", Tags: []string{"a\nb"}},
		{Scope: "", Content: "x"},
	} {
		if _, err := s.Write(ctx, m); err == nil {
			t.Errorf("Write(%+v) accepted", m)
		}
	}
	m := write(t, s, "p", "x", " a ", "", "a", "b")
	if strings.Join(m.Tags, ",") != "a,b" {
		t.Errorf("tags %q, want normalized a,b", m.Tags)
	}
}

// TestConcurrentWriters: 8 goroutines x 50 writes through two separate
// handles on the same file (as two toolgate processes would), all present.
func TestConcurrentWriters(t *testing.T) {
	path := filepath.Join(t.TempDir(), "memory.db")
	handles := []*Store{open(t, path), open(t, path)}
	const goroutines, writes = 8, 50
	var wg sync.WaitGroup
	errs := make(chan error, goroutines*writes)
	idc := make(chan string, goroutines*writes)
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := handles[g%2]
			for i := range writes {
				m, err := s.Write(context.Background(), memory.Memory{
					Scope: "conc", Content: fmt.Sprintf("goroutine %d write %d", g, i), SourceID: fmt.Sprintf("g%d/%d", g, i),
				})
				if err != nil {
					errs <- err
					return
				}
				idc <- m.ID
				if i%10 == 0 { // readers run alongside
					if _, err := s.Recall(context.Background(), memory.Query{Text: "goroutine", Scope: "conc"}); err != nil {
						errs <- err
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	close(idc)
	for err := range errs {
		t.Error(err)
	}
	ctx := context.Background()
	for _, s := range handles {
		if n, err := s.Count(ctx, "conc"); err != nil || n != goroutines*writes {
			t.Errorf("count %d (%v), want %d", n, err, goroutines*writes)
		}
	}
	seen := map[string]bool{}
	for id := range idc {
		if seen[id] {
			t.Errorf("ID %s returned twice", id)
		}
		seen[id] = true
		if _, ok, err := handles[0].Get(ctx, id); !ok || err != nil {
			t.Errorf("memory %s missing (%v)", id, err)
		}
	}
	if len(seen) != goroutines*writes {
		t.Errorf("%d IDs, want %d", len(seen), goroutines*writes)
	}
	// Each handle's full-text search sees every write, including the other
	// handle's (reader connections that searched before do not go stale).
	for hi, s := range handles {
		for g := range goroutines {
			text := fmt.Sprintf("goroutine %d write %d", g, writes-1)
			hits := recall(t, s, "conc", text, 50)
			if len(hits) != 50 || hits[0].Memory.Content != text {
				t.Errorf("handle %d: recall %q: %d hits, first %q", hi, text, len(hits), hits[0].Memory.Content)
			}
		}
	}
	if err := handles[1].IntegrityCheck(ctx); err != nil {
		t.Error(err)
	}
}

// TestCrashDurability re-executes the test binary as a child that writes
// memories and prints each ID once Write returned, SIGKILLs it mid-stream,
// and checks that every printed (acknowledged) ID is in the reopened
// database and that the database is intact. Three rounds on one file.
func TestCrashDurability(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns child processes")
	}
	path := filepath.Join(t.TempDir(), "memory.db")
	var acked []string
	for round := range 3 {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), crashChildEnv+"="+path)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(out)
		killAt := 20 + round*15
		n := 0
		killed := false
		for sc.Scan() {
			acked = append(acked, sc.Text())
			n++
			if n == killAt && !killed {
				if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
					t.Fatal(err)
				}
				killed = true
			}
		}
		err = cmd.Wait()
		if !killed {
			t.Fatalf("round %d: child ended before the kill (%d lines): %v\n%s", round, n, err, stderr.String())
		}
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
			t.Fatalf("round %d: child was not killed by SIGKILL: %v\n%s", round, err, stderr.String())
		}
		t.Logf("round %d: %d writes acknowledged before SIGKILL landed", round, n)

		s, err := Open(path)
		if err != nil {
			t.Fatalf("round %d: reopen after kill: %v", round, err)
		}
		ctx := context.Background()
		for _, id := range acked {
			if _, ok, err := s.Get(ctx, id); !ok || err != nil {
				t.Errorf("round %d: acknowledged memory %s lost (%v)", round, id, err)
			}
		}
		if err := s.IntegrityCheck(ctx); err != nil {
			t.Errorf("round %d: %v", round, err)
		}
		if hits, err := s.Recall(ctx, memory.Query{Text: "crash memory", Scope: "crash", Limit: 50}); err != nil || len(hits) == 0 {
			t.Errorf("round %d: recall after crash: %d hits, %v", round, len(hits), err)
		}
		s.Close()
	}
}

// TestLongWordRecall: a word longer than the query term bound (a long
// identifier, token or compound) is found by the word itself, in any case
// and among other words, ASCII or not.
func TestLongWordRecall(t *testing.T) {
	s := newStore(t)
	words := []string{
		strings.Repeat("abcdefghij", 8),        // 80 letters
		strings.Repeat("a1b2c3d4e5", 30),       // 300
		strings.Repeat("ä", 70),                // 70 runes, 140 bytes
		strings.Repeat("x", 57) + "ationalism", // its first 64 characters end in a suffix porter rewrites
		strings.Repeat("y", 60) + "ies",        // short enough to be stemmed whole
	}
	var want []string
	for _, w := range words {
		want = append(want, write(t, s, "p", "the token "+w+" expires soon").ID)
	}
	for i, w := range words {
		if got := ids(recall(t, s, "p", w, 5)); len(got) != 1 || got[0] != want[i] {
			t.Errorf("recall of the %d-character word %d: %v, want [%s]", len([]rune(w)), i, got, want[i])
		}
		if got := ids(recall(t, s, "p", "some "+strings.ToUpper(w)+" words", 5)); len(got) != 1 || got[0] != want[i] {
			t.Errorf("recall of the %d-character word %d in upper case among other words: %v, want [%s]", len([]rune(w)), i, got, want[i])
		}
	}
}

// TestRecallUnspacedScripts: Chinese and Japanese are written without
// spaces, so the full-text tokenizer takes a whole run of them for one
// word; a query for a word inside it still finds the memory, best match
// first, in content or tags, and never another scope's.
func TestRecallUnspacedScripts(t *testing.T) {
	s := newStore(t)
	cat := write(t, s, "p", "我喜欢猫和狗")
	jp := write(t, s, "p", "日本語のテキストを保存する")
	tagged := write(t, s, "p", "a note", "部署手順")
	write(t, s, "other", "我喜欢猫")
	english := write(t, s, "p", "the cat sleeps")
	for _, c := range []struct {
		q    string
		want []string
	}{
		{"猫", []string{cat.ID}},
		{"喜欢猫", []string{cat.ID}},
		{"我喜欢什么动物", []string{cat.ID}}, // shares 我喜, 喜欢 with it
		{"日本語", []string{jp.ID}},
		{"テキスト", []string{jp.ID}},
		{"手順", []string{tagged.ID}},
		{"cat 猫", []string{english.ID, cat.ID}},
		{"犬", nil},
	} {
		if got := ids(recall(t, s, "p", c.q, 5)); strings.Join(got, ",") != strings.Join(c.want, ",") {
			t.Errorf("recall %q: %v, want %v", c.q, got, c.want)
		}
	}
}
