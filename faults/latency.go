package faults

import (
	"math/rand"
	"time"
)

// KindLatency delays the request by delay plus up to jitter; latencies add
// up and the request is then served (or faulted) as usual.
const KindLatency Kind = "latency"

// Latency are the parameters of latency.
type Latency struct {
	Delay  Duration `yaml:"delay,omitempty" json:"delay,omitempty"`
	Jitter Duration `yaml:"jitter,omitempty" json:"jitter,omitempty"` // up to this much more, at random
}

func init() {
	Register(Spec{Kind: KindLatency, Order: 40, New: func() Params { return &Latency{} }})
}

// Validate implements Params.
func (p *Latency) Validate(c *Check) error {
	if p.Delay <= 0 {
		return c.Errf("delay", "required: a positive duration such as \"200ms\"")
	}
	if p.Jitter < 0 {
		return c.Errf("jitter", "must not be negative")
	}
	return nil
}

// AddedDelay implements Params: latency is additive.
func (p *Latency) AddedDelay(rng *rand.Rand) time.Duration {
	d := p.Delay.D()
	if p.Jitter > 0 {
		d += time.Duration(rng.Int63n(int64(p.Jitter.D()) + 1))
	}
	return d
}

// Stdio implements Params (the delay is applied before the line is forwarded).
func (p *Latency) Stdio(x *StdioExchange) { x.Forward() }
