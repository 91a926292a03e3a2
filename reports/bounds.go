package reports

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/vmcp-chaos/vmcp-chaos/harness/history"
)

// Bounds on what a page shows, so that a report of the full catalogue
// stays under 1 MB however many checks fail (and a scorecard of five
// such runs too): detail is bounded, every count is kept, and what is
// left out is counted with where it is (the results file, and
// `chaos report --full`). Options.Full lifts them.
const (
	// maxEvidenceCalls is how many evidence calls a check row shows.
	maxEvidenceCalls = 1
	// maxCheckText clips a shown check's expected and observed texts,
	// maxCallError an evidence call's error text.
	maxCheckText, maxCallError = 160, 120
	// maxCheckRows is how many checks a scenario's table shows in full,
	// across its groups (a group past it is only counted).
	maxCheckRows = 8
	// maxFaultRows is how many fault windows a scenario's table shows.
	maxFaultRows = 8
	// maxErrorSamples is how many distinct error texts a scenario lists
	// (the most frequent).
	maxErrorSamples = 5
	// maxCellChecks is how many failed check names a grid or comparison
	// cell names.
	maxCellChecks = 3
	// maxCompareChecks is how many differing checks a comparison row
	// lists.
	maxCompareChecks = 8
	// maxWhere is how many places a finding lists.
	maxWhere = 8
	// maxNotes is how many timeline notes a scenario lists.
	maxNotes = 40
)

// checkLine is one row of a scenario's checks table: a check shown in
// full, or (More > 0) the count of those of its group left out.
type checkLine struct {
	checkView
	// Group says which checks a More row counts: "failed checks of
	// “the error names the failing backend”".
	Group string
	More  int
	// Only: none of the group is shown, More counts all of it.
	Only bool
}

// groupChecks picks the checks a bounded table shows: per property and
// verdict, the first check and (for failed and inconclusive ones) the
// worst, the one whose evidence took longest; the others are counted in
// a row after them, and past maxCheckRows shown a group is only
// counted. Groups come failed first, then inconclusive, passed and not
// applicable, each in the order its first check was judged.
func groupChecks(s *history.ScenarioResult, views []checkView, full bool) []checkLine {
	if full {
		out := make([]checkLine, len(views))
		for i, v := range views {
			out[i] = checkLine{checkView: v}
		}
		return out
	}
	type group struct {
		verdict history.CheckVerdict
		prop    history.Property
		idx     []int
	}
	var groups []*group
	byKey := map[[2]string]*group{}
	for i, c := range s.Checks {
		p := cmp.Or(c.Property, history.PropertyOf(c.Name), history.PropOther)
		k := [2]string{string(c.Verdict), string(p)}
		if byKey[k] == nil {
			byKey[k] = &group{verdict: c.Verdict, prop: p}
			groups = append(groups, byKey[k])
		}
		byKey[k].idx = append(byKey[k].idx, i)
	}
	order := map[history.CheckVerdict]int{history.CheckFailed: 0, history.CheckInconclusive: 1, history.CheckPassed: 2}
	rank := func(v history.CheckVerdict) int {
		if r, ok := order[v]; ok {
			return r
		}
		return 3
	}
	slices.SortStableFunc(groups, func(a, b *group) int { return rank(a.verdict) - rank(b.verdict) })
	var out []checkLine
	budget := maxCheckRows
	for _, g := range groups {
		shown := []int{g.idx[0]}
		if g.verdict == history.CheckFailed || g.verdict == history.CheckInconclusive {
			worst := g.idx[0]
			for _, i := range g.idx[1:] {
				if s.Checks[i].Took > s.Checks[worst].Took {
					worst = i
				}
			}
			if worst != g.idx[0] {
				shown = append(shown, worst)
			} else if len(g.idx) > 1 {
				shown = append(shown, g.idx[1])
			}
		}
		shown = shown[:min(len(shown), budget)]
		budget -= len(shown)
		for _, i := range shown {
			out = append(out, checkLine{checkView: views[i]})
		}
		if n := len(g.idx) - len(shown); n > 0 {
			line := checkLine{checkView: checkView{Verdict: string(g.verdict)}, More: n, Group: fmt.Sprintf("%s checks of “%s”", verdictWords(g.verdict), g.prop.Text())}
			line.Only = len(shown) == 0
			out = append(out, line)
		}
	}
	return out
}

// verdictWords is a check verdict in words: "not applicable".
func verdictWords(v history.CheckVerdict) string {
	if v == history.CheckNotApplicable {
		return "not applicable"
	}
	return string(v)
}

// boundCheck clips a shown check: its texts, and its evidence calls to
// maxEvidenceCalls, counting the rest.
func boundCheck(cv *checkView) {
	observed := cv.Observed
	cv.Expected, cv.Observed = clip(cv.Expected, maxCheckText), clip(cv.Observed, maxCheckText)
	if len(cv.Evidence) > maxEvidenceCalls {
		cv.MoreCalls = len(cv.Evidence) - maxEvidenceCalls
		cv.Evidence = cv.Evidence[:maxEvidenceCalls]
	}
	cv.Evidence = slices.Clone(cv.Evidence) // its own, clipped
	for i := range cv.Evidence {
		e := &cv.Evidence[i]
		e.Error = clip(e.Error, maxCallError)
		if strings.Contains(observed, strings.TrimSuffix(e.Error, "…")) {
			e.Error = "" // the observed text says it already
		}
	}
}

// firstN keeps the first n of names, saying how many more there were.
func firstN(names []string, n int) (kept []string, more int) {
	if len(names) <= n {
		return names, 0
	}
	return names[:n], len(names) - n
}

// maxScoreProps is how many of a scenario's property groups a scorecard
// shows with their first check; the others it names with their counts.
const maxScoreProps = 3

// propLine is one property group of a scenario in a scorecard: its
// verdict, how many checks, and the first one.
type propLine struct {
	Verdict, Words, Text, First string
	N                           int
}

// scorecardProps sums up a scenario's checks that did not pass, for a
// scorecard: per property and verdict, failed first, the count and (for
// the first maxScoreProps groups) the first check and what it observed;
// the rest by name and count.
func scorecardProps(s *history.ScenarioResult) (shown []propLine, more []string) {
	var groups []*propLine
	byKey := map[[2]string]*propLine{}
	for _, c := range s.Checks {
		if c.Verdict == history.CheckPassed {
			continue
		}
		p := cmp.Or(c.Property, history.PropertyOf(c.Name), history.PropOther)
		k := [2]string{string(c.Verdict), string(p)}
		if byKey[k] == nil {
			first := c.Name
			if t := cmp.Or(c.Observed, c.Reason); t != "" {
				first += ": " + t
			}
			byKey[k] = &propLine{Verdict: string(c.Verdict), Words: verdictWords(c.Verdict), Text: p.Text(), First: clip(Redact(first), maxCheckText)}
			groups = append(groups, byKey[k])
		}
		byKey[k].N++
	}
	slices.SortStableFunc(groups, func(a, b *propLine) int {
		failed := func(l *propLine) int {
			if l.Verdict == string(history.CheckFailed) {
				return 0
			}
			return 1
		}
		return failed(a) - failed(b)
	})
	for i, g := range groups {
		if i < maxScoreProps {
			shown = append(shown, *g)
		} else {
			more = append(more, fmt.Sprintf("%s (%d %s)", g.Text, g.N, verdictWords(history.CheckVerdict(g.Verdict))))
		}
	}
	return shown, more
}
