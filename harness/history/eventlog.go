package history

import (
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/vmcp-chaos/vmcp-chaos/internal/atomicfile"
	"github.com/vmcp-chaos/vmcp-chaos/internal/redact"
)

// EventLog is a run's complete event log, the sidecar of a bounded
// results file (Results.WriteSplit): every scenario's events, in the
// results' scenario order. The results file keeps each scenario's
// evidence (BoundEvents) and says how many events only the log holds.
type EventLog struct {
	// SchemaVersion is always SchemaVersion when written.
	SchemaVersion int `json:"schemaVersion"`
	// Started is the run's Started: it ties the log to its results.
	Started time.Time `json:"started"`
	// Scenarios hold the events, one entry per scenario of the results.
	Scenarios []ScenarioEvents `json:"scenarios"`
}

// ScenarioEvents is one scenario's complete timeline.
type ScenarioEvents struct {
	Name   string  `json:"name"`
	Events []Event `json:"events"`
}

// MaxKeptEvents bounds the events a bounded results file keeps per
// scenario (BoundEvents): the evidence of its checks first, then its
// faults and state transitions, then notes.
const MaxKeptEvents = 300

// EventsPath is the event log beside a results file: out/results.json →
// out/results.events.json.
func EventsPath(results string) string {
	return strings.TrimSuffix(results, filepath.Ext(results)) + ".events.json"
}

// BoundEvents returns the events of s a bounded results file keeps, in
// their order, and how many it leaves to the event log: every call that
// is a check's evidence, every fault and transition, and notes, at most
// MaxKeptEvents in that priority.
func BoundEvents(s ScenarioResult) (kept []Event, omitted int) {
	if len(s.Events) == 0 {
		return s.Events, 0
	}
	evidence := map[int]bool{}
	for _, c := range s.Checks {
		for _, seq := range c.Calls {
			evidence[seq] = true
		}
	}
	rank := func(e Event) int {
		switch {
		case e.Kind == EventCall && evidence[e.Seq]:
			return 0
		case e.Kind == EventFault || e.Kind == EventTransition:
			return 1
		case e.Kind == EventNote:
			return 2
		}
		return 3 // calls that are no check's evidence: the log only
	}
	idx := make([]int, 0, len(s.Events))
	for i, e := range s.Events {
		if rank(e) < 3 {
			idx = append(idx, i)
		}
	}
	if len(idx) > MaxKeptEvents {
		slices.SortStableFunc(idx, func(a, b int) int { return rank(s.Events[a]) - rank(s.Events[b]) })
		idx = idx[:MaxKeptEvents]
		slices.Sort(idx)
	}
	kept = make([]Event, 0, len(idx))
	for _, i := range idx {
		kept = append(kept, s.Events[i])
	}
	return kept, len(s.Events) - len(kept)
}

// WriteSplit writes the run as two files: the complete event log at
// EventsPath(path) (compact JSON) and then, at path, the results with
// each scenario's events bounded (BoundEvents; EventsOmitted counts the
// rest, EventsFile names the log; the findings are built from every
// event). Both are written whole or not at all; r itself is left
// unchanged but for SchemaVersion and Findings.
func (r *Results) WriteSplit(path string) error {
	log := EventLog{SchemaVersion: SchemaVersion, Started: r.Started, Scenarios: make([]ScenarioEvents, 0, len(r.Scenarios))}
	bounded := *r
	bounded.Scenarios = slices.Clone(r.Scenarios)
	for i := range bounded.Scenarios {
		s := &bounded.Scenarios[i]
		log.Scenarios = append(log.Scenarios, ScenarioEvents{Name: s.Name, Events: nonNil(s.Events)})
		s.Events, s.EventsOmitted = BoundEvents(*s)
		s.Events = nonNil(s.Events)
	}
	logPath := EventsPath(path)
	// Credentials never reach the event log either (redact.Text keeps JSON valid).
	if err := atomicfile.Write(logPath, func(w io.Writer) error {
		rw := redact.NewWriter(w)
		if err := json.NewEncoder(rw).Encode(log); err != nil {
			return err
		}
		return rw.Flush()
	}); err != nil {
		return fmt.Errorf("harness: write the event log: %w", err)
	}
	// The findings are built from every event, before the bound.
	r.SchemaVersion = SchemaVersion
	r.Findings = BuildFindings(r)
	bounded.SchemaVersion, bounded.Findings, bounded.EventsFile = SchemaVersion, r.Findings, filepath.Base(logPath)
	if bounded.Capabilities == nil {
		bounded.Capabilities = []string{}
	}
	return atomicfile.Write(path, bounded.encode)
}

func nonNil(ev []Event) []Event {
	if ev == nil {
		return []Event{} // written as [], never null
	}
	return ev
}

// AttachEvents puts a run's complete event log back into its bounded
// results: each scenario gets its events from the log and EventsOmitted
// 0. The log must be of this run (the same Started, the same scenarios
// in the same order, each at least as many events as the results keep).
func (r *Results) AttachEvents(log *EventLog) error {
	if log.SchemaVersion != SchemaVersion {
		return fmt.Errorf("event log schemaVersion %d, want %d", log.SchemaVersion, SchemaVersion)
	}
	if !log.Started.Equal(r.Started) {
		return fmt.Errorf("event log of the run started %s, not of this one (%s)", log.Started.Format(time.RFC3339Nano), r.Started.Format(time.RFC3339Nano))
	}
	if len(log.Scenarios) != len(r.Scenarios) {
		return fmt.Errorf("event log has %d scenarios, the results %d", len(log.Scenarios), len(r.Scenarios))
	}
	for i, s := range log.Scenarios {
		have := &r.Scenarios[i]
		if s.Name != have.Name {
			return fmt.Errorf("event log scenarios[%d] is %q, the results' is %q", i, s.Name, have.Name)
		}
		if len(s.Events) < len(have.Events) {
			return fmt.Errorf("event log scenarios[%d] (%s) has %d events, fewer than the results keep (%d)", i, s.Name, len(s.Events), len(have.Events))
		}
	}
	for i, s := range log.Scenarios {
		r.Scenarios[i].Events, r.Scenarios[i].EventsOmitted = nonNil(s.Events), 0
	}
	r.EventsFile = ""
	return nil
}
