package scenarios_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/onsi/gomega"

	"github.com/vmcp-chaos/vmcp-chaos/fakebackends"
	"github.com/vmcp-chaos/vmcp-chaos/harness"
	"github.com/vmcp-chaos/vmcp-chaos/harness/history"
	"github.com/vmcp-chaos/vmcp-chaos/harness/matchers"
	"github.com/vmcp-chaos/vmcp-chaos/harness/runtimes"
	"github.com/vmcp-chaos/vmcp-chaos/harness/targets"
	"github.com/vmcp-chaos/vmcp-chaos/scenarios"
	"github.com/vmcp-chaos/vmcp-chaos/scenarios/kit"
	"github.com/vmcp-chaos/vmcp-chaos/scenarios/runner"
)

// TestEveryCheckJudged: a failed check does not end the scenario; each
// check has its own verdict and evidence; the scenario fails, its reason
// naming the failed checks first; a check needing a missing capability is
// not applicable; an abort on the gateway's answer is a failed check of
// its own (one because the harness failed is inconclusive:
// runner.TestHarnessActionAbortIsInconclusive).
func TestEveryCheckJudged(t *testing.T) {
	t.Parallel()
	sc := scenarios.Scenario{
		Name: "checks/legacy/streamable-http", Group: "checks", Timeout: 30 * time.Second,
		Topology: func() harness.Topology {
			return harness.Topology{Backends: kit.TwoBackends(fakebackends.TransportStreamableHTTP)}
		},
		Run: func(ctx context.Context, env *harness.Env, g gomega.Gomega) {
			k := kit.New(ctx, env, g)
			c := k.Client(history.RevisionLegacy)
			echo := c.CallTool(ctx, k.Tool(kit.Beta, "echo"), kit.EchoArgs("x"))
			k.CheckCall("a healthy beta is unavailable (wrong on purpose)", echo, matchers.BeBackendUnavailable(kit.Beta))
			k.CheckOK("alpha answers", c.CallTool(ctx, k.Tool(kit.Alpha, "echo"), kit.EchoArgs("y")))
			k.Check("one equals two (wrong on purpose)", func(ck *kit.C) {
				ck.Expected("1 == 2")
				ck.Expect(1).To(gomega.Equal(2))
			})
			k.CheckIf([]targets.Capability{targets.CapMetrics}, "metrics: something", func(ck *kit.C) { ck.Expect(true).To(gomega.BeFalse()) })
			g.Expect(echo.Outcome).NotTo(gomega.Equal(history.OutcomeOK), "beta fails (wrong on purpose)") // an abort on the gateway's answer
			k.CheckOK("never judged", echo)
		},
	}
	target := targets.Reference{TargetName: "no-metrics", Caps: targets.Capabilities{targets.CapHealthAPI}}
	res := runScenario(context.Background(), sc, runner.RunConfig{Target: target}).Result()
	t.Logf("%s: %s", res.Verdict, res.Reason)
	if res.Verdict != history.VerdictFailed {
		t.Fatalf("verdict %s", res.Verdict)
	}
	byName := map[string]history.Check{}
	for _, c := range res.Checks {
		byName[c.Name] = c
	}
	want := map[string]history.CheckVerdict{
		"a healthy beta is unavailable (wrong on purpose)": history.CheckFailed,
		"alpha answers":                     history.CheckPassed,
		"one equals two (wrong on purpose)": history.CheckFailed,
		"metrics: something":                history.CheckNotApplicable,
	}
	for name, v := range want {
		if byName[name].Verdict != v {
			t.Errorf("check %q: %q, want %q", name, byName[name].Verdict, v)
		}
	}
	if _, judged := byName["never judged"]; judged {
		t.Error("a check after the abort was judged")
	}
	failed, judged := res.CheckCounts()
	if failed != 3 || judged != 4 || len(res.Checks) != 5 {
		t.Errorf("%d/%d failed of %d checks: %+v", failed, judged, len(res.Checks), res.Checks)
	}
	if !strings.HasPrefix(res.Reason, "3/4 checks failed: a healthy beta is unavailable (wrong on purpose); one equals two (wrong on purpose); scenario ran to the end (aborted at ") ||
		!strings.Contains(res.Reason, "beta fails (wrong on purpose)") {
		t.Errorf("reason: %s", res.Reason)
	}
	wrong := byName["a healthy beta is unavailable (wrong on purpose)"]
	if len(wrong.Calls) != 1 || wrong.Took <= 0 || !strings.Contains(wrong.Observed, "but it succeeded") || !strings.HasPrefix(wrong.Observed, "checks_test.go:") || wrong.Expected == "" {
		t.Errorf("evidence: %+v", wrong)
	}
	ok := byName["alpha answers"]
	if len(ok.Calls) != 1 || !strings.Contains(ok.Observed, "tools/call alpha_echo: ok") {
		t.Errorf("evidence of a pass: %+v", ok)
	}
	if e := byName["one equals two (wrong on purpose)"]; e.Expected != "1 == 2" || !strings.Contains(e.Observed, "checks_test.go:") {
		t.Errorf("a failed assertion's message, with its line: %+v", e)
	}
	if na := byName["metrics: something"]; !strings.Contains(na.Reason, "lacks capability metrics") {
		t.Errorf("not applicable: %+v", na)
	}
}

// brokenRuntime is a backend runtime whose engine fails every start.
type brokenRuntime struct{}

func (brokenRuntime) Name() string { return "broken" }
func (brokenRuntime) Start(context.Context, *fakebackends.Script) (runtimes.RunningBackend, error) {
	return nil, errors.New("engine: create container: context deadline exceeded")
}

// TestBackendStartFailureIsInconclusive: when the harness cannot start
// its own fake backends the gateway was never started, so the verdict is
// inconclusive, naming why, never failed against the gateway; a gateway
// that cannot start still fails "topology starts".
func TestBackendStartFailureIsInconclusive(t *testing.T) {
	t.Parallel()
	ran := false
	sc := scenarios.Scenario{
		Name: "starts/legacy/streamable-http", Group: "starts", Timeout: 30 * time.Second,
		Topology: func() harness.Topology {
			bs := kit.TwoBackends(fakebackends.TransportStreamableHTTP)
			bs[1].Runtime = brokenRuntime{}
			return harness.Topology{Backends: bs}
		},
		Run: func(context.Context, *harness.Env, gomega.Gomega) { ran = true },
	}
	res := runScenario(context.Background(), sc, runner.RunConfig{Target: targets.Reference{}}).Result()
	if res.Verdict != history.VerdictInconclusive || !strings.Contains(res.Reason, "could not start its backends") || !strings.Contains(res.Reason, "context deadline exceeded") || ran {
		t.Errorf("backend start failed: %s (%s), body ran %v; want inconclusive naming the engine's error", res.Verdict, res.Reason, ran)
	}
	if len(res.Checks) != 1 || res.Checks[0].Name != "topology starts" || res.Checks[0].Verdict != history.CheckInconclusive {
		t.Errorf("checks %+v, want one inconclusive \"topology starts\"", res.Checks)
	}

	sc.Topology = func() harness.Topology {
		return harness.Topology{Backends: kit.TwoBackends(fakebackends.TransportStreamableHTTP)}
	}
	exits := &targets.Exec{TargetName: "exits", Command: []string{"/bin/false"}, ConfigTemplate: "x: 1\n", ReadyTimeout: 5 * time.Second}
	res = runScenario(context.Background(), sc, runner.RunConfig{Target: exits}).Result()
	if res.Verdict != history.VerdictFailed || len(res.Checks) != 1 || res.Checks[0].Verdict != history.CheckFailed {
		t.Errorf("gateway start failed: %s (%s) %+v, want failed \"topology starts\"", res.Verdict, res.Reason, res.Checks)
	}
}
