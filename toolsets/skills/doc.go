// Package skills is the built-in skills toolset: list_skills and load_skill
// over one or more skill directories, with every skill also served as an MCP
// prompt.
//
// # Skill folders
//
// A skill directory (configured in [Options.Dirs]) holds one folder per
// skill. A skill folder holds a SKILL.md file and, optionally, any other
// files the skill uses (scripts, templates, reference documents): its
// resources.
//
//	skills/
//	  pdf-forms/
//	    SKILL.md
//	    scripts/fill_form.py
//	    reference/field-types.md
//	  release-notes/
//	    SKILL.md
//
// SKILL.md starts with YAML front matter between two lines of three dashes,
// followed by the skill's instructions in Markdown:
//
//	---
//	name: pdf-forms
//	description: Fill in PDF forms from structured data. Use when the user asks to fill, check or flatten a PDF form.
//	capabilities: [net]
//	allowed_tools: [filesystem__read_file, "filesystem__*"]
//	---
//	# Filling PDF forms
//
//	1. Read reference/field-types.md to learn the field kinds.
//	2. Run scripts/fill_form.py with the form and a JSON file of values.
//	...
//
// Front matter fields:
//
//   - name (required): the skill's id, 1 to 64 characters of a-z, 0-9 and
//     "-". It must be unique across all skill directories: when two skills
//     share a name, the one in the earlier directory (or, within one
//     directory, the earlier folder in name order) keeps it, and the other
//     is reported as a problem and ignored. It is also the prompt name.
//   - description (required): what the skill does and when to use it, at
//     most 1024 characters. list_skills shows it, and it is the prompt's
//     description.
//   - capabilities (optional): capability names the skill requests, such
//     as "net" or "fs.write". Loading the skill passes them to the
//     permission policy ([Granter]), which grants only those the
//     configuration marks as requestable; a skill can never grant itself
//     anything. load_skill reports, for each, whether it was granted and why.
//   - allowed_tools (optional; "allowed-tools" is accepted too): tool-name
//     globs the skill is meant to use. Informational: load_skill returns
//     them, nothing enforces them.
//
// A list may also be written as one comma-separated string
// ("capabilities: net, fs.write"). Other fields (license, metadata, ...)
// are ignored.
//
// Every other file in the folder, recursively, is a resource, listed by
// load_skill with its path relative to the folder and its size (at most 200
// are listed). Hidden files and folders (names starting with ".") are
// skipped. Symbolic links are never followed out of the folder: a link to a
// file inside the folder is listed with the target's size, a link to a
// directory is not followed, and a link that leads outside the folder
// (every absolute link does) or to nothing is a problem.
//
// # Problems
//
// Scanning never stops at a broken skill. Malformed front matter, missing or
// invalid fields, duplicate names, a folder without SKILL.md, a SKILL.md
// that is not a regular file inside its folder or is larger than
// [Options.MaxBodyBytes], unreadable files and symbolic links that escape
// the folder are each reported as a [Problem] (see [Toolset.Problems]); the
// other skills load as usual. A skill with a problem is not listed, and
// load_skill on it returns an error naming the problem.
//
// # Rescanning
//
// The directories are checked again at most once a second, lazily, when a
// tool is called or the prompts are listed: the check stats the directories,
// the skill folders and their SKILL.md files, and rescans everything when
// any of them changed. Changes deeper in a skill folder (a resource added
// to a subfolder) are seen at the next rescan or after [Toolset.Reload].
// When the set of skills (names and descriptions) changes, the
// prompts-changed listeners are called.
package skills
