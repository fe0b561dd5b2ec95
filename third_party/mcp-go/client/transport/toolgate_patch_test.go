package transport

// toolgate patch: the fast path of item 22 is taken where it is meant to be
// (third_party/README.md); what it decodes is held to v1.2.1's by toolgate's
// FuzzStdioClientResponse.

import "testing"

// TestToolgateResponseDecodedOnce: a response line is read by
// decodeResponseOnce; a line with a method, or without an ID, is not.
func TestToolgateResponseDecodedOnce(t *testing.T) {
	for _, line := range []string{
		`{"jsonrpc":"2.0","id":7,"result":{"content":[]}}`,
		`{"jsonrpc":"2.0","id":"a","error":{"code":-32601,"message":"no"}}`,
	} {
		if _, ok := decodeResponseOnce([]byte(line)); !ok {
			t.Errorf("%s: not read in one decoding", line)
		}
	}
	for _, line := range []string{
		`{"jsonrpc":"2.0","id":7,"method":"ping"}`,
		`{"jsonrpc":"2.0","method":"notifications/message"}`,
		`{"jsonrpc":"2.0","id":null,"result":{}}`,
		`not json`,
	} {
		if _, ok := decodeResponseOnce([]byte(line)); ok {
			t.Errorf("%s: read as a response in one decoding; it is the old path's", line)
		}
	}
}
