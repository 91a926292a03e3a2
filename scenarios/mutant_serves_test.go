package scenarios_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vmcp-chaos/vmcp-chaos/harness/history"
	"github.com/vmcp-chaos/vmcp-chaos/scenarios/runner"
)

// timeoutBeta fails calls of beta as a gateway whose deadline ran out
// would: after wait, naming beta. With once, only the first such call
// (then it passes every call through): one call out of a steady run, as
// a loaded machine makes.
type timeoutBeta struct {
	passThrough
	wait  time.Duration
	once  bool
	spent atomic.Bool
}

func (p *timeoutBeta) before(m rpcMsg) string {
	if !isBetaCall(m) || (p.once && p.spent.Swap(true)) {
		return ""
	}
	time.Sleep(p.wait) // bounded: under the scenario's call timeout
	return unavailable("beta", "timed out")
}

// TestOneTimeoutBeforeAnyFaultIsNoVerdict: the check that beta answers
// before any fault (Kit.CheckServes) is inconclusive when the first call
// of beta ran out a deadline and every backend answered right after (a
// loaded machine did that to the reference under .ci/load: "timed out
// after 2s"), and fails when beta keeps timing out.
func TestOneTimeoutBeforeAnyFaultIsNoVerdict(t *testing.T) {
	t.Parallel()
	const check = "beta answers before the pause"
	for _, tc := range []struct {
		once bool
		want history.CheckVerdict
		says string
	}{
		{once: true, want: history.CheckInconclusive, says: "which one call cannot tell apart"},
		{once: false, want: history.CheckFailed, says: "timed out"},
	} {
		name := map[bool]string{true: "once", false: "always"}[tc.once]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			target := &mutantTarget{name: "mutant-timeout-beta-" + name, policy: func() frontPolicy {
				return &timeoutBeta{wait: pauseCallTimeoutForTest * 3 / 4, once: tc.once}
			}}
			rec := runScenario(context.Background(), scenario(t, "hang-pause/legacy/streamable-http"), runner.RunConfig{Target: target, CheckLeaks: true})
			res := rec.Result()
			t.Logf("against %s: %s in %s: %s", target.Name(), res.Verdict, res.Duration.D(), firstLine(res.Reason))
			for _, c := range res.Checks {
				if c.Name != check {
					continue
				}
				t.Logf("%s: %s: %s %s", check, c.Verdict, c.Reason, c.Observed)
				if c.Verdict != tc.want || !strings.Contains(c.Reason+c.Observed, tc.says) {
					t.Fatalf("%q: %s (%s %s), want %s saying %q", check, c.Verdict, c.Reason, c.Observed, tc.want, tc.says)
				}
				return
			}
			t.Fatalf("no check %q against %s (%s: %s)", check, target.Name(), res.Verdict, res.Reason)
		})
	}
}

// pauseCallTimeoutForTest is hang-pause's gateway call timeout
// (scenarios.pauseCallTimeout, unexported).
const pauseCallTimeoutForTest = 2 * time.Second
