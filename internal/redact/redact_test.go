package redact

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestText: every kind of credential is replaced, ordinary text is left
// alone.
func TestText(t *testing.T) {
	for in, want := range map[string]string{
		"Authorization: Bearer abc.def-ghi":                 "Authorization: [redacted]",
		`{"authorization":"Basic dXNlcjpwYXNz"}`:            `{"authorization":"[redacted]"}`,
		"got bearer eyJhbGciOiJIUzI1NiJ9.x.y back":          "got bearer [redacted] back",
		"GET https://user:pa55@host:8080/mcp failed":        "GET https://[redacted]@host:8080/mcp failed",
		"http://token@host/x":                               "http://[redacted]@host/x",
		`"upstream":"http://user:PASSWORD@127.0.0.1:1/mcp"`: `"upstream":"http://[redacted]@127.0.0.1:1/mcp"`,
		"/mcp?access_token=abc123&x=1":                      "/mcp?access_token=[redacted]&x=1",
		`{"api_key": "k-1", "client_secret":"s"}`:           `{"api_key": "[redacted]", "client_secret":"[redacted]"}`,
		"password=hunter2 ok":                               "password=[redacted] ok",
		`backend "beta" unavailable: HTTP 403 Forbidden`:    `backend "beta" unavailable: HTTP 403 Forbidden`,
		"session vmcp-1591dea88725a083 at http://127.0.0.1": "session vmcp-1591dea88725a083 at http://127.0.0.1",
	} {
		if got := Text(in); got != want {
			t.Errorf("Text(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestTextKeepsJSONValid: a JSON document whose strings hold credentials
// between escaped quotes and beside backslashes is still valid JSON once
// redacted, and the credentials are gone. (A credential holding a quote
// or a backslash itself is redacted up to that character only.)
func TestTextKeepsJSONValid(t *testing.T) {
	v := map[string]any{
		"tokens":        5,
		"max_tokens":    []int{1},
		"authorization": map[string]any{"x_token": 1.5, "secret": true, "password": nil},
		"error":         `POST http://u:pw-canary@h/mcp: "Authorization: Bearer tok-canary-123" \ token="tok-canary"`,
		"nested":        []string{`password: 'pw-canary' \\ end`, "Proxy-Authorization=Basic dXNlcjpwYXNzY2FuYXJ5"},
		"url":           "https://k-canary@example.com/x",
	}
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	out := Text(string(data))
	if !json.Valid([]byte(out)) {
		t.Fatalf("not JSON once redacted:\n%s", out)
	}
	if strings.Contains(out, "canary") || strings.Contains(out, "dXNlcjpwYXNzY2FuYXJ5") {
		t.Fatalf("a credential survived:\n%s", out)
	}
	var back map[string]any
	if err := json.Unmarshal([]byte(out), &back); err != nil {
		t.Fatal(err)
	}
	if back["tokens"] != 5.0 || back["authorization"].(map[string]any)["x_token"] != 1.5 {
		t.Fatalf("a value that is not a string changed:\n%s", out)
	}
}

// TestSecret: a registered value is redacted wherever it appears; a short
// one is not registered.
func TestSecret(t *testing.T) {
	Secret("  s3cr3t-value-9  ")
	Secret("ab")
	if got := Text(`{"note":"sent s3cr3t-value-9 as is","x":"ab"}`); got != `{"note":"sent [redacted] as is","x":"ab"}` {
		t.Fatalf("Text = %q", got)
	}
}

// TestWriter: complete lines go out redacted at once; a partial line
// waits for its end or Flush, and a credential split across two writes
// is still redacted.
func TestWriter(t *testing.T) {
	var out strings.Builder
	w := NewWriter(&out)
	_, _ = w.Write([]byte("ready http://user:pass"))
	if out.Len() != 0 {
		t.Fatalf("a partial line went out: %q", out.String())
	}
	_, _ = w.Write([]byte("word@host/mcp\nnext token=abc"))
	if out.String() != "ready http://[redacted]@host/mcp\n" {
		t.Fatalf("after a line: %q", out.String())
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if out.String() != "ready http://[redacted]@host/mcp\nnext token=[redacted]" {
		t.Fatalf("after Flush: %q", out.String())
	}
}

// TestTextTwiceIsOnce: redacting redacted text changes nothing (chaos
// report redacts each input once read and each text once rendered).
func TestTextTwiceIsOnce(t *testing.T) {
	t.Parallel()
	for _, in := range []string{"internal error (api_key=hunter2)", "password=abc] and token: xyz;", `{"secret": "s3cr3t]x"}`,
		"Authorization: Bearer abcdefgh12", "GET http://u:p@h/mcp?access_token=abc", "password=[redacted]]"} {
		once := Text(in)
		if twice := Text(once); twice != once {
			t.Errorf("%q: once %q, twice %q", in, once, twice)
		}
	}
}

// FuzzTextKeepsJSON: whatever keys and string, number or nested values a
// JSON document holds, it is still valid JSON once redacted, and
// redacting it again changes nothing.
func FuzzTextKeepsJSON(f *testing.F) {
	f.Add("authorization", "Bearer abcdefgh12", 5.0)
	f.Add("x_token", `a"b\c`, 1.5)
	f.Add("url", "http://u:p@h/x", 0.0)
	f.Add("password", "", -1.0)
	f.Fuzz(func(t *testing.T, key, value string, num float64) {
		doc := map[string]any{key: value, key + "s": num, "nested": map[string]any{key: []any{value, num, nil}}, "text": key + ": " + value}
		data, err := json.MarshalIndent(doc, "", "  ")
		if err != nil {
			return // NaN, infinities
		}
		out := Text(string(data))
		if !json.Valid([]byte(out)) {
			t.Fatalf("not JSON once redacted:\n%s\n->\n%s", data, out)
		}
		if again := Text(out); again != out {
			t.Fatalf("redacting twice changes it:\n%s\n->\n%s", out, again)
		}
	})
}
