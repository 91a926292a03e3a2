package targets

import "time"

// DefaultRecovery is how long a gateway may take to return to steady
// state after a backend fault unless its target says otherwise.
const DefaultRecovery = 5 * time.Second

// MaxRecovery bounds a profile's recovery: a gateway slower than that is
// judged by the scenarios' own bounds, not waited for.
const MaxRecovery = 5 * time.Minute

// RecoveryDeclarer is a Target that says how long its gateway may take to
// return to steady state after a backend fault (a profile's recovery).
type RecoveryDeclarer interface {
	RecoveryWindow() time.Duration
}

// RecoveryOf returns how long t's gateway may take to return to steady
// state after a backend fault: its declared window, or DefaultRecovery
// when it declares none.
func RecoveryOf(t Target) time.Duration {
	if r, ok := t.(RecoveryDeclarer); ok && r.RecoveryWindow() > 0 {
		return r.RecoveryWindow()
	}
	return DefaultRecovery
}

// RecoveryWindow implements RecoveryDeclarer (Exec.Recovery).
func (e Exec) RecoveryWindow() time.Duration { return e.Recovery }
