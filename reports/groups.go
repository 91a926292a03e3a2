package reports

import (
	"slices"
	"strings"

	"github.com/vmcp-chaos/vmcp-chaos/harness/history"
)

// experimentLabel labels an experiment journal's scenario.
const experimentLabel = "experiment"

// subject is what a results document ran: "experiment: <title>" for an
// experiment journal (every scenario labelled experiment), else
// "catalogue" (a suite or `chaos run`). Columns side by side are for
// inputs of the same subject: the same experiment or catalogue run against
// different gateways or at different times.
func subject(r *history.Results) string {
	if len(r.Scenarios) == 0 {
		return "catalogue"
	}
	var names []string
	for _, s := range r.Scenarios {
		if !slices.Contains(s.Labels, experimentLabel) {
			return "catalogue"
		}
		names = append(names, s.Name)
	}
	return "experiment: " + strings.Join(names, " + ")
}

// experimentView is one experiment journal in the list of experiments.
type experimentView struct {
	RunID, Title, Target, Verdict, Reason string
}

// groupRuns groups runs by subject, in the order they first appear.
func groupRuns(runs []*runView, subjects []string) [][]*runView {
	var order []string
	by := map[string][]*runView{}
	for i, r := range runs {
		if _, ok := by[subjects[i]]; !ok {
			order = append(order, subjects[i])
		}
		by[subjects[i]] = append(by[subjects[i]], r)
	}
	var out [][]*runView
	for _, s := range order {
		out = append(out, by[s])
	}
	return out
}
