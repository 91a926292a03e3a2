package backend

import (
	"encoding/json"
	"testing"
)

// The fast paths of idKey and peekRequest must agree with decoding.
func TestIDKeyFastPathMatchesDecoding(t *testing.T) {
	t.Parallel()
	slow := func(raw string) string {
		var v any
		if err := json.Unmarshal([]byte(raw), &v); err != nil {
			return raw
		}
		b, _ := json.Marshal(v)
		return string(b)
	}
	for _, raw := range []string{`7`, `0`, `-3`, `123456789012345`, `1234567890123456789`, `007`, `-0`, `7.0`, `7e0`,
		`"abc"`, `"a<b"`, `"a\"b"`, `"é"`, `"a\u0041"`, `""`, `"x y-1:2"`} {
		if got, want := idKey(json.RawMessage(raw)), slow(raw); got != want {
			t.Errorf("idKey(%s) = %s, want %s", raw, got, want)
		}
	}
	if idKey(nil) != "" || idKey(json.RawMessage("null")) != "" {
		t.Error("no id must key as empty")
	}
}

func TestPeekRequest(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ body, id, method string }{
		{`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"x"}}`, "3", "tools/call"},
		{`{"jsonrpc":"2.0","id":"a","method":"ping"}`, `"a"`, "ping"},
		{`{"method":"tools/list","id":7.0,"jsonrpc":"2.0"}`, "7", "tools/list"},
		{`{"jsonrpc":"2.0","id":1e1,"method":"x"}`, "10", "x"},
		{`{"jsonrpc":"2.0","method":"notifications/initialized"}`, "", "notifications/initialized"},
		{`{"jsonrpc":"2.0","id":5,"result":{}}`, "", ""},
		{`not json`, "", ""},
	} {
		id, m := peekRequest([]byte(tc.body))
		if id != tc.id || m != tc.method {
			t.Errorf("peekRequest(%s) = %q %q, want %q %q", tc.body, id, m, tc.id, tc.method)
		}
	}
}
