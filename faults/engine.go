package faults

import (
	"cmp"
	"fmt"
	"math/rand"
	"slices"
	"sync"
	"time"
)

// Engine holds the active faults and decides, request by request, which
// apply. It is safe for concurrent use.
type Engine struct {
	mu     sync.Mutex
	faults []*state
	seed   int64
	// Now is the engine's clock (time.Now by default; tests set it before use).
	Now func() time.Time
}

// state is one fault with its counters and schedule.
type state struct {
	Fault
	methods  []string // the only methods the acting kind applies to (Spec.Methods)
	index    int
	setAt    time.Time
	seen     int // matching requests seen (for After)
	applied  int
	rng      *rand.Rand
	fired    bool          // one-shot schedule-only fault already reported
	released chan struct{} // closed when the fault is removed
}

// Decision is what the engine chose for one request: a total added
// latency and at most one terminal fault.
type Decision struct {
	Delay time.Duration
	Fault *Fault // nil: pass the request through
	Label string // e.g. "http_status#0", for request logs
	// Released is closed when the fault that decided is removed (replaced
	// or cleared): a stall it holds ends then. Nil without a fault.
	Released <-chan struct{}
}

// NewEngine returns an engine whose faults without a seed of their own
// draw probabilities and jitter from seed (plus their index).
func NewEngine(seed int64, faults ...Fault) *Engine {
	e := &Engine{seed: seed, Now: time.Now}
	e.Add(faults...)
	return e
}

// Set replaces the faults; their schedules start now. Every stall held by
// a replaced fault ends.
func (e *Engine) Set(faults ...Fault) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, f := range e.faults {
		close(f.released)
	}
	e.faults = nil
	e.appendLocked(faults)
}

// Add appends faults; their schedules start now.
func (e *Engine) Add(faults ...Fault) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.appendLocked(faults)
}

func (e *Engine) appendLocked(faults []Fault) {
	now := e.Now()
	for _, f := range faults {
		seed := cmp.Or(f.Seed, e.seed+int64(len(e.faults)))
		f = f.Clone() // defaults go to the engine's own copy
		f.ApplyDefaults()
		var methods []string
		if spec, ok := Lookup(f.Effective().Kind); ok {
			methods = spec.Methods
		}
		e.faults = append(e.faults, &state{Fault: f, methods: methods, index: len(e.faults), setAt: now,
			rng: rand.New(rand.NewSource(seed)), released: make(chan struct{})})
	}
}

// List returns a copy of the faults.
func (e *Engine) List() []Fault {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make([]Fault, len(e.faults))
	for i, f := range e.faults {
		out[i] = f.Fault.Clone()
	}
	return out
}

// active reports whether a fault's at/for window (and phase) covers now.
func (f *state) active(now time.Time) bool {
	start := f.setAt.Add(f.At.D())
	if now.Before(start) {
		return false
	}
	if f.For > 0 && !now.Before(start.Add(f.For.D())) {
		return false
	}
	if p, ok := f.Params.(phased); ok {
		return p.Phase(now.Sub(start))
	}
	return true
}

// ScheduleOnly reports whether a fault acts by time alone, not per request.
func ScheduleOnly(f *Fault) bool {
	s, ok := f.Params.(scheduleOnly)
	return ok && s.ScheduleOnly(f)
}

// Decide chooses the faults for one request. Additive faults (latency) add
// up; the first other matching fault ends the search.
func (e *Engine) Decide(method, name string) Decision {
	e.mu.Lock()
	defer e.mu.Unlock()
	var d Decision
	now := e.Now()
	for _, f := range e.faults {
		if !f.active(now) {
			continue
		}
		eff := f.Fault.Effective()
		if ScheduleOnly(eff) {
			continue
		}
		if !f.Match.Matches(method, name) || (eff != &f.Fault && !eff.Match.Matches(method, name)) {
			continue
		}
		if len(f.methods) > 0 && !slices.Contains(f.methods, method) {
			continue
		}
		f.seen++
		if f.seen <= f.After || (f.Count > 0 && f.applied >= f.Count) {
			continue
		}
		if f.Probability != nil && f.rng.Float64() >= *f.Probability {
			continue
		}
		f.applied++
		label := fmt.Sprintf("%s#%d", f.Kind, f.index)
		if d.Label != "" {
			label = d.Label + "," + label
		}
		d.Label = label
		if dl, ok := eff.Params.(delayer); ok {
			d.Delay += dl.AddedDelay(f.rng)
			continue
		}
		d.Fault, d.Released = eff, f.released
		return d
	}
	return d
}

// Due reports the schedule-only faults active now: whether a crash of mode
// down is on and, when consume is set, whether a one-shot session expiry is
// due (each expiry is reported once).
func (e *Engine) Due(consume bool) (down, expire bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	now := e.Now()
	for _, f := range e.faults {
		if !f.active(now) {
			continue
		}
		switch eff := f.Fault.Effective(); {
		case !ScheduleOnly(eff):
		case eff.Kind == KindCrash:
			down = true
		case eff.Kind == KindSessionExpire && !f.fired && consume:
			f.fired, expire = true, true
		}
	}
	return down, expire
}
