package skills

import (
	"context"
	"fmt"

	"github.com/toolgate/toolgate/gateway"
)

// The skills toolset serves its skills as prompts too, and says when they
// change (checked at compile time).
var (
	_ gateway.PromptSource          = (*Toolset)(nil)
	_ gateway.PromptsChangeNotifier = (*Toolset)(nil)
)

// Prompts implements [gateway.PromptSource]: every loadable skill is a
// prompt named after it, with its description and no arguments, sorted by
// name and bounded by [Options.MaxSkills]. Getting a prompt returns one
// user message holding the skill's instructions, read from the skills as
// they are when it is got.
//
// A prompt does not apply the skill's capability requests: only
// load_skill does, since only a tool call goes through the pipeline. The
// prompts follow load_skill ([gateway.Prompt.Tool]): a caller who may not
// call it (a profile without it, skills.read denied) is not served them.
func (t *Toolset) Prompts(context.Context) ([]gateway.Prompt, error) {
	s := t.current()
	prompts := make([]gateway.Prompt, 0, min(len(s.skills), t.opts.MaxSkills))
	for _, sk := range s.skills[:min(len(s.skills), t.opts.MaxSkills)] {
		name := sk.name
		prompts = append(prompts, gateway.Prompt{
			Name:        name,
			Description: sk.description,
			// Served to the callers who may load the skill.
			Tool: "load_skill",
			Get: func(context.Context, map[string]string) (*gateway.PromptResult, error) {
				return t.GetPrompt(name)
			},
		})
	}
	return prompts, nil
}

// GetPrompt renders the prompt of the skill called name as it is now (what
// the Get of its [Toolset.Prompts] entry does).
func (t *Toolset) GetPrompt(name string) (*gateway.PromptResult, error) {
	s := t.current()
	sk, ok := s.byName[name]
	if !ok {
		return nil, fmt.Errorf("skill %q no longer exists", name)
	}
	if len(sk.problems) > 0 {
		return nil, fmt.Errorf("skill %q cannot be loaded: %s", name, sk.problems[0])
	}
	return &gateway.PromptResult{
		Description: sk.description,
		Messages:    []gateway.PromptMessage{{Role: "user", Content: gateway.Text(sk.body)}},
	}, nil
}
