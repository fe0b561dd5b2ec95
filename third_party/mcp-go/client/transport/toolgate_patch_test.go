package transport

// toolgate patch: the fast path of item 22 is taken where it is meant to be
// (third_party/README.md); what it decodes is held to v1.2.1's by toolgate's
// FuzzStdioClientResponse.

import "testing"

// TestToolgateResponseDecodedOnce: a response line is read whole by the
// one decoding; a line with a method is read for its kind there (and as a
// notification or request after), and a line without an ID, or one that
// does not decode, is not taken for a response by it.
func TestToolgateResponseDecodedOnce(t *testing.T) {
	for _, line := range []string{
		`{"jsonrpc":"2.0","id":7,"result":{"content":[]}}`,
		`{"jsonrpc":"2.0","id":"a","error":{"code":-32601,"message":"no"}}`,
	} {
		msg, ok := decodeLine([]byte(line))
		if _, isResponse := msg.response(); !ok || !isResponse {
			t.Errorf("%s: not read whole in one decoding", line)
		}
	}
	for _, line := range []string{
		`{"jsonrpc":"2.0","id":7,"method":"ping"}`,
		`{"jsonrpc":"2.0","method":"notifications/message"}`,
	} {
		if msg, ok := decodeLine([]byte(line)); !ok || msg.Method == "" {
			t.Errorf("%s: its kind not read in the one decoding", line)
		}
	}
	for _, line := range []string{
		`{"jsonrpc":"2.0","id":null,"result":{}}`,
		`{"jsonrpc":"2.0","id":7,"error":7}`, // neither an object nor a string
		`not json`,
	} {
		msg, _ := decodeLine([]byte(line))
		if _, isResponse := msg.response(); isResponse {
			t.Errorf("%s: taken for a response by the one decoding; it is the old path's", line)
		}
	}
}
