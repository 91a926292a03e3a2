package reports

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDecodeStrict: what the struct decoding would let through is an
// error naming the file and the byte offset of the fault.
func TestDecodeStrict(t *testing.T) {
	const good = `{"schemaVersion": 1, "scenarios": [{"name": "s", "labels": ["experiment"], "verdict": "failed", "durationMs": 5,
 "checks": [{"name": "c", "verdict": "inconclusive", "atMs": 1}], "figures": {"neg_Ms": -1}, "events": []}]}`
	if _, err := Decode([]byte(good), "good.json"); err != nil {
		t.Fatalf("good: %v", err)
	}
	if _, err := Decode([]byte(strings.Replace(good, `"failed"`, `"inconclusive"`, 1)), "good.json"); err != nil {
		t.Fatalf("an inconclusive scenario: %v", err)
	}
	at := func(s, sub string) int64 { return int64(strings.Index(s, sub)) }
	cases := []struct {
		name, doc string
		offset    int64
		msg       string
	}{
		{"unknown scenario verdict", strings.Replace(good, `"failed"`, `"deviated"`, 1), at(good, `"failed"`), `scenarios[].verdict: unknown verdict "deviated"`},
		{"unknown check verdict", strings.Replace(good, `"inconclusive"`, `"ok"`, 1), at(good, `"inconclusive"`), `scenarios[].checks[].verdict: unknown verdict "ok"`},
		{"negative time", strings.Replace(good, `"atMs": 1`, `"atMs": -1`, 1), at(good, `1}]`), `scenarios[].checks[].atMs: negative time -1 ms`},
		{"negative duration", strings.Replace(good, `"durationMs": 5`, `"durationMs": -5`, 1), at(good, `5,`), "negative time"},
		{"trailing data", good + "\n{}", int64(len(good) + 1), "trailing data after the JSON document"},
		{"trailing garbage", good + " x", int64(len(good) + 1), "trailing data"},
		{"invalid UTF-8", strings.Replace(good, `"name": "c"`, "\"name\": \"c\xff\"", 1), at(good, `c"`) + 1, "invalid UTF-8"},
		{"syntax", `{"schemaVersion": 1,, }`, 20, "not JSON"},
		{"wrong type", `{"schemaVersion": "1"}`, 21, "schemaVersion: want int"},
		{"empty", ``, 0, "empty"},
	}
	for _, c := range cases {
		_, err := Decode([]byte(c.doc), "in.json")
		var ie *InputError
		if !errors.As(err, &ie) || ie.File != "in.json" || ie.Offset != c.offset || !strings.Contains(ie.Msg, c.msg) {
			t.Errorf("%s: got %v (%+v), want in.json: byte %d: …%s…", c.name, err, ie, c.offset, c.msg)
		}
	}
	// Load goes through Decode: the error names the path.
	p := filepath.Join(t.TempDir(), "trail.json")
	os.WriteFile(p, []byte(good+"garbage"), 0o644)
	if _, err := Load(p); err == nil || !strings.Contains(err.Error(), p+": byte ") {
		t.Errorf("Load: %v", err)
	}
}
