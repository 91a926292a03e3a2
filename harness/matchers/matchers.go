// Package matchers holds Gomega matchers for harness calls and gateway
// state: BeBackendUnavailable, ReturnWithin, HaveOutcome, HaveBackendState
// and HaveBreakerState.
//
// The call matchers accept a *history.Call (what history.Client returns), a
// history.CallRecord or *CallRecord, a history.Event of kind call, or a raw
// mcp-go outcome: a *mcp.CallToolResult, an error, or Result(res, err).
package matchers

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/onsi/gomega/format"
	"github.com/onsi/gomega/types"
	"github.com/vmcp-chaos/vmcp-chaos/harness/history"
	"github.com/vmcp-chaos/vmcp-chaos/harness/targets"
)

// Outcome is a raw mcp-go (result, error) pair, for matching calls not
// made through history.Client.
type Outcome struct {
	// Result is the tool result (may be nil).
	Result *mcp.CallToolResult
	// Err is the call's error (may be nil).
	Err error
}

// Result pairs a raw mcp-go tool result with its error for the matchers:
// Expect(matchers.Result(c.CallTool(ctx, req))).To(BeBackendUnavailable("beta")).
func Result(res *mcp.CallToolResult, err error) Outcome { return Outcome{Result: res, Err: err} }

// observed is what the call matchers look at.
type observed struct {
	isError  bool   // isError result
	err      string // error text ("" when none)
	text     string // result text
	meta     map[string]any
	outcome  history.Outcome // "" when not a recorded call
	backend  string          // recorded backend
	duration time.Duration
	timed    bool // duration is known
	target   string
	method   string
	rec      *history.Recorder
}

func observe(actual any) (observed, error) {
	switch a := actual.(type) {
	case *history.Call:
		if a == nil {
			return observed{}, errors.New("got a nil *history.Call")
		}
		o := fromRecord(&a.CallRecord)
		o.rec = a.Recorder()
		if a.Result != nil {
			o.isError = a.Result.IsError
			o.text = history.ResultText(a.Result)
		}
		return o, nil
	case history.Call:
		return observe(&a)
	case *history.CallRecord:
		if a == nil {
			return observed{}, errors.New("got a nil *history.CallRecord")
		}
		return fromRecord(a), nil
	case history.CallRecord:
		return fromRecord(&a), nil
	case history.Event:
		if a.Kind != history.EventCall || a.Call == nil {
			return observed{}, fmt.Errorf("got a %s event, not a call", a.Kind)
		}
		return fromRecord(a.Call), nil
	case *mcp.CallToolResult:
		return fromOutcome(Outcome{Result: a}), nil
	case Outcome:
		return fromOutcome(a), nil
	case error:
		return fromOutcome(Outcome{Err: a}), nil
	case nil:
		return observed{}, errors.New("got nil (a nil error is not a call outcome)")
	}
	return observed{}, fmt.Errorf("want a *history.Call, history.CallRecord, call Event, *mcp.CallToolResult, error or matchers.Outcome, got %T", actual)
}

func fromRecord(r *history.CallRecord) observed {
	o := observed{err: r.Error, meta: r.Meta, outcome: r.Outcome, backend: r.Backend,
		duration: r.Duration.D(), timed: true, target: r.Target, method: r.Method}
	if r.IsError {
		o.isError, o.text = true, r.Error
	}
	return o
}

func fromOutcome(oc Outcome) observed {
	var o observed
	if oc.Err != nil {
		o.err = oc.Err.Error()
	}
	if oc.Result != nil {
		o.isError = oc.Result.IsError
		o.text = history.ResultText(oc.Result)
		o.meta = history.MetaFields(oc.Result.Meta)
	}
	return o
}

// describe renders an observed call for failure messages.
func (o observed) describe() string {
	var b strings.Builder
	if o.method != "" {
		fmt.Fprintf(&b, "%s %s", o.method, o.target)
	}
	if o.outcome != "" {
		fmt.Fprintf(&b, " outcome=%s", o.outcome)
	}
	if o.backend != "" {
		fmt.Fprintf(&b, " backend=%q", o.backend)
	}
	if o.timed {
		fmt.Fprintf(&b, " duration=%v", o.duration)
	}
	if o.isError {
		fmt.Fprintf(&b, " isError=true text=%q", o.text)
	}
	if o.err != "" && o.err != o.text {
		fmt.Fprintf(&b, " error=%q", o.err)
	}
	if len(o.meta) > 0 {
		m, _ := json.Marshal(o.meta)
		fmt.Fprintf(&b, " _meta=%s", m)
	}
	return strings.TrimSpace(b.String())
}

// BeBackendUnavailable matches a call that failed because backend was
// unavailable, in terms any gateway can meet: an isError tool result or an
// error (a JSON-RPC error) whose text names the backend (history.NamesBackend:
// the name as a whole word, bare or quoted, any case; the reference's
// `backend "beta" unavailable: ...` qualifies), with _meta "vmcp/backend"
// equal to backend when _meta carries one. It never matches a success, a
// client-side timeout (the gateway did not answer), or a text that names
// no backend or another one; the name of what was called (a recorded
// call's target: `not found: tool "beta_echo"`) does not count as naming
// the backend. (mcp-go's client drops a JSON-RPC error's
// data, so data cannot be checked here; the reference's data is covered by
// vmcp's own tests.)
func BeBackendUnavailable(backend string) types.GomegaMatcher {
	return &unavailableMatcher{backend: backend}
}

type unavailableMatcher struct {
	backend string
	why     string
	seen    string
}

func (m *unavailableMatcher) Match(actual any) (bool, error) {
	o, err := observe(actual)
	if err != nil {
		return false, fmt.Errorf("BeBackendUnavailable: %w", err)
	}
	m.seen = o.describe()
	text := o.err
	if o.isError && o.text != "" {
		text = o.text
	}
	text = history.WithoutCalled(text, o.target, m.backend)
	switch {
	case o.outcome == history.OutcomeOK:
		m.why = "it succeeded"
		return false, nil
	case o.outcome == history.OutcomeTimeout:
		m.why = "the client's own deadline ended it (the gateway did not answer)"
		return false, nil
	case o.outcome == "" && !o.isError && o.err == "":
		m.why = "it succeeded (no isError result, no error)"
		return false, nil
	case !history.NamesBackend(text, m.backend):
		m.why = fmt.Sprintf("its error text does not name %q", m.backend)
		return false, nil
	case history.BackendAnswered(text):
		m.why = "the text says the backend answered with an error of its own"
		return false, nil
	}
	if b, ok := o.meta[history.MetaBackend]; ok && b != m.backend {
		m.why = fmt.Sprintf("_meta %q is %v", history.MetaBackend, b)
		return false, nil
	}
	if k, ok := o.meta[history.MetaErrorKind].(string); ok && (k == "jsonrpc_error" || k == "canceled") {
		m.why = fmt.Sprintf("_meta %q is %s: the backend answered, it was not unavailable", history.MetaErrorKind, k)
		return false, nil
	}
	m.why = ""
	return true, nil
}

func (m *unavailableMatcher) FailureMessage(any) string {
	return fmt.Sprintf("Expected a call that failed with backend %q unavailable, but %s:\n\t%s", m.backend, m.why, m.seen)
}

func (m *unavailableMatcher) NegatedFailureMessage(any) string {
	return fmt.Sprintf("Expected a call that did not fail with backend %q unavailable, but it did:\n\t%s", m.backend, m.seen)
}

// HaveOutcome matches a recorded call (or *history.Call) with the given
// outcome.
func HaveOutcome(want history.Outcome) types.GomegaMatcher {
	return &outcomeMatcher{want: want}
}

type outcomeMatcher struct {
	want history.Outcome
	seen string
}

func (m *outcomeMatcher) Match(actual any) (bool, error) {
	o, err := observe(actual)
	if err != nil {
		return false, fmt.Errorf("HaveOutcome: %w", err)
	}
	if o.outcome == "" {
		return false, fmt.Errorf("HaveOutcome: %T is not a recorded call", actual)
	}
	m.seen = o.describe()
	return o.outcome == m.want, nil
}

func (m *outcomeMatcher) FailureMessage(any) string {
	return fmt.Sprintf("Expected a call with outcome %s, got:\n\t%s", m.want, m.seen)
}

func (m *outcomeMatcher) NegatedFailureMessage(any) string {
	return fmt.Sprintf("Expected a call with an outcome other than %s, got:\n\t%s", m.want, m.seen)
}

// ReturnWithinMatcher is the matcher ReturnWithin returns.
type ReturnWithinMatcher struct {
	limit  time.Duration
	figure string
	rec    *history.Recorder
	seen   string
	took   time.Duration
}

// ReturnWithin matches a recorded call (a *history.Call or CallRecord) that
// took at most d, whatever its outcome. When the call carries its recorder
// (a *history.Call), the measured latency in milliseconds is recorded as a
// figure, keeping the largest: "latency_ms.<method>.<target>" unless As
// names it.
func ReturnWithin(d time.Duration) *ReturnWithinMatcher {
	return &ReturnWithinMatcher{limit: d}
}

// As names the figure the latency is recorded under.
func (m *ReturnWithinMatcher) As(figure string) *ReturnWithinMatcher {
	m.figure = figure
	return m
}

// RecordingTo records the figure on rec (for CallRecords, which do not
// carry their recorder).
func (m *ReturnWithinMatcher) RecordingTo(rec *history.Recorder) *ReturnWithinMatcher {
	m.rec = rec
	return m
}

// Match implements types.GomegaMatcher.
func (m *ReturnWithinMatcher) Match(actual any) (bool, error) {
	o, err := observe(actual)
	if err != nil {
		return false, fmt.Errorf("ReturnWithin: %w", err)
	}
	if !o.timed {
		return false, fmt.Errorf("ReturnWithin: %T carries no duration (want a recorded call)", actual)
	}
	m.seen, m.took = o.describe(), o.duration
	if rec := cmp.Or(m.rec, o.rec); rec != nil {
		name := m.figure
		if name == "" {
			name = "latency_ms." + o.method
			if o.target != "" {
				name += "." + o.target
			}
		}
		rec.MaxFigure(name, float64(o.duration)/float64(time.Millisecond))
	}
	return o.duration <= m.limit, nil
}

// FailureMessage implements types.GomegaMatcher.
func (m *ReturnWithinMatcher) FailureMessage(any) string {
	return fmt.Sprintf("Expected the call to return within %v, it took %v:\n\t%s", m.limit, m.took, m.seen)
}

// NegatedFailureMessage implements types.GomegaMatcher.
func (m *ReturnWithinMatcher) NegatedFailureMessage(any) string {
	return fmt.Sprintf("Expected the call to take longer than %v, it took %v:\n\t%s", m.limit, m.took, m.seen)
}

// HaveBackendState matches gateway state JSON in which backend's state
// (health or session state) is want. The actual value may be
// targets.BackendStates, JSON ([]byte, string, json.RawMessage) or any
// value that marshals to health or session JSON (e.g. a vmcp
// SessionStatus); see targets.ParseBackendStates.
func HaveBackendState(backend, want string) types.GomegaMatcher {
	return &stateMatcher{backend: backend, want: want, aspect: "state"}
}

// HaveBreakerState is HaveBackendState for the backend's circuit breaker
// state (closed, open, half-open).
func HaveBreakerState(backend, want string) types.GomegaMatcher {
	return &stateMatcher{backend: backend, want: want, aspect: "breaker"}
}

type stateMatcher struct {
	backend, want, aspect string
	got                   string
	found                 bool
	all                   targets.BackendStates
}

func toStates(actual any) (targets.BackendStates, error) {
	switch a := actual.(type) {
	case targets.BackendStates:
		return a, nil
	case *targets.BackendStates:
		return *a, nil
	case []byte:
		return targets.ParseBackendStates(a)
	case json.RawMessage:
		return targets.ParseBackendStates(a)
	case string:
		return targets.ParseBackendStates([]byte(a))
	case nil:
		return nil, errors.New("got nil")
	}
	data, err := json.Marshal(actual)
	if err != nil {
		return nil, fmt.Errorf("cannot encode %T as JSON: %w", actual, err)
	}
	return targets.ParseBackendStates(data)
}

func (m *stateMatcher) Match(actual any) (bool, error) {
	states, err := toStates(actual)
	if err != nil {
		return false, fmt.Errorf("HaveBackendState: %w", err)
	}
	m.all = states
	b, ok := states[m.backend]
	m.found = ok
	if m.aspect == "breaker" {
		m.got = b.Breaker
	} else {
		m.got = b.State
	}
	return ok && m.got == m.want, nil
}

func (m *stateMatcher) FailureMessage(any) string {
	if !m.found {
		return fmt.Sprintf("Expected backend %q with %s %q, but it is not listed (backends: %v)", m.backend, m.aspect, m.want, m.all.Names())
	}
	return fmt.Sprintf("Expected backend %q to have %s %q, got %q%s", m.backend, m.aspect, m.want, m.got, lastError(m.all[m.backend]))
}

func (m *stateMatcher) NegatedFailureMessage(any) string {
	return fmt.Sprintf("Expected backend %q not to have %s %q, but it has", m.backend, m.aspect, m.want)
}

func lastError(b targets.BackendState) string {
	if b.LastError == "" {
		return ""
	}
	return " (lastError " + format.Object(b.LastError, 0) + ")"
}

// FailWithinMatcher is the matcher FailWithin returns.
type FailWithinMatcher struct {
	within *ReturnWithinMatcher
	seen   string
	failed bool
}

// FailWithin matches a recorded call that failed (an error, an isError
// result, the backend named unavailable; not a success and not the
// client's own deadline) and took at most d. Unlike ReturnWithin, a
// success does not match. The latency is recorded as a figure (as
// ReturnWithin's, named by As) only for a call that failed: a time to
// error is never a success's latency.
func FailWithin(d time.Duration) *FailWithinMatcher {
	return &FailWithinMatcher{within: ReturnWithin(d)}
}

// As names the figure the time to error is recorded under.
func (m *FailWithinMatcher) As(figure string) *FailWithinMatcher {
	m.within.As(figure)
	return m
}

// Match implements types.GomegaMatcher.
func (m *FailWithinMatcher) Match(actual any) (bool, error) {
	o, err := observe(actual)
	if err != nil {
		return false, fmt.Errorf("FailWithin: %w", err)
	}
	m.seen = o.describe()
	switch o.outcome {
	case history.OutcomeError, history.OutcomeToolError, history.OutcomeBackendUnavailable:
		m.failed = true
	case "":
		return false, fmt.Errorf("FailWithin: %T is not a recorded call", actual)
	default:
		return false, nil
	}
	return m.within.Match(actual)
}

// FailureMessage implements types.GomegaMatcher.
func (m *FailWithinMatcher) FailureMessage(actual any) string {
	if !m.failed {
		return fmt.Sprintf("Expected the call to fail within %v, it did not fail (the gateway did not answer with an error):\n\t%s", m.within.limit, m.seen)
	}
	return m.within.FailureMessage(actual)
}

// NegatedFailureMessage implements types.GomegaMatcher.
func (m *FailWithinMatcher) NegatedFailureMessage(any) string {
	return fmt.Sprintf("Expected the call not to fail within %v:\n\t%s", m.within.limit, m.seen)
}
