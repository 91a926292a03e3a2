package history

import (
	"slices"
	"time"
)

// WaitedOnFailures is how long, in all, calls of this scenario that did
// not succeed were waiting for their end (an error the gateway took its
// time to give, the client's own deadline): the length of the union of
// those calls' spans, so calls waiting side by side count once. It is the
// time a gateway that is slow to fail (or does not bound its calls) took
// from the scenario, not the harness's (see harness.WithBudget).
func (r *Recorder) WaitedOnFailures() time.Duration {
	r.mu.Lock()
	var spans [][2]Millis
	for _, e := range r.events {
		if e.Kind == EventCall && e.Call != nil && e.Call.Outcome != OutcomeOK {
			spans = append(spans, [2]Millis{e.Call.Start, e.Call.End})
		}
	}
	r.mu.Unlock()
	slices.SortFunc(spans, func(a, b [2]Millis) int {
		switch {
		case a[0] < b[0]:
			return -1
		case a[0] > b[0]:
			return 1
		}
		return 0
	})
	var total, end Millis
	for _, s := range spans {
		from := max(s[0], end)
		if s[1] > from {
			total += s[1] - from
			end = s[1]
		}
	}
	return total.D()
}
