package proxy

import (
	"cmp"
	"fmt"
	"sync"
	"time"
)

// Lease defaults.
const (
	// DefaultLeaseTTL is the lease of faults set without a ttl.
	DefaultLeaseTTL = 30 * time.Second
	// DefaultMaxLeaseTTL bounds any lease.
	DefaultMaxLeaseTTL = 10 * time.Minute
)

// lease is the dead-man switch of a proxy's faults: setting faults takes
// (or extends) it for a TTL, the controller renews it, and when it runs out
// the faults are cleared. Clearing the faults ends it.
type lease struct {
	mu       sync.Mutex
	expire   func(gen uint64)
	gen      uint64
	timer    *time.Timer
	ttl      time.Duration
	expires  time.Time
	expiredN int // leases that ran out, for /lease and tests
}

// newLease returns a lease that calls expire when it runs out; expire
// must call expired(gen) under the same lock as the control API's
// changes, and clear the faults only if it returns true.
func newLease(expire func(gen uint64)) *lease { return &lease{expire: expire} }

// LeaseStatus is the control API's view of the lease.
type LeaseStatus struct {
	// Active is true while faults are held by the lease.
	Active bool `json:"active"`
	// TTL is the lease's length; Expires is when it runs out unless
	// renewed; RemainingMS is the time left.
	TTL         string    `json:"ttl,omitempty"`
	Expires     time.Time `json:"expires,omitzero"`
	RemainingMS int64     `json:"remainingMs,omitempty"`
	// Expired counts leases that ran out since the proxy started.
	Expired int `json:"expired"`
}

// hold starts or renews the lease for ttl.
func (l *lease) hold(ttl time.Duration) LeaseStatus {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.timer != nil {
		l.timer.Stop()
	}
	l.gen++
	gen := l.gen
	l.ttl, l.expires = ttl, time.Now().Add(ttl)
	l.timer = time.AfterFunc(ttl, func() { l.expire(gen) })
	return l.statusLocked()
}

// expired reports whether the lease of generation gen is still the
// current one (not renewed, not ended), and if so ends it as expired.
func (l *lease) expired(gen uint64) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.timer == nil || l.gen != gen {
		return false
	}
	l.timer = nil
	l.expiredN++
	return true
}

// renew extends an active lease by ttl (its own TTL when ttl is 0). It
// fails when no lease is active: there are no faults to hold.
func (l *lease) renew(ttl time.Duration) (LeaseStatus, error) {
	l.mu.Lock()
	active := l.timer != nil
	ttl = cmp.Or(ttl, l.ttl)
	l.mu.Unlock()
	if !active {
		return l.status(), fmt.Errorf("no active lease: no faults are set (or the lease expired)")
	}
	return l.hold(ttl), nil
}

// stop ends the lease without expiring it (the faults were cleared).
func (l *lease) stop() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.timer != nil {
		l.timer.Stop()
		l.timer = nil
	}
}

func (l *lease) status() LeaseStatus {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.statusLocked()
}

func (l *lease) statusLocked() LeaseStatus {
	s := LeaseStatus{Active: l.timer != nil, Expired: l.expiredN}
	if s.Active {
		s.TTL, s.Expires = l.ttl.String(), l.expires.UTC()
		s.RemainingMS = max(time.Until(l.expires).Milliseconds(), 0)
	}
	return s
}
