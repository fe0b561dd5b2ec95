package clientconfig

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/tailscale/hujson"
)

// EntryName is the name of toolgate's own entry in a client's file.
const EntryName = "toolgate"

// Entry is toolgate's own entry in a client's file: Args are "serve"
// followed by the flags (each "--name value") the rewrite sets.
type Entry struct {
	Command string
	Args    []string
}

// Rewritten is what a rewrite did.
type Rewritten struct {
	// Backup is the path of the original's copy.
	Backup string
	// Kept are the settings of the toolgate entry already in the file (a
	// second rewrite) that the rewrite was not told to change, kept: its
	// args after "serve" other than the flags of the new Entry (as one
	// string, "--config /etc/toolgate.yaml"), then the names of its
	// other fields (env, cwd, ...).
	Kept []string
	// Config is the configuration file the toolgate entry serves, as
	// written (its --config, given or kept), or "" for none.
	Config string
}

// Rewrite replaces the servers named in imported (the client's names of
// those toolgate now serves: [Result.Imported]) in a client's file with one
// toolgate entry (named "toolgate"), keeping everything else in the file as
// it was: the servers the import skipped (they would be lost otherwise),
// other settings, unknown fields, comments and formatting. First it writes
// a backup next to the file, PATH.toolgate-backup-TIMESTAMP, and it
// changes nothing when the backup cannot be written. A path that is a
// symbolic link (a dotfiles setup) has its target rewritten, not the link
// replaced.
//
// A toolgate entry already in the file that toolgate wrote (named
// "toolgate", its args starting with "serve") is updated, not replaced:
// its command becomes entry.Command, the flags entry.Args names replace
// the entry's own, and everything else of it (other flags such as an
// earlier rewrite's --config, env, cwd) is kept and listed in
// [Rewritten.Kept]. Any other entry named "toolgate" is replaced.
func Rewrite(path, format string, entry Entry, imported []string, now time.Time) (Rewritten, error) {
	if real, err := filepath.EvalSymlinks(path); err == nil {
		path = real
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return Rewritten{}, err
	}
	if format == "" || format == Auto {
		if format, err = Detect(path, data); err != nil {
			return Rewritten{}, err
		}
	}
	sp, ok := specs[format]
	if !ok {
		return Rewritten{}, fmt.Errorf("unknown client format %q", format)
	}
	if err := RewriteSupported(format); err != nil {
		return Rewritten{}, fmt.Errorf("not rewriting %s: %w", path, err)
	}
	root, err := decode(path, data, true)
	if err != nil {
		return Rewritten{}, err
	}
	servers, _ := root[sp.key].(map[string]any)

	// The imported servers go (toolgate serves them now), toolgate comes
	// in (an "add" of an existing member replaces it).
	type op struct {
		Op    string `json:"op"`
		Path  string `json:"path"`
		Value any    `json:"value,omitempty"`
	}
	var ops []op
	if servers == nil {
		ops = append(ops, op{Op: "add", Path: "/" + sp.key, Value: map[string]any{}})
	}
	for _, name := range imported {
		if _, ok := servers[name]; ok && name != EntryName {
			ops = append(ops, op{Op: "remove", Path: "/" + sp.key + "/" + pointerEscape(name)})
		}
	}
	var kept []string
	written := entry.Args
	at := "/" + sp.key + "/" + EntryName
	old, _ := servers[EntryName].(map[string]any)
	if oldArgs, ok := stringList(old["args"]); old != nil && ok && ownEntry(EntryName, oldArgs) {
		// toolgate's own entry, from an earlier rewrite: only what this
		// rewrite sets changes.
		args, rest := mergeArgs(entry.Args, oldArgs)
		written = args
		if len(rest) > 0 {
			kept = append(kept, strings.Join(rest, " "))
		}
		var fields []string
		for k := range old {
			if k != "command" && k != "args" && k != "type" {
				fields = append(fields, k)
			}
		}
		sort.Strings(fields)
		kept = append(kept, fields...)
		ops = append(ops, op{Op: "add", Path: at + "/command", Value: entry.Command}, op{Op: "add", Path: at + "/args", Value: args})
	} else {
		value := map[string]any{"command": entry.Command, "args": entry.Args}
		if format == VSCode || format == ClaudeCode {
			value["type"] = "stdio"
		}
		ops = append(ops, op{Op: "add", Path: at, Value: value})
	}
	patch, err := json.Marshal(ops)
	if err != nil {
		return Rewritten{}, err
	}
	v, err := hujson.Parse(data)
	if err != nil {
		return Rewritten{}, positioned(path, data, err)
	}
	if err := v.Patch(patch); err != nil {
		return Rewritten{}, fmt.Errorf("%s: rewriting: %w", path, err)
	}

	out := v.Pack()

	backup := fmt.Sprintf("%s.toolgate-backup-%s", path, now.UTC().Format("20060102T150405Z"))
	if err := writeNew(backup, data); err != nil {
		return Rewritten{}, fmt.Errorf("not rewriting %s: its backup cannot be written: %w", path, err)
	}
	if err := replaceFile(path, out); err != nil {
		return Rewritten{Backup: backup}, fmt.Errorf("rewriting %s (the original is kept in %s): %w", path, backup, err)
	}
	return Rewritten{Backup: backup, Kept: kept, Config: configArg(written)}, nil
}

// stringList is a JSON list of strings.
func stringList(v any) ([]string, bool) {
	list, ok := v.([]any)
	if !ok {
		return nil, false
	}
	out := make([]string, 0, len(list))
	for _, e := range list {
		s, ok := e.(string)
		if !ok {
			return nil, false
		}
		out = append(out, s)
	}
	return out, true
}

// mergeArgs gives an existing toolgate entry's args (oldArgs, "serve"
// first) the flags of the new ones (newArgs: "serve", then "--name value"
// pairs): the new args, then the old ones after "serve" but for the flags
// the new args set (with their values), which it also returns (rest).
func mergeArgs(newArgs, oldArgs []string) (args, rest []string) {
	set := map[string]bool{}
	for _, a := range newArgs {
		if n, ok := flagName(a); ok {
			set[n] = true
		}
	}
	for i := 1; i < len(oldArgs); i++ {
		a := oldArgs[i]
		if n, ok := flagName(a); ok && set[n] {
			if !strings.Contains(a, "=") {
				i++ // its value
			}
			continue
		}
		rest = append(rest, a)
	}
	return append(append([]string(nil), newArgs...), rest...), rest
}

// configArg is the value of args' --config ("--config FILE" or
// "--config=FILE"), or "".
func configArg(args []string) string {
	for i, a := range args {
		if n, ok := flagName(a); ok && n == "config" {
			if _, v, inline := strings.Cut(a, "="); inline {
				return v
			}
			if i+1 < len(args) {
				return args[i+1]
			}
		}
	}
	return ""
}

// flagName is the name of a "--name" or "--name=value" argument.
func flagName(a string) (string, bool) {
	if !strings.HasPrefix(a, "--") || len(a) == 2 {
		return "", false
	}
	n, _, _ := strings.Cut(a[2:], "=")
	return n, true
}

// pointerEscape escapes a key for a JSON Pointer (RFC 6901).
func pointerEscape(s string) string {
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(s)
}

// writeNew writes a file that must not exist yet, durably.
func writeNew(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		os.Remove(path)
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		os.Remove(path)
		return err
	}
	return f.Close()
}

// replaceFile replaces path's content atomically (a temp file renamed over
// it), keeping its permissions.
func replaceFile(path string, data []byte) error {
	mode := os.FileMode(0o600)
	if fi, err := os.Stat(path); err == nil {
		mode = fi.Mode().Perm()
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
