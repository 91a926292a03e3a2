// Package history is what clients saw: the MCP client whose every call is
// bounded and classified, and the recorder of calls, faults, transitions
// and checks, written as versioned results that checks are judged from.
package history

import (
	"bytes"
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"
)

// Recorder collects one scenario's timeline (calls, faults, transitions,
// notes), its figures and its verdict. Timestamps are monotonic offsets
// from the recorder's creation. It is safe for concurrent use.
type Recorder struct {
	mu      sync.Mutex
	start   time.Time
	name    string
	labels  []string
	verdict Verdict
	reason  string
	ended   time.Duration
	figures map[string]float64
	events  []Event
	skipped []string
	checks  []Check
	agreed  []string
	// recoveryWaits are the spans the harness spent waiting for the
	// gateway to recover (AwaitRecovery), as offsets from start.
	recoveryWaits [][2]Millis
}

// AddAgreed records that a client was agreed another protocol revision
// than it asked for ("modern→2025-06-18"; see Client.Agreed).
func (r *Recorder) AddAgreed(a string) {
	r.mu.Lock()
	seen := slices.Contains(r.agreed, a)
	if !seen {
		r.agreed = append(r.agreed, a)
	}
	r.mu.Unlock()
	if !seen {
		r.Note("the gateway agreed another protocol revision than asked: %s (checks are chosen by what was agreed)", a)
	}
}

// NewRecorder starts a recorder for the named scenario.
func NewRecorder(scenario string, labels ...string) *Recorder {
	return &Recorder{start: time.Now(), name: scenario, labels: slices.Clone(labels), figures: map[string]float64{}}
}

// Name returns the scenario name.
func (r *Recorder) Name() string { return r.name }

// Started returns when the recorder started (wall clock, with a monotonic
// reading).
func (r *Recorder) Started() time.Time { return r.start }

// Since returns the monotonic time elapsed since the recorder started.
func (r *Recorder) Since() time.Duration { return time.Since(r.start) }

// Offset converts t (taken with time.Now) into an offset from the start.
func (r *Recorder) Offset(t time.Time) time.Duration { return t.Sub(r.start) }

func (r *Recorder) add(e Event) Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	e.Seq = len(r.events) + 1
	r.events = append(r.events, e)
	return e
}

// RecordCall records a finished call. Its Start, End and Duration should
// already be set (the client driver does).
func (r *Recorder) RecordCall(c CallRecord) Event {
	return r.add(Event{Kind: EventCall, At: c.Start, Call: &c})
}

// RecordFaultSpan records a fault action that started at start and has
// just ended: the event is placed at its start (so a call that began while
// the action was under way sorts after it), with f.Duration set to how
// long the action took.
func (r *Recorder) RecordFaultSpan(f FaultRecord, start time.Time) Event {
	f.Duration = Millis(time.Since(start))
	return r.add(Event{Kind: EventFault, At: Millis(r.Offset(start)), Fault: &f})
}

// RecordAction runs fn, an action on f.Backend, and records it as
// RecordFaultSpan does, with fn's error (if any) in f.Error.
func (r *Recorder) RecordAction(f FaultRecord, fn func() error) error {
	start := time.Now()
	err := fn()
	if err != nil {
		f.Error = err.Error()
	}
	r.RecordFaultSpan(f, start)
	return err
}

// RecordTransition records an observed state change now.
func (r *Recorder) RecordTransition(t TransitionRecord) Event {
	return r.add(Event{Kind: EventTransition, At: Millis(r.Since()), Transition: &t})
}

// Note records free text now.
func (r *Recorder) Note(format string, args ...any) Event {
	return r.add(Event{Kind: EventNote, At: Millis(r.Since()), Note: fmt.Sprintf(format, args...)})
}

// SkipCheck records that a part of the scenario's checks did not run
// (e.g. "metrics counters: target lacks capability metrics"), both in the
// result's SkippedChecks and as a note. A scenario that passes with
// skipped checks is a partial pass, and reports show it as one: a check
// that did not run must never look like one that passed.
func (r *Recorder) SkipCheck(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	r.mu.Lock()
	r.skipped = append(r.skipped, msg)
	r.mu.Unlock()
	r.Note("check skipped: %s", msg)
}

// Seq returns the Seq of the last event recorded so far (0 when none):
// events recorded later have a larger Seq.
func (r *Recorder) Seq() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.events)
}

// CallsBetween returns the call events whose Seq is in (after, upTo], in
// Seq order: the calls recorded between two Seq readings.
func (r *Recorder) CallsBetween(after, upTo int) []Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []Event
	for _, e := range r.events[min(after, len(r.events)):min(upTo, len(r.events))] {
		if e.Kind == EventCall {
			out = append(out, e)
		}
	}
	return out
}

// AddCheck records a judged check (its At is set to now when zero) and
// a note on the timeline. A check named like an earlier one gets a " #2"
// (#3, ...) suffix, so names stay unique within the scenario. A check
// without a Property gets the one the catalogue declares for its name
// (PropertyOf); Transport and Revision default to the scenario's labels,
// Fault to "none".
func (r *Recorder) AddCheck(c Check) Check {
	c.At = cmp.Or(c.At, Millis(r.Since()))
	c.Property = cmp.Or(c.Property, PropertyOf(c.Name))
	c.Transport = cmp.Or(c.Transport, labelsOf(r.labels, "streamable-http", "sse", "stdio"))
	c.Revision = cmp.Or(c.Revision, labelsOf(r.labels, string(RevisionLegacy), string(RevisionModern)))
	c.Fault = cmp.Or(c.Fault, "none")
	r.mu.Lock()
	base, n := c.Name, 1
	for r.hasCheckLocked(c.Name) {
		n++
		c.Name = fmt.Sprintf("%s #%d", base, n)
	}
	r.checks = append(r.checks, c)
	if c.Verdict == CheckNotApplicable {
		r.skipped = append(r.skipped, c.Name+": "+c.Reason)
	}
	r.mu.Unlock()
	switch c.Verdict {
	case CheckNotApplicable:
		r.Note("check %q not applicable: %s", c.Name, c.Reason)
	case CheckFailed:
		r.Note("check %q FAILED: %s", c.Name, c.Observed)
	case CheckInconclusive:
		r.Note("check %q INCONCLUSIVE: %s", c.Name, c.Reason)
	}
	return c
}

func (r *Recorder) hasCheckLocked(name string) bool {
	return slices.ContainsFunc(r.checks, func(c Check) bool { return c.Name == name })
}

// NotApplicable records a check that was not judged because the target
// lacks what it needs (reason names it). It also lists it in the result's
// SkippedChecks: a pass with checks not applicable is a partial pass.
func (r *Recorder) NotApplicable(name, reason string) Check {
	return r.AddCheck(Check{Name: name, Verdict: CheckNotApplicable, Reason: reason})
}

// Inconclusive records a check whose premise could not be established,
// and why (see CheckInconclusive).
func (r *Recorder) Inconclusive(name, reason string) Check {
	return r.AddCheck(Check{Name: name, Verdict: CheckInconclusive, Reason: reason})
}

// Checks returns a copy of the checks judged so far, in order.
func (r *Recorder) Checks() []Check {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.checks)
}

// FailedChecks returns the checks that failed, in order.
func (r *Recorder) FailedChecks() []Check {
	return slices.DeleteFunc(r.Checks(), func(c Check) bool { return c.Verdict != CheckFailed })
}

// SetFigure sets a key figure, e.g. SetFigure("time_to_error_ms", 0.8).
func (r *Recorder) SetFigure(name string, v float64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.figures[name] = v
}

// MaxFigure sets a figure to v unless it already holds a larger value.
func (r *Recorder) MaxFigure(name string, v float64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if old, ok := r.figures[name]; !ok || v > old {
		r.figures[name] = v
	}
}

// Figures returns a copy of the figures.
func (r *Recorder) Figures() map[string]float64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return maps.Clone(r.figures)
}

// Events returns a copy of the timeline ordered by At (then by Seq).
func (r *Recorder) Events() []Event {
	r.mu.Lock()
	ev := slices.Clone(r.events)
	r.mu.Unlock()
	slices.SortStableFunc(ev, func(a, b Event) int { return cmp.Or(cmp.Compare(a.At, b.At), a.Seq-b.Seq) })
	return ev
}

// Calls returns the recorded calls in start order.
func (r *Recorder) Calls() []CallRecord {
	var out []CallRecord
	for _, e := range r.Events() {
		if e.Kind == EventCall {
			out = append(out, *e.Call)
		}
	}
	return out
}

// Transitions returns the recorded transitions in order.
func (r *Recorder) Transitions() []TransitionRecord {
	var out []TransitionRecord
	for _, e := range r.Events() {
		if e.Kind == EventTransition {
			out = append(out, *e.Transition)
		}
	}
	return out
}

// SetVerdict sets the scenario's verdict and its reason, and marks the
// scenario's end (for Duration).
func (r *Recorder) SetVerdict(v Verdict, reason string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.verdict, r.reason, r.ended = v, reason, time.Since(r.start)
}

// Pass sets the verdict passed.
func (r *Recorder) Pass() { r.SetVerdict(VerdictPassed, "") }

// Fail sets the verdict failed with a reason.
func (r *Recorder) Fail(reason string) { r.SetVerdict(VerdictFailed, reason) }

// Skip sets the verdict skipped with a reason (e.g. a
// *MissingCapabilityError's text).
func (r *Recorder) Skip(reason string) { r.SetVerdict(VerdictSkipped, reason) }

// Result returns the scenario result: name, labels, verdict (passed when
// none was set), figures and the timeline.
func (r *Recorder) Result() ScenarioResult {
	ev := r.Events()
	r.mu.Lock()
	defer r.mu.Unlock()
	v, d := cmp.Or(r.verdict, VerdictPassed), cmp.Or(r.ended, time.Since(r.start))
	if ev == nil {
		ev = []Event{}
	}
	return ScenarioResult{Name: r.name, Labels: slices.Clone(r.labels), Verdict: v, Reason: r.reason,
		SkippedChecks: slices.Clone(r.skipped), Checks: slices.Clone(r.checks), Started: r.start.Round(0), Duration: Millis(d), Figures: maps.Clone(r.figures), Events: ev,
		Agreed: slices.Clone(r.agreed)}
}

// JSON returns a versioned results document holding this one scenario.
func (r *Recorder) JSON() ([]byte, error) {
	res := Results{Started: r.start.Round(0), Scenarios: []ScenarioResult{r.Result()}}
	var buf bytes.Buffer
	if err := res.WriteJSON(&buf); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// labelsOf joins (with "+") those of want that labels hold.
func labelsOf(labels []string, want ...string) string {
	var out []string
	for _, w := range want {
		if slices.Contains(labels, w) {
			out = append(out, w)
		}
	}
	return strings.Join(out, "+")
}
