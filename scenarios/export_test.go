package scenarios

// This file gives the package's external tests (package scenarios_test)
// what only they use.

import (
	"time"

	"github.com/vmcp-chaos/vmcp-chaos/harness"
	"github.com/vmcp-chaos/vmcp-chaos/harness/runtimes/containers"
	"github.com/vmcp-chaos/vmcp-chaos/scenarios/runner"
)

// TeardownBound is how long tearing sc's topology down may take on
// runtime: a container topology's removal is bounded by
// containers.RemoveTimeout per step (the gateway's, then the backends'),
// anything else by harness.DefaultEnvCloseTimeout. A runner's own
// deadline for sc is its Timeout plus this (plus a grace).
func TeardownBound(sc Scenario, runtime string) time.Duration {
	if sc.HasLabel(LabelContainer) || runtime == runner.RuntimeContainer {
		return max(harness.DefaultEnvCloseTimeout, 2*containers.RemoveTimeout)
	}
	return harness.DefaultEnvCloseTimeout
}

// InitializePathFaults are the wrapping faults the initialize path is
// judged with.
var InitializePathFaults = initializePathFaults

// PauseCallTimeout is hang-pause's gateway call timeout.
const PauseCallTimeout = pauseCallTimeout
