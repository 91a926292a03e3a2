package scenarios_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/vmcp-chaos/vmcp-chaos/harness/history"
	"github.com/vmcp-chaos/vmcp-chaos/scenarios"
)

// TestSlotsEnv names the variable saying how many in-process scenarios
// this package's tests run at once, all tests together (default
// 4 × scenarios.DefaultParallel(), at most 8): the top-level tests run
// side by side and share testGate. A scenario mostly waits on deadlines,
// not on the CPU.
const TestSlotsEnv = "VMCP_CHAOS_TEST_SLOTS"

// testGate is shared by every scenario run of the package's tests: the
// suite's pool, runShared and runScenario.
var testGate = scenarios.NewGate(testSlots())

// testSlots is $VMCP_CHAOS_TEST_SLOTS (1 to 32), default
// 4 × scenarios.DefaultParallel() capped at 8.
func testSlots() int {
	if v := os.Getenv(TestSlotsEnv); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 32 {
			fmt.Fprintf(os.Stderr, "$%s=%q: want 1 to 32\n", TestSlotsEnv, v)
			os.Exit(2)
		}
		return n
	}
	return min(4*scenarios.DefaultParallel(), 8)
}

// slotWait bounds how long a test's scenario waits for its slot.
const slotWait = 15 * time.Minute

// runScenario runs sc as scenarios.Run does, once its slot in testGate
// (or, for a container scenario, its host-wide slot) is free, with its
// own deadline from then: the scenario's timeout, its teardown bound and
// 30 s. ctx gives values only (kit.WithoutGrounding), never a
// deadline: a caller's deadline would run out while the scenario waits
// for its turn behind other tests'.
func runScenario(ctx context.Context, sc scenarios.Scenario, cfg scenarios.RunConfig) *history.Recorder {
	ctx = context.WithoutCancel(ctx)
	wait, cancelWait := context.WithTimeout(ctx, slotWait)
	leave, _, err := testGate.Enter(wait, sc, cfg.Runtime)
	cancelWait()
	if err != nil {
		rec := history.NewRecorder(sc.Name, sc.Labels...)
		rec.Fail("not started: " + err.Error())
		return rec
	}
	defer leave()
	ctx, cancel := context.WithTimeout(ctx, sc.Timeout+scenarios.TeardownBound(sc, cfg.Runtime)+30*time.Second)
	defer cancel()
	cfg.Gate, cfg.SlotsHeld = nil, true
	return scenarios.Run(ctx, sc, cfg)
}
