package main

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"github.com/toolgate/toolgate/adapters/clientconfig"
	"github.com/toolgate/toolgate/cmd/toolgate/internal/config"
	"github.com/toolgate/toolgate/gateway"
)

func init() {
	commands = append(commands, &command{
		name:  "import",
		args:  "[--from FORMAT] [--rewrite] [PATH]",
		short: "print another MCP client's servers as toolgate upstreams (Claude Desktop, Claude Code, Cursor, VS Code, Gemini CLI, Windsurf, Codex CLI)",
		flags: func(fs *pflag.FlagSet) {
			configFlags(fs)
			fs.String("from", clientconfig.Auto, "the client's format: auto, claude-desktop, claude-code, cursor, vscode, gemini, windsurf, codex")
			fs.Bool("rewrite", false, "also replace the client's servers with one toolgate entry (a timestamped backup is written first)")
		},
		run: runImport,
	})
}

// knownPaths are where each client keeps its servers, for an import with
// no PATH: project files first, then the user's, then Codex's (added
// last, so that where another client's file was found before, it still
// is).
func knownPaths(format string) []string {
	home, _ := os.UserHomeDir()
	codexHome := filepath.Join(home, ".codex")
	if ch := os.Getenv("CODEX_HOME"); ch != "" {
		codexHome = ch
	}
	desktop := filepath.Join(home, ".config", "Claude", "claude_desktop_config.json")
	if runtime.GOOS == "darwin" {
		desktop = filepath.Join(home, "Library", "Application Support", "Claude", "claude_desktop_config.json")
	}
	all := map[string][]string{
		clientconfig.ClaudeCode:    {".mcp.json"},
		clientconfig.VSCode:        {filepath.Join(".vscode", "mcp.json")},
		clientconfig.Cursor:        {filepath.Join(".cursor", "mcp.json"), filepath.Join(home, ".cursor", "mcp.json")},
		clientconfig.Gemini:        {filepath.Join(".gemini", "settings.json"), filepath.Join(home, ".gemini", "settings.json")},
		clientconfig.Windsurf:      {filepath.Join(home, ".codeium", "windsurf", "mcp_config.json")},
		clientconfig.ClaudeDesktop: {desktop},
		clientconfig.Codex:         {filepath.Join(".codex", "config.toml"), filepath.Join(codexHome, "config.toml")},
	}
	if format != clientconfig.Auto {
		return all[format]
	}
	// Every project file (relative to the working directory) before any of
	// the user's: a project's own list wins over a user-wide one.
	var project, user []string
	for _, f := range []string{clientconfig.ClaudeCode, clientconfig.VSCode, clientconfig.Cursor, clientconfig.Gemini, clientconfig.ClaudeDesktop, clientconfig.Windsurf} {
		for _, p := range all[f] {
			if filepath.IsAbs(p) {
				user = append(user, p)
			} else {
				project = append(project, p)
			}
		}
	}
	return append(append(project, user...), all[clientconfig.Codex]...)
}

func runImport(e *env, fs *pflag.FlagSet, args []string) error {
	if len(args) > 1 {
		return usagef("import takes at most one PATH")
	}
	format, _ := fs.GetString("from")
	if format != clientconfig.Auto && !slices.Contains(clientconfig.Formats, format) {
		// Before looking for its file: an unknown format has none.
		return usagef("unknown client format %q (one of auto, %s)", format, strings.Join(clientconfig.Formats, ", "))
	}
	var path string
	if len(args) == 1 {
		path = args[0]
	} else {
		for _, p := range knownPaths(format) {
			if _, err := os.Stat(p); err == nil {
				path = p
				break
			}
		}
		if path == "" {
			return usagef("no client configuration found where %s keeps it (%v): give its PATH", format, knownPaths(format))
		}
	}
	res, err := clientconfig.Load(path, format, os.LookupEnv)
	if err != nil {
		return usageError{err.Error()}
	}
	rewrite, _ := fs.GetBool("rewrite")
	if rewrite {
		// Before printing anything: the printed upstreams are meant to
		// replace what the rewrite takes out of the file.
		if err := clientconfig.RewriteSupported(res.Format); err != nil {
			return usageError{fmt.Sprintf("%s: %v", path, err)}
		}
	}
	// An upstream may not be named like a built-in toolset that is on, and
	// the printed upstreams go into a configuration this run does not know:
	// such a server gets another name (its tools keep theirs), said here
	// and in the YAML's comments.
	for _, n := range res.AvoidNames(config.BuiltinToolsets(), config.BuiltinNameTaken) {
		fmt.Fprintf(e.stderr, "Note: %s.\n", n)
	}
	for _, n := range res.WrittenSecrets() {
		fmt.Fprintf(e.stderr, "Note: %s.\n", n)
	}
	out, err := res.YAML()
	if err != nil {
		return err
	}
	if _, err := e.stdout.Write(out); err != nil {
		return err
	}
	if rewrite {
		self, err := os.Executable()
		if err != nil {
			return fmt.Errorf("finding toolgate's own path for the client's entry: %w", err)
		}
		entryArgs := []string{"serve"}
		if cfgFile, _ := fs.GetString("config"); cfgFile != "" {
			abs, err := filepath.Abs(cfgFile)
			if err != nil {
				return err
			}
			entryArgs = append(entryArgs, "--config", abs)
		}
		if len(res.Imported) == 0 {
			return fmt.Errorf("not rewriting %s: none of its servers is imported (a file of another client, or nothing but skipped entries?)", path)
		}
		done, err := clientconfig.Rewrite(path, res.Format, clientconfig.Entry{Command: self, Args: entryArgs}, res.Imported, time.Now())
		if err != nil {
			return err
		}
		fmt.Fprintf(e.stderr, "Rewrote %s: %s replaced by one toolgate entry", path, gateway.Plural(len(res.Imported), "imported server is", "imported servers are"))
		// Those printed disabled (a value from the environment in their
		// command, args or url) stay too.
		n := len(res.Upstreams) - len(res.Imported) // toolgate's own entry aside: it is replaced, not kept
		for _, sk := range res.Skipped {
			if !strings.HasPrefix(sk, clientconfig.EntryName+": ") {
				n++
			}
		}
		if n > 0 {
			fmt.Fprintf(e.stderr, " (%s in it)", gateway.Plural(n, "entry skipped or printed disabled stays", "entries skipped or printed disabled stay"))
		}
		if len(done.Kept) > 0 {
			fmt.Fprintf(e.stderr, "; its toolgate entry keeps what this run did not set: %s", strings.Join(done.Kept, ", "))
		}
		fmt.Fprintf(e.stderr, "; the original is in %s.\n", done.Backup)
		if file := done.Config; file != "" {
			fmt.Fprintf(e.stderr, "Add the upstreams printed above to %s, the configuration the toolgate entry serves (the client's file no longer lists them).\n", file)
		} else {
			// Said plainly: the servers left the client's file, and
			// nothing serves them until a configuration has them.
			fmt.Fprintf(e.stderr, "The toolgate entry runs `toolgate serve` without --config: it serves toolgate's defaults (and a toolgate.yaml in the directory the client starts it in, if any), not the servers taken out of the client's file. "+
				"Add the upstreams printed above to a toolgate.yaml, and \"--config\", \"/ABSOLUTE/PATH/toolgate.yaml\" after \"serve\" in the entry's args (or put %s back and run this again with --config).\n", done.Backup)
		}
	}
	return nil
}
