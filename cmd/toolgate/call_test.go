package main

import (
	"bytes"
	"testing"

	"github.com/toolgate/toolgate/gateway"
)

// TestPrintResultParts: toolgate call shows each kind of content a person
// can read: text as it is, an embedded text resource's URI and text, and
// for what a terminal cannot show (images, blobs, links) what it is and how
// big.
func TestPrintResultParts(t *testing.T) {
	text := "Resource 3: plain text"
	size := int64(4096)
	res := &gateway.Result{Output: []gateway.Part{
		gateway.TextPart{Text: "Here:"},
		gateway.ImagePart{Data: make([]byte, 10), MIMEType: "image/png"},
		gateway.ResourceLinkPart{URI: "toolgate://artifacts/a1", Name: "a1", MIMEType: "text/plain", Size: &size},
		gateway.ResourcePart{Resource: gateway.ResourceContents{URI: "demo://text/3", MIMEType: "text/plain", Text: &text}},
		gateway.ResourcePart{Resource: gateway.ResourceContents{URI: "demo://blob/2", Blob: make([]byte, 55)}},
	}}
	var out bytes.Buffer
	printResult(&env{stdout: &out}, res)
	want := `ok
--- output
Here:
[image image/png, 10 bytes]
[resource link toolgate://artifacts/a1, text/plain, 4096 bytes]
[resource demo://text/3, text/plain]
Resource 3: plain text
[resource demo://blob/2, 55 bytes]
`
	if out.String() != want {
		t.Errorf("printed\n%s\nwant\n%s", out.String(), want)
	}
}
