package main

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/toolgate/toolgate/adapters/upstream"
	"github.com/toolgate/toolgate/toolsets/skills"
)

// Clients are told of every call of a source's change listeners, so the
// sources call them only when what they serve changed.
func TestSourcesTellOnlyOfChanges(t *testing.T) {
	t.Run("retiring an upstream that served nothing", func(t *testing.T) {
		u, err := upstream.New(upstream.Config{Name: "off", Command: "true", Disabled: true}, nil)
		if err != nil {
			t.Fatal(err)
		}
		s := &upstreamSource{Upstream: u}
		told := 0
		s.OnPromptsChanged(func() { told++ })
		s.OnResourcesChanged(func() { told++ })
		s.retire()
		if told != 0 {
			t.Errorf("retiring an upstream without prompts or resources told the listeners %d times", told)
		}
	})
	t.Run("replacing the skills with the same ones", func(t *testing.T) {
		dir := t.TempDir()
		if err := os.MkdirAll(filepath.Join(dir, "good"), 0o755); err != nil {
			t.Fatal(err)
		}
		md := "---\nname: good\ndescription: A skill that always loads.\n---\nGood body.\n"
		if err := os.WriteFile(filepath.Join(dir, "good", "SKILL.md"), []byte(md), 0o644); err != nil {
			t.Fatal(err)
		}
		l := &livePrompts{}
		told := 0
		l.OnPromptsChanged(func() { told++ })
		open := func() *skills.Toolset {
			sk, err := skills.New(&skills.Options{Dirs: []string{dir}})
			if err != nil {
				t.Fatal(err)
			}
			return sk
		}
		l.set(open())
		if ps, _ := l.Prompts(context.Background()); told != 1 || len(ps) != 1 {
			t.Fatalf("the first skills: told %d times, %d prompts; want 1, 1", told, len(ps))
		}
		l.set(open())
		if told != 1 {
			t.Errorf("the same skills again told the listeners (%d times in all)", told)
		}
	})
}
