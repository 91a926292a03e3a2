package scenarios_test

import (
	"context"
	"strings"
	"testing"

	"github.com/vmcp-chaos/vmcp-chaos/harness/history"
	"github.com/vmcp-chaos/vmcp-chaos/scenarios/runner"
)

// TestHeldAnswerIsNotPassed: a gateway that sends beta's echo beside the
// stalled call at once but holds its answer until the stalled call's
// answer went out (holdBehind) is never passed on "a stalled call does not
// block beta's other calls": beta's log shows echo beside the stall and
// back at the client only after it ended there, which a slow machine can
// do too, so the honest verdict is inconclusive, saying both.
func TestHeldAnswerIsNotPassed(t *testing.T) {
	t.Parallel()
	const check = "a stalled call does not block beta's other calls in the session"
	target := &mutantTarget{name: "mutant-hold-behind", policy: func() frontPolicy { return &holdBehind{} }}
	rec := runScenario(context.Background(), scenario(t, sessionSH), runner.RunConfig{Target: target, CheckLeaks: true})
	res := rec.Result()
	t.Logf("%s against %s: %s in %s: %s", sessionSH, target.Name(), res.Verdict, res.Duration.D(), firstLine(res.Reason))
	for _, c := range res.Checks {
		t.Logf("  %s: %s %s", c.Name, c.Verdict, c.Observed)
	}
	for _, c := range res.Checks {
		if c.Name != check {
			continue
		}
		t.Logf("%s against %s: %s: %s", check, target.Name(), c.Verdict, c.Reason)
		if c.Verdict != history.CheckInconclusive || !strings.Contains(c.Reason, "holding its answer back") {
			t.Fatalf("%q: %s (%s), want inconclusive: echo beside the stall, back only after it", check, c.Verdict, c.Reason)
		}
		return
	}
	t.Fatalf("no check %q in %s against %s (%s: %s)", check, sessionSH, target.Name(), res.Verdict, res.Reason)
}
