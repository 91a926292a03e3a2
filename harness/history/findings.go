package history

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Finding is one property the gateway failed (Verdict failed), or could
// not be judged on (inconclusive, not_applicable), across a run: every
// check of that property and verdict, grouped.
type Finding struct {
	// Property is what was judged; Text says it in words.
	Property Property `json:"property"`
	Text     string   `json:"text"`
	// Verdict is failed, inconclusive or not_applicable.
	Verdict CheckVerdict `json:"verdict"`
	// Checks counts the checks grouped; Scenarios names the scenarios
	// they are in, in run order.
	Checks    int      `json:"checks"`
	Scenarios []string `json:"scenarios"`
	// Where lists each distinct (scenario, fault, transport, revision)
	// the checks were judged under, with how many.
	Where []FindingPlace `json:"where"`
	// First is the evidence of the first check grouped; Worst that of
	// the one whose evidence took longest.
	First *FindingEvidence `json:"first,omitempty"`
	Worst *FindingEvidence `json:"worst,omitempty"`
	// Reasons are the distinct reasons the checks were not judged (for
	// inconclusive and not_applicable), most frequent first, at most 5.
	Reasons []string `json:"reasons,omitempty"`
	// ReasonChecks counts the checks of each of Reasons (same order).
	ReasonChecks []int `json:"reasonChecks,omitempty"`
	// Reproduce is a command line that runs the first scenario again.
	Reproduce string `json:"reproduce"`
}

// FindingPlace is one place a finding's checks were judged.
type FindingPlace struct {
	Scenario  string `json:"scenario"`
	Fault     string `json:"fault,omitempty"`
	Transport string `json:"transport,omitempty"`
	Revision  string `json:"revision,omitempty"`
	Checks    int    `json:"checks"`
}

// FindingEvidence is one check as evidence: which, and its call.
type FindingEvidence struct {
	Scenario string `json:"scenario"`
	Check    string `json:"check"`
	// Call is the method and target ("tools/call beta_slow"), Outcome
	// how it ended, Text an excerpt of its error or of what the check
	// observed, Took its duration (or the check's).
	Call    string  `json:"call,omitempty"`
	Outcome Outcome `json:"outcome,omitempty"`
	Text    string  `json:"text,omitempty"`
	Took    Millis  `json:"tookMs"`
}

// Judged reports whether the finding is a failure (not "not judged").
func (f Finding) Judged() bool { return f.Verdict == CheckFailed }

// Line is the finding in one line: "✖ the call is bounded by the call
// timeout: 46 checks failed in 9 scenarios; first: ...".
func (f Finding) Line() string {
	var b strings.Builder
	switch f.Verdict {
	case CheckFailed:
		fmt.Fprintf(&b, "✖ %s: %s failed in %s", f.Text, plural(f.Checks, "check"), plural(len(f.Scenarios), "scenario"))
	default:
		because := cmp.Or(strings.Join(f.Reasons[:min(1, len(f.Reasons))], ""), "-")
		if len(f.Reasons) > 1 {
			because = fmt.Sprintf("%d reasons (%s)", len(f.Reasons), strings.Join(f.ReasonLines(), "; "))
		}
		fmt.Fprintf(&b, "? not judged (%s), because %s: %s in %s", strings.ReplaceAll(string(f.Verdict), "_", " "), because,
			plural(f.Checks, "check of \""+f.Text+"\""), plural(len(f.Scenarios), "scenario"))
		return b.String()
	}
	if e := f.First; e != nil {
		fmt.Fprintf(&b, "; first evidence: %s", e)
	}
	return b.String()
}

// ReasonLines are the reasons with their counts: "REASON: 30 checks".
func (f Finding) ReasonLines() []string {
	out := make([]string, len(f.Reasons))
	for i, r := range f.Reasons {
		n := 0
		if i < len(f.ReasonChecks) {
			n = f.ReasonChecks[i]
		}
		out[i] = fmt.Sprintf("%s: %s", r, plural(n, "check"))
	}
	return out
}

// String is the evidence in words: `tools/call beta_slow` timeout after
// 5s: text (scenario, check).
func (e *FindingEvidence) String() string {
	what := fmt.Sprintf("%q", e.Check)
	if e.Call != "" {
		what = fmt.Sprintf("`%s` %s", e.Call, ended(e.Outcome, e.Took.D()))
	}
	if e.Text != "" {
		what += ": " + clipText(e.Text, 100)
	}
	return fmt.Sprintf("%s (%s)", what, e.Scenario)
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	if w, rest, ok := strings.Cut(what, " "); ok {
		return fmt.Sprintf("%d %ss %s", n, w, rest)
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// BuildFindings groups the run's checks that did not pass by property
// and verdict: failures first (in catalogue order), then the checks not
// judged (inconclusive, then not_applicable). A run whose checks all
// passed has none; a scenario a signal interrupted gives none.
func BuildFindings(r *Results) []Finding {
	type key struct {
		v CheckVerdict
		p Property
	}
	byKey := map[key]*Finding{}
	reasons := map[key]map[string]int{}
	firstClarity := map[key]evidenceClarity{}
	var keys []key
	for _, s := range r.Scenarios {
		if s.Verdict == VerdictInterrupted {
			continue // cut short by a signal: its last checks judged the interruption
		}
		calls := map[int]*CallRecord{}
		for _, e := range s.Events {
			if e.Call != nil {
				calls[e.Seq] = e.Call
			}
		}
		for _, c := range s.Checks {
			if c.Verdict == CheckPassed {
				continue
			}
			k := key{c.Verdict, cmp.Or(c.Property, PropertyOf(c.Name), PropOther)}
			f := byKey[k]
			if f == nil {
				f = &Finding{Property: k.p, Text: k.p.Text(), Verdict: k.v, Reproduce: reproduce(r, s.Name)}
				byKey[k], reasons[k] = f, map[string]int{}
				keys = append(keys, k)
			}
			f.Checks++
			if !slices.Contains(f.Scenarios, s.Name) {
				f.Scenarios = append(f.Scenarios, s.Name)
			}
			place := FindingPlace{Scenario: s.Name, Fault: c.Fault, Transport: c.Transport, Revision: c.Revision}
			if i := slices.IndexFunc(f.Where, func(p FindingPlace) bool { p.Checks = 0; return p == place }); i >= 0 {
				f.Where[i].Checks++
			} else {
				place.Checks = 1
				f.Where = append(f.Where, place)
			}
			ev := evidenceOf(s.Name, c, calls)
			// The first evidence is the clearest proof: a check that is
			// no timing bound (no race with the machine) over one that is,
			// then the scenario quickest to run again.
			if clear := clarity(c, s.Duration); f.First == nil || clear.less(firstClarity[k]) {
				f.First, firstClarity[k] = ev, clear
				f.Reproduce = reproduce(r, s.Name)
			}
			if f.Worst == nil || ev.Took > f.Worst.Took {
				f.Worst = ev
			}
			if c.Reason != "" {
				reasons[k][c.Reason]++
			}
		}
	}
	rank := func(k key) int {
		v := map[CheckVerdict]int{CheckFailed: 0, CheckInconclusive: 1, CheckNotApplicable: 2}[k.v]
		p := slices.Index(Properties, k.p)
		if p < 0 {
			p = len(Properties)
		}
		return v*100 + p
	}
	slices.SortStableFunc(keys, func(a, b key) int { return rank(a) - rank(b) })
	out := []Finding{}
	for _, k := range keys {
		f := byKey[k]
		for reason := range reasons[k] {
			f.Reasons = append(f.Reasons, reason)
		}
		slices.SortFunc(f.Reasons, func(a, b string) int {
			return cmp.Or(reasons[k][b]-reasons[k][a], strings.Compare(a, b))
		})
		f.Reasons = f.Reasons[:min(5, len(f.Reasons))]
		for _, reason := range f.Reasons {
			f.ReasonChecks = append(f.ReasonChecks, reasons[k][reason])
		}
		out = append(out, *f)
	}
	return out
}

// evidenceClarity ranks a check as a finding's first evidence: lower is
// clearer.
type evidenceClarity struct {
	timing   bool   // a time bound: the machine's slowness may have a part
	scenario Millis // how long its scenario takes to run again
}

func (a evidenceClarity) less(b evidenceClarity) bool {
	if a.timing != b.timing {
		return !a.timing
	}
	return a.scenario < b.scenario
}

// clarity is how clear a proof check c of a scenario that ran for d is.
func clarity(c Check, d Millis) evidenceClarity {
	timing := strings.Contains(c.Name, " within ") || strings.Contains(c.Name, "longer than") || strings.Contains(c.Name, "fail fast")
	return evidenceClarity{timing: timing, scenario: d}
}

// evidenceOf is a check as evidence: its first call that did not end
// well (else its first call), with the call's text, or else what the
// check observed.
func evidenceOf(scenario string, c Check, calls map[int]*CallRecord) *FindingEvidence {
	ev := &FindingEvidence{Scenario: scenario, Check: c.Name, Took: c.Took, Text: clipText(cmp.Or(c.Observed, c.Reason), 200)}
	var pick *CallRecord
	for _, seq := range c.Calls {
		if call := calls[seq]; call != nil && (pick == nil || pick.Outcome == OutcomeOK && call.Outcome != OutcomeOK) {
			pick = call
		}
	}
	if pick != nil {
		ev.Call = strings.TrimSpace(pick.Method + " " + pick.Target)
		ev.Outcome, ev.Took = pick.Outcome, pick.Duration
		switch {
		case pick.Outcome == OutcomeTimeout:
			ev.Text = "no reply from the gateway" // the error is the client's own
		case pick.Error != "":
			ev.Text = clipText(pick.Error, 200)
		case pick.Outcome != OutcomeOK:
			ev.Text = "empty reply"
		}
	}
	return ev
}

// reproduce is the command that runs scenario again against the run's
// target, through the run's filters (Rerun, else its profile when it had
// one): --scenario, the AND of a name with the run's --label filters.
func reproduce(r *Results, scenario string) string {
	cmd := r.Rerun
	if cmd == "" {
		cmd = "chaos run"
		if r.Profile != "" {
			cmd += " --profile " + shellQuote(r.Profile)
		}
	}
	return cmd + " --scenario " + shellQuote(scenario)
}

// ShellQuote quotes s for a POSIX shell when it needs it.
func ShellQuote(s string) string { return shellQuote(s) }

func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func clipText(s string, n int) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// ended says how a call ended, in words: "ended at 5.0s by the client's
// deadline", "failed (backend_unavailable) after 1ms".
func ended(o Outcome, took time.Duration) string {
	took = took.Round(time.Millisecond)
	switch o {
	case OutcomeTimeout:
		return fmt.Sprintf("ended at %s by the client's deadline", took)
	case OutcomeOK:
		return fmt.Sprintf("succeeded in %s", took)
	}
	return fmt.Sprintf("ended %s after %s", o, took)
}
