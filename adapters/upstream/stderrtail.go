package upstream

import (
	"regexp"
	"strings"
)

// stderrTail keeps the last lines a child wrote to stderr, to say why it
// exited. The reason is rarely the very last line: a Node crash ends with
// its stack and "Node.js v20.11.0", a Go panic with goroutine stacks; a
// Python traceback's last line is its exception. why picks, from the end,
// the first line that is not indented (stack frames are) and reads like
// an error, else the last line.
type stderrTail struct {
	lines []string // oldest first, at most tailLines
}

const (
	tailLines    = 50  // a Node stack and its tail fit
	tailLineKept = 300 // bytes of a line
)

// errorLike matches a line that reports an error: "ModuleNotFoundError:
// ...", "Error: boom", "panic: ...", "FATAL ...".
var errorLike = regexp.MustCompile(`(?i)error|exception|panic|fatal`)

func (t *stderrTail) add(line string) {
	if strings.TrimSpace(line) == "" {
		return
	}
	line = strings.ToValidUTF8(line[:min(len(line), tailLineKept)], "")
	if len(t.lines) == tailLines {
		t.lines = append(t.lines[:0], t.lines[1:]...)
	}
	t.lines = append(t.lines, line)
}

// why is the line that most likely says why the child exited, or "".
func (t *stderrTail) why() string {
	for i := len(t.lines) - 1; i >= 0; i-- {
		if l := t.lines[i]; l[0] != ' ' && l[0] != '\t' && errorLike.MatchString(l) {
			return l
		}
	}
	if len(t.lines) == 0 {
		return ""
	}
	return t.lines[len(t.lines)-1]
}
