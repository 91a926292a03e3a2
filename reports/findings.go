package reports

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/vmcp-chaos/vmcp-chaos/harness/history"
)

// findingView is one finding as the report shows it: the property failed
// (or not judged), its counts, evidence, places and reproducing command.
type findingView struct {
	Verdict, Line, Text, Reproduce string
	Checks, Scenarios              int
	First, Worst                   string
	Where                          []string
	MoreWhere                      int // places left out (maxWhere)
	Reasons                        []string
}

// newFindingViews builds the findings of a run: the failures and the
// checks not judged, apart.
func newFindingViews(r *history.Results, full bool) (failed, notJudged []findingView) {
	for _, f := range history.BuildFindings(r) {
		v := findingView{Verdict: string(f.Verdict), Line: Redact(f.Line()), Text: f.Text, Reproduce: Redact(f.Reproduce),
			Checks: f.Checks, Scenarios: len(f.Scenarios), Reasons: f.ReasonLines()}
		if f.First != nil {
			v.First = Redact(f.First.String())
		}
		if f.Worst != nil && (f.First == nil || *f.Worst != *f.First) {
			v.Worst = Redact(f.Worst.String())
		}
		for _, p := range f.Where {
			parts := []string{p.Scenario}
			if p.Fault != "" {
				parts = append(parts, "fault "+p.Fault)
			}
			for _, s := range []string{p.Transport, p.Revision} {
				if s != "" {
					parts = append(parts, s)
				}
			}
			v.Where = append(v.Where, fmt.Sprintf("%s: %d check(s)", strings.Join(parts, " · "), p.Checks))
		}
		if !full {
			v.Where, v.MoreWhere = firstN(v.Where, maxWhere)
		}
		if f.Judged() {
			failed = append(failed, v)
		} else {
			notJudged = append(notJudged, v)
		}
	}
	return failed, notJudged
}

// matrixView is the scorecard's top: a row per property, a column per
// run (gateway), a cell saying how the run did on it.
type matrixView struct {
	Rows []matrixRow
}

type matrixRow struct {
	Property, Text string
	Cells          []matrixCell
}

// matrixCell is ✔ (judged, every check passed), ✖ with counts (failed),
// ? with counts (none failed, some inconclusive), — (not applicable, or
// no check of the property in the run).
type matrixCell struct {
	Mark, Class, Title string
}

// propCounts counts a run's checks of each property by verdict.
func propCounts(r *history.Results) map[history.Property]map[history.CheckVerdict]int {
	out := map[history.Property]map[history.CheckVerdict]int{}
	scen := map[history.Property]map[string]bool{}
	for _, s := range r.Scenarios {
		for _, c := range s.Checks {
			p := cmp.Or(c.Property, history.PropertyOf(c.Name), history.PropOther)
			if out[p] == nil {
				out[p], scen[p] = map[history.CheckVerdict]int{}, map[string]bool{}
			}
			out[p][c.Verdict]++
			if c.Verdict == history.CheckFailed {
				scen[p][s.Name] = true
			}
		}
	}
	for p, m := range scen {
		out[p]["scenarios"] = len(m)
	}
	return out
}

// buildMatrix builds the property × run matrix of runs.
func buildMatrix(runs []*history.Results) matrixView {
	counts := make([]map[history.Property]map[history.CheckVerdict]int, len(runs))
	for i, r := range runs {
		counts[i] = propCounts(r)
	}
	var mv matrixView
	for _, p := range append(slices.Clone(history.Properties), history.PropOther) {
		row := matrixRow{Property: string(p), Text: p.Text()}
		seen := false
		for i := range runs {
			row.Cells = append(row.Cells, newMatrixCell(counts[i][p]))
			seen = seen || counts[i][p] != nil
		}
		if seen || p != history.PropOther { // "other" only for results that have such checks
			mv.Rows = append(mv.Rows, row)
		}
	}
	return mv
}

func newMatrixCell(n map[history.CheckVerdict]int) matrixCell {
	switch {
	case n[history.CheckFailed] > 0:
		return matrixCell{Mark: fmt.Sprintf("✖ %d", n[history.CheckFailed]), Class: "failed",
			Title: fmt.Sprintf("%d checks failed in %d scenarios, %d passed", n[history.CheckFailed], n["scenarios"], n[history.CheckPassed])}
	case n[history.CheckInconclusive] > 0:
		return matrixCell{Mark: fmt.Sprintf("? %d", n[history.CheckInconclusive]), Class: "inconclusive",
			Title: fmt.Sprintf("%d checks inconclusive, %d passed", n[history.CheckInconclusive], n[history.CheckPassed])}
	case n[history.CheckPassed] > 0:
		return matrixCell{Mark: "✔", Class: "passed", Title: fmt.Sprintf("%d checks passed", n[history.CheckPassed])}
	case n[history.CheckNotApplicable] > 0:
		return matrixCell{Mark: "—", Class: "not_applicable", Title: fmt.Sprintf("%d checks not applicable", n[history.CheckNotApplicable])}
	}
	return matrixCell{Mark: "—", Class: "absent", Title: "no check of this property ran"}
}
