package history

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/vmcp-chaos/vmcp-chaos/internal/atomicfile"
	"github.com/vmcp-chaos/vmcp-chaos/internal/redact"
)

// SchemaVersion is the version of the JSON results format. It changes when
// a field changes meaning or goes away; new optional fields keep it.
const SchemaVersion = 1

// Verdict is a scenario's outcome.
type Verdict string

// Verdicts.
const (
	VerdictPassed  Verdict = "passed"
	VerdictFailed  Verdict = "failed"
	VerdictSkipped Verdict = "skipped"
	// VerdictInconclusive: no check failed, but some could not be judged
	// (CheckInconclusive): the run could not tell whether the gateway
	// behaves. It counts against success, as a failure does.
	VerdictInconclusive Verdict = "inconclusive"
	// VerdictInterrupted: SIGINT or SIGTERM cut the scenario short; what
	// it recorded until then is kept.
	VerdictInterrupted Verdict = "interrupted"
)

// Results is the whole JSON results document: one run of scenarios against
// one target.
type Results struct {
	// SchemaVersion is always SchemaVersion when written.
	SchemaVersion int `json:"schemaVersion"`
	// Started is when the run started (wall clock).
	Started time.Time `json:"started"`
	// Target names the gateway under test.
	Target string `json:"target,omitempty"`
	// Profile is the target profile file the target was described by
	// (`chaos run --profile`, VMCP_CHAOS_PROFILE); empty without one.
	Profile string `json:"profile,omitempty"`
	// Capabilities are the target's declared capabilities.
	Capabilities []string `json:"capabilities"`
	// HarnessVersion is the version of the harness that wrote the
	// results (BuildVersion.String; set by NewResults); empty in files
	// written before it existed.
	HarnessVersion string `json:"harnessVersion,omitempty"`
	// Interrupted is set when the run was cut short (SIGINT, SIGTERM):
	// the scenarios that had not run are listed skipped, with that reason.
	Interrupted bool `json:"interrupted,omitempty"`
	// Rerun is the command line that runs this run's scenarios against its
	// gateway again (its target flags and its --label filters; set by
	// chaos run): findings append --scenario to it, which ANDs with the
	// filters. Empty: "chaos run", with --profile when Profile is set.
	Rerun string `json:"rerun,omitempty"`
	// Findings are the run's checks that did not pass, grouped by
	// property and verdict (BuildFindings; failures first): what is
	// wrong with the gateway in a few lines. WriteJSON sets them; [] when
	// every check passed.
	Findings []Finding `json:"findings"`
	// EventsFile names the run's complete event log (EventLog), a file
	// beside this one, when this file keeps only each scenario's
	// evidence (WriteSplit; EventsOmitted counts what only the log
	// holds). Empty: every event is here.
	EventsFile string `json:"eventsFile,omitempty"`
	// Scenarios are the scenario results, in run order.
	Scenarios []ScenarioResult `json:"scenarios"`
}

// ScenarioResult is one scenario's verdict, figures and timeline.
type ScenarioResult struct {
	// Name is the scenario's name.
	Name string `json:"name"`
	// Labels are the scenario's labels (wrapping, hang, breaker, ...).
	Labels []string `json:"labels,omitempty"`
	// Agreed lists, when the gateway agreed another protocol revision
	// than a client asked for, what was asked and agreed
	// ("modern→2025-06-18"): the checks were chosen by what was agreed.
	Agreed []string `json:"agreed,omitempty"`
	// Verdict is passed, failed, inconclusive, skipped or interrupted.
	Verdict Verdict `json:"verdict"`
	// Reason explains a failure or a skip.
	Reason string `json:"reason,omitempty"`
	// SkippedChecks lists checks of the scenario that did not run, with
	// why (the target lacks a capability they need). A passed scenario
	// with skipped checks is a partial pass (see Partial).
	SkippedChecks []string `json:"skippedChecks,omitempty"`
	// Started is when the scenario started (wall clock).
	Started time.Time `json:"started"`
	// Duration is how long it ran.
	Duration Millis `json:"durationMs"`
	// Checks are the scenario's named checks, each with its own verdict
	// and evidence, in the order they were judged. The scenario failed
	// if any check failed.
	Checks []Check `json:"checks,omitempty"`
	// Figures are key measurements, e.g. "time_to_error_ms.beta": 0.8.
	Figures map[string]float64 `json:"figures,omitempty"`
	// Events is the timeline, ordered by At. In a bounded results file
	// (WriteSplit) only the checks' evidence, faults, transitions and
	// notes (BoundEvents): EventsOmitted more are in the event log.
	Events []Event `json:"events"`
	// EventsOmitted counts the events of the scenario only the run's
	// event log (Results.EventsFile) holds; 0: Events is complete.
	EventsOmitted int `json:"eventsOmitted,omitempty"`
}

// CheckVerdict is one check's outcome.
type CheckVerdict string

// Check verdicts.
const (
	CheckPassed        CheckVerdict = "passed"
	CheckFailed        CheckVerdict = "failed"
	CheckNotApplicable CheckVerdict = "not_applicable"
	// CheckInconclusive: the check's premise could not be established
	// (the fault never acted on the call, the gateway never returned to
	// steady state, a name could not be resolved); Reason says which.
	CheckInconclusive CheckVerdict = "inconclusive"
)

// Check is one named check of a scenario (e.g. "403 names beta", "stall
// bounded by call timeout") with its own verdict and evidence.
type Check struct {
	// Name names the check; unique within the scenario.
	Name string `json:"name"`
	// Verdict is passed, failed, not_applicable or inconclusive.
	Verdict CheckVerdict `json:"verdict"`
	// Expected says what the check expected, in words.
	Expected string `json:"expected,omitempty"`
	// Observed says what was seen instead (or as expected).
	Observed string `json:"observed,omitempty"`
	// Reason explains a not_applicable or inconclusive verdict (the
	// capability missing, the premise not established).
	Reason string `json:"reason,omitempty"`
	// At is when the check was judged, from the recorder's start.
	At Millis `json:"atMs"`
	// Took is how long the observation took (e.g. the call's duration).
	Took Millis `json:"tookMs,omitempty"`
	// Calls are the Seq numbers of the call events that are its evidence.
	Calls []int `json:"calls,omitempty"`
	// Property is what the check judges, from the closed catalogue
	// (Properties); findings group failed checks by it.
	Property Property `json:"property,omitempty"`
	// Fault is the fault step the check was judged under (e.g. "timeout
	// on tools/call", "stall_mid_body"); "none" before any fault.
	Fault string `json:"fault,omitempty"`
	// Transport is the backends' transport of the scenario
	// (streamable-http, sse, or both).
	Transport string `json:"transport,omitempty"`
	// Revision is the protocol revision the check was judged on: the
	// version the gateway agreed on the evidence call when known, else
	// the scenario's (legacy or modern).
	Revision string `json:"revision,omitempty"`
}

// CheckCounts returns how many of the scenario's checks failed and how
// many were judged (passed or failed; not_applicable ones are not
// counted): a table shows "FAILED 3/11".
func (s ScenarioResult) CheckCounts() (failed, judged int) {
	for _, c := range s.Checks {
		switch c.Verdict {
		case CheckFailed:
			failed++
			judged++
		case CheckPassed:
			judged++
		}
	}
	return failed, judged
}

// Inconclusive returns the checks judged inconclusive.
func (s ScenarioResult) Inconclusive() []Check {
	return slices.DeleteFunc(slices.Clone(s.Checks), func(c Check) bool { return c.Verdict != CheckInconclusive })
}

// Partial reports whether the scenario passed with some checks skipped.
func (s ScenarioResult) Partial() bool { return s.Verdict == VerdictPassed && len(s.SkippedChecks) > 0 }

// Add appends a recorder's scenario result.
func (r *Results) Add(rec *Recorder) { r.Scenarios = append(r.Scenarios, rec.Result()) }

// Failed reports whether any scenario failed or was inconclusive: a run
// that could not judge the gateway is no success.
func (r *Results) Failed() bool {
	return slices.ContainsFunc(r.Scenarios, func(s ScenarioResult) bool {
		return s.Verdict == VerdictFailed || s.Verdict == VerdictInconclusive
	})
}

// WriteJSON writes the results as indented JSON, setting SchemaVersion.
func (r *Results) WriteJSON(w io.Writer) error {
	r.SchemaVersion = SchemaVersion
	if r.Capabilities == nil {
		r.Capabilities = []string{} // written as [], never null
	}
	r.Findings = BuildFindings(r)
	return r.encode(w)
}

// encode writes the results as they are, indented. Credentials never
// reach a results file (redact.Text keeps JSON valid).
func (r *Results) encode(w io.Writer) error {
	rw := redact.NewWriter(w)
	enc := json.NewEncoder(rw)
	enc.SetIndent("", "  ")
	if err := enc.Encode(r); err != nil {
		return err
	}
	return rw.Flush()
}

// WriteFile writes the results to path (see WriteJSON).
func (r *Results) WriteFile(path string) error {
	return atomicfile.Write(path, r.WriteJSON) // whole or not at all
}

// ReadResults decodes a results document and checks its schema version.
func ReadResults(rd io.Reader) (*Results, error) {
	var r Results
	if err := json.NewDecoder(rd).Decode(&r); err != nil {
		return nil, fmt.Errorf("harness: decode results: %w", err)
	}
	if r.SchemaVersion != SchemaVersion {
		return nil, fmt.Errorf("harness: results schemaVersion %d, want %d", r.SchemaVersion, SchemaVersion)
	}
	return &r, nil
}

// Millis is a duration written in JSON as a number of milliseconds (with
// up to 6 decimals, so nanoseconds survive a round trip).
type Millis time.Duration

// D returns the value as a time.Duration.
func (m Millis) D() time.Duration { return time.Duration(m) }

// MarshalJSON writes the milliseconds as a number.
func (m Millis) MarshalJSON() ([]byte, error) {
	return strconv.AppendFloat(nil, float64(m)/1e6, 'f', -1, 64), nil
}

// UnmarshalJSON reads a number of milliseconds.
func (m *Millis) UnmarshalJSON(b []byte) error {
	var f float64
	if err := json.Unmarshal(b, &f); err != nil {
		return fmt.Errorf("milliseconds: %w", err)
	}
	*m = Millis(math.Round(f * 1e6))
	return nil
}
