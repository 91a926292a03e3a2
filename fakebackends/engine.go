package fakebackends

import (
	"time"

	"github.com/vmcp-chaos/vmcp-chaos/faults"
)

// engine is the fake backend's view of a faults.Engine: its clock can be
// set (tests) and it knows the backend-only schedules (down, expiry).
type engine struct {
	e   *faults.Engine
	now func() time.Time
}

// decision is what the engine chose for one request (see faults.Decision).
type decision struct {
	delay    time.Duration
	fault    *Fault
	label    string
	released <-chan struct{}
}

func newEngine(seed int64) *engine {
	x := &engine{now: time.Now}
	x.e = faults.NewEngine(seed)
	x.e.Now = func() time.Time { return x.now() }
	return x
}

func (e *engine) set(f []Fault)                  { e.e.Set(f...) }
func (e *engine) add(f []Fault)                  { e.e.Add(f...) }
func (e *engine) list() []Fault                  { return e.e.List() }
func isDown(f *Fault) bool                       { return f.Kind == KindCrash && f.Mode == CrashDown }
func (e *engine) downNow() bool                  { d, _ := e.state(false); return d }
func (e *engine) scheduled() (down, expire bool) { return e.state(true) }

func (e *engine) decide(method, name string) decision {
	d := e.e.Decide(method, name)
	return decision{delay: d.Delay, fault: d.Fault, label: d.Label, released: d.Released}
}

// state reports whether a `down` crash is active now and, when consume is
// set, whether a one-shot session expiry is due (each reported once).
func (e *engine) state(consume bool) (down, expire bool) {
	e.e.Scheduled(func(f *Fault, fired bool) bool {
		switch {
		case isDown(f):
			down = true
		case f.Kind == KindSessionExpire && !fired && consume:
			expire = true
			return true
		}
		return false
	})
	return down, expire
}
