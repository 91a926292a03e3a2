package history

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// findingsResults is a run with two failed checks of one property in two
// scenarios, a passed check, an inconclusive and a not_applicable one.
func findingsResults() *Results {
	call := func(seq int, target string, o Outcome, took time.Duration, text string) Event {
		return Event{Seq: seq, Kind: EventCall, Call: &CallRecord{Method: "tools/call", Target: target, Outcome: o, Duration: Millis(took), Error: text}}
	}
	return &Results{SchemaVersion: SchemaVersion, Profile: "profiles/x.yaml", Scenarios: []ScenarioResult{
		{Name: "hang/legacy/sse", Verdict: VerdictFailed, Checks: []Check{
			{Name: "stall: fails within call timeout + 1 s", Verdict: CheckFailed, Calls: []int{1}, Took: Millis(5 * time.Second),
				Property: PropBounded, Fault: "stall", Transport: "sse", Revision: "2025-11-25"},
			{Name: "stall: alpha unaffected", Verdict: CheckPassed, Property: PropUnaffected},
			{Name: "metrics: counters", Verdict: CheckNotApplicable, Reason: "target x lacks capability metrics", Property: PropMetrics, Fault: "none"},
		}, Events: []Event{call(1, "beta_slow", OutcomeTimeout, 5*time.Second, "context deadline exceeded")}},
		{Name: "hang/modern/sse", Verdict: VerdictFailed, Checks: []Check{
			{Name: "stall: fails within call timeout + 1 s", Verdict: CheckFailed, Calls: []int{3}, Property: PropBounded, Fault: "stall", Transport: "sse", Revision: "modern"},
			{Name: "stall: beta answers once cleared", Verdict: CheckInconclusive, Reason: "no steady state", Property: PropRecovers, Fault: "stall"},
		}, Events: []Event{call(3, "beta_slow", OutcomeTimeout, 7*time.Second, "")}},
	}}
}

// TestFindingsJSON pins the findings' JSON shape: one failed property
// with its places, first and worst evidence and the command that
// reproduces it, then the checks not judged, grouped the same way.
func TestFindingsJSON(t *testing.T) {
	r := findingsResults()
	var buf bytes.Buffer
	if err := r.WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Findings json.RawMessage `json:"findings"`
	}
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	var got bytes.Buffer
	if err := json.Indent(&got, doc.Findings, "", " "); err != nil {
		t.Fatal(err)
	}
	want := `[
 {
  "property": "bounded-by-call-timeout",
  "text": "the call is bounded by the call timeout",
  "verdict": "failed",
  "checks": 2,
  "scenarios": [
   "hang/legacy/sse",
   "hang/modern/sse"
  ],
  "where": [
   {
    "scenario": "hang/legacy/sse",
    "fault": "stall",
    "transport": "sse",
    "revision": "2025-11-25",
    "checks": 1
   },
   {
    "scenario": "hang/modern/sse",
    "fault": "stall",
    "transport": "sse",
    "revision": "modern",
    "checks": 1
   }
  ],
  "first": {
   "scenario": "hang/legacy/sse",
   "check": "stall: fails within call timeout + 1 s",
   "call": "tools/call beta_slow",
   "outcome": "timeout",
   "text": "no reply from the gateway",
   "tookMs": 5000
  },
  "worst": {
   "scenario": "hang/modern/sse",
   "check": "stall: fails within call timeout + 1 s",
   "call": "tools/call beta_slow",
   "outcome": "timeout",
   "text": "no reply from the gateway",
   "tookMs": 7000
  },
  "reproduce": "chaos run --profile profiles/x.yaml --scenario hang/legacy/sse"
 },
 {
  "property": "recovers-after-fault",
  "text": "the backend recovers after the fault",
  "verdict": "inconclusive",
  "checks": 1,
  "scenarios": [
   "hang/modern/sse"
  ],
  "where": [
   {
    "scenario": "hang/modern/sse",
    "fault": "stall",
    "checks": 1
   }
  ],
  "first": {
   "scenario": "hang/modern/sse",
   "check": "stall: beta answers once cleared",
   "text": "no steady state",
   "tookMs": 0
  },
  "worst": {
   "scenario": "hang/modern/sse",
   "check": "stall: beta answers once cleared",
   "text": "no steady state",
   "tookMs": 0
  },
  "reasons": [
   "no steady state"
  ],
  "reasonChecks": [
   1
  ],
  "reproduce": "chaos run --profile profiles/x.yaml --scenario hang/modern/sse"
 },
 {
  "property": "metrics",
  "text": "metrics",
  "verdict": "not_applicable",
  "checks": 1,
  "scenarios": [
   "hang/legacy/sse"
  ],
  "where": [
   {
    "scenario": "hang/legacy/sse",
    "fault": "none",
    "checks": 1
   }
  ],
  "first": {
   "scenario": "hang/legacy/sse",
   "check": "metrics: counters",
   "text": "target x lacks capability metrics",
   "tookMs": 0
  },
  "worst": {
   "scenario": "hang/legacy/sse",
   "check": "metrics: counters",
   "text": "target x lacks capability metrics",
   "tookMs": 0
  },
  "reasons": [
   "target x lacks capability metrics"
  ],
  "reasonChecks": [
   1
  ],
  "reproduce": "chaos run --profile profiles/x.yaml --scenario hang/legacy/sse"
 }
]`
	if got.String() != want {
		t.Errorf("findings JSON:\n%s\nwant:\n%s", got.String(), want)
	}
	// The one-line form: the property, its counts, the first evidence.
	line := r.Findings[0].Line()
	for _, w := range []string{"✖ the call is bounded by the call timeout: 2 checks failed in 2 scenarios",
		"`tools/call beta_slow` ended at 5s by the client's deadline: no reply from the gateway (hang/legacy/sse)"} {
		if !strings.Contains(line, w) {
			t.Errorf("line %q lacks %q", line, w)
		}
	}
	if l := r.Findings[2].Line(); !strings.HasPrefix(l, "? not judged (not applicable), because target x lacks capability metrics: 1 check of \"metrics\"") {
		t.Errorf("not judged line: %q", l)
	}
}

// TestNoFindingsWhenAllPass: a run whose checks all passed has findings
// [] (never null) in its JSON.
func TestNoFindingsWhenAllPass(t *testing.T) {
	r := &Results{Scenarios: []ScenarioResult{{Name: "s", Verdict: VerdictPassed, Checks: []Check{{Name: "alpha unaffected", Verdict: CheckPassed}}}}}
	var buf bytes.Buffer
	if err := r.WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), `"findings": []`) {
		t.Errorf("JSON lacks \"findings\": []:\n%s", buf.String())
	}
}

// TestFindingsSkipInterrupted: a scenario a signal cut short gives no
// finding; its last checks judged the interruption, not the gateway.
func TestFindingsSkipInterrupted(t *testing.T) {
	r := findingsResults()
	for i := range r.Scenarios {
		r.Scenarios[i].Verdict = VerdictInterrupted
	}
	if f := BuildFindings(r); len(f) != 0 {
		t.Fatalf("findings of interrupted scenarios: %+v", f)
	}
	r.Scenarios[0].Verdict = VerdictFailed
	if f := BuildFindings(r); len(f) == 0 {
		t.Fatal("the finished scenario's failure is not a finding")
	}
}

// TestNotJudgedListsEveryReasonWithItsCount: a group of checks not judged
// for two reasons names both, each with its count, most frequent first.
func TestNotJudgedListsEveryReasonWithItsCount(t *testing.T) {
	na := func(reason string) Check {
		return Check{Name: "metrics: counters", Verdict: CheckNotApplicable, Reason: reason, Property: PropMetrics}
	}
	r := &Results{SchemaVersion: SchemaVersion, Scenarios: []ScenarioResult{
		{Name: "a", Verdict: VerdictPassed, Checks: []Check{na("no metrics"), na("no metrics"), na("stdio backend")}},
		{Name: "b", Verdict: VerdictPassed, Checks: []Check{na("no metrics")}},
	}}
	f := BuildFindings(r)
	if len(f) != 1 || f[0].Checks != 4 {
		t.Fatalf("findings %+v", f)
	}
	if got := strings.Join(f[0].ReasonLines(), " | "); got != "no metrics: 3 checks | stdio backend: 1 check" {
		t.Errorf("reason lines %q", got)
	}
	if l := f[0].Line(); !strings.HasPrefix(l, `? not judged (not applicable), because 2 reasons (no metrics: 3 checks; stdio backend: 1 check): 4 checks of "metrics" in 2 scenarios`) {
		t.Errorf("line %q", l)
	}
}
