package scenarios_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/vmcp-chaos/vmcp-chaos/harness/history"
	"github.com/vmcp-chaos/vmcp-chaos/scenarios/runner"
)

// TestRecoveryWhileReopening: a correct gateway whose re-opening of a
// backend session outlasts the call timeout (fixture a holding every
// re-initialize 1.2 s, as a loaded machine did to the reference) passes
// the hang scenario on SSE. A mid-body stall's cut event, completed at
// the clear, breaks beta's session stream; the gateway must open another,
// and the calls that time out while it does are not a recovery gap. The
// check says so, from beta's log (the session that served again began
// after the clear).
func TestRecoveryWhileReopening(t *testing.T) {
	t.Parallel()
	buildFixtureGW(t)
	e := fixtureTarget(t, "fixture-a")
	e.TargetName = "fixture-a-slow-reopen"
	e.Command = append(e.Command, "--slow-reopen", "1200ms")
	// It takes about 11 s (every re-opening waits 1.2 s): started early.
	ctx := runner.WithExpected(context.Background(), 11*time.Second)
	sc, cfg := scenario(t, "hang/legacy/sse"), runner.RunConfig{Target: e, CheckLeaks: true}
	res := againIfInconclusive(t, ctx, sc, cfg, runScenario(ctx, sc, cfg)).Result()
	const recovery = "stall_mid_body: beta answers once cleared (at most 0 failed calls)"
	for _, c := range res.Checks {
		if c.Verdict == history.CheckFailed {
			t.Errorf("%s failed: expected %s; observed %s", c.Name, c.Expected, c.Observed)
		}
		if strings.Contains(c.Name, "answers once cleared") {
			t.Logf("%s: %s: %s", c.Name, c.Verdict, c.Observed)
		}
		if c.Name == recovery {
			if c.Verdict != history.CheckPassed || !strings.Contains(c.Observed, "re-opened its session with beta") {
				t.Errorf("%s is %s (%s): want passed, the calls that failed while the gateway re-opened its session with beta said so", c.Name, c.Verdict, c.Observed)
			}
		}
	}
	if res.Verdict != history.VerdictPassed {
		t.Errorf("hang/legacy/sse against a correct gateway slow to re-open: %s: %s", res.Verdict, res.Reason)
	}
}
