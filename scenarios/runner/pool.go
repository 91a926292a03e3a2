package runner

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
// timeouts, not on this process's CPU) beside other container scenarios
// and beside in-process ones, each lane with its own slots; LaneInProcess
// (the rest) beside other in-process scenarios and container ones.
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

// RunLanes runs scs as Run does, each with its own topology, checks, leak
// check (cfg.CheckLeaks: its own goroutines) and verdict, and calls done
// with each recorder as its scenario ends, one call at a time. It returns
// the recorders in scs's order; a scenario not started because ctx ended
// has none (nil).
//
// The lanes (Scenario.Lane): the scenarios that run alone first, one at a
// time; then the in-process and the container lanes side by side, longest
// first (typicalDuration), so that the longest scenarios do not start
// last: in-process ones up to parallel at a time, container ones up to
// ContainerLaneWidth(parallel). With parallel 1 every scenario runs
// alone, in-process ones before container ones.
func RunLanes(ctx context.Context, scs []Scenario, cfg RunConfig, parallel int, done func(i int, rec *history.Recorder)) []*history.Recorder {
	parallel = max(parallel, 1)
	recs := make([]*history.Recorder, len(scs))
	var mu sync.Mutex
	run := func(i int) {
		rec := Run(ctx, scs[i], cfg)
		mu.Lock()
		defer mu.Unlock()
		recs[i] = rec
		done(i, rec)
	}
	lanes := map[string][]int{}
	for i, sc := range scs {
		lanes[sc.Lane()] = append(lanes[sc.Lane()], i)
	}
	runSlots(ctx, lanes[LaneAlone], 1, run)
	inProcess, container := LongestFirst(scs, lanes[LaneInProcess]), LongestFirst(scs, lanes[LaneContainer])
	if parallel == 1 {
		runSlots(ctx, inProcess, 1, run)
		runSlots(ctx, container, 1, run)
		return recs
	}
	var wg sync.WaitGroup
	wg.Go(func() { runSlots(ctx, inProcess, parallel, run) })
	wg.Go(func() { runSlots(ctx, container, ContainerLaneWidth(parallel), run) })
	wg.Wait()
	return recs
}

// ContainerLaneWidth is how many container scenarios RunLanes runs at
// once beside parallel in-process ones: the host's container slots
// (ContainerSlots, default 3) or parallel if more (the slots bound them
// anyway). A container scenario waits on the engine and on call
// timeouts, not on this process's CPU: on the 2-core machine the lane
// is the run's critical path, and three at a time instead of two took
// `chaos run` from 30.0–30.4 s to 28.2–28.3 s (2026-12-03, idle).
func ContainerLaneWidth(parallel int) int {
	slots, err := ContainerSlots()
	if err != nil {
		return max(parallel, 1) // Enter reports the bad variable
	}
	return max(parallel, slots, 1)
}

// runSlots calls run for each of idx in order, up to n at a time, and
// returns when every call it started has returned; it starts none once
// ctx has ended.
func runSlots(ctx context.Context, idx []int, n int, run func(i int)) {
	slots := make(chan struct{}, n)
	var wg sync.WaitGroup
	for _, i := range idx {
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		wg.Go(func() {
			defer func() { <-slots }()
			run(i)
		})
	}
	wg.Wait()
}
