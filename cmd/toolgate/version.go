package main

import (
	"fmt"
	"runtime/debug"

	"github.com/spf13/pflag"
)

// buildVersion is set with -ldflags "-X main.buildVersion=v1.2.3".
var buildVersion = ""

func version() string {
	if buildVersion != "" {
		return buildVersion
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}

func init() {
	commands = append(commands, &command{
		name:  "version",
		short: "print the version",
		run: func(e *env, _ *pflag.FlagSet, args []string) error {
			if len(args) > 0 {
				return usagef("version takes no arguments")
			}
			fmt.Fprintf(e.stdout, "toolgate %s\n", version())
			return nil
		},
	})
}
