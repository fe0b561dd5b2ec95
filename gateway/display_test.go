package gateway

import (
	"bytes"
	"encoding/json"
	"os"
	"testing"
)

// TestDisplayRoundTripGolden decodes display blocks of known and unknown
// types and encodes them again: the bytes must be identical, unknown types,
// unknown fields, HTML characters and number spellings included.
func TestDisplayRoundTripGolden(t *testing.T) {
	in, err := os.ReadFile("testdata/display_roundtrip.json")
	if err != nil {
		t.Fatal(err)
	}
	in = bytes.TrimSpace(in)
	blocks, err := unmarshalDisplay(in)
	if err != nil {
		t.Fatal(err)
	}
	wantTypes := []string{"brief", "diff", "table", "brief", "diff", "progress-bar"}
	for i, b := range blocks {
		if b.BlockType() != wantTypes[i] {
			t.Errorf("block %d: type %q, want %q", i, b.BlockType(), wantTypes[i])
		}
	}
	if _, ok := blocks[0].(BriefBlock); !ok {
		t.Errorf("block 0 decoded as %T, want BriefBlock", blocks[0])
	}
	if d, ok := blocks[1].(DiffBlock); !ok || d.Added != 1 || d.Path != "a.txt" {
		t.Errorf("block 1 decoded as %#v", blocks[1])
	}
	for _, i := range []int{2, 3, 4, 5} { // unknown type, or known type with unknown fields
		if _, ok := blocks[i].(UnknownBlock); !ok {
			t.Errorf("block %d decoded as %T, want UnknownBlock", i, blocks[i])
		}
	}
	out, err := marshalNoEscape(blocks)
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "display_roundtrip.json", append(out, '\n'))
	if !bytes.Equal(out, in) {
		t.Errorf("re-encoded display differs:\n%s\n%s", out, in)
	}
	if r := (&Result{Display: blocks}); r.Brief() != "Wrote 12 bytes to a.txt" {
		t.Errorf("brief %q", r.Brief())
	}
}

// TestPartsRoundTrip decodes content blocks of every MCP type (and a type
// MCP added later) and checks that each encodes back to the same JSON.
func TestPartsRoundTrip(t *testing.T) {
	in, err := os.ReadFile("testdata/parts_roundtrip.json")
	if err != nil {
		t.Fatal(err)
	}
	var raws []json.RawMessage
	if err := json.Unmarshal(in, &raws); err != nil {
		t.Fatal(err)
	}
	wantGo := []string{"gateway.TextPart", "gateway.TextPart", "gateway.ImagePart", "gateway.AudioPart", "gateway.ResourceLinkPart",
		"gateway.ResourcePart", "gateway.ResourcePart", "gateway.RawPart", "gateway.ImagePart", "gateway.RawPart"}
	for i, raw := range raws {
		p, err := UnmarshalPart(raw)
		if err != nil {
			t.Fatalf("part %d: %v", i, err)
		}
		if got := typeName(p); got != wantGo[i] {
			t.Errorf("part %d decoded as %s, want %s", i, got, wantGo[i])
		}
		out, err := marshalNoEscape(p)
		if err != nil {
			t.Fatal(err)
		}
		if _, raw := p.(RawPart); raw && !bytes.Equal(out, raws[i]) {
			t.Errorf("raw part %d changed:\n%s\n%s", i, out, raws[i])
		}
		if !jsonEqual(out, raws[i]) {
			t.Errorf("part %d changed:\n%s\n%s", i, out, raws[i])
		}
	}
	if img := mustPart(t, raws[2]).(ImagePart); string(img.Data) != "\x89PNG\r\n\x1a\n" {
		t.Errorf("image data %q", img.Data)
	}
}

func mustPart(t *testing.T, raw []byte) Part {
	p, err := UnmarshalPart(raw)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func typeName(v any) string {
	switch v.(type) {
	case TextPart:
		return "gateway.TextPart"
	case ImagePart:
		return "gateway.ImagePart"
	case AudioPart:
		return "gateway.AudioPart"
	case ResourceLinkPart:
		return "gateway.ResourceLinkPart"
	case ResourcePart:
		return "gateway.ResourcePart"
	case RawPart:
		return "gateway.RawPart"
	}
	return "?"
}

func FuzzDisplayRoundTrip(f *testing.F) {
	f.Add([]byte(`{"type":"brief","text":"x"}`))
	f.Add([]byte(`{"type":"diff","path":"a","unified":"","added":0,"removed":0}`))
	f.Add([]byte(`{"type":"zzz","a":[1,{"b":null}]}`))
	f.Add([]byte(`{"type":"brief","text":"x","y":1}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		b, err := UnmarshalDisplayBlock(data)
		if err != nil {
			return
		}
		out, err := json.Marshal(b)
		if err != nil {
			t.Fatalf("decoded block does not encode: %v", err)
		}
		if !jsonEqual(out, data) {
			t.Fatalf("round trip changed the block:\n%s\n%s", data, out)
		}
	})
}
