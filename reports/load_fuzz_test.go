package reports

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vmcp-chaos/vmcp-chaos/harness/history"
)

// FuzzReadResults: `chaos report`'s decoder never panics, and whatever it
// accepts renders to a page with its CSP and nothing it could fetch (no
// payload in the results escapes into markup).
func FuzzReadResults(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.json")
	for _, name := range files {
		if b, err := os.ReadFile(name); err == nil {
			f.Add(b)
		}
	}
	for _, s := range []string{
		`{"schemaVersion":1,"scenarios":[{"name":"<script>alert(1)</script>","verdict":"exploded"}]}`,
		`{"schemaVersion":1,"scenarios":[{"name":"x","verdict":"failed","reason":"<img src=http://x/y>"}]} trailing`,
		"{\"schemaVersion\":1,\"target\":\"\xff\xfe\",\"scenarios\":[]}",
		`{"schemaVersion":1,"scenarios":[{"name":"x","verdict":"interrupted","durationMs":-5}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := history.ReadResults(bytes.NewReader(data))
		if err != nil {
			return
		}
		var page bytes.Buffer
		if err := Render(&page, []Input{{Name: "fuzz.json", Results: r}}, Options{}); err != nil {
			return // refused at render time: fine, as long as nothing panics
		}
		if !strings.Contains(page.String(), `content="default-src 'none'; style-src 'unsafe-inline'; img-src data:"`) {
			t.Fatal("a rendered report without its CSP")
		}
		refs, err := ExternalRefs(bytes.NewReader(page.Bytes()))
		if err != nil || len(refs) > 0 {
			t.Fatalf("the report of accepted results can fetch %v (%v)", refs, err)
		}
	})
}
