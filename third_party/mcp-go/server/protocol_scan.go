package server

import (
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
//     maps): jsonscan.Fields refuses both;
//   - a null, an escaped string or a value of another type is json's;
//   - fields the scan does not read (icons, tasks) are json's;
//   - any other member is skipped, as json ignores it.
//
// FuzzToolgateEnvelopeMembers holds both to json.Unmarshal.

// scanImplementation decodes a client's info (mcp.Implementation) when its
// members are plain strings: name, version, title, description and
// websiteUrl.
func scanImplementation(raw []byte) (*mcp.Implementation, bool) {
	var impl mcp.Implementation
	fields := [...]*string{&impl.Name, &impl.Version, &impl.Title, &impl.Description, &impl.WebsiteURL}
	names := []string{"name", "version", "title", "description", "websiteUrl", "icons"}
	ok := jsonscan.Fields(raw, names, func(i, start, end int) bool {
		if i == len(fields) { // icons: json's
			return false
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
	names := []string{"extensions", "experimental", "roots", "sampling", "elicitation", "tasks"}
	ok := jsonscan.Fields(raw, names, func(i, start, end int) bool {
		v := raw[start:end]
		switch i {
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
			return jsonscan.Fields(v, []string{"listChanged"}, func(_, start, end int) bool {
				caps.Roots.ListChanged = string(v[start:end]) == "true"
				return caps.Roots.ListChanged || string(v[start:end]) == "false"
			})
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
	return jsonscan.Fields(v, names, func(i, start, end int) bool {
		*fields[i] = &struct{}{}
		return v[start] == '{'
	})
}
