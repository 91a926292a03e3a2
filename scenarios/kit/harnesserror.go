package kit

import "fmt"

// HarnessError ends a scenario body when the harness could not do its own
// part (set or clear a fault on its fake backend, signal or restart a
// backend process or container, read a backend's request log). It is no
// verdict on the gateway: the runner files the scenario inconclusive
// (checks judged before it keep their verdicts), never failed.
type HarnessError struct {
	// Action is what the harness could not do, in words.
	Action string
	// Where is the scenario's file:line that asked for it.
	Where string
	// Err is the harness's error.
	Err error
}

// Error says what the harness could not do, where, and why.
func (e *HarnessError) Error() string {
	return fmt.Sprintf("%sthe harness could not %s: %v (no verdict on the gateway from here on)", e.Where, e.Action, e.Err)
}

// Unwrap returns the harness's error.
func (e *HarnessError) Unwrap() error { return e.Err }

// HarnessMust ends the scenario inconclusive (a *HarnessError, recovered
// by the runner) when err, the harness's own action's, is not nil. Use it
// for what the harness does, never for what the gateway does: a gateway
// that does not answer fails its check.
// Its Where is the scenario's line that called into the kit (where).
func (k *Kit) HarnessMust(err error, what string, args ...any) {
	if err != nil {
		panic(&HarnessError{Action: fmt.Sprintf(what, args...), Where: where(), Err: err})
	}
}
