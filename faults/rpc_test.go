package faults

import "testing"

// TestParseMessageCancels: a notifications/cancelled says which request
// it cancels (a backend's log links the two); nothing else does.
func TestParseMessageCancels(t *testing.T) {
	for _, tc := range []struct{ body, want string }{
		{`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7,"reason":"x"}}`, "7"},
		{`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"a-1"}}`, `"a-1"`},
		{`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":null}}`, ""},
		{`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","requestId":9}}`, ""},
	} {
		if got := string(ParseMessage([]byte(tc.body)).Cancels); got != tc.want {
			t.Errorf("%s: Cancels %q, want %q", tc.body, got, tc.want)
		}
	}
}
