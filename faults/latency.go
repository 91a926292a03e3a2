package faults

import (
	"math/rand"
	"time"
)

// KindLatency delays the request by delay plus up to jitter; latencies add
// up and the request is then served (or faulted) as usual.
const KindLatency Kind = "latency"

func init() {
	Register(Spec{
		Kind:   KindLatency,
		Order:  40,
		Params: []string{"delay", "jitter"},
		Validate: func(f *Fault, c *Check) error {
			if f.Delay <= 0 {
				return c.Errf("delay", "required: a positive duration such as \"200ms\"")
			}
			if f.Jitter < 0 {
				return c.Errf("jitter", "must not be negative")
			}
			return nil
		},
		Delay: func(f *Fault, rng *rand.Rand) time.Duration {
			d := f.Delay.D()
			if f.Jitter > 0 {
				d += time.Duration(rng.Int63n(int64(f.Jitter.D()) + 1))
			}
			return d
		},
		Stdio: func(x *StdioExchange, f *Fault) { x.Forward() },
	})
}
