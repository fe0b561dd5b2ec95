package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/gateway"
	"github.com/toolgate/toolgate/toolsets/skills"
)

// Clients are told of every call of a source's change listeners, so the
// sources call them only when what they serve changed.
func TestSourcesTellOnlyOfChanges(t *testing.T) {
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
		first, _ := l.Prompts(context.Background())
		if told != 1 || len(first) != 1 {
			t.Fatalf("the first skills: told %d times, %d prompts; want 1, 1", told, len(first))
		}
		l.set(open())
		if told != 1 {
			t.Errorf("the same skills again told the listeners (%d times in all)", told)
		}
		// Skills with the same name and description but another body: no
		// one is told (the listing is the same), and the prompt as the
		// mirror installed it, from the first listing, renders the body of
		// the skills in force.
		other := t.TempDir()
		if err := os.MkdirAll(filepath.Join(other, "good"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(other, "good", "SKILL.md"), []byte(strings.Replace(md, "Good body.", "Other body.", 1)), 0o644); err != nil {
			t.Fatal(err)
		}
		sk, err := skills.New(&skills.Options{Dirs: []string{other}})
		if err != nil {
			t.Fatal(err)
		}
		l.set(sk)
		if told != 1 {
			t.Errorf("skills listed the same told the listeners (%d times in all)", told)
		}
		res, err := first[0].Get(context.Background(), nil)
		if err != nil || len(res.Messages) != 1 || !strings.Contains(res.Messages[0].Content.(gateway.TextPart).Text, "Other body.") {
			t.Errorf("the installed prompt rendered %+v (%v); want the new skills' body", res, err)
		}
	})
}
