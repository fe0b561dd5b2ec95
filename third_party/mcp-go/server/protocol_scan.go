package server

import (
	"bytes"

	"github.com/mark3labs/mcp-go/jsonscan"
	"github.com/mark3labs/mcp-go/mcp"
)

// toolgate patch, for speed (item 29): the client info and capabilities a
// 2026-07-28 request carries in its _meta, decoded by a scan into what
// json.Unmarshal decodes them into, where the scan can read them exactly
// as json does; metaMember leaves everything else to json. The rules, each
// a way json differs from a plain walk over the members:
//
//   - a member whose name matches a field only in another case is json's
//     (it matches names case-insensitively), and so is a repeated field
//     (json decodes each one into the same value, merging objects and
//     maps);
//   - a null, an escaped string or a value of another type is json's;
//   - fields the scan does not read (icons, tasks) are json's;
//   - any other member is skipped, as json ignores it.
//
// FuzzToolgateEnvelopeMembers holds both to json.Unmarshal.

// memberSet is the fields of one struct a scan reads, by their JSON names;
// seen counts each one met.
type memberSet struct {
	names []string
	seen  [8]int
}

// field is the index of name among the set's fields, or -1 for a member
// json ignores. ok is false when json would match name to a field in
// another case, or when a field is met a second time.
func (s *memberSet) field(name []byte) (i int, ok bool) {
	for i, n := range s.names {
		if string(name) == n {
			s.seen[i]++
			return i, s.seen[i] == 1
		}
		if bytes.EqualFold(name, []byte(n)) {
			return -1, false
		}
	}
	return -1, true
}

// scanImplementation decodes a client's info (mcp.Implementation) when its
// members are plain strings: name, version, title, description and
// websiteUrl.
func scanImplementation(raw []byte) (*mcp.Implementation, bool) {
	var impl mcp.Implementation
	set := memberSet{names: []string{"name", "version", "title", "description", "websiteUrl", "icons"}}
	fields := [...]*string{&impl.Name, &impl.Version, &impl.Title, &impl.Description, &impl.WebsiteURL}
	ok := jsonscan.Object(raw, func(name []byte, start, end int) bool {
		i, ok := set.field(name)
		if !ok || i == len(fields) { // icons: json's
			return false
		}
		if i < 0 {
			return true
		}
		s, ok := jsonscan.PlainString(raw[start:end])
		*fields[i] = s
		return ok
	})
	if !ok {
		return nil, false
	}
	return &impl, true
}

// maxScannedCapabilities bounds the capabilities scanClientCapabilities
// reads: jsonscan.DecodeObject scans a nested object again to decode it.
const maxScannedCapabilities = 4096

// scanClientCapabilities decodes a client's capabilities
// (mcp.ClientCapabilities) when they hold no more than roots (listChanged
// a boolean), sampling (context, tools), elicitation (form, url), and
// extensions and experimental as jsonscan.DecodeObject decodes them.
func scanClientCapabilities(raw []byte) (*mcp.ClientCapabilities, bool) {
	if len(raw) > maxScannedCapabilities {
		return nil, false
	}
	var caps mcp.ClientCapabilities
	set := memberSet{names: []string{"extensions", "experimental", "roots", "sampling", "elicitation", "tasks"}}
	ok := jsonscan.Object(raw, func(name []byte, start, end int) bool {
		i, ok := set.field(name)
		if !ok {
			return false
		}
		v := raw[start:end]
		switch i {
		case -1:
			return true
		case 0, 1:
			m, ok := jsonscan.DecodeObject(v, false)
			if i == 0 {
				caps.Extensions = m
			} else {
				caps.Experimental = m
			}
			return ok
		case 2:
			caps.Roots = &struct {
				ListChanged bool `json:"listChanged,omitempty"`
			}{}
			return scanFlags(v, []string{"listChanged"}, &caps.Roots.ListChanged)
		case 3:
			caps.Sampling = &mcp.SamplingCapability{}
			return scanPresence(v, []string{"context", "tools"}, &caps.Sampling.Context, &caps.Sampling.Tools)
		case 4:
			caps.Elicitation = &mcp.ElicitationCapability{}
			return scanPresence(v, []string{"form", "url"}, &caps.Elicitation.Form, &caps.Elicitation.URL)
		}
		return false // tasks: json's
	})
	if !ok {
		return nil, false
	}
	return &caps, true
}

// scanPresence decodes an object whose fields, by names, are pointers to
// empty structs: any object json decodes into one sets it.
func scanPresence(v []byte, names []string, fields ...**struct{}) bool {
	set := memberSet{names: names}
	return jsonscan.Object(v, func(name []byte, start, end int) bool {
		i, ok := set.field(name)
		if !ok || i < 0 {
			return ok
		}
		if v[start] != '{' {
			return false
		}
		*fields[i] = &struct{}{}
		return true
	})
}

// scanFlags decodes an object whose fields, by names, are booleans.
func scanFlags(v []byte, names []string, fields ...*bool) bool {
	set := memberSet{names: names}
	return jsonscan.Object(v, func(name []byte, start, end int) bool {
		i, ok := set.field(name)
		if !ok || i < 0 {
			return ok
		}
		switch string(v[start:end]) {
		case "true":
			*fields[i] = true
		case "false":
			*fields[i] = false
		default:
			return false
		}
		return true
	})
}
