package skills

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/toolgate/toolgate/gateway"
	"github.com/toolgate/toolgate/policy"
)

// maxListedProblems bounds the problems list_skills returns.
const maxListedProblems = 100

type listParams struct{}

type loadParams struct {
	SkillID string `json:"skill_id" jsonschema:"minLength=1,maxLength=256" jsonschema_description:"The skill's name, as list_skills shows it."`
}

// listOutput is list_skills' structured output.
type listOutput struct {
	Skills    []listEntry `json:"skills"`
	Total     int         `json:"total" jsonschema_description:"Number of loadable skills, listed or not."`
	Truncated bool        `json:"truncated" jsonschema_description:"Whether skills were left out of the list."`
	Problems  []Problem   `json:"problems"`
}

type listEntry struct {
	Name        string `json:"name"`
	Description string `json:"description"`
}

// loadOutput is load_skill's structured output.
type loadOutput struct {
	Name               string     `json:"name"`
	Description        string     `json:"description"`
	Folder             string     `json:"folder" jsonschema_description:"Absolute path of the skill folder."`
	Resources          []Resource `json:"resources"`
	ResourcesTruncated bool       `json:"resources_truncated"`
	AllowedTools       []string   `json:"allowed_tools"`
	Capabilities       []string   `json:"capabilities" jsonschema_description:"Capabilities the skill requests."`
	Grants             []Grant    `json:"grants"`
}

func (t *Toolset) listSkillsTool() (*gateway.Tool, error) {
	return gateway.NewTypedToolOut(gateway.ToolDef{
		Name:  "list_skills",
		Title: "List skills",
		Description: fmt.Sprintf("List the available skills: packaged instructions (and resource files) for specific tasks. "+
			"One `name: description` line per skill, sorted by name, at most %d. "+
			"When a skill fits the task, load it with load_skill to get its instructions.", t.opts.MaxSkills),
		Permissions: gateway.Permissions{Capabilities: []string{policy.SkillsRead}, Hints: gateway.ReadOnlyHints()},
	}, t.listSkills)
}

func (t *Toolset) loadSkillTool() (*gateway.Tool, error) {
	return gateway.NewTypedToolOut(gateway.ToolDef{
		Name:  "load_skill",
		Title: "Load skill",
		Description: "Load a skill by name (see list_skills). The output is the skill's instructions (Markdown); follow them. " +
			"The message lists the skill's resource files (paths relative to the skill folder, with sizes), the tools it is " +
			"meant to use, and, for each capability the skill requests, whether the permission policy granted it and why.",
		Permissions: gateway.Permissions{Capabilities: []string{policy.SkillsRead}, Hints: gateway.ReadOnlyHints()},
	}, t.loadSkill)
}

func (t *Toolset) listSkills(_ context.Context, _ listParams) (*gateway.Result, listOutput, error) {
	s := t.current()
	out := listOutput{Skills: []listEntry{}, Total: len(s.skills), Problems: []Problem{}}
	var lines []string
	for _, sk := range s.skills {
		if len(out.Skills) == t.opts.MaxSkills {
			out.Truncated = true
			break
		}
		out.Skills = append(out.Skills, listEntry{Name: sk.name, Description: sk.description})
		lines = append(lines, sk.name+": "+oneLine(sk.description))
	}
	out.Problems = append(out.Problems, s.problems[:min(len(s.problems), maxListedProblems)]...)

	var msg strings.Builder
	switch {
	case len(s.skills) == 0:
		fmt.Fprintf(&msg, "No skills found in %s.", strings.Join(t.dirs, ", "))
	case out.Truncated:
		fmt.Fprintf(&msg, "Showing the first %d of %d skills (sorted by name); the rest are not listed. Load one with load_skill.", len(out.Skills), len(s.skills))
	default:
		fmt.Fprintf(&msg, "%s, sorted by name. Load one with load_skill.", gateway.Plural(len(s.skills), "skill", "skills"))
	}
	if n := len(s.problems); n > 0 {
		fmt.Fprintf(&msg, "\n%s found while loading skills (skills with problems are not listed); see `problems` in the structured output", gateway.Plural(n, "problem was", "problems were"))
		if n > maxListedProblems {
			fmt.Fprintf(&msg, ", which holds the first %d", maxListedProblems)
		}
		msg.WriteString(":")
		for i, p := range s.problems[:min(n, 3)] {
			fmt.Fprintf(&msg, "\n- %s", gateway.Truncate(p.String(), 300))
			if i == 2 && n > 3 {
				fmt.Fprintf(&msg, "\n- … and %d more", n-3)
			}
		}
	}
	text := strings.Join(lines, "\n")
	if text == "" {
		text = "(no skills)"
	}
	brief := gateway.Plural(len(s.skills), "skill", "skills")
	if len(s.problems) > 0 {
		brief += ", " + gateway.Plural(len(s.problems), "problem", "problems")
	}
	return gateway.OkText(text).WithMessage(msg.String()).WithBrief(brief), out, nil
}

func (t *Toolset) loadSkill(ctx context.Context, in loadParams) (*gateway.Result, loadOutput, error) {
	s := t.current()
	id := strings.TrimSpace(in.SkillID)
	sk, ok := s.byName[id]
	if !ok {
		if probs, ok := s.broken[id]; ok {
			return problemResult(id, probs), loadOutput{}, nil
		}
		return t.unknown(s, id), loadOutput{}, nil
	}
	if len(sk.problems) > 0 {
		return problemResult(id, sk.problems), loadOutput{}, nil
	}

	grants := t.request(ctx, sk)
	granted := 0
	for _, g := range grants {
		if g.Granted {
			granted++
		}
	}

	var msg strings.Builder
	fmt.Fprintf(&msg, "Loaded skill %q from %s. Its instructions are the output; follow them.\n", sk.name, sk.folder)
	if len(sk.resources) == 0 {
		msg.WriteString("Resources: none.\n")
	} else {
		fmt.Fprintf(&msg, "Resources (%d, paths relative to the skill folder %s):\n", len(sk.resources), sk.folder)
		for _, r := range sk.resources {
			fmt.Fprintf(&msg, "- %s (%s)\n", r.Path, gateway.HumanSize(r.Size))
		}
		if sk.truncated {
			fmt.Fprintf(&msg, "- … listing stopped at %d resources\n", MaxResources)
		}
	}
	if len(sk.allowedTools) == 0 {
		msg.WriteString("Allowed tools: not specified.\n")
	} else {
		fmt.Fprintf(&msg, "Allowed tools: %s\n", strings.Join(sk.allowedTools, ", "))
	}
	if len(grants) == 0 {
		msg.WriteString("Capability requests: none.")
	} else {
		fmt.Fprintf(&msg, "Capability requests (%d of %d granted by the permission policy):", granted, len(grants))
		for _, g := range grants {
			verdict := "refused"
			if g.Granted {
				verdict = "granted"
			}
			fmt.Fprintf(&msg, "\n- %s: %s", g.Capability, verdict)
			if g.Reason != "" {
				fmt.Fprintf(&msg, " (%s)", g.Reason)
			}
		}
	}

	out := loadOutput{
		Name:               sk.name,
		Description:        sk.description,
		Folder:             sk.folder,
		Resources:          orEmpty(sk.resources),
		ResourcesTruncated: sk.truncated,
		AllowedTools:       orEmpty(sk.allowedTools),
		Capabilities:       orEmpty(sk.capabilities),
		Grants:             orEmpty(grants),
	}
	brief := fmt.Sprintf("Loaded skill %s", sk.name)
	if len(grants) > 0 {
		brief += fmt.Sprintf(" (%d of %s granted)", granted, gateway.Plural(len(grants), "requested capability", "requested capabilities"))
	}
	return gateway.OkText(sk.body).WithMessage(msg.String()).WithBrief(brief), out, nil
}

// request asks the granter about the skill's capabilities and returns one
// grant per requested capability, in the granter's order: the granter's
// answers as given, then a refusal for each capability it did not answer.
// Answers about capabilities the skill did not request are dropped.
func (t *Toolset) request(ctx context.Context, sk *skill) []Grant {
	grants := []Grant{}
	if len(sk.capabilities) == 0 {
		return grants
	}
	if t.opts.Granter == nil {
		for _, c := range sk.capabilities {
			grants = append(grants, Grant{Capability: c, Granted: false, Reason: "no policy"})
		}
		return grants
	}
	answered := map[string]bool{}
	for _, g := range t.opts.Granter.Request(ctx, sk.name, slices.Clone(sk.capabilities)) {
		if slices.Contains(sk.capabilities, g.Capability) && !answered[g.Capability] {
			answered[g.Capability] = true
			grants = append(grants, g)
		}
	}
	for _, c := range sk.capabilities {
		if !answered[c] {
			grants = append(grants, Grant{Capability: c, Granted: false, Reason: "the policy gave no answer"})
		}
	}
	return grants
}

// problemResult is load_skill's error for a skill that has problems.
func problemResult(id string, probs []Problem) *gateway.Result {
	var b strings.Builder
	fmt.Fprintf(&b, "Skill %q cannot be loaded:", id)
	for _, p := range probs {
		fmt.Fprintf(&b, "\n- %s", p)
	}
	b.WriteString("\nThe skill's folder must be fixed by whoever maintains it; use another skill or proceed without it.")
	res := gateway.Error(b.String(), fmt.Sprintf("Skill %s cannot be loaded", id))
	return res.WithExtra("problems", probs)
}

// unknown is load_skill's error for a name no skill has, with the closest
// names.
func (t *Toolset) unknown(s *state, id string) *gateway.Result {
	var names []string
	for _, sk := range s.skills {
		names = append(names, sk.name)
	}
	near := closeMatches(id, names, 5)
	var msg string
	switch {
	case len(near) > 0:
		msg = fmt.Sprintf("Unknown skill %q. Close matches: %s. Call list_skills to see all %s.", id, strings.Join(near, ", "), gateway.Plural(len(s.skills), "skill", "skills"))
	case len(s.skills) > 0:
		msg = fmt.Sprintf("Unknown skill %q, and no skill has a similar name. Call list_skills to see all %s.", id, gateway.Plural(len(s.skills), "skill", "skills"))
	default:
		msg = fmt.Sprintf("Unknown skill %q: there are no skills.", id)
	}
	return gateway.Error(msg, fmt.Sprintf("Unknown skill %s", gateway.Truncate(id, 64))).WithExtra("suggestions", orEmpty(near))
}

// closeMatches returns up to n names close to id: equal ignoring case, a
// prefix or substring either way, or within a small edit distance; closest
// first.
func closeMatches(id string, names []string, n int) []string {
	q := strings.ToLower(id)
	type match struct {
		name string
		dist int
	}
	var ms []match
	for _, name := range names {
		d := editDistance(q, name)
		ok := d <= max(2, len(q)/3)
		if !ok && len(q) >= 3 && (strings.Contains(name, q) || strings.Contains(q, name)) {
			ok = true
		}
		if ok {
			ms = append(ms, match{name, d})
		}
	}
	sort.SliceStable(ms, func(i, j int) bool {
		if ms[i].dist != ms[j].dist {
			return ms[i].dist < ms[j].dist
		}
		return ms[i].name < ms[j].name
	})
	var out []string
	for _, m := range ms[:min(len(ms), n)] {
		out = append(out, m.name)
	}
	return out
}

// editDistance is the Levenshtein distance between a and b, in bytes
// (skill names are ASCII).
func editDistance(a, b string) int {
	if len(a) > 256 || len(b) > 256 {
		return max(len(a), len(b))
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// oneLine collapses runs of white space (newlines included) into single
// spaces.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

func orEmpty[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
