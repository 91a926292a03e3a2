package history

import (
	"slices"
	"sync"
	"time"
)

// WaitedOnFailures is how long, in all, this scenario waited on the
// gateway: calls that did not succeed waiting for their end (an error the
// gateway took its time to give, the client's own deadline), and the
// harness waiting for the gateway to recover from a fault
// (AwaitRecovery: steady state, a backend served again): the length of
// the union of those spans, so waits side by side count once. It is the
// time a gateway that is slow to fail, does not bound its calls or is
// slow to recover took from the scenario, not the harness's (see
// harness.WithBudget).
func (r *Recorder) WaitedOnFailures() time.Duration {
	now := Millis(time.Since(r.start))
	r.mu.Lock()
	spans := make([][2]Millis, 0, len(r.recoveryWaits))
	for _, w := range r.recoveryWaits {
		if w[1] < 0 { // still waiting: up to now
			w[1] = now
		}
		spans = append(spans, w)
	}
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

// AwaitRecovery records that the harness waits, from now until the
// returned func is called, for the gateway to recover from a fault (to
// serve every backend again, or one backend after its fault ended): the
// gateway's time, which WaitedOnFailures counts.
func (r *Recorder) AwaitRecovery() (done func()) {
	r.mu.Lock()
	i := len(r.recoveryWaits)
	r.recoveryWaits = append(r.recoveryWaits, [2]Millis{Millis(time.Since(r.start)), -1})
	r.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			r.mu.Lock()
			r.recoveryWaits[i][1] = Millis(time.Since(r.start))
			r.mu.Unlock()
		})
	}
}
