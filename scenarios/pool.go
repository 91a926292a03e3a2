package scenarios

import (
	"context"
	"fmt"
	"runtime"
	"sync"

	"github.com/vmcp-chaos/vmcp-chaos/harness/history"
	"github.com/vmcp-chaos/vmcp-chaos/harness/runtimes"
)

// DefaultParallel is how many scenarios run at once by default: one per
// core, at most 4. Most of a scenario's time is spent waiting on deadlines
// (stalls, call timeouts, recovery windows), not on CPU.
func DefaultParallel() int { return min(max(runtime.NumCPU(), 1), 4) }

// Lane says which scenarios sc may run beside: LaneAlone (the load
// scenario: it measures latency under its own load) runs beside none;
// LaneContainer (container scenarios: each has its own network and
// containers, and they spend their time waiting on the engine and on call
// timeouts) beside other container scenarios only; LaneInProcess (the
// rest) beside other in-process scenarios.
func (s Scenario) Lane() string {
	switch {
	case s.HasLabel(LabelLoad):
		return LaneAlone
	case s.HasLabel(LabelContainer):
		return LaneContainer
	}
	return LaneInProcess
}

// The lanes of Scenario.Lane.
const (
	LaneAlone     = "alone"
	LaneContainer = "container"
	LaneInProcess = "in-process"
)

// RunPool runs scs as RunLanes does, and with cfg.CheckLeaks adds a
// process-wide check after them (see failLeaks): for a process that runs
// nothing else meanwhile, such as chaos run.
func RunPool(ctx context.Context, scs []Scenario, cfg RunConfig, parallel int, done func(i int, rec *history.Recorder)) []*history.Recorder {
	var leakCheck func(runtimes.TB)
	if cfg.CheckLeaks {
		leakCheck = runtimes.LeakSnapshot()
	}
	recs := RunLanes(ctx, scs, cfg, parallel, done)
	if leakCheck != nil {
		failLeaks(leakCheck, recs, fmt.Sprintf("run %d at a time", max(parallel, 1)))
	}
	return recs
}

// RunLanes runs scs as Run does, at most parallel at a time (only
// scenarios of one lane at once, see Scenario.Lane), each with its own
// topology, checks, leak check (cfg.CheckLeaks: its own goroutines) and
// verdict, and calls done with each recorder as its scenario ends, one
// call at a time. It returns the recorders in scs's order; a scenario not
// started because ctx ended has none (nil).
func RunLanes(ctx context.Context, scs []Scenario, cfg RunConfig, parallel int, done func(i int, rec *history.Recorder)) []*history.Recorder {
	parallel = max(parallel, 1)
	recs := make([]*history.Recorder, len(scs))
	slots := make(chan struct{}, parallel)
	var wg sync.WaitGroup
	var mu sync.Mutex
	lane := ""
	for i, sc := range scs {
		if sc.Lane() != lane || lane == LaneAlone {
			wg.Wait() // another lane: the running ones end first
			lane = sc.Lane()
		}
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		wg.Go(func() {
			defer func() { <-slots }()
			rec := Run(ctx, sc, cfg)
			mu.Lock()
			defer mu.Unlock()
			recs[i] = rec
			done(i, rec)
		})
	}
	wg.Wait()
	return recs
}
