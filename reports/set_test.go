package reports

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/net/html"

	"github.com/vmcp-chaos/vmcp-chaos/harness"
	"github.com/vmcp-chaos/vmcp-chaos/harness/history"
)

// benchRun is a results document of two bench scenarios against target,
// with cpu as its ratio.cpu_per_call (the second scenario has it only
// when withOpen).
func benchRun(target string, cpu float64, withOpen bool) *history.Results {
	r := harness.NewResults(nil)
	r.Target = target
	rec := history.NewRecorder("bench/calls/legacy", "bench", "calls")
	rec.SetFigure("ratio.cpu_per_call", cpu)
	rec.SetFigure("ratio.backend_amplification", 1.5)
	rec.Pass()
	r.Add(rec)
	if withOpen {
		rec = history.NewRecorder("bench/open/2-backends", "bench", "open")
		rec.SetFigure("ratio.open", 3)
		rec.Pass()
		r.Add(rec)
	}
	return r
}

// TestLoadSet: a results set (chaos bench --profile A --profile B) is
// one input per run, named by file and target, rendered side by side
// with the bench figures in a table, a column per gateway.
func TestLoadSet(t *testing.T) {
	set := history.NewResultsSet()
	set.Runs = append(set.Runs, benchRun("gw-a", 2.25, true), benchRun("gw-b", 8.75, false))
	p := filepath.Join(t.TempDir(), "bench.json")
	if err := set.WriteFile(p); err != nil {
		t.Fatal(err)
	}
	in, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	if len(in) != 2 || in[0].Name != "bench.json: gw-a" || in[1].Name != "bench.json: gw-b" {
		t.Fatalf("inputs %+v, want bench.json: gw-a and bench.json: gw-b", in)
	}
	b := render(t, in)
	page := checkStructure(t, b, in)
	cmp := page.ids["compare"]
	if cmp == nil {
		t.Fatal("no side-by-side section")
	}
	tables := find(cmp, "table", "figures-cmp")
	if len(tables) != 1 {
		t.Fatalf("%d bench figure tables in the side-by-side section, want 1", len(tables))
	}
	head := text(find(tables[0], "thead", "")[0])
	if !strings.Contains(head, "bench.json: gw-a") || !strings.Contains(head, "bench.json: gw-b") {
		t.Errorf("figure columns %q, want both gateways", head)
	}
	rows := map[string]string{}
	for _, tr := range find(tables[0], "tr", "") {
		var cells []string
		for c := tr.FirstChild; c != nil; c = c.NextSibling {
			if c.Type == html.ElementNode {
				cells = append(cells, strings.TrimSpace(text(c)))
			}
		}
		if len(cells) == 4 {
			rows[cells[1]] = cells[2] + " | " + cells[3]
		}
	}
	for fig, want := range map[string]string{"ratio.cpu_per_call": "2.250 | 8.750", "ratio.backend_amplification": "1.500 | 1.500", "ratio.open": "3 | –"} {
		if rows[fig] != want {
			t.Errorf("row %s = %q, want %q (rows %v)", fig, rows[fig], want, rows)
		}
	}
}

// TestDecodeSetStrict: a set's envelope is decoded strictly, and an error
// inside a run names the run and its byte offset in the file.
func TestDecodeSetStrict(t *testing.T) {
	const run = `{"schemaVersion": 1, "target": "%s", "scenarios": [{"name": "bench/x", "verdict": "%s", "durationMs": 1, "events": []}]}`
	one := func(target, verdict string) string {
		return strings.Replace(strings.Replace(run, "%s", target, 1), "%s", verdict, 1)
	}
	good := `{"schemaVersion": 1, "runs": [` + one("a", "passed") + `, ` + one("b", "passed") + `]}`
	if rs, err := DecodeAll([]byte(good), "set.json"); err != nil || len(rs) != 2 || rs[1].Target != "b" {
		t.Fatalf("good set: %v, %d runs", err, len(rs))
	}
	bad := strings.Replace(good, `"b", "scenarios": [{"name": "bench/x", "verdict": "passed"`, `"b", "scenarios": [{"name": "bench/x", "verdict": "nope"`, 1)
	for _, c := range []struct {
		name, doc string
		offset    int64
		msg       string
	}{
		{"bad verdict in the second run", bad, int64(strings.Index(bad, `"nope"`)), `runs[1]: scenarios[].verdict: unknown verdict "nope"`},
		{"unknown envelope field", strings.Replace(good, `"runs"`, `"extra": 1, "runs"`, 1), 0, `results set: json: unknown field "extra"`},
		{"no runs", `{"schemaVersion": 1, "runs": []}`, 21, "results set: no runs"},
		{"old schema", strings.Replace(good, `{"schemaVersion": 1, "runs"`, `{"schemaVersion": 0, "runs"`, 1), 0, "results set schemaVersion 0"},
		{"trailing data", good + " {}", int64(len(good) + 1), "trailing data"},
	} {
		_, err := DecodeAll([]byte(c.doc), "set.json")
		var ie *InputError
		if !errors.As(err, &ie) || ie.File != "set.json" || ie.Offset != c.offset || !strings.Contains(ie.Msg, c.msg) {
			t.Errorf("%s: got %v, want set.json: byte %d: …%s…", c.name, err, c.offset, c.msg)
		}
	}
	// A single document still decodes as one run.
	if rs, err := DecodeAll([]byte(one("solo", "failed")), "one.json"); err != nil || len(rs) != 1 || rs[0].Target != "solo" {
		t.Errorf("single document: %v, %d runs", err, len(rs))
	}
}
