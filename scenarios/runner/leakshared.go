package runner

import (
	"fmt"

	"github.com/vmcp-chaos/vmcp-chaos/harness/history"
	"github.com/vmcp-chaos/vmcp-chaos/harness/runtimes"
)

// failLeaks runs leakCheck, a process-wide snapshot taken before
// scenarios that ran at once (each checked its own, labelled goroutines:
// Run), after they have all ended: it catches goroutines started on a
// scenario's behalf by goroutines it does not own, which carry no
// scenario's label. A leak fails every one of recs that ran (not skipped,
// not nil): which one leaked cannot be told apart. how says how they ran.
func failLeaks(leakCheck func(runtimes.TB), recs []*history.Recorder, how string) {
	for _, rec := range recs {
		if rec != nil && leakedOwn(rec) {
			return // the leak is judged, on the scenario that owns it
		}
	}
	tb := &leakTB{}
	leakCheck(tb)
	if tb.msg == "" {
		return
	}
	for _, rec := range recs {
		if rec == nil || rec.Result().Verdict == history.VerdictSkipped {
			continue
		}
		rec.AddCheck(history.Check{Name: leakCheckName, Verdict: history.CheckFailed,
			Observed: fmt.Sprintf("(%s; the leak is one of theirs) %s", how, tb.msg)})
		rec.SetVerdict(history.VerdictFailed, checksReason(rec.Result()))
	}
}

// leakedOwn reports whether rec's own leak check failed.
func leakedOwn(rec *history.Recorder) bool {
	for _, c := range rec.Result().Checks {
		if c.Name == leakCheckName && c.Verdict == history.CheckFailed {
			return true
		}
	}
	return false
}

// leakCheckName names the check a leak fails.
const leakCheckName = "no goroutine leaked"
