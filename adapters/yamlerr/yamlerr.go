// Package yamlerr places the YAML parser's errors where a person looks.
// go.yaml.in/yaml/v3 reports a flow list or map that is never closed
// (`roots: [/srv/notes` with no "]") on the line before the one that
// opened it, which sends the reader to the wrong place. toolgate parses
// YAML written by hand in two places, its configuration file and a
// skill's front matter, and both report such errors through Place.
package yamlerr

import (
	"fmt"
	"regexp"
	"strings"
)

// yamlLine is the line number the YAML parser puts in its messages.
var yamlLine = regexp.MustCompile(`^yaml: line \d+: `)

// Place is err, an error of parsing data, with an unclosed flow list or
// map placed on the line of its bracket: the parser names the line before
// ("line 1" for `roots: [/srv/notes` on line 2). That line is found by a
// scan that skips quoted text and comments. Other errors are returned as
// they are.
func Place(data []byte, err error) error {
	msg := err.Error()
	if !strings.Contains(msg, "did not find expected ',' or ']'") && !strings.Contains(msg, "did not find expected ',' or '}'") {
		return err
	}
	type open struct {
		b    byte
		line int
	}
	var stack []open
	line := 1
	var quote byte
	for i := 0; i < len(data); i++ {
		c := data[i]
		switch {
		case c == '\n':
			line++
			if quote == '\'' { // a single-quoted scalar may span lines; others end here
				continue
			}
			quote = 0
		case quote != 0:
			if c == quote && (quote == '\'' || i == 0 || data[i-1] != '\\') {
				quote = 0
			}
		case c == '"' || c == '\'':
			quote = c
		case c == '#' && (i == 0 || data[i-1] == ' ' || data[i-1] == '\t'):
			for i < len(data) && data[i] != '\n' {
				i++
			}
			i-- // the newline is counted above
		case c == '[' || c == '{':
			stack = append(stack, open{c, line})
		case (c == ']' || c == '}') && len(stack) > 0:
			stack = stack[:len(stack)-1]
		}
	}
	if len(stack) == 0 {
		return err
	}
	o := stack[len(stack)-1]
	kind, closer := "list", "]"
	if o.b == '{' {
		kind, closer = "map", "}"
	}
	// The parser's own words, without the line it got wrong: "line 3: ...
	// (yaml: line 2: ...)" left the reader to choose.
	said := yamlLine.ReplaceAllString(msg, "")
	return fmt.Errorf("line %d: the flow %s opened with %q is not closed with %q (the YAML parser: %s)", o.line, kind, string(o.b), closer, said)
}
