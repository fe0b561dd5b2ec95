package gateway

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// Artifact is a call's output saved whole in the run archive because it was
// too large to return. Clients read it back through MCP resources/read.
type Artifact struct {
	URI      string `json:"uri"`
	Name     string `json:"name"`
	MIMEType string `json:"mime_type"`
	Size     int64  `json:"size"`
	// Path is where the artifact is on disk, for operators.
	Path string `json:"path,omitempty"`
}

// ArtifactStore saves large outputs and serves them back. The run archive
// is the gateway's store.
type ArtifactStore interface {
	// SaveArtifact stores data, whole, as an artifact of call. name is a
	// file name (no directories) unique within the call.
	SaveArtifact(call *Call, name, mimeType string, data []byte) (Artifact, error)
	// ReadArtifact returns an artifact's bytes and MIME type by its URI.
	ReadArtifact(uri string) (data []byte, mimeType string, err error)
}

// ArtifactOwners is implemented by an [ArtifactStore] that records who made
// each artifact: the identity of the call it was saved for ([Call.Identity]).
// ArtifactOwner returns it for the artifact at uri, "" when none was
// recorded (an artifact saved before owners were, or for a call of no
// identity). The MCP mirror serves an artifact that has an owner to
// callers of that identity only; to others it is "resource not found", as
// an artifact that does not exist (the refusal reads as the run archive's
// ReadArtifact error for one: [ErrNoArtifact], then the URI quoted).
type ArtifactOwners interface {
	ArtifactOwner(uri string) (string, error)
}

// ErrNoArtifact is the error (wrapped) of an [ArtifactStore]'s ReadArtifact
// for a URI that names no artifact: resources/read answers it as "resource
// not found".
var ErrNoArtifact = errors.New("no such artifact")

// summarizeStage keeps results small. When a result's output is over the
// limit (MaxOutputBytes, counting text and binary data), the output is
// written whole to the run archive as an artifact and replaced by a bounded
// summary: the sizes, the head and the tail of the text, and a
// resource_link whose URI the client can read with resources/read. Binary
// parts (images, audio, blobs) over the limit are replaced by links alone.
// The structured output, if any, is left as it is: it must keep matching
// the tool's output schema.
func (p *Pipeline) summarizeStage(next Handler) Handler {
	if p.opts.Artifacts == nil {
		return next
	}
	return func(ctx context.Context, call *Call) *Result {
		res := next(ctx, call)
		p.stageEvent(ctx, "executed")
		if outputSize(res.Output) <= p.limitsOf(call).MaxOutputBytes {
			return res
		}
		return p.summarize(call, res)
	}
}

func outputSize(parts []Part) int {
	n := 0
	for _, p := range parts {
		n += partSize(p)
	}
	return n
}

func (p *Pipeline) summarize(call *Call, res *Result) *Result {
	max := p.limitsOf(call).MaxOutputBytes
	out := make([]Part, 0, len(res.Output)+2)

	// The text parts, when they are over the limit themselves (or the
	// binary parts alone would fit), become one artifact and one summary,
	// in the place of the first; otherwise they stay as they are, where
	// they are (a caption beside its image), and only binary parts go.
	var texts []TextPart
	textLen := 0
	for _, part := range res.Output {
		if t, ok := part.(TextPart); ok {
			texts = append(texts, t)
			textLen += len(t.Text)
		}
	}
	if len(texts) > 1 {
		textLen += len(texts) - 1 // the line breaks that join them
	}
	if len(texts) > 0 && (textLen > max/2 || outputSize(res.Output)-textLen <= max) {
		joined := make([]string, len(texts))
		for i, t := range texts {
			joined[i] = t.Text
		}
		summary, link := p.saveText(call, strings.Join(joined, "\n"), max)
		// The summary speaks for every text part: it keeps their
		// annotations (an audience, say) and _meta when they all have the
		// same, and has none when they differ.
		first := texts[0]
		for _, t := range texts[1:] {
			if !bytes.Equal(t.Annotations, first.Annotations) || !bytes.Equal(t.Meta, first.Meta) {
				first.Annotations, first.Meta = nil, nil
				break
			}
		}
		placed := false
		for _, part := range res.Output {
			if _, ok := part.(TextPart); !ok {
				out = append(out, part)
			} else if !placed {
				placed = true
				out = append(out, TextPart{Text: summary, Annotations: first.Annotations, Meta: first.Meta})
				if link != nil {
					out = append(out, link)
				}
			}
		}
	} else {
		out = append(out, res.Output...)
	}

	// Binary parts, largest first, until the output fits.
	for outputSize(out) > max {
		i, size := largestBinary(out)
		if i < 0 || size == 0 {
			break
		}
		out[i] = p.saveBinary(call, i, out[i])
	}

	summarized := *res
	summarized.Output = out
	return &summarized
}

// saveText saves text as an artifact and returns the summary that replaces
// it and a link to the artifact (nil if saving failed).
func (p *Pipeline) saveText(call *Call, text string, max int) (string, Part) {
	lines := strings.Count(text, "\n") + 1
	headTail := max / 4
	head := cutHead(text, headTail)
	tail := cutTail(text[len(head):], headTail)
	omitted := len(text) - len(head) - len(tail)

	art, err := p.opts.Artifacts.SaveArtifact(call, "output.txt", "text/plain; charset=utf-8", []byte(text))
	var b strings.Builder
	if err != nil {
		p.log.Error("saving artifact", "call_id", call.ID, "tool", call.Name, "err", err)
		call.ArtifactErrors = append(call.ArtifactErrors, fmt.Sprintf("output.txt (%d bytes): %v", len(text), err))
		fmt.Fprintf(&b, "[output truncated: %d bytes, %d lines, over the %d-byte limit; the full output could not be saved: %v]\n", len(text), lines, max, err)
	} else {
		call.Artifacts = append(call.Artifacts, art)
		fmt.Fprintf(&b, "[output truncated: %d bytes, %d lines, over the %d-byte limit. The full output is saved as %s (resources/read)]\n", len(text), lines, max, art.URI)
	}
	fmt.Fprintf(&b, "--- first %d bytes ---\n%s\n", len(head), head)
	if omitted > 0 {
		fmt.Fprintf(&b, "--- %d bytes omitted ---\n", omitted)
	}
	if len(tail) > 0 {
		fmt.Fprintf(&b, "--- last %d bytes ---\n%s", len(tail), tail)
	}
	if err != nil {
		return b.String(), nil
	}
	size := art.Size
	return b.String(), ResourceLinkPart{URI: art.URI, Name: art.Name, MIMEType: art.MIMEType, Size: &size,
		Description: fmt.Sprintf("Full output of %s (%d bytes)", call.Name, len(text))}
}

func largestBinary(parts []Part) (int, int) {
	best, bestSize := -1, 0
	for i, part := range parts {
		switch part.(type) {
		case ImagePart, AudioPart, ResourcePart, RawPart:
			if s := partSize(part); s > bestSize {
				best, bestSize = i, s
			}
		}
	}
	return best, bestSize
}

// saveBinary saves one non-text part and returns the link replacing it (or
// a text note if saving failed, so that the output still shrinks).
func (p *Pipeline) saveBinary(call *Call, i int, part Part) Part {
	part = Typed(part) // an upstream's image, say, is saved as the image
	var data []byte
	mime, ext := "application/octet-stream", "bin"
	switch v := part.(type) {
	case ImagePart:
		data, mime, ext = v.Data, v.MIMEType, "img"
	case AudioPart:
		data, mime, ext = v.Data, v.MIMEType, "audio"
	case ResourcePart:
		if v.Resource.Text != nil {
			data, ext = []byte(*v.Resource.Text), "txt"
		} else {
			data = v.Resource.Blob
		}
		if v.Resource.MIMEType != "" {
			mime = v.Resource.MIMEType
		}
	case RawPart:
		data, mime, ext = v.JSON, "application/json", "json"
	}
	name := fmt.Sprintf("part-%d.%s", i, ext)
	art, err := p.opts.Artifacts.SaveArtifact(call, name, mime, data)
	if err != nil {
		p.log.Error("saving artifact", "call_id", call.ID, "tool", call.Name, "err", err)
		call.ArtifactErrors = append(call.ArtifactErrors, fmt.Sprintf("%s (%d bytes): %v", name, len(data), err))
		return Text(fmt.Sprintf("[%s content of %d bytes omitted: over the %d-byte limit, and it could not be saved: %v]", part.PartType(), len(data), p.limitsOf(call).MaxOutputBytes, err))
	}
	call.Artifacts = append(call.Artifacts, art)
	size := art.Size
	return ResourceLinkPart{URI: art.URI, Name: art.Name, MIMEType: art.MIMEType, Size: &size,
		Description: fmt.Sprintf("%s content of %s (%d bytes), saved because it was over the output limit", part.PartType(), call.Name, len(data))}
}

// cutHead returns a prefix of s of at most n bytes, ending on a line break
// when one is near the cut, and never splitting a UTF-8 sequence.
func cutHead(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	if nl := strings.LastIndexByte(s[:cut], '\n'); nl >= cut-cut/4 && nl > 0 {
		cut = nl + 1
	}
	return s[:cut]
}

// cutTail returns a suffix of s of at most n bytes, starting after a line
// break when one is near the cut, and never splitting a UTF-8 sequence.
func cutTail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	start := len(s) - n
	for start < len(s) && !utf8.RuneStart(s[start]) {
		start++
	}
	if nl := strings.IndexByte(s[start:], '\n'); nl >= 0 && nl < n/4 {
		start += nl + 1
	}
	return s[start:]
}
