package scenarios

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/vmcp-chaos/vmcp-chaos/harness/history"
	"github.com/vmcp-chaos/vmcp-chaos/harness/runtimes"
)

// RunTogether runs scs at once, each as Run does (its own topology,
// checks and verdict), and returns their recorders in scs's order. With
// cfg.CheckLeaks the goroutine-leak check spans them all: a snapshot
// before the first starts, a check after the last is torn down (a check
// per scenario would take the others' goroutines for leaks); a leak fails
// every scenario that was not skipped, naming them all, since which one
// leaked cannot be told apart. For independent scenarios whose topologies
// share nothing, such as a container scenario on both revisions (each has
// its own network and containers).
func RunTogether(ctx context.Context, scs []Scenario, cfg RunConfig) []*history.Recorder {
	leakCheck, each := sharedLeakCheck(cfg)
	recs := make([]*history.Recorder, len(scs))
	var wg sync.WaitGroup
	for i, sc := range scs {
		wg.Go(func() { recs[i] = Run(ctx, sc, each) })
	}
	wg.Wait()
	if leakCheck != nil {
		names := make([]string, len(scs))
		for i, sc := range scs {
			names[i] = sc.Name
		}
		failLeaks(leakCheck, recs, "run together with "+strings.Join(names, ", "))
	}
	return recs
}

// sharedLeakCheck is the leak check of scenarios run at once: one
// snapshot before the first starts (nil without cfg.CheckLeaks), and the
// config each runs with, its own check off (it would take the others'
// goroutines for leaks). failLeaks judges it once they have all ended.
func sharedLeakCheck(cfg RunConfig) (leakCheck func(runtimes.TB), each RunConfig) {
	if cfg.CheckLeaks {
		leakCheck = runtimes.LeakSnapshot()
	}
	each = cfg
	each.CheckLeaks = false
	return leakCheck, each
}

// failLeaks runs leakCheck after scenarios that ran at once, and on a
// leak fails every one of recs that ran (not skipped, not nil): which one
// leaked cannot be told apart. how says how they ran.
func failLeaks(leakCheck func(runtimes.TB), recs []*history.Recorder, how string) {
	tb := &leakTB{}
	leakCheck(tb)
	if tb.msg == "" {
		return
	}
	for _, rec := range recs {
		if rec == nil || rec.Result().Verdict == history.VerdictSkipped {
			continue
		}
		rec.AddCheck(history.Check{Name: "no goroutine leaked", Verdict: history.CheckFailed,
			Observed: fmt.Sprintf("(%s; the leak is one of theirs) %s", how, tb.msg)})
		rec.SetVerdict(history.VerdictFailed, checksReason(rec.Result()))
	}
}
