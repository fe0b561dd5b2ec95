package runs

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/toolgate/toolgate/gateway"
)

// encodingJSON is what encoding/json writes for s (without HTML escaping).
func encodingJSON(s string) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "plain", "quote\" back\\slash", "\x00\x01\x1f\x7f", "\b\f\n\r\t", "é ✓ 😀", "\xff\xfe bad utf8 \xc3", "\u2028\u2029", "<html> & more"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := appendString(nil, s)
		if want := encodingJSON(s); !bytes.Equal(got, want) {
			t.Fatalf("appendString(%q) = %s, encoding/json writes %s", s, got, want)
		}
	})
}

func TestHandBuiltLinesAreJSON(t *testing.T) {
	l := newLine()
	l.str("s", "a\nb\"c\x00")
	l.strOmit("omitted", "")
	l.num("n", 1.25)
	l.boolean("b", true)
	l.strings("list", []string{"x", "y\tz"})
	l.raw("raw", []byte("{\n  \"pretty\": [1,\n 2]\n}"))
	l.decision(&gateway.Decision{Allow: false, Layer: "runtime", Rule: "r", Missing: []string{"net"}})
	l.value("v", map[string]int{"k": 1})
	out := l.done()
	if bytes.Count(out, []byte("\n")) != 1 || out[len(out)-1] != '\n' {
		t.Fatalf("not one line: %q", out)
	}
	var m map[string]any
	if err := json.Unmarshal(out, &m); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if m["s"] != "a\nb\"c\x00" || m["n"] != 1.25 || m["raw"].(map[string]any)["pretty"] == nil || m["decision"].(map[string]any)["rule"] != "r" {
		t.Fatalf("decoded %v", m)
	}
	if _, ok := m["omitted"]; ok {
		t.Error("empty omitempty field written")
	}
	l.release()
}
