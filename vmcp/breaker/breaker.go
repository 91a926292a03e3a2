// Package breaker is a per-backend circuit breaker: closed → open after N
// consecutive failures, open → half-open after a timeout, where exactly one
// trial goes through; its success closes the circuit, its failure opens it
// again with a fresh timeout.
package breaker

import (
	"errors"
	"sync"
	"time"
)

// State is a circuit state.
type State string

// Circuit states.
const (
	Closed   State = "closed"
	Open     State = "open"
	HalfOpen State = "half-open"
)

// ErrOpen is returned by Allow while the circuit refuses requests.
var ErrOpen = errors.New("circuit open")

// Config configures a Breaker.
type Config struct {
	// FailureThreshold is how many consecutive failures open the circuit (≥ 1).
	FailureThreshold int
	// OpenTimeout is how long the circuit stays open before one trial.
	OpenTimeout time.Duration
	// Now is the clock (default time.Now).
	Now func() time.Time
	// OnTransition, if set, is called after every state change, outside the
	// breaker's lock.
	OnTransition func(from, to State)
}

// Breaker is one backend's circuit. It is safe for concurrent use.
type Breaker struct {
	cfg Config

	mu          sync.Mutex
	state       State
	failures    int
	lastChanged time.Time // when the circuit opened, while it is open
	trial       bool      // a half-open trial is in flight
	gen         uint64    // bumps on every transition, so stale tickets are ignored
}

// New returns a closed breaker.
func New(cfg Config) *Breaker {
	if cfg.FailureThreshold < 1 {
		cfg.FailureThreshold = 1
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Breaker{cfg: cfg, state: Closed, lastChanged: cfg.Now()}
}

// Ticket is an admitted request. Call Done exactly once with its outcome.
type Ticket struct {
	b     *Breaker
	gen   uint64
	trial bool
	once  sync.Once
}

// Allow admits a request or refuses it with ErrOpen. While open (and
// before the timeout) and while a half-open trial is in flight, it refuses
// without side effects.
func (b *Breaker) Allow() (*Ticket, error) {
	var tr *transition
	b.mu.Lock()
	now := b.cfg.Now()
	if b.state == Open && !now.Before(b.lastChanged.Add(b.cfg.OpenTimeout)) {
		tr = b.setLocked(HalfOpen, now)
	}
	var t *Ticket
	if b.state == Closed || (b.state == HalfOpen && !b.trial) {
		t = &Ticket{b: b, gen: b.gen, trial: b.state == HalfOpen}
		b.trial = b.trial || t.trial
	}
	b.mu.Unlock()
	b.notify(tr)
	if t == nil {
		return nil, ErrOpen
	}
	return t, nil
}

// Done records the outcome of an admitted request.
func (t *Ticket) Done(success bool) {
	if t == nil {
		return
	}
	t.once.Do(func() { t.b.record(t, success) })
}

// Cancel gives an admitted request back without an outcome (the client
// gave up, the session closed): a half-open trial slot is freed for the
// next request; nothing is counted. Done or Cancel, whichever comes first,
// takes effect.
func (t *Ticket) Cancel() {
	if t == nil {
		return
	}
	t.once.Do(func() {
		if !t.trial {
			return
		}
		t.b.mu.Lock()
		if t.gen == t.b.gen {
			t.b.trial = false
		}
		t.b.mu.Unlock()
	})
}

func (b *Breaker) record(t *Ticket, success bool) {
	var tr *transition
	b.mu.Lock()
	now := b.cfg.Now()
	if t.trial && t.gen == b.gen {
		b.trial = false
		if success {
			tr = b.setLocked(Closed, now) // which clears the failures
		} else {
			tr = b.setLocked(Open, now)
		}
	} else if b.state == Closed && t.gen == b.gen {
		if success {
			b.failures = 0
		} else {
			b.failures++
			if b.failures >= b.cfg.FailureThreshold {
				tr = b.setLocked(Open, now)
			}
		}
	}
	b.mu.Unlock()
	b.notify(tr)
}

type transition struct{ from, to State }

func (b *Breaker) setLocked(to State, now time.Time) *transition {
	from := b.state
	if from == to {
		return nil
	}
	b.state = to
	b.gen++
	b.lastChanged = now
	if to == Closed {
		b.failures = 0
	}
	return &transition{from, to}
}

func (b *Breaker) notify(tr *transition) {
	if tr != nil && b.cfg.OnTransition != nil {
		b.cfg.OnTransition(tr.from, tr.to)
	}
}

// Snapshot is a breaker's state for status APIs.
type Snapshot struct {
	State       State     `json:"state"`
	LastChanged time.Time `json:"lastChanged"`
}

// Snapshot returns the current state. An open circuit whose timeout has
// passed reports half-open (the next Allow moves it there).
func (b *Breaker) Snapshot() Snapshot {
	b.mu.Lock()
	defer b.mu.Unlock()
	st := b.state
	if st == Open && !b.cfg.Now().Before(b.lastChanged.Add(b.cfg.OpenTimeout)) {
		st = HalfOpen
	}
	return Snapshot{State: st, LastChanged: b.lastChanged}
}

// State returns the current state (see Snapshot).
func (b *Breaker) State() State { return b.Snapshot().State }
