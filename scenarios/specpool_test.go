package scenarios_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	"github.com/onsi/ginkgo/v2/types"

	"github.com/vmcp-chaos/vmcp-chaos/harness/history"
	"github.com/vmcp-chaos/vmcp-chaos/scenarios"
	"github.com/vmcp-chaos/vmcp-chaos/scenarios/runner"
)

// ParallelEnv names the environment variable saying how many scenarios
// the suite runs at once (default runner.DefaultParallel(); 1 runs
// each in its spec).
const ParallelEnv = "VMCP_CHAOS_PARALLEL"

// The scenarios whose specs will run (the suite's preview, after label
// and focus filters) run ahead of their specs in a pool
// (runner.RunLanes, started by BeforeSuite), several at a time,
// longest first: they spend most of their time waiting on deadlines. The
// runs are shared with the package's other tests (sharedruns_test.go): a
// scenario another test already runs against the same target is not run
// twice. Each spec waits for its scenario's record (within its
// SpecTimeout) and reports it; each scenario has its own topology and its
// own leak check (its goroutines carry its label), and TestMain checks
// the goroutines no scenario owns.
var pool struct {
	sync.Mutex
	// order holds the scenarios to run ahead, in the specs' order.
	order []scenarios.Scenario
	// runs maps a scenario's name to its run (the pool's, or another
	// test's of the same target).
	runs map[string]*sharedRun
	// stop cancels the pool; ended is closed once it has returned.
	stop  context.CancelFunc
	ended chan struct{}
}

// previewPool, before the suite runs, finds from its preview the specs
// that will run, in order. With Ginkgo's parallel processes (each runs a
// share of the specs) or $VMCP_CHAOS_PARALLEL=1 nothing runs ahead.
func previewPool(report types.Report) {
	pool.Lock()
	defer pool.Unlock()
	pool.order, pool.runs = nil, map[string]*sharedRun{}
	suiteCfg, _ := GinkgoConfiguration()
	if n, _ := suiteParallel(); n < 2 || suiteCfg.ParallelTotal > 1 {
		return
	}
	byName := map[string]scenarios.Scenario{}
	for _, sc := range scenarios.Catalogue() {
		byName[sc.Name] = sc
	}
	for _, s := range report.SpecReports {
		if s.LeafNodeType != types.NodeTypeIt || s.State != types.SpecStatePassed || len(s.ContainerHierarchyTexts) != 2 {
			continue
		}
		if sc, ok := byName[s.ContainerHierarchyTexts[1]+"/"+s.LeafNodeText]; ok {
			pool.order = append(pool.order, sc)
		}
	}
}

// suiteParallel is $VMCP_CHAOS_PARALLEL (1 to 16), default testSlots()
// (testGate bounds the suite's scenarios together with the other
// tests').
func suiteParallel() (int, error) {
	v := os.Getenv(ParallelEnv)
	if v == "" {
		return testSlots(), nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > 16 {
		return 1, fmt.Errorf("$%s=%q: want 1 to 16", ParallelEnv, v)
	}
	return n, nil
}

// startPool, at the end of BeforeSuite, starts running the previewed
// scenarios with cfg.
func startPool(cfg runner.RunConfig) {
	pool.Lock()
	defer pool.Unlock()
	if len(pool.order) == 0 {
		return
	}
	var order []scenarios.Scenario
	mine := map[string]*sharedRun{}
	for _, sc := range pool.order {
		if !shareable(cfg) {
			run := &sharedRun{done: make(chan struct{})}
			pool.runs[sc.Name], mine[sc.Name] = run, run
			order = append(order, sc)
			continue
		}
		run, claimed := claimShared(cfg.Target, sc.Name)
		pool.runs[sc.Name] = run
		if claimed {
			mine[sc.Name] = run
			order = append(order, sc)
		}
	}
	if others := len(pool.order) - len(order); others > 0 {
		GinkgoWriter.Printf("%d scenarios report the runs other tests of this process make against the same target\n", others)
	}
	n, _ := suiteParallel()
	ctx, cancel := context.WithCancel(context.Background())
	pool.stop, pool.ended = cancel, make(chan struct{})
	ended := pool.ended
	GinkgoWriter.Printf("running %d scenarios ahead of their specs, %d at a time\n", len(order), n)
	go func() {
		defer close(ended)
		runner.RunLanes(ctx, order, cfg, n, func(i int, rec *history.Recorder) {
			run := mine[order[i].Name]
			run.rec = rec
			close(run.done)
		})
		for _, sc := range order { // not started: the suite was interrupted
			select {
			case <-mine[sc.Name].done:
			default:
				close(mine[sc.Name].done)
			}
		}
	}()
}

// stopPool, in AfterSuite: ends the pool (a scenario running ends at its
// own deadlines).
func stopPool() {
	pool.Lock()
	stop, ended := pool.stop, pool.ended
	pool.Unlock()
	if stop == nil {
		return
	}
	stop()
	select {
	case <-ended:
	case <-time.After(5 * time.Minute):
		Fail("the scenario pool did not end within 5 minutes of the suite's end")
	}
}

// runSpec returns sc's record for its spec (runSpecOnce). A scenario
// that came back inconclusive (no check failed, but the machine was too
// slow to judge one) runs once more, and that run is the spec's; the
// first one's reason is printed. A failed scenario never runs again.
func runSpec(ctx context.Context, sc scenarios.Scenario, cfg runner.RunConfig) *history.Recorder {
	rec := runSpecOnce(ctx, sc, cfg)
	res := rec.Result()
	if res.Verdict != history.VerdictInconclusive || ctx.Err() != nil {
		return rec
	}
	GinkgoWriter.Printf("%s came back inconclusive (%s): running it once more\n", sc.Name, res.Reason)
	return runScenario(ctx, sc, cfg)
}

// runJudged runs sc (runScenario) for a test that wants it judged: a run
// that came back inconclusive (the machine too slow to judge a check;
// nothing failed) runs once more, logged, and the second run is the
// result. A failed run never runs again.
func runJudged(t *testing.T, sc scenarios.Scenario, cfg runner.RunConfig) history.ScenarioResult {
	t.Helper()
	return againIfInconclusive(t, context.Background(), sc, cfg, runScenario(context.Background(), sc, cfg)).Result()
}

// againIfInconclusive returns rec, a run of sc, or, when it came back
// inconclusive (the machine too slow to judge a check; nothing failed),
// a second run of it, logged.
func againIfInconclusive(t *testing.T, ctx context.Context, sc scenarios.Scenario, cfg runner.RunConfig, rec *history.Recorder) *history.Recorder {
	t.Helper()
	if res := rec.Result(); res.Verdict == history.VerdictInconclusive {
		t.Logf("%s came back inconclusive (%s): running it once more", sc.Name, res.Reason)
		return runScenario(ctx, sc, cfg)
	}
	return rec
}

// runSpecOnce returns sc's record for its spec: the pool's, once its
// scenario ends, or, for a scenario the pool does not run, its own run.
func runSpecOnce(ctx context.Context, sc scenarios.Scenario, cfg runner.RunConfig) *history.Recorder {
	pool.Lock()
	run, ok := pool.runs[sc.Name]
	started := pool.stop != nil
	pool.Unlock()
	if !ok || !started {
		return runner.Run(ctx, sc, cfg)
	}
	select {
	case <-run.done:
	case <-ctx.Done():
		rec := history.NewRecorder(sc.Name, sc.Labels...)
		rec.Fail(fmt.Sprintf("the spec ended (%v) before its scenario, running in the pool, did", context.Cause(ctx)))
		return rec
	}
	if run.rec == nil {
		rec := history.NewRecorder(sc.Name, sc.Labels...)
		rec.Fail("not run: the suite ended before the pool started it")
		return rec
	}
	return run.rec
}

// shareable says whether runs with cfg may be shared with the package's
// other tests (runShared: the leak check on, the default runtime).
func shareable(cfg runner.RunConfig) bool {
	return cfg.CheckLeaks && cfg.Runtime == runner.RuntimeDefault
}
