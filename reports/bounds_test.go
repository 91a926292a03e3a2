package reports

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/vmcp-chaos/vmcp-chaos/harness/history"
	"github.com/vmcp-chaos/vmcp-chaos/internal/fullrun"
)

// maxPage is the bound on a report of the full catalogue and on a
// scorecard of up to five such runs, whatever fails (issue 47).
const maxPage = 1 << 20

// TestReportOfFullRunIsBounded: the report of the full catalogue stays
// under 1 MB when every check passes and when every check fails; the
// counts are whole (every check counted in the summary and the badges),
// and what the page leaves out is counted with where it is.
func TestReportOfFullRunIsBounded(t *testing.T) {
	for _, failed := range []bool{false, true} {
		t.Run(fmt.Sprintf("failed=%v", failed), func(t *testing.T) {
			r := fullrun.Results("gateway", failed)
			in := []Input{{Name: "results.json", Results: r}}
			b := render(t, in)
			t.Logf("full catalogue, every check failed %v: %d scenarios, %d bytes of HTML", failed, len(r.Scenarios), len(b))
			if len(b) > maxPage {
				t.Errorf("report: %d bytes, over %d", len(b), maxPage)
			}
			p := checkStructure(t, b, in)
			page := text(p.root)
			checks := 0
			for _, s := range r.Scenarios {
				checks += len(s.Checks)
			}
			want := fmt.Sprintf("%d passed, 0 failed", checks)
			if failed {
				want = fmt.Sprintf("0 passed, %d failed", checks)
			}
			if !strings.Contains(page, want) {
				t.Errorf("the summary does not count every check (%q)", want)
			}
			// The largest scenario: its checks table shows at most
			// maxCheckRows checks, rows count the rest (every check is
			// shown or counted), and the page says where they are.
			sec := p.ids["r0-s0"]
			shown, counted := 0, 0
			for _, tr := range find(find(sec, "table", "checks")[0], "tr", "") {
				if hasClass(tr, "more") {
					var n int
					fmt.Sscanf(strings.TrimPrefix(strings.TrimPrefix(text(tr), "… "), "and "), "%d", &n)
					counted += n
				} else if len(find(tr, "td", "")) > 0 {
					shown++
				}
			}
			if shown > maxCheckRows || shown+counted != len(r.Scenarios[0].Checks) {
				t.Errorf("%s: %d checks shown + %d counted, of %d", r.Scenarios[0].Name, shown, counted, len(r.Scenarios[0].Checks))
			}
			if where := find(sec, "p", "more"); len(where) != 1 || !strings.Contains(text(where[0]), "results.json") || !strings.Contains(text(where[0]), "chaos report --full") {
				t.Error("the page does not say where the checks left out are")
			}
			if failed && !strings.Contains(page, "more: every place is in the results' findings") {
				t.Error("the findings' places left out are not counted")
			}
		})
	}
}

// TestScorecardOfFiveFailingRunsIsBounded: five gateways side by side,
// each failing every check of the full catalogue: the scorecard stays
// under 1 MB and opens with the property × gateway matrix, each cell
// counting every failed check of the property.
func TestScorecardOfFiveFailingRunsIsBounded(t *testing.T) {
	var in []Input
	for i := range 5 {
		r := fullrun.Results(fmt.Sprintf("gateway-%d", i), true)
		in = append(in, Input{Name: fmt.Sprintf("gateway-%d.json", i), Results: r})
	}
	b := render(t, in)
	t.Logf("scorecard of 5 runs of the full catalogue, every check failed: %d bytes", len(b))
	if len(b) > maxPage {
		t.Errorf("scorecard: %d bytes, over %d", len(b), maxPage)
	}
	p := checkStructure(t, b, in)
	m := p.ids["compare-matrix"]
	if m == nil || strings.Index(string(b), `id="compare-matrix"`) > strings.Index(string(b), `class="run"`) {
		t.Fatal("the scorecard does not open with the matrix")
	}
	counts := propCounts(in[0].Results)
	for _, tr := range find(m, "tr", "") {
		cells := find(tr, "td", "")
		if len(cells) == 0 {
			continue
		}
		if len(cells) != 5 {
			t.Fatalf("matrix row %q: %d cells", text(tr), len(cells))
		}
		for _, td := range cells {
			if !hasClass(td, "m-failed") {
				t.Errorf("matrix row %q: cell %q, want failed", text(tr), text(td))
			}
		}
		for p, n := range counts {
			if strings.Contains(text(tr), p.Text()) && text(cells[0]) != fmt.Sprintf("✖ %d", n[history.CheckFailed]) {
				t.Errorf("matrix %s: %q, want ✖ %d", p, text(cells[0]), n[history.CheckFailed])
			}
		}
	}
}

// TestFullReportShowsEverything: Options.Full (chaos report --full) lifts
// the bounds: every check has its row.
func TestFullReportShowsEverything(t *testing.T) {
	r := fullrun.Results("gateway", true)
	r.Scenarios = r.Scenarios[:1]
	var buf bytes.Buffer
	if err := Render(&buf, []Input{{Results: r}}, Options{Full: true}); err != nil {
		t.Fatal(err)
	}
	p := parse(t, buf.Bytes())
	table := find(p.ids["r0-s0"], "table", "checks")[0]
	rows := find(table, "tr", "cv-failed")
	if len(rows) != len(r.Scenarios[0].Checks) || len(find(table, "tr", "more")) > 0 {
		t.Errorf("full report: %d check rows of %d checks", len(rows), len(r.Scenarios[0].Checks))
	}
}

// TestLoadReadsTheEventLog: chaos report reads a bounded results file
// and the event log beside it (every event back, as the run recorded
// them); without the log it renders what the results keep and says, per
// scenario, how many events are in the log and its name; a log that is
// malformed, or named by a path, is an error naming the file.
func TestLoadReadsTheEventLog(t *testing.T) {
	r := fullrun.Results("gateway", true)
	r.Scenarios = slices.DeleteFunc(r.Scenarios, func(s history.ScenarioResult) bool { // the load scenarios, and two small ones
		return !strings.HasPrefix(s.Name, "load/") && !strings.HasPrefix(s.Name, "keepalive/")
	})
	dir := t.TempDir()
	path := filepath.Join(dir, "results.json")
	if err := r.WriteSplit(path); err != nil {
		t.Fatal(err)
	}
	in, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range in[0].Results.Scenarios {
		if len(s.Events) != len(r.Scenarios[i].Events) || s.EventsOmitted != 0 {
			t.Errorf("%s: %d events (%d omitted), recorded %d", s.Name, len(s.Events), s.EventsOmitted, len(r.Scenarios[i].Events))
		}
	}
	if b := string(render(t, in)); strings.Contains(b, `class="omitted"`) || !strings.Contains(b, "4500 calls, drawn as calls started per") {
		t.Error("the report of the results with their event log does not draw every call")
	}

	log := history.EventsPath(path)
	data, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	os.Remove(log)
	in, err = Load(path)
	if err != nil {
		t.Fatalf("results without their event log: %v", err)
	}
	b := render(t, in)
	p := checkStructure(t, b, in)
	load := p.ids["r0-s0"]
	if om := find(load, "p", "omitted"); len(om) != 1 || !strings.Contains(text(om[0]), fmt.Sprintf("%d more events", in[0].Results.Scenarios[0].EventsOmitted)) ||
		!strings.Contains(text(om[0]), "results.events.json") {
		t.Errorf("the report does not say how many events are in the missing log: %q", text(load))
	}

	os.WriteFile(log, append(data[:len(data)/2:len(data)/2], []byte("\n")...), 0o644)
	if _, err := Load(path); err == nil || !strings.Contains(err.Error(), log) {
		t.Errorf("a cut event log: %v, want an error naming it", err)
	}
	bad := strings.Replace(string(data), `"atMs":`, `"atMs":-`, 1)
	os.WriteFile(log, []byte(bad), 0o644)
	if _, err := Load(path); err == nil || !strings.Contains(err.Error(), log) || !strings.Contains(err.Error(), "negative time") {
		t.Errorf("an event log with a negative time: %v", err)
	}
	res, _ := os.ReadFile(path)
	os.WriteFile(path, []byte(strings.Replace(string(res), `"eventsFile": "results.events.json"`, `"eventsFile": "../x.json"`, 1)), 0o644)
	if _, err := Load(path); err == nil || !strings.Contains(err.Error(), "eventsFile") {
		t.Errorf("an eventsFile that is a path: %v", err)
	}
	os.WriteFile(path, []byte(strings.Replace(string(res), `"eventsOmitted": `, `"eventsOmitted": -`, 1)), 0o644)
	if _, err := Load(path); err == nil || !strings.Contains(err.Error(), "eventsOmitted: negative") {
		t.Errorf("a negative eventsOmitted: %v", err)
	}
}
