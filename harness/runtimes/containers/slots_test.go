package containers

import (
	"fmt"
	"os"
	"strconv"
	"time"
)

// The tests that drive the engine take the host-wide container slots the
// scenarios take (runner.ContainerSlots, which this package cannot
// import: the runner imports it): the same kind, variable and default, so
// this package's tests, running side by side, and the container scenarios
// of a suite beside them share one bound on the engine, which times out
// (network creation, container removal) once it has too many topologies at
// once.
const (
	topologySlotKind     = "container-topology"
	topologySlotsEnv     = "VMCP_CHAOS_CONTAINER_SLOTS"
	defaultTopologySlots = 3
	// slotWait bounds the wait for a slot: other suites' container
	// scenarios may hold every slot for minutes.
	slotWait = 10 * time.Minute
)

// topologySlots is $VMCP_CHAOS_CONTAINER_SLOTS (1 to 64), default
// defaultTopologySlots.
func topologySlots() (int, error) {
	v := os.Getenv(topologySlotsEnv)
	if v == "" {
		return defaultTopologySlots, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > 64 {
		return 0, fmt.Errorf("$%s=%q: want 1 to 64", topologySlotsEnv, v)
	}
	return n, nil
}
