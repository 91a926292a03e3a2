package runner

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/semaphore"

	"github.com/vmcp-chaos/vmcp-chaos/harness/runtimes/containers"
	"github.com/vmcp-chaos/vmcp-chaos/internal/hostslot"
)

// ContainerSlotsEnv names the variable bounding how many container
// topologies run at once on this host, across processes (default
// DefaultContainerSlots): two suites or chaos runs side by side share one
// Docker engine, which times out (network creation, container removal)
// once it has too many at once.
const ContainerSlotsEnv = "VMCP_CHAOS_CONTAINER_SLOTS"

// containerEngine says whether the process has a usable Docker engine
// (nil), probed once (containers.Get).
var containerEngine = func(ctx context.Context) error {
	_, err := containers.Get(ctx)
	return err
}

// containerSlotKind names the host-wide container slots (hostslot).
var containerSlotKind = "container-topology"

// DefaultContainerSlots is the host-wide bound on container topologies
// when ContainerSlotsEnv is unset.
const DefaultContainerSlots = 3

// ContainerSlots is $VMCP_CHAOS_CONTAINER_SLOTS (1 to 64), default
// DefaultContainerSlots.
func ContainerSlots() (int, error) {
	v := os.Getenv(ContainerSlotsEnv)
	if v == "" {
		return DefaultContainerSlots, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > 64 {
		return 0, fmt.Errorf("$%s=%q: want 1 to 64", ContainerSlotsEnv, v)
	}
	return n, nil
}

// Gate bounds how many in-process scenarios run at once among the callers
// of Run that share it (RunConfig.Gate), such as the tests of one package
// running side by side. A scenario of LaneAlone (the load scenario) runs
// beside no other of its lane and takes the floor's slots (below): it
// enters when they are free and the CPU is not contended (waitCalm), and
// while it loads the CPU no other scenario enters (the throttle below);
// those already running go on, as they do beside another suite's load
// scenario. Container scenarios take none: the
// host-wide container slots bound them.
//
// Above a floor (DefaultParallel scenarios running), a scenario also
// waits while the CPU is contended (cpuPressure at or over
// GatePressure) by others than this process (othersCPU at or over
// OthersPressure) or by a load scenario of the gate: another suite or
// build beside this one leaves fewer scenarios running at once, so the
// machine's load does not come on top of a full gate and starve the
// scenarios' own timing. The pressure of the gate's own scenarios alone
// does not hold it at its floor (its cap bounds them).
type Gate struct {
	n, floor int64
	sem      *prioSem
	alone    *semaphore.Weighted // one load scenario at a time

	// Expected, when set, is how long a run of sc against the target
	// named is expected to take (0: not known): the gate serves the
	// longest first, so they do not end last. Unset or unknown, the
	// scenario group's typical duration.
	Expected func(target string, sc Scenario) time.Duration
	running  atomic.Int64
	held     atomic.Int64 // slot-nanoseconds given back so far
	throttle atomic.Int64 // nanoseconds scenarios waited on the CPU's pressure
	pressure func() (float64, bool)
	others   func() (float64, bool) // othersCPU
	loading  atomic.Int64           // load scenarios in the gate

	mu    sync.Mutex
	spans []GateSpan
}

// GateSpan is one scenario's stay in a gate: when it entered and left
// (after its wait for slots and the CPU), and how many slots it held.
type GateSpan struct {
	Name          string
	Target        string // the target's name ("" when not given)
	Slots         int
	Entered, Left time.Time
}

// GatePressure is the CPU pressure (cpuPressure, percent) at or over
// which a Gate admits no scenario beyond its floor.
const GatePressure = 40

// pressurePoll is how often a scenario held back by the CPU's pressure
// looks again.
const pressurePoll = 250 * time.Millisecond

// Throttled is how long scenarios waited, in all, for the CPU's pressure
// to fall.
func (g *Gate) Throttled() time.Duration { return time.Duration(g.throttle.Load()) }

// Held is how long slots were held, summed over the slots (a scenario of
// LaneAlone counts the floor's): with the wall time it says how busy the
// gate was.
func (g *Gate) Held() time.Duration { return time.Duration(g.held.Load()) }

// HeldBy is Held by scenario name (all its runs together), the most
// first: where the gate's time went.
func (g *Gate) HeldBy() []ScenarioTime {
	by := map[string]time.Duration{}
	for _, sp := range g.Spans() {
		by[sp.Name] += sp.Left.Sub(sp.Entered) * time.Duration(sp.Slots)
	}
	out := make([]ScenarioTime, 0, len(by))
	for name, d := range by {
		out = append(out, ScenarioTime{name, d})
	}
	slices.SortFunc(out, func(a, b ScenarioTime) int { return cmp.Or(cmp.Compare(b.Held, a.Held), cmp.Compare(a.Name, b.Name)) })
	return out
}

// Spans is every stay in g so far, in the order they ended.
func (g *Gate) Spans() []GateSpan {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.spans)
}

// ScenarioTime is how long a scenario's runs held a gate's slots.
type ScenarioTime struct {
	Name string
	Held time.Duration
}

// Cap is how many slots g has.
func (g *Gate) Cap() int { return int(g.n) }

// NewGate returns a gate of n slots (at least 1).
func NewGate(n int) *Gate {
	n = max(n, 1)
	return &Gate{n: int64(n), floor: int64(min(n, DefaultParallel())), sem: newPrioSem(int64(n)), alone: semaphore.NewWeighted(1), pressure: cpuPressure, others: othersCPU}
}

// Enter waits, before sc's clock starts, for what sc needs to run: a
// host-wide container slot (a container scenario, or any scenario on the
// container runtime), or else its weight in g (none when g is nil). It
// returns the function that gives the slots back and how long it waited.
// Run calls it unless RunConfig.SlotsHeld says the caller did.
func (g *Gate) Enter(ctx context.Context, sc Scenario, runtime string) (leave func(), waited time.Duration, err error) {
	return g.EnterFor(ctx, "", sc, runtime)
}

// EnterFor is Enter for a run against the target named: the longest
// expected runs (Expected) are served first.
func (g *Gate) EnterFor(ctx context.Context, target string, sc Scenario, runtime string) (leave func(), waited time.Duration, err error) {
	start := time.Now()
	if sc.Lane() == LaneContainer || runtime == RuntimeContainer {
		if containerEngine(ctx) != nil {
			return func() {}, 0, nil // Run skips or fails it without an engine
		}
		n, err := ContainerSlots()
		if err != nil {
			return nil, 0, err
		}
		release, err := hostslot.Acquire(ctx, containerSlotKind, n)
		if err != nil {
			return nil, 0, err
		}
		return release, time.Since(start), nil
	}
	if g == nil {
		return func() {}, 0, nil
	}
	w, alone := int64(1), sc.Lane() == LaneAlone
	if alone {
		w = g.floor
		if err := g.alone.Acquire(ctx, 1); err != nil {
			return nil, 0, fmt.Errorf("waiting for the load scenario running: %w", context.Cause(ctx))
		}
	}
	release := func() {
		g.sem.release(w)
		if alone {
			g.alone.Release(1)
		}
	}
	prio := typicalDuration(sc)
	if d, ok := ctx.Value(expectedKey{}).(time.Duration); ok && d > 0 {
		prio = d
	} else if g.Expected != nil {
		if d := g.Expected(target, sc); d > 0 {
			prio = d
		}
	}
	if err := g.sem.acquire(ctx, w, prio); err != nil {
		if alone {
			g.alone.Release(1)
		}
		return nil, 0, fmt.Errorf("waiting for %d of %d scenario slots: %w", w, g.n, context.Cause(ctx))
	}
	wait := g.waitPressure
	if alone {
		// From its wait for a calm CPU on: the others' entries read the
		// whole pressure, theirs included.
		g.loading.Add(1)
		wait = g.waitCalm
	}
	if err := wait(ctx); err != nil {
		if alone {
			g.loading.Add(-1)
		}
		release()
		return nil, 0, err
	}
	g.running.Add(w)
	entered := time.Now()
	return func() {
		held := time.Since(entered) * time.Duration(w)
		g.held.Add(int64(held))
		g.mu.Lock()
		g.spans = append(g.spans, GateSpan{sc.Name, target, int(w), entered, time.Now()})
		g.mu.Unlock()
		g.running.Add(-w)
		if alone {
			g.loading.Add(-1)
		}
		release()
	}, entered.Sub(start), nil
}

type expectedKey struct{}

// WithExpected returns ctx saying that the run entering a gate with it is
// expected to take d (before Gate.Expected): the gate serves the longest
// first.
func WithExpected(ctx context.Context, d time.Duration) context.Context {
	return context.WithValue(ctx, expectedKey{}, d)
}

// calmWait bounds how long a load scenario waits for a calm CPU
// (waitCalm): on a machine loaded by another suite it runs anyway.
const calmWait = 10 * time.Second

// waitCalm waits, at most calmWait, until the CPU's pressure is under
// GatePressure, however few scenarios run: the load scenario starts on a
// calm CPU, and while it runs the throttle keeps others out.
func (g *Gate) waitCalm(ctx context.Context) error {
	start := time.Now()
	return g.waitUnderPressure(ctx, g.pressure, func() bool { return time.Since(start) < calmWait })
}

// waitPressure waits, while more than the floor's scenarios run, until
// the CPU's pressure is under GatePressure or is the gate's own
// (contention).
func (g *Gate) waitPressure(ctx context.Context) error {
	return g.waitUnderPressure(ctx, g.contention, func() bool { return g.running.Load() >= g.floor })
}

// contention is the CPU's pressure as the throttle over the floor reads
// it: 0 while, with no load scenario in the gate or waiting for a calm CPU
// to enter it, the other processes use less than OthersPressure of the
// machine (the pressure is then this process's own scenarios').
func (g *Gate) contention() (float64, bool) {
	p, ok := g.pressure()
	if !ok || p < GatePressure || g.loading.Load() > 0 || g.others == nil {
		return p, ok
	}
	if o, ok := g.others(); ok && o < OthersPressure {
		return 0, true
	}
	return p, true
}

// waitUnderPressure waits, while still, until the CPU's pressure is under
// GatePressure, and counts the wait in Throttled.
func (g *Gate) waitUnderPressure(ctx context.Context, pressure func() (float64, bool), still func() bool) error {
	start := time.Now()
	defer func() { g.throttle.Add(int64(time.Since(start))) }()
	for still() {
		if p, ok := pressure(); !ok || p < GatePressure {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for the CPU's pressure to fall under %d%%: %w", GatePressure, context.Cause(ctx))
		case <-time.After(pressurePoll):
		}
	}
	return nil
}

// GateState is what a Gate's throttle reads at one moment: how many
// slots are held, whether a load scenario is in the gate or waiting for a
// calm CPU, the CPU's pressure and the others' share of the CPU (percent;
// the OK fields are false where they cannot be read).
type GateState struct {
	Running, Loading     int64
	Pressure, Others     float64
	PressureOK, OthersOK bool
}

// State is what g's throttle reads now.
func (g *Gate) State() GateState {
	s := GateState{Running: g.running.Load(), Loading: g.loading.Load()}
	s.Pressure, s.PressureOK = g.pressure()
	if g.others != nil {
		s.Others, s.OthersOK = g.others()
	}
	return s
}
