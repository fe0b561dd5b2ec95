package main

import (
	"github.com/spf13/pflag"
	"github.com/toolgate/toolgate/cmd/toolgate/internal/config"
)

func init() {
	commands = append(commands, &command{
		name:  "config",
		args:  "[--config FILE] [--defaults]",
		short: "print the effective configuration (defaults, file, environment and flags merged; tokens redacted)",
		flags: func(fs *pflag.FlagSet) {
			configFlags(fs)
			fs.Bool("defaults", false, "print the embedded defaults, with comments")
		},
		run: func(e *env, fs *pflag.FlagSet, args []string) error {
			if len(args) > 0 {
				return usagef("config takes no arguments")
			}
			if d, _ := fs.GetBool("defaults"); d {
				_, err := e.stdout.Write(config.Defaults())
				return err
			}
			file, _ := fs.GetString("config")
			cfg, src, k, err := config.Load(config.Options{File: file, Flags: fs, FlagKeys: configFlagKeys})
			if err != nil {
				return usageError{err.Error()}
			}
			out, err := config.Effective(k)
			if err != nil {
				return err
			}
			from := "embedded defaults"
			if src.File != "" {
				from += " + " + src.File
			}
			header := "# effective configuration (" + from + " + environment + flags)\n# runs directory: " + cfg.ResolvedRunsDir() + "\n"
			_, err = e.stdout.Write(append([]byte(header), out...))
			return err
		},
	})
}
