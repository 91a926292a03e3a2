package harness

import (
	"github.com/vmcp-chaos/vmcp-chaos/fakebackends"
	"github.com/vmcp-chaos/vmcp-chaos/vmcp"
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

// ExecGateway is what an Exec target's gateways offer beyond Gateway.
type ExecGateway interface {
	Gateway
	// PID is the gateway process id.
	PID() int
	// Output is the tail of the gateway's stdout and stderr.
	Output() string
	// ConfigPath is the rendered configuration file.
	ConfigPath() string
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

// VMCP returns the *vmcp.Gateway behind a Reference target's gateway.
func VMCP(g Gateway) (*vmcp.Gateway, bool) {
	rg, ok := g.(*referenceGateway)
	if !ok {
		return nil, false
	}
	return rg.g, true
}

var (
	_ ProcessBackend = (*processBackend)(nil)
	_ ExecGateway    = (*execGateway)(nil)
	_ RunningBackend = (*stdioBackend)(nil)
	_ RunningBackend = (*inProcessBackend)(nil)
)
