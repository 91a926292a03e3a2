package scenarios

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"sync/atomic"
	"time"

	"golang.org/x/sync/semaphore"

	"github.com/vmcp-chaos/vmcp-chaos/internal/hostslot"
)

// ContainerSlotsEnv names the variable bounding how many container
// topologies run at once on this host, across processes (default
// DefaultContainerSlots): two suites or chaos runs side by side share one
// Docker engine, which times out (network creation, container removal)
// once it has too many at once.
const ContainerSlotsEnv = "VMCP_CHAOS_CONTAINER_SLOTS"

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
// running side by side. A scenario of LaneAlone takes every slot: it runs
// beside no other scenario of the gate. Container scenarios take none:
// the host-wide container slots bound them.
type Gate struct {
	n    int64
	sem  *semaphore.Weighted
	held atomic.Int64 // slot-nanoseconds given back so far
}

// Held is how long slots were held, summed over the slots (a scenario of
// LaneAlone counts every slot): with the wall time it says how busy the
// gate was.
func (g *Gate) Held() time.Duration { return time.Duration(g.held.Load()) }

// Cap is how many slots g has.
func (g *Gate) Cap() int { return int(g.n) }

// NewGate returns a gate of n slots (at least 1).
func NewGate(n int) *Gate {
	n = max(n, 1)
	return &Gate{n: int64(n), sem: semaphore.NewWeighted(int64(n))}
}

// Enter waits, before sc's clock starts, for what sc needs to run: a
// host-wide container slot (a container scenario, or any scenario on the
// container runtime), or else its weight in g (none when g is nil). It
// returns the function that gives the slots back and how long it waited.
// Run calls it unless RunConfig.SlotsHeld says the caller did.
func (g *Gate) Enter(ctx context.Context, sc Scenario, runtime string) (leave func(), waited time.Duration, err error) {
	start := time.Now()
	if sc.Lane() == LaneContainer || runtime == RuntimeContainer {
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
	w := int64(1)
	if sc.Lane() == LaneAlone {
		w = g.n
	}
	if err := g.sem.Acquire(ctx, w); err != nil {
		return nil, 0, fmt.Errorf("waiting for %d of %d scenario slots: %w", w, g.n, context.Cause(ctx))
	}
	entered := time.Now()
	return func() {
		g.held.Add(int64(time.Since(entered)) * w)
		g.sem.Release(w)
	}, entered.Sub(start), nil
}
