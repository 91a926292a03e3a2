// Package health tracks each backend's health from active probes and from
// real traffic, and runs the probes on an interval.
package health

import (
	"cmp"
	"context"
	"sync"
	"time"
)

// State is a backend's health state.
type State string

// Health states.
const (
	Unknown         State = "unknown"         // no result yet
	Healthy         State = "healthy"         // last result a fast success
	Degraded        State = "degraded"        // slow success, or first success after failures
	Unhealthy       State = "unhealthy"       // UnhealthyThreshold consecutive failures
	Unauthenticated State = "unauthenticated" // 401/403 on a probe
)

// States lists every state, for gauges that report one series per state.
var States = []State{Unknown, Healthy, Degraded, Unhealthy, Unauthenticated}

// Thresholds decide the state from results.
type Thresholds struct {
	// UnhealthyThreshold is how many consecutive failures make a backend
	// unhealthy (≥ 1; default 3).
	UnhealthyThreshold int
	// DegradedThreshold is the latency above which a success is degraded
	// (0: never).
	DegradedThreshold time.Duration
}

// Result is one probe's or one real request's outcome.
type Result struct {
	Latency time.Duration
	// Err is nil on success.
	Err error
	// Unauthenticated marks a failure that was a 401 or 403.
	Unauthenticated bool
	// Probe reports an active probe (only probes can make a backend
	// unauthenticated; real traffic counts as plain failures).
	Probe bool
}

// Status is one backend's tracked health.
type Status struct {
	State               State     `json:"status"`
	ConsecutiveFailures int       `json:"consecutiveFailures"`
	LastCheckTime       time.Time `json:"lastCheckTime"`
	LastError           string    `json:"lastError,omitempty"`
}

// Tracker holds one backend's health. It is safe for concurrent use.
type Tracker struct {
	th           Thresholds
	onTransition func(from, to State)

	mu sync.Mutex
	st Status
}

// NewTracker returns a tracker in state unknown. onTransition, if set, is
// called after each state change, outside the tracker's lock.
func NewTracker(th Thresholds, onTransition func(from, to State)) *Tracker {
	if th.UnhealthyThreshold < 1 {
		th.UnhealthyThreshold = 3
	}
	return &Tracker{th: th, onTransition: onTransition, st: Status{State: Unknown}}
}

// Record folds one result into the state.
func (t *Tracker) Record(r Result) {
	now := time.Now()
	t.mu.Lock()
	from := t.st.State
	t.st.LastCheckTime = now
	to := from
	if r.Err == nil {
		hadFailures := t.st.ConsecutiveFailures > 0 || from == Unhealthy || from == Unauthenticated
		t.st.ConsecutiveFailures = 0
		t.st.LastError = ""
		to = Healthy
		if hadFailures || (t.th.DegradedThreshold > 0 && r.Latency > t.th.DegradedThreshold) {
			to = Degraded
		}
	} else {
		t.st.ConsecutiveFailures++
		t.st.LastError = r.Err.Error()
		switch {
		case r.Unauthenticated && r.Probe:
			to = Unauthenticated
		case t.st.ConsecutiveFailures >= t.th.UnhealthyThreshold:
			to = Unhealthy
		}
	}
	t.st.State = to
	t.mu.Unlock()
	if to != from && t.onTransition != nil {
		t.onTransition(from, to)
	}
}

// Status returns a copy of the tracked health.
func (t *Tracker) Status() Status {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.st
}

// Usable reports whether new sessions should include the backend: not
// unhealthy and not unauthenticated (unknown counts as usable).
func (s State) Usable() bool { return s != Unhealthy && s != Unauthenticated }

// ProbeFunc probes one backend once; ctx carries the probe timeout.
type ProbeFunc func(ctx context.Context) Result

// Loop runs probe every interval until Stop; the first probe runs at once.
// Each probe gets timeout. Results go to the tracker and to onResult.
type Loop struct {
	cancel context.CancelFunc
	done   chan struct{}
}

// StartLoop starts probing. Stop it with Stop.
func StartLoop(parent context.Context, interval, timeout time.Duration, probe ProbeFunc, onResult func(Result)) *Loop {
	ctx, cancel := context.WithCancel(parent)
	l := &Loop{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(l.done)
		t := time.NewTimer(0)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			pctx, pcancel := context.WithTimeout(ctx, timeout)
			start := time.Now()
			r := probe(pctx)
			pcancel()
			if ctx.Err() != nil {
				return // stopping: a probe cut short is not a result
			}
			r.Latency = cmp.Or(r.Latency, time.Since(start))
			r.Probe = true
			onResult(r)
			t.Reset(interval)
		}
	}()
	return l
}

// Stop ends the loop and waits for a probe in progress to return (probes
// are bounded by their timeout and by the loop's ctx).
func (l *Loop) Stop() {
	l.cancel()
	<-l.done
}
