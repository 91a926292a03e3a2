package targets

import (
	"errors"
	"fmt"
	"sync"
)

// StartGuard stops a run from waiting for a gateway that cannot start:
// once topologies failed to start twice in a row, Tripped says so and
// why, and the remaining scenarios fail fast with that reason (one
// readiness wait, not forty). A run owns one; the zero value is ready.
type StartGuard struct {
	mu    sync.Mutex
	fails int
	last  string
}

// startGuardLimit is how many consecutive gateway start failures trip the
// guard.
const startGuardLimit = 2

// TargetStartError is Start's error when the gateway under test could not
// be started or made ready (not a backend, not a runtime).
type TargetStartError struct {
	Target string
	Err    error
}

func (e *TargetStartError) Error() string {
	return fmt.Sprintf("harness: start target %s: %v", e.Target, e.Err)
}

func (e *TargetStartError) Unwrap() error { return e.Err }

// Failed records a failed start: only the gateway's own failures
// (TargetStartError) count; nil guard: nothing.
func (g *StartGuard) Failed(err error) {
	var te *TargetStartError
	if g == nil || !errors.As(err, &te) {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.fails++
	g.last = err.Error()
}

// Started records a successful start: the count starts again.
func (g *StartGuard) Started() {
	if g == nil {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.fails, g.last = 0, ""
}

// Tripped returns why the run no longer starts topologies ("" while it
// does, and for a nil guard).
func (g *StartGuard) Tripped() string {
	if g == nil {
		return ""
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.fails < startGuardLimit {
		return ""
	}
	return fmt.Sprintf("not started: the topology failed to start %d times in a row, last: %s", g.fails, g.last)
}
