package fakebackends

import (
	"net/http"
	"sync"
	"time"

	"github.com/vmcp-chaos/vmcp-chaos/faults/control"
)

// WithLease sets the lease of faults set through the control API without
// ?ttl= (default control.DefaultLeaseTTL) and the longest lease a
// controller may ask for (default control.DefaultMaxLeaseTTL); 0 keeps a
// default.
func WithLease(ttl, max time.Duration) Option {
	return func(o *options) { o.leaseTTL, o.maxLeaseTTL = ttl, max }
}

// leased holds the faults set through the control API under a lease, as
// the chaos proxy does: a controller that dies mid-fault leaves no fault
// behind once the lease runs out. Faults from the script or the Go API
// are not leased.
type leased struct {
	mu       sync.Mutex // serializes control API changes and lease expiry
	lease    *control.Lease
	ttl, max time.Duration
}

// startLease makes c's control API changes hold a lease that clears every
// fault when it runs out.
func (c *core) startLease() {
	c.leased.ttl = c.opts.leaseTTL
	c.leased.max = c.opts.maxLeaseTTL
	if c.leased.ttl <= 0 {
		c.leased.ttl = control.DefaultLeaseTTL
	}
	if c.leased.max <= 0 {
		c.leased.max = max(control.DefaultMaxLeaseTTL, c.leased.ttl)
	}
	c.leased.lease = control.NewLease(func(gen uint64) {
		c.leased.mu.Lock()
		defer c.leased.mu.Unlock()
		if !c.leased.lease.Expired(gen) {
			return
		}
		n := len(c.engine.List())
		_ = c.changeFaults(false)
		c.opts.logger.Warn("lease expired without renewal: faults cleared", "backend", c.script.Name, "faults", n)
	})
}

// leasedChange applies a PUT or POST /faults body under the lease of the
// request's ?ttl= (400 for a bad one): faults in force hold the lease,
// none ends it.
func (c *core) leasedChange(r *http.Request, body []byte, add bool) (map[string]any, error) {
	ttl, err := control.ParseTTL(r, c.leased.ttl, c.leased.max)
	if err != nil {
		return nil, err
	}
	c.leased.mu.Lock()
	defer c.leased.mu.Unlock()
	faults, err := ParseFaults(body, r.Method+" /faults")
	if err == nil {
		err = c.changeFaults(add, faults...)
	}
	if err != nil {
		return map[string]any{"faults": c.engine.List(), "lease": c.leased.lease.Status()}, err
	}
	if len(c.engine.List()) == 0 {
		c.leased.lease.Stop()
	} else {
		c.leased.lease.Hold(ttl)
	}
	return map[string]any{"faults": c.engine.List(), "lease": c.leased.lease.Status()}, nil
}

// leasedClear clears every fault and ends the lease.
func (c *core) leasedClear() map[string]any {
	c.leased.mu.Lock()
	defer c.leased.mu.Unlock()
	_ = c.changeFaults(false)
	c.leased.lease.Stop()
	return map[string]any{"faults": []Fault{}, "lease": c.leased.lease.Status()}
}
