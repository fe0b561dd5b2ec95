package main

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/pflag"
	"github.com/toolgate/toolgate/gateway"
	"github.com/toolgate/toolgate/gateway/operator"
	"github.com/toolgate/toolgate/policy"
	"github.com/toolgate/toolgate/toolsets/discovery"
)

func init() {
	commands = append(commands, &command{
		name:  "tools",
		args:  "[--json] [--profile NAME] [--config FILE]",
		short: "list the tools with the policy's decision for each",
		flags: func(fs *pflag.FlagSet) {
			configFlags(fs)
			fs.Bool("json", false, "print JSON")
			fs.String("profile", "", "only the tools of profile NAME (config profiles)")
		},
		run: runTools,
	})
}

// toolInfo is one tool as `toolgate tools --json` prints it.
type toolInfo struct {
	Name         string                `json:"name"`
	Toolset      string                `json:"toolset"`
	Description  string                `json:"description"`
	Capabilities []string              `json:"capabilities"` // needed: declared, plus net when open-world
	Hints        gateway.ResolvedHints `json:"hints"`
	Decision     gateway.Decision      `json:"decision"`
	InputSchema  json.RawMessage       `json:"input_schema"`
	// Listed is false for a tool that tools/list does not show in search
	// mode (find_tools finds it, call_tool calls it).
	Listed bool `json:"listed"`
}

func runTools(e *env, fs *pflag.FlagSet, args []string) error {
	a, err := listingApp(e, fs, args, "tools")
	if err != nil {
		return err
	}
	defer a.close()

	profile, _ := fs.GetString("profile")
	view, err := a.profileView(profile)
	if err != nil {
		return err
	}
	var infos []toolInfo
	for _, en := range a.catalog.Entries() {
		admitted, listed := viewLists(view, en.Tool.Name)
		if !admitted || !listed && en.Toolset == discovery.Name {
			continue // find_tools and call_tool show only when searching
		}
		infos = append(infos, toolInfo{
			Listed: listed,
			Name:   en.Tool.Name, Toolset: en.Toolset, Description: en.Tool.Description,
			Capabilities: nonNil(policy.NeededCapabilities(en.Tool)), Hints: en.Tool.Permissions.Resolved(),
			Decision: a.policy.Decide(e.ctx, en.Tool), InputSchema: en.Tool.InputSchema,
		})
	}
	if asJSON, _ := fs.GetBool("json"); asJSON {
		conflicts := a.catalog.Conflicts()
		unmatched := a.unmatchedGlobs()
		if unmatched == nil {
			unmatched = []policy.UnmatchedGlob{}
		}
		return writeJSON(e.stdout, map[string]any{"tools": nonNilInfos(infos), "toolsets": a.catalog.Toolsets(), "conflicts": conflicts, "unmatched_globs": unmatched, "unserved": unserved(a)})
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TOOL\tTOOLSET\tDECISION\tRULE\tCAPABILITIES\tHINTS")
	unlisted := 0
	for _, t := range infos {
		if !t.Listed {
			unlisted++
		}

		decision := operator.ToolView{Decision: t.Decision}.Verdict()
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s/%s\t%s\t%s\n", t.Name, t.Toolset, decision, t.Decision.Layer, t.Decision.Rule,
			orNone(strings.Join(t.Capabilities, ",")), orNone(strings.Join(t.Hints.Names(), ",")))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if unlisted > 0 {
		fmt.Fprintf(e.stdout, "\ntool search is on: tools/list shows %d of these %d tools (the pinned ones, find_tools and call_tool); find_tools finds the others (config discovery)\n", len(infos)-unlisted, len(infos))
	}
	if run, r := newestReload(a.cfg.ResolvedRunsDir()); r != nil {
		result := "ok"
		if !r.OK {
			result = "failed: " + r.Error
		}
		fmt.Fprintf(e.stdout, "\nlast reload of serve run %s: %s (%s), %s\n", run, r.Time.Format(time.RFC3339), r.Trigger, result)
	}
	for _, ts := range a.catalog.Toolsets() {
		if ts.Status.State != "ready" {
			detail := ""
			if ts.Status.Detail != "" {
				detail = " (" + ts.Status.Detail + ")"
			}
			fmt.Fprintf(e.stdout, "\ntoolset %s: %s%s\n", ts.Name, ts.Status.State, detail)
		}
	}
	for _, c := range a.catalog.Conflicts() {
		if c.Namespace != "" {
			fmt.Fprintf(e.stdout, "\nname refused: %q of %s is not served: the name is in the namespace %s__ of %s (its policy, grants and profiles would reach it); give %s a prefix, or deny the tool there\n",
				c.Name, c.Renamed, c.Namespace, c.Kept, c.Renamed)
			continue
		}
		fmt.Fprintf(e.stdout, "\nname conflict: %q is served by %s; the tool of %s is served as %q\n", c.Name, c.Kept, c.Renamed, c.ServedAs)
	}
	notServed := unserved(a)
	for _, name := range slices.Sorted(maps.Keys(notServed)) {
		fmt.Fprintf(e.stdout, "\nnot served over MCP: %s: %s\n", name, notServed[name])
	}
	for _, u := range a.unmatchedGlobs() {
		fmt.Fprintf(e.stdout, "\nwarning: %s\n", u)
	}
	for _, ts := range a.catalog.Toolsets() {
		for _, w := range ts.Status.Warnings {
			fmt.Fprintf(e.stdout, "\nwarning: upstream %s: %s\n", ts.Name, w)
		}
	}
	return nil
}

func orNone(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func nonNilInfos(s []toolInfo) []toolInfo {
	if s == nil {
		return []toolInfo{}
	}
	return s
}

// unserved is the catalog's tools the MCP mirror leaves out of tools/list
// (gateway.CheckMCPTool), by name, with why.
func unserved(a *app) map[string]string {
	out := map[string]string{}
	for _, en := range a.catalog.Entries() {
		if err := gateway.CheckMCPTool(en.Tool); err != nil {
			out[en.Tool.Name] = err.Error()
		}
	}
	return out
}
