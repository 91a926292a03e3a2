package reports

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/vmcp-chaos/vmcp-chaos/harness/history"
)

// runView is one results document as the report shows it.
type runView struct {
	ID, Label, Target, Profile, Capabilities string
	Harness                                  string // the harness version that wrote the results
	Started, Took                            string
	Interrupted                              bool
	Passed, Failed, Inconclusive, Skipped    int
	InterruptedN                             int // scenarios cut short
	Partial                                  int
	ChecksPassed, ChecksFailed               int
	ChecksInconclusive, ChecksNA             int
	Grid                                     gridView
	Recoveries                               []recoveryRow // slowest and never-recovered faults across the run
	Scenarios                                []*scenarioView
	// Findings are the properties the run failed; NotJudged those it
	// could not be judged on (inconclusive, not applicable).
	Findings, NotJudged []findingView
	// Compact: the run is a column of a scorecard, its scenarios summed
	// up (scenarioView.Props), its findings at the top of the scorecard.
	Compact bool
	results *history.Results
	full    bool // Options.Full: no bounds
}

// scenarioView is one scenario: verdict, checks with evidence, figures,
// timeline, fault windows and error samples.
type scenarioView struct {
	ID, Name, Group, Variant string
	Labels                   string
	Agreed                   string // "modern→2025-06-18": the revision the gateway agreed, when not the one asked for
	Verdict, Badge           string
	Partial                  bool
	Reason                   string
	Skipped                  []string
	Started, Duration        string
	Checks                   []checkView
	// Lines are the rows of its checks table: every check, or with the
	// bounds (groupChecks) the first and worst of each property and
	// verdict and the others counted.
	Lines        []checkLine
	LinesMore    bool // some Lines count checks left out
	Failed, NA   int
	Figures      []figureView
	Timeline     *timelineView
	Faults       []faultView
	Story        string // the faults in one line
	Saw          []countView
	ErrorSamples []errorSample
	Notes        []string
	MoreNotes    int // notes left out (maxNotes)
	MoreFaults   int // fault windows left out (maxFaultRows)
	MoreErrors   int // distinct error texts left out
	// EventsOmitted counts the events the results file left to its
	// event log, which was not found: EventsFile names it.
	EventsOmitted int
	EventsFile    string
	// Brief: in a scorecard, a scenario whose checks all passed shows
	// only its heading and counts (the evidence, timeline and figures are
	// in the run's own report): three gateways' scorecard stays small.
	Brief bool
	// PassedHidden counts the passed checks a scorecard leaves out of a
	// scenario that did not pass (the others are summed up in Props, or
	// with Options.Full shown with their evidence).
	PassedHidden int
	// Props and MoreProps sum up, in a scorecard, the checks that did
	// not pass (scorecardProps), in place of the checks table, timeline
	// and error samples, which the run's own report has.
	Props     []propLine
	MoreProps []string
}

type checkView struct {
	Name, Verdict, Expected, Observed, Reason, At, Took string
	Evidence                                            []callView
	MoreCalls                                           int // evidence calls left out (maxEvidenceCalls)
	Missing                                             []int
}

type callView struct {
	Seq                                          int
	Client, Call, Backend, Class, Outcome, Error string
	At, Took                                     string
}

type figureView struct{ Name, Value string }

type countView struct {
	Class, Text string
	N           int
}

type errorSample struct {
	Text, Class, Backend string
	N, FirstSeq          int
}

// newRunView builds the view of one results document.
func newRunView(id, label string, r *history.Results, full bool) *runView {
	rv := &runView{ID: id, Label: label, full: full, Target: r.Target, Profile: r.Profile, Capabilities: cmp.Or(strings.Join(r.Capabilities, ","), "none declared"),
		Interrupted: r.Interrupted, Harness: cmp.Or(r.HarnessVersion, "not recorded")}
	if !r.Started.IsZero() {
		rv.Started = r.Started.UTC().Format("2006-01-02 15:04:05 UTC")
	}
	var last time.Time
	for i := range r.Scenarios {
		s := &r.Scenarios[i]
		sv := newScenarioView(fmt.Sprintf("%s-s%d", id, i), s, full)
		if s.EventsOmitted > 0 {
			sv.EventsOmitted, sv.EventsFile = s.EventsOmitted, r.EventsFile
		}
		rv.Scenarios = append(rv.Scenarios, sv)
		switch s.Verdict {
		case history.VerdictPassed:
			rv.Passed++
		case history.VerdictFailed:
			rv.Failed++
		case history.VerdictInconclusive:
			rv.Inconclusive++
		case history.VerdictInterrupted:
			rv.InterruptedN++
		default:
			rv.Skipped++
		}
		if sv.Partial {
			rv.Partial++
		}
		for _, c := range s.Checks {
			switch c.Verdict {
			case history.CheckPassed:
				rv.ChecksPassed++
			case history.CheckFailed:
				rv.ChecksFailed++
			case history.CheckInconclusive:
				rv.ChecksInconclusive++
			default:
				rv.ChecksNA++
			}
		}
		if e := s.Started.Add(s.Duration.D()); e.After(last) {
			last = e
		}
	}
	if !r.Started.IsZero() && last.After(r.Started) {
		rv.Took = fmtDur(last.Sub(r.Started))
	}
	rv.Grid = buildGrid(rv.Scenarios, full)
	rv.Findings, rv.NotJudged = newFindingViews(r, full)
	rv.results = r
	rv.Recoveries = slowestRecoveries(rv.Scenarios, 8)
	if !full {
		for _, sv := range rv.Scenarios {
			if len(sv.Faults) > maxFaultRows {
				sv.Faults, sv.MoreFaults = sv.Faults[:maxFaultRows], len(sv.Faults)-maxFaultRows
			}
		}
	}
	return rv
}

// splitName splits a scenario name into its group and variant:
// "hang/legacy/sse" is group hang, variant legacy/sse.
func splitName(name string) (group, variant string) {
	if g, v, ok := strings.Cut(name, "/"); ok {
		return g, v
	}
	return name, "-"
}

func newScenarioView(id string, s *history.ScenarioResult, full bool) *scenarioView {
	sv := &scenarioView{ID: id, Name: s.Name, Labels: strings.Join(s.Labels, ", "), Agreed: strings.Join(s.Agreed, ", "), Verdict: string(s.Verdict),
		Reason: Redact(s.Reason), Duration: fmtDur(s.Duration.D())}
	sv.Group, sv.Variant = splitName(s.Name)
	if !s.Started.IsZero() {
		sv.Started = s.Started.UTC().Format("15:04:05.000")
	}
	for _, k := range s.SkippedChecks {
		sv.Skipped = append(sv.Skipped, Redact(k))
	}
	var calls []seqCall
	var plain []*history.CallRecord
	bySeq := map[int]*history.CallRecord{}
	for _, e := range s.Events {
		switch {
		case e.Kind == history.EventCall && e.Call != nil:
			calls = append(calls, seqCall{e.Call, e.Seq})
			bySeq[e.Seq] = e.Call
		case e.Kind == history.EventNote && e.Note != "":
			sv.Notes = append(sv.Notes, fmt.Sprintf("%s  %s", fmtDur(e.At.D()), Redact(e.Note)))
		}
	}
	sort.SliceStable(calls, func(i, j int) bool { return calls[i].Start < calls[j].Start })
	for _, c := range calls {
		plain = append(plain, c.CallRecord)
	}
	evidence := map[int]bool{}
	for _, c := range s.Checks {
		cv := checkView{Name: c.Name, Verdict: string(c.Verdict), Expected: Redact(c.Expected), Observed: Redact(c.Observed),
			Reason: Redact(c.Reason), At: fmtDur(c.At.D())}
		if c.Took > 0 {
			cv.Took = fmtDur(c.Took.D())
		}
		for _, seq := range c.Calls {
			if call := bySeq[seq]; call != nil {
				evidence[seq] = true
				cv.Evidence = append(cv.Evidence, newCallView(seq, call))
			} else {
				cv.Missing = append(cv.Missing, seq)
			}
		}
		sv.Checks = append(sv.Checks, cv)
	}
	sv.Lines = groupChecks(s, sv.Checks, full)
	sv.LinesMore = slices.ContainsFunc(sv.Lines, func(l checkLine) bool { return l.More > 0 })
	if !full {
		for i := range sv.Lines {
			boundCheck(&sv.Lines[i].checkView)
		}
		if len(sv.Notes) > maxNotes {
			sv.Notes, sv.MoreNotes = sv.Notes[:maxNotes], len(sv.Notes)-maxNotes
		}
	}
	var inconclusive int
	sv.Failed, inconclusive, sv.NA, sv.Partial = checkCounts(s)
	sv.Badge = badge(s.Verdict, len(s.Checks), sv.Failed, inconclusive, sv.NA, sv.Partial)
	for _, k := range slices.Sorted(maps.Keys(s.Figures)) {
		sv.Figures = append(sv.Figures, figureView{Name: k, Value: trimFloat(s.Figures[k])})
	}
	end := s.Duration.D()
	ws := faultWindows(s.Events, end)
	sv.Faults = analyseWindows(ws, plain, end)
	sv.Story = storyOf(sv.Faults)
	if len(s.Events) > 0 {
		sv.Timeline = buildTimeline(s, calls, ws, evidence)
	}
	sv.Saw, sv.ErrorSamples = clientSaw(calls)
	n := len(sv.ErrorSamples)
	if !full {
		n = maxErrorSamples
		for i := range sv.ErrorSamples[:min(n, len(sv.ErrorSamples))] {
			sv.ErrorSamples[i].Text = clip(sv.ErrorSamples[i].Text, maxCallError)
		}
	}
	if len(sv.ErrorSamples) > n {
		sv.ErrorSamples, sv.MoreErrors = sv.ErrorSamples[:n], len(sv.ErrorSamples)-n
	}
	return sv
}

// badge is the short verdict a grid cell and a heading show: FAILED 3/11
// (failed checks of all), PASSED 11/11, PASSED* when some checks did not
// apply or were skipped.
func badge(v history.Verdict, checks, failed, inconclusive, na int, partial bool) string {
	b := strings.ToUpper(string(v))
	if partial {
		b += "*"
	}
	switch {
	case checks == 0:
		return b
	case v == history.VerdictFailed:
		return fmt.Sprintf("%s %d/%d", b, failed, checks)
	case v == history.VerdictInconclusive:
		return fmt.Sprintf("%s %d/%d", b, inconclusive, checks)
	case v == history.VerdictPassed:
		return fmt.Sprintf("%s %d/%d", b, checks-failed-na, checks)
	}
	return b
}

func newCallView(seq int, c *history.CallRecord) callView {
	cls := outcomeClass(c)
	return callView{Seq: seq, Client: c.Client, Call: callName(c), Backend: c.Backend, Class: cls,
		Outcome: outcomeText[cls] + " (" + string(c.Outcome) + ")", Error: clip(Redact(c.Error), 600),
		At: fmtDur(c.Start.D()), Took: fmtDur(c.Duration.D())}
}

// clientSaw counts the calls by outcome class and groups the error texts
// (redacted), most frequent first.
func clientSaw(calls []seqCall) ([]countView, []errorSample) {
	counts := map[string]int{}
	samples := map[string]*errorSample{}
	var order []*errorSample
	for _, c := range calls {
		cls := outcomeClass(c.CallRecord)
		counts[cls]++
		if cls == "ok" {
			continue
		}
		text := cmp.Or(clip(Redact(c.Error), 400), "(no error text; outcome "+string(c.Outcome)+")")
		key := cls + "\x00" + c.Backend + "\x00" + text
		if es := samples[key]; es != nil {
			es.N++
			continue
		}
		es := &errorSample{Text: text, Class: cls, Backend: c.Backend, N: 1, FirstSeq: c.seq}
		samples[key] = es
		order = append(order, es)
	}
	var saw []countView
	for _, cls := range []string{"ok", "named", "unnamed", "timeout", "dropped"} {
		if counts[cls] > 0 {
			saw = append(saw, countView{Class: cls, Text: outcomeText[cls], N: counts[cls]})
		}
	}
	sort.SliceStable(order, func(i, j int) bool { return order[i].N > order[j].N })
	var out []errorSample
	for _, es := range order {
		out = append(out, *es)
	}
	return saw, out
}

func trimFloat(v float64) string {
	if v == float64(int64(v)) {
		return fmt.Sprintf("%d", int64(v))
	}
	switch a := math.Abs(v); {
	case a >= 100:
		return fmt.Sprintf("%.0f", v)
	case a >= 10:
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.3f", v)
}

// Badge is a scenario's short verdict, as the scorecard and `chaos run`'s
// table show it: FAILED 3/11 (failed checks of all), PASSED 11/11, PASSED*
// for a partial pass (some checks did not apply or were skipped), SKIPPED;
// without per-check results just the verdict (with * when partial).
func Badge(s *history.ScenarioResult) string {
	failed, inconclusive, na, partial := checkCounts(s)
	return badge(s.Verdict, len(s.Checks), failed, inconclusive, na, partial)
}

// checkCounts counts a scenario's failed and not-applicable checks; a
// partial pass is a pass with checks not applicable or skipped.
func checkCounts(s *history.ScenarioResult) (failed, inconclusive, na int, partial bool) {
	for _, c := range s.Checks {
		switch c.Verdict {
		case history.CheckFailed:
			failed++
		case history.CheckInconclusive:
			inconclusive++
		case history.CheckNotApplicable:
			na++
		}
	}
	return failed, inconclusive, na, s.Verdict == history.VerdictPassed && (len(s.SkippedChecks) > 0 || na > 0)
}

// recoveryRow is one fault of the run's recovery overview.
type recoveryRow struct {
	ScenarioID, Scenario, Fault, Recovery string
	Never                                 bool
	took                                  time.Duration
}

// slowestRecoveries lists the faults that never recovered, then the
// slowest recoveries, at most n rows.
func slowestRecoveries(scs []*scenarioView, n int) []recoveryRow {
	var rows []recoveryRow
	for _, s := range scs {
		for _, f := range s.Faults {
			if f.unrecovered || f.recoveryTook >= 0 {
				rows = append(rows, recoveryRow{ScenarioID: s.ID, Scenario: s.Name, Fault: f.Label, Recovery: f.Recovery, Never: f.unrecovered, took: f.recoveryTook})
			}
		}
	}
	sort.SliceStable(rows, func(i, j int) bool {
		if rows[i].Never != rows[j].Never {
			return rows[i].Never
		}
		return rows[i].took > rows[j].took
	})
	return rows[:min(len(rows), n)]
}
