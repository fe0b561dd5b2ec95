package filesystem

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"path"
	"unicode/utf8"

	"github.com/toolgate/toolgate/gateway"
	"github.com/toolgate/toolgate/policy"
)

type writeFileParams struct {
	Path       string `json:"path" jsonschema:"maxLength=4096" jsonschema_description:"File to write. Relative paths are relative to the first sandbox root; absolute paths must be inside a sandbox root."`
	Content    string `json:"content" jsonschema_description:"The complete new content of the file."`
	CreateDirs *bool  `json:"create_dirs,omitempty" jsonschema:"default=true" jsonschema_description:"Create missing parent directories."`
}

func (t *toolset) writeFileTool() (*gateway.Tool, error) {
	desc := "Write a text file in the sandbox, replacing its whole content (or creating it). " +
		"The write is atomic: readers see the old or the new content, never a mix. " +
		"Missing parent directories are created unless create_dirs is false. " +
		"Refuses directories, symlinks (write to the link's target path instead), read-only files, paths outside the sandbox " +
		"and existing files over " + gateway.HumanSize(t.opts.MaxOverwriteSize) + ". " +
		"The result shows a unified diff of the change."
	if t.opts.Backups != nil {
		desc += " Overwriting loses nothing: the previous content is archived first, and the result gives " +
			"its URI (extras.previous_version) so it can be read back or restored."
	} else {
		desc += " This gateway is not configured to archive previous contents: an overwrite replaces the old content."
	}
	desc += t.rootsNote()
	return gateway.NewTypedTool(gateway.ToolDef{
		Name:        "write_file",
		Title:       "Write file",
		Description: desc,
		Permissions: gateway.Permissions{
			Capabilities: []string{capWrite},
			// Not destructive: the previous content is archived (when
			// Backups is set) and the write is confined to the sandbox.
			Hints: gateway.Hints{ReadOnly: gateway.Bool(false), Destructive: gateway.Bool(false),
				Idempotent: gateway.Bool(true), OpenWorld: gateway.Bool(false)},
		},
	}, t.writeFile)
}

func (t *toolset) writeFile(ctx context.Context, in writeFileParams) (*gateway.Result, error) {
	root, rel, err := t.sb.Locate(in.Path)
	if err != nil {
		return pathResult(in.Path, err), nil
	}
	name := t.display(root, rel)
	mkdirs := in.CreateDirs == nil || *in.CreateDirs

	// The previous content, for the diff and the backup. Anything but a
	// regular file is left to WriteFile, which refuses it with the reason.
	var old []byte
	existed := false
	fi, err := t.sb.Lstat(in.Path)
	switch {
	case err == nil && fi.Mode().IsRegular():
		if err := policy.ReadOnlyErr(in.Path, fi); err != nil {
			return pathResult(in.Path, err), nil
		}
		f, err := t.sb.Open(in.Path)
		if err != nil {
			return pathResult(in.Path, err), nil
		}
		old, err = readUpTo(f, t.opts.MaxOverwriteSize)
		f.Close()
		if errors.Is(err, errTooLarge) {
			return gateway.Error(
				fmt.Sprintf("%s was not written: it holds more than %s, and write_file replaces files of up to %s (their previous content is read for the diff and archived first). The limit is filesystem.max_overwrite_bytes.",
					name, gateway.HumanSize(t.opts.MaxOverwriteSize), gateway.HumanSize(t.opts.MaxOverwriteSize)),
				fmt.Sprintf("Not written: %s is too large to replace", name)), nil
		}
		if err != nil {
			return pathResult(in.Path, err), nil
		}
		existed = true
	case err != nil && (errors.Is(err, policy.ErrOutsideSandbox) || errors.Is(err, policy.ErrInvalidPath)):
		return pathResult(in.Path, err), nil
	}
	// Other errors (not found, a parent that is a file) are WriteFile's to
	// handle or explain.
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	data := []byte(in.Content)
	unchanged := existed && bytes.Equal(old, data)

	var backup *gateway.Artifact
	if t.opts.Backups != nil && existed && !unchanged {
		call := gateway.CallFrom(ctx)
		if call == nil { // called outside a pipeline
			call = &gateway.Call{ID: gateway.NewCallID(), Name: "write_file"}
		}
		art, err := t.opts.Backups.SaveArtifact(call, "previous-"+path.Base(rel), contentType(old), old)
		if err != nil {
			t.log.Error("write_file: archiving previous content", "path", name, "err", err)
			return gateway.Error(
				fmt.Sprintf("%s was not written: its previous content could not be archived: %v", name, err),
				fmt.Sprintf("Not written: backup of %s failed", name)), nil
		}
		backup = &art
	}

	created, err := t.sb.WriteFile(in.Path, data, mkdirs)
	if err != nil {
		return pathResult(in.Path, err), nil
	}
	if created {
		old = nil
	}
	state := "updated"
	switch {
	case created:
		state = "created"
	case unchanged:
		state = "unchanged"
	}
	res := &gateway.Result{Message: fmt.Sprintf("Wrote %s to %s (%s)", gateway.Plural(len(data), "byte", "bytes"), name, state)}
	if backup != nil {
		res.Message += fmt.Sprintf(". The previous content (%s) is archived as %s", gateway.Plural(len(old), "byte", "bytes"), backup.URI)
		res.WithExtra("previous_version", backup.URI)
		t.log.Debug("write_file: previous content archived", "path", name, "uri", backup.URI)
	}
	res.Message += "."
	res.WithBrief(fmt.Sprintf("Wrote %s to %s", gateway.HumanSize(int64(len(data))), name))
	res.WithDisplay(diffBlock(name, string(old), in.Content, created))
	return res, nil
}

// contentType is the MIME type of a backup: UTF-8 text, or what
// http.DetectContentType says.
func contentType(data []byte) string {
	if bytes.IndexByte(data, 0) < 0 && utf8.Valid(data) {
		return "text/plain; charset=utf-8"
	}
	return http.DetectContentType(data)
}

var errTooLarge = errors.New("too large")

// readUpTo reads all of f if it holds at most limit bytes, and fails with
// errTooLarge without reading it otherwise: write_file must not hold a
// file of any size in memory (a disk image in a root would take the
// gateway down). The buffer is sized from Stat; a file that grows past
// the limit meanwhile is caught by the read.
func readUpTo(f interface {
	io.Reader
	Stat() (fs.FileInfo, error)
}, limit int64) ([]byte, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if fi.Size() > limit {
		return nil, errTooLarge
	}
	var b bytes.Buffer
	b.Grow(int(fi.Size()) + bytes.MinRead)
	if _, err := b.ReadFrom(io.LimitReader(f, limit+1)); err != nil {
		return nil, err
	}
	if int64(b.Len()) > limit {
		return nil, errTooLarge
	}
	return b.Bytes(), nil
}
