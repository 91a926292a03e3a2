package runtimes

import (
	"github.com/vmcp-chaos/vmcp-chaos/fakebackends"
)

// ProcessBackend is what a Process runtime's backends offer beyond
// RunningBackend: the process itself.
type ProcessBackend interface {
	RunningBackend
	Respawner
	// PID is the current process id (0 when none runs).
	PID() int
	// Stderr is the tail of the current process's stderr.
	Stderr() string
	// Exited reports whether the current process has exited, with its
	// Wait error.
	Exited() (bool, error)
}

// FakeBackend returns the *fakebackends.Backend behind an in-process
// backend (for InFlight, SessionCount, ...).
func FakeBackend(b RunningBackend) (*fakebackends.Backend, bool) {
	ib, ok := b.(*inProcessBackend)
	if !ok {
		return nil, false
	}
	return ib.b, true
}

var (
	_ ProcessBackend = (*processBackend)(nil)
	_ RunningBackend = (*stdioBackend)(nil)
	_ RunningBackend = (*inProcessBackend)(nil)
)
