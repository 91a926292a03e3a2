package history

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestRecorderJSONRoundTrip(t *testing.T) {
	rec := NewRecorder("wrapping", "wrapping", "hang")
	rec.RecordCall(CallRecord{Client: "c1", Revision: RevisionLegacy, Session: "s1", Method: "tools/call", Target: "beta_echo",
		Backend: "beta", Outcome: OutcomeBackendUnavailable, IsError: true, Error: `backend "beta" unavailable: HTTP 403 Forbidden`,
		ErrorKind: "http_status", Meta: map[string]any{MetaBackend: "beta", MetaErrorKind: "http_status"},
		Start: Millis(1234567 * time.Nanosecond), End: Millis(2345678 * time.Nanosecond), Duration: Millis(1111111 * time.Nanosecond), Timeout: Millis(10 * time.Second)})
	rec.RecordFault(FaultRecord{Backend: "beta", Action: "set", Kinds: []string{"http_status"}, Detail: "http_status 403"})
	rec.RecordTransition(TransitionRecord{Backend: "beta", Aspect: "breaker", From: "closed", To: "open", Source: "GET /api/backends/health"})
	rec.Note("hello %d", 42)
	rec.SetFigure("time_to_error_ms", 0.75)
	rec.MaxFigure("latency_ms", 3)
	rec.MaxFigure("latency_ms", 2)
	rec.SetVerdict(VerdictFailed, "beta was not named")

	data, err := rec.JSON()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(data, []byte(`"schemaVersion": 1`)) || !bytes.Contains(data, []byte(`"startMs": 1.234567`)) {
		t.Fatalf("JSON:\n%s", data)
	}
	res, err := ReadResults(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	want := rec.Result()
	got := res.Scenarios[0]
	if !got.Started.Equal(want.Started) {
		t.Fatalf("started %v, want %v", got.Started, want.Started)
	}
	got.Started, want.Started = time.Time{}, time.Time{}
	if !reflect.DeepEqual(got, want) {
		g, _ := json.Marshal(got)
		w, _ := json.Marshal(want)
		t.Fatalf("round trip:\n got %s\nwant %s", g, w)
	}
	if got.Figures["latency_ms"] != 3 || got.Verdict != VerdictFailed || len(got.Events) != 4 {
		t.Fatalf("result: %+v", got)
	}
	// Events are ordered by time (the call, recorded first, started at
	// 1.23 ms, after the fault).
	for i := 1; i < len(got.Events); i++ {
		if got.Events[i].At < got.Events[i-1].At {
			t.Fatalf("events out of order: %+v", got.Events)
		}
	}
	if calls := rec.Calls(); len(calls) != 1 || calls[0].Backend != "beta" {
		t.Fatalf("calls %+v", calls)
	}
	if _, err := ReadResults(strings.NewReader(`{"schemaVersion": 2}`)); err == nil {
		t.Fatal("schemaVersion 2 accepted")
	}
}

func TestRecorderConcurrent(t *testing.T) {
	rec := NewRecorder("load")
	var wg sync.WaitGroup
	for i := range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rec.Note("n%d", i)
			rec.MaxFigure("f", float64(i))
		}()
	}
	wg.Wait()
	ev := rec.Events()
	if len(ev) != 50 || rec.Figures()["f"] != 49 {
		t.Fatalf("%d events, figure %v", len(ev), rec.Figures()["f"])
	}
	for i := 1; i < len(ev); i++ {
		if ev[i].At < ev[i-1].At {
			t.Fatal("events out of order")
		}
	}
	if r := NewRecorder("x").Result(); r.Verdict != VerdictPassed || r.Events == nil {
		t.Fatalf("empty result %+v", r)
	}
}

// TestRecorderFaultSpanAndSkippedChecks: a fault action is placed at its
// start, with its duration, so a call that began while the action was
// under way sorts after it; skipped checks make a pass partial and survive
// the JSON round trip.
func TestRecorderFaultSpanAndSkippedChecks(t *testing.T) {
	rec := NewRecorder("span")
	actionStart := time.Now()
	time.Sleep(2 * time.Millisecond) // the action takes a while...
	callStart := rec.Since()         // ...and a call starts during it
	rec.RecordCall(CallRecord{Method: "tools/call", Outcome: OutcomeOK, Start: Millis(callStart), End: Millis(callStart), Duration: 0})
	rec.RecordFaultSpan(FaultRecord{Backend: "beta", Action: "kill"}, actionStart)
	ev := rec.Events()
	if len(ev) != 2 || ev[0].Kind != EventFault || ev[1].Kind != EventCall {
		t.Fatalf("order: %+v", ev)
	}
	if d := ev[0].Fault.Duration.D(); d < 2*time.Millisecond || ev[0].At > ev[1].At {
		t.Fatalf("fault at %v lasting %v, call at %v", ev[0].At.D(), d, ev[1].At.D())
	}
	if rec.Result().Partial() {
		t.Fatal("partial without skipped checks")
	}
	rec.SkipCheck("metrics counters: target x lacks capability %s", "metrics")
	rec.Pass()
	data, err := rec.JSON()
	if err != nil {
		t.Fatal(err)
	}
	res, err := ReadResults(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	got := res.Scenarios[0]
	if !got.Partial() || len(got.SkippedChecks) != 1 || !strings.Contains(got.SkippedChecks[0], "metrics") {
		t.Fatalf("skipped checks: %+v", got.SkippedChecks)
	}
	if last := got.Events[len(got.Events)-1]; last.Kind != EventNote || !strings.Contains(last.Note, "check skipped: metrics") {
		t.Fatalf("no note for the skipped check: %+v", last)
	}
}

// TestRecorderChecks: checks keep their order and unique names, a not
// applicable one is listed in SkippedChecks too (a partial pass), and
// CallsBetween returns the calls recorded between two Seq readings.
func TestRecorderChecks(t *testing.T) {
	rec := NewRecorder("s")
	before := rec.Seq()
	rec.RecordCall(CallRecord{Method: "tools/call", Target: "beta_echo"})
	rec.Note("between")
	rec.RecordCall(CallRecord{Method: "tools/call", Target: "alpha_echo"})
	calls := rec.CallsBetween(before, rec.Seq())
	if len(calls) != 2 || calls[0].Call.Target != "beta_echo" || calls[1].Seq != 3 {
		t.Fatalf("calls between: %+v", calls)
	}
	rec.AddCheck(Check{Name: "a", Verdict: CheckPassed})
	rec.AddCheck(Check{Name: "a", Verdict: CheckFailed, Observed: "boom"})
	rec.NotApplicable("m", "target x lacks capability metrics")
	res := rec.Result()
	if len(res.Checks) != 3 || res.Checks[1].Name != "a #2" || res.Checks[0].At == 0 {
		t.Fatalf("checks: %+v", res.Checks)
	}
	if f, j := res.CheckCounts(); f != 1 || j != 2 {
		t.Fatalf("counts %d/%d", f, j)
	}
	if len(rec.FailedChecks()) != 1 || len(res.SkippedChecks) != 1 || !strings.Contains(res.SkippedChecks[0], "m: target x lacks") {
		t.Fatalf("failed %v, skipped %v", rec.FailedChecks(), res.SkippedChecks)
	}
	var buf strings.Builder
	r := &Results{}
	r.Add(rec)
	if err := r.WriteJSON(&buf); err != nil || !strings.Contains(buf.String(), `"capabilities": []`) || !strings.Contains(buf.String(), `"verdict": "not_applicable"`) {
		t.Fatalf("JSON (%v): %s", err, buf.String())
	}
}

// RecordFault records a fault action now.
func (r *Recorder) RecordFault(f FaultRecord) Event {
	return r.add(Event{Kind: EventFault, At: Millis(r.Since()), Fault: &f})
}
