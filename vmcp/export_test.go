package vmcp

import (
	"time"

	"github.com/vmcp-chaos/vmcp-chaos/vmcp/access"
	"github.com/vmcp-chaos/vmcp-chaos/vmcp/health"
)

// Test hooks into the resilience layer (compiled into tests only).

// SetBreakerClock replaces the circuit breakers' clock.
func SetBreakerClock(g *Gateway, now func() time.Time) { g.res.clock.Store(&now) }

// RecordHealth folds one result into a backend's health tracker, as a probe
// would (err nil: a fast success).
func RecordHealth(g *Gateway, backend string, err error) {
	g.res.backends[backend].tracker.Record(health.Result{Err: err, Probe: true})
}

// ViewUpdatesIdle reports whether no list_changed view update is pending or
// running.
func ViewUpdatesIdle(g *Gateway) bool {
	g.res.mu.Lock()
	defer g.res.mu.Unlock()
	for _, u := range g.res.viewUpd {
		if u.running || u.dirty {
			return false
		}
	}
	return true
}

// ReinitWaitsForKeepalive reports whether a re-initialization of backend
// in session id has started and is waiting for a keepalive probe.
func ReinitWaitsForKeepalive(g *Gateway, id, backend string) bool {
	s, ok := g.Session(id)
	if !ok {
		return false
	}
	m := s.members[backend]
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.reinit == nil || m.reinit.after == nil {
		return false
	}
	select {
	case <-m.reinit.after:
		return false
	default:
		return true
	}
}

// CheckExposure is Start's listen-address check (it decides before
// binding), for tests that must not bind a non-loopback address.
var CheckExposure = access.CheckListen

// PassedThrough is how many requests g answered on the pass-through hop.
func PassedThrough(g *Gateway) int64 { return g.passed.Load() }
