package scenarios_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/vmcp-chaos/vmcp-chaos/harness/history"
	"github.com/vmcp-chaos/vmcp-chaos/harness/targets"
	"github.com/vmcp-chaos/vmcp-chaos/scenarios"
	"github.com/vmcp-chaos/vmcp-chaos/scenarios/runner"
)

// Scenario runs that several tests of the package only read run once per
// process, keyed by target and scenario (sharedKey): the first test to
// ask runs them, the others wait for its records. Only unmodified targets
// may share (the reference, the profiles' fixture targets, the named
// mutants): the key is the target's type, name and capabilities.
var sharedRuns struct {
	sync.Mutex
	m map[string]*sharedRun
}

// sharedRun is one run: rec is set (nil if it never ran) when done is
// closed.
type sharedRun struct {
	done chan struct{}
	rec  *history.Recorder
}

// sharedKey keys a run of the scenario name against target.
func sharedKey(target targets.Target, name string) string {
	return fmt.Sprintf("%T/%s/%s/%s", target, target.Name(), target.Capabilities(), name)
}

// claimShared returns the run of name against target: a new one that the
// caller must run and publish (set rec, close done) when claimed, or the
// one another test runs.
func claimShared(target targets.Target, name string) (run *sharedRun, claimed bool) {
	sharedRuns.Lock()
	defer sharedRuns.Unlock()
	if sharedRuns.m == nil {
		sharedRuns.m = map[string]*sharedRun{}
	}
	key := sharedKey(target, name)
	if r := sharedRuns.m[key]; r != nil {
		return r, false
	}
	r := &sharedRun{done: make(chan struct{})}
	sharedRuns.m[key] = r
	return r, true
}

// runShared returns the records of scs against target, in scs's order,
// each run with its leak check (runner.RunLanes: the runs' own
// goroutines, so tests may run beside) at most
// runner.DefaultParallel() at a time, and once per process for every
// test that asks.
func runShared(t *testing.T, target targets.Target, scs ...scenarios.Scenario) []*history.Recorder {
	t.Helper()
	runs := make([]*sharedRun, len(scs))
	var mine []int
	for i, sc := range scs {
		var claimed bool
		if runs[i], claimed = claimShared(target, sc.Name); claimed {
			mine = append(mine, i)
		}
	}
	todo := make([]scenarios.Scenario, len(mine))
	for j, i := range mine {
		todo[j] = scs[i]
	}
	runner.RunLanes(context.Background(), todo, runner.RunConfig{Target: target, CheckLeaks: true, Gate: testGate}, testSlots(),
		func(j int, rec *history.Recorder) {
			runs[mine[j]].rec = rec
			close(runs[mine[j]].done)
		})
	recs := make([]*history.Recorder, len(scs))
	for i, r := range runs {
		select {
		case <-r.done:
		case <-time.After(10 * time.Minute):
			t.Fatalf("%s against %s: another test's run did not end within 10 minutes", scs[i].Name, target.Name())
		}
		if r.rec == nil {
			t.Fatalf("%s against %s: not run", scs[i].Name, target.Name())
		}
		recs[i] = r.rec
	}
	return recs
}
