package control

import (
	"cmp"
	"fmt"
	"net/http"
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

// Lease is the dead-man switch of a control API's faults (the proxy's and
// the fake backends'): setting faults takes (or extends) it for a TTL, the
// controller renews it, and when it runs out the faults are cleared.
// Clearing the faults ends it.
type Lease struct {
	mu       sync.Mutex
	expire   func(gen uint64)
	gen      uint64
	timer    *time.Timer
	ttl      time.Duration
	expires  time.Time
	expiredN int // leases that ran out, for /lease and tests
}

// NewLease returns a lease that calls expire when it runs out; expire
// must call Expired(gen) under the same lock as the control API's
// changes, and clear the faults only if it returns true.
func NewLease(expire func(gen uint64)) *Lease { return &Lease{expire: expire} }

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

// Hold starts or renews the lease for ttl.
func (l *Lease) Hold(ttl time.Duration) LeaseStatus {
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

// Expired reports whether the lease of generation gen is still the
// current one (not renewed, not ended), and if so ends it as expired.
func (l *Lease) Expired(gen uint64) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.timer == nil || l.gen != gen {
		return false
	}
	l.timer = nil
	l.expiredN++
	return true
}

// Renew extends an active lease by ttl (its own TTL when ttl is 0). It
// fails when no lease is active: there are no faults to hold.
func (l *Lease) Renew(ttl time.Duration) (LeaseStatus, error) {
	l.mu.Lock()
	active := l.timer != nil
	ttl = cmp.Or(ttl, l.ttl)
	l.mu.Unlock()
	if !active {
		return l.Status(), fmt.Errorf("no active lease: no faults are set (or the lease expired)")
	}
	return l.Hold(ttl), nil
}

// Stop ends the lease without expiring it (the faults were cleared).
func (l *Lease) Stop() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.timer != nil {
		l.timer.Stop()
		l.timer = nil
	}
}

// Status is the lease as GET /lease shows it.
func (l *Lease) Status() LeaseStatus {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.statusLocked()
}

func (l *Lease) statusLocked() LeaseStatus {
	s := LeaseStatus{Active: l.timer != nil, Expired: l.expiredN}
	if s.Active {
		s.TTL, s.Expires = l.ttl.String(), l.expires.UTC()
		s.RemainingMS = max(time.Until(l.expires).Milliseconds(), 0)
	}
	return s
}

// ParseTTL reads a request's ttl query parameter: def when absent, else a
// duration > 0 and <= max (an error otherwise, for a 400).
func ParseTTL(r *http.Request, def, max time.Duration) (time.Duration, error) {
	v := r.URL.Query().Get("ttl")
	if !r.URL.Query().Has("ttl") {
		return def, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 || d > max {
		return 0, fmt.Errorf("ttl %q: want a duration > 0 and <= %s, such as \"30s\"", v, max)
	}
	return d, nil
}

// HandleLease registers GET /lease (the lease) and POST /lease?ttl=D (renew
// it for D, default its own TTL; 409 when no faults are held) on mux.
func HandleLease(mux *http.ServeMux, l *Lease, max time.Duration) {
	mux.HandleFunc("GET /lease", func(w http.ResponseWriter, r *http.Request) {
		WriteJSON(w, http.StatusOK, l.Status())
	})
	mux.HandleFunc("POST /lease", func(w http.ResponseWriter, r *http.Request) {
		ttl, err := ParseTTL(r, 0, max) // 0: renew for the lease's own TTL
		if err != nil {
			WriteError(w, http.StatusBadRequest, err)
			return
		}
		st, err := l.Renew(ttl)
		if err != nil {
			WriteJSON(w, http.StatusConflict, map[string]any{"error": err.Error(), "lease": st})
			return
		}
		WriteJSON(w, http.StatusOK, st)
	})
}
