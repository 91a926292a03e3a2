package scenarios_test

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vmcp-chaos/vmcp-chaos/harness/history"
	"github.com/vmcp-chaos/vmcp-chaos/scenarios"
	"github.com/vmcp-chaos/vmcp-chaos/scenarios/runner"
)

// timeoutBeta fails calls of beta as a gateway whose deadline ran out
// would: after wait, naming beta. Which calls, by mode: "once" the first
// call of beta only (then it passes every call through: one call out of a
// steady run, as a loaded machine makes), "first" the first call of beta
// in each client session (a gateway that opens beta lazily and runs the
// first call out), "always" every one.
type timeoutBeta struct {
	passThrough
	wait  time.Duration
	mode  string
	spent atomic.Bool
	seen  sync.Map // sessions whose first call of beta was failed
}

func (p *timeoutBeta) before(m rpcMsg) string {
	if !isBetaCall(m) {
		return ""
	}
	switch p.mode {
	case "once":
		if p.spent.Swap(true) {
			return ""
		}
	case "first":
		if _, seen := p.seen.LoadOrStore(m.session, true); seen {
			return ""
		}
	}
	time.Sleep(p.wait) // bounded: under the scenario's call timeout
	return unavailable("beta", "timed out")
}

// TestOneTimeoutBeforeAnyFaultIsNoVerdict: the check that beta answers
// before any fault (Kit.CheckServes) is inconclusive when the first call
// of beta ran out a deadline and every backend answered right after (a
// loaded machine did that to the reference under .ci/load: "timed out
// after 2s"), and fails when beta keeps timing out, or times out the first
// call of every session (the fresh session's first call shows it).
func TestOneTimeoutBeforeAnyFaultIsNoVerdict(t *testing.T) {
	t.Parallel()
	const check = "beta answers before the pause"
	for _, tc := range []struct {
		mode string
		want history.CheckVerdict
		says string
	}{
		{mode: "once", want: history.CheckInconclusive, says: "which one call cannot tell apart"},
		{mode: "first", want: history.CheckFailed, says: "timed out"},
		{mode: "always", want: history.CheckFailed, says: "timed out"},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			t.Parallel()
			target := &mutantTarget{name: "mutant-timeout-beta-" + tc.mode, policy: func() frontPolicy {
				return &timeoutBeta{wait: scenarios.PauseCallTimeout * 3 / 4, mode: tc.mode}
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
