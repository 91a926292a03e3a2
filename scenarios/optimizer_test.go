package scenarios_test

import (
	"context"
	"strings"
	"testing"

	"github.com/vmcp-chaos/vmcp-chaos/harness/history"
	"github.com/vmcp-chaos/vmcp-chaos/harness/targets"
	"github.com/vmcp-chaos/vmcp-chaos/scenarios/runner"
	"github.com/vmcp-chaos/vmcp-chaos/vmcp"
)

// noHealthAPI is what a gateway with an optimizer and a breaker but no
// health API declares.
var noHealthAPI = targets.Capabilities{targets.CapOptimizer, targets.CapBreaker}

// TestOptimizerWithoutHealthAPI: a target without a health API is judged
// on the optimizer's cases all the same, by what its clients see (beta's
// circuit open when a call of its echo no longer reaches beta, beta back
// when a new session finds it, every backend out when a new session finds
// nothing); only the health API's own checks are not applicable, with the
// reason. The reference passes so on a legacy session and a stateless
// client.
func TestOptimizerWithoutHealthAPI(t *testing.T) {
	t.Parallel()
	healthChecks := map[string]bool{}
	for _, c := range scenario(t, "optimizer/legacy/streamable-http").Conditional {
		healthChecks[c.Name] = true
	}
	if len(healthChecks) != 3 {
		t.Fatalf("want the optimizer's 3 health-API checks conditional: %v", healthChecks)
	}
	for _, name := range []string{"optimizer/legacy/streamable-http", "optimizer/modern/streamable-http"} {
		t.Run(name, func(t *testing.T) {
			sc := scenario(t, name)
			if na := sc.NotApplicable("no-health-api", noHealthAPI); len(na) != 3 || !strings.Contains(na[0], "(lacks health-api)") {
				t.Errorf("--list: not applicable %q", na)
			}
			target := targets.Reference{TargetName: "reference-no-health-api", Caps: noHealthAPI}
			// Inconclusive is the machine's (beta's circuit already open, or
			// alpha out, as the reference's probes time out under load):
			// run again, at most premiseAttempts times in all.
			var res history.ScenarioResult
			for attempt := 1; attempt <= premiseAttempts; attempt++ {
				res = runScenario(context.Background(), sc, runner.RunConfig{Target: target}).Result()
				t.Logf("%s: attempt %d: %s in %s: %s", name, attempt, res.Verdict, res.Duration.D(), res.Reason)
				if res.Verdict != history.VerdictInconclusive {
					break
				}
			}
			if res.Verdict != history.VerdictPassed {
				t.Fatalf("want passed: %s %s", res.Verdict, res.Reason)
			}
			passed := 0
			for _, c := range res.Checks {
				switch {
				case healthChecks[c.Name]:
					if c.Verdict != history.CheckNotApplicable || !strings.Contains(c.Reason, "lacks capability health-api") {
						t.Errorf("%q: %s (%s), want not applicable for the missing health API", c.Name, c.Verdict, c.Reason)
					}
				case c.Verdict == history.CheckPassed:
					passed++
				default:
					t.Errorf("%q: %s", c.Name, c.Verdict)
				}
			}
			if passed < 15 {
				t.Errorf("only %d checks judged and passed: %+v", passed, res.Checks)
			}
		})
	}
}

// TestMutantOptimizerNoBreakerNoHealthAPI: without the health API to read,
// a gateway whose breaker never opens (switched off under the scenario's
// feet) fails the optimizer scenario where its circuit should have opened.
func TestMutantOptimizerNoBreakerNoHealthAPI(t *testing.T) {
	t.Parallel()
	target := targets.Reference{TargetName: "mutant-no-breaker-no-health-api", Caps: noHealthAPI,
		Configure: func(cfg *vmcp.Config) { cfg.Breaker.Enabled = false }}
	expectFails(t, "optimizer/legacy/streamable-http", target,
		[]string{"beta's circuit opens: a call of beta's echo then fails without reaching beta"}, nil)
}

// TestMutantCallToolSkipsAlphaNoHealthAPI: without a health API, a
// gateway whose call_tool never routes to alpha fails case 2's call of
// alpha's echo, loaded machine or not: the load excusal (alpha refused
// while the machine stalled) holds only when the gateway takes alpha back.
func TestMutantCallToolSkipsAlphaNoHealthAPI(t *testing.T) {
	t.Parallel()
	target := &mutantTarget{name: "mutant-call-tool-skips-alpha-no-health-api",
		inner:  targets.Reference{Caps: noHealthAPI},
		policy: func() frontPolicy { return refuseViaCallTool{backend: "alpha"} }}
	expectFails(t, "optimizer/legacy/streamable-http", target, []string{"case 2: call_tool calls alpha's echo"}, nil)
}
