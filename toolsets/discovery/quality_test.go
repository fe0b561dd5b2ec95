package discovery

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"testing"
	"time"
)

// The task set: real servers' tools/list (e2e/testdata/discovery/servers.json)
// plus toolgate's own built-in tools, and tasks written as a person would
// ask them (tasks.json).

type fixtureServers struct {
	Servers []struct {
		Server string `json:"server"`
		Tools  []struct {
			Name        string          `json:"name"`
			Title       string          `json:"title"`
			Description string          `json:"description"`
			InputSchema json.RawMessage `json:"inputSchema"`
		} `json:"tools"`
	} `json:"servers"`
}

type fixtureTasks struct {
	Tasks []struct {
		Ask  string   `json:"ask"`
		Want []string `json:"want"`
	} `json:"tasks"`
}

// builtinDocs are toolgate's own tools as the catalog serves them.
var builtinDocs = []Doc{
	{Name: "read_file", Toolset: "filesystem", Description: "Read a text file in the sandbox, by line range."},
	{Name: "write_file", Toolset: "filesystem", Description: "Write a text file in the sandbox, atomically; the previous content is archived."},
	{Name: "list_files", Toolset: "filesystem", Description: "List the files and directories under a directory in the sandbox."},
	{Name: "grep_files", Toolset: "filesystem", Description: "Search the contents of files in the sandbox for a regular expression; returns matching lines."},
	{Name: "list_skills", Toolset: "skills", Description: "List the skills available to load."},
	{Name: "load_skill", Toolset: "skills", Description: "Load a skill's instructions (SKILL.md) by name."},
	{Name: "recall_memory", Toolset: "memory", Description: "Recall memories relevant to a query from the memory store."},
	{Name: "write_memory", Toolset: "memory", Description: "Write a memory (a fact worth keeping) to the memory store."},
}

func loadFixture(t testing.TB) ([]Doc, fixtureTasks) {
	t.Helper()
	dir := filepath.Join("..", "..", "e2e", "testdata", "discovery")
	var srv fixtureServers
	var tasks fixtureTasks
	for name, v := range map[string]any{"servers.json": &srv, "tasks.json": &tasks} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, v); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	docs := slices.Clone(builtinDocs)
	for _, s := range srv.Servers {
		for _, tl := range s.Tools {
			docs = append(docs, Doc{Name: s.Server + "__" + tl.Name, Toolset: s.Server, Title: tl.Title, Description: tl.Description, InputSchema: tl.InputSchema})
		}
	}
	return docs, tasks
}

// TestSearchQuality measures success at 5 on the task set: the share of
// tasks for which a tool that does the task is among the first five
// results. The target is 0.9 (issue 11).
func TestSearchQuality(t *testing.T) {
	docs, tasks := loadFixture(t)
	if len(docs) < 300 || len(tasks.Tasks) < 40 {
		t.Fatalf("task set too small: %d tools, %d tasks", len(docs), len(tasks.Tasks))
	}
	x, err := NewIndex(func() []Doc { return docs })
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	found := 0
	for _, task := range tasks.Tasks {
		hits, err := x.Search(context.Background(), task.Ask, 5, nil)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, h := range hits {
			names = append(names, h.Name)
		}
		ok := slices.ContainsFunc(names, func(n string) bool { return slices.Contains(task.Want, n) })
		if ok {
			found++
		} else {
			t.Logf("missed %q: want one of %v, got %v", task.Ask, task.Want, names)
		}
	}
	rate := float64(found) / float64(len(tasks.Tasks))
	t.Logf("success@5 = %d/%d = %.2f over %d tools", found, len(tasks.Tasks), rate, len(docs))
	if rate < 0.9 {
		t.Errorf("success@5 = %.2f, want >= 0.9", rate)
	}
}

// BenchmarkFindTools2000 searches a catalog of about 2,000 tools (the task
// set's tools, repeated under other server names) and reports p50 and p99.
func BenchmarkFindTools2000(b *testing.B) {
	base, tasks := loadFixture(b)
	var docs []Doc
	for i := 0; len(docs) < 2000; i++ {
		for _, d := range base {
			d.Name = fmt.Sprintf("c%d_%s", i, d.Name)
			docs = append(docs, d)
		}
	}
	x, err := NewIndex(func() []Doc { return docs })
	if err != nil {
		b.Fatal(err)
	}
	defer x.Close()
	ctx := context.Background()
	if _, err := x.Search(ctx, "warm up", 5, nil); err != nil {
		b.Fatal(err)
	}
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		q := tasks.Tasks[i%len(tasks.Tasks)].Ask
		start := time.Now()
		if _, err := x.Search(ctx, q, 5, nil); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(start))
	}
	b.StopTimer()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
	b.ReportMetric(float64(len(docs)), "tools")
}

// TestSearchRanksAnExactNameFirst: a query that is a tool's served name
// (a model that knows the tool it wants, a user who names it) returns that
// tool first, for every tool of the task set, whatever words the name is
// made of ("kubernetes__kubectl_get": "get" says nothing in a request) and
// however many tools share them; also for a name of stop words only.
func TestSearchRanksAnExactNameFirst(t *testing.T) {
	docs, _ := loadFixture(t)
	docs = append(docs, Doc{Name: "get_me", Toolset: "github", Description: "Details of the authenticated user."})
	x, err := NewIndex(func() []Doc { return docs })
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	missed := 0
	for _, d := range docs {
		for _, q := range []string{d.Name, " " + d.Name + "\n"} {
			hits, err := x.Search(context.Background(), q, 5, nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(hits) == 0 || hits[0].Name != d.Name {
				missed++
				var names []string
				for _, h := range hits {
					names = append(names, h.Name)
				}
				t.Errorf("query %q: got %v, want %s first", q, names, d.Name)
			}
			for _, h := range hits[min(1, len(hits)):] {
				if h.Name == d.Name {
					t.Errorf("query %q: %s returned twice", q, d.Name)
				}
			}
		}
	}
	if missed > 0 {
		t.Logf("%d of %d exact-name queries missed", missed, 2*len(docs))
	}
	// The exact name is kept to the caller's filter like any hit.
	hits, err := x.Search(context.Background(), "kubernetes__kubectl_get", 5, func(name string) bool { return name != "kubernetes__kubectl_get" })
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range hits {
		if h.Name == "kubernetes__kubectl_get" {
			t.Errorf("a tool the filter leaves out was returned for its exact name")
		}
	}
}
