package scenarios_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vmcp-chaos/vmcp-chaos/harness/history"
	"github.com/vmcp-chaos/vmcp-chaos/scenarios"
	"github.com/vmcp-chaos/vmcp-chaos/scenarios/runner"
)

// TestSlotsEnv names the variable saying how many in-process scenarios
// this package's tests run at once, all tests together (default
// 4 × runner.DefaultParallel(), at most 8): the top-level tests run
// side by side and share testGate. A scenario mostly waits on deadlines,
// not on the CPU.
const TestSlotsEnv = "VMCP_CHAOS_TEST_SLOTS"

// testGate is shared by every scenario run of the package's tests: the
// suite's pool, runShared and runScenario. It serves the longest runs
// first (longRuns, then the scenario groups' typical durations).
var testGate = func() *runner.Gate {
	g := runner.NewGate(testSlots())
	g.Expected = func(target string, sc scenarios.Scenario) time.Duration { return longRuns[target+" × "+sc.Group] }
	return g
}()

// longRuns are the runs (target × scenario group) of the fixtures that
// take far longer than the reference's (their failed recovery checks wait
// out their bounds), measured on 2 cores: the gate starts them first, so
// they do not end last. A wrong figure costs wall time, never a verdict.
// The mutant table's are longPairs.
var longRuns = map[string]time.Duration{
	"fixture-h × hang":              48 * time.Second,
	"fixture-d × wrapping":          22 * time.Second,
	"fixture-e × wrapping":          21 * time.Second,
	"fixture-b-broken × hang":       21 * time.Second,
	"fixture-b-broken × wrapping":   19 * time.Second,
	"fixture-f × restart":           13 * time.Second,
	"fixture-b-broken × session":    12 * time.Second,
	"fixture-b-broken × hang-pause": 11 * time.Second,
	"fixture-a × wrapping":          10 * time.Second,
	"fixture-d × hang":              10 * time.Second,
	"fixture-e × hang":              9 * time.Second,
}

// testSlots is $VMCP_CHAOS_TEST_SLOTS (1 to 32), default
// 4 × runner.DefaultParallel() capped at 8.
func testSlots() int {
	if v := os.Getenv(TestSlotsEnv); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 32 {
			fmt.Fprintf(os.Stderr, "$%s=%q: want 1 to 32\n", TestSlotsEnv, v)
			os.Exit(2)
		}
		return n
	}
	return min(4*runner.DefaultParallel(), 8)
}

// slotWait bounds how long a test's scenario waits for its slot.
const slotWait = 15 * time.Minute

// runScenario runs sc as runner.Run does, once its slot in testGate
// (or, for a container scenario, its host-wide slot) is free, with its
// own deadline from then: the scenario's timeout, its teardown bound and
// 30 s. ctx gives values only (kit.WithoutGrounding), never a
// deadline: a caller's deadline would run out while the scenario waits
// for its turn behind other tests'.
func runScenario(ctx context.Context, sc scenarios.Scenario, cfg runner.RunConfig) *history.Recorder {
	ctx = context.WithoutCancel(ctx)
	wait, cancelWait := context.WithTimeout(ctx, slotWait)
	name := "reference"
	if cfg.Target != nil {
		name = cfg.Target.Name()
	}
	leave, _, err := testGate.EnterFor(wait, name, sc, cfg.Runtime)
	cancelWait()
	if err != nil {
		rec := history.NewRecorder(sc.Name, sc.Labels...)
		rec.Fail("not started: " + err.Error())
		return rec
	}
	defer leave()
	ctx, cancel := context.WithTimeout(ctx, sc.MaxWall(cfg.Target)+scenarios.TeardownBound(sc, cfg.Runtime)+30*time.Second)
	defer cancel()
	cfg.Gate, cfg.SlotsHeld = nil, true
	return runner.Run(ctx, sc, cfg)
}

// Every run longRuns names is a fixture (by its target name) and a group
// of the catalogue: a renamed one would silently lose its place.
func TestLongRunsNameFixturesAndGroups(t *testing.T) {
	t.Parallel()
	groups := map[string]bool{}
	for _, sc := range scenarios.Catalogue() {
		groups[sc.Group] = true
	}
	for key := range longRuns {
		fixture, group, ok := strings.Cut(key, " × ")
		if !ok || !groups[group] {
			t.Errorf("longRuns %q: no group %q in the catalogue", key, group)
			continue
		}
		if name := fixtureTarget(t, fixture).Name(); name != fixture {
			t.Errorf("longRuns %q: the profile %s.yaml names its target %q", key, fixture, name)
		}
	}
}
