package reports

import (
	"fmt"
	"slices"
	"strings"

	"github.com/vmcp-chaos/vmcp-chaos/harness/history"
)

// gridView is a run's scorecard: a row per scenario group, a column per
// variant (revision/transport), a cell per scenario.
type gridView struct {
	Variants []string
	Rows     []gridRow
}

type gridRow struct {
	Group string
	Cells []*gridCell // nil: the group has no such variant
}

type gridCell struct {
	ID, Verdict, Badge string
	Reason             string // first line of the reason, in side-by-side rows that differ
	Partial            bool
	Failed             []string // names of failed checks (at most maxCellChecks)
	MoreFailed         int      // failed checks not named
	failedAll          []string // every failed check's name
}

func buildGrid(scs []*scenarioView, full bool) gridView {
	var g gridView
	var groups []string
	cells := map[[2]string]*gridCell{}
	for _, s := range scs {
		if !slices.Contains(groups, s.Group) {
			groups = append(groups, s.Group)
		}
		if !slices.Contains(g.Variants, s.Variant) {
			g.Variants = append(g.Variants, s.Variant)
		}
		cells[[2]string{s.Group, s.Variant}] = newCell(s, full)
	}
	// Variants in a stable, readable order: legacy before modern,
	// streamable-http before sse, as the catalogue lists them.
	slices.SortStableFunc(g.Variants, func(a, b string) int { return strings.Compare(variantKey(a), variantKey(b)) })
	for _, grp := range groups {
		row := gridRow{Group: grp}
		for _, v := range g.Variants {
			row.Cells = append(row.Cells, cells[[2]string{grp, v}])
		}
		g.Rows = append(g.Rows, row)
	}
	return g
}

func variantKey(v string) string {
	if v == "-" {
		return "~" // scenarios without a variant last
	}
	r := strings.NewReplacer("legacy", "0", "modern", "1", "streamable-http", "0", "sse", "1")
	return r.Replace(v)
}

// newCell is a scenario's cell, naming its failed checks (the first
// maxCellChecks, unless full).
func newCell(s *scenarioView, full bool) *gridCell {
	c := &gridCell{ID: s.ID, Verdict: s.Verdict, Badge: s.Badge, Partial: s.Partial}
	for _, ch := range s.Checks {
		if ch.Verdict == "failed" {
			c.failedAll = append(c.failedAll, ch.Name)
		}
	}
	c.Failed = c.failedAll
	if !full {
		c.Failed, c.MoreFailed = firstN(c.failedAll, maxCellChecks)
	}
	return c
}

// compareView puts several runs side by side: a column per run (gateway,
// or one gateway's runs over time), a row per scenario; rows where the
// runs disagree are marked, with their checks compared.
type compareView struct {
	ID      string // the section's anchor
	Subject string // what the columns ran: "catalogue" or "experiment: <title>"
	Columns []*runView
	Rows    []compareRow
	Differ  int
	// Figures are the bench scenarios' figures, a value per column
	// (compareFigures).
	Figures []figureRow
	// Matrix is the property × run matrix that opens the scorecard.
	Matrix matrixView
}

type compareRow struct {
	Name    string
	Differs bool
	Cells   []*gridCell // nil: the run has no such scenario
	Checks  []checkRow  // per-check verdicts, for rows that differ
	// MoreChecks counts the differing checks not listed
	// (maxCompareChecks).
	MoreChecks int
}

type checkRow struct {
	Name     string
	Differs  bool
	Verdicts []string // "" when the run has no such check
}

func buildCompare(runs []*runView) *compareView {
	cv := &compareView{Columns: runs}
	var rs []*history.Results
	for _, r := range runs {
		rs = append(rs, r.results)
	}
	cv.Matrix = buildMatrix(rs)
	var names []string
	byRun := make([]map[string]*scenarioView, len(runs))
	for i, r := range runs {
		byRun[i] = map[string]*scenarioView{}
		for _, s := range r.Scenarios {
			if _, ok := byRun[i][s.Name]; !ok && !slices.Contains(names, s.Name) {
				names = append(names, s.Name)
			}
			byRun[i][s.Name] = s
		}
	}
	for _, n := range names {
		row := compareRow{Name: n}
		var first string
		for i := range runs {
			s := byRun[i][n]
			var c *gridCell
			key := "absent"
			if s != nil {
				c = newCell(s, runs[i].full)
				// Same verdict, partiality and failed checks: no
				// difference, even when only one run has per-check results.
				key = fmt.Sprintf("%s|%v|%s", s.Verdict, s.Partial, strings.Join(c.failedAll, "|"))
			}
			if i == 0 {
				first = key
			} else if key != first {
				row.Differs = true
			}
			row.Cells = append(row.Cells, c)
		}
		if row.Differs {
			cv.Differ++
			for i, c := range row.Cells {
				if c != nil {
					c.Reason, _, _ = strings.Cut(byRun[i][n].Reason, "\n")
					c.Reason = clip(c.Reason, 160)
				}
			}
			row.Checks = compareChecks(n, byRun)
			if !runs[0].full {
				// The checks that differ, the first maxCompareChecks.
				row.Checks = slices.DeleteFunc(row.Checks, func(c checkRow) bool { return !c.Differs })
				if len(row.Checks) > maxCompareChecks {
					row.MoreChecks, row.Checks = len(row.Checks)-maxCompareChecks, row.Checks[:maxCompareChecks]
				}
			}
		}
		cv.Rows = append(cv.Rows, row)
	}
	cv.Figures = compareFigures(runs)
	return cv
}

func compareChecks(name string, byRun []map[string]*scenarioView) []checkRow {
	var names []string
	verdicts := make([]map[string]string, len(byRun)) // per run: check name -> verdict
	for i, m := range byRun {
		if s := m[name]; s != nil {
			verdicts[i] = map[string]string{}
			for _, c := range s.Checks {
				if !slices.Contains(names, c.Name) {
					names = append(names, c.Name)
				}
				verdicts[i][c.Name] = c.Verdict
			}
		}
	}
	var out []checkRow
	for _, cn := range names {
		row := checkRow{Name: cn}
		for i := range byRun {
			row.Verdicts = append(row.Verdicts, verdicts[i][cn]) // "" when the run has no such check
			if i > 0 && row.Verdicts[i] != row.Verdicts[0] {
				row.Differs = true
			}
		}
		out = append(out, row)
	}
	return out
}
