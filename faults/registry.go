package faults

import (
	"fmt"
	"math/rand"
	"sort"
	"sync"
	"time"
)

// Spec is everything a fault kind is: what it registers by name (see
// Register). Only Kind, Params and Validate are required.
type Spec struct {
	Kind Kind
	// Order places the kind in listings and messages (documentation order).
	Order int
	// Params are the YAML names of the Fault fields the kind uses. Any
	// other parameter set on the kind is refused.
	Params []string
	// Defaults fills in empty parameters (idempotent). Optional.
	Defaults func(f *Fault)
	// Validate checks the parameters, with bounds (c names the field).
	Validate func(f *Fault, c *Check) error
	// Methods, if set, are the only methods the kind applies to.
	Methods []string
	// Delay, if set, makes the kind additive: it adds this delay to the
	// request and the search for a terminal fault goes on (latency).
	Delay func(f *Fault, rng *rand.Rand) time.Duration
	// ScheduleOnly reports faults that act by time alone, not per request.
	ScheduleOnly func(f *Fault) bool
	// Phase, if set, reports whether the fault is on after running for
	// elapsed (flap); the nested Fault is the one that acts.
	Phase func(f *Fault, elapsed time.Duration) bool
	// HTTP applies the fault to an HTTP exchange (streamable HTTP, or an
	// SSE session stream when x.Stream is set). It returns true when the
	// request should then be served normally. Nil: the kind only schedules.
	HTTP func(x *Exchange, f *Fault) bool
	// Stdio applies the fault to one stdio line. Nil: the kind is refused
	// on stdio ("does not apply to stdio").
	Stdio func(x *StdioExchange, f *Fault)
	// Describe, if set, renders the fault briefly for timelines; by default
	// the kind and its first parameter that is set.
	Describe func(f *Fault) string
	// NotOn lists transports the kind is refused on, with the reason.
	NotOn map[Transport]string
}

var (
	regMu    sync.RWMutex
	registry = map[Kind]*Spec{}
	order    []Kind
)

// Register adds a fault kind; each kind's file calls it from init. It
// panics on a duplicate or incomplete registration (a programming error).
func Register(s Spec) {
	regMu.Lock()
	defer regMu.Unlock()
	if s.Kind == "" || s.Validate == nil {
		panic("faults: Register needs Kind and Validate")
	}
	if _, dup := registry[s.Kind]; dup {
		panic(fmt.Sprintf("faults: kind %q registered twice", s.Kind))
	}
	for _, p := range s.Params {
		if fieldIndex(p) < 0 {
			panic(fmt.Sprintf("faults: kind %q: no Fault field %q", s.Kind, p))
		}
	}
	registry[s.Kind] = &s
	order = append(order, s.Kind)
	sort.SliceStable(order, func(i, j int) bool { return registry[order[i]].Order < registry[order[j]].Order })
}

// Lookup returns the Spec of a registered kind.
func Lookup(k Kind) (*Spec, bool) {
	regMu.RLock()
	defer regMu.RUnlock()
	s, ok := registry[k]
	return s, ok
}

// Kinds lists the registered kinds in documentation order (Spec.Order).
func Kinds() []Kind {
	regMu.RLock()
	defer regMu.RUnlock()
	return append([]Kind(nil), order...)
}
