package scenarios_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/vmcp-chaos/vmcp-chaos/harness/history"
	"github.com/vmcp-chaos/vmcp-chaos/scenarios/runner"
)

// hidesAlpha is an optimizer whose find_tool never returns alpha's tools
// (call_tool still reaches them). With reportOut its health API also
// shows alpha's circuit open: a gateway that had alpha out, and says so.
type hidesAlpha struct {
	passThrough
	reportOut bool
}

func (hidesAlpha) rewrite(m rpcMsg, answer map[string]any) map[string]any {
	return rewriteFind(m, answer, func(doc map[string]any) bool {
		tools := foundTools(doc)
		kept := slices.DeleteFunc(slices.Clone(tools), func(t any) bool {
			name, _ := t.(map[string]any)["name"].(string)
			return addressedBackend(name, "") == "alpha"
		})
		doc["tools"] = kept
		return len(kept) != len(tools)
	})
}

func (p hidesAlpha) admin(path string, body []byte) []byte {
	if !p.reportOut {
		return body
	}
	return healthRewrite{edit: func(backend string, st map[string]any) {
		if backend == "alpha" {
			st["circuitState"] = "open"
		}
	}}.admin(path, body)
}

// TestOptimizerAlphaPremise: the optimizer checks that presume alpha in a
// session's view fail a gateway that leaves alpha out while its health
// API shows alpha healthy, and are inconclusive, naming why, when the
// health API showed alpha out as the session was opened (the reference's
// probes time out on a loaded machine and open alpha's circuit: the
// harness must not blame it for leaving alpha out then).
func TestOptimizerAlphaPremise(t *testing.T) {
	t.Parallel()
	sc := scenario(t, "optimizer/legacy/streamable-http")
	const (
		noBeta    = "case 1: session created while beta's circuit was open: find_tool never returns beta's tools"
		alphaRank = "case 2: alpha's echo is found first, with token metrics"
		alphaCall = "case 2: call_tool calls alpha's echo"
	)
	for _, tc := range []struct {
		reportOut bool
		want      map[string]history.CheckVerdict
	}{
		{false, map[string]history.CheckVerdict{noBeta: history.CheckFailed, alphaRank: history.CheckFailed, alphaCall: history.CheckPassed}},
		{true, map[string]history.CheckVerdict{noBeta: history.CheckInconclusive, alphaRank: history.CheckInconclusive, alphaCall: history.CheckInconclusive}},
	} {
		target := &mutantTarget{name: "mutant-hides-alpha", policy: func() frontPolicy { return hidesAlpha{reportOut: tc.reportOut} }}
		var wrong []string
		for attempt := 1; attempt <= premiseAttempts; attempt++ {
			res := runScenario(context.Background(), sc, runner.RunConfig{Target: target, CheckLeaks: true}).Result()
			var unjudged bool
			wrong, unjudged = premiseMismatches(res, tc.want)
			if len(wrong) == 0 || !unjudged {
				break
			}
			t.Logf("health API shows alpha out: %v: attempt %d left checks unjudged (the reference's own probes of alpha timed out on a loaded machine?): %q", tc.reportOut, attempt, wrong)
		}
		for _, w := range wrong {
			t.Errorf("health API shows alpha out: %v: %s", tc.reportOut, w)
		}
	}
}

// premiseAttempts is how many runs TestOptimizerAlphaPremise makes while
// the wanted checks come out unjudged (missing, or inconclusive where a
// verdict is wanted): on a loaded machine the reference inside the
// mutant may itself have alpha out, and no check can then be judged.
const premiseAttempts = 3

// premiseMismatches lists the checks of res whose verdict is not want's,
// and says whether any of them was left unjudged.
func premiseMismatches(res history.ScenarioResult, want map[string]history.CheckVerdict) (wrong []string, unjudged bool) {
	got := map[string]history.Check{}
	for _, c := range res.Checks {
		got[c.Name] = c
	}
	for name, w := range want {
		c, ok := got[name]
		if c.Verdict != w {
			wrong = append(wrong, fmt.Sprintf("%q is %q (%s%s), want %q", name, c.Verdict, c.Reason, c.Observed, w))
			unjudged = unjudged || !ok || c.Verdict == history.CheckInconclusive
		}
		if w == history.CheckInconclusive && c.Verdict == w && !strings.Contains(c.Reason, "had alpha out") {
			wrong = append(wrong, fmt.Sprintf("%q inconclusive for %q, want the reason naming alpha out", name, c.Reason))
		}
	}
	return wrong, unjudged
}
