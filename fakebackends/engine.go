package fakebackends

import (
	"fmt"
	"math/rand"
	"path"
	"sync"
	"time"
)

// engine holds the active faults and decides, request by request, which
// apply. It is safe for concurrent use.
type engine struct {
	mu     sync.Mutex
	faults []*faultState
	seed   int64
	now    func() time.Time
}

// faultState is one fault with its counters and schedule.
type faultState struct {
	Fault
	index   int
	setAt   time.Time
	seen    int // matching requests seen (for After)
	applied int
	rng     *rand.Rand
	fired   bool // one-shot session_expire already done
	// released is closed when this fault is removed (the faults are
	// replaced or cleared): the stalls it holds end then.
	released chan struct{}
}

// decision is what the engine chose for one request: a total added latency
// and at most one terminal fault.
type decision struct {
	delay time.Duration
	fault *Fault // nil: pass the request through
	label string // e.g. "http_status#0", for the request log
	// released is closed when the fault that decided is removed (replaced
	// or cleared): a stall it holds ends then. Nil without a fault.
	released <-chan struct{}
}

func newEngine(seed int64) *engine {
	return &engine{seed: seed, now: time.Now}
}

// set replaces the faults; their schedules start now. Every stall held by a
// replaced fault ends.
func (e *engine) set(faults []Fault) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, f := range e.faults {
		close(f.released)
	}
	e.faults = nil
	e.appendLocked(faults)
}

// add appends faults; their schedules start now. Stalls in progress go on:
// only removing the fault that holds a stall ends it.
func (e *engine) add(faults []Fault) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.appendLocked(faults)
}

func (e *engine) appendLocked(faults []Fault) {
	now := e.now()
	for _, f := range faults {
		seed := f.Seed
		if seed == 0 {
			seed = e.seed + int64(len(e.faults))
		}
		e.faults = append(e.faults, &faultState{Fault: f, index: len(e.faults), setAt: now,
			rng: rand.New(rand.NewSource(seed)), released: make(chan struct{})})
	}
}

// list returns a copy of the faults.
func (e *engine) list() []Fault {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make([]Fault, len(e.faults))
	for i, f := range e.faults {
		out[i] = f.Fault
	}
	return out
}

// active reports whether a fault's at/for window covers now, and for a flap
// whether it is in its "on" phase.
func (f *faultState) active(now time.Time) bool {
	start := f.setAt.Add(f.At.D())
	if now.Before(start) {
		return false
	}
	if f.For > 0 && !now.Before(start.Add(f.For.D())) {
		return false
	}
	if f.Kind == KindFlap {
		period := f.On.D() + f.Off.D()
		if period <= 0 {
			return false
		}
		return now.Sub(start)%period < f.On.D()
	}
	return true
}

// effective returns the fault that acts: the nested fault of a flap, or the
// fault itself.
func (f *faultState) effective() *Fault {
	if f.Kind == KindFlap && f.Fault.Fault != nil {
		return f.Fault.Fault
	}
	return &f.Fault
}

// matches reports whether a request (method, and the tool, prompt or
// resource name it addresses) is selected by m.
func (m Match) matches(method, name string) bool {
	if m.Method != "" && m.Method != method {
		return false
	}
	if m.Tool != "" {
		if name == "" {
			return false
		}
		ok, err := path.Match(m.Tool, name)
		if err != nil || !ok {
			return false
		}
	}
	return true
}

// scheduleOnly reports whether a fault acts by time alone, not per request:
// crash down, and session_expire without a match.
func scheduleOnly(f *Fault) bool {
	switch f.Kind {
	case KindCrash:
		return f.Mode == CrashDown
	case KindSessionExpire:
		return f.Match == (Match{})
	}
	return false
}

// decide chooses the faults for one request. Latency faults add up; the
// first other matching fault ends the search.
func (e *engine) decide(method, name string) decision {
	e.mu.Lock()
	defer e.mu.Unlock()
	var d decision
	now := e.now()
	for _, f := range e.faults {
		if !f.active(now) {
			continue
		}
		eff := f.effective()
		if scheduleOnly(eff) {
			continue
		}
		if !f.Match.matches(method, name) || (eff != &f.Fault && !eff.Match.matches(method, name)) {
			continue
		}
		if eff.Kind == KindToolError && method != "tools/call" {
			continue
		}
		f.seen++
		if f.seen <= f.After {
			continue
		}
		if f.Count > 0 && f.applied >= f.Count {
			continue
		}
		if f.Probability != nil && f.rng.Float64() >= *f.Probability {
			continue
		}
		f.applied++
		label := fmt.Sprintf("%s#%d", f.Kind, f.index)
		if eff.Kind == KindLatency {
			d.delay += eff.Delay.D()
			if eff.Jitter > 0 {
				d.delay += time.Duration(f.rng.Int63n(int64(eff.Jitter.D()) + 1))
			}
			d.label = joinLabel(d.label, label)
			continue
		}
		d.fault = eff
		d.released = f.released
		d.label = joinLabel(d.label, label)
		return d
	}
	return d
}

func joinLabel(a, b string) string {
	if a == "" {
		return b
	}
	return a + "," + b
}

// downNow reports whether a `down` crash is active now (without consuming
// one-shot expiries, unlike scheduled).
func (e *engine) downNow() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	now := e.now()
	for _, f := range e.faults {
		if eff := f.effective(); f.active(now) && eff.Kind == KindCrash && eff.Mode == CrashDown {
			return true
		}
	}
	return false
}

// scheduled reports the time-driven state: whether a `down` crash is active
// now, and which one-shot session expiries are due (each reported once).
func (e *engine) scheduled() (down bool, expire bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	now := e.now()
	for _, f := range e.faults {
		if !f.active(now) {
			continue
		}
		eff := f.effective()
		switch {
		case eff.Kind == KindCrash && eff.Mode == CrashDown:
			down = true
		case eff.Kind == KindSessionExpire && scheduleOnly(eff) && !f.fired:
			f.fired = true
			expire = true
		}
	}
	return down, expire
}
