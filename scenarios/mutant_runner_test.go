package scenarios_test

// The mutants of the runner's own checks: "no goroutine leaked" (a
// gateway that leaves a goroutine of the run behind) and "teardown within
// its deadline" (a gateway whose Close overruns). Both checks are
// recorded only when they fail.

import (
	"context"
	"time"

	"github.com/vmcp-chaos/vmcp-chaos/harness/targets"
	"github.com/vmcp-chaos/vmcp-chaos/scenarios/runner"
)

// leakHold is how long the leaking mutant's goroutine outlives its run:
// past the leak check's wait (leakWait), then it ends by itself.
const leakHold = 10 * time.Second

// leaksGoroutine is the reference with a goroutine its Start leaves
// running (started in the run's goroutine, so it carries the run's leak
// label) after the gateway is closed: a gateway that does not stop a
// worker of its own.
type leaksGoroutine struct{ targets.Reference }

func (l leaksGoroutine) Start(ctx context.Context, topo targets.TopologyInfo) (targets.Gateway, error) {
	gw, err := l.Reference.Start(ctx, topo)
	if err != nil {
		return nil, err
	}
	go func() { time.Sleep(leakHold) }() // its owner is the timer: it ends leakHold after the run
	return gw, nil
}

// slowTeardownHold is how long the slow-teardown mutant's Close takes,
// ignoring its context: past mutantTeardownTimeout, the deadline its run
// is given (so the test waits seconds, not the default 20 s bound).
const (
	slowTeardownHold      = 4 * time.Second
	mutantTeardownTimeout = 2 * time.Second
)

// slowTeardown is the reference whose gateway's Close takes
// slowTeardownHold whatever its context says: a gateway that does not
// shut down within its deadline.
type slowTeardown struct{ targets.Reference }

func (s slowTeardown) Start(ctx context.Context, topo targets.TopologyInfo) (targets.Gateway, error) {
	gw, err := s.Reference.Start(ctx, topo)
	if err != nil {
		return nil, err
	}
	return slowClose{gw}, nil
}

type slowClose struct{ targets.Gateway }

func (s slowClose) Close(ctx context.Context) error {
	err := s.Gateway.Close(ctx)
	time.Sleep(slowTeardownHold)
	return err
}

// runnerMutantConfigs are the run settings a runner mutant's pair needs
// (TestMutantTable's runPairs merges them into its RunConfig).
var runnerMutantConfigs = map[string]runner.RunConfig{
	"leaks-goroutine": {CheckLeaks: true},
	"slow-teardown":   {TeardownTimeout: mutantTeardownTimeout},
}
