package scenarios

import (
	"context"
	"fmt"
	"runtime"
	"sync"

	"github.com/vmcp-chaos/vmcp-chaos/harness/history"
)

// DefaultParallel is how many scenarios run at once by default: one per
// core, at most 4. Most of a scenario's time is spent waiting on deadlines
// (stalls, call timeouts, recovery windows), not on CPU.
func DefaultParallel() int { return min(max(runtime.NumCPU(), 1), 4) }

// Exclusive reports whether the scenario runs alone, never beside
// another: container scenarios (Docker is shared) and the load scenario
// (it measures latency under its own load).
func (s Scenario) Exclusive() bool { return s.HasLabel(LabelContainer) || s.HasLabel(LabelLoad) }

// RunPool runs scs as Run does, at most parallel at a time (exclusive
// scenarios alone), each with its own topology, checks and verdict, and
// calls done with each recorder as its scenario ends, one call at a time.
// It returns the recorders in scs's order; a scenario not started because
// ctx ended has none (nil). With cfg.CheckLeaks and more than one at a
// time, the goroutine-leak check spans the whole pool (as RunTogether's
// does): a leak fails every scenario that ran, naming the leak.
func RunPool(ctx context.Context, scs []Scenario, cfg RunConfig, parallel int, done func(i int, rec *history.Recorder)) []*history.Recorder {
	parallel = max(parallel, 1)
	if parallel == 1 {
		recs := make([]*history.Recorder, len(scs))
		for i, sc := range scs {
			if ctx.Err() != nil {
				break
			}
			recs[i] = Run(ctx, sc, cfg)
			done(i, recs[i])
		}
		return recs
	}
	leakCheck, each := sharedLeakCheck(cfg)
	recs := make([]*history.Recorder, len(scs))
	slots := make(chan struct{}, parallel)
	var wg sync.WaitGroup
	var mu sync.Mutex
	for i, sc := range scs {
		if sc.Exclusive() {
			wg.Wait() // alone: the others end first
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
			rec := Run(ctx, sc, each)
			mu.Lock()
			defer mu.Unlock()
			recs[i] = rec
			done(i, rec)
		})
		if sc.Exclusive() {
			wg.Wait()
		}
	}
	wg.Wait()
	if leakCheck != nil {
		failLeaks(leakCheck, recs, fmt.Sprintf("run %d at a time", parallel))
	}
	return recs
}
