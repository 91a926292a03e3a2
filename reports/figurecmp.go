package reports

import (
	"slices"
	"strings"
)

// benchLabel labels a bench scenario (`chaos bench`): its figures are what
// it measured, and the side-by-side view lists them per run.
const benchLabel = "bench"

// figureRow is one figure of one scenario, a value per run ("" when the
// run lacks it).
type figureRow struct {
	Scenario string // set on the first row of each scenario
	Name     string
	Values   []string
}

// compareFigures lists every figure of the runs' bench scenarios side by
// side, scenarios in the order they first appear, figures sorted by name.
// Other scenarios' figures stay in each run's own section.
func compareFigures(runs []*runView) []figureRow {
	var names []string
	byRun := make([]map[string]*scenarioView, len(runs))
	for i, r := range runs {
		byRun[i] = map[string]*scenarioView{}
		for _, s := range r.Scenarios {
			if !slices.Contains(strings.Split(s.Labels, ", "), benchLabel) || len(s.Figures) == 0 {
				continue
			}
			if !slices.Contains(names, s.Name) {
				names = append(names, s.Name)
			}
			byRun[i][s.Name] = s
		}
	}
	var out []figureRow
	for _, n := range names {
		var figs []string
		vals := make([]map[string]string, len(runs))
		for i := range runs {
			vals[i] = map[string]string{}
			if s := byRun[i][n]; s != nil {
				for _, f := range s.Figures {
					vals[i][f.Name] = f.Value
					if !slices.Contains(figs, f.Name) {
						figs = append(figs, f.Name)
					}
				}
			}
		}
		slices.Sort(figs)
		for j, f := range figs {
			row := figureRow{Name: f}
			if j == 0 {
				row.Scenario = n
			}
			for i := range runs {
				row.Values = append(row.Values, vals[i][f])
			}
			out = append(out, row)
		}
	}
	return out
}
