package clientconfig

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/tailscale/hujson"
)

// Entry is toolgate's own entry in a client's file.
type Entry struct {
	Command string
	Args    []string
}

// Rewrite replaces the servers named in imported (the client's names of
// those toolgate now serves: [Result.Imported]) in a client's file with one
// toolgate entry (named "toolgate"), keeping everything else in the file as
// it was: the servers the import skipped (they would be lost otherwise),
// other settings, unknown fields, comments and formatting. First it writes
// a backup next to the file, PATH.toolgate-backup-TIMESTAMP, and it
// changes nothing when the backup cannot be written. A path that is a
// symbolic link (a dotfiles setup) has its target rewritten, not the link
// replaced. It returns the backup's path.
func Rewrite(path, format string, entry Entry, imported []string, now time.Time) (string, error) {
	if real, err := filepath.EvalSymlinks(path); err == nil {
		path = real
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	if format == "" || format == Auto {
		if format, err = Detect(path, data); err != nil {
			return "", err
		}
	}
	sp, ok := specs[format]
	if !ok {
		return "", fmt.Errorf("unknown client format %q", format)
	}
	root, err := decode(path, data, true)
	if err != nil {
		return "", err
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
		if _, ok := servers[name]; ok && name != "toolgate" {
			ops = append(ops, op{Op: "remove", Path: "/" + sp.key + "/" + pointerEscape(name)})
		}
	}
	value := map[string]any{"command": entry.Command, "args": entry.Args}
	if format == VSCode || format == ClaudeCode {
		value["type"] = "stdio"
	}
	ops = append(ops, op{Op: "add", Path: "/" + sp.key + "/toolgate", Value: value})
	patch, err := json.Marshal(ops)
	if err != nil {
		return "", err
	}
	v, err := hujson.Parse(data)
	if err != nil {
		return "", positioned(path, data, err)
	}
	if err := v.Patch(patch); err != nil {
		return "", fmt.Errorf("%s: rewriting: %w", path, err)
	}

	out := v.Pack()

	backup := fmt.Sprintf("%s.toolgate-backup-%s", path, now.UTC().Format("20060102T150405Z"))
	if err := writeNew(backup, data); err != nil {
		return "", fmt.Errorf("not rewriting %s: its backup cannot be written: %w", path, err)
	}
	if err := replaceFile(path, out); err != nil {
		return backup, fmt.Errorf("rewriting %s (the original is kept in %s): %w", path, backup, err)
	}
	return backup, nil
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
