package upstream

import (
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/toolgate/toolgate/gateway"
)

// An HTTP upstream's URL that is not its MCP endpoint (a web server's
// page, a proxy's error) answers with a page, which mcp-go puts whole
// into its error: "request failed with status 501: <!DOCTYPE HTML>\n<html
// ..." across a dozen lines of the log and of `toolgate tools`, and a
// connection refused reads "failed to send request: failed to send
// request: ...". tidyTransportError says the same in one line: the
// status with its name, what the page says (its text without markup, cut
// short), and, for a page of HTML, that it is not an MCP answer.

// failedStatus finds the body mcp-go quotes after a refused request's
// status; the body runs to the end of the message.
var failedStatus = regexp.MustCompile(`request failed with status (\d{3}): `)

// markup matches an HTML tag or comment, and the scripts and styles whose
// text is not the page's.
var markup = regexp.MustCompile(`(?is)<(script|style)\b.*?</(script|style)>|<!--.*?-->|<[^>]*>`)

// An error quotes at most this much of a page's text, and of another
// body (a JSON error, a proxy's text), which says more per byte.
const (
	pageQuoted = 200
	bodyQuoted = 500
)

// tidyTransportError is err with its text in one line, as above; err
// itself when there is nothing to tidy. The result unwraps to err.
func tidyTransportError(err error) error {
	var done *tidyError
	if err == nil || errors.As(err, &done) {
		return err
	}
	msg := err.Error()
	text := strings.ReplaceAll(msg, "failed to send request: failed to send request: ", "failed to send request: ")
	if m := failedStatus.FindStringSubmatchIndex(text); m != nil {
		code, _ := strconv.Atoi(text[m[2]:m[3]])
		body := text[m[1]:]
		status := text[m[2]:m[3]]
		if name := http.StatusText(code); name != "" {
			status += " " + name
		}
		what, quoted := "", bodyQuoted
		if isHTML(body) {
			body = markup.ReplaceAllString(body, " ")
			what, quoted = ", an HTML page, not an MCP answer (is the URL the server's MCP endpoint?)", pageQuoted
		}
		body = strings.Join(strings.Fields(body), " ")
		if len(body) > quoted {
			body = strings.ToValidUTF8(body[:quoted], "") + "…"
		}
		text = fmt.Sprintf("%srequest failed with status %s%s: %q", text[:m[0]], status, what, body)
	}
	if text == msg {
		return err
	}
	return &tidyError{err: err, text: text}
}

// isHTML reports whether a response body is a page of HTML.
func isHTML(body string) bool {
	head := strings.ToLower(strings.TrimSpace(body[:min(len(body), 512)]))
	return strings.HasPrefix(head, "<!doctype html") || strings.HasPrefix(head, "<html") ||
		strings.Contains(head, "<head") || strings.Contains(head, "<body") || strings.Contains(head, "<title")
}

// tidy is tidyTransportError, and for a 401 what to do about it: mcp-go
// says only "authorization required", and toolgate runs no OAuth login
// for its upstreams, so the credentials are in the upstream's headers
// (given, or to give).
func (u *Upstream) tidy(err error) error {
	var done *tidyError
	var auth *transport.AuthorizationRequiredError
	if err == nil || errors.As(err, &done) || !errors.As(err, &auth) {
		return tidyTransportError(err)
	}
	what := `the server requires authorization (401 Unauthorized): give it a token in headers, as Authorization: "Bearer ${TOKEN}" (toolgate runs no OAuth login for its upstreams)`
	for k := range u.cfg.Headers {
		if gateway.IsSecretKey(k) {
			what = fmt.Sprintf("the server refused the credentials in headers.%s (401 Unauthorized): wrong, or expired", k)
			break
		}
	}
	if auth.ResourceMetadataURL != "" {
		what += "; its OAuth metadata is at " + auth.ResourceMetadataURL
	}
	msg := tidyTransportError(err).Error()
	text := strings.Replace(msg, transport.ErrAuthorizationRequired.Error(), what, 1)
	if text == msg {
		text = msg + ": " + what
	}
	return &tidyError{err: err, text: text}
}

// tidyError is an error told in other words.
type tidyError struct {
	err  error
	text string
}

func (e *tidyError) Error() string { return e.text }
func (e *tidyError) Unwrap() error { return e.err }
