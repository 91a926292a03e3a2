package reports

import (
	"fmt"
	"strings"
	"testing"

	"golang.org/x/net/html"
)

// TestReportOpensWithFindings: a run's section opens with its findings
// (before the summary and the scorecard): each failed property with its
// counts, first evidence and reproducing command; the checks not judged
// grouped below, collapsed.
func TestReportOpensWithFindings(t *testing.T) {
	in := load(t, "outcomes.json")
	p := parse(t, render(t, in))
	run := p.ids["r0"]
	if run == nil {
		t.Fatal("no run section")
	}
	var order []string
	walk(run, func(n *html.Node) {
		if n.Data == "h3" && len(order) < 2 {
			order = append(order, strings.TrimSpace(text(n)))
		}
	})
	if len(order) == 0 || order[0] != "Findings" {
		t.Errorf("the run section's first heading is %q, want Findings", order)
	}
	f := p.ids["r0-findings"]
	if f == nil {
		t.Fatal("no findings block")
	}
	items := find(f, "li", "finding")
	if len(items) != 2 {
		t.Fatalf("%d findings, want 2: %q", len(items), text(f))
	}
	for i, want := range []string{
		"✖ the error names the failing backend: 1 check failed in 1 scenario",
		"✖ checks of no catalogued property: 1 check failed in 1 scenario", // outcomes.json predates properties
	} {
		if got := strings.Join(strings.Fields(text(items[i])), " "); !strings.HasPrefix(got, want) || !strings.Contains(got, "reproduce: chaos run --scenario hang/modern/streamable-http") {
			t.Errorf("finding %d: %q, want it to start %q and say how to reproduce it", i, got, want)
		}
	}
	nj := find(f, "details", "notjudged")
	if len(nj) != 1 || !strings.Contains(text(nj[0]), "not judged (inconclusive), because no call reached beta with the fault applied") {
		t.Errorf("not judged: %q", text(f))
	}
}

// TestScorecardMatrix: the scorecard opens with the property × gateway
// matrix (✔, ✖ with counts, ? inconclusive, — not applicable), and the
// per-scenario comparison comes below it, collapsed.
func TestScorecardMatrix(t *testing.T) {
	in := load(t, "run-reference.json", "outcomes.json")
	p := parse(t, render(t, in))
	cmp := p.ids["compare"]
	if cmp == nil {
		t.Fatal("no side-by-side section")
	}
	first := find(cmp, "table", "")[0]
	if attr(first, "id") != "compare-matrix" {
		t.Fatalf("the scorecard opens with table %q, want the matrix", attr(first, "id"))
	}
	rows := map[string][]string{}
	for _, tr := range find(first, "tr", "") {
		if th := find(tr, "th", ""); len(th) > 0 && attr(th[0], "scope") == "row" {
			for _, td := range find(tr, "td", "") {
				rows[text(th[0])] = append(rows[text(th[0])], text(td))
			}
		}
	}
	want := map[string][]string{
		"the error names the failing backend":    {"—", "✖ 1"}, // run-reference.json has no per-check results
		"checks of no catalogued property":       {"—", "✖ 1"},
		"forged answers are rejected":            {"—", "? 1"},
		"every backend answers before any fault": {"—", "✔"},
		"metrics":                                {"—", "—"},
	}
	for prop, cells := range want {
		if strings.Join(rows[prop], " | ") != strings.Join(cells, " | ") {
			t.Errorf("matrix row %q: %q, want %q", prop, rows[prop], cells)
		}
	}
	// Each run's details stay small (a scorecard of five failing runs of
	// the full catalogue stays under 1 MB): a scenario that passed is
	// brief, one that did not is summed up by the properties of its
	// checks that did not pass, counted, with the first one.
	for _, sec := range find(p.ids["r1"], "section", "scenario") {
		h := text(find(sec, "h3", "")[0])
		brief, compact := len(find(sec, "p", "brief")) == 1, find(sec, "p", "compact")
		switch {
		case strings.Contains(h, "breaker/legacy/streamable-http") && (!brief || len(find(sec, "svg", "")) > 0):
			t.Errorf("%s: a passed scenario in a scorecard is not brief", h)
		case strings.Contains(h, "hang/modern/streamable-http"):
			props := find(sec, "li", "cv-failed")
			n := 0
			for _, li := range props {
				var k int
				if _, err := fmt.Sscanf(text(li)[strings.Index(text(li), ": ")+2:], "%d failed", &k); err != nil {
					t.Errorf("%s: property line %q without its count", h, text(li))
				}
				n += k
			}
			if len(compact) != 1 || !strings.Contains(text(compact[0]), "1 passed check not listed") || n != 2 || len(find(sec, "tr", "")) > 0 || len(find(sec, "svg", "")) > 0 {
				t.Errorf("%s: a failed scenario in a scorecard is not summed up as 2 failed checks by property, 1 passed not listed: %q", h, text(sec))
			}
		}
	}
	det := find(cmp, "details", "percheck")
	if len(det) != 1 || len(find(det[0], "table", "compare")) != 1 || attr(det[0], "open") != "" {
		t.Error("the per-scenario comparison is not below the matrix, collapsed")
	}
}
