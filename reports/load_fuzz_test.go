package reports

import (
	"bytes"
	"encoding/json"
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
	for _, seed := range smallSeeds(f) {
		f.Add(seed)
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

// maxSeed bounds a seed of FuzzReadResults. The fuzzer minimizes every
// new input it derives from a seed, rendering a report per try: from the
// 60–110 kB testdata runs, plain `go test -fuzz` (minimize time 60 s)
// spent whole minutes minimizing (13 executions in 60 s, issue 42).
const maxSeed = 1 << 10

// smallSeeds are the testdata runs cut to their first scenario with at
// most one check and one event, texts clipped (every field kind kept),
// each under maxSeed (475 to 742 bytes).
func smallSeeds(f *testing.F) [][]byte {
	files, _ := filepath.Glob("testdata/*.json")
	var seeds [][]byte
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		r, err := history.ReadResults(bytes.NewReader(b))
		if err != nil || len(r.Scenarios) == 0 {
			continue // a results set or a golden page: not a seed
		}
		s := r.Scenarios[0]
		s.Checks = s.Checks[:min(1, len(s.Checks))]
		for i := range s.Checks {
			c := &s.Checks[i]
			c.Expected, c.Observed, c.Reason = clip(c.Expected, 30), clip(c.Observed, 30), clip(c.Reason, 30)
		}
		s.Events = s.Events[:min(1, len(s.Events))]
		s.Reason, s.SkippedChecks, s.Figures = clip(s.Reason, 30), nil, nil
		r.Scenarios, r.Findings = []history.ScenarioResult{s}, nil
		var buf bytes.Buffer
		if err := json.NewEncoder(&buf).Encode(r); err != nil {
			f.Fatal(err)
		}
		if buf.Len() > maxSeed {
			f.Fatalf("seed from %s: %d bytes, over %d", name, buf.Len(), maxSeed)
		}
		seeds = append(seeds, buf.Bytes())
	}
	if len(seeds) == 0 {
		f.Fatal("no seed from testdata")
	}
	return seeds
}
