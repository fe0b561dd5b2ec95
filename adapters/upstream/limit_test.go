package upstream

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"unicode/utf8"
)

func readAllLines(t *testing.T, r io.Reader) []string {
	t.Helper()
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return strings.SplitAfter(string(b), "\n")
}

func TestLineLimiter(t *testing.T) {
	big := `{"jsonrpc":"2.0","result":{"content":[{"type":"text","text":"` + strings.Repeat("x", 300) + `","id":99}]},"id":7}`
	for _, tc := range []struct {
		name string
		in   string
		max  int64
		want []string // lines out; "ERR:id" for a refusal of that id
	}{
		{"small lines pass", "{\"id\":1}\n{\"id\":2}\n", 100, []string{"{\"id\":1}\n", "{\"id\":2}\n"}},
		{"exactly the limit", "{\"id\":1234}\n", 12, []string{"{\"id\":1234}\n"}},
		{"one byte over, id first", "{\"id\":12345}\n", 12, []string{"ERR:12345"}},
		{"id after a big result", big + "\n{\"id\":8}\n", 100, []string{"ERR:7", "{\"id\":8}\n"}},
		{"string id", `{"result":"` + strings.Repeat("y", 200) + `","id":"a\"b"}` + "\n", 100, []string{`ERR:"a\"b"`}},
		{"no id: dropped", `{"method":"notifications/message","params":{"data":"` + strings.Repeat("z", 200) + `"}}` + "\n{\"id\":3}\n", 100, []string{"{\"id\":3}\n"}},
		{"last line without newline", "{\"id\":1}", 100, []string{"{\"id\":1}"}},
		{"oversized last line without newline", `{"id":5,"r":"` + strings.Repeat("q", 100) + `"}`, 50, []string{"ERR:5"}},
	} {
		// Read is how a reader sees it; ReadLine how the stdio transport
		// reads it (third_party item 73).
		for _, how := range []string{"Read", "ReadLine"} {
			t.Run(tc.name+"/"+how, func(t *testing.T) {
				l := newLineLimiter(strings.NewReader(tc.in), tc.max, "up", nil)
				l.r = bufioSmall(tc.in) // small buffer: lines span several reads
				var lines []string
				if how == "Read" {
					lines = readAllLines(t, l)
				} else {
					lines = readEachLine(t, l)
				}
				var got []string
				for _, line := range lines {
					if line == "" {
						continue
					}
					if strings.Contains(line, "max_result_bytes") {
						var m struct {
							ID json.RawMessage `json:"id"`
						}
						if err := json.Unmarshal([]byte(line), &m); err != nil {
							t.Fatalf("refusal line is not JSON: %v %s", err, line)
						}
						line = "ERR:" + string(m.ID)
					}
					got = append(got, line)
				}
				if strings.Join(got, "|") != strings.Join(tc.want, "|") {
					t.Errorf("got %q, want %q", got, tc.want)
				}
			})
		}
	}
}

// readEachLine reads l's lines with ReadLine until it fails, and checks
// that each line is a slice of its own: the transport keeps parts of one
// (a response's result) while it reads the next.
func readEachLine(t *testing.T, l *lineLimiter) []string {
	t.Helper()
	var lines [][]byte
	var kept []string
	for {
		line, err := l.ReadLine()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, line)
		kept = append(kept, string(line))
	}
	for i, line := range lines {
		if string(line) != kept[i] {
			t.Fatalf("line %d changed to %q after later reads, was %q", i, line, kept[i])
		}
	}
	return kept
}

// A large message, once passed on, does not keep its buffer: what the
// limiter holds between messages is bounded by lineKeep, not by the
// largest message the upstream ever sent (up to max_result_bytes, 16 MiB
// by default, for the life of the connection).
func TestLineLimiterLetsGoOfALargeLine(t *testing.T) {
	in := `{"id":1,"result":"` + strings.Repeat("x", 4<<20) + "\"}\n{\"id\":2}\n"
	l := newLineLimiter(strings.NewReader(in), 16<<20, "up", nil)
	p := make([]byte, 32<<10)
	var got int
	for got < len(in) {
		n, err := l.Read(p)
		got += n
		if err != nil {
			t.Fatalf("after %d bytes: %v", got, err)
		}
		if got == len(in)-len("{\"id\":2}\n") { // the large line passed on whole
			if c := cap(l.line); c > lineKeep {
				t.Fatalf("after the 4 MiB line the limiter keeps a %d-byte buffer, want at most %d", c, lineKeep)
			}
		}
	}
	if c := cap(l.line); c > lineKeep {
		t.Errorf("after a small line the limiter keeps a %d-byte buffer, want at most %d", c, lineKeep)
	}

	// Read by lines, as the stdio transport reads: the large line is
	// handed over, not kept, and stays as it was while the next is read.
	l = newLineLimiter(strings.NewReader(in), 16<<20, "up", nil)
	lines := readEachLine(t, l)
	if len(lines) != 2 || len(lines[0]) != len(in)-len("{\"id\":2}\n") {
		t.Fatalf("read %d lines, want the large one and a small one", len(lines))
	}
	if c := cap(l.line); c > lineKeep {
		t.Errorf("after ReadLine the limiter keeps a %d-byte buffer, want at most %d", c, lineKeep)
	}
}

func TestLimitedBodyStream(t *testing.T) {
	ev := func(n int) string { return "event: message\ndata: " + strings.Repeat("d", n) + "\n\n" }
	for _, tc := range []struct {
		name   string
		body   string
		stream bool
		max    int64
		fail   bool
	}{
		{"json within", strings.Repeat("j", 100), false, 100, false},
		{"json over", strings.Repeat("j", 101), false, 100, true},
		{"events each within, many in all", strings.Repeat(ev(50), 100), true, 100, false},
		{"crlf events within", strings.Repeat("data: "+strings.Repeat("d", 50)+"\r\n\r\n", 100), true, 100, false},
		{"one event over", ev(50) + ev(200) + ev(10), true, 100, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := &limitedBody{rc: io.NopCloser(&oneByteReader{r: strings.NewReader(tc.body)}), max: tc.max, stream: tc.stream, upstream: "up"}
			_, err := io.ReadAll(b)
			if (err != nil) != tc.fail || err != nil && !strings.Contains(err.Error(), "max_result_bytes") {
				t.Errorf("err = %v, want failure %v", err, tc.fail)
			}
		})
	}
}

// oneByteReader returns at most 7 bytes a read, so that events and lines
// are split across reads.
type oneByteReader struct{ r io.Reader }

func (o *oneByteReader) Read(p []byte) (int, error) { return o.r.Read(p[:min(len(p), 7)]) }

func FuzzLineLimiter(f *testing.F) {
	f.Add([]byte("{\"id\":1}\n{\"result\":\"xxxxxxxxxxxxxxxxxxxxxxxxx\",\"id\":2}\n"), 20, false)
	f.Add([]byte("\uFEFFbanner\n{\"jsonrpc\":\"2.0\",\"id\":1}\n{\"level\":30}\n\xff\xfe\n"), 64, true)
	f.Fuzz(func(t *testing.T, in []byte, max int, watched bool) {
		if max < 16 || max > 1<<16 {
			return
		}
		l := newLineLimiter(bytes.NewReader(in), int64(max), "up", nil)
		var strays []string
		if watched { // as a stdio upstream's stdout is read (stdout.go)
			l.watch = newStdoutWatch(func(text string, _ bool) { strays = append(strays, text) })
		}
		out, _ := io.ReadAll(l)
		for _, line := range bytes.SplitAfter(out, []byte("\n")) {
			refusal := bytes.Contains(line, []byte("max_result_bytes"))
			if len(line) > max && !refusal {
				t.Fatalf("a line of %d bytes passed a limit of %d", len(line), max)
			}
			if watched && !refusal && isStray(line) {
				t.Fatalf("a stray line passed: %q", line)
			}
		}
		for _, s := range strays {
			if !utf8.ValidString(s) || len(s) > strayKeep || strings.HasSuffix(s, "\n") {
				t.Fatalf("a stray line's text %q", s)
			}
		}
	})
}

func bufioSmall(s string) *bufio.Reader { return bufio.NewReaderSize(strings.NewReader(s), 16) }

// BenchmarkLineLimiter reads typical responses through the limiter as the
// stdio transport does, with and without the stray-line watch (stdout.go).
func BenchmarkLineLimiter(b *testing.B) {
	line := `{"jsonrpc":"2.0","id":12,"result":{"content":[{"type":"text","text":"` + strings.Repeat("x", 120) + `"}],"isError":false}}` + "\n"
	in := strings.Repeat(line, 1000)
	for _, watch := range []bool{false, true} {
		name := "plain"
		if watch {
			name = "watched"
		}
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(in)))
			for b.Loop() {
				l := newLineLimiter(strings.NewReader(in), 16<<20, "up", nil)
				if watch {
					l.watch = newStdoutWatch(nil)
				}
				for {
					if _, err := l.ReadLine(); err != nil {
						break
					}
				}
			}
		})
	}
}
