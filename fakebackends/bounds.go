package fakebackends

import (
	"fmt"
	"time"

	"github.com/vmcp-chaos/vmcp-chaos/faults"
	"github.com/vmcp-chaos/vmcp-chaos/faults/control"
)

// Bounds of a script and of a control API body: what a fake backend needs
// is small, and values past these are typos or attacks (20,000 faults in
// one body, a 2 MB tool name).
const (
	// MaxFaults bounds the faults of one script or control API body.
	MaxFaults = 1000
	// MaxNameBytes bounds a script's, tool's, prompt's or argument's name.
	MaxNameBytes = 256
	// MaxTotalLatency bounds the latency faults' delays and jitters added
	// up: no lease outlasts it, so a longer total can never be served.
	MaxTotalLatency = control.DefaultMaxLeaseTTL
)

// checkFaultBounds refuses more than MaxFaults faults, and latencies that
// add up to more than MaxTotalLatency (naming the fault that crosses it).
func checkFaultBounds(list []Fault, errf func(field, format string, args ...any) error) error {
	if len(list) > MaxFaults {
		return errf("faults", "%d faults: at most %d per script or request", len(list), MaxFaults)
	}
	var total time.Duration
	for i, f := range list {
		if l, ok := f.Params.(*faults.Latency); ok {
			total += l.Delay.D() + l.Jitter.D()
			if total > MaxTotalLatency {
				return errf(fmt.Sprintf("faults[%d]", i), "the latencies add up to %s (delay plus jitter): at most %s, the longest lease", total, MaxTotalLatency)
			}
		}
	}
	return nil
}

// checkName refuses a name longer than MaxNameBytes.
func checkName(v *validator, field, name string) error {
	if len(name) > MaxNameBytes {
		return v.errf(field, "%d bytes: a name is at most %d bytes", len(name), MaxNameBytes)
	}
	return nil
}
