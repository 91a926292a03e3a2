package faults

import (
	"cmp"
	"fmt"
	"maps"
	"math/rand"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"
)

// Spec is what a fault kind registers by name (see Register): its name,
// its place in listings and a constructor of its parameters struct. What
// the kind does is in the methods of that struct (see Params).
type Spec struct {
	Kind Kind
	// Order places the kind in listings and messages (documentation order).
	Order int
	// New returns the kind's empty parameters: a pointer to its struct.
	New func() Params
	// Methods, if set, are the only methods the kind applies to.
	Methods []string
	// NotOn lists transports the kind is refused on, with the reason.
	NotOn map[Transport]string
}

// Params are a kind's parameters, a struct in the kind's file; its fields'
// yaml tags name the parameters the kind takes. Validate checks them with
// bounds (c names the field and holds the whole fault). The struct may
// also implement any of:
//
//	Defaults()                               fill in empty parameters (idempotent)
//	HTTP(x *Exchange) bool                   act on an HTTP exchange; true: then serve it
//	Stdio(x *StdioExchange)                  act on a stdio line (without it: refused on stdio)
//	AddedDelay(rng *rand.Rand) time.Duration additive: add a delay, go on searching (latency)
//	ScheduleOnly(f *Fault) bool              the fault acts by time alone, not per request
//	Phase(elapsed time.Duration) bool        on or off after running so long (flap)
//	Nested() *Fault                          the fault that acts while on (flap)
//	Describe() string                        a brief rendering for timelines
type Params interface {
	Validate(c *Check) error
}

// The optional behaviours of a kind's Params (see Params).
type (
	defaulter  interface{ Defaults() }
	describer  interface{ Describe() string }
	httpActor  interface{ HTTP(x *Exchange) bool }
	stdioActor interface{ Stdio(x *StdioExchange) }
	delayer    interface {
		AddedDelay(rng *rand.Rand) time.Duration
	}
	scheduleOnly interface{ ScheduleOnly(f *Fault) bool }
	phased       interface {
		Phase(elapsed time.Duration) bool
		Nested() *Fault
	}
)

var (
	regMu    sync.RWMutex
	registry = map[Kind]*Spec{}
)

// Register adds a fault kind; each kind's file calls it from init. It
// panics on a duplicate or incomplete registration (a programming error).
func Register(s Spec) {
	regMu.Lock()
	defer regMu.Unlock()
	if s.Kind == "" || s.New == nil {
		panic("faults: Register needs Kind and New")
	}
	if _, dup := registry[s.Kind]; dup {
		panic(fmt.Sprintf("faults: kind %q registered twice", s.Kind))
	}
	if t := reflect.TypeOf(s.New()); t == nil || t.Kind() != reflect.Pointer || t.Elem().Kind() != reflect.Struct {
		panic(fmt.Sprintf("faults: kind %q: New must return a pointer to a struct", s.Kind))
	}
	for _, p := range ParamsOf(&s) {
		if slices.Contains(scheduleFields, p) {
			panic(fmt.Sprintf("faults: kind %q: parameter %q is a schedule field", s.Kind, p))
		}
	}
	registry[s.Kind] = &s
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
	return slices.SortedFunc(maps.Keys(registry), func(a, b Kind) int {
		return cmp.Or(cmp.Compare(registry[a].Order, registry[b].Order), strings.Compare(string(a), string(b)))
	})
}

// ParamsOf lists the YAML names of the parameters a kind takes (the yaml
// tags of its Params struct).
func ParamsOf(s *Spec) []string {
	t := reflect.TypeOf(s.New()).Elem()
	out := make([]string, 0, t.NumField())
	for i := range t.NumField() {
		if name := yamlName(t.Field(i)); name != "-" {
			out = append(out, name)
		}
	}
	return out
}

// ParamNames lists every parameter some kind takes, once each.
func ParamNames() []string {
	var out []string
	for _, k := range Kinds() {
		s, _ := Lookup(k)
		for _, p := range ParamsOf(s) {
			if !slices.Contains(out, p) {
				out = append(out, p)
			}
		}
	}
	return out
}

func yamlName(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
	return name
}
