package runs

import (
	"bytes"
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

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

// BenchmarkLine builds a tools.jsonl line as CallFinished does for an
// echo call.
func BenchmarkLine(b *testing.B) {
	d := &gateway.Decision{Allow: true, Layer: "runtime", Rule: "runtime.no_capabilities", Reason: "the tool needs no capability; it is not destructive"}
	now := time.Now()
	b.ReportAllocs()
	for b.Loop() {
		l := newLine()
		l.time("time", now)
		l.str("run_id", "20261126T003233Z-e67bd3")
		l.str("call_id", "01a21544-b3e5-7287-b449-2bc4d03dc94a")
		l.str("tool", "echo")
		l.strOmit("toolset", "diagnostics")
		l.strOmit("session", "s-056e09679c78")
		l.strOmit("client", "e2eload/1")
		l.strOmit("identity", "anonymous")
		l.raw("arguments", []byte(`{"text":"hello, toolgate"}`))
		l.str("status", "ok")
		l.boolean("is_error", false)
		l.num("duration_ms", 0.01)
		l.strOmit("brief", "Echoed 15 bytes")
		l.decision(d)
		l.done()
		l.release()
	}
}

// line.key writes member names without escaping them: every name given
// to a line's methods in this package must be a string constant that
// JSON needs no escape for. This reads the package's source to hold it.
func TestLineKeysArePlainConstants(t *testing.T) {
	methods := map[string]bool{"key": true, "str": true, "strOmit": true, "time": true, "boolean": true, "num": true, "strings": true, "raw": true, "value": true}
	plain := regexp.MustCompile(`^"[a-z_]+"$`)
	fset := token.NewFileSet()
	names, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	calls := 0
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok || !methods[sel.Sel.Name] || len(call.Args) == 0 {
				return true
			}
			if id, ok := sel.X.(*ast.Ident); ok && (id.Name == "time" || id.Name == "strings") {
				return true // the packages
			}
			calls++
			lit, ok := call.Args[0].(*ast.BasicLit)
			if k := fset.Position(call.Pos()); !ok || !plain.MatchString(lit.Value) {
				// The methods' own bodies pass their k on.
				if id, isID := call.Args[0].(*ast.Ident); isID && id.Name == "k" {
					return true
				}
				t.Errorf("%s: %s's member name is not a plain string constant", k, sel.Sel.Name)
			}
			return true
		})
	}
	if calls < 30 {
		t.Fatalf("found %d calls of a line's methods; the test no longer finds them", calls)
	}
}
