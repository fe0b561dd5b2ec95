package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/pflag"
	"github.com/toolgate/toolgate/gateway"
	"github.com/toolgate/toolgate/policy"
)

func init() {
	commands = append(commands, &command{
		name:  "tools",
		args:  "[--json] [--config FILE]",
		short: "list the tools with the policy's decision for each",
		flags: func(fs *pflag.FlagSet) {
			configFlags(fs)
			fs.Bool("json", false, "print JSON")
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
}

func runTools(e *env, fs *pflag.FlagSet, args []string) error {
	a, err := listingApp(e, fs, args, "tools")
	if err != nil {
		return err
	}
	defer a.close()

	var infos []toolInfo
	for _, en := range a.catalog.Entries() {
		infos = append(infos, toolInfo{
			Name: en.Tool.Name, Toolset: en.Toolset, Description: en.Tool.Description,
			Capabilities: nonNil(policy.NeededCapabilities(en.Tool)), Hints: en.Tool.Permissions.Resolved(),
			Decision: a.policy.Decide(e.ctx, en.Tool), InputSchema: en.Tool.InputSchema,
		})
	}
	if asJSON, _ := fs.GetBool("json"); asJSON {
		conflicts := a.catalog.Conflicts()
		if conflicts == nil {
			conflicts = []gateway.Conflict{}
		}
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		return enc.Encode(map[string]any{"tools": nonNilInfos(infos), "toolsets": a.catalog.Toolsets(), "conflicts": conflicts})
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TOOL\tTOOLSET\tDECISION\tRULE\tCAPABILITIES\tHINTS")
	for _, t := range infos {
		decision := "deny"
		if t.Decision.Allow {
			decision = "allow"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s/%s\t%s\t%s\n", t.Name, t.Toolset, decision, t.Decision.Layer, t.Decision.Rule,
			orNone(strings.Join(t.Capabilities, ",")), orNone(strings.Join(t.Hints.Names(), ",")))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, ts := range a.catalog.Toolsets() {
		if ts.Status.State != "ready" {
			fmt.Fprintf(e.stdout, "\ntoolset %s: %s %s\n", ts.Name, ts.Status.State, ts.Status.Detail)
		}
	}
	for _, c := range a.catalog.Conflicts() {
		fmt.Fprintf(e.stdout, "\nname conflict: %q is served by %s; the tool of %s is served as %q\n", c.Name, c.Kept, c.Renamed, c.ServedAs)
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
