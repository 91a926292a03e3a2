package history

import (
	"testing"
	"time"
)

// TestWaitedCountsRecoveryWaits: the harness waiting for the gateway to
// recover (AwaitRecovery) is the gateway's time, counted while it lasts
// and once it ended; a failing call inside such a wait counts once;
// successful calls never count.
func TestWaitedCountsRecoveryWaits(t *testing.T) {
	rec := NewRecorder("waited")
	rec.RecordCall(CallRecord{Method: "tools/call", Outcome: OutcomeOK, Start: 0, End: Millis(time.Hour)})
	if w := rec.WaitedOnFailures(); w != 0 {
		t.Fatalf("a successful call counted: %v", w)
	}
	done := rec.AwaitRecovery()
	time.Sleep(60 * time.Millisecond)
	if w := rec.WaitedOnFailures(); w < 50*time.Millisecond {
		t.Fatalf("a recovery wait still running counted %v, want at least 50ms", w)
	}
	// A failing call within the wait: the union counts it once.
	now := Millis(rec.Since())
	rec.RecordCall(CallRecord{Method: "tools/call", Outcome: OutcomeBackendUnavailable, Start: now - Millis(40*time.Millisecond), End: now})
	done()
	done() // a second call changes nothing
	ended := rec.WaitedOnFailures()
	time.Sleep(30 * time.Millisecond)
	if w := rec.WaitedOnFailures(); w != ended {
		t.Fatalf("an ended wait kept counting: %v then %v", ended, w)
	}
	if ended < 60*time.Millisecond || ended > rec.Since() {
		t.Fatalf("waited %v after a wait of at least 60ms (the scenario ran %v)", ended, rec.Since())
	}
	// A failing call outside the wait adds its own span.
	end := Millis(rec.Since()) + Millis(time.Second)
	rec.RecordCall(CallRecord{Method: "tools/call", Outcome: OutcomeTimeout, Start: end - Millis(time.Second), End: end})
	if w := rec.WaitedOnFailures(); w < ended+time.Second-time.Millisecond || w > ended+time.Second+time.Millisecond {
		t.Fatalf("waited %v, want %v plus the failing call's 1s", w, ended)
	}
}
